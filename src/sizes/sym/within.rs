//! Symbolic sizes over ranges of their symbols: an expression simplified for sizes known to lie in intervals
//! (`min(64, seq)` is `seq` for seq ≤ 64, a floor that takes one value there is that value), and the moduli that
//! make its floors disappear (`floor((h + 31) / 32)` is linear in q for h = 32*q + r), which is how a condition is
//! decided for a whole class of sizes at once.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{extremum, Atom, Interval, Poly};

/// The largest modulus kept per symbol; beyond it a symbol counts as under a divisor without a period.
const MAX_MODULUS: i64 = 1 << 20;

impl Poly {
    /// The polynomial for symbols within the intervals `range` gives: a value that is one number over them is that
    /// number, a `min` or `max` loses the arguments that never win there, a floor that takes one value is that value.
    /// The result equals the original at every such size. `None` on overflow.
    pub fn within(&self, range: &dyn Fn(&str) -> Option<Interval>) -> Option<Poly> {
        if let Some(v) = self.bounds_within(range).single() {
            return Some(Poly::constant(v));
        }
        let mut out = Poly::default();
        for (monomial, c) in self.terms.iter() {
            let mut term = Poly::constant(c);
            for atom in monomial {
                term = term.mul(&atom.within(range)?)?;
            }
            out = out.add(&term)?;
        }
        Some(match out.bounds_within(range).single() {
            Some(v) => Poly::constant(v),
            None => out,
        })
    }

    /// Per symbol under a floor, the modulus m such that for sizes `m*q + r` every floor is linear in q (the least
    /// common multiple of the constant divisors above it, multiplied through nested floors); 0 for a symbol under a
    /// divisor that is not a constant, which no modulus clears. Symbols under no floor are not listed.
    pub fn moduli(&self) -> BTreeMap<Arc<str>, i64> {
        let mut out = BTreeMap::new();
        self.collect_moduli(1, &mut out);
        out
    }

    /// Whether a `min` or `max` is anywhere in the polynomial (inside floors and broadcasts too): only then does it
    /// matter from which end of a range its symbols are written.
    pub fn has_extrema(&self) -> bool {
        self.terms.monomials().flatten().any(|atom| match atom {
            Atom::Sym(_) => false,
            Atom::Min(_) | Atom::Max(_) => true,
            Atom::Floor(n, d) => n.has_extrema() || d.has_extrema(),
            Atom::Broadcast(names) => {
                names.iter().any(|n| super::parse::parse_size_text(n).is_some_and(|p| p.has_extrema()))
            }
        })
    }

    /// The sizes of every symbolic broadcast in the polynomial (inside floors, minima and maxima too), each as the
    /// polynomials its names read as.
    pub fn broadcasts(&self) -> Vec<Vec<Poly>> {
        let mut out = Vec::new();
        self.collect_broadcasts(&mut out);
        out
    }

    fn collect_broadcasts(&self, out: &mut Vec<Vec<Poly>>) {
        for atom in self.terms.monomials().flatten() {
            match atom {
                Atom::Sym(_) => {}
                Atom::Floor(n, d) => {
                    n.collect_broadcasts(out);
                    d.collect_broadcasts(out);
                }
                Atom::Min(args) | Atom::Max(args) => args.iter().for_each(|a| a.collect_broadcasts(out)),
                Atom::Broadcast(names) => {
                    let sizes: Option<Vec<Poly>> = names.iter().map(super::parse::parse_size_text).collect();
                    out.extend(sizes);
                }
            }
        }
    }

    fn collect_moduli(&self, outer: i64, out: &mut BTreeMap<Arc<str>, i64>) {
        for atom in self.terms.monomials().flatten() {
            match atom {
                Atom::Sym(s) if outer != 1 => merge_modulus(out, s, outer),
                Atom::Sym(_) => {}
                Atom::Floor(n, d) => match d.as_constant() {
                    Some(k) => n.collect_moduli(outer.checked_mul(k).filter(|&m| m <= MAX_MODULUS).unwrap_or(0), out),
                    None => {
                        n.collect_moduli(0, out);
                        d.collect_moduli(0, out);
                    }
                },
                Atom::Min(args) | Atom::Max(args) => args.iter().for_each(|a| a.collect_moduli(outer, out)),
                Atom::Broadcast(names) => {
                    for name in names.iter() {
                        match super::parse::parse_size_text(name) {
                            Some(p) => p.collect_moduli(outer, out),
                            None if outer != 1 => merge_modulus(out, name, outer),
                            None => {}
                        }
                    }
                }
            }
        }
    }
}

fn merge_modulus(out: &mut BTreeMap<Arc<str>, i64>, s: &Arc<str>, m: i64) {
    let entry = out.entry(s.clone()).or_insert(1);
    *entry = match (*entry, m) {
        (0, _) | (_, 0) => 0,
        (a, b) => lcm(a, b).filter(|&l| l <= MAX_MODULUS).unwrap_or(0),
    };
}

/// The least common multiple of two positive numbers; `None` on overflow.
pub(crate) fn lcm(a: i64, b: i64) -> Option<i64> {
    (a / super::gcd(a, b)).checked_mul(b)
}

impl Atom {
    fn within(&self, range: &dyn Fn(&str) -> Option<Interval>) -> Option<Poly> {
        match self {
            Atom::Sym(s) => Some(Poly::symbol(s.clone())),
            Atom::Broadcast(names) => Some(Poly::broadcast(names.clone())),
            Atom::Floor(n, d) => n.within(range)?.floor_div(&d.within(range)?),
            Atom::Min(args) => extremum_within(args, Ordering::Less, range),
            Atom::Max(args) => extremum_within(args, Ordering::Greater, range),
        }
    }
}

/// A `min` (`keep` = Less) or `max` of arguments simplified within the ranges, without those another argument
/// beats or ties everywhere there (of ties, the first stays).
fn extremum_within(args: &[Poly], keep: Ordering, range: &dyn Fn(&str) -> Option<Interval>) -> Option<Poly> {
    let args: Vec<Poly> = args.iter().map(|a| a.within(range)).collect::<Option<_>>()?;
    // `a` is never worse than `b`: never above it for a min, never below it for a max.
    let never_worse = |a: &Poly, b: &Poly| -> bool {
        let diff = if keep == Ordering::Less { a.sub(b) } else { b.sub(a) };
        diff.is_some_and(|d| d.bounds_within(range).hi <= super::Ext::Fin(0))
    };
    let kept: Vec<Poly> = args
        .iter()
        .enumerate()
        .filter(|&(i, a)| {
            !args.iter().enumerate().any(|(j, b)| j != i && never_worse(b, a) && (j < i || !never_worse(a, b)))
        })
        .map(|(_, a)| a.clone())
        .collect();
    Some(extremum(kept, keep))
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn within(text: &str, ranges: &[(&str, i64, i64)]) -> String {
        let range = |name: &str| ranges.iter().find(|r| r.0 == name).map(|r| Interval::between(r.1, r.2));
        parse(text).unwrap().within(&range).unwrap().to_string()
    }

    #[test]
    fn a_minimum_decided_by_the_range_is_its_winner() {
        assert_eq!(within("min(64, seq)", &[("seq", 1, 64)]), "seq");
        assert_eq!(within("min(64, seq)", &[("seq", 64, 512)]), "64");
        assert_eq!(within("min(64, seq)", &[("seq", 1, 512)]), "min(64, seq)");
        assert_eq!(within("max(0, seq - 1) + 3", &[("seq", 1, 9)]), "seq + 2");
        assert_eq!(within("3*min(64, seq)*batch", &[("seq", 100, 200)]), "192*batch");
    }

    #[test]
    fn a_floor_with_one_value_over_the_range_is_that_value() {
        assert_eq!(within("floor(seq / 1024) + 1", &[("seq", 1, 1000)]), "1");
        assert_eq!(within("floor((h + 31) / 32)", &[("h", 1, 32)]), "1");
        assert_eq!(within("floor((h + 31) / 32)", &[("h", 1, 33)]), "floor((h + 31) / 32)");
    }

    #[test]
    fn moduli_are_the_divisors_above_each_symbol() {
        let m = parse("floor((h + 7) / 8)*floor((w + 7) / 8) + floor((h + 31) / 32) + seq").unwrap().moduli();
        assert_eq!(m.get("h"), Some(&32));
        assert_eq!(m.get("w"), Some(&8));
        assert_eq!(m.get("seq"), None);
        // A nested floor multiplies (it is not merged when scaled); a symbolic divisor has no period.
        assert_eq!(parse("floor(3*floor(H / 2) / 4)").unwrap().moduli().get("H"), Some(&8));
        assert_eq!(parse("floor(N / M)").unwrap().moduli(), BTreeMap::from([("M".into(), 0), ("N".into(), 0)]));
    }
}
