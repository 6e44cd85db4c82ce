//! A requirement an op's specification states as a condition on sizes, which may join several ways of holding
//! ("total = past + S or total ≤ past"): settled where the sizes decide it (nothing said when it holds, a
//! contradiction when it cannot), else a condition the analysis reports (`conditional-shape`) and `--range` decides.
//! [`Ctx::require_equal`] and its kin cover one equality; this is for the rest.

use super::require::{Contradiction, Detail, Requirement, Verdict};
use super::Ctx;
use crate::rules::ranges::{Decision, Predicate, Ranges};
use crate::rules::{Condition, ConditionKind};

impl Ctx<'_, '_> {
    /// Requires `kind` of the sizes of `inputs` (`axis`: the axis of the first of them it is about, for the
    /// finding). A size nothing names (unknown, or made up by inference) leaves it unsaid unless the named sizes
    /// settle it alone.
    pub fn require_condition(&self, requirement: Requirement, inputs: Vec<usize>, axis: usize, kind: ConditionKind) {
        let condition = Condition { axis, kind };
        let verdict = match settled(&condition.kind) {
            Settled::Holds => return,
            Settled::Fails => Verdict::Violated(Detail::Unmet(condition)),
            Settled::Open if mentions_fresh(&condition.kind) => return,
            Settled::Open => Verdict::Conditional(vec![condition]),
        };
        self.report(Contradiction { requirement, inputs, verdict });
    }

    /// Makes the conditions reported since the `start`-th report one finding of `requirement` (on every input they
    /// concern): an op with several conditions (GroupQueryAttention's cache and lengths) says them in one line.
    /// Nothing changes when one of them is certain (the conditions beside it are about a node that never runs).
    pub fn merge_conditions_since(&self, start: usize, requirement: Requirement) {
        let mut found = self.contradictions.borrow_mut();
        let since = found.get(start..).unwrap_or_default();
        if since.len() < 2 || since.iter().any(Contradiction::is_certain) {
            return;
        }
        let mut inputs: Vec<usize> = since.iter().flat_map(|c| c.inputs.iter().copied()).collect();
        inputs.sort_unstable();
        inputs.dedup();
        let mut conditions: Vec<Condition> = Vec::new();
        for c in since.iter().flat_map(|c| c.conditions().iter()) {
            if !conditions.contains(c) {
                conditions.push(c.clone());
            }
        }
        found.truncate(start);
        found.push(Contradiction { requirement, inputs, verdict: Verdict::Conditional(conditions) });
    }
}

/// What a condition comes to with every symbol free.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Settled {
    Holds,
    Fails,
    Open,
}

/// How many decisions a thread keeps: a decoder states the same few requirements in every layer.
const REMEMBERED: usize = 64;

thread_local! {
    /// Conditions already settled on this thread, newest last. Settling one is a pure function of the condition (no
    /// range is given), and a decoder's attention nodes repeat theirs in every layer, each costing a search over
    /// the free symbols: one search per distinct condition instead of one per node.
    static SETTLED: std::cell::RefCell<Vec<(ConditionKind, Settled)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Decides `kind` with no range given: every symbol is free, so it holds or fails only where it does at every size.
fn settled(kind: &ConditionKind) -> Settled {
    let known = SETTLED.with_borrow(|memo| memo.iter().find(|(k, _)| k == kind).map(|&(_, s)| s));
    if let Some(s) = known {
        return s;
    }
    let s = match crate::rules::ranges::decide(&Predicate::of_condition(kind), &Ranges::default()) {
        Decision::Holds(_) => Settled::Holds,
        Decision::Fails { .. } => Settled::Fails,
        Decision::Unproven(_) => Settled::Open,
    };
    SETTLED.with_borrow_mut(|memo| {
        if memo.len() == REMEMBERED {
            memo.remove(0);
        }
        memo.push((kind.clone(), s));
    });
    s
}

/// Whether a condition is about a size nothing names: a condition on it would be on an unknown.
fn mentions_fresh(kind: &ConditionKind) -> bool {
    match kind {
        ConditionKind::OneOf { dim, options } => dim.mentions_fresh() || options.iter().any(|o| o.mentions_fresh()),
        ConditionKind::EqualOrOne { dims } => dims.iter().any(|d| d.mentions_fresh()),
        ConditionKind::UnknownOneOf { .. } => true,
        ConditionKind::AtMost { dim, bound } => dim.mentions_fresh() || bound.mentions_fresh(),
        ConditionKind::Divides { divisor, dim } => divisor.mentions_fresh() || dim.mentions_fresh(),
        ConditionKind::AnyOf(parts) => parts.iter().any(mentions_fresh),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizes::shape::Dim;

    fn run(kind: ConditionKind) -> Vec<Contradiction> {
        let mut fresh = || Dim::Unknown;
        let node = crate::onnx::pb::NodeProto::default();
        let ctx = Ctx {
            op: "Op",
            opset: 17,
            attrs: crate::onnx::attr::Attrs::new(&node, None),
            inputs: &[],
            outputs: 1,
            subgraphs: &[],
            fresh: &mut fresh,
            contradictions: Default::default(),
        };
        ctx.require_condition(Requirement::OperandSizes, vec![0], 1, kind);
        ctx.contradictions.into_inner()
    }

    fn one_of(dim: Dim, options: Vec<Dim>) -> ConditionKind {
        ConditionKind::OneOf { dim, options }
    }

    #[test]
    fn a_condition_the_known_sizes_meet_says_nothing() {
        assert!(run(one_of(Dim::Known(16), vec![Dim::Known(16)])).is_empty());
        let s = Dim::sym("S");
        assert!(run(ConditionKind::AnyOf(vec![one_of(s.clone(), vec![s]), one_of(Dim::Known(2), vec![])])).is_empty());
    }

    #[test]
    fn a_condition_the_known_sizes_break_is_a_contradiction() {
        let found = run(ConditionKind::AnyOf(vec![
            one_of(Dim::Known(3), vec![Dim::Known(1), Dim::Known(5)]),
            one_of(Dim::Known(2), vec![Dim::Known(1)]),
        ]));
        assert_eq!(found.len(), 1);
        assert!(found[0].is_certain(), "{found:?}");
        assert!(matches!(&found[0].verdict, Verdict::Violated(Detail::Unmet(_))));
    }

    #[test]
    fn a_condition_settled_before_is_settled_the_same_way_again_and_others_apart_from_it() {
        let s = Dim::sym("S");
        let open = || one_of(s.clone(), vec![Dim::Known(16)]);
        let broken = || one_of(Dim::Known(3), vec![Dim::Known(16)]);
        for _ in 0..2 {
            assert_eq!(run(open())[0].conditions()[0].to_string(), "S = 16");
            assert!(run(broken())[0].is_certain());
            assert!(run(one_of(s.clone(), vec![s.clone()])).is_empty());
        }
        // More distinct conditions than are remembered: the first is decided again, the same way.
        for n in 0..(REMEMBERED as u64 + 3) {
            assert!(run(one_of(Dim::Known(n + 100), vec![Dim::Known(n + 100)])).is_empty());
        }
        assert!(!run(open())[0].is_certain());
    }

    #[test]
    fn a_condition_on_named_symbols_is_conditional_and_one_on_an_unknown_size_unsaid() {
        let found = run(one_of(Dim::sym("kv_cache_dim"), vec![Dim::Known(16)]));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].conditions()[0].to_string(), "kv_cache_dim = 16");
        assert!(run(one_of(Dim::sym("?3"), vec![Dim::Known(16)])).is_empty());
        assert!(run(one_of(Dim::Unknown, vec![Dim::Known(16)])).is_empty());
    }
}
