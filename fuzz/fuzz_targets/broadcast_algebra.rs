//! The broadcast rules on arbitrary small shapes: known sizes (small, and now and then huge), symbols, symbolic
//! expressions, symbolic broadcasts and unknown dims, ranked or not.
//!
//! - No rule ever panics, whatever the shapes and the legacy axis (any i64).
//! - Where every dim is known, each rule agrees with a brute-force model of numpy broadcasting (the same model as
//!   tests/broadcast_props.rs).
//! - With symbols, every claim is checked against every binding of the symbols (and unknown dims) to small sizes:
//!   Same/Broadcast hold for every binding with the bound output, Violation is violated for every binding,
//!   Conditional holds exactly for the bindings that satisfy its conditions (with unknown dims: only when they do).
//! - multidirectional is commutative (verdict, output and conditions); bidirectional is commutative in its output
//!   and in whether it holds.
#![no_main]

use std::collections::BTreeMap;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use onnx_bcast::broadcast::{
    bidirectional, equal_shapes, legacy_axis, multidirectional, unidirectional, Condition, ConditionKind, Outcome,
    Verdict,
};
use onnx_bcast::shape::{Dim, Shape};
use onnx_bcast::sym::Poly;

const SYMS: [&str; 3] = ["N", "M", "K"];

/// One dim as the fuzzer describes it.
#[derive(Clone, Debug)]
enum D {
    K(u64),
    S(usize),
    /// `SYMS[sym] + offset`.
    E(usize, i64),
    /// The symbolic broadcast of two distinct symbols.
    B(usize, usize),
    U,
}

#[derive(Debug)]
struct Input {
    /// `None`: unknown rank.
    shapes: Vec<Option<Vec<D>>>,
    axis: Option<i64>,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let count = u.int_in_range(1..=4usize)?;
        let mut shapes = Vec::with_capacity(count);
        for _ in 0..count {
            if u.ratio(1, 16)? {
                shapes.push(None);
                continue;
            }
            let rank = u.int_in_range(0..=6usize)?;
            let mut dims = Vec::with_capacity(rank);
            for _ in 0..rank {
                let d = match u.int_in_range(0..=31u8)? {
                    0..=9 => D::K(1),
                    10..=19 => D::K(u.int_in_range(0..=4)?),
                    20 => D::K(u64::arbitrary(u)?),
                    21..=25 => D::S(u.int_in_range(0..=2)?),
                    26 | 27 => D::E(u.int_in_range(0..=2)?, u.int_in_range(-2..=3)?),
                    28 => {
                        let a = u.int_in_range(0..=2)?;
                        let b = (a + u.int_in_range(1..=2)?) % 3;
                        D::B(a.min(b), a.max(b))
                    }
                    _ => D::U,
                };
                dims.push(d);
            }
            shapes.push(Some(dims));
        }
        let axis = match u.int_in_range(0..=3u8)? {
            0 => None,
            1 => Some(-1),
            2 => Some(u.int_in_range(-2..=7)?),
            _ => Some(i64::arbitrary(u)?),
        };
        Ok(Input { shapes, axis })
    }
}

fn expr(sym: usize, offset: i64) -> Poly {
    Poly::atom(SYMS[sym]).add(&Poly::constant(offset)).expect("small offsets do not overflow")
}

fn to_dim(d: &D) -> Dim {
    match d {
        D::K(k) => Dim::Known(*k),
        D::S(s) => Dim::sym(SYMS[*s]),
        D::E(s, c) => Dim::from_poly(expr(*s, *c)),
        D::B(a, b) => Dim::Broadcast(vec![Arc::from(SYMS[*a]), Arc::from(SYMS[*b])].into()),
        D::U => Dim::Unknown,
    }
}

fn to_shape(s: &Option<Vec<D>>) -> Shape {
    match s {
        None => Shape::unranked(),
        Some(dims) => Shape::ranked(dims.iter().map(to_dim).collect()),
    }
}

fn refs(shapes: &[Shape]) -> Vec<&Shape> {
    shapes.iter().collect()
}

fn holds(o: &Outcome) -> bool {
    matches!(o.verdict, Verdict::Same | Verdict::Broadcast)
}

fn violated(o: &Outcome) -> bool {
    matches!(o.verdict, Verdict::Violation(_))
}

/// numpy broadcasting, brute force (as in tests/broadcast_props.rs).
fn numpy(shapes: &[Vec<u64>]) -> Option<Vec<u64>> {
    let rank = shapes.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![1u64; rank];
    for from_right in 0..rank {
        let mut size: Option<u64> = None;
        for shape in shapes {
            if from_right >= shape.len() {
                continue;
            }
            let d = shape[shape.len() - 1 - from_right];
            if d == 1 {
                continue;
            }
            match size {
                None => size = Some(d),
                Some(s) if s == d => {}
                Some(_) => return None,
            }
        }
        out[rank - 1 - from_right] = size.unwrap_or(1);
    }
    Some(out)
}

/// The legacy `broadcast=1`/`axis` rule on known shapes, from its statement: B's trailing 1s dropped, the rest a
/// contiguous run of A's dims from `axis` (default: B aligned to A's end), each B size equal to A's or 1.
fn legacy_model(a: &[u64], b: &[u64], axis: Option<i64>) -> bool {
    if b.len() > a.len() {
        return false;
    }
    let start: i128 = match axis {
        None | Some(-1) => a.len() as i128 - b.len() as i128,
        Some(x) => x as i128,
    };
    let mut trimmed = b.to_vec();
    while trimmed.last() == Some(&1) {
        trimmed.pop();
    }
    start >= 0
        && start + trimmed.len() as i128 <= a.len() as i128
        && trimmed.iter().enumerate().all(|(j, &d)| d == 1 || d == a[start as usize + j])
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

fn conditions(o: &Outcome) -> Vec<String> {
    let mut v: Vec<String> = match &o.verdict {
        Verdict::Conditional(cs) => cs.iter().map(|c| format!("{}: {c}", c.axis)).collect(),
        _ => vec![],
    };
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------------------------------
// Bindings
// ---------------------------------------------------------------------------------------------------------------

/// Sizes for every name a dim may carry (the symbols, and each expression by its text) and for each unknown dim.
struct Binding {
    names: BTreeMap<String, u64>,
    unknowns: Vec<u64>,
}

/// Every binding of N, M in 0..=3, K in {1, 3}, the first two unknown dims in 0..=2 (later ones 1), in which every
/// expression is a size (not negative) and every symbolic broadcast given as an input exists (its parts agree
/// where not 1).
fn bindings(shapes: &[Vec<D>]) -> Vec<Binding> {
    let unknown_count = shapes.iter().flatten().filter(|d| matches!(d, D::U)).count();
    let mut unknown_values: Vec<Vec<u64>> = vec![vec![]];
    for _ in 0..unknown_count.min(2) {
        unknown_values =
            unknown_values.into_iter().flat_map(|v| (0..=2u64).map(move |x| [v.clone(), vec![x]].concat())).collect();
    }
    let mut out = Vec::new();
    for n in 0..=3u64 {
        for m in 0..=3u64 {
            'k: for k in [1u64, 3] {
                let base = [n, m, k];
                let mut names: BTreeMap<String, u64> =
                    SYMS.iter().zip(base).map(|(s, v)| (s.to_string(), v)).collect();
                for d in shapes.iter().flatten() {
                    match d {
                        D::E(s, c) => {
                            let v = base[*s] as i64 + c;
                            if v < 0 {
                                continue 'k;
                            }
                            names.insert(expr(*s, *c).to_string(), v as u64);
                        }
                        D::B(a, b) => {
                            let (x, y) = (base[*a], base[*b]);
                            if x != y && x != 1 && y != 1 {
                                continue 'k;
                            }
                        }
                        _ => {}
                    }
                }
                for u in &unknown_values {
                    let mut unknowns = u.clone();
                    unknowns.resize(unknown_count, 1);
                    out.push(Binding { names: names.clone(), unknowns });
                }
            }
        }
    }
    out
}

fn bind(shapes: &[Vec<D>], b: &Binding) -> Vec<Vec<u64>> {
    let mut next_unknown = 0;
    shapes
        .iter()
        .map(|s| {
            s.iter()
                .map(|d| match d {
                    D::K(k) => *k,
                    D::S(_) | D::E(..) | D::B(..) => eval(&to_dim(d), b).expect("symbolic input dims are bound"),
                    D::U => {
                        next_unknown += 1;
                        b.unknowns[next_unknown - 1]
                    }
                })
                .collect()
        })
        .collect()
}

fn name_value(name: &str, b: &Binding) -> u64 {
    *b.names.get(name).unwrap_or_else(|| panic!("an outcome names '{name}', which no input has"))
}

/// The value of an outcome's dim under a binding; `None` for an unknown dim.
fn eval(d: &Dim, b: &Binding) -> Option<u64> {
    match d {
        Dim::Known(k) => Some(*k),
        Dim::Sym(s) => Some(name_value(s, b)),
        Dim::Expr(p) => Some(name_value(&p.to_string(), b)),
        // The broadcast of several sizes: the one among them other than 1, or 1.
        Dim::Broadcast(names) => Some(names.iter().map(|n| name_value(n, b)).find(|&v| v != 1).unwrap_or(1)),
        Dim::Unknown => None,
    }
}

fn satisfied(c: &Condition, b: &Binding) -> bool {
    match &c.kind {
        ConditionKind::OneOf { dim, options } => {
            let v = eval(dim, b).expect("a condition names no unknown dim");
            options.iter().any(|o| eval(o, b) == Some(v))
        }
        ConditionKind::EqualOrOne { dims } => {
            let vs: Vec<u64> = dims.iter().map(|d| eval(d, b).expect("a condition names no unknown dim")).collect();
            vs.iter().all(|&x| vs.iter().all(|&y| x == y || x == 1 || y == 1))
        }
    }
}

/// Checks a symbolic outcome against the concrete outcome of every binding (`concrete` gives the concrete outcome
/// and the expected output shape, when the model knows it).
fn check_bindings(
    rule: &str,
    symbolic: &Outcome,
    shapes: &[Vec<D>],
    all: &[Binding],
    concrete: impl Fn(&[Vec<u64>]) -> (Outcome, Option<Vec<u64>>),
) {
    let has_unknown = shapes.iter().flatten().any(|d| matches!(d, D::U));
    for b in all {
        let bound = bind(shapes, &b);
        let (outcome, expected) = concrete(&bound);
        let bound_output: Option<Vec<u64>> = symbolic.output.dims().and_then(|ds| ds.iter().map(|d| eval(d, &b)).collect());
        let ctx = || format!("{rule}: {shapes:?} → {symbolic:?}; binding {:?} {:?} → {bound:?} → {outcome:?}", b.names, b.unknowns);
        match &symbolic.verdict {
            Verdict::Same | Verdict::Broadcast => {
                assert!(holds(&outcome), "claimed to hold, a binding does not: {}", ctx());
                if let (Some(out), Some(exp)) = (&bound_output, &expected) {
                    assert_eq!(out, exp, "output under the binding: {}", ctx());
                }
            }
            Verdict::Violation(_) => assert!(violated(&outcome), "claimed violated, a binding holds: {}", ctx()),
            Verdict::Conditional(conds) => {
                let ok = conds.iter().all(|c| satisfied(c, &b));
                if has_unknown {
                    // The conditions are necessary; unknown dims may add more.
                    if holds(&outcome) {
                        assert!(ok, "a binding holds without meeting the conditions: {}", ctx());
                    }
                } else {
                    assert_eq!(ok, holds(&outcome), "conditions decide the binding wrongly: {}", ctx());
                    if ok {
                        if let (Some(out), Some(exp)) = (&bound_output, &expected) {
                            assert_eq!(out, exp, "output under the binding: {}", ctx());
                        }
                    }
                }
            }
            Verdict::Unknown => {}
        }
    }
}

fn known(shape: &[u64]) -> Shape {
    Shape::known(shape)
}

fn multi_known(shapes: &[Vec<u64>]) -> Outcome {
    let owned: Vec<Shape> = shapes.iter().map(|s| known(s)).collect();
    multidirectional(&refs(&owned))
}

fn equal_known(shapes: &[Vec<u64>]) -> Outcome {
    let owned: Vec<Shape> = shapes.iter().map(|s| known(s)).collect();
    equal_shapes(&refs(&owned))
}

// ---------------------------------------------------------------------------------------------------------------

fuzz_target!(|input: Input| {
    let owned: Vec<Shape> = input.shapes.iter().map(to_shape).collect();
    let all = refs(&owned);
    let (a, b) = (&owned[0], owned.get(1).unwrap_or(&owned[0]));

    // Never panic, whatever the shapes.
    let multi = multidirectional(&all);
    let equal = equal_shapes(&all);
    let uni = unidirectional(a, b);
    let uni_rev = unidirectional(b, a);
    let legacy = legacy_axis(a, b, input.axis);
    let _ = legacy_axis(b, a, input.axis);
    let bi = bidirectional(a, b);
    let bi_rev = bidirectional(b, a);
    let _ = multidirectional(&[]);
    let _ = equal_shapes(&[]);
    for o in [&multi, &equal, &uni, &uni_rev, &legacy, &bi, &bi_rev] {
        let _ = format!("{:?} {}", o.verdict, o.output);
        for c in conditions(o) {
            assert!(!c.is_empty());
        }
    }

    // Commutativity.
    for p in permutations(owned.len()) {
        let permuted: Vec<Shape> = p.iter().map(|&i| owned[i].clone()).collect();
        let q = multidirectional(&refs(&permuted));
        assert_eq!(q.verdict.as_str(), multi.verdict.as_str(), "multidirectional: {owned:?} vs {permuted:?}");
        assert_eq!(q.output, multi.output, "multidirectional: {owned:?} vs {permuted:?}");
        assert_eq!(conditions(&q), conditions(&multi), "multidirectional: {owned:?} vs {permuted:?}");
    }
    assert_eq!(bi.output, bi_rev.output, "bidirectional output: {a:?} vs {b:?}");
    assert_eq!(holds(&bi), holds(&bi_rev), "bidirectional: {a:?} vs {b:?}: {bi:?} vs {bi_rev:?}");
    assert_eq!(violated(&bi), violated(&bi_rev), "bidirectional: {a:?} vs {b:?}: {bi:?} vs {bi_rev:?}");
    // Expand is multidirectional broadcasting of two shapes.
    let pair = multidirectional(&[a, b]);
    assert_eq!(bi.output, pair.output);
    assert_eq!(holds(&bi), holds(&pair));
    assert_eq!(violated(&bi), violated(&pair));

    let Some(ranked) = input.shapes.iter().cloned().collect::<Option<Vec<Vec<D>>>>() else {
        // An unknown rank decides nothing.
        assert_eq!(multi.verdict, Verdict::Unknown);
        return;
    };
    let (ra, rb) = (&ranked[0], ranked.get(1).unwrap_or(&ranked[0]));

    if let Some(concrete) = ranked
        .iter()
        .map(|s| s.iter().map(|d| if let D::K(k) = d { Some(*k) } else { None }).collect::<Option<Vec<u64>>>())
        .collect::<Option<Vec<Vec<u64>>>>()
    {
        // Everything known: the rules against the numpy model.
        let (ka, kb) = (&concrete[0], concrete.get(1).unwrap_or(&concrete[0]));
        match numpy(&concrete) {
            Some(out) => {
                assert!(holds(&multi), "multidirectional {concrete:?} → {multi:?}, numpy gives {out:?}");
                assert_eq!(multi.output, known(&out));
                let all_equal = concrete.iter().all(|s| s == &concrete[0]);
                assert_eq!(multi.verdict == Verdict::Same, all_equal, "{concrete:?} → {multi:?}");
            }
            None => assert!(violated(&multi), "multidirectional {concrete:?} → {multi:?}, numpy refuses"),
        }
        let identical = concrete.iter().all(|s| s == &concrete[0]);
        assert_eq!(holds(&equal), identical, "equal_shapes {concrete:?} → {equal:?}");
        assert_eq!(violated(&equal), !identical, "equal_shapes {concrete:?} → {equal:?}");
        let uni_expect = numpy(&[ka.clone(), kb.clone()]).as_ref() == Some(ka);
        assert_eq!(holds(&uni), uni_expect, "unidirectional {ka:?} {kb:?} → {uni:?}");
        assert_eq!(violated(&uni), !uni_expect, "unidirectional {ka:?} {kb:?} → {uni:?}");
        assert_eq!(uni.output, known(ka));
        let legacy_expect = legacy_model(ka, kb, input.axis);
        assert_eq!(holds(&legacy), legacy_expect, "legacy {ka:?} {kb:?} axis {:?} → {legacy:?}", input.axis);
        assert_eq!(violated(&legacy), !legacy_expect, "legacy {ka:?} {kb:?} axis {:?} → {legacy:?}", input.axis);
        match numpy(&[ka.clone(), kb.clone()]) {
            Some(out) => {
                assert!(holds(&bi), "bidirectional {ka:?} {kb:?} → {bi:?}");
                assert_eq!(bi.output, known(&out));
                assert_eq!(bi.verdict == Verdict::Same, &out == ka);
            }
            None => assert!(violated(&bi), "bidirectional {ka:?} {kb:?} → {bi:?}"),
        }
        return;
    }

    // Symbols: only with small known sizes (the bindings are small sizes too).
    if ranked.iter().flatten().any(|d| matches!(d, D::K(k) if *k > 4)) {
        return;
    }
    let two = [ra.clone(), rb.clone()];
    // Computed once for all the rules (the binding loop is most of the time of a run).
    let (of_all, of_two) = (bindings(&ranked), bindings(&two));
    check_bindings("multidirectional", &multi, &ranked, &of_all, |bound| (multi_known(bound), numpy(bound)));
    check_bindings("equal_shapes", &equal, &ranked, &of_all, |bound| (equal_known(bound), Some(bound[0].clone())));
    check_bindings("unidirectional", &uni, &two, &of_two, |bound| {
        (unidirectional(&known(&bound[0]), &known(&bound[1])), Some(bound[0].clone()))
    });
    check_bindings("legacy_axis", &legacy, &two, &of_two, |bound| {
        (legacy_axis(&known(&bound[0]), &known(&bound[1]), input.axis), Some(bound[0].clone()))
    });
    check_bindings("bidirectional", &bi, &two, &of_two, |bound| {
        (bidirectional(&known(&bound[0]), &known(&bound[1])), numpy(bound))
    });
});
