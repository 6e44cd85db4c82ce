//! Dimensions and shapes as the analysis sees them: known sizes, symbols, or unknown.

use std::fmt;
use std::sync::Arc;

use crate::sizes::sym::Poly;

/// Ranks above this are treated as unknown rather than materialized.
pub const MAX_RANK: u64 = 1024;

/// One dimension of a tensor.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    /// A size known when the model is checked (0 included).
    Known(u64),
    /// A named size (`dim_param`, or a fresh symbol for a size nothing names), the same in every place it appears
    /// within one model.
    Sym(Arc<str>),
    /// Any other symbolic size, as a polynomial in normal form (`3*N`, `L + 1`, `floor((H) / 2) + 1`).
    Expr(Arc<Poly>),
    /// The broadcast of two or more distinct symbols: equal to each of them that is not 1. Kept as its own value
    /// because two different symbols are never equal without proof. The names are sorted and distinct.
    Broadcast(Arc<[Arc<str>]>),
    /// Nothing is known about this size.
    Unknown,
}

impl Dim {
    pub fn sym(name: &str) -> Dim {
        Dim::Sym(Arc::from(name))
    }

    /// A declared `dim_param`: an expression over symbols where the text is one (PyTorch writes
    /// `floor(height/2 - 1/2) + 1` or `2*s0` for derived sizes), else a name standing for itself.
    ///
    /// An expression is read once per thread and text: an exporter writes the same few expressions on every
    /// value of a graph (a DenseNet export: 130 of them, 12 distinct, each ~50,000 instructions to read, 60% of
    /// its check), and the value read is shared (a `Dim` clones its `Arc`).
    pub fn from_dim_param(text: &str) -> Dim {
        use std::cell::RefCell;
        use std::collections::HashMap;
        thread_local! {
            static READ: RefCell<HashMap<Box<str>, Dim>> = RefCell::new(HashMap::new());
        }
        // A plain name costs less to make than to look up.
        if crate::sizes::sym::display::is_plain_name(text) {
            return Dim::sym(text);
        }
        if let Some(known) = READ.with(|r| r.borrow().get(text).cloned()) {
            return known;
        }
        let dim = match crate::sizes::sym::parse(text) {
            Ok(p) if p.as_constant().is_none() => Dim::from_poly(p),
            _ => Dim::sym(text),
        };
        READ.with(|r| {
            let mut read = r.borrow_mut();
            // A bound on what is kept: one model's expressions are few, and a long-lived caller reads many models.
            if read.len() >= 4096 {
                read.clear();
            }
            read.insert(text.into(), dim.clone());
        });
        dim
    }

    pub fn known(&self) -> Option<u64> {
        match self {
            Dim::Known(n) => Some(*n),
            _ => None,
        }
    }

    pub fn is_one(&self) -> bool {
        matches!(self, Dim::Known(1))
    }

    /// The names this dim contributes to a symbolic broadcast: its symbol, its expression's text, or the names of
    /// the broadcast it already is.
    pub fn broadcast_names(&self) -> Vec<Arc<str>> {
        match self {
            Dim::Sym(s) => vec![s.clone()],
            Dim::Expr(p) => vec![Arc::from(p.to_string())],
            Dim::Broadcast(names) => names.to_vec(),
            _ => Vec::new(),
        }
    }

    /// A symbol made by inference for a size nothing names (`?1`, `?2`, ...).
    pub fn is_fresh(&self) -> bool {
        matches!(self, Dim::Sym(s) if s.starts_with('?'))
    }

    /// Unknown, or built from a symbol inference made up (`?3`, `2*?3`): a size the next analysis of the model may
    /// name differently.
    pub fn mentions_fresh(&self) -> bool {
        match self {
            Dim::Known(_) => false,
            Dim::Unknown => true,
            Dim::Sym(s) => s.starts_with('?'),
            Dim::Broadcast(names) => names.iter().any(|n| n.contains('?')),
            Dim::Expr(p) => p.symbols().iter().any(|s| s.starts_with('?')),
        }
    }

    /// Symbolic: a symbol, an expression or a symbolic broadcast.
    pub fn is_symbolic(&self) -> bool {
        matches!(self, Dim::Sym(_) | Dim::Expr(_) | Dim::Broadcast(_))
    }

    /// The dim in normal form: a known size, a lone symbol, or an expression. A negative constant is no size.
    pub fn from_poly(p: Poly) -> Dim {
        if let Some(c) = p.as_constant() {
            return u64::try_from(c).map_or(Dim::Unknown, Dim::Known);
        }
        if let Some(a) = p.as_symbol() {
            return Dim::Sym(a.clone());
        }
        if let Some(names) = p.as_broadcast() {
            return Dim::Broadcast(names.clone());
        }
        Dim::Expr(Arc::new(p))
    }

    /// The dim as a polynomial, for arithmetic (a symbolic broadcast as one atom); `None` for unknown dims.
    pub fn to_poly(&self) -> Option<Poly> {
        match self {
            Dim::Known(n) => i64::try_from(*n).ok().map(Poly::constant),
            Dim::Sym(s) => Some(Poly::symbol(s.clone())),
            Dim::Expr(p) => Some((**p).clone()),
            Dim::Broadcast(names) => Some(Poly::broadcast(names.clone())),
            Dim::Unknown => None,
        }
    }

    /// Two dims are provably equal: the same known size, or the same symbolic expression.
    #[inline]
    pub fn provably_eq(&self, other: &Dim) -> bool {
        match (self, other) {
            // Two sizes, as most dims are: compared without a call to the equality of every kind of dim.
            (Dim::Known(a), Dim::Known(b)) => a == b,
            (Dim::Unknown, _) => false,
            _ => self == other,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

impl Dim {
    /// The dim as [`Display`](fmt::Display) shows it, written straight to `out`: a size's digits without a
    /// formatter of their own (a large model's `expand` writes a shape into each of its 100,000 lines).
    pub fn write_to(&self, out: &mut impl fmt::Write) -> fmt::Result {
        match self {
            Dim::Known(n) => out.write_str(itoa::Buffer::new().format(*n)),
            Dim::Sym(s) => out.write_str(s),
            Dim::Expr(p) => write!(out, "{p}"),
            Dim::Broadcast(names) => write!(out, "broadcast({})", names.join(", ")),
            Dim::Unknown => out.write_str("?"),
        }
    }
}

/// The shape of a tensor: `None` when even the rank is unknown.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Option<Vec<Dim>>);

impl Shape {
    pub fn unranked() -> Shape {
        Shape(None)
    }

    pub fn ranked(dims: Vec<Dim>) -> Shape {
        Shape(Some(dims))
    }

    pub fn scalar() -> Shape {
        Shape(Some(Vec::new()))
    }

    pub fn known(dims: &[u64]) -> Shape {
        Shape(Some(dims.iter().map(|&d| Dim::Known(d)).collect()))
    }

    pub fn dims(&self) -> Option<&[Dim]> {
        self.0.as_deref()
    }

    pub fn rank(&self) -> Option<usize> {
        self.0.as_ref().map(Vec::len)
    }

    /// Every dim is known: the shape is static.
    /// Every size, when the rank and every dim are known.
    pub fn known_dims(&self) -> Option<Vec<u64>> {
        self.dims()?.iter().map(Dim::known).collect()
    }

    pub fn is_static(&self) -> bool {
        self.dims().is_some_and(|d| d.iter().all(|d| d.known().is_some()))
    }

    /// The rank and every dim are known or symbolic (no unknown dim).
    pub fn is_resolved(&self) -> bool {
        self.dims().is_some_and(|d| d.iter().all(|d| !matches!(d, Dim::Unknown)))
    }

    /// Provably the same shape: same rank, every dim provably equal.
    pub fn provably_eq(&self, other: &Shape) -> bool {
        match (self.dims(), other.dims()) {
            (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.provably_eq(y)),
            _ => false,
        }
    }

    /// Number of elements when the shape is static.
    pub fn element_count(&self) -> Option<u64> {
        self.dims()?.iter().try_fold(1u64, |acc, d| acc.checked_mul(d.known()?))
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

impl Shape {
    /// The shape as [`Display`](fmt::Display) shows it (`[2, N, ?]`), written straight to `out`: with a `String`,
    /// no formatter at all.
    pub fn write_to(&self, out: &mut impl fmt::Write) -> fmt::Result {
        let Some(dims) = self.dims() else { return out.write_str("[unknown rank]") };
        out.write_str("[")?;
        for (i, d) in dims.iter().enumerate() {
            if i > 0 {
                out.write_str(", ")?;
            }
            d.write_to(out)?;
        }
        out.write_str("]")
    }

    /// [`Shape::write_to`] a `String`, which cannot fail.
    pub fn push_to(&self, out: &mut String) {
        let _ = self.write_to(out);
    }
}

impl From<Vec<Dim>> for Shape {
    fn from(dims: Vec<Dim>) -> Shape {
        Shape(Some(dims))
    }
}

/// Builds a shape from a compact text form used in tests and docs: `"2,3,N,?"`, `""` for a scalar, `"*"` for an
/// unknown rank.
pub fn parse_shape(text: &str) -> Shape {
    let text = text.trim();
    if text == "*" {
        return Shape::unranked();
    }
    if text.is_empty() {
        return Shape::scalar();
    }
    Shape::ranked(
        text.split(',')
            .map(|t| {
                let t = t.trim();
                if t == "?" {
                    Dim::Unknown
                } else if let Ok(n) = t.parse() {
                    Dim::Known(n)
                } else {
                    Dim::sym(t)
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shape is written the same into a `String` as through a formatter, and a size's digits ignore the
    /// formatter's width and fill as before (the digits were never padded).
    #[test]
    fn a_shape_written_to_a_string_reads_as_its_display() {
        let expr = Dim::from_dim_param("2*N + 1");
        let both = Dim::Broadcast(vec![Arc::from("A"), Arc::from("B")].into());
        let shape = Shape::ranked(vec![Dim::Known(0), Dim::Known(u64::MAX), Dim::sym("N"), Dim::Unknown, expr, both]);
        let mut written = String::new();
        shape.push_to(&mut written);
        assert_eq!(written, format!("[0, {}, N, ?, 2*N + 1, broadcast(A, B)]", u64::MAX));
        assert_eq!(format!("{shape}"), written);
        assert_eq!(format!("{shape:>60}"), written);
        assert_eq!(format!("{}|{}", Shape::unranked(), Shape::scalar()), "[unknown rank]|[]");
    }

    /// An expression read a second time is the value read the first time, shared; a text that is not one stays
    /// a name, read again or not.
    #[test]
    fn a_dim_param_read_again_is_the_first_reading_shared() {
        let text = "((((height - 1)//4)) - 1)//2 + 1";
        let (first, again) = (Dim::from_dim_param(text), Dim::from_dim_param(text));
        let (Dim::Expr(a), Dim::Expr(b)) = (&first, &again) else { panic!("an expression: {first:?}") };
        assert!(Arc::ptr_eq(a, b), "shared, not read twice");
        assert_eq!(**a, crate::sizes::sym::parse(text).unwrap());
        for _ in 0..2 {
            assert_eq!(Dim::from_dim_param("3 +"), Dim::sym("3 +"));
            assert_eq!(Dim::from_dim_param("2 + 1"), Dim::sym("2 + 1"), "a constant stays the text");
        }
    }
}
