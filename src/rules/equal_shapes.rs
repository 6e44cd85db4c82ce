//! No implicit broadcast: the shapes must be equal (the variadic ops before opset 8, the binary ops before opset 7
//! without `broadcast=1`, and `--strict`'s view of every site).
//!
//! OpenVINO broadcast rules, "None broadcast": "Input tensors dimensions must match. No implicit broadcast rule is
//! applied."

use super::Site;
use super::{AxisStatus, ConditionKind, Outcome, Tally, Verdict, Violation, ViolationKind};
use super::{Binding, NodeView, Rule};
use crate::sizes::shape::{Dim, Shape};

/// No broadcasting: every shape must equal the first.
pub fn equal_shapes(inputs: &[&Shape]) -> Outcome {
    let Some(ranked) = inputs.iter().map(|s| s.dims()).collect::<Option<Vec<&[Dim]>>>() else {
        let output = inputs.first().map(|s| (*s).clone()).unwrap_or_default();
        return Outcome { output, verdict: Verdict::Unknown };
    };
    let Some(first) = ranked.first() else {
        return Outcome { output: Shape::unranked(), verdict: Verdict::Unknown };
    };
    if let Some(m) = ranked.iter().position(|d| d.len() != first.len()) {
        let kind = ViolationKind::RankDiffers { rank: ranked[m].len(), expected: first.len() };
        return Outcome {
            output: inputs[0].clone(),
            verdict: Verdict::Violation(Violation { input: m, axis: None, kind }),
        };
    }
    let mut tally = Tally::default();
    let mut output = Vec::with_capacity(first.len());
    for axis in 0..first.len() {
        // The most specific dim of the column stands for it: a known size, else a symbol, else unknown.
        let column: Vec<&Dim> = ranked.iter().map(|d| &d[axis]).collect();
        let pick = column
            .iter()
            .position(|d| d.known().is_some())
            .or_else(|| column.iter().position(|d| !matches!(d, Dim::Unknown)))
            .unwrap_or(0);
        let target = column[pick];
        for (m, d) in column.iter().enumerate() {
            if m == pick || d.provably_eq(target) {
                continue;
            }
            match (target, *d) {
                (Dim::Known(_), Dim::Known(_)) => {
                    let kind = ViolationKind::Mismatch { found: (*d).clone(), expected: target.clone(), against: pick };
                    return Outcome {
                        output: inputs[0].clone(),
                        verdict: Verdict::Violation(Violation { input: m, axis: Some(axis), kind }),
                    };
                }
                (Dim::Unknown, _) | (_, Dim::Unknown) => tally.add(axis, AxisStatus::Unknown),
                _ => tally.add(
                    axis,
                    AxisStatus::Conditions(vec![ConditionKind::OneOf {
                        dim: (*d).clone(),
                        options: vec![target.clone()],
                    }]),
                ),
            }
        }
        output.push(target.clone());
    }
    let output = Shape::ranked(output);
    let same = inputs.iter().all(|s| s.provably_eq(&output));
    Outcome { verdict: tally.verdict(same), output }
}

/// How a violation begins: `Sum at opset 6 requires equal shapes: A [2, 3] and B [3]`.
pub fn violation_lead(site: &Site) -> String {
    format!("{} at opset {} requires equal shapes: {}", site.op, site.opset, site.list_inputs())
}

/// Every present input must have the same shape (the variadic ops before opset 8).
pub fn bind(node: &NodeView) -> Binding {
    let outcome = equal_shapes(&node.present_shapes());
    Binding { rule: Rule::None, outcome, rule_inputs: node.all_present(), target: None }
}
