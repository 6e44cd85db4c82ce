//! Symbolic sizes: polynomials with integer coefficients over named atoms, kept in a normal form so that two
//! expressions are equal exactly when their normal forms are.
//!
//! An atom is a symbol (`N`, a `dim_param`), a fresh symbol for a size nothing names, or an operation that has no
//! polynomial form, named by its own canonical text (`floor((N + 1) / 2)`, `max(N, M)`). Division by a constant is
//! exact when every coefficient is divisible by it and otherwise becomes a floor atom, so `(2·N + 4) / 2` is
//! `N + 2` while `N / 2` stays `floor(N / 2)`: nothing is assumed that does not hold for every value.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A product of atoms, sorted; an atom repeated k times is its k-th power. Empty for the constant term.
type Monomial = Vec<Arc<str>>;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Poly {
    /// Non-zero coefficients by monomial.
    terms: BTreeMap<Monomial, i64>,
}

impl Poly {
    pub fn constant(c: i64) -> Poly {
        let mut terms = BTreeMap::new();
        if c != 0 {
            terms.insert(Vec::new(), c);
        }
        Poly { terms }
    }

    pub fn atom(name: &str) -> Poly {
        Poly::atom_arc(Arc::from(name))
    }

    pub fn atom_arc(name: Arc<str>) -> Poly {
        let mut terms = BTreeMap::new();
        terms.insert(vec![name], 1);
        Poly { terms }
    }

    /// The value, when the polynomial has no atom.
    pub fn as_constant(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    /// The atom, when the polynomial is exactly one atom.
    pub fn as_atom(&self) -> Option<&Arc<str>> {
        match self.terms.iter().next() {
            Some((m, 1)) if self.terms.len() == 1 && m.len() == 1 => Some(&m[0]),
            _ => None,
        }
    }

    fn combine(&self, other: &Poly, sign: i64) -> Option<Poly> {
        let mut terms = self.terms.clone();
        for (m, c) in &other.terms {
            let entry = terms.entry(m.clone()).or_insert(0);
            *entry = entry.checked_add(c.checked_mul(sign)?)?;
            if *entry == 0 {
                terms.remove(m);
            }
        }
        Some(Poly { terms })
    }

    pub fn add(&self, other: &Poly) -> Option<Poly> {
        self.combine(other, 1)
    }

    pub fn sub(&self, other: &Poly) -> Option<Poly> {
        self.combine(other, -1)
    }

    pub fn mul(&self, other: &Poly) -> Option<Poly> {
        let mut out = Poly::default();
        for (ma, ca) in &self.terms {
            for (mb, cb) in &other.terms {
                let mut m: Monomial = ma.iter().chain(mb).cloned().collect();
                m.sort();
                let term = Poly { terms: BTreeMap::from([(m, ca.checked_mul(*cb)?)]) };
                out = out.add(&term)?;
            }
        }
        Some(out)
    }

    /// Floor division by a positive constant: exact when every coefficient divides, else a floor atom.
    pub fn div_floor(&self, d: i64) -> Option<Poly> {
        if d <= 0 {
            return None;
        }
        if let Some(c) = self.as_constant() {
            return Some(Poly::constant(c.div_euclid(d)));
        }
        if self.terms.values().all(|c| c % d == 0) {
            return Some(Poly { terms: self.terms.iter().map(|(m, c)| (m.clone(), c / d)).collect() });
        }
        Some(Poly::atom(&format!("floor(({self}) / {d})")))
    }

    /// Ceiling division by a positive constant.
    pub fn div_ceil(&self, d: i64) -> Option<Poly> {
        self.add(&Poly::constant(d - 1))?.div_floor(d)
    }

    /// Division by another polynomial: exact only for a constant divisor or a constant multiple of the divisor.
    pub fn div_poly(&self, other: &Poly) -> Option<Poly> {
        if let Some(d) = other.as_constant() {
            return if d > 0 { self.div_floor(d) } else { None };
        }
        if self == other {
            return Some(Poly::constant(1));
        }
        // A single-term divisor divides exactly when it divides every term.
        if let [(divisor, &c)] = other.terms.iter().collect::<Vec<_>>().as_slice() {
            if c > 0 {
                let quotient: Option<BTreeMap<Monomial, i64>> = self
                    .terms
                    .iter()
                    .map(|(m, &k)| {
                        let rest = remove_factors(m, divisor)?;
                        (k % c == 0).then_some((rest, k / c))
                    })
                    .collect();
                if let Some(terms) = quotient {
                    return Some(Poly { terms });
                }
            }
        }
        Some(Poly::atom(&format!("floor(({self}) / ({other}))")))
    }

    /// The larger of two values, as a constant when both are constants.
    pub fn max_of(&self, other: &Poly) -> Poly {
        match (self.as_constant(), other.as_constant()) {
            (Some(a), Some(b)) => Poly::constant(a.max(b)),
            _ if self == other => self.clone(),
            _ => {
                let (a, b) = if self <= other { (self, other) } else { (other, self) };
                Poly::atom(&format!("max({a}, {b})"))
            }
        }
    }

    pub fn min_of(&self, other: &Poly) -> Poly {
        match (self.as_constant(), other.as_constant()) {
            (Some(a), Some(b)) => Poly::constant(a.min(b)),
            _ if self == other => self.clone(),
            _ => {
                let (a, b) = if self <= other { (self, other) } else { (other, self) };
                Poly::atom(&format!("min({a}, {b})"))
            }
        }
    }
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

impl fmt::Display for Poly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("0");
        }
        // Highest-degree terms first, the constant last.
        let mut terms: Vec<(&Monomial, &i64)> = self.terms.iter().collect();
        terms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        for (i, (m, &c)) in terms.iter().enumerate() {
            let (sign, magnitude) = if c < 0 { ("-", c.unsigned_abs()) } else { ("+", c as u64) };
            match (i, sign) {
                (0, "-") => f.write_str("-")?,
                (0, _) => {}
                (_, s) => write!(f, " {s} ")?,
            }
            if m.is_empty() {
                write!(f, "{magnitude}")?;
                continue;
            }
            if magnitude != 1 {
                write!(f, "{magnitude}*")?;
            }
            let names: Vec<&str> = m.iter().map(|a| a.as_ref()).collect();
            f.write_str(&names.join("*"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n() -> Poly {
        Poly::atom("N")
    }

    #[test]
    fn equal_expressions_have_one_normal_form() {
        let a = n().add(&Poly::constant(1)).unwrap().mul(&Poly::constant(3)).unwrap();
        let b = Poly::constant(3).add(&n().mul(&Poly::constant(3)).unwrap()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "3*N + 3");
        assert_eq!(n().sub(&n()).unwrap(), Poly::constant(0));
    }

    #[test]
    fn exact_division_simplifies_and_inexact_division_is_a_floor() {
        let two_n_plus_4 = n().mul(&Poly::constant(2)).unwrap().add(&Poly::constant(4)).unwrap();
        assert_eq!(two_n_plus_4.div_floor(2).unwrap().to_string(), "N + 2");
        assert_eq!(n().div_floor(2).unwrap().to_string(), "floor((N) / 2)");
        assert_eq!(Poly::constant(7).div_floor(2).unwrap(), Poly::constant(3));
        assert_eq!(Poly::constant(7).div_ceil(2).unwrap(), Poly::constant(4));
        assert_eq!(n().div_poly(&n()).unwrap(), Poly::constant(1));
        let n_times_768 = n().mul(&Poly::constant(768)).unwrap();
        let n_times_12 = n().mul(&Poly::constant(12)).unwrap();
        assert_eq!(n_times_768.div_poly(&n_times_12).unwrap(), Poly::constant(64));
    }

    #[test]
    fn products_commute_and_max_is_symmetric() {
        let m = Poly::atom("M");
        assert_eq!(n().mul(&m).unwrap(), m.mul(&n()).unwrap());
        assert_eq!(n().max_of(&m), m.max_of(&n()));
        assert_eq!(Poly::constant(2).max_of(&Poly::constant(5)), Poly::constant(5));
    }
}
