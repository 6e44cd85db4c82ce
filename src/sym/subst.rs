//! Giving symbols values: every occurrence of a bound symbol replaced by its size, and the expression brought back
//! to normal form (so `floor((seq - 1) / 2) + 1` at seq = 9 is 5, and `min(128, seq)` at seq = 512 is 128).

use std::cmp::Ordering;
use std::sync::Arc;

use super::{extremum, Atom, Poly};

impl Poly {
    /// The polynomial with each symbol `size` gives a value for replaced by it. `None` on overflow, or where a
    /// floor's divisor becomes a size no value divides by (0).
    pub fn substitute(&self, size: &dyn Fn(&str) -> Option<i64>) -> Option<Poly> {
        let mut out = Poly::default();
        for (monomial, &c) in &self.terms {
            let mut term = Poly::constant(c);
            for atom in monomial {
                term = term.mul(&atom.substitute(size)?)?;
            }
            out = out.add(&term)?;
        }
        Some(out)
    }
}

impl Atom {
    fn substitute(&self, size: &dyn Fn(&str) -> Option<i64>) -> Option<Poly> {
        let all = |args: &[Poly]| args.iter().map(|a| a.substitute(size)).collect::<Option<Vec<Poly>>>();
        match self {
            Atom::Sym(s) => Some(size(s).map_or_else(|| Poly::symbol(s.clone()), Poly::constant)),
            Atom::Floor(n, d) => n.substitute(size)?.floor_div(&d.substitute(size)?),
            Atom::Min(args) => Some(extremum(all(args)?, Ordering::Less)),
            Atom::Max(args) => Some(extremum(all(args)?, Ordering::Greater)),
            Atom::Broadcast(names) => Some(broadcast_of(names, size)),
        }
    }
}

/// A symbolic broadcast with some of its sizes known. By ONNX `docs/Broadcasting.md` a valid broadcast's size is
/// the one size that is not 1 (or 1): a known size other than 1 is that size, known 1s drop out, and the names left
/// stay a broadcast (one name alone is itself). Known sizes that do not broadcast leave the broadcast as it was,
/// for the site that makes it to report.
fn broadcast_of(names: &Arc<[Arc<str>]>, size: &dyn Fn(&str) -> Option<i64>) -> Poly {
    let mut known: Vec<i64> = names.iter().filter_map(|n| size(n)).filter(|&v| v != 1).collect();
    known.dedup();
    let left: Vec<Arc<str>> = names.iter().filter(|n| size(n).is_none()).cloned().collect();
    match (known.as_slice(), left.len()) {
        ([], 0) => Poly::constant(1),
        ([], 1) => Poly::symbol(left[0].clone()),
        ([], _) => Poly::broadcast(left.into()),
        ([v], _) => Poly::constant(*v),
        _ => Poly::broadcast(names.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    fn at(text: &str, bound: &[(&str, i64)]) -> String {
        let size = |name: &str| bound.iter().find(|(n, _)| *n == name).map(|&(_, v)| v);
        parse(text).unwrap().substitute(&size).unwrap().to_string()
    }

    #[test]
    fn a_bound_symbol_takes_its_size_and_the_expression_folds() {
        assert_eq!(at("floor((H - 1) / 2) + 1", &[("H", 9)]), "5");
        assert_eq!(at("Min(128, seq)", &[("seq", 512)]), "128");
        assert_eq!(at("Min(128, seq)", &[("seq", 64)]), "64");
        assert_eq!(at("2*batch*seq + 1", &[("seq", 3)]), "6*batch + 1");
        assert_eq!(at("N + M", &[]), "M + N");
    }
}
