//! What must hold for the symbolic size algebra (`onnx_bcast::sizes::sym`) on any expression: the body of the fuzz target
//! `expression_algebra` (tests/it/sym_props.rs checks the same on proptest's expressions).
//!
//! An expression tree over three sizes is built both ways, symbolically (`Poly`) and on numbers, and for every
//! binding of the sizes to a few values: what the normal form evaluates to is what the tree evaluates to; its
//! bounds contain that value; its text parses back to an expression of the same values; a comparison the algebra
//! decides is true at every binding. And the budget holds: nothing an operation builds is larger than
//! [`onnx_bcast::sizes::sym::MAX_BUILT`]. Any text given to the parser must come back (as an expression or an error)
//! without a panic.

use onnx_bcast::sizes::sym::{parse, Ext, Poly, MAX_BUILT};

/// An expression tree; `Sym(k)` is one of three sizes.
#[derive(Clone, Debug)]
pub enum E {
    Sym(u8),
    Const(i64),
    Add(Box<E>, Box<E>),
    Sub(Box<E>, Box<E>),
    Mul(Box<E>, Box<E>),
    Neg(Box<E>),
    FloorDiv(Box<E>, i64),
    CeilDiv(Box<E>, i64),
    DivPoly(Box<E>, Box<E>),
    Mod(Box<E>, Box<E>),
    Min(Box<E>, Box<E>),
    Max(Box<E>, Box<E>),
    Abs(Box<E>),
}

/// One input: expressions, compared pairwise, and a text for the parser.
#[derive(Clone, Debug)]
pub struct Case {
    pub exprs: Vec<E>,
    pub text: String,
}

const NAMES: [&str; 3] = ["N", "seq_len", "?7"];
/// Each size takes each of these (sizes are never negative).
const VALUES: [i64; 4] = [0, 1, 3, 8];
/// The largest tree checked: the fuzzer's trees share sub-trees by cloning (the chain step reads its input twice),
/// so that their size, and the time to evaluate them on numbers, would double with each level.
pub const MAX_TREE: usize = 400;

/// The number of nodes of a tree, counted up to `limit + 1`.
pub fn tree_size(e: &E, limit: usize) -> usize {
    let mut n = 1;
    let mut visit = |child: &E| {
        if n <= limit {
            n += tree_size(child, limit - n);
        }
    };
    match e {
        E::Sym(_) | E::Const(_) => {}
        E::Neg(a) | E::FloorDiv(a, _) | E::CeilDiv(a, _) | E::Abs(a) => visit(a),
        E::Add(a, b) | E::Sub(a, b) | E::Mul(a, b) | E::DivPoly(a, b) | E::Mod(a, b) | E::Min(a, b) | E::Max(a, b) => {
            visit(a);
            visit(b);
        }
    }
    n
}

fn sym(k: u8) -> &'static str {
    NAMES[usize::from(k) % NAMES.len()]
}

/// The normal form, or `None` where the algebra declines (overflow, a divisor that is never positive, the
/// budget). What add, sub and mul build is within the budget.
pub fn build(e: &E) -> Option<Poly> {
    let bounded = |p: Poly| {
        assert!(p.size_up_to(MAX_BUILT) <= MAX_BUILT, "an operation built {} nodes", p.size_up_to(usize::MAX - 1));
        p
    };
    Some(match e {
        E::Sym(k) => Poly::atom(sym(*k)),
        E::Const(c) => Poly::constant(*c),
        E::Add(a, b) => bounded(build(a)?.add(&build(b)?)?),
        E::Sub(a, b) => bounded(build(a)?.sub(&build(b)?)?),
        E::Mul(a, b) => bounded(build(a)?.mul(&build(b)?)?),
        E::Neg(a) => build(a)?.neg()?,
        E::FloorDiv(a, d) => build(a)?.div_floor(*d)?,
        E::CeilDiv(a, d) => build(a)?.div_ceil(*d)?,
        E::DivPoly(a, d) => build(a)?.div_poly(&build(d)?)?,
        E::Mod(a, d) => build(a)?.modulo(&build(d)?)?,
        E::Min(a, b) => build(a)?.min_of(&build(b)?),
        E::Max(a, b) => build(a)?.max_of(&build(b)?),
        E::Abs(a) => build(a)?.abs()?,
    })
}

/// The tree on numbers: `None` where it is undefined (a division by a value that is not positive) or leaves i64.
pub fn eval(e: &E, env: &[i64; 3]) -> Option<i64> {
    let v: i128 = match e {
        E::Sym(k) => env[usize::from(*k) % 3].into(),
        E::Const(c) => (*c).into(),
        E::Add(a, b) => i128::from(eval(a, env)?) + i128::from(eval(b, env)?),
        E::Sub(a, b) => i128::from(eval(a, env)?) - i128::from(eval(b, env)?),
        E::Mul(a, b) => i128::from(eval(a, env)?) * i128::from(eval(b, env)?),
        E::Neg(a) => -i128::from(eval(a, env)?),
        E::FloorDiv(a, d) if *d > 0 => i128::from(eval(a, env)?).div_euclid((*d).into()),
        E::CeilDiv(a, d) if *d > 0 => -(-i128::from(eval(a, env)?)).div_euclid((*d).into()),
        E::DivPoly(a, d) | E::Mod(a, d) => {
            let (a, d) = (i128::from(eval(a, env)?), i128::from(eval(d, env)?));
            if d <= 0 {
                return None;
            }
            if matches!(e, E::Mod(..)) {
                a.rem_euclid(d)
            } else {
                a.div_euclid(d)
            }
        }
        E::FloorDiv(..) | E::CeilDiv(..) => return None,
        E::Min(a, b) => eval(a, env)?.min(eval(b, env)?).into(),
        E::Max(a, b) => eval(a, env)?.max(eval(b, env)?).into(),
        E::Abs(a) => i128::from(eval(a, env)?).abs(),
    };
    i64::try_from(v).ok()
}

/// Every binding of the three sizes to [`VALUES`].
fn bindings() -> impl Iterator<Item = [i64; 3]> {
    VALUES.iter().flat_map(|&a| VALUES.iter().flat_map(move |&b| VALUES.iter().map(move |&c| [a, b, c])))
}

/// The normal form's value at a binding; `None` where the algebra declines (an overflow, or a floor whose divisor
/// is 0 there, where the tree is undefined too).
fn value(p: &Poly, env: &[i64; 3]) -> Option<i64> {
    let size = |name: &str| NAMES.iter().position(|n| *n == name).map(|i| env[i]);
    p.substitute(&size)?.as_constant()
}

fn within(b: &onnx_bcast::sizes::sym::Interval, v: i64) -> bool {
    b.lo <= Ext::Fin(v.into()) && Ext::Fin(v.into()) <= b.hi
}

/// The fuzz target's body.
pub fn expression_algebra(case: &Case) {
    let _ = parse(&case.text);
    let small = |e: &E| tree_size(e, MAX_TREE) <= MAX_TREE;
    let built: Vec<(usize, Poly)> =
        case.exprs.iter().enumerate().filter(|(_, e)| small(e)).filter_map(|(i, e)| Some((i, build(e)?))).collect();
    // Each tree on numbers once per binding.
    let values: Vec<Vec<Option<i64>>> = case
        .exprs
        .iter()
        .map(|e| if small(e) { bindings().map(|env| eval(e, &env)).collect() } else { Vec::new() })
        .collect();
    for (i, p) in &built {
        let e = &case.exprs[*i];
        let printed = p.to_string();
        let reparsed = parse(&printed).ok();
        let b = p.bounds();
        for (k, env) in bindings().enumerate() {
            let Some(expected) = values[*i][k] else { continue };
            if let Some(got) = value(p, &env) {
                assert_eq!(got, expected, "{p} at {env:?} (from {e:?})");
            }
            assert!(within(&b, expected), "{expected} at {env:?} is outside the bounds {b:?} of {p}");
            if let Some(q) = &reparsed {
                if let Some(got) = value(q, &env) {
                    assert_eq!(got, expected, "`{printed}` parsed back to {q}, which differs at {env:?}");
                }
            }
        }
    }
    for (i, p) in &built {
        for (j, q) in &built {
            let decided = p.compare(q);
            let le = p.at_most_for_all(q);
            for (k, env) in bindings().enumerate() {
                let (Some(a), Some(b)) = (values[*i][k], values[*j][k]) else { continue };
                if let Some(order) = decided {
                    assert_eq!(a.cmp(&b), order, "{p} vs {q} decided {order:?}, at {env:?}: {a} vs {b}");
                }
                match le {
                    Some(true) => assert!(a <= b, "{p} <= {q} decided, at {env:?}: {a} > {b}"),
                    Some(false) => assert!(a > b, "{p} > {q} decided, at {env:?}: {a} <= {b}"),
                    None => {}
                }
            }
        }
    }
}
