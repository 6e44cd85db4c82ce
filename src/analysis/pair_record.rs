//! The record of a numpy pair judged the quick way, for a taker that takes every site whole ([`Sites::pair_records`]).
//!
//! `expand` plans every site that broadcasts, and a large graph's sites are mostly pairs the walk judges the quick
//! way (two inputs of one type, every size known: [`Walker::counted_pair_into`], which writes the output in the box it
//! is defined in). For such a taker the walk makes the pair's record from that judgement, as [`Walker::site`] makes it
//! from the rule bound in full: the rule is not bound a second time, and the output is not moved to its box through
//! a list. Debug builds bind it all the same and assert that the two records agree.
//!
//! [`Sites::pair_records`]: super::Sites::pair_records

use std::borrow::Cow;

use super::scope::Env;
use super::site::{reported_at, site_inputs};
use super::walker::Walker;
use super::*;

/// The positions of a pair's two inputs, both present.
const BOTH: [usize; 2] = [0, 1];

impl<'m> Walker<'m, '_> {
    /// Hands the taker the record of a pair settled as `kind` by [`Walker::counted_pair_into`], whose output it wrote
    /// in `facts`. (Kept out of line: inlined, it grew the walk's path for `check`, which takes no records.)
    #[inline(never)]
    pub(super) fn pair_record(
        &mut self,
        env: &Env<'m, '_>,
        (index, node, attrs): (usize, &'m NodeProto, Attrs<'m>),
        (op, kind): (BroadcastOp, rules::VerdictKind),
        inputs: &[Option<&ValueFacts>],
        facts: &ValueFacts,
    ) {
        let Some(each) = self.each_site.as_deref_mut() else { return };
        let (graph, node_name, node_index, functions) = reported_at(env, node, index);
        let site = Site {
            loc: NodeLoc { graph: env.loc.clone(), node: index },
            graph,
            node: node_name,
            node_index,
            op: Cow::Borrowed(node.op_type()),
            kind: op.kind,
            rule: rules::Rule::Multidirectional,
            inputs: site_inputs(node, &BOTH, inputs),
            target: None,
            output_shape: Cow::Borrowed(&facts.shape),
            verdict: match kind {
                rules::VerdictKind::Same => rules::Verdict::Same,
                _ => rules::Verdict::Broadcast,
            },
            rule_inputs: smallvec::smallvec![Some(BOTH[0]), Some(BOTH[1])],
            type_mismatch: None,
            functions,
            opset: env.opset,
            attrs: SiteAttrs::of(attrs),
        };
        debug_assert!(
            bound_in_full_agrees(&site, op, &rules::NodeView::new(&node.input, inputs, attrs)),
            "the record of a pair judged the quick way is the one its rule bound in full gives: {site:?}"
        );
        each.site(site);
    }
}

/// Whether `site`, a pair's record made from the quick judgement, has what binding its rule in full gives: the rule,
/// verdict, inputs, target and output, and no type mismatch.
fn bound_in_full_agrees(site: &Site<'_>, op: BroadcastOp, view: &rules::NodeView) -> bool {
    let full = rules::bind(op.kind, view);
    let elem = |i: usize| site.inputs[i].elem;
    full.rule == site.rule
        && full.outcome.verdict == site.verdict
        && full.outcome.output == *site.output_shape
        && full.rule_inputs == site.rule_inputs
        && full.target == site.target
        && super::site::type_mismatch(op.same_type, &BOTH, elem).is_none()
}
