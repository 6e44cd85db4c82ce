//! What takes a walk's sites as they are evaluated ([`Sites`]), and the sites it only counts ([`CountedOnly`]).
//!
//! `check` without a listing of every site reports a site that holds (the same shapes, or a broadcast where
//! broadcasting is allowed) only in its totals. Such a site need not become a [`Site`] record at all: building one
//! (its inputs' names and shapes, where it is reported, its attributes), moving it to the judge and dropping it
//! cost more than applying its rule. A taker names the verdicts it only counts; the walk counts those sites
//! without the record.

use super::Site;
use crate::rules::{Rule, VerdictKind};

/// Takes the sites of a walk, one by one, as they are evaluated.
pub trait Sites {
    /// Takes one site.
    fn site(&mut self, site: Site<'_>);

    /// The sites this taker only counts, by verdict and rule; [`Sites::count`] then takes them instead of
    /// [`Sites::site`], provided their inputs' types agree (a type mismatch is a finding).
    fn counted_only(&self) -> CountedOnly {
        CountedOnly::NONE
    }

    /// Counts a site of verdict `kind` that [`Sites::counted_only`] names.
    fn count(&mut self, _kind: VerdictKind) {}

    /// Counts `n` sites of verdict `kind` that [`Sites::counted_only`] names: [`Sites::count`] `n` times unless
    /// the taker says otherwise. The walk counts such sites itself and hands them over when it ends, by verdict
    /// (a call a site, through `dyn Sites`, cost ~15 instructions a node): they come after every site taken whole,
    /// and not in the walk's order.
    fn count_many(&mut self, kind: VerdictKind, n: usize) {
        (0..n).for_each(|_| self.count(kind));
    }

    /// Whether this taker, which counts no numpy pair that holds ([`Sites::counted_only`]), takes the pairs the walk
    /// judges the quick way (two inputs of one type, every size known) as records made from that judgement, without
    /// binding their rule again: the same records, for less. (`expand`, which plans every site that broadcasts.)
    fn pair_records(&self) -> bool {
        false
    }

    /// Whether `site`, one [`Sites::counted_only`] names, is one whose full judgement has nothing to say: debug
    /// builds make the record of each counted site and assert it.
    fn agrees(&self, _site: &Site<'_>) -> bool {
        true
    }
}

/// A closure takes every site, and counts none.
impl<F: FnMut(Site<'_>)> Sites for F {
    fn site(&mut self, site: Site<'_>) {
        self(site)
    }
}

/// Every verdict kind, in the order of their values (`kind as usize` is a kind's place).
pub(super) const VERDICTS: [VerdictKind; 5] =
    [VerdictKind::Same, VerdictKind::Broadcast, VerdictKind::Violation, VerdictKind::Conditional, VerdictKind::Unknown];
const RULES: [Rule; 5] =
    [Rule::Multidirectional, Rule::Unidirectional, Rule::LegacyAxis, Rule::Bidirectional, Rule::None];

/// A set of (verdict, rule) pairs, a bit each: the sites a [`Sites`] taker only counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountedOnly(u64);

impl CountedOnly {
    /// No site: every one is taken whole.
    pub const NONE: CountedOnly = CountedOnly(0);

    /// The pairs `quiet` holds for. A verdict or rule missing from the lists here is never counted only.
    pub fn of(quiet: impl Fn(VerdictKind, Rule) -> bool) -> CountedOnly {
        let mut bits = 0;
        for kind in VERDICTS {
            for rule in RULES {
                if quiet(kind, rule) {
                    bits |= bit(kind, rule);
                }
            }
        }
        CountedOnly(bits)
    }

    /// Whether a site of this verdict and rule is only counted.
    #[inline]
    pub fn contains(self, kind: VerdictKind, rule: Rule) -> bool {
        self.0 & bit(kind, rule) != 0
    }
}

/// The bit of a (verdict, rule) pair: eight of each fit a word.
#[inline]
fn bit(kind: VerdictKind, rule: Rule) -> u64 {
    let (k, r) = (kind as u64, rule as u64);
    match k < 8 && r < 8 {
        true => 1 << (k * 8 + r),
        false => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_only_holds_exactly_the_pairs_it_was_made_of() {
        let quiet =
            |kind, rule| kind == VerdictKind::Same || (kind == VerdictKind::Broadcast && rule == Rule::Bidirectional);
        let counted = CountedOnly::of(quiet);
        for kind in VERDICTS {
            for rule in RULES {
                assert_eq!(counted.contains(kind, rule), quiet(kind, rule), "{kind:?} {rule:?}");
            }
        }
        assert!(!CountedOnly::NONE.contains(VerdictKind::Same, Rule::Multidirectional));
    }
}
