//! Unidirectional broadcasting: one input broadcast towards a fixed target (Gemm's C towards (M, N), PRelu's
//! slope towards X).
//!
//! ONNX `docs/Broadcasting.md`, "Unidirectional Broadcasting": "tensor B is unidirectional broadcastable to tensor
//! A if one of the following is true: Tensor A and B both have exactly the same shape. Tensor A and B all have the
//! same number of dimensions and the length of each dimensions is either a common length or B's length is 1.
//! Tensor B has too few dimensions, and B can have its shapes prepended with a dimension of length 1 to satisfy
//! property 2."

use super::Site;
use super::{sorted_dims, AxisStatus, ConditionKind, Outcome, Tally, Verdict, Violation, ViolationKind};
use crate::ops::SiteKind;
use crate::shape::{Dim, Shape};

/// One axis where input `b` is broadcast one way onto the target size `a`.
pub(super) fn one_way_axis(a: &Dim, b: &Dim) -> Result<AxisStatus, (Dim, Dim)> {
    if b.is_one() || b.provably_eq(a) {
        return Ok(AxisStatus::Holds);
    }
    Ok(match (a, b) {
        (Dim::Known(_), Dim::Known(_)) => return Err((b.clone(), a.clone())),
        (Dim::Unknown, _) | (_, Dim::Unknown) => AxisStatus::Unknown,
        // The target is symbolic and b is a fixed size other than 1: the target must be exactly that size.
        (_, Dim::Known(_)) => {
            AxisStatus::Conditions(vec![ConditionKind::OneOf { dim: a.clone(), options: vec![b.clone()] }])
        }
        _ => AxisStatus::Conditions(vec![ConditionKind::OneOf {
            dim: b.clone(),
            options: sorted_dims(vec![Dim::Known(1), a.clone()]),
        }]),
    })
}

/// Unidirectional broadcasting of `b` (input index 1) towards the fixed shape `a` (input index 0).
pub fn unidirectional(a: &Shape, b: &Shape) -> Outcome {
    let (Some(ad), Some(bd)) = (a.dims(), b.dims()) else {
        return Outcome { output: a.clone(), verdict: Verdict::Unknown };
    };
    if bd.len() > ad.len() {
        let kind = ViolationKind::RankTooLarge { rank: bd.len(), target_rank: ad.len() };
        return Outcome { output: a.clone(), verdict: Verdict::Violation(Violation { input: 1, axis: None, kind }) };
    }
    let offset = ad.len() - bd.len();
    let mut tally = Tally::default();
    for (j, bdim) in bd.iter().enumerate() {
        let axis = offset + j;
        match one_way_axis(&ad[axis], bdim) {
            Ok(status) => tally.add(axis, status),
            Err((found, expected)) => {
                let kind = ViolationKind::Mismatch { found, expected, against: 0 };
                let verdict = Verdict::Violation(Violation { input: 1, axis: Some(axis), kind });
                return Outcome { output: a.clone(), verdict };
            }
        }
    }
    Outcome { verdict: tally.verdict(a.provably_eq(b)), output: a.clone() }
}

/// How the target of a one-way rule is named in messages: Gemm's (M, N), Expand's target shape, or PRelu's X.
pub fn target_label(site: &Site) -> String {
    match (site.kind, &site.target) {
        (SiteKind::Gemm { .. }, Some(t)) => format!("(M, N) {t}"),
        (_, Some(t)) => format!("the target shape {t}"),
        (_, None) => site.inputs.first().map_or_else(|| "the target".into(), |i| format!("{} {}", i.name, i.shape)),
    }
}

/// The target, when it is not one of the node's inputs: Gemm's (M, N) from A and B.
pub fn target_name(site: &Site) -> &'static str {
    match site.kind {
        SiteKind::Gemm { .. } => "(M, N)",
        _ => "the target",
    }
}

/// How a violation begins: `C [3] does not broadcast to (M, N) [2, 4]`.
pub fn violation_lead(site: &Site, input: usize) -> String {
    let (name, shape) = site.offender(input);
    format!("{name} {shape} does not broadcast to {}", target_label(site))
}
