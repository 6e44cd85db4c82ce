//! Symbolic sizes: polynomials with integer coefficients over atoms, kept in a normal form so that two
//! expressions are equal exactly when their normal forms are (as far as the normal form reaches: it is complete for
//! polynomials, and floors, minima and maxima are reduced by the rules below).
//!
//! An atom is a symbol (`N`, a `dim_param`, or a fresh symbol for a size nothing names), or an operation without a
//! polynomial form: `floor(P / d)`, `min(P, Q, …)`, `max(P, Q, …)`. Every symbol stands for a size, so it is never
//! negative; that one fact, carried through interval [`bounds`], decides comparisons such as `N = -1` (never) or
//! `min(N + 1, 0)` (always 0), and nothing else is assumed. Division is exact where it is (`(2*N + 4) / 2` is
//! `N + 2`, `(8210*X + 8210) / (X + 1)` is 8210) and otherwise a floor with the integer part taken out
//! (`floor((2*N + 3) / 2)` is `N + 1 + floor(1 / 2)`, so `N + 1`). All arithmetic is checked: an overflow gives
//! `None`, never a wrong value or a panic. So are the size of what is built and the work spent building it
//! ([`budget`]): no model makes one expression, or one simplification, cost more than a fixed amount.

mod bounds;
mod budget;
pub(crate) mod display;
pub mod memo;
mod parse;
mod subst;
mod terms;
mod within;

use std::cmp::Ordering;
use std::sync::Arc;

pub use bounds::{Ext, Interval};
pub use budget::{take_refusals, MAX_BUILT, MAX_SIZE};
pub use parse::{parse, ParseError};
use terms::Terms;
pub(crate) use within::lcm;

/// An indivisible part of a polynomial.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Atom {
    /// A named size: never negative.
    Sym(Arc<str>),
    /// `floor(numerator / divisor)`. The divisor is a constant ≥ 2 or a non-constant polynomial; the numerator has
    /// no part divisible by it (that part is taken out when the floor is made).
    Floor(Arc<Poly>, Arc<Poly>),
    /// The least of two or more polynomials, sorted and distinct, none provably at least another.
    Min(Arc<[Poly]>),
    /// The greatest of two or more polynomials, likewise.
    Max(Arc<[Poly]>),
    /// The numpy broadcast of several distinct sizes, by their names or texts (a shape's symbolic broadcast
    /// carried through shape values: `Shape(x)` of an `x` whose dim is one).
    Broadcast(Arc<[Arc<str>]>),
}

/// A product of atoms, sorted; an atom repeated k times is its k-th power. Empty for the constant term.
type Monomial = Vec<Atom>;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Poly {
    /// Non-zero coefficients by monomial.
    terms: Terms,
}

impl Poly {
    pub fn constant(c: i64) -> Poly {
        Poly { terms: Terms::single(Vec::new(), c) }
    }

    /// A named size.
    pub fn atom(name: &str) -> Poly {
        Poly::symbol(Arc::from(name))
    }

    pub fn symbol(name: Arc<str>) -> Poly {
        Poly::of_atom(Atom::Sym(name))
    }

    fn of_atom(atom: Atom) -> Poly {
        Poly { terms: Terms::single(vec![atom], 1) }
    }

    /// The value, when the polynomial has no atom.
    pub fn as_constant(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&[]),
            _ => None,
        }
    }

    /// The term without atoms (`-1` of `seq - 1`).
    pub fn constant_term(&self) -> i64 {
        self.terms.get(&[]).unwrap_or(0)
    }

    /// The symbol, when the polynomial is exactly one named size.
    pub fn as_symbol(&self) -> Option<&Arc<str>> {
        match self.single_atom()? {
            Atom::Sym(s) => Some(s),
            _ => None,
        }
    }

    /// The arguments, when the polynomial is exactly one `min`.
    pub fn min_args(&self) -> Option<&[Poly]> {
        match self.single_atom()? {
            Atom::Min(args) => Some(args),
            _ => None,
        }
    }

    /// The arguments, when the polynomial is exactly one `max`.
    pub fn max_args(&self) -> Option<&[Poly]> {
        match self.single_atom()? {
            Atom::Max(args) => Some(args),
            _ => None,
        }
    }

    /// A symbolic broadcast of several sizes, as one value.
    pub fn broadcast(names: Arc<[Arc<str>]>) -> Poly {
        Poly::of_atom(Atom::Broadcast(names))
    }

    /// The names, when the polynomial is exactly one symbolic broadcast.
    pub fn as_broadcast(&self) -> Option<&Arc<[Arc<str>]>> {
        match self.single_atom()? {
            Atom::Broadcast(names) => Some(names),
            _ => None,
        }
    }

    fn single_atom(&self) -> Option<&Atom> {
        match self.terms.iter().next() {
            Some((m, 1)) if self.terms.len() == 1 && m.len() == 1 => Some(&m[0]),
            _ => None,
        }
    }

    /// Every symbol the polynomial mentions, inside floors, minima and maxima too.
    pub fn symbols(&self) -> Vec<Arc<str>> {
        let mut out = Vec::new();
        self.collect_symbols(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_symbols(&self, out: &mut Vec<Arc<str>>) {
        for atom in self.terms.monomials().flatten() {
            match atom {
                Atom::Sym(s) => out.push(s.clone()),
                Atom::Floor(n, d) => {
                    n.collect_symbols(out);
                    d.collect_symbols(out);
                }
                Atom::Min(args) | Atom::Max(args) => args.iter().for_each(|a| a.collect_symbols(out)),
                Atom::Broadcast(names) => out.extend(names.iter().cloned()),
            }
        }
    }

    fn combine(&self, other: &Poly, sign: i64) -> Option<Poly> {
        let _work = budget::Work::enter();
        if !budget::spend(self.terms.len() + other.terms.len()) {
            return None;
        }
        Poly { terms: self.terms.combine(&other.terms, sign)? }.absorbed()?.within_budget()
    }

    /// A sum with one `min`/`max` term of coefficient ±1 takes the rest of the sum inside it:
    /// `T - min(1, T)` is `max(T - 1, 0)`, so that a slice length reached two ways has one form. (A sum of several
    /// such terms, or a scaled one, is left as it is: `3*min(512, seq)` reads better than its distribution, and
    /// min and max mixed in one sum have no single form.)
    fn absorbed(self) -> Option<Poly> {
        let is_extremum = |m: &Monomial| m.iter().any(|a| matches!(a, Atom::Min(_) | Atom::Max(_)));
        let mut extrema = self.terms.as_slice().iter().filter(|(m, _)| is_extremum(m));
        let (Some(&(ref m, c)), None) = (extrema.next(), extrema.next()) else { return Some(self) };
        if self.terms.len() == 1 || m.len() != 1 || c.abs() != 1 {
            return Some(self);
        }
        let (atom, keep) = match &m[0] {
            Atom::Min(args) => (args, if c > 0 { Ordering::Less } else { Ordering::Greater }),
            Atom::Max(args) => (args, if c > 0 { Ordering::Greater } else { Ordering::Less }),
            _ => return Some(self),
        };
        let mut rest = self.clone();
        rest.terms.remove(m);
        let args: Vec<Poly> =
            atom.iter().map(|a| if c > 0 { rest.add(a) } else { rest.sub(a) }).collect::<Option<_>>()?;
        Some(extremum(args, keep))
    }

    pub fn add(&self, other: &Poly) -> Option<Poly> {
        self.combine(other, 1)
    }

    pub fn sub(&self, other: &Poly) -> Option<Poly> {
        self.combine(other, -1)
    }

    pub fn neg(&self) -> Option<Poly> {
        Poly::default().sub(self)
    }

    pub fn mul(&self, other: &Poly) -> Option<Poly> {
        let _work = budget::Work::enter();
        if !budget::spend(self.terms.len().saturating_mul(other.terms.len())) {
            return None;
        }
        Poly { terms: self.terms.product(&other.terms)? }.within_budget()
    }

    /// The greatest common divisor of the coefficients (0 for the zero polynomial): `6*N + 4` has content 2.
    pub fn content(&self) -> i64 {
        self.terms.coefficients().fold(0, gcd)
    }

    pub fn scale(&self, k: i64) -> Option<Poly> {
        self.mul(&Poly::constant(k))
    }

    /// Floor division by a constant; `None` for a divisor ≤ 0 (no size divides by that) or an overflow.
    pub fn div_floor(&self, d: i64) -> Option<Poly> {
        self.floor_div(&Poly::constant(d))
    }

    /// Ceiling division by a positive constant: `ceil(P / d) = floor((P + d - 1) / d)`.
    pub fn div_ceil(&self, d: i64) -> Option<Poly> {
        if d <= 0 {
            return None;
        }
        self.add(&Poly::constant(d - 1))?.div_floor(d)
    }

    /// Floor division by another polynomial (exact where it divides). `None` for a divisor that is never positive,
    /// and on overflow.
    pub fn div_poly(&self, other: &Poly) -> Option<Poly> {
        self.floor_div(other)
    }

    /// Ceiling division by a positive polynomial: `ceil(P / Q) = floor((P + Q - 1) / Q)`.
    pub fn div_ceil_poly(&self, other: &Poly) -> Option<Poly> {
        self.add(other)?.sub(&Poly::constant(1))?.floor_div(other)
    }

    /// `P mod d` with the sign of the divisor, as numpy and ONNX `Mod` (fmod = 0) compute it.
    pub fn modulo(&self, d: &Poly) -> Option<Poly> {
        self.sub(&self.floor_div(d)?.mul(d)?)
    }

    fn floor_div(&self, d: &Poly) -> Option<Poly> {
        let _work = budget::Work::enter();
        if let Some(k) = d.as_constant() {
            return match k {
                ..=0 => None,
                1 => Some(self.clone()),
                _ => self.floor_by_constant(k),
            };
        }
        // A divisor that is a size may be 0 where the model itself divides by zero; one that is never positive
        // divides no size.
        if d.bounds().hi <= Ext::Fin(0) {
            return None;
        }
        self.floor_by_poly(d)
    }

    /// `floor(P / k)`: the multiple of k taken out term by term, the rest reduced by the common factor, then
    /// decided by bounds when it lies within one multiple of k.
    fn floor_by_constant(&self, k: i64) -> Option<Poly> {
        let mut whole = Vec::new();
        let mut rest = Vec::new();
        for (m, c) in self.terms.iter() {
            let (q, r) = (c.div_euclid(k), c.rem_euclid(k));
            if q != 0 {
                whole.push((m.clone(), q));
            }
            if r != 0 {
                rest.push((m.clone(), r));
            }
        }
        let whole = Poly { terms: Terms::from_sorted(whole) };
        let g = rest.iter().fold(k, |g, t| gcd(g, t.1));
        let rest = Poly { terms: Terms::from_sorted(rest.into_iter().map(|(m, c)| (m, c / g)).collect()) };
        let k = k / g;
        // floor((floor(P / d) + Q) / k) = floor((P + d*Q) / (d*k)) for integer Q: nested floors (a chain of
        // strided convolutions) become one, so one quantity reached two ways has one form.
        if let Some((inner, d, others)) = rest.nested_floor() {
            if let (Some(num), Some(dk)) = (inner.add(&others.scale(d)?), d.checked_mul(k)) {
                return whole.add(&num.floor_by_constant(dk)?);
            }
        }
        let b = rest.bounds();
        let (lo, hi) = (b.lo.floor_div(k), b.hi.floor_div(k));
        let floor = match (lo, hi) {
            (Ext::Fin(a), Ext::Fin(z)) if a == z => Poly::constant(i64::try_from(a).ok()?),
            _ if k == 1 => rest,
            _ => Poly::of_atom(Atom::Floor(Arc::new(rest), Arc::new(Poly::constant(k)))),
        };
        whole.add(&floor)
    }

    /// `floor(P / d) + Q` with one such floor of coefficient 1 and a constant d: `(P, d, Q)`.
    fn nested_floor(&self) -> Option<(Poly, i64, Poly)> {
        let mut found = None;
        for (m, c) in self.terms.iter() {
            if let ([Atom::Floor(p, d)], 1) = (m.as_slice(), c) {
                if let Some(d) = d.as_constant() {
                    if found.replace((m, (**p).clone(), d)).is_some() {
                        return None;
                    }
                }
            }
        }
        let (m, p, d) = found?;
        let mut others = self.clone();
        others.terms.remove(m);
        Some((p, d, others))
    }

    /// `floor(P / Q)` for a polynomial Q ≥ 1: the exact part of a division by Q's leading term taken out, the
    /// rest decided by bounds or kept as a floor.
    fn floor_by_poly(&self, d: &Poly) -> Option<Poly> {
        let (quotient, rest) = self.divide(d)?;
        if rest.terms.is_empty() {
            return Some(quotient);
        }
        // A common factor of the rest and the divisor cancels.
        let g = rest.terms.coefficients().chain(d.terms.coefficients()).fold(0, gcd);
        let (rest, d) = if g > 1 {
            let div = |p: &Poly| Poly { terms: p.terms.map_coefficients(|c| c / g) };
            (div(&rest), div(d))
        } else {
            (rest, d.clone())
        };
        let (rb, db) = (rest.bounds(), d.bounds());
        let floor = if rb.lo >= Ext::Fin(0) && rb.hi < db.lo {
            Poly::default()
        } else if let Some(k) = d.as_constant() {
            rest.floor_by_constant(k)?
        } else {
            Poly::of_atom(Atom::Floor(Arc::new(rest), Arc::new(d)))
        };
        quotient.add(&floor)
    }

    /// Multivariate division by `d` (graded order): the quotient of the terms whose monomial and coefficient the
    /// leading term of `d` divides exactly, and the remainder.
    fn divide(&self, d: &Poly) -> Option<(Poly, Poly)> {
        let (lead_m, lead_c) = d.leading()?;
        let mut quotient = Poly::default();
        let mut rest = self.clone();
        let mut kept = Poly::default();
        // Each step removes rest's leading term, so this ends after at most as many steps as terms appear.
        for _ in 0..4096 {
            let Some((m, c)) = rest.leading() else { break };
            let term = match remove_factors(&m, &lead_m) {
                Some(factor) if c % lead_c == 0 => Poly { terms: Terms::single(factor, c / lead_c) },
                _ => {
                    let moved = Poly { terms: Terms::single(m, c) };
                    kept = kept.add(&moved)?;
                    rest = rest.sub(&moved)?;
                    continue;
                }
            };
            quotient = quotient.add(&term)?;
            rest = rest.sub(&term.mul(d)?)?;
        }
        if !rest.terms.is_empty() {
            return None;
        }
        Some((quotient, kept))
    }

    /// The greatest term in the graded order: most factors first, then the monomial order.
    fn leading(&self) -> Option<(Monomial, i64)> {
        self.terms.iter().max_by(|a, b| a.0.len().cmp(&b.0.len()).then(a.0.cmp(b.0))).map(|(m, c)| (m.clone(), c))
    }

    /// The larger of two values.
    pub fn max_of(&self, other: &Poly) -> Poly {
        extremum(vec![self.clone(), other.clone()], Ordering::Greater)
    }

    /// The smaller of two values.
    pub fn min_of(&self, other: &Poly) -> Poly {
        extremum(vec![self.clone(), other.clone()], Ordering::Less)
    }

    /// `|P|`, decided by bounds; `None` when the sign is open.
    pub fn abs(&self) -> Option<Poly> {
        let b = self.bounds();
        if b.lo >= Ext::Fin(0) {
            Some(self.clone())
        } else if b.hi <= Ext::Fin(0) {
            self.neg()
        } else {
            None
        }
    }

    /// How `self` compares with `other` for every value of the symbols, when the bounds decide it.
    pub fn compare(&self, other: &Poly) -> Option<Ordering> {
        if self == other {
            return Some(Ordering::Equal);
        }
        let b = self.difference_bounds(other)?;
        if b.lo > Ext::Fin(0) {
            Some(Ordering::Greater)
        } else if b.hi < Ext::Fin(0) {
            Some(Ordering::Less)
        } else if b.lo == Ext::Fin(0) && b.hi == Ext::Fin(0) {
            Some(Ordering::Equal)
        } else {
            None
        }
    }

    /// `self ≤ other` numerically, for every value of the symbols (`Some(true)`), for none (`Some(false)`), or open.
    /// Not `<=`: the derived `Ord` is a structural order for sorting, which says nothing about values.
    pub fn at_most_for_all(&self, other: &Poly) -> Option<bool> {
        if self == other {
            return Some(true);
        }
        let b = self.difference_bounds(other)?;
        if b.hi <= Ext::Fin(0) {
            Some(true)
        } else if b.lo > Ext::Fin(0) {
            Some(false)
        } else {
            None
        }
    }

    /// `self = other` for every value (`Some(true)`), for none (`Some(false)`), or open.
    pub fn eq_decided(&self, other: &Poly) -> Option<bool> {
        match self.compare(other) {
            Some(Ordering::Equal) => Some(true),
            Some(_) => Some(false),
            None => None,
        }
    }
}

/// `min` or `max` of polynomials: nested ones flattened, dominated arguments dropped by bounds.
fn extremum(given: Vec<Poly>, keep: Ordering) -> Poly {
    memo::extremum(given, keep, |given| extremum_of(given, keep))
}

fn extremum_of(given: &[Poly], keep: Ordering) -> Poly {
    let _work = budget::Work::enter();
    let mut args: Vec<Poly> = Vec::new();
    for p in given {
        match (p.single_atom(), keep) {
            (Some(Atom::Min(inner)), Ordering::Less) | (Some(Atom::Max(inner)), Ordering::Greater) => {
                args.extend(inner.iter().cloned())
            }
            _ => args.push(p.clone()),
        }
    }
    args.sort();
    args.dedup();
    // An argument that another one provably beats or ties says nothing more (of ties, the first stays).
    let beats = |j: usize, i: usize| match keep {
        Ordering::Less => args[j].at_most_for_all(&args[i]) == Some(true),
        _ => args[i].at_most_for_all(&args[j]) == Some(true),
    };
    let beaten: Vec<bool> =
        (0..args.len()).map(|i| (0..args.len()).any(|j| j != i && beats(j, i) && (j < i || !beats(i, j)))).collect();
    let mut args: Vec<Poly> = args.iter().zip(&beaten).filter(|(_, &b)| !b).map(|(a, _)| a.clone()).collect();
    if args.len() == 1 {
        return args.pop().expect("one argument");
    }
    let atom = if keep == Ordering::Less { Atom::Min(args.into()) } else { Atom::Max(args.into()) };
    Poly::of_atom(atom)
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(1)
}

/// `m` without the factors of `divisor`, if it has them all.
fn remove_factors(m: &Monomial, divisor: &Monomial) -> Option<Monomial> {
    let mut rest = m.clone();
    for a in divisor {
        let i = rest.iter().position(|x| x == a)?;
        rest.remove(i);
    }
    Some(rest)
}

/// The broadcast of sizes: 1s drop out, one known size other than 1 is the result, sizes left are a broadcast
/// (one alone is itself); known sizes that do not broadcast stay a broadcast of those sizes (`broadcast(2, 5)`),
/// for the site that makes it to report.
pub(crate) fn broadcast_of_sizes(sizes: impl Iterator<Item = Poly>) -> Poly {
    let mut known: Vec<i64> = Vec::new();
    let mut left: Vec<Poly> = Vec::new();
    for p in sizes {
        match p.as_constant() {
            Some(1) => {}
            Some(v) => known.push(v),
            None => left.push(p),
        }
    }
    known.sort_unstable();
    known.dedup();
    left.sort();
    left.dedup();
    let texts = |known: &[i64], left: &[Poly]| -> Poly {
        let mut texts: Vec<Arc<str>> = known.iter().map(|v| Arc::from(v.to_string())).collect();
        texts.extend(left.iter().map(|p| Arc::from(p.to_string())));
        texts.sort();
        texts.dedup();
        Poly::broadcast(texts.into())
    };
    match (known.as_slice(), left.len()) {
        ([], 0) => Poly::constant(1),
        ([], 1) => left.pop().expect("one size"),
        ([], _) => texts(&[], &left),
        ([v], _) => Poly::constant(*v),
        _ => texts(&known, &left),
    }
}

#[cfg(test)]
mod tests;
