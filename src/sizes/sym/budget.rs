//! The budget on symbolic expressions. A model can compute sizes through a chain of `Shape`/`Sub`/`Max`/`Div`/
//! `Min`/`Add` nodes in which every step uses its input twice (`s = min(s, floor(max(s - 1, 2) / 2)) + max(s - 1,
//! 2)`); without a bound the normal form doubles at each step, and a 2 KB model costs seconds and gigabytes.
//!
//! An expression's size is the number of nodes of its tree: one per term, one per atom, plus the sizes of the
//! polynomials inside floors, minima and maxima (a symbolic broadcast counts its names). A name counts one node
//! per [`NAME_CHARS`] bytes besides: a `dim_param` is model-controlled text of any length, and an expression over a
//! megabyte-long name must not be printed hundreds of times over. So the size also bounds the expression's text.
//! Two limits bound it:
//!
//! - what the analysis keeps: a value over [`MAX_SIZE`] is replaced once its node is inferred (see
//!   `analysis/budget.rs`), so every expression an operation reads is at most that large;
//! - what an operation builds: [`Poly::add`], [`Poly::sub`], [`Poly::mul`] and everything made of them refuse a
//!   result over [`MAX_BUILT`] as they refuse an overflow, returning `None`, which every caller already reads as
//!   "not known". One step of a doubling chain stays under it, so the analysis can still replace the result by a
//!   symbol; what grows further within one node (a product of long sums, a long `dim_param` text, a `Sum` of
//!   thousands of shape values) stops there.
//!
//! The work is bounded too. Simplifying one result can call itself through several rules (a sum absorbed into a
//! `min`, whose arguments are compared by bounds, which subtracts them, which absorbs again), and that recursion
//! multiplies with the nesting of minima and maxima even within the size bounds. Each operation called from
//! outside the algebra gets [`MAX_WORK`] units (one per term or atom visited), shared by everything it calls; past
//! them, building refuses (`None`), bounds say nothing (every integer), and so a comparison stays undecided: each
//! of these only loses precision, never soundness.
//!
//! Each refusal (for size or for work) is counted on the current thread (an analysis runs on one thread), so that
//! the walk can say where sizes stopped being followed: [`take_refusals`].

use std::cell::Cell;

use super::{Atom, Monomial, Poly};

/// The largest expression kept, in tree nodes. The real models of the corpus (PyTorch exports with their
/// `floor((H + 2*p - k) / s) + 1` chains and `min(128, seq)` windows, onnxruntime's optimized graphs) stay far below
/// it; a chain that doubles at each step reaches it within eight steps.
pub const MAX_SIZE: usize = 256;

/// A name counts one more node per this many bytes.
pub const NAME_CHARS: usize = 32;

/// The largest expression an operation builds: four times what is kept.
pub const MAX_BUILT: usize = 4 * MAX_SIZE;

/// The work units of one operation called from outside the algebra. On the corpus of real models no operation
/// takes more than 72; on the doubling chains of fixtures/crafted, whose expressions reach the size budget, 4,688.
pub const MAX_WORK: usize = 20_000;

thread_local! {
    static REFUSALS: Cell<usize> = const { Cell::new(0) };
    /// How deep the current thread is in operations of the algebra, and the work left to the outermost one.
    static WORK: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The work of one operation: entering the outermost operation gives it [`MAX_WORK`] units; the operations it calls
/// share them. Leaving it (the guard dropped) ends it.
pub(super) struct Work(());

impl Work {
    pub(super) fn enter() -> Work {
        WORK.with(|w| {
            let (depth, left) = w.get();
            w.set((depth + 1, if depth == 0 { MAX_WORK } else { left }));
        });
        Work(())
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        WORK.with(|w| {
            let (depth, left) = w.get();
            w.set((depth.saturating_sub(1), left));
        });
    }
}

/// Takes `n` units of the current operation's work; false (counted as a refusal) when they are not there.
pub(super) fn spend(n: usize) -> bool {
    let ok = WORK.with(|w| {
        let (depth, left) = w.get();
        w.set((depth, left.saturating_sub(n)));
        left >= n
    });
    if !ok {
        refused();
    }
    ok
}

fn refused() {
    refused_again(1);
}

/// Counts `n` refusals more: those of a result worked out before and used again.
pub(super) fn refused_again(n: usize) {
    REFUSALS.with(|r| r.set(r.get() + n));
}

/// `f()`, and how many refusals it counted.
pub(super) fn counting<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = REFUSALS.with(Cell::get);
    let out = f();
    (out, REFUSALS.with(Cell::get).wrapping_sub(before))
}

/// Whether no operation of the algebra is under way on this thread: one starting now gets the whole
/// [`MAX_WORK`].
pub(super) fn outermost() -> bool {
    WORK.with(|w| w.get().0 == 0)
}

/// How many results were refused for size on this thread since the last call, and starts counting again.
pub fn take_refusals() -> usize {
    REFUSALS.with(|r| r.replace(0))
}

impl Poly {
    /// The number of nodes of the expression's tree, counted up to `limit + 1` (the count stops there, so that
    /// measuring costs at most the budget).
    pub fn size_up_to(&self, limit: usize) -> usize {
        let mut left = limit + 1;
        self.measure(&mut left);
        limit + 1 - left
    }

    /// Whether the expression is larger than [`MAX_SIZE`].
    pub fn over_budget(&self) -> bool {
        self.size_up_to(MAX_SIZE) > MAX_SIZE
    }

    /// Takes this expression's nodes from `left`; false once nothing is left.
    fn measure(&self, left: &mut usize) -> bool {
        measure_terms(self.terms.monomials(), left)
    }

    /// `Some(self)` up to [`MAX_BUILT`]; `None` (counted as a refusal) past it.
    pub(super) fn within_budget(self) -> Option<Poly> {
        built_within(self.terms.monomials()).then_some(self)
    }
}

/// Whether the terms of these monomials make an expression of at most [`MAX_BUILT`] nodes, as
/// [`Poly::within_budget`] decides for the polynomial they make (and counts a refusal past it).
pub(super) fn built_within<'a>(monomials: impl Iterator<Item = &'a Monomial>) -> bool {
    let mut left = MAX_BUILT + 1;
    measure_terms(monomials, &mut left);
    if MAX_BUILT + 1 - left > MAX_BUILT {
        refused();
        return false;
    }
    true
}

/// Takes the nodes of the terms of these monomials from `left`; false once nothing is left.
fn measure_terms<'a>(monomials: impl Iterator<Item = &'a Monomial>, left: &mut usize) -> bool {
    for monomial in monomials {
        if !take(left, 1) {
            return false;
        }
        for atom in monomial {
            let inner = match atom {
                Atom::Sym(name) => take(left, name_size(name)),
                Atom::Broadcast(names) => take(left, 1) && names.iter().all(|n| take(left, name_size(n))),
                Atom::Floor(n, d) => take(left, 1) && n.measure(left) && d.measure(left),
                Atom::Min(args) | Atom::Max(args) => take(left, 1) && args.iter().all(|a| a.measure(left)),
            };
            if !inner {
                return false;
            }
        }
    }
    true
}

fn name_size(name: &str) -> usize {
    1 + name.len() / NAME_CHARS
}

fn take(left: &mut usize, n: usize) -> bool {
    let ok = *left >= n;
    *left = left.saturating_sub(n);
    ok
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Ext};
    use super::*;

    #[test]
    fn size_counts_terms_atoms_and_what_is_inside_them() {
        assert_eq!(Poly::constant(0).size_up_to(100), 0);
        assert_eq!(Poly::constant(7).size_up_to(100), 1);
        // N + 1: two terms, one atom.
        assert_eq!(parse("N + 1").unwrap().size_up_to(100), 3);
        // floor(N / 2): one term, the floor, N's term and atom, 2's term.
        assert_eq!(parse("floor(N / 2)").unwrap().size_up_to(100), 5);
        // The count stops one past the limit.
        assert_eq!(parse("A + B + C + D + E").unwrap().size_up_to(3), 4);
        // A long name weighs by its length: a 1 MB one is past every budget on its own.
        assert_eq!(Poly::atom(&"n".repeat(64)).size_up_to(100), 1 + 3);
        assert!(Poly::atom(&"n".repeat(1 << 20)).over_budget());
    }

    #[test]
    fn a_result_past_the_budget_is_refused_and_counted() {
        take_refusals();
        // (x0 + 1)(x1 + 1)...(x9 + 1) has 2^10 terms of up to 10 atoms: far past what is built.
        let mut p = Poly::constant(1);
        let mut refused = false;
        for i in 0..10 {
            match p.mul(&parse(&format!("x{i} + 1")).unwrap()) {
                Some(next) => p = next,
                None => {
                    refused = true;
                    break;
                }
            }
        }
        assert!(refused, "the product grew to {} nodes", p.size_up_to(usize::MAX - 1));
        assert!(p.size_up_to(MAX_BUILT) <= MAX_BUILT);
        assert_eq!(take_refusals(), 1);
        assert_eq!(take_refusals(), 0);
    }

    #[test]
    fn past_the_work_of_an_operation_bounds_claim_nothing_and_building_is_refused() {
        let n_plus_1 = parse("N + 1").unwrap();
        assert_eq!(n_plus_1.bounds().lo, Ext::Fin(1));
        take_refusals();
        {
            // An outer operation that has spent all its work: what it calls shares what is left, which is nothing.
            let _outer = Work::enter();
            assert!(spend(MAX_WORK));
            assert_eq!(n_plus_1.bounds(), super::super::Interval { lo: Ext::NegInf, hi: Ext::PosInf });
            assert_eq!(n_plus_1.add(&Poly::constant(1)), None);
            // A comparison that bounds would decide (N + 1 > 0) stays undecided.
            assert_eq!(n_plus_1.at_most_for_all(&Poly::constant(0)), None);
        }
        assert!(take_refusals() >= 2);
        // The next operation starts with its own work.
        assert_eq!(n_plus_1.add(&Poly::constant(1)), Some(parse("N + 2").unwrap()));
        assert_eq!(n_plus_1.bounds().lo, Ext::Fin(1));
    }

    #[test]
    fn a_chain_that_doubles_each_step_stays_within_the_budget() {
        // s = min(s, floor(max(s - 1, 2) / 2)) + max(s - 1, 2): the crafted chain of the issue, which grew to
        // millions of characters in 24 steps. Each step either stays within the budget or is refused.
        let two = Poly::constant(2);
        let mut s = Poly::atom("N");
        let mut refusals = 0;
        for _ in 0..40 {
            let step = (|| {
                let m = s.sub(&Poly::constant(1))?.max_of(&two);
                let v = m.div_floor(2)?;
                s.min_of(&v).add(&m)
            })();
            match step {
                Some(next) if !next.over_budget() => s = next,
                _ => {
                    refusals += 1;
                    s = Poly::atom("fresh");
                }
            }
            assert!(s.size_up_to(MAX_SIZE) <= MAX_SIZE);
        }
        assert!(refusals >= 4, "{refusals}");
    }
}
