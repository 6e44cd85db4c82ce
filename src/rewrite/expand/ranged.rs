//! `expand --range`: each conditional site decided over the ranges before the plan. One that holds at every size
//! of them is a plain broadcast there (its rewrite states no condition); one that fails somewhere in them is left
//! as it is, with its smallest failing sizes as the reason (every evaluation of a function's node at once: one
//! rewrite of the shared body must fit them all).

use crate::analysis::{NodeLoc, Site};
use crate::rules::ranges::{Decider, Decision, Ranges};
use crate::rules::Verdict;

use super::{LeftReason, LeftSite};

/// Decides the conditional sites over the ranges: those that hold become broadcasts; returns the nodes with an
/// evaluation that fails, each once, with why it is left.
pub(super) fn decide(sites: &mut [Site], ranges: &Ranges) -> Vec<(NodeLoc, LeftSite)> {
    let mut decider = Decider::new(ranges.clone());
    let mut failing: Vec<(NodeLoc, LeftSite)> = Vec::new();
    for site in sites.iter_mut() {
        let Verdict::Conditional(conditions) = &site.verdict else { continue };
        match decider.decide(conditions) {
            Decision::Holds(_) => site.verdict = Verdict::Broadcast,
            d @ Decision::Fails { .. } if !failing.iter().any(|(loc, _)| *loc == site.loc) => {
                let needs: Vec<String> = conditions.iter().map(ToString::to_string).collect();
                let reason = LeftReason::FailsWithinRanges { failing: d.text(), needs };
                let (graph, node, op) = (site.graph.to_string(), site.node.to_string(), site.op.to_string());
                let left = LeftSite { graph, node, op, reason };
                failing.push((site.loc.clone(), left));
            }
            _ => {}
        }
    }
    failing
}
