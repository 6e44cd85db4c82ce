//! Sizes past the expression budget ([`crate::sizes::sym::MAX_SIZE`]): what a node computes from symbolic sizes is kept
//! only while it stays small. A dim over the budget, or one whose computation an operation refused for size,
//! becomes a fresh symbol: it still says "some size", and the same value read twice is still one size, but nothing
//! is claimed about it, so no later verdict rests on what was dropped. A shape-vector element over the budget
//! becomes a fresh symbol too when its bounds prove it is never negative (as a size symbol never is), and unknown
//! otherwise. The first such node of each body is noted once (`expression-too-large`).

use super::scope::Env;
use super::walker::fresh_symbol;
use super::*;

impl<'m> Walker<'m, '_> {
    /// Bounds a node's outputs before they are defined; `refused` is whether an operation refused a result for size
    /// while the node was inferred.
    #[inline(always)]
    pub(super) fn keep_within_budget(
        &mut self,
        env: &Env<'m, '_>,
        (node, index): (&'m NodeProto, usize),
        refused: bool,
        outputs: &mut [ValueFacts],
    ) {
        let mut cut = false;
        for facts in outputs.iter_mut() {
            for d in facts.shape.0.iter_mut().flatten() {
                let over = matches!(d, Dim::Expr(p) if p.over_budget());
                // An operation refused for size leaves a dim unknown: it is a size all the same.
                if over || (refused && matches!(d, Dim::Unknown)) {
                    *d = fresh_symbol(&mut self.fresh);
                    cut = true;
                }
            }
            for v in facts.value.iter_mut().flatten() {
                let Some(p) = v.as_ref().filter(|p| p.over_budget()) else { continue };
                *v = match p.bounds().lo >= crate::sizes::sym::Ext::Fin(0) {
                    true => fresh_symbol(&mut self.fresh).to_poly(),
                    false => None,
                };
                cut = true;
            }
        }
        if (cut || refused) && !self.budget_noted {
            self.budget_noted = true;
            let msg = format!(
                "a size computed here grows past the expression budget ({} nodes); it is a fresh symbol from here on \
                 (some size, equal to no other), and so is every size of this graph that grows past it later",
                crate::sizes::sym::MAX_SIZE
            );
            self.note(env, Code::ExpressionTooLarge, Some((node, index)), msg);
        }
    }
}
