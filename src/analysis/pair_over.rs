//! The walk's step for a counted numpy pair one of whose inputs the node reads last and the node just before made
//! (the links of a chain, `v = op(v', k)`): the output is written over that input's facts, in its box and its slot,
//! rather than built in a spare box while the input waits to be dropped after the node. Its facts, the verdict
//! counted and every note are those [`Walker::pair_step`] gives; only which slot and box hold the value differ, and
//! nothing the walk shows depends on those.

use super::index_bound;
use super::op_memo::OpFacts;
use super::scope::{Env, Scope, NONE};
use super::walker::Walker;
use super::*;

impl<'m> Walker<'m, '_> {
    /// Walks `node` (inputs in `slots`) as a counted pair written over its input `k`, the value of a node-made slot
    /// that no later node reads, if it is one: true, the output then in that slot. False, having changed nothing
    /// the walk shows, for any other node: a pair of another kind, an input undefined or contradicted, an output of
    /// no floating-point type (whose range the general step asks).
    #[inline]
    pub(super) fn pair_over(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        (index, slots, k): (usize, [u32; 2], usize),
        node: &'m NodeProto,
    ) -> bool {
        let ([_, _], [out]) = (&node.input[..], &node.output[..]) else { return false };
        let attrs = Attrs::new(node, None);
        if !self.pairs || self.pair_records || env.call.is_some() || !attrs.is_empty() || out.is_empty() {
            return false;
        }
        // An empty input has no slot: its name is only read for an input without one (most have one).
        let other_name = &node.input[1 - k];
        if (slots[1 - k] == NONE && other_name.is_empty()) || !scope.made_here(slots[k]) {
            return false;
        }
        let (domain, op_type) = (node.domain(), node.op_type());
        // Asked as the general step asks it (which may note a missing opset): asked again there, it notes nothing.
        let &OpFacts { broadcast, plain, .. } = self.op_facts(env, (index, node), (domain, op_type));
        let Some(op) = broadcast.filter(|_| plain) else { return false };
        // Out of its slot while it is read and written: the other input is read from the scope meanwhile.
        let Some(mut over) = scope.slots.get_mut(slots[k] as usize).and_then(Option::take) else { return false };
        let judged = match self.lookup(env, scope, (slots[1 - k], other_name)) {
            Some(other) if !other.contradicted && !over.contradicted => {
                let refs = if k == 0 { [&*over, other] } else { [other, &*over] };
                // A floating-point output (most pairs') has no range to ask of its inputs, which are then gone.
                let judged = self.judge_pair_over(node, op, refs, k).filter(|j| index_bound::floating(j.elem));
                judged.map(|j| (j, other))
            }
            _ => None,
        };
        let Some((judged, other)) = judged else {
            scope.slots[slots[k] as usize] = Some(over);
            return false;
        };
        if cfg!(debug_assertions) {
            // Judged in full from the inputs as they were (which counts the site), to assert that the two agree.
            let refs = if k == 0 { [Some(&*over), Some(other)] } else { [Some(other), Some(&*over)] };
            let full = self.site(env, (index, node, attrs), op, &refs, Some(Vec::new()));
            judged.write(&mut over, other);
            debug_assert!(
                full.len() == 1 && full[0] == *over,
                "a counted pair written over its input has the output its full judgement gives: {over:?} against {full:?}"
            );
        } else {
            judged.write(&mut over, other);
            if self.each_site.is_some() {
                self.count_site(judged.kind);
            }
        }
        // The pair's sizes are all known and it has no contents: nothing here is past the budget, and nothing here
        // builds an expression the budget could refuse (so its count of refusals is neither taken nor asked: each
        // step that asks takes it first).
        scope.slots[slots[k] as usize] = Some(over);
        // The input is gone, as the general step drops it after the node: with its range, where the walk keeps any.
        if !scope.ranges.is_empty() {
            scope.ranges.remove(node.input[k].as_str());
        }
        true
    }
}
