//! Bidirectional broadcasting: `Expand`'s data against its target shape.
//!
//! OpenVINO broadcast rules, "Bidirectional Broadcast" (and ONNX `Expand`, which defers to numpy): "Following
//! broadcast rule is applied: `numpy.array(input) * numpy.ones(target_shape)`. Two corresponding dimension must
//! have the same value, or one of them is equal to 1. Output shape may not be equal to `target_shape` if:
//! `target_shape` contains dimensions of size 1, `target_shape` rank is smaller than the rank of input tensor."

use super::Site;
use super::{multidirectional, Outcome, Verdict};
use crate::shape::Shape;

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
