//! The walk's step for the commonest node of a large graph: an op of the numpy rule with two inputs whose facts are
//! known, one output no declaration names, no attribute, outside a function call, which the taker only counts.
//! It does what [`Walker::node`] does for such a node when it builds the counted pair in place, in the same order,
//! without the general path's questions (inputs' floats, `Shape`'s reads, a list of inputs, subgraphs). Any other
//! node, and any node whose pair is not settled the quick way, is left to [`Walker::node`] before anything is noted.

use super::declared::Declared;
use super::index_bound;
use super::op_memo::OpFacts;
use super::scope::{Env, Scope, NONE};
use super::walker::Walker;
use super::*;
use crate::onnx::pb::node::CompactString;

impl<'m> Walker<'m, '_> {
    /// Walks `node` as a counted numpy pair if it is one (see the module); false, having changed nothing the walk
    /// shows, if it is not.
    #[inline]
    pub(super) fn pair_step(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        declared: &Declared<'m>,
        (index, slots, first, ranged): (usize, &[u32], u32, bool),
        out_declared: bool,
        node: &'m NodeProto,
    ) -> bool {
        let ([a, b], [out]) = (&node.input[..], &node.output[..]) else { return false };
        let attrs = Attrs::new(node, None);
        let refuse = !self.quick_pairs || env.call.is_some() || !attrs.is_empty();
        // An empty input has no slot: its name is only read for an input without one (most have one).
        let empty = |k: usize, name: &CompactString| slots[k] == NONE && name.is_empty();
        if refuse || empty(0, a) || empty(1, b) || out.is_empty() {
            return false;
        }
        let (domain, op_type) = (node.domain(), node.op_type());
        // Asked as the general path asks it (which may note a missing opset): asked again there, it notes nothing.
        let &OpFacts { broadcast, plain, .. } = self.op_facts(env, (index, node), (domain, op_type));
        let Some(op) = broadcast.filter(|_| plain) else { return false };
        // The walk's flags tell most outputs undeclared without a lookup.
        if out_declared && declared.of_made(first, out).is_some() {
            return false;
        }
        // Taken before the inputs are read (they borrow the scope); given back unchanged but for its contents,
        // which whoever takes it next writes over, as the general path gives back a box it did not use.
        let mut facts = scope.spare_box();
        let found = (self.lookup(env, scope, (slots[0], a)), self.lookup(env, scope, (slots[1], b)));
        // An undefined or contradicted input is the general path's: it notes the one, and taints from the other.
        let (refs, kind) = match found {
            (Some(x), Some(y)) if !x.contradicted && !y.contradicted => {
                let refs = [Some(x), Some(y)];
                crate::sizes::sym::take_refusals();
                (refs, self.counted_pair_into(node, op, &refs, &mut facts))
            }
            _ => ([None, None], None),
        };
        let Some(kind) = kind else {
            scope.give_back(facts);
            return false;
        };
        self.in_place(env, (index, node, attrs), (op, kind), &refs, &mut facts);
        // A floating-point output (most pairs') has no range: asked inline, without the general question's reads of
        // the node's domain and op. Nor has one whose range no reader reads (`ranged` false).
        let range = match !ranged || index_bound::floating(facts.elem) {
            true => None,
            false => self.value_range(env, scope, (index, node, attrs), &refs, std::slice::from_ref(&*facts)),
        };
        scope.define_boxed(first, out, facts);
        index_bound::keep_range(scope, node, range);
        true
    }
}
