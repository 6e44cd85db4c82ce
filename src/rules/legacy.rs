//! The opset 1–6 `broadcast=1`/`axis` form of the binary ops and Gemm.
//!
//! OpenVINO broadcast rules, "PDPD broadcast" (the same definition): "Input tensor B is a continuous subsequence of
//! input A. Apply broadcast B to match the shape of A, where provided axis is the start dimension index for
//! broadcasting B onto A. If axis is set to default (-1) calculate new value: `axis = rank(A) - rank(B)`. Except
//! (-1) for default value, no other negative values are allowed for axis. The trailing dimensions of size 1 for
//! input B will be ignored for the consideration of subsequence."

use super::unidirectional::one_way_axis;
use super::Site;
use super::{Alignment, RewriteOperand};
use super::{AxisStatus, ConditionKind, Outcome, Tally, Verdict, Violation, ViolationKind};
use super::{Binding, NodeView, Rule};
use crate::sizes::shape::{Dim, Shape};

/// The opset 1–6 `broadcast=1` form: B (input 1) is matched against A's dims from `axis` on (default: the
/// suffix), B's trailing 1s are ignored, and B's 1s broadcast. The axis is reported in A's coordinates.
pub fn legacy_axis(a: &Shape, b: &Shape, axis: Option<i64>) -> Outcome {
    let (Some(ad), Some(bd)) = (a.dims(), b.dims()) else {
        return Outcome { output: a.clone(), verdict: Verdict::Unknown };
    };
    let violation =
        |axis, kind| Outcome { output: a.clone(), verdict: Verdict::Violation(Violation { input: 1, axis, kind }) };
    if bd.len() > ad.len() {
        return violation(None, ViolationKind::RankTooLarge { rank: bd.len(), target_rank: ad.len() });
    }
    let trimmed = bd.len() - bd.iter().rev().take_while(|d| d.is_one()).count();
    let start = match axis {
        None | Some(-1) => (ad.len() - bd.len()) as i64,
        Some(x) => x,
    };
    // B's dims that run past A's end fit only by being trailing 1s: a known size there is out of range, while a
    // symbol there holds exactly when it is 1 (an unknown dim leaves the site undecided).
    let fit = if start < 0 { 0 } else { trimmed.min(ad.len().saturating_sub(start as usize)) };
    let overflow = &bd[fit..trimmed];
    if start < 0 || start as usize > ad.len() || overflow.iter().any(|d| d.known().is_some_and(|k| k != 1)) {
        return violation(None, ViolationKind::AxisOutOfRange { axis: start, len: trimmed, target_rank: ad.len() });
    }
    let start = start as usize;
    let mut tally = Tally::default();
    for d in overflow.iter().filter(|d| !d.is_one()) {
        let status = match d {
            Dim::Unknown => AxisStatus::Unknown,
            _ => AxisStatus::Conditions(vec![ConditionKind::OneOf { dim: d.clone(), options: vec![Dim::Known(1)] }]),
        };
        // Past A's end there is no axis of its own: the condition is tied to A's last axis.
        tally.add(ad.len() - 1, status);
    }
    for (j, bdim) in bd[..fit].iter().enumerate() {
        match one_way_axis(&ad[start + j], bdim) {
            Ok(status) => tally.add(start + j, status),
            Err((found, expected)) => {
                return violation(Some(start + j), ViolationKind::Mismatch { found, expected, against: 0 })
            }
        }
    }
    Outcome { verdict: tally.verdict(a.provably_eq(b)), output: a.clone() }
}

/// How a violation begins: `B [4] does not fit A [2, 3] (broadcast=1)`.
pub fn violation_lead(site: &Site, input: usize) -> String {
    let (name, shape) = site.offender(input);
    format!("{name} {shape} does not fit {} (broadcast=1)", super::unidirectional::target_label(site))
}

/// A binary op before opset 7: B onto A from `axis` with `broadcast=1`, else equal shapes.
pub fn bind(node: &NodeView) -> Binding {
    let (a, b) = (node.shape(0), node.shape(1));
    let rule_inputs = smallvec::smallvec![node.site_pos(0), node.site_pos(1)];
    if node.attrs.int("broadcast") == Some(1) {
        let outcome = legacy_axis(a, b, node.attrs.int("axis"));
        Binding { rule: Rule::LegacyAxis, outcome, rule_inputs, target: None }
    } else {
        Binding { rule: Rule::None, outcome: super::equal_shapes(&[a, b]), rule_inputs, target: None }
    }
}

/// B, reshaped to A's rank with its dims (trailing 1s trimmed) placed from `axis`; numpy-aligned when its sizes
/// or the fit are not known.
pub fn rewrite_operands(site: &Site) -> super::RewriteOperands {
    let Some(b) = site.rule_inputs.get(1).copied().flatten() else { return super::RewriteOperands::new() };
    let numpy = smallvec::smallvec![RewriteOperand { input: b, alignment: Alignment::Numpy }];
    let (Some(ad), Some(bd)) = (site.output_shape.dims(), site.inputs[b].shape.known_dims()) else { return numpy };
    let axis = start_axis(site.attrs.axis, ad.len(), bd.len());
    let trimmed = bd.len() - bd.iter().rev().take_while(|&&d| d == 1).count();
    if axis + trimmed > ad.len() {
        return numpy;
    }
    let mut mapped = vec![1u64; ad.len()];
    mapped[axis..axis + trimmed].copy_from_slice(&bd[..trimmed]);
    smallvec::smallvec![RewriteOperand { input: b, alignment: Alignment::Mapped(mapped) }]
}

/// The start axis of a legacy `broadcast=1` node: its `axis` attribute (as evaluated), or the suffix position.
fn start_axis(axis: Option<i64>, rank_a: usize, rank_b: usize) -> usize {
    match axis {
        Some(axis) if axis >= 0 => axis as usize,
        _ => rank_a.saturating_sub(rank_b),
    }
}
