//! The broadcast rules of every system in the specification, as pure functions on shapes.
//!
//! Each rule answers with an [`Outcome`]: the result shape and one of three verdicts (holds, violated for a named
//! input and axis, or holds only under conditions on symbols), plus "unknown" where dims are missing. A known size
//! never silently wins over a symbol, and two different symbols are never taken to be equal.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::shape::{Dim, Shape};

/// Which broadcasting system a site follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// numpy broadcasting of any number of inputs (ONNX `Add` … `Xor`, `Where`, variadic ops from opset 8).
    Multidirectional,
    /// One input broadcast towards a fixed target (Gemm's C, PRelu's slope).
    Unidirectional,
    /// The opset 1–6 `broadcast=1`/`axis` form: B is a contiguous run of A's dims starting at `axis`.
    LegacyAxis,
    /// `Expand`: numpy broadcasting of a tensor and a target shape; the result may exceed the target.
    Bidirectional,
    /// No implicit broadcast allowed: the shapes must be equal.
    None,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Multidirectional => "multidirectional",
            Rule::Unidirectional => "unidirectional",
            Rule::LegacyAxis => "legacy-axis",
            Rule::Bidirectional => "bidirectional",
            Rule::None => "none",
        }
    }
}

/// What a rule concluded about a set of shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub output: Shape,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every input already has the output shape.
    Same,
    /// The rule holds and at least one input is broadcast.
    Broadcast,
    /// The rule is false for one input on one axis (constraint C1 of the SONNX spec).
    Violation(Violation),
    /// The rule holds exactly when every condition holds.
    Conditional(Vec<Condition>),
    /// Missing dims keep the rule from being decided.
    Unknown,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Same => "same",
            Verdict::Broadcast => "broadcast",
            Verdict::Violation(_) => "violation",
            Verdict::Conditional(_) => "conditional",
            Verdict::Unknown => "unknown",
        }
    }
}

/// The input and axis for which a rule fails.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Index of the offending input among the shapes given to the rule.
    pub input: usize,
    /// The offending axis in output coordinates (in A's coordinates for the legacy rule); `None` when the problem
    /// is the rank itself.
    pub axis: Option<usize>,
    pub kind: ViolationKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ViolationKind {
    /// `found` on the offending input, where input `against` has `expected`; neither is 1 (or, for one-way rules,
    /// the broadcast input's size is not 1).
    Mismatch { found: Dim, expected: Dim, against: usize },
    /// A one-way input has more dims than its target.
    RankTooLarge { rank: usize, target_rank: usize },
    /// Equal shapes are required and the ranks differ.
    RankDiffers { rank: usize, expected: usize },
    /// The legacy `axis` is negative (other than the default -1) or B does not fit in A from it.
    AxisOutOfRange { axis: i64, len: usize, target_rank: usize },
    /// Conditions on the same symbol, from different axes, that no value satisfies.
    Unsatisfiable { symbol: Arc<str>, first: Vec<u64>, second: Vec<u64> },
}

/// A condition on symbols under which a site holds, tied to the output axis it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub axis: usize,
    pub kind: ConditionKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ConditionKind {
    /// `dim` must take one of `options` (sorted, distinct): "N ∈ {1, 3}", or "N = 3" for one option.
    OneOf { dim: Dim, options: Vec<Dim> },
    /// Every pair of these dims is equal unless one of them is 1: "M, N equal or 1".
    EqualOrOne { dims: Vec<Dim> },
    /// The dim of rule input `input` on the condition's axis is unknown (its rank is known) and must take one of
    /// `options`: an unnamed size against a fixed one is a condition like a named symbol.
    UnknownOneOf { input: usize, options: Vec<Dim> },
    /// `dim` must not exceed `bound`: a size capped as `min(c, N)` (a slice of a fixed-size buffer up to a
    /// symbolic length) meets `N` itself, and they agree exactly when `N ≤ c`.
    AtMost { dim: Dim, bound: Dim },
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ConditionKind::OneOf { dim, options } if options.len() == 1 => {
                write!(f, "{dim} = {}", options[0])
            }
            ConditionKind::OneOf { dim, options } => {
                let opts: Vec<String> = options.iter().map(Dim::to_string).collect();
                write!(f, "{dim} ∈ {{{}}}", opts.join(", "))
            }
            ConditionKind::AtMost { dim, bound } => write!(f, "{dim} ≤ {bound}"),
            ConditionKind::UnknownOneOf { input, options } => {
                let opts: Vec<String> = options.iter().map(Dim::to_string).collect();
                write!(f, "input {input}'s unknown dim on axis {} ∈ {{{}}}", self.axis, opts.join(", "))
            }
            ConditionKind::EqualOrOne { dims } => {
                let names: Vec<String> = dims.iter().map(Dim::to_string).collect();
                match names.as_slice() {
                    [a, b] => write!(f, "{a} = {b} or one of them is 1"),
                    _ => write!(f, "{} are equal wherever they are not 1", names.join(", ")),
                }
            }
        }
    }
}

/// What one axis contributes while a rule is evaluated.
enum AxisStatus {
    Holds,
    Unknown,
    Conditions(Vec<ConditionKind>),
}

/// Collects per-axis results into a verdict; the first violation ends evaluation.
#[derive(Default)]
struct Tally {
    unknown: bool,
    conditions: Vec<Condition>,
}

impl Tally {
    fn add(&mut self, axis: usize, status: AxisStatus) {
        match status {
            AxisStatus::Holds => {}
            AxisStatus::Unknown => self.unknown = true,
            AxisStatus::Conditions(kinds) => {
                self.conditions.extend(kinds.into_iter().map(|kind| Condition { axis, kind }))
            }
        }
    }

    /// Conditional outranks unknown: the conditions known so far are worth stating even if some axis is open.
    fn verdict(self, same: bool) -> Verdict {
        if let Some(v) = contradiction(&self.conditions) {
            return Verdict::Violation(v);
        }
        if !self.conditions.is_empty() {
            Verdict::Conditional(self.conditions)
        } else if self.unknown {
            Verdict::Unknown
        } else if same {
            Verdict::Same
        } else {
            Verdict::Broadcast
        }
    }
}

/// Two axes that pin the same symbol to disjoint sets of sizes make the site unsatisfiable.
fn contradiction(conditions: &[Condition]) -> Option<Violation> {
    let mut seen: BTreeMap<&Dim, (usize, Vec<u64>)> = BTreeMap::new();
    for cond in conditions {
        let ConditionKind::OneOf { dim: name, options } = &cond.kind else {
            continue;
        };
        let Some(sizes) = options.iter().map(Dim::known).collect::<Option<Vec<u64>>>() else {
            continue;
        };
        match seen.get_mut(name) {
            None => {
                seen.insert(name, (cond.axis, sizes));
            }
            Some((_, allowed)) => {
                let both: Vec<u64> = allowed.iter().copied().filter(|s| sizes.contains(s)).collect();
                if both.is_empty() {
                    return Some(Violation {
                        input: 0,
                        axis: Some(cond.axis),
                        kind: ViolationKind::Unsatisfiable {
                            symbol: Arc::from(name.to_string()),
                            first: allowed.clone(),
                            second: sizes,
                        },
                    });
                }
                *allowed = both;
            }
        }
    }
    None
}

fn sorted_dims(mut dims: Vec<Dim>) -> Vec<Dim> {
    dims.sort();
    dims.dedup();
    dims
}

/// The symbolic broadcast of several distinct non-1 symbolic dims.
pub fn symbolic_broadcast(dims: &[&Dim]) -> Dim {
    let mut names: Vec<Arc<str>> = dims.iter().flat_map(|d| d.broadcast_names()).collect();
    names.sort();
    names.dedup();
    if names.len() == 1 {
        Dim::Sym(names.pop().expect("one name"))
    } else {
        Dim::Broadcast(names.into())
    }
}

/// numpy (multidirectional) broadcasting of any number of shapes.
pub fn multidirectional(inputs: &[&Shape]) -> Outcome {
    let Some(ranked) = inputs.iter().map(|s| s.dims()).collect::<Option<Vec<&[Dim]>>>() else {
        return Outcome { output: Shape::unranked(), verdict: Verdict::Unknown };
    };
    let rank = ranked.iter().map(|d| d.len()).max().unwrap_or(0);
    let mut output = Vec::with_capacity(rank);
    let mut tally = Tally::default();
    let mut column: Vec<(usize, &Dim)> = Vec::with_capacity(ranked.len());
    for axis in 0..rank {
        // Inputs with fewer dims are padded with 1s on the left, which never constrain an axis.
        column.clear();
        column.extend(
            ranked
                .iter()
                .enumerate()
                .filter_map(|(m, dims)| (axis + dims.len()).checked_sub(rank).map(|i| (m, &dims[i]))),
        );
        match merge_axis(&column) {
            Ok((dim, status)) => {
                output.push(dim);
                tally.add(axis, status);
            }
            Err((input, found, against, expected)) => {
                let kind = ViolationKind::Mismatch { found, expected, against };
                let verdict = Verdict::Violation(Violation { input, axis: Some(axis), kind });
                return Outcome { output: Shape::unranked(), verdict };
            }
        }
    }
    let output = Shape::ranked(output);
    let same = inputs.iter().all(|s| s.provably_eq(&output));
    Outcome { verdict: tally.verdict(same), output }
}

type Mismatch = (usize, Dim, usize, Dim);

/// The first known size other than 1 in a column, by input; two different ones are a mismatch.
fn first_known(column: &[(usize, &Dim)]) -> Result<Option<(usize, u64)>, Mismatch> {
    let mut first: Option<(usize, u64)> = None;
    for &(m, d) in column {
        if let Dim::Known(k) = *d {
            if k == 1 {
                continue;
            }
            match first {
                None => first = Some((m, k)),
                Some((m0, k0)) if k0 != k => return Err((m, Dim::Known(k), m0, Dim::Known(k0))),
                Some(_) => {}
            }
        }
    }
    Ok(first)
}

/// One output axis of numpy broadcasting: the resulting dim and what must hold for it.
fn merge_axis(column: &[(usize, &Dim)]) -> Result<(Dim, AxisStatus), Mismatch> {
    let first_known = first_known(column)?;
    // The common case, every size known: the size other than 1, or 1; nothing to allocate.
    if column.iter().all(|(_, d)| matches!(d, Dim::Known(_))) {
        return Ok((Dim::Known(first_known.map_or(1, |(_, k)| k)), AxisStatus::Holds));
    }
    if let Some(simpler) = assuming_sizes(column) {
        let refs: Vec<(usize, &Dim)> = simpler.iter().map(|(m, d)| (*m, d)).collect();
        return merge_axis(&refs);
    }
    let has_unknown = column.iter().any(|(_, d)| matches!(d, Dim::Unknown));
    let mut symbolic: Vec<&Dim> = column.iter().map(|&(_, d)| d).filter(|d| d.is_symbolic()).collect();
    symbolic.sort();
    symbolic.dedup();

    if let Some((_, k)) = first_known {
        // Every symbol here must be 1 or k; an unknown dim likewise, which nothing can promise.
        // A symbolic broadcast is 1 or k exactly when each of its parts is.
        let mut constrained: Vec<Dim> = symbolic
            .iter()
            .flat_map(|d| match d {
                Dim::Broadcast(names) => names.iter().map(|n| Dim::Sym(n.clone())).collect(),
                other => vec![(*other).clone()],
            })
            .collect();
        constrained.sort();
        constrained.dedup();
        let options = sorted_dims(vec![Dim::Known(1), Dim::Known(k)]);
        let mut conditions: Vec<ConditionKind> =
            constrained.into_iter().map(|dim| ConditionKind::OneOf { dim, options: options.clone() }).collect();
        // An unknown dim of a known rank is constrained the same way, named by its input.
        conditions.extend(
            column
                .iter()
                .filter(|(_, d)| matches!(d, Dim::Unknown))
                .map(|&(input, _)| ConditionKind::UnknownOneOf { input, options: options.clone() }),
        );
        let status = if conditions.is_empty() { AxisStatus::Holds } else { AxisStatus::Conditions(conditions) };
        return Ok((Dim::Known(k), status));
    }
    if has_unknown {
        let unknowns = column.iter().filter(|(_, d)| matches!(d, Dim::Unknown)).count();
        let status = if unknowns == 1 && symbolic.is_empty() { AxisStatus::Holds } else { AxisStatus::Unknown };
        return Ok((Dim::Unknown, status));
    }
    // A symbolic broadcast exists only because its parts fit together: each part, and any broadcast of some of
    // them, fits it too.
    if let Some(widest) = symbolic.iter().find(|d| matches!(d, Dim::Broadcast(_))) {
        let names = widest.broadcast_names();
        if symbolic.iter().all(|d| d.broadcast_names().iter().all(|n| names.contains(n))) {
            return Ok(((*widest).clone(), AxisStatus::Holds));
        }
    }
    if let Some((dim, conditions)) = capped(&symbolic) {
        return Ok((dim, AxisStatus::Conditions(conditions)));
    }
    match symbolic.len() {
        0 => Ok((Dim::Known(1), AxisStatus::Holds)),
        1 => Ok((symbolic[0].clone(), AxisStatus::Holds)),
        _ => {
            let dims = symbolic.iter().map(|d| (*d).clone()).collect();
            Ok((symbolic_broadcast(&symbolic), AxisStatus::Conditions(vec![ConditionKind::EqualOrOne { dims }])))
        }
    }
}

/// The column with `max(0, q)` read as `q` where `q` is itself a dim of the column: when the op runs, every input
/// exists, so each of its sizes is at least 0 (a `q` that is the size of one input cannot be negative, and then
/// the other input's `max(0, q)` is `q`). `None` when nothing changes.
fn assuming_sizes(column: &[(usize, &Dim)]) -> Option<Vec<(usize, Dim)>> {
    let clamped = |d: &Dim| -> Option<crate::sym::Poly> {
        let Dim::Expr(p) = d else { return None };
        let args = p.max_args()?;
        let [a, b] = args else { return None };
        let (zero, q) = if a.as_constant() == Some(0) { (a, b) } else { (b, a) };
        (zero.as_constant() == Some(0)).then(|| q.clone())
    };
    if !column.iter().any(|(_, d)| clamped(d).is_some()) {
        return None;
    }
    let sizes: Vec<crate::sym::Poly> = column.iter().filter_map(|(_, d)| d.to_poly()).collect();
    let mut changed = false;
    let out = column
        .iter()
        .map(|&(m, d)| match clamped(d) {
            Some(q) if sizes.contains(&q) => {
                changed = true;
                (m, Dim::from_poly(q))
            }
            _ => (m, d.clone()),
        })
        .collect();
    changed.then_some(out)
}

/// Symbolic dims that are all `N` or `min(c, N)` for constants c ≥ 2: `min(c, N)` is `N` when `N ≤ c`, and
/// otherwise the constant c, which meets `N > c` as neither equal nor 1. So the axis holds exactly when `N` is at
/// most the least such c, and is then `N`.
fn capped(symbolic: &[&Dim]) -> Option<(Dim, Vec<ConditionKind>)> {
    if symbolic.len() < 2 {
        return None;
    }
    let polys: Vec<crate::sym::Poly> = symbolic.iter().map(|d| d.to_poly()).collect::<Option<_>>()?;
    for (i, base) in polys.iter().enumerate() {
        let mut bound: Option<i64> = None;
        let all_capped = polys.iter().enumerate().filter(|&(j, _)| j != i).all(|(_, p)| {
            let Some(args) = p.min_args() else { return false };
            let mut consts = args.iter().filter_map(crate::sym::Poly::as_constant);
            let cap = consts.clone().min();
            let fits = args.len() == 2 && args.contains(base) && consts.all(|c| c >= 2);
            if let (true, Some(c)) = (fits, cap) {
                bound = Some(bound.map_or(c, |b| b.min(c)));
            }
            fits
        });
        if let (true, Some(c)) = (all_capped, bound) {
            let dim = symbolic[i].clone();
            let cond = ConditionKind::AtMost { dim: dim.clone(), bound: Dim::Known(c as u64) };
            return Some((dim, vec![cond]));
        }
    }
    None
}

/// One axis where input `b` is broadcast one way onto the target size `a`.
fn one_way_axis(a: &Dim, b: &Dim) -> Result<AxisStatus, (Dim, Dim)> {
    if b.is_one() || b.provably_eq(a) {
        return Ok(AxisStatus::Holds);
    }
    Ok(match (a, b) {
        (Dim::Known(_), Dim::Known(_)) => return Err((b.clone(), a.clone())),
        (Dim::Unknown, _) | (_, Dim::Unknown) => AxisStatus::Unknown,
        // The target is symbolic and b is a fixed size other than 1: the target must be exactly that size.
        (_, Dim::Known(_)) => {
            AxisStatus::Conditions(vec![ConditionKind::OneOf { dim: a.clone(), options: vec![b.clone()] }])
        }
        _ => AxisStatus::Conditions(vec![ConditionKind::OneOf {
            dim: b.clone(),
            options: sorted_dims(vec![Dim::Known(1), a.clone()]),
        }]),
    })
}

/// Unidirectional broadcasting of `b` (input index 1) towards the fixed shape `a` (input index 0).
pub fn unidirectional(a: &Shape, b: &Shape) -> Outcome {
    let (Some(ad), Some(bd)) = (a.dims(), b.dims()) else {
        return Outcome { output: a.clone(), verdict: Verdict::Unknown };
    };
    if bd.len() > ad.len() {
        let kind = ViolationKind::RankTooLarge { rank: bd.len(), target_rank: ad.len() };
        return Outcome { output: a.clone(), verdict: Verdict::Violation(Violation { input: 1, axis: None, kind }) };
    }
    let offset = ad.len() - bd.len();
    let mut tally = Tally::default();
    for (j, bdim) in bd.iter().enumerate() {
        let axis = offset + j;
        match one_way_axis(&ad[axis], bdim) {
            Ok(status) => tally.add(axis, status),
            Err((found, expected)) => {
                let kind = ViolationKind::Mismatch { found, expected, against: 0 };
                let verdict = Verdict::Violation(Violation { input: 1, axis: Some(axis), kind });
                return Outcome { output: a.clone(), verdict };
            }
        }
    }
    Outcome { verdict: tally.verdict(a.provably_eq(b)), output: a.clone() }
}

/// The opset 1–6 `broadcast=1` form: B (input 1) is matched against A's dims from `axis` on (default: the
/// suffix), B's trailing 1s are ignored, and B's 1s broadcast. The axis is reported in A's coordinates.
pub fn legacy_axis(a: &Shape, b: &Shape, axis: Option<i64>) -> Outcome {
    let (Some(ad), Some(bd)) = (a.dims(), b.dims()) else {
        return Outcome { output: a.clone(), verdict: Verdict::Unknown };
    };
    let violation =
        |axis, kind| Outcome { output: a.clone(), verdict: Verdict::Violation(Violation { input: 1, axis, kind }) };
    if bd.len() > ad.len() {
        return violation(None, ViolationKind::RankTooLarge { rank: bd.len(), target_rank: ad.len() });
    }
    let trimmed = bd.len() - bd.iter().rev().take_while(|d| d.is_one()).count();
    let start = match axis {
        None | Some(-1) => (ad.len() - bd.len()) as i64,
        Some(x) => x,
    };
    // B's dims that run past A's end fit only by being trailing 1s: a known size there is out of range, while a
    // symbol there holds exactly when it is 1 (an unknown dim leaves the site undecided).
    let fit = if start < 0 { 0 } else { trimmed.min(ad.len().saturating_sub(start as usize)) };
    let overflow = &bd[fit..trimmed];
    if start < 0 || start as usize > ad.len() || overflow.iter().any(|d| d.known().is_some_and(|k| k != 1)) {
        return violation(None, ViolationKind::AxisOutOfRange { axis: start, len: trimmed, target_rank: ad.len() });
    }
    let start = start as usize;
    let mut tally = Tally::default();
    for d in overflow.iter().filter(|d| !d.is_one()) {
        let status = match d {
            Dim::Unknown => AxisStatus::Unknown,
            _ => AxisStatus::Conditions(vec![ConditionKind::OneOf { dim: d.clone(), options: vec![Dim::Known(1)] }]),
        };
        // Past A's end there is no axis of its own: the condition is tied to A's last axis.
        tally.add(ad.len() - 1, status);
    }
    for (j, bdim) in bd[..fit].iter().enumerate() {
        match one_way_axis(&ad[start + j], bdim) {
            Ok(status) => tally.add(start + j, status),
            Err((found, expected)) => {
                return violation(Some(start + j), ViolationKind::Mismatch { found, expected, against: 0 })
            }
        }
    }
    Outcome { verdict: tally.verdict(a.provably_eq(b)), output: a.clone() }
}

/// No broadcasting: every shape must equal the first.
pub fn equal_shapes(inputs: &[&Shape]) -> Outcome {
    let Some(ranked) = inputs.iter().map(|s| s.dims()).collect::<Option<Vec<&[Dim]>>>() else {
        let output = inputs.first().map(|s| (*s).clone()).unwrap_or_default();
        return Outcome { output, verdict: Verdict::Unknown };
    };
    let Some(first) = ranked.first() else {
        return Outcome { output: Shape::unranked(), verdict: Verdict::Unknown };
    };
    if let Some(m) = ranked.iter().position(|d| d.len() != first.len()) {
        let kind = ViolationKind::RankDiffers { rank: ranked[m].len(), expected: first.len() };
        return Outcome {
            output: inputs[0].clone(),
            verdict: Verdict::Violation(Violation { input: m, axis: None, kind }),
        };
    }
    let mut tally = Tally::default();
    let mut output = Vec::with_capacity(first.len());
    for axis in 0..first.len() {
        // The most specific dim of the column stands for it: a known size, else a symbol, else unknown.
        let column: Vec<&Dim> = ranked.iter().map(|d| &d[axis]).collect();
        let pick = column
            .iter()
            .position(|d| d.known().is_some())
            .or_else(|| column.iter().position(|d| !matches!(d, Dim::Unknown)))
            .unwrap_or(0);
        let target = column[pick];
        for (m, d) in column.iter().enumerate() {
            if m == pick || d.provably_eq(target) {
                continue;
            }
            match (target, *d) {
                (Dim::Known(_), Dim::Known(_)) => {
                    let kind = ViolationKind::Mismatch { found: (*d).clone(), expected: target.clone(), against: pick };
                    return Outcome {
                        output: inputs[0].clone(),
                        verdict: Verdict::Violation(Violation { input: m, axis: Some(axis), kind }),
                    };
                }
                (Dim::Unknown, _) | (_, Dim::Unknown) => tally.add(axis, AxisStatus::Unknown),
                _ => tally.add(
                    axis,
                    AxisStatus::Conditions(vec![ConditionKind::OneOf {
                        dim: (*d).clone(),
                        options: vec![target.clone()],
                    }]),
                ),
            }
        }
        output.push(target.clone());
    }
    let output = Shape::ranked(output);
    let same = inputs.iter().all(|s| s.provably_eq(&output));
    Outcome { verdict: tally.verdict(same), output }
}

/// `Expand`: numpy broadcasting of the data shape (input 0) and the target shape (input 1). The verdict is
/// `Same` when the expansion changes nothing.
pub fn bidirectional(data: &Shape, target: &Shape) -> Outcome {
    let outcome = multidirectional(&[data, target]);
    let verdict = match outcome.verdict {
        Verdict::Same | Verdict::Broadcast if data.provably_eq(&outcome.output) => Verdict::Same,
        Verdict::Same => Verdict::Broadcast,
        other => other,
    };
    Outcome { verdict, ..outcome }
}
/// For each element of the output (row-major), the index of its source element. `source` dims are aligned to
/// the output numpy-style (right-aligned), and are 1 or equal to the output's on every axis.
pub fn broadcast_index(source: &[u64], out: &[u64]) -> Option<Vec<usize>> {
    if source.len() > out.len() {
        return None;
    }
    let mut padded = vec![1u64; out.len() - source.len()];
    padded.extend_from_slice(source);
    if padded.iter().zip(out).any(|(&s, &o)| s != 1 && s != o) {
        return None;
    }
    let count = out.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))?;
    // Stride of each source axis, 0 where it is broadcast.
    let mut strides = vec![0usize; out.len()];
    let mut stride = 1usize;
    for axis in (0..out.len()).rev() {
        if padded[axis] != 1 {
            strides[axis] = stride;
        }
        stride = stride.checked_mul(padded[axis] as usize)?;
    }
    let mut index = Vec::with_capacity(count);
    let mut counter = vec![0u64; out.len()];
    for _ in 0..count {
        index.push(counter.iter().zip(&strides).map(|(&c, &s)| c as usize * s).sum());
        for axis in (0..out.len()).rev() {
            counter[axis] += 1;
            if counter[axis] < out[axis] {
                break;
            }
            counter[axis] = 0;
        }
    }
    Some(index)
}
