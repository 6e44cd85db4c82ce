//! A site's conditions as the range decision reads them: comparisons of polynomials joined by "and" and "or".
//! [`Predicate::of_condition`] is the one place a kind of condition ([`ConditionKind`]) is taught to the decision;
//! a new kind adds an arm there, in terms of [`Predicate::Equal`], [`Predicate::AtMost`], [`Predicate::Divides`],
//! [`Predicate::Any`] and [`Predicate::All`] (the compiler points at the arm to add).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::rules::{Condition, ConditionKind};
use crate::sizes::shape::Dim;
use crate::sizes::sym::{Interval, Poly};

/// A statement about sizes, true or false at each size of the symbols.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Predicate {
    /// The two sizes are equal.
    Equal(Poly, Poly),
    /// The first size is at most the second.
    AtMost(Poly, Poly),
    /// The first (a positive divisor) divides the second: `4 divides 6*N`.
    Divides(Poly, Poly),
    /// At least one of them holds.
    Any(Vec<Predicate>),
    /// Every one of them holds.
    All(Vec<Predicate>),
    /// It is about a size nothing names (an unknown dim): no range decides it.
    Unknowable,
}

impl Predicate {
    /// What a condition states, as a predicate on sizes.
    pub fn of_condition(kind: &ConditionKind) -> Predicate {
        match kind {
            ConditionKind::OneOf { dim, options } => Predicate::Any(options.iter().map(|o| equal(dim, o)).collect()),
            ConditionKind::EqualOrOne { dims } => {
                let mut pairs = Vec::new();
                for (i, a) in dims.iter().enumerate() {
                    for b in &dims[i + 1..] {
                        let one = Dim::Known(1);
                        pairs.push(Predicate::Any(vec![equal(a, b), equal(a, &one), equal(b, &one)]));
                    }
                }
                Predicate::All(pairs)
            }
            ConditionKind::UnknownOneOf { .. } => Predicate::Unknowable,
            ConditionKind::AtMost { dim, bound } => match (dim.to_poly(), bound.to_poly()) {
                (Some(d), Some(b)) => Predicate::AtMost(d, b),
                _ => Predicate::Unknowable,
            },
            ConditionKind::Divides { divisor, dim } => match (divisor.to_poly(), dim.to_poly()) {
                (Some(k), Some(d)) => Predicate::Divides(k, d),
                _ => Predicate::Unknowable,
            },
            ConditionKind::AnyOf(parts) => Predicate::Any(parts.iter().map(Predicate::of_condition).collect()),
        }
    }

    /// Every condition of a site at once.
    pub fn of_conditions(conditions: &[Condition]) -> Predicate {
        Predicate::All(conditions.iter().map(|c| Predicate::of_condition(&c.kind)).collect())
    }

    /// Every symbol it names.
    pub fn symbols(&self) -> BTreeSet<Arc<str>> {
        let mut out = BTreeSet::new();
        self.collect_symbols(&mut out);
        out
    }

    fn collect_symbols(&self, out: &mut BTreeSet<Arc<str>>) {
        match self {
            Predicate::Equal(a, b) | Predicate::AtMost(a, b) | Predicate::Divides(a, b) => {
                sizes_named(a, out);
                sizes_named(b, out);
            }
            Predicate::Any(ps) | Predicate::All(ps) => ps.iter().for_each(|p| p.collect_symbols(out)),
            Predicate::Unknowable => {}
        }
    }
}

/// The symbols a size names; a symbolic broadcast carries its sizes as texts (`floor(height / 2)`), whose symbols
/// are read from them.
fn sizes_named(p: &Poly, out: &mut BTreeSet<Arc<str>>) {
    for s in p.symbols() {
        match crate::sizes::sym::parse(&s) {
            Ok(inner) if inner.as_symbol() != Some(&s) => sizes_named(&inner, out),
            _ => {
                out.insert(s);
            }
        }
    }
}

fn equal(a: &Dim, b: &Dim) -> Predicate {
    if let Some(p) = broadcast_is_one_of_its_sizes(a, b).or_else(|| broadcast_is_one_of_its_sizes(b, a)) {
        return p;
    }
    match (a.to_poly(), b.to_poly()) {
        (Some(a), Some(b)) => Predicate::Equal(a, b),
        _ => Predicate::Unknowable,
    }
}

/// `broadcast(x₁, …, xₙ) = xᵢ` (a MatMul's inner size after a causal mask's broadcast against the past plus the new
/// tokens): wherever the broadcast exists it is xᵢ unless xᵢ is 1 and another size is not, so the statement is
/// "xᵢ ≠ 1 or every size is 1", which intervals settle (`past + seq ≥ 2`) where the equation with the broadcast's
/// text is undecided box by box. Where the broadcast does not exist (two sizes differ, neither 1) the site that
/// makes it fails; this form may fail there too, never hold where the equation does not.
fn broadcast_is_one_of_its_sizes(a: &Dim, b: &Dim) -> Option<Predicate> {
    let Dim::Broadcast(names) = a else { return None };
    let own = b.to_poly()?;
    let sizes: Vec<Poly> = names.iter().map(|n| crate::sizes::sym::parse(n).ok()).collect::<Option<_>>()?;
    if !sizes.contains(&own) {
        return None;
    }
    let one = Poly::constant(1);
    let others_one = sizes.iter().filter(|x| **x != own).map(|x| Predicate::Equal(x.clone(), one.clone())).collect();
    // xᵢ ≠ 1 for a size: at most 0, or at least 2.
    let not_one = [Predicate::AtMost(own.clone(), Poly::constant(0)), Predicate::AtMost(Poly::constant(2), own)];
    Some(Predicate::Any(not_one.into_iter().chain([Predicate::All(others_one)]).collect()))
}

/// One comparison, ready to be settled over a box: a polynomial that must be zero, at most zero, or divisible.
#[derive(Clone, Debug)]
pub(crate) enum Test {
    Zero(Poly),
    NonPositive(Poly),
    /// The first divides the second.
    Divides(Poly, Poly),
    Unknowable,
}

/// Whether some symbolic broadcast in `p` has two sizes that differ, and are not 1, at every size of the box.
fn never_broadcasts(p: &Poly, range: &dyn Fn(&str) -> Option<Interval>) -> bool {
    use crate::sizes::sym::Ext;
    let nonzero = |q: Option<Poly>| {
        q.is_some_and(|q| {
            let b = q.bounds_within(range);
            b.lo > Ext::Fin(0) || b.hi < Ext::Fin(0)
        })
    };
    let one = Poly::constant(1);
    p.broadcasts().iter().any(|sizes| {
        sizes.iter().enumerate().any(|(i, a)| {
            sizes[i + 1..].iter().any(|b| nonzero(a.sub(b)) && nonzero(a.sub(&one)) && nonzero(b.sub(&one)))
        })
    })
}

/// How a test or a predicate comes out over every size of a box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tri {
    /// True at every size.
    All,
    /// False at every size.
    None,
    /// Not settled for the box as a whole.
    Mixed,
}

/// A predicate's shape over its tests.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    Test(usize),
    Any(Vec<Node>),
    All(Vec<Node>),
}

impl Node {
    /// The predicate over a box, from its tests' outcomes (asked lazily, each at most once). "Holds at every size"
    /// and "fails at every size" compose soundly: `Any` holds everywhere if one part does, fails everywhere if all
    /// do; `All` the other way round.
    pub(crate) fn eval(&self, test: &mut dyn FnMut(usize) -> Tri) -> Tri {
        match self {
            Node::Test(i) => test(*i),
            Node::Any(parts) => {
                let mut all_none = true;
                for p in parts {
                    match p.eval(test) {
                        Tri::All => return Tri::All,
                        Tri::Mixed => all_none = false,
                        Tri::None => {}
                    }
                }
                if all_none {
                    Tri::None
                } else {
                    Tri::Mixed
                }
            }
            Node::All(parts) => {
                let mut all_all = true;
                for p in parts {
                    match p.eval(test) {
                        Tri::None => return Tri::None,
                        Tri::Mixed => all_all = false,
                        Tri::All => {}
                    }
                }
                if all_all {
                    Tri::All
                } else {
                    Tri::Mixed
                }
            }
        }
    }
}

/// A predicate split into its tests and its shape, with the symbols the ranges give and the others.
#[derive(Clone, Debug)]
pub(crate) struct Compiled {
    /// The symbols with a range, in order: a box gives a range to each.
    pub symbols: Vec<Arc<str>>,
    /// The symbols without one.
    pub free: Vec<Arc<str>>,
    /// Per symbol, the modulus that clears its floors (1: none, 0: a divisor with no period).
    pub moduli: Vec<i64>,
    pub tests: Vec<Test>,
    /// Per test, whether it has a `min` or `max`: only then is it also read from the upper end of a range.
    pub two_ends: Vec<bool>,
    pub tree: Node,
    pub unknowable: bool,
    /// The prefix of the names standing for a box's offsets (`k0`, `k1`, …), chosen so no free symbol has one.
    pub offset_prefix: String,
}

impl Compiled {
    pub(crate) fn new(pred: &Predicate, ranged: &dyn Fn(&str) -> bool) -> Compiled {
        let (symbols, free): (Vec<Arc<str>>, Vec<Arc<str>>) = pred.symbols().into_iter().partition(|s| ranged(s));
        let mut tests = Vec::new();
        let tree = lower(pred, &mut tests);
        let moduli = symbols.iter().map(|s| modulus_of(&tests, s)).collect();
        let unknowable = tests.iter().any(|t| matches!(t, Test::Unknowable));
        let two_ends = tests
            .iter()
            .map(|t| match t {
                Test::Zero(p) | Test::NonPositive(p) => p.has_extrema(),
                Test::Divides(d, a) => d.has_extrema() || a.has_extrema(),
                Test::Unknowable => false,
            })
            .collect();
        let mut offset_prefix = "_k".to_string();
        while free.iter().any(|f| f.starts_with(&offset_prefix)) {
            offset_prefix.insert(0, '_');
        }
        Compiled { symbols, free, moduli, tests, two_ends, tree, unknowable, offset_prefix }
    }

    /// The name standing for symbol `i`'s offset within a box.
    pub(crate) fn offset_name(&self, i: usize) -> String {
        format!("{}{i}", self.offset_prefix)
    }
}

fn lower(pred: &Predicate, tests: &mut Vec<Test>) -> Node {
    let mut push = |t: Test| {
        tests.push(t);
        Node::Test(tests.len() - 1)
    };
    match pred {
        Predicate::Equal(a, b) => push(a.sub(b).map_or(Test::Unknowable, Test::Zero)),
        Predicate::AtMost(a, b) => push(a.sub(b).map_or(Test::Unknowable, Test::NonPositive)),
        Predicate::Divides(d, a) => push(Test::Divides(d.clone(), a.clone())),
        Predicate::Unknowable => push(Test::Unknowable),
        Predicate::Any(ps) => Node::Any(ps.iter().map(|p| lower(p, tests)).collect()),
        Predicate::All(ps) => Node::All(ps.iter().map(|p| lower(p, tests)).collect()),
    }
}

/// The modulus that clears every floor over `symbol` in the tests (a divisibility test counts by its remainder's
/// floor: `6*N mod 4` is periodic in N with period 2).
fn modulus_of(tests: &[Test], symbol: &str) -> i64 {
    let mut m: i64 = 1;
    let mut merge = |p: &Poly| {
        if let Some(&k) = p.moduli().get(symbol) {
            m = match (m, k) {
                (0, _) | (_, 0) => 0,
                (a, b) => crate::sizes::sym::lcm(a, b).unwrap_or(0),
            };
        }
    };
    for t in tests {
        match t {
            Test::Zero(p) | Test::NonPositive(p) => merge(p),
            Test::Divides(d, a) => {
                merge(d);
                if let Some(rest) = a.modulo(d) {
                    merge(&rest);
                }
            }
            Test::Unknowable => {}
        }
    }
    m
}

impl Test {
    /// The test at sizes given by `value` (a symbol's constant, or its form over a box's offsets), settled by the
    /// offsets' intervals `range`.
    pub(crate) fn over(&self, value: &dyn Fn(&str) -> Option<Poly>, range: &dyn Fn(&str) -> Option<Interval>) -> Tri {
        use crate::sizes::sym::Ext;
        let (d, divisor) = match self {
            Test::Zero(p) | Test::NonPositive(p) => (p.substitute_poly(value), None),
            Test::Divides(d, a) => (a.substitute_poly(value), d.substitute_poly(value).map(Some).unwrap_or(None)),
            Test::Unknowable => return Tri::Mixed,
        };
        let Some(d) = d else { return Tri::Mixed };
        // A size that is the broadcast of sizes that never broadcast over the box exists nowhere there: the site
        // that makes it fails at every size of the box (and says so), and this test holds vacuously.
        if never_broadcasts(&d, range) || divisor.as_ref().is_some_and(|q| never_broadcasts(q, range)) {
            return Tri::All;
        }
        let b = match (self, divisor) {
            (Test::Divides(..), Some(q)) if q.bounds_within(range).lo >= Ext::Fin(1) => match d.modulo(&q) {
                Some(rest) => rest.bounds_within(range),
                None => return Tri::Mixed,
            },
            (Test::Divides(..), _) => return Tri::Mixed,
            _ => d.bounds_within(range),
        };
        let (zero, positive, negative) = (b.single() == Some(0), b.lo > Ext::Fin(0), b.hi < Ext::Fin(0));
        match self {
            Test::NonPositive(_) if b.hi <= Ext::Fin(0) => Tri::All,
            Test::NonPositive(_) if positive => Tri::None,
            Test::Zero(_) | Test::Divides(..) if zero => Tri::All,
            Test::Zero(_) | Test::Divides(..) if positive || negative => Tri::None,
            _ => Tri::Mixed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::ranges::{decide, Decision, Ranges, SizeRange};

    /// `broadcast(p + s, t) = p + s`, as a MatMul after a causal mask states it.
    fn inner_size_after_a_mask() -> Predicate {
        let total: std::sync::Arc<[std::sync::Arc<str>]> = vec!["p + s".into(), "t".into()].into();
        let kind = ConditionKind::OneOf {
            dim: Dim::Broadcast(total),
            options: vec![Dim::from_poly(crate::sizes::sym::parse("p + s").unwrap())],
        };
        Predicate::of_condition(&kind)
    }

    fn over(p: &str, s: &str, t: &str) -> Decision {
        let mut ranges = Ranges::default();
        for (name, text) in [("p", p), ("s", s), ("t", t)] {
            ranges.insert(name, SizeRange::parse(text).unwrap());
        }
        decide(&inner_size_after_a_mask(), &ranges)
    }

    #[test]
    fn a_broadcast_equal_to_one_of_its_sizes_is_decided_wherever_the_broadcast_exists() {
        let pred = inner_size_after_a_mask();
        for (p, s, t) in (0..4u64).flat_map(|p| (0..4u64).flat_map(move |s| (0..6u64).map(move |t| (p, s, t)))) {
            let a = p + s;
            // numpy's broadcast of two sizes: equal, or one of them 1; otherwise there is none.
            let exists = a == t || a == 1 || t == 1;
            let value = if a == 1 { t } else { a };
            let decided = over(&p.to_string(), &s.to_string(), &t.to_string());
            if exists {
                assert_eq!(
                    matches!(decided, Decision::Holds(_)),
                    value == a,
                    "p {p} s {s} t {t}: {decided:?} ({pred:?})"
                );
            }
        }
        // With past and new tokens of at least 1, the inner size is never 1: proven by intervals, no size tried.
        assert!(matches!(over("1..512", "1..512", "1..512"), Decision::Holds(p) if p.enumerated == 0));
        assert!(matches!(over("0..8", "0..8", "1..8"), Decision::Fails { .. }));
    }
}
