//! Interval bounds of symbolic sizes. Every symbol is a size, so it lies in [0, 2⁶³ - 1] (ONNX dims are int64), or
//! in a narrower interval a caller gives it (a range of sizes); floors, minima, maxima and polynomials over them
//! get their bounds by interval arithmetic. Bounds are sound (the value always lies within)
//! but not tight, so they decide a comparison only when the intervals do not overlap.

use std::cmp::Ordering;

use smallvec::SmallVec;

use super::{Atom, Monomial, Poly};

/// An integer or an infinity; the order is the natural one (−∞ < every integer < +∞).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ext {
    NegInf,
    Fin(i128),
    PosInf,
}

impl Ext {
    fn from_i128(v: Option<i128>, positive: bool) -> Ext {
        match v {
            Some(v) => Ext::Fin(v),
            None if positive => Ext::PosInf,
            None => Ext::NegInf,
        }
    }

    fn signum(self) -> i32 {
        match self {
            Ext::NegInf => -1,
            Ext::PosInf => 1,
            Ext::Fin(v) => v.signum() as i32,
        }
    }

    /// The sum, where defined (−∞ + +∞ is not: callers never add a lower bound to an upper one).
    fn add(self, other: Ext) -> Ext {
        match (self, other) {
            (Ext::Fin(a), Ext::Fin(b)) => Ext::from_i128(a.checked_add(b), a > 0),
            (Ext::PosInf, _) | (_, Ext::PosInf) => Ext::PosInf,
            _ => Ext::NegInf,
        }
    }

    /// The product; 0 times an infinity is 0, as bounds of closed intervals of finite values need.
    fn mul(self, other: Ext) -> Ext {
        match (self, other) {
            (Ext::Fin(0), _) | (_, Ext::Fin(0)) => Ext::Fin(0),
            // Two ends within int64 (every size's, most products') multiply without overflow: no check needed.
            (Ext::Fin(a), Ext::Fin(b)) if fits_i64(a) && fits_i64(b) => Ext::Fin(a * b),
            (Ext::Fin(a), Ext::Fin(b)) => Ext::from_i128(a.checked_mul(b), (a > 0) == (b > 0)),
            (a, b) if a.signum() * b.signum() > 0 => Ext::PosInf,
            _ => Ext::NegInf,
        }
    }

    /// `floor(self / k)` for k ≥ 1.
    pub fn floor_div(self, k: i64) -> Ext {
        match self {
            Ext::Fin(v) => Ext::Fin(v.div_euclid(i128::from(k))),
            other => other,
        }
    }
}

fn fits_i64(v: i128) -> bool {
    i64::try_from(v).is_ok()
}

/// A closed interval of integers, possibly unbounded on either side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub lo: Ext,
    pub hi: Ext,
}

impl Interval {
    const ALL: Interval = Interval { lo: Ext::NegInf, hi: Ext::PosInf };
    /// Where a size lies: ONNX sizes are int64.
    const SIZE: Interval = Interval { lo: Ext::Fin(0), hi: Ext::Fin(i64::MAX as i128) };

    fn point(v: i64) -> Interval {
        Interval { lo: Ext::Fin(v.into()), hi: Ext::Fin(v.into()) }
    }

    /// The integers from `lo` to `hi`.
    pub fn between(lo: i64, hi: i64) -> Interval {
        Interval { lo: Ext::Fin(lo.into()), hi: Ext::Fin(hi.into()) }
    }

    /// The one value in the interval, when there is one.
    pub fn single(self) -> Option<i64> {
        match (self.lo, self.hi) {
            (Ext::Fin(a), Ext::Fin(b)) if a == b => i64::try_from(a).ok(),
            _ => None,
        }
    }

    fn add(self, other: Interval) -> Interval {
        Interval { lo: self.lo.add(other.lo), hi: self.hi.add(other.hi) }
    }

    fn mul(self, other: Interval) -> Interval {
        // A coefficient times an interval, and intervals of sizes, need fewer products: a product of ends is
        // monotonic in each end that is never negative, and a point is scaled (flipped when negative).
        if self.lo == self.hi {
            let k = self.lo;
            let (a, b) = (k.mul(other.lo), k.mul(other.hi));
            return if k >= Ext::Fin(0) { Interval { lo: a, hi: b } } else { Interval { lo: b, hi: a } };
        }
        if self.lo >= Ext::Fin(0) && other.lo >= Ext::Fin(0) {
            return Interval { lo: self.lo.mul(other.lo), hi: self.hi.mul(other.hi) };
        }
        let products = [self.lo.mul(other.lo), self.lo.mul(other.hi), self.hi.mul(other.lo), self.hi.mul(other.hi)];
        Interval {
            lo: products.iter().copied().min().expect("four products"),
            hi: products.iter().copied().max().expect("four products"),
        }
    }
}

impl Poly {
    /// Bounds that hold for every value of the symbols.
    pub fn bounds(&self) -> Interval {
        self.bounds_with(&|_| None)
    }

    /// Bounds that hold for every value of the symbols when each symbol `range` names lies in its interval (the
    /// others are sizes, as for [`Poly::bounds`]).
    pub fn bounds_within(&self, range: &dyn Fn(&str) -> Option<Interval>) -> Interval {
        self.bounds_with(&range)
    }

    /// `self.sub(other)?.bounds()`, without building the difference where no term of either has a `min` or
    /// `max` (which a sum may take in: [`Poly::sub`]): the same work spent, the same refusals, the same interval.
    pub(super) fn difference_bounds(&self, other: &Poly) -> Option<Interval> {
        let extremum = |p: &Poly| p.terms.monomials().flatten().any(|a| matches!(a, Atom::Min(_) | Atom::Max(_)));
        if extremum(self) || extremum(other) {
            return Some(self.sub(other)?.bounds());
        }
        let mut difference: SmallVec<[(&Monomial, i64); 8]> = SmallVec::new();
        {
            // As `sub` spends and refuses, under its own work.
            let _work = super::budget::Work::enter();
            if !super::budget::spend(self.terms.len() + other.terms.len()) {
                return None;
            }
            self.terms.merge(&other.terms, -1, |m, c| difference.push((m, c)))?;
            if !super::budget::built_within(difference.iter().map(|t| t.0)) {
                return None;
            }
        }
        Some(terms_bounds(difference.iter().copied(), &|_| None))
    }

    // Generic so that `bounds`, which inference calls on every comparison, compiles to the plain computation.
    fn bounds_with<F: Fn(&str) -> Option<Interval>>(&self, range: &F) -> Interval {
        terms_bounds(self.terms.iter(), range)
    }
}

/// The bounds of a sum of terms, as [`Poly::bounds_with`] of the polynomial they make.
pub(super) fn terms_bounds<'a, F: Fn(&str) -> Option<Interval>>(
    terms: impl Iterator<Item = (&'a Monomial, i64)>,
    range: &F,
) -> Interval {
    let _work = super::budget::Work::enter();
    let mut total = Interval::point(0);
    for (m, c) in terms {
        // Past the operation's work, nothing is claimed: every integer.
        if !super::budget::spend(1 + m.len()) {
            return Interval::ALL;
        }
        let term = m.iter().fold(Interval::point(c), |acc, a| acc.mul(atom_bounds(a, range)));
        total = total.add(term);
    }
    total
}

fn atom_bounds<F: Fn(&str) -> Option<Interval>>(atom: &Atom, range: &F) -> Interval {
    match atom {
        // A size, and ONNX sizes are int64.
        Atom::Sym(s) => range(s).unwrap_or(Interval::SIZE),
        Atom::Broadcast(_) => Interval::SIZE,
        Atom::Floor(n, d) => {
            let (nb, db) = (n.bounds_with(range), d.bounds_with(range));
            match d.as_constant() {
                Some(k) if k >= 1 => Interval { lo: nb.lo.floor_div(k), hi: nb.hi.floor_div(k) },
                // A non-negative numerator over a divisor of at least 1 stays between 0 and the numerator.
                _ if nb.lo >= Ext::Fin(0) && db.lo >= Ext::Fin(1) => Interval { lo: Ext::Fin(0), hi: nb.hi },
                _ => Interval::ALL,
            }
        }
        Atom::Min(args) => extreme_bounds(args, Ordering::Less, range),
        Atom::Max(args) => extreme_bounds(args, Ordering::Greater, range),
    }
}

fn extreme_bounds<F: Fn(&str) -> Option<Interval>>(args: &[Poly], keep: Ordering, range: &F) -> Interval {
    let all: Vec<Interval> = args.iter().map(|a| a.bounds_with(range)).collect();
    let pick = |a: Ext, b: Ext| if keep == Ordering::Less { a.min(b) } else { a.max(b) };
    let mut it = all.into_iter();
    let first = it.next().unwrap_or(Interval::ALL);
    it.fold(first, |acc, b| Interval { lo: pick(acc.lo, b.lo), hi: pick(acc.hi, b.hi) })
}
