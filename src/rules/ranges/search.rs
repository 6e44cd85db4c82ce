//! Deciding a predicate over a box of sizes (a range per symbol), best-first by the box's smallest sizes.
//!
//! A box is settled for all its sizes at once when the algebra can: each symbol is written over the box's offset
//! k (`min + step*k`, and again `max - step*k`, so that both ends of the range are known to the normal form), the
//! test's polynomial brought to normal form, and its interval bounds (k from 0 to the box's length) decide it. A
//! symbol under floors whose step does not clear them is first split into its residue classes (`h` into
//! `h ≡ 0 … 31 (mod 32)`: then `floor((h + 31) / 32)` is linear in k and the floors vanish); any other undecided
//! box is halved. Single sizes are decided exactly, so a box is never judged by a sample: what is not proven is
//! returned as undecided.
//!
//! Boxes are taken in order of their smallest sizes (fewest steps above the ranges' minima, then by symbol), so the
//! first box found to fail everywhere starts at the smallest failing sizes: the witness.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::predicate::{Compiled, Tri};
use super::{Decision, Proof, SizeRange, Unproven, UnprovenReason};
use crate::sizes::sym::{Interval, Poly};

/// The most undecided boxes a result lists (it counts them all).
pub const MAX_PARTS_SHOWN: usize = 4;
/// Boxes evaluated for one decision before the rest is given up as undecided.
pub(crate) const BUDGET: usize = 4096;
/// Single sizes left undecided before the rest of the box is given up as undecided too (a predicate that depends
/// on a symbol without a range is undecided at every size; listing them one by one says nothing more).
const MAX_UNDECIDED_POINTS: usize = 64;

/// A box: one range per symbol of a [`Compiled`] predicate, in its order.
pub(crate) type Cell = Vec<SizeRange>;

/// The boxes a search settled, by outcome.
#[derive(Debug, Default)]
pub(crate) struct Exploration {
    pub holds: Vec<Cell>,
    pub fails: Vec<Cell>,
    pub unproven: Vec<Cell>,
    /// Single sizes settled one by one (as opposed to whole boxes by the algebra).
    pub enumerated: u64,
    /// The budget ran out (the boxes left are among `unproven`).
    pub exhausted: bool,
}

/// Settles the boxes of `root` until every size is in a settled box (or the budget is spent), stopping at the
/// first failing box when `first_failure`.
pub(crate) fn explore(pred: &Compiled, root: &Cell, budget: usize, first_failure: bool) -> Exploration {
    let mut out = Exploration::default();
    let mut store: Vec<Option<Cell>> = Vec::new();
    let mut heap = BinaryHeap::new();
    let push = |cell: Cell, store: &mut Vec<Option<Cell>>, heap: &mut BinaryHeap<_>| {
        heap.push(Reverse((order_key(root, &cell), store.len())));
        store.push(Some(cell));
    };
    push(root.clone(), &mut store, &mut heap);
    let (mut evaluated, mut undecided_points) = (0, 0);
    while let Some(Reverse((_, index))) = heap.pop() {
        let cell = store[index].take().expect("each box is taken once");
        if evaluated >= budget || undecided_points >= MAX_UNDECIDED_POINTS {
            out.exhausted |= evaluated >= budget;
            out.unproven.push(cell);
            continue;
        }
        evaluated += 1;
        let point = cell.iter().all(|r| r.is_point());
        match eval(pred, &cell) {
            Tri::All => {
                out.enumerated += u64::from(point);
                out.holds.push(cell);
            }
            Tri::None => {
                out.enumerated += u64::from(point);
                out.fails.push(cell);
                if first_failure {
                    break;
                }
            }
            Tri::Mixed if point => {
                undecided_points += 1;
                out.unproven.push(cell);
            }
            Tri::Mixed => {
                for child in split(&cell, &pred.moduli) {
                    push(child, &mut store, &mut heap);
                }
            }
        }
    }
    out
}

/// The order boxes are taken in: fewest steps above the root's minima, then the minima in symbol order.
fn order_key(root: &Cell, cell: &Cell) -> (u128, Vec<u64>) {
    let steps = root.iter().zip(cell).map(|(r, c)| u128::from((c.first() - r.first()) / r.step())).sum();
    (steps, cell.iter().map(|c| c.first()).collect())
}

/// The predicate over every size of a box.
pub(crate) fn eval(pred: &Compiled, cell: &Cell) -> Tri {
    let mut known: Vec<Option<Tri>> = vec![None; pred.tests.len()];
    pred.tree.eval(&mut |i| *known[i].get_or_insert_with(|| test_over(pred, i, cell)))
}

/// Which end of its range a symbol is written from over a box.
#[derive(Clone, Copy)]
enum End {
    Low,
    High,
}

fn test_over(pred: &Compiled, test: usize, cell: &Cell) -> Tri {
    let offsets: Vec<String> = (0..cell.len()).map(|i| pred.offset_name(i)).collect();
    let range = |name: &str| {
        let i = offsets.iter().position(|o| o == name)?;
        Some(Interval::between(0, i64::try_from(cell[i].len() - 1).ok()?))
    };
    let mut outcome = Tri::Mixed;
    for end in [End::Low, End::High] {
        let value = |name: &str| symbol_value(pred, cell, &offsets, name, end);
        outcome = pred.tests[test].over(&value, &range);
        if outcome != Tri::Mixed || !pred.two_ends[test] || cell.iter().all(|r| r.is_point()) {
            break;
        }
    }
    outcome
}

/// A symbol over a box: its size where the box has one, else `min + step*k` or `max - step*k` for its offset k.
fn symbol_value(pred: &Compiled, cell: &Cell, offsets: &[String], name: &str, end: End) -> Option<Poly> {
    let i = pred.symbols.iter().position(|s| **s == *name)?;
    let r = cell[i];
    let size = |v: u64| i64::try_from(v).ok().map(Poly::constant);
    if r.is_point() {
        return size(r.first());
    }
    let moved = Poly::atom(&offsets[i]).scale(i64::try_from(r.step()).ok()?)?;
    match end {
        End::Low => size(r.first())?.add(&moved),
        End::High => size(r.last())?.sub(&moved),
    }
}

/// The parts of an undecided box: a symbol whose step does not clear its floors split into residue classes by the
/// least prime factor left, else the symbol with the most sizes halved.
fn split(cell: &Cell, moduli: &[i64]) -> Vec<Cell> {
    let by_class = (0..cell.len())
        .filter(|&i| !cell[i].is_point() && moduli[i] > 1)
        .filter_map(|i| {
            let step = i64::try_from(cell[i].step()).ok()?;
            let ratio = crate::sizes::sym::lcm(step, moduli[i])? / step;
            (ratio > 1).then_some((i, ratio))
        })
        .max_by_key(|&(i, ratio)| (ratio, Reverse(i)));
    if let Some((i, ratio)) = by_class {
        let r = cell[i];
        let p = least_prime_factor(ratio as u64);
        if let Some(step) = r.step().checked_mul(p) {
            return (0..p)
                .map(|j| r.first() + j * r.step())
                .take_while(|&start| start <= r.last())
                .filter_map(|start| SizeRange::new(start, r.last(), step).ok())
                .map(|part| with(cell, i, part))
                .collect();
        }
    }
    let Some(i) = (0..cell.len()).max_by_key(|&i| (cell[i].len(), Reverse(i))) else { return Vec::new() };
    let r = cell[i];
    let half = r.len() / 2;
    let lower = SizeRange::new(r.first(), r.first() + r.step() * (half - 1), r.step());
    let upper = SizeRange::new(r.first() + r.step() * half, r.last(), r.step());
    [lower, upper].into_iter().flatten().map(|part| with(cell, i, part)).collect()
}

fn with(cell: &Cell, i: usize, part: SizeRange) -> Cell {
    let mut c = cell.clone();
    c[i] = part;
    c
}

fn least_prime_factor(n: u64) -> u64 {
    (2..).take_while(|d| d * d <= n).find(|d| n.is_multiple_of(*d)).unwrap_or(n)
}

/// Adjacent boxes joined: two boxes equal but on one symbol, where one's range continues the other's by the same
/// step, become one.
pub(crate) fn merge(mut cells: Vec<Cell>) -> Vec<Cell> {
    let dims = cells.first().map_or(0, Vec::len);
    loop {
        let before = cells.len();
        for axis in 0..dims {
            let others = |c: &Cell| -> Vec<SizeRange> {
                c.iter().enumerate().filter(|&(j, _)| j != axis).map(|(_, r)| *r).collect()
            };
            cells.sort_by(|a, b| {
                (others(a), a[axis].step(), a[axis].first()).cmp(&(others(b), b[axis].step(), b[axis].first()))
            });
            let mut out: Vec<Cell> = Vec::with_capacity(cells.len());
            for c in cells {
                let joined = out.last_mut().filter(|last| {
                    others(last) == others(&c)
                        && last[axis].step() == c[axis].step()
                        && last[axis].last().checked_add(last[axis].step()) == Some(c[axis].first())
                });
                match joined {
                    Some(last) => {
                        last[axis] = SizeRange::new(last[axis].first(), c[axis].last(), c[axis].step())
                            .expect("the joined range is ordered")
                    }
                    None => out.push(c),
                }
            }
            cells = out;
        }
        if cells.len() == before {
            return cells;
        }
    }
}

/// How many sizes a box holds (saturating).
pub(crate) fn volume(cell: &Cell) -> u128 {
    cell.iter().fold(1u128, |v, r| v.saturating_mul(u128::from(r.len())))
}

/// The decision for a predicate over `root`: the smallest witness if some size fails, a proof if every size holds,
/// else the undecided parts.
pub(crate) fn decide(pred: &Compiled, root: &Cell) -> Decision {
    let found = explore(pred, root, BUDGET, true);
    if let Some(cell) = found.fails.first() {
        let witness = pred.symbols.iter().cloned().zip(cell.iter().map(|r| r.first())).collect();
        return Decision::Fails { witness, smaller_unproven: !found.unproven.is_empty() };
    }
    if found.unproven.is_empty() {
        return Decision::Holds(Proof { enumerated: found.enumerated });
    }
    Decision::Unproven(unproven(pred, found.unproven, found.exhausted))
}

/// The undecided boxes, merged and named, with the reason they are undecided.
pub(crate) fn unproven(pred: &Compiled, cells: Vec<Cell>, exhausted: bool) -> Unproven {
    let reason = if !pred.free.is_empty() {
        UnprovenReason::FreeSymbols(pred.free.clone())
    } else if pred.unknowable {
        UnprovenReason::UnknownDim
    } else if exhausted {
        UnprovenReason::Budget
    } else {
        UnprovenReason::Undecided
    };
    let sizes = cells.iter().map(volume).fold(0u128, u128::saturating_add);
    let mut cells = merge(cells);
    cells.sort_by_key(|c| order_key(c, c).1);
    let parts = cells
        .iter()
        .take(MAX_PARTS_SHOWN)
        .map(|c| pred.symbols.iter().cloned().zip(c.iter().copied()).collect())
        .collect();
    Unproven { parts, sizes, reason }
}

#[cfg(test)]
mod tests;
