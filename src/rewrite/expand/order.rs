//! The order a plan takes the sites in, while the analysis hands them over one by one.
//!
//! A plan is made node by node in the order of their places in the model (the main graph's nodes by position,
//! then each body's, by path): fresh names, which of two sites sharing an explicit broadcast gets its nodes, and
//! the order of the summary's lines all follow from it. The walk evaluates nodes in topological order, which for
//! the main graph of a model stored in that order (as ONNX requires) is the file's order, and the main graph's
//! places come before every body's. So a main-graph site is planned as soon as it arrives and then dropped, and
//! only the sites of bodies (subgraphs and functions, whose calls evaluate one node several times) wait for the
//! end: memory for sites no longer grows with the main graph. When the walk takes the main graph in another order
//! (Kahn's, for a graph stored out of order), the sites arrive out of order and the plan is made again from all
//! of them at once ([`InOrder::out_of_order`]).

use crate::analysis::Site;

use super::strategy::Planner;

/// The sites of a walk, planned in order as they arrive where they can be.
#[derive(Default)]
pub(super) struct InOrder {
    /// The evaluations of the main-graph node being gathered (one, unless the walk evaluates a node twice).
    current: Vec<Site>,
    /// The sites of bodies, planned after the main graph's.
    later: Vec<Site>,
    /// A main-graph site arrived after one of a later node: what was planned is not in order.
    out_of_order: bool,
    /// Main-graph nodes planned.
    planned: usize,
}

impl InOrder {
    /// Takes the next site the walk evaluated, planning the main graph's node before it once the walk has moved on.
    pub fn take(&mut self, planner: &mut Planner<'_>, site: Site) {
        if self.out_of_order {
            return;
        }
        if !site.loc.graph.is_empty() {
            self.later.push(site);
            return;
        }
        match self.current.first().map(|c| c.loc.node.cmp(&site.loc.node)) {
            Some(std::cmp::Ordering::Greater) => {
                self.out_of_order = true;
                self.current.clear();
                self.later.clear();
                return;
            }
            Some(std::cmp::Ordering::Less) => self.flush(planner),
            _ => {}
        }
        self.current.push(site);
    }

    /// Whether the walk took the main graph out of the file's order, so that nothing planned can be used.
    pub fn out_of_order(&self) -> bool {
        self.out_of_order
    }

    /// Plans what is left once the walk is over: the last main-graph node, then the bodies' sites by place.
    /// Returns how many nodes were planned in all (the summary's `sites`).
    pub fn finish(mut self, planner: &mut Planner<'_>) -> usize {
        self.flush(planner);
        let later = std::mem::take(&mut self.later);
        self.planned + plan_sorted(planner, later)
    }

    fn flush(&mut self, planner: &mut Planner<'_>) {
        if let Some(first) = self.current.first() {
            let loc = first.loc.clone();
            planner.site(&loc, &self.current);
            self.planned += 1;
            self.current.clear();
        }
    }
}

/// Plans `sites` node by node in the order of their places (a node's evaluations in the order given); returns how
/// many nodes were planned.
pub(super) fn plan_sorted(planner: &mut Planner<'_>, mut sites: Vec<Site>) -> usize {
    // Stable: a node's evaluations keep the walk's order.
    sites.sort_by(|a, b| a.loc.cmp(&b.loc));
    let mut planned = 0;
    for group in sites.chunk_by(|a, b| a.loc == b.loc) {
        planner.site(&group[0].loc, group);
        planned += 1;
    }
    planned
}
