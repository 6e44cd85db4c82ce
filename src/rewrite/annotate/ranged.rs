//! `infer --range`: what is written holds at every size of the ranges (every value's facts are simplified over
//! them: [`crate::analysis::Analysis::facts_within`]), and a site that fails somewhere in them stops the write
//! like a broken model does, named with its smallest failing sizes.

use crate::analysis::{Note, Site};
use crate::diagnostic::Code;
use crate::rules::ranges::Decision;
use crate::rules::Condition;

/// The note that stops the write: the site, where it fails, and what it needs.
pub(super) fn failing_note(site: &Site, decision: &Decision, conditions: &[Condition]) -> Note {
    let needs: Vec<String> = conditions.iter().map(ToString::to_string).collect();
    Note {
        code: Code::BroadcastViolation,
        graph: site.graph.to_string(),
        node: Some(site.node.to_string()),
        op: Some(site.op.to_string()),
        message: format!("{} within the ranges (it needs {})", decision.text(), needs.join(" and ")).into(),
    }
}
