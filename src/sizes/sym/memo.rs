//! Results of the algebra kept per thread once worked out. A model asks for the same ones again and again: every
//! layer of a network concatenates a shape of the same sizes (`[batch, 2, 24, floor((height + 7) / 8), …]`), and the
//! range of each such `Concat` is the `max` and the `min` of its sizes, each found by comparing every pair of them
//! (a fifth of check on a ShuffleNet export); every convolution of a stage works out the same output size.
//!
//! Only work done outside any operation of the algebra is kept: each operation it calls then has the whole work of
//! an operation, so the result depends on the arguments alone. Work called inside an operation shares what is left
//! of that one's work, and is done each time. What the work refused along the way is kept with it and counted again
//! when it is reused, so that [`super::take_refusals`] says the same.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::hash::Hash;
use std::thread::LocalKey;

use rustc_hash::FxHashMap;

use super::{budget, Poly};

/// How many results are kept; past it they are dropped and kept again from none (one model needs a few hundred,
/// and a long-lived caller checks many models).
const KEPT: usize = 4096;

/// How many results a table has room for when it keeps its first.
const RESERVED: usize = 256;

/// A table of kept results, one per kind of work: see [`remembered`].
pub type Table<K, V> = RefCell<FxHashMap<K, (V, usize)>>;

thread_local! {
    static EXTREMA: Table<(Vec<Poly>, Ordering), Poly> = RefCell::new(FxHashMap::default());
}

/// `work(&key)`, or what it gave before for the same key. The work must depend on the key alone, and touch no
/// other state than through the algebra's operations (no fresh symbol, nothing reported).
pub fn remembered<K: Hash + Eq, V: Clone>(
    table: &'static LocalKey<Table<K, V>>,
    key: K,
    work: impl FnOnce(&K) -> V,
) -> V {
    if !budget::outermost() {
        return work(&key);
    }
    if let Some((known, refusals)) = table.with(|t| t.borrow().get(&key).cloned()) {
        budget::refused_again(refusals);
        return known;
    }
    let (result, refusals) = budget::counting(|| work(&key));
    table.with(|t| {
        let mut t = t.borrow_mut();
        if t.len() >= KEPT {
            t.clear();
        }
        // Room for what one model keeps, made once: growing the table step by step hashed every key kept again
        // at each step, and a key is a whole expression.
        if t.capacity() == 0 {
            t.reserve(RESERVED);
        }
        t.insert(key, (result.clone(), refusals));
    });
    result
}

/// `work(given)`, the extremum on the side `keep` of `given`, or the one it gave before for the same arguments.
pub(super) fn extremum(given: Vec<Poly>, keep: Ordering, work: impl FnOnce(&[Poly]) -> Poly) -> Poly {
    remembered(&EXTREMA, (given, keep), |(given, _)| work(given))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::super::{parse, take_refusals};
    use super::*;

    thread_local! {
        static PRODUCTS: Table<usize, Option<Poly>> = Default::default();
    }

    /// `(x0 + 1)(x1 + 1)…` of `n` factors, which past a few factors is refused for size.
    fn product(n: &usize, ran: &Cell<usize>) -> Option<Poly> {
        ran.set(ran.get() + 1);
        (0..*n).try_fold(Poly::constant(1), |p, i| p.mul(&parse(&format!("x{i} + 1")).ok()?))
    }

    #[test]
    fn a_kept_result_is_the_one_worked_out_and_counts_its_refusals_again() {
        let ran = Cell::new(0);
        take_refusals();
        let first = remembered(&PRODUCTS, 12, |n| product(n, &ran));
        assert_eq!(first, None);
        assert_eq!(take_refusals(), 1);
        let again = remembered(&PRODUCTS, 12, |n| product(n, &ran));
        assert_eq!((again, ran.get()), (None, 1), "worked out again");
        assert_eq!(take_refusals(), 1, "the refusal is counted again");
        let small = remembered(&PRODUCTS, 2, |n| product(n, &ran));
        assert_eq!(small, Some(parse("x0*x1 + x0 + x1 + 1").unwrap()));
        assert_eq!((take_refusals(), ran.get()), (0, 2));
    }

    #[test]
    fn work_inside_an_operation_is_done_each_time() {
        let ran = Cell::new(0);
        let _inside = budget::Work::enter();
        remembered(&PRODUCTS, 3, |n| product(n, &ran));
        remembered(&PRODUCTS, 3, |n| product(n, &ran));
        assert_eq!(ran.get(), 2);
    }
}
