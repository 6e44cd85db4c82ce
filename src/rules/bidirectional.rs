//! Bidirectional broadcasting: `Expand`'s data against its target shape.
//!
//! OpenVINO broadcast rules, "Bidirectional Broadcast" (and ONNX `Expand`, which defers to numpy): "Following
//! broadcast rule is applied: `numpy.array(input) * numpy.ones(target_shape)`. Two corresponding dimension must
//! have the same value, or one of them is equal to 1. Output shape may not be equal to `target_shape` if:
//! `target_shape` contains dimensions of size 1, `target_shape` rank is smaller than the rank of input tensor."

use super::Site;
use super::{multidirectional, Outcome, Verdict};
use super::{Binding, NodeView, Rule};
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::Shape;
use crate::sizes::shape::{Dim, MAX_RANK};

/// `Expand`: numpy broadcasting of the data shape (input 0) and the target shape (input 1). The verdict is
/// `Same` when the expansion changes nothing.
pub fn bidirectional(data: &Shape, target: &Shape) -> Outcome {
    let outcome = multidirectional(&[data, target]);
    let verdict = match outcome.verdict {
        Verdict::Same | Verdict::Broadcast if data.provably_eq(&outcome.output) => Verdict::Same,
        Verdict::Same => Verdict::Broadcast,
        other => other,
    };
    Outcome { verdict, ..outcome }
}

/// How a violation begins: `X [2, 3] and the target shape [4] do not broadcast`.
pub fn violation_lead(site: &Site) -> String {
    format!("{} do not broadcast", site.list_inputs())
}

/// `Expand`: the data (input 0) against the target shape held by the value of input 1.
pub fn bind(node: &NodeView) -> Binding {
    let target = expand_target(node.facts.get(1).copied().flatten());
    let outcome = bidirectional(node.shape(0), &target);
    let rule_inputs = smallvec::smallvec![node.site_pos(0), node.site_pos(1)];
    Binding { rule: Rule::Bidirectional, outcome, rule_inputs, target: Some(target) }
}

/// The shape an `Expand` targets, from the value of its shape input.
fn expand_target(shape_input: Option<&ValueFacts>) -> Shape {
    let Some(facts) = shape_input else { return Shape::unranked() };
    if let Some(values) = &facts.value {
        return Shape::ranked(values.iter().map(crate::onnx::tensor::value_dim).collect());
    }
    match facts.shape.dims() {
        // A rank beyond any real tensor's is not worth spelling out dim by dim.
        Some([Dim::Known(n)]) if *n <= MAX_RANK => Shape::ranked(vec![Dim::Unknown; *n as usize]),
        _ => Shape::unranked(),
    }
}
/// Expand's data input is what it broadcasts.
pub fn broadcasting_inputs(site: &Site) -> Vec<usize> {
    match site.kind {
        crate::rules::ops::SiteKind::Expand => site.rule_inputs.first().copied().flatten().into_iter().collect(),
        _ => Vec::new(),
    }
}
