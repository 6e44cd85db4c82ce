//! The broadcast rules against independent models: a brute-force model of numpy broadcasting and of the legacy
//! `broadcast=1`/`axis` rule for known sizes, and for symbols a check of each verdict against every binding of the
//! symbols (and unknown dims) to small sizes. Used by tests/it/broadcast_props.rs (proptest), the fuzz target
//! `broadcast_algebra` and the replay of its regressions (tests/it/fuzz_regressions.rs).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use onnx_bcast::rules::{
    bidirectional, equal_shapes, legacy_axis, multidirectional, unidirectional, Condition, ConditionKind, Outcome,
    Verdict,
};
use onnx_bcast::sizes::shape::{Dim, Shape};
use onnx_bcast::sizes::sym::Poly;

/// The symbols a generated dim may name.
pub const SYMS: [&str; 3] = ["N", "M", "K"];

// ---------------------------------------------------------------------------------------------------------------
// The models of the rules on known sizes
// ---------------------------------------------------------------------------------------------------------------

/// numpy broadcasting, brute force: walk the axes from the right; on each, every size other than 1 must agree,
/// and the result is that size (1 when every input has 1 or no dim there).
pub fn numpy(shapes: &[Vec<u64>]) -> Option<Vec<u64>> {
    let rank = shapes.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![1u64; rank];
    for from_right in 0..rank {
        let mut size: Option<u64> = None;
        for shape in shapes {
            if from_right >= shape.len() {
                continue; // padded with a 1 on the left
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

/// The legacy `broadcast=1`/`axis` rule (OpenVINO's PDPD broadcast) on known shapes, from its statement: B's
/// trailing 1s dropped, the rest a contiguous run of A's dims from `axis` (default: B aligned to A's end), each B
/// size equal to A's or 1.
pub fn legacy_model(a: &[u64], b: &[u64], axis: Option<i64>) -> bool {
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

pub fn known(shape: &[u64]) -> Shape {
    Shape::known(shape)
}

pub fn refs(shapes: &[Shape]) -> Vec<&Shape> {
    shapes.iter().collect()
}

pub fn multi_known(shapes: &[Vec<u64>]) -> Outcome {
    let owned: Vec<Shape> = shapes.iter().map(|s| known(s)).collect();
    multidirectional(&refs(&owned))
}

pub fn equal_known(shapes: &[Vec<u64>]) -> Outcome {
    let owned: Vec<Shape> = shapes.iter().map(|s| known(s)).collect();
    equal_shapes(&refs(&owned))
}

pub fn holds(o: &Outcome) -> bool {
    matches!(o.verdict, Verdict::Same | Verdict::Broadcast)
}

pub fn violated(o: &Outcome) -> bool {
    matches!(o.verdict, Verdict::Violation(_))
}

pub fn permutations(n: usize) -> Vec<Vec<usize>> {
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

/// A conditional outcome's conditions as sorted text, for comparing the outcomes of the same shapes in another
/// order: `order[i]` is the original place of the outcome's input `i`, which an unknown dim's condition names.
pub fn conditions(o: &Outcome, order: &[usize]) -> Vec<String> {
    let mut v: Vec<String> = match &o.verdict {
        Verdict::Conditional(cs) => cs
            .iter()
            .map(|c| match &c.kind {
                ConditionKind::UnknownOneOf { input, options } => {
                    format!("{}: unknown of {} ∈ {options:?}", c.axis, order[*input])
                }
                _ => format!("{}: {c}", c.axis),
            })
            .collect(),
        _ => vec![],
    };
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------------------------------
// Generated dims and shapes
// ---------------------------------------------------------------------------------------------------------------

/// A dim as the generators describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum D {
    K(u64),
    /// `SYMS[sym]`.
    S(usize),
    /// `SYMS[sym] + offset`.
    E(usize, i64),
    /// The symbolic broadcast of two distinct symbols.
    B(usize, usize),
    U,
}

fn expr(sym: usize, offset: i64) -> Poly {
    Poly::atom(SYMS[sym]).add(&Poly::constant(offset)).expect("small offsets do not overflow")
}

pub fn to_dim(d: &D) -> Dim {
    match d {
        D::K(k) => Dim::Known(*k),
        D::S(s) => Dim::sym(SYMS[*s]),
        D::E(s, c) => Dim::from_poly(expr(*s, *c)),
        D::B(a, b) => Dim::Broadcast(vec![Arc::from(SYMS[*a]), Arc::from(SYMS[*b])].into()),
        D::U => Dim::Unknown,
    }
}

pub fn to_shape(dims: &[D]) -> Shape {
    Shape::ranked(dims.iter().map(to_dim).collect())
}

pub fn unknown_count(shapes: &[Vec<D>]) -> usize {
    shapes.iter().flatten().filter(|d| matches!(d, D::U)).count()
}

// ---------------------------------------------------------------------------------------------------------------
// Bindings
// ---------------------------------------------------------------------------------------------------------------

/// The sizes bindings try.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    /// The sizes of each symbol of [`SYMS`].
    pub symbols: [&'static [u64]; 3],
    /// The sizes of each of the first `unknowns` unknown dims; the later ones are 1.
    pub unknown_sizes: &'static [u64],
    pub unknowns: usize,
}

/// Sizes for every name a dim may carry (the symbols, and each expression by its text) and for each unknown dim.
#[derive(Clone, Debug)]
pub struct Binding {
    pub names: BTreeMap<String, u64>,
    pub unknowns: Vec<u64>,
}

/// Every binding of the grid in which every expression is a size (not negative) and every symbolic broadcast given
/// as an input exists (its parts agree where not 1).
pub fn bindings(shapes: &[Vec<D>], grid: Grid) -> Vec<Binding> {
    let unknown_count = unknown_count(shapes);
    let mut unknown_values: Vec<Vec<u64>> = vec![vec![]];
    for _ in 0..unknown_count.min(grid.unknowns) {
        unknown_values = unknown_values
            .into_iter()
            .flat_map(|v| grid.unknown_sizes.iter().map(move |&x| [v.clone(), vec![x]].concat()))
            .collect();
    }
    let mut out = Vec::new();
    for &n in grid.symbols[0] {
        for &m in grid.symbols[1] {
            'k: for &k in grid.symbols[2] {
                let base = [n, m, k];
                let mut names: BTreeMap<String, u64> = SYMS.iter().zip(base).map(|(s, v)| (s.to_string(), v)).collect();
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

/// The shapes with every dim bound to its size.
pub fn bind(shapes: &[Vec<D>], b: &Binding) -> Vec<Vec<u64>> {
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
pub fn eval(d: &Dim, b: &Binding) -> Option<u64> {
    match d {
        Dim::Known(k) => Some(*k),
        Dim::Sym(s) => Some(name_value(s, b)),
        Dim::Expr(p) => Some(name_value(&p.to_string(), b)),
        // The broadcast of several sizes: the one among them other than 1, or 1.
        Dim::Broadcast(names) => Some(names.iter().map(|n| name_value(n, b)).find(|&v| v != 1).unwrap_or(1)),
        Dim::Unknown => None,
    }
}

/// The bound size of the unknown dim of input `input` on output axis `axis`.
fn unknown_value(shapes: &[Vec<D>], input: usize, axis: usize, b: &Binding) -> u64 {
    let rank = shapes.iter().map(Vec::len).max().unwrap_or(0);
    let own = axis + shapes[input].len() - rank;
    let before: usize = shapes[..input].iter().flatten().filter(|d| matches!(d, D::U)).count()
        + shapes[input][..own].iter().filter(|d| matches!(d, D::U)).count();
    assert!(matches!(shapes[input][own], D::U), "the condition names an unknown dim");
    b.unknowns[before]
}

/// Whether a binding satisfies a condition.
pub fn satisfied(c: &Condition, shapes: &[Vec<D>], b: &Binding) -> bool {
    match &c.kind {
        ConditionKind::AtMost { dim, bound } => eval(dim, b) <= eval(bound, b),
        ConditionKind::UnknownOneOf { input, options } => {
            let v = unknown_value(shapes, *input, c.axis, b);
            options.iter().any(|o| eval(o, b) == Some(v))
        }
        ConditionKind::OneOf { dim, options } => {
            let v = eval(dim, b).expect("a condition names no unknown dim");
            options.iter().any(|o| eval(o, b) == Some(v))
        }
        ConditionKind::Divides { divisor, dim } => {
            let (d, n) = (eval(divisor, b).expect("a known divisor"), eval(dim, b).expect("a known dividend"));
            if d == 0 {
                n == 0
            } else {
                n % d == 0
            }
        }
        ConditionKind::EqualOrOne { dims } => {
            let vs: Vec<u64> = dims.iter().map(|d| eval(d, b).expect("a condition names no unknown dim")).collect();
            vs.iter().all(|&x| vs.iter().all(|&y| x == y || x == 1 || y == 1))
        }
        ConditionKind::AnyOf(parts) => {
            parts.iter().any(|kind| satisfied(&Condition { axis: c.axis, kind: kind.clone() }, shapes, b))
        }
    }
}

/// Checks a symbolic outcome of `rule` against the concrete outcome of every binding (`concrete` gives the
/// concrete outcome and the expected output shape, when the model knows it): Same/Broadcast hold for every binding
/// with the bound output; Violation is violated for every binding; Conditional holds exactly for the bindings
/// that satisfy its conditions, with the bound output (with unknown dims among the inputs the conditions are only
/// necessary: the unknown dims may add more).
pub fn check_bindings(
    rule: &str,
    symbolic: &Outcome,
    shapes: &[Vec<D>],
    all: &[Binding],
    concrete: impl Fn(&[Vec<u64>]) -> (Outcome, Option<Vec<u64>>),
) -> Result<(), String> {
    let has_unknown = unknown_count(shapes) > 0;
    for b in all {
        let bound = bind(shapes, b);
        let (outcome, expected) = concrete(&bound);
        let bound_output: Option<Vec<u64>> =
            symbolic.output.dims().and_then(|ds| ds.iter().map(|d| eval(d, b)).collect());
        let ctx = || {
            format!(
                "{rule}: {shapes:?} → {symbolic:?}; binding {:?} {:?} → {bound:?} → {outcome:?}",
                b.names, b.unknowns
            )
        };
        let output_agrees = |exact: bool| match (&bound_output, &expected) {
            (Some(out), Some(exp)) => out == exp,
            (out, exp) => !exact || out.is_none() == exp.is_none(),
        };
        match &symbolic.verdict {
            Verdict::Same | Verdict::Broadcast if !holds(&outcome) => {
                return Err(format!("claimed to hold, a binding does not: {}", ctx()))
            }
            Verdict::Same | Verdict::Broadcast if !output_agrees(false) => {
                return Err(format!("output under the binding {bound_output:?}, expected {expected:?}: {}", ctx()))
            }
            Verdict::Violation(_) if !violated(&outcome) => {
                return Err(format!("claimed violated, a binding holds: {}", ctx()))
            }
            Verdict::Conditional(conds) => {
                let ok = conds.iter().all(|c| satisfied(c, shapes, b));
                if has_unknown && holds(&outcome) && !ok {
                    return Err(format!("a binding holds without meeting the conditions: {}", ctx()));
                }
                if !has_unknown && ok != holds(&outcome) {
                    return Err(format!("the conditions decide the binding wrongly: {}", ctx()));
                }
                if !has_unknown && ok && !output_agrees(true) {
                    return Err(format!("output under the binding {bound_output:?}, expected {expected:?}: {}", ctx()));
                }
            }
            Verdict::Same | Verdict::Broadcast | Verdict::Violation(_) | Verdict::Unknown => {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// The fuzz target `broadcast_algebra`
// ---------------------------------------------------------------------------------------------------------------

/// The input of `broadcast_algebra`: 1–4 shapes (`None`: unknown rank) and a legacy axis. Its `Debug` form is the
/// text of a `.shapes` regression file ([`Input::parse`]), so `cargo fuzz fmt` prints one.
pub struct Input {
    pub shapes: Vec<Option<Vec<D>>>,
    pub axis: Option<i64>,
}

/// The grid of `broadcast_algebra`: K only 1 or 3, two unknown dims, to keep a run fast.
pub const FUZZ_GRID: Grid =
    Grid { symbols: [&[0, 1, 2, 3], &[0, 1, 2, 3], &[1, 3]], unknown_sizes: &[0, 1, 2], unknowns: 2 };

impl Input {
    /// A `.shapes` file: a shape per line, dims separated by commas (a size, `N`/`M`/`K`, `N+2` or `N-1`, `N|M`
    /// for the broadcast of two symbols, `?` for an unknown dim), an empty line for a scalar, `*` for an unknown
    /// rank; and optionally a line `axis: K`.
    pub fn parse(text: &str) -> Result<Input, String> {
        let sym = |t: &str| SYMS.iter().position(|s| *s == t.trim()).ok_or_else(|| format!("unknown symbol `{t}`"));
        let dim = |t: &str| -> Result<D, String> {
            let t = t.trim();
            if t == "?" {
                return Ok(D::U);
            }
            if let Ok(k) = t.parse() {
                return Ok(D::K(k));
            }
            if let Some((a, b)) = t.split_once('|') {
                return Ok(D::B(sym(a)?, sym(b)?));
            }
            if let Some(i) = t.find(['+', '-']) {
                let offset: i64 = t[i..].replace('+', "").parse().map_err(|_| format!("bad offset in `{t}`"))?;
                return Ok(D::E(sym(&t[..i])?, offset));
            }
            Ok(D::S(sym(t)?))
        };
        let mut input = Input { shapes: Vec::new(), axis: None };
        for line in text.lines() {
            match (line.strip_prefix("axis:"), line.trim()) {
                (Some(a), _) => input.axis = Some(a.trim().parse().map_err(|_| format!("bad axis `{a}`"))?),
                (None, "*") => input.shapes.push(None),
                (None, "") => input.shapes.push(Some(Vec::new())),
                (None, dims) => input.shapes.push(Some(dims.split(',').map(dim).collect::<Result<_, _>>()?)),
            }
        }
        if input.shapes.is_empty() {
            return Err("no shape".into());
        }
        Ok(input)
    }
}

impl fmt::Debug for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dim = |d: &D| match d {
            D::K(k) => k.to_string(),
            D::S(s) => SYMS[*s].to_string(),
            D::E(s, c) => format!("{}{c:+}", SYMS[*s]),
            D::B(a, b) => format!("{}|{}", SYMS[*a], SYMS[*b]),
            D::U => "?".to_string(),
        };
        for shape in &self.shapes {
            match shape {
                None => writeln!(f, "*")?,
                Some(dims) => writeln!(f, "{}", dims.iter().map(dim).collect::<Vec<_>>().join(","))?,
            }
        }
        match self.axis {
            Some(axis) => writeln!(f, "axis: {axis}"),
            None => Ok(()),
        }
    }
}

fn input_shape(s: &Option<Vec<D>>) -> Shape {
    match s {
        None => Shape::unranked(),
        Some(dims) => to_shape(dims),
    }
}

/// The fuzz target `broadcast_algebra` on one input; panics on the first disagreement:
///
/// - no rule panics, whatever the shapes and the legacy axis (any i64);
/// - multidirectional is commutative (verdict, output and conditions); bidirectional is commutative in its output
///   and in whether it holds, and agrees with multidirectional on two shapes;
/// - where every dim is known, each rule agrees with [`numpy`] and [`legacy_model`];
/// - with symbols, every verdict agrees with every binding ([`check_bindings`] on [`FUZZ_GRID`]).
pub fn broadcast_algebra(input: &Input) {
    let owned: Vec<Shape> = input.shapes.iter().map(input_shape).collect();
    let outcomes = Outcomes::of(&owned, input.axis);
    outcomes.commute(&owned);
    let Some(ranked) = input.shapes.iter().cloned().collect::<Option<Vec<Vec<D>>>>() else {
        // An unknown rank decides nothing.
        assert_eq!(outcomes.multi.verdict, Verdict::Unknown);
        return;
    };
    let concrete = ranked
        .iter()
        .map(|s| s.iter().map(|d| if let D::K(k) = d { Some(*k) } else { None }).collect::<Option<Vec<u64>>>())
        .collect::<Option<Vec<Vec<u64>>>>();
    match concrete {
        Some(concrete) => outcomes.against_models(&concrete, input.axis),
        // Symbols: only with small known sizes (the bindings are small sizes too).
        None if ranked.iter().flatten().any(|d| matches!(d, D::K(k) if *k > 4)) => {}
        None => outcomes.against_bindings(&ranked, input.axis),
    }
}

/// Every rule on the input's shapes (A and B: the first two, or the first twice).
struct Outcomes {
    multi: Outcome,
    equal: Outcome,
    uni: Outcome,
    legacy: Outcome,
    bi: Outcome,
}

impl Outcomes {
    fn of(owned: &[Shape], axis: Option<i64>) -> Outcomes {
        let all = refs(owned);
        let (a, b) = (&owned[0], owned.get(1).unwrap_or(&owned[0]));
        let outcomes = Outcomes {
            multi: multidirectional(&all),
            equal: equal_shapes(&all),
            uni: unidirectional(a, b),
            legacy: legacy_axis(a, b, axis),
            bi: bidirectional(a, b),
        };
        // Never panic, whatever the shapes; every condition says something.
        let others = [unidirectional(b, a), legacy_axis(b, a, axis), multidirectional(&[]), equal_shapes(&[])];
        for o in
            [&outcomes.multi, &outcomes.equal, &outcomes.uni, &outcomes.legacy, &outcomes.bi].into_iter().chain(&others)
        {
            let _ = format!("{:?} {}", o.verdict, o.output);
            if let Verdict::Conditional(cs) = &o.verdict {
                assert!(cs.iter().all(|c| !c.to_string().is_empty()), "{o:?}");
            }
        }
        outcomes
    }

    fn commute(&self, owned: &[Shape]) {
        let multi = &self.multi;
        let identity: Vec<usize> = (0..owned.len()).collect();
        for p in permutations(owned.len()) {
            let permuted: Vec<Shape> = p.iter().map(|&i| owned[i].clone()).collect();
            let q = multidirectional(&refs(&permuted));
            assert_eq!(q.verdict.as_str(), multi.verdict.as_str(), "multidirectional: {owned:?} vs {permuted:?}");
            assert_eq!(q.output, multi.output, "multidirectional: {owned:?} vs {permuted:?}");
            let (these, those) = (conditions(&q, &p), conditions(multi, &identity));
            assert_eq!(these, those, "multidirectional: {owned:?} vs {permuted:?}");
        }
        let (a, b) = (&owned[0], owned.get(1).unwrap_or(&owned[0]));
        let (bi, bi_rev) = (&self.bi, &bidirectional(b, a));
        assert_eq!(bi.output, bi_rev.output, "bidirectional output: {a:?} vs {b:?}");
        assert_eq!(holds(bi), holds(bi_rev), "bidirectional: {a:?} vs {b:?}: {bi:?} vs {bi_rev:?}");
        assert_eq!(violated(bi), violated(bi_rev), "bidirectional: {a:?} vs {b:?}: {bi:?} vs {bi_rev:?}");
        // Expand is multidirectional broadcasting of two shapes.
        let pair = multidirectional(&[a, b]);
        assert_eq!(bi.output, pair.output);
        assert_eq!(holds(bi), holds(&pair));
        assert_eq!(violated(bi), violated(&pair));
    }

    /// Everything known: the rules against the numpy and legacy models.
    fn against_models(&self, concrete: &[Vec<u64>], axis: Option<i64>) {
        let (ka, kb) = (&concrete[0], concrete.get(1).unwrap_or(&concrete[0]));
        let Outcomes { multi, equal, uni, legacy, bi } = self;
        let identical = concrete.iter().all(|s| s == &concrete[0]);
        match numpy(concrete) {
            Some(out) => {
                assert!(holds(multi), "multidirectional {concrete:?} → {multi:?}, numpy gives {out:?}");
                assert_eq!(multi.output, known(&out));
                assert_eq!(multi.verdict == Verdict::Same, identical, "{concrete:?} → {multi:?}");
            }
            None => assert!(violated(multi), "multidirectional {concrete:?} → {multi:?}, numpy refuses"),
        }
        assert_eq!(holds(equal), identical, "equal_shapes {concrete:?} → {equal:?}");
        assert_eq!(violated(equal), !identical, "equal_shapes {concrete:?} → {equal:?}");
        let pair = numpy(&[ka.clone(), kb.clone()]);
        let uni_expect = pair.as_ref() == Some(ka);
        assert_eq!(holds(uni), uni_expect, "unidirectional {ka:?} {kb:?} → {uni:?}");
        assert_eq!(violated(uni), !uni_expect, "unidirectional {ka:?} {kb:?} → {uni:?}");
        assert_eq!(uni.output, known(ka));
        let legacy_expect = legacy_model(ka, kb, axis);
        assert_eq!(holds(legacy), legacy_expect, "legacy {ka:?} {kb:?} axis {axis:?} → {legacy:?}");
        assert_eq!(violated(legacy), !legacy_expect, "legacy {ka:?} {kb:?} axis {axis:?} → {legacy:?}");
        match pair {
            Some(out) => {
                assert!(holds(bi), "bidirectional {ka:?} {kb:?} → {bi:?}");
                assert_eq!(bi.output, known(&out));
                assert_eq!(bi.verdict == Verdict::Same, &out == ka);
            }
            None => assert!(violated(bi), "bidirectional {ka:?} {kb:?} → {bi:?}"),
        }
    }

    /// Symbols: every rule against every binding.
    fn against_bindings(&self, ranked: &[Vec<D>], axis: Option<i64>) {
        let two = [ranked[0].clone(), ranked.get(1).unwrap_or(&ranked[0]).clone()];
        // Computed once for all the rules (the binding loop is most of the time of a run).
        let (of_all, of_two) = (bindings(ranked, FUZZ_GRID), bindings(&two, FUZZ_GRID));
        let first = |bound: &[Vec<u64>]| Some(bound[0].clone());
        let results = [
            check_bindings("multidirectional", &self.multi, ranked, &of_all, |bound| {
                (multi_known(bound), numpy(bound))
            }),
            check_bindings("equal_shapes", &self.equal, ranked, &of_all, |bound| (equal_known(bound), first(bound))),
            check_bindings("unidirectional", &self.uni, &two, &of_two, |bound| {
                (unidirectional(&known(&bound[0]), &known(&bound[1])), first(bound))
            }),
            check_bindings("legacy_axis", &self.legacy, &two, &of_two, |bound| {
                (legacy_axis(&known(&bound[0]), &known(&bound[1]), axis), first(bound))
            }),
            check_bindings("bidirectional", &self.bi, &two, &of_two, |bound| {
                (bidirectional(&known(&bound[0]), &known(&bound[1])), numpy(bound))
            }),
        ];
        for result in results {
            if let Err(message) = result {
                panic!("{message}");
            }
        }
    }
}
