//! Giving symbols values: every occurrence of a bound symbol replaced by its size (or by another polynomial), and
//! the expression brought back to normal form (so `floor((seq - 1) / 2) + 1` at seq = 9 is 5, `min(128, seq)` at
//! seq = 512 is 128, and `floor((h + 31) / 32)` at h = 32*q + 320 is q + 10).

use std::cmp::Ordering;
use std::sync::Arc;

use super::display::is_plain_name;
use super::{extremum, Atom, Poly};

impl Poly {
    /// The polynomial with each symbol `size` gives a value for replaced by it. `None` on overflow, or where a
    /// floor's divisor becomes a size no value divides by (0).
    pub fn substitute(&self, size: &dyn Fn(&str) -> Option<i64>) -> Option<Poly> {
        self.substitute_poly(&|name| size(name).map(Poly::constant))
    }

    /// The polynomial with each symbol `value` gives a polynomial for replaced by it, in normal form again: a
    /// floor whose divisor divides the new numerator's coefficients loses its floor. `None` on overflow, or where
    /// a floor's divisor becomes one no size divides by.
    pub fn substitute_poly(&self, value: &dyn Fn(&str) -> Option<Poly>) -> Option<Poly> {
        let mut out = Poly::default();
        for (monomial, c) in self.terms.iter() {
            let mut term = Poly::constant(c);
            for atom in monomial {
                term = term.mul(&atom.substitute(value)?)?;
            }
            out = out.add(&term)?;
        }
        Some(out)
    }
}

impl Atom {
    fn substitute(&self, value: &dyn Fn(&str) -> Option<Poly>) -> Option<Poly> {
        let all = |args: &[Poly]| args.iter().map(|a| a.substitute_poly(value)).collect::<Option<Vec<Poly>>>();
        match self {
            Atom::Sym(s) => Some(value(s).unwrap_or_else(|| Poly::symbol(s.clone()))),
            Atom::Floor(n, d) => n.substitute_poly(value)?.floor_div(&d.substitute_poly(value)?),
            Atom::Min(args) => Some(extremum(all(args)?, Ordering::Less)),
            Atom::Max(args) => Some(extremum(all(args)?, Ordering::Greater)),
            Atom::Broadcast(names) => Some(broadcast_of(names, value)),
        }
    }
}

/// A broadcast name's new value: a symbol's, or an expression text's (a broadcast carries an expression by its
/// text) worked out again; `None` when nothing in it changes.
fn name_value(name: &Arc<str>, value: &dyn Fn(&str) -> Option<Poly>) -> Option<Poly> {
    if is_plain_name(name) {
        return value(name);
    }
    let p = super::parse::parse_size_text(name)?;
    let new = p.substitute_poly(value)?;
    (new != p).then_some(new)
}

/// A symbolic broadcast with some of its sizes known. By ONNX `docs/Broadcasting.md` a valid broadcast's size is
/// the one size that is not 1 (or 1): see [`super::broadcast_of_sizes`].
fn broadcast_of(names: &Arc<[Arc<str>]>, value: &dyn Fn(&str) -> Option<Poly>) -> Poly {
    let sizes = names.iter().map(|name| match name_value(name, value) {
        Some(p) => p,
        None => super::parse::parse_size_text(name).unwrap_or_else(|| Poly::symbol(name.clone())),
    });
    super::broadcast_of_sizes(sizes)
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::Poly;

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

    #[test]
    fn a_symbol_replaced_by_a_multiple_of_every_divisor_leaves_no_floor() {
        // YOLOv8's anchors at h = 32*q + 320: floor((h + 31) / 32) is q + 10, floor((h + 7) / 8) is 4*q + 40.
        let h = parse("32*q + 320").unwrap();
        let value = |name: &str| (name == "h").then(|| h.clone());
        let at = |text: &str| parse(text).unwrap().substitute_poly(&value).unwrap().to_string();
        assert_eq!(at("floor((h + 31) / 32)"), "q + 10");
        assert_eq!(at("floor((h + 7) / 8)"), "4*q + 40");
        assert_eq!(at("min(400, h)"), "min(32*q + 320, 400)");
    }

    #[test]
    fn a_broadcast_of_expressions_follows_its_symbols() {
        let b = Poly::broadcast(vec!["2*N".into(), "M".into()].into());
        let size = |name: &str| match name {
            "N" => Some(3),
            _ => None,
        };
        assert_eq!(b.substitute(&size).unwrap(), Poly::constant(6));
        let both = |name: &str| match name {
            "N" => Some(1),
            "M" => Some(5),
            _ => None,
        };
        // 2 and 5 do not broadcast: the broadcast stays, of those sizes, for its site to report.
        assert_eq!(b.substitute(&both).unwrap().to_string(), "broadcast(2, 5)");
    }
}
