//! Properties of the symbolic size algebra (`onnx_bcast::sizes::sym`): printing any expression and parsing it back gives
//! the same normal form; equal quantities built in different ways print identically; exact polynomial division
//! gives the quotient back; and every normal form evaluates to what the expression it came from evaluates to.

use std::collections::BTreeMap;

use onnx_bcast::sizes::sym::{parse, Poly};
use proptest::prelude::*;

/// An expression tree over three sizes, evaluated both symbolically and on numbers.
#[derive(Clone, Debug)]
enum E {
    Sym(&'static str),
    Const(i64),
    Add(Box<E>, Box<E>),
    Sub(Box<E>, Box<E>),
    Mul(Box<E>, Box<E>),
    FloorDiv(Box<E>, i64),
    Min(Box<E>, Box<E>),
    Max(Box<E>, Box<E>),
}

/// Expressions with at most one `min` or `max`: the normal form is one form per quantity for those (a sum of
/// several minima and maxima has none, see `sym`).
fn expr() -> impl Strategy<Value = E> {
    any_expr().prop_filter("at most one min or max", |e| extrema(e) <= 1)
}

fn extrema(e: &E) -> usize {
    match e {
        E::Sym(_) | E::Const(_) => 0,
        E::Add(a, b) | E::Sub(a, b) | E::Mul(a, b) => extrema(a) + extrema(b),
        E::FloorDiv(a, _) => extrema(a),
        E::Min(a, b) | E::Max(a, b) => 1 + extrema(a) + extrema(b),
    }
}

/// Expressions without min and max.
fn plain_expr() -> impl Strategy<Value = E> {
    any_expr().prop_filter("no min or max", |e| extrema(e) == 0)
}

fn any_expr() -> impl Strategy<Value = E> {
    let leaf =
        prop_oneof![prop_oneof![Just("N"), Just("M"), Just("H")].prop_map(E::Sym), (-3i64..=9).prop_map(E::Const),];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Add(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Sub(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Mul(Box::new(a), Box::new(b))),
            (inner.clone(), 1i64..=5).prop_map(|(a, d)| E::FloorDiv(Box::new(a), d)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Min(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| E::Max(Box::new(a), Box::new(b))),
        ]
    })
}

fn build(e: &E) -> Option<Poly> {
    Some(match e {
        E::Sym(s) => Poly::atom(s),
        E::Const(c) => Poly::constant(*c),
        E::Add(a, b) => build(a)?.add(&build(b)?)?,
        E::Sub(a, b) => build(a)?.sub(&build(b)?)?,
        E::Mul(a, b) => build(a)?.mul(&build(b)?)?,
        E::FloorDiv(a, d) => build(a)?.div_floor(*d)?,
        E::Min(a, b) => build(a)?.min_of(&build(b)?),
        E::Max(a, b) => build(a)?.max_of(&build(b)?),
    })
}

fn eval(e: &E, env: &BTreeMap<&str, i64>) -> i64 {
    match e {
        E::Sym(s) => env[s],
        E::Const(c) => *c,
        E::Add(a, b) => eval(a, env) + eval(b, env),
        E::Sub(a, b) => eval(a, env) - eval(b, env),
        E::Mul(a, b) => eval(a, env) * eval(b, env),
        E::FloorDiv(a, d) => eval(a, env).div_euclid(*d),
        E::Min(a, b) => eval(a, env).min(eval(b, env)),
        E::Max(a, b) => eval(a, env).max(eval(b, env)),
    }
}

/// The value of a printed normal form under `env`, read back through the parser with the symbols replaced by
/// their values (so that what is checked is the printed text itself).
fn eval_text(text: &str, env: &BTreeMap<&str, i64>) -> i64 {
    let mut bound = text.to_string();
    for (name, v) in env {
        bound = bound.replace(name, &format!("({v})"));
    }
    parse(&bound).unwrap_or_else(|e| panic!("{bound:?} does not parse: {e:?}")).as_constant().expect("no symbol left")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Print, parse back: the same normal form.
    #[test]
    fn printing_and_parsing_back_gives_the_same_normal_form(e in expr()) {
        if let Some(p) = build(&e) {
            let text = p.to_string();
            let back = parse(&text).unwrap_or_else(|err| panic!("{text:?} does not parse: {err:?}"));
            prop_assert_eq!(back, p, "{}", text);
        }
    }

    /// The normal form is the same quantity: it evaluates like the expression at every small size.
    #[test]
    fn the_normal_form_evaluates_like_the_expression(e in expr(), n in 0i64..6, m in 0i64..6, h in 0i64..6) {
        if let Some(p) = build(&e) {
            let env = BTreeMap::from([("N", n), ("M", m), ("H", h)]);
            prop_assert_eq!(eval_text(&p.to_string(), &env), eval(&e, &env), "{}", p);
        }
    }

    /// Equal quantities reached in different ways have one form: distributing a product, moving a constant
    /// into a floor, and commuting sums and products (over polynomials and floors; a min or max is kept whole
    /// when scaled, so distributing over it is not one form).
    #[test]
    fn equal_quantities_print_identically(a in plain_expr(), b in plain_expr(), c in plain_expr(), k in 1i64..5) {
        if let (Some(a), Some(b), Some(c)) = (build(&a), build(&b), build(&c)) {
            if let (Some(x), Some(y)) = (
                a.mul(&b.add(&c).unwrap_or_default()),
                a.mul(&b).and_then(|ab| ab.add(&a.mul(&c)?)),
            ) {
                if b.add(&c).is_some() {
                    prop_assert_eq!(x.to_string(), y.to_string());
                }
            }
            // floor(a / k) + b = floor((a + k*b) / k)
            if let (Some(x), Some(y)) = (
                a.div_floor(k).and_then(|f| f.add(&b)),
                b.scale(k).and_then(|kb| a.add(&kb)).and_then(|s| s.div_floor(k)),
            ) {
                prop_assert_eq!(x.to_string(), y.to_string());
            }
            if let (Some(x), Some(y)) = (a.add(&b), b.add(&a)) {
                prop_assert_eq!(x.to_string(), y.to_string());
            }
        }
    }

    /// A sum with one min or max is one form whatever the order it was built in.
    #[test]
    fn a_sum_with_one_extremum_has_one_form(a in plain_expr(), b in plain_expr(), c in plain_expr(), max in any::<bool>()) {
        if let (Some(a), Some(b), Some(c)) = (build(&a), build(&b), build(&c)) {
            let m = if max { b.max_of(&c) } else { b.min_of(&c) };
            if let (Some(x), Some(y)) = (a.add(&m), m.add(&a)) {
                prop_assert_eq!(&x, &y);
                let inside = if max { a.add(&b).zip(a.add(&c)).map(|(p, q)| p.max_of(&q)) } else { a.add(&b).zip(a.add(&c)).map(|(p, q)| p.min_of(&q)) };
                if let Some(inside) = inside {
                    prop_assert_eq!(x.to_string(), inside.to_string());
                }
            }
        }
    }

    /// Exact polynomial division gives the quotient back.
    #[test]
    fn exact_polynomial_division_simplifies(a in expr(), b in expr()) {
        if let (Some(a), Some(b)) = (build(&a), build(&b)) {
            // A divisor that is positive for every size: b*b + 1.
            let Some(d) = b.mul(&b).and_then(|bb| bb.add(&Poly::constant(1))) else { return Ok(()) };
            if let Some(prod) = a.mul(&d) {
                if let Some(q) = prod.div_poly(&d) {
                    prop_assert_eq!(q, a);
                }
            }
        }
    }
}
