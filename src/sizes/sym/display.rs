//! Printing symbolic sizes: highest-degree terms first, the constant last; `floor(P / d)`, `min(P, Q)`,
//! `max(P, Q)`; every sum inside a product or a floor in parentheses. The text parses back ([`super::parse`]) to
//! the same normal form, and the expression evaluators of the test scripts read it too.

use std::fmt;

use super::{Atom, Monomial, Poly};

impl fmt::Display for Poly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("0");
        }
        let mut terms: Vec<(&Monomial, i64)> = self.terms.iter().collect();
        terms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        for (i, &(m, c)) in terms.iter().enumerate() {
            let magnitude = c.unsigned_abs();
            match (i, c < 0) {
                (0, true) => f.write_str("-")?,
                (0, false) => {}
                (_, true) => f.write_str(" - ")?,
                (_, false) => f.write_str(" + ")?,
            }
            if m.is_empty() {
                write!(f, "{magnitude}")?;
                continue;
            }
            if magnitude != 1 {
                write!(f, "{magnitude}*")?;
            }
            for (k, atom) in m.iter().enumerate() {
                if k > 0 {
                    f.write_str("*")?;
                }
                write!(f, "{atom}")?;
            }
        }
        Ok(())
    }
}

impl Poly {
    /// As a numerator only a sum needs parentheses; as a divisor anything but one atom or a positive constant.
    fn write_grouped(&self, f: &mut fmt::Formatter<'_>, divisor: bool) -> fmt::Result {
        let simple = match self.terms.iter().next() {
            _ if self.terms.len() > 1 => false,
            Some((m, c)) if divisor => (c == 1 && m.len() == 1) || (m.is_empty() && c > 0),
            _ => true,
        };
        if !simple {
            write!(f, "({self})")
        } else {
            write!(f, "{self}")
        }
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Sym(name) if is_plain_name(name) => f.write_str(name),
            // A name that is not an identifier (an exporter's text that did not parse): kept whole.
            Atom::Sym(name) => write!(f, "({name})"),
            Atom::Floor(n, d) => {
                f.write_str("floor(")?;
                n.write_grouped(f, false)?;
                f.write_str(" / ")?;
                d.write_grouped(f, true)?;
                f.write_str(")")
            }
            Atom::Broadcast(names) => write!(f, "broadcast({})", names.join(", ")),
            Atom::Min(args) | Atom::Max(args) => {
                f.write_str(if matches!(self, Atom::Min(_)) { "min(" } else { "max(" })?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// An identifier, or a fresh symbol (`?3`): printed bare.
pub(crate) fn is_plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some('?') => chars.all(|c| c.is_ascii_digit()) && name.len() > 1,
        Some(c) if c.is_alphabetic() || c == '_' => chars.all(|c| c.is_alphanumeric() || c == '_' || c == '.'),
        _ => false,
    }
}
