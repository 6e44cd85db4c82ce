//! The largest box of sizes within given ranges where a predicate holds at every size: what `check --safe-ranges`
//! reports (`seq ∈ 1..64`; `height, width ∈ 320..640/32`).
//!
//! The ranges are settled box by box as for a decision ([`super::search`]), this time to the end: the boxes that
//! hold, joined where adjacent, are the candidates, each already a proven box with a step per symbol (a residue
//! class split off by the floors keeps its step: multiples of 32). The largest (most sizes; then the smaller steps,
//! then the smaller sizes) is then grown symbol by symbol as far as it still provably holds. Every box reported is
//! proven; "largest" is exact for one symbol and for boxes the search settles whole, and otherwise the largest the
//! search found (the result says whether the search finished within its budget).

use std::sync::Arc;

use super::predicate::Compiled;
use super::search::{self, explore, merge, volume, Cell};
use super::{Predicate, Ranges, SizeRange};

/// Boxes settled in the search for the largest safe box.
const SAFE_BUDGET: usize = 1 << 15;

/// A box where the predicate holds at every size: a range per symbol of the ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafeBox {
    pub ranges: Vec<(Arc<str>, SizeRange)>,
    /// Whether the search settled every size of the given ranges within its budget.
    pub complete: bool,
}

/// The largest safe box within `ranges` for a predicate, or `None` when no size there is proven to hold. Symbols of
/// the ranges the predicate does not name keep their whole range; symbols it names without a range make every box
/// unprovable.
pub fn largest_safe(pred: &Predicate, ranges: &Ranges) -> Option<SafeBox> {
    let compiled = Compiled::new(pred, &|s| ranges.get(s).is_some());
    if !compiled.free.is_empty() {
        return None;
    }
    let root: Cell = compiled.symbols.iter().filter_map(|s| ranges.get(s)).collect();
    let found = explore(&compiled, &root, SAFE_BUDGET, false);
    let complete = !found.exhausted;
    let best = merge(found.holds).into_iter().max_by(|a, b| preference(a).cmp(&preference(b)))?;
    let best = grow(&compiled, &root, best);
    let ranges = ranges
        .iter()
        .map(|(name, whole)| match compiled.symbols.iter().position(|s| s == name) {
            Some(i) => (name.clone(), best[i]),
            None => (name.clone(), whole),
        })
        .collect();
    Some(SafeBox { ranges, complete })
}

/// Which box is better: more sizes, then smaller steps, then smaller sizes.
fn preference(cell: &Cell) -> (u128, std::cmp::Reverse<Vec<u64>>, std::cmp::Reverse<Vec<u64>>) {
    let steps = cell.iter().map(|r| r.step()).collect();
    let firsts = cell.iter().map(|r| r.first()).collect();
    (volume(cell), std::cmp::Reverse(steps), std::cmp::Reverse(firsts))
}

/// The box grown symbol by symbol, upwards then downwards, by as many of its steps as still provably hold (the
/// most found by doubling, then halving the gap).
fn grow(pred: &Compiled, root: &Cell, mut cell: Cell) -> Cell {
    for axis in 0..cell.len() {
        for up in [true, false] {
            let r = cell[axis];
            let room = if up {
                (root[axis].last() - r.last()) / r.step()
            } else {
                (r.first() - root[axis].first()) / r.step()
            };
            let grown = |by: u64| -> Cell {
                let mut c = cell.clone();
                let (first, last) =
                    if up { (r.first(), r.last() + by * r.step()) } else { (r.first() - by * r.step(), r.last()) };
                c[axis] = SizeRange::new(first, last, r.step()).expect("inside the root's range");
                c
            };
            let holds = |by: u64| {
                let found = explore(pred, &grown(by), search::BUDGET, true);
                found.fails.is_empty() && found.unproven.is_empty()
            };
            let (mut good, mut bad) = (0u64, None::<u64>);
            let mut probe = 1u64;
            while probe <= room && bad.is_none() {
                if holds(probe) {
                    good = probe;
                    probe = probe.saturating_mul(2);
                } else {
                    bad = Some(probe);
                }
            }
            let mut bad = bad.unwrap_or(room + 1);
            while bad - good > 1 {
                let mid = good + (bad - good) / 2;
                if holds(mid) {
                    good = mid;
                } else {
                    bad = mid;
                }
            }
            cell = grown(good);
        }
    }
    cell
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizes::sym::{parse, Poly};

    fn ranges(list: &[(&str, &str)]) -> Ranges {
        Ranges::parsed(list)
    }

    fn shown(b: &SafeBox) -> String {
        super::super::describe(b.ranges.iter().map(|(n, r)| (n.as_ref(), *r)))
    }

    #[test]
    fn a_position_table_is_safe_up_to_its_length() {
        let table = Predicate::AtMost(parse("seq").unwrap(), Poly::constant(100));
        let safe = largest_safe(&table, &ranges(&[("seq", "1..65536"), ("batch", "1..8")])).unwrap();
        assert_eq!(shown(&safe), "batch ∈ 1..8, seq ∈ 1..100");
        assert!(safe.complete);
    }

    #[test]
    fn yolo_anchors_are_safe_on_multiples_of_32() {
        let heads = parse("floor((height + 7) / 8)*floor((width + 7) / 8) + floor((height + 15) / 16)*floor((width + 15) / 16) + floor((height + 31) / 32)*floor((width + 31) / 32)").unwrap();
        let anchors = parse("21*floor((height + 31) / 32)*floor((width + 31) / 32)").unwrap();
        let pred = Predicate::Equal(heads, anchors);
        let safe = largest_safe(&pred, &ranges(&[("height", "320..640"), ("width", "320..640")])).unwrap();
        assert_eq!(shown(&safe), "height ∈ 320..640/32, width ∈ 320..640/32");
    }

    #[test]
    fn two_sizes_that_must_match_are_safe_with_one_of_them_fixed_at_1() {
        let pair = Predicate::Any(vec![
            Predicate::Equal(parse("a").unwrap(), parse("b").unwrap()),
            Predicate::Equal(parse("a").unwrap(), Poly::constant(1)),
            Predicate::Equal(parse("b").unwrap(), Poly::constant(1)),
        ]);
        let safe = largest_safe(&pair, &ranges(&[("a", "1..8"), ("b", "1..16")])).unwrap();
        assert_eq!(shown(&safe), "a ∈ 1, b ∈ 1..16");
    }

    #[test]
    fn nothing_is_safe_where_every_size_fails() {
        let never = Predicate::AtMost(parse("seq + 1").unwrap(), Poly::constant(0));
        assert_eq!(largest_safe(&never, &ranges(&[("seq", "1..9")])), None);
    }
}
