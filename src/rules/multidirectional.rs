//! Multidirectional (numpy) broadcasting.
//!
//! ONNX `docs/Broadcasting.md`, "Multidirectional Broadcasting": "a set of tensors are multidirectional
//! broadcastable to the same shape if one of the following is true: The tensors all have exactly the same shape.
//! The tensors all have the same number of dimensions and the length of each dimensions is either a common length
//! or 1. The tensors that have too few dimensions can have their shapes prepended with a dimension of length 1 to
//! satisfy property 2." The SONNX profile's `Broadcast` spec states it as constraint C1: every padded dimension is
//! either the largest one of its axis or 1. Where a dimension is 0, numpy wins: 0 against 1 is 0, against 3 a
//! violation.

use super::Site;
use super::{Alignment, RewriteOperand};
use super::{Binding, NodeView, Rule};
use crate::rules::ops::SiteKind;
use smallvec::SmallVec;
use std::sync::Arc;

use super::{sorted_dims, AxisStatus, ConditionKind, Outcome, Tally, Verdict, Violation, ViolationKind};
use crate::sizes::shape::{Dim, Shape};

mod pair;
pub use pair::{pair_sizes, pair_sizes_over, widen_over, Over, PairMismatch};

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
    known_sizes(inputs).unwrap_or_else(|| by_axis(inputs))
}

/// [`multidirectional`] axis by axis, each axis's column of dims merged by [`merge_axis`].
fn by_axis(inputs: &[&Shape]) -> Outcome {
    let Some(ranked) = inputs.iter().map(|s| s.dims()).collect::<Option<SmallVec<[&[Dim]; 4]>>>() else {
        return Outcome { output: Shape::unranked(), verdict: Verdict::Unknown };
    };
    let rank = ranked.iter().map(|d| d.len()).max().unwrap_or(0);
    let mut output = Vec::with_capacity(rank);
    let mut tally = Tally::default();
    let mut column: SmallVec<[(usize, &Dim); 4]> = SmallVec::new();
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

/// [`multidirectional`] where every size is known, as in most graphs: each axis is its size other than 1 (or 1),
/// and a second size other than 1 is the violation; what [`merge_axis`] concludes on such columns, without
/// gathering them. `None` when some rank or size is not known.
fn known_sizes(inputs: &[&Shape]) -> Option<Outcome> {
    if let [a, b] = inputs {
        return known_pair(a.dims()?, b.dims()?);
    }
    let mut rank = 0;
    for shape in inputs {
        let dims = shape.dims()?;
        if dims.iter().any(|d| !matches!(d, Dim::Known(_))) {
            return None;
        }
        rank = rank.max(dims.len());
    }
    let size = |d: &Dim| match d {
        Dim::Known(k) => *k,
        _ => 1,
    };
    let mut output = Vec::with_capacity(rank);
    for axis in 0..rank {
        // The first size other than 1, from input `from`; inputs with fewer dims are padded with 1s on the left.
        let (mut out, mut from) = (1, 0);
        for (m, shape) in inputs.iter().enumerate() {
            let dims = shape.dims().unwrap_or_default();
            let Some(i) = (axis + dims.len()).checked_sub(rank) else { continue };
            let k = size(&dims[i]);
            if k == 1 || k == out {
                continue;
            }
            if out != 1 {
                let kind = ViolationKind::Mismatch { found: Dim::Known(k), expected: Dim::Known(out), against: from };
                let verdict = Verdict::Violation(Violation { input: m, axis: Some(axis), kind });
                return Some(Outcome { output: Shape::unranked(), verdict });
            }
            (out, from) = (k, m);
        }
        output.push(Dim::Known(out));
    }
    // Every input is the output's shape: compared as sizes, every dim being known.
    let same = inputs.iter().all(|shape| {
        let dims = shape.dims().unwrap_or_default();
        dims.len() == rank && dims.iter().zip(&output).all(|(a, b)| size(a) == size(b))
    });
    let verdict = if same { Verdict::Same } else { Verdict::Broadcast };
    Some(Outcome { output: Shape::ranked(output), verdict })
}

/// [`known_sizes`] of two shapes, the inputs of most broadcasting nodes: the same conclusions, in one pass over
/// the axes ([`pair_sizes`]).
fn known_pair(a: &[Dim], b: &[Dim]) -> Option<Outcome> {
    let mut output = Vec::with_capacity(a.len().max(b.len()));
    let verdict = match pair_sizes(a, b, &mut output)? {
        Ok(true) => Verdict::Same,
        Ok(false) => Verdict::Broadcast,
        Err(PairMismatch { axis, a: x, b: y }) => {
            let kind = ViolationKind::Mismatch { found: Dim::Known(y), expected: Dim::Known(x), against: 0 };
            let verdict = Verdict::Violation(Violation { input: 1, axis: Some(axis), kind });
            return Some(Outcome { output: Shape::unranked(), verdict });
        }
    };
    Some(Outcome { output: Shape::ranked(output), verdict })
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
    if let Some(one) = one_symbol(column) {
        return Ok((one.clone(), AxisStatus::Holds));
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

/// The next common case, a batch or sequence axis: one symbolic dim, the same in every input that does not have 1
/// there. It is the axis, which then holds: what the steps below conclude on such a column, without sorting it. (A
/// `max(0, q)` is left to them: [`assuming_sizes`] may read it as `q`.)
fn one_symbol<'d>(column: &[(usize, &'d Dim)]) -> Option<&'d Dim> {
    let mut one = None;
    for &(_, d) in column {
        match d {
            Dim::Known(1) => {}
            Dim::Sym(_) | Dim::Broadcast(_) => {}
            Dim::Expr(p) if p.max_args().is_none() => {}
            _ => return None,
        }
        if !d.is_one() {
            match one {
                None => one = Some(d),
                Some(o) if o == d => {}
                Some(_) => return None,
            }
        }
    }
    one
}

/// The column with `max(0, q)` read as `q` where `q` is itself a dim of the column: when the op runs, every input
/// exists, so each of its sizes is at least 0 (a `q` that is the size of one input cannot be negative, and then
/// the other input's `max(0, q)` is `q`). `None` when nothing changes.
fn assuming_sizes(column: &[(usize, &Dim)]) -> Option<Vec<(usize, Dim)>> {
    let clamped = |d: &Dim| -> Option<crate::sizes::sym::Poly> {
        let Dim::Expr(p) = d else { return None };
        let args = p.max_args()?;
        let [a, b] = args else { return None };
        let (zero, q) = if a.as_constant() == Some(0) { (a, b) } else { (b, a) };
        (zero.as_constant() == Some(0)).then(|| q.clone())
    };
    if !column.iter().any(|(_, d)| clamped(d).is_some()) {
        return None;
    }
    let sizes: Vec<crate::sizes::sym::Poly> = column.iter().filter_map(|(_, d)| d.to_poly()).collect();
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
    let polys: Vec<crate::sizes::sym::Poly> = symbolic.iter().map(|d| d.to_poly()).collect::<Option<_>>()?;
    for (i, base) in polys.iter().enumerate() {
        let mut bound: Option<i64> = None;
        let all_capped = polys.iter().enumerate().filter(|&(j, _)| j != i).all(|(_, p)| {
            let Some(args) = p.min_args() else { return false };
            let mut consts = args.iter().filter_map(crate::sizes::sym::Poly::as_constant);
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

/// How a violation begins: `A [2, 3] and B [4] do not broadcast`.
pub fn violation_lead(site: &Site) -> String {
    format!("{} do not broadcast", site.list_inputs())
}

/// Every present input takes part (`Where`'s condition included). One value in every place (`Mul(x, x)`) is no
/// broadcast, whatever its shape.
pub fn bind(node: &NodeView) -> Binding {
    let present = node.present();
    let outcome = if present.len() > 1 && present.windows(2).all(|w| node.inputs[w[0]] == node.inputs[w[1]]) {
        Outcome { output: node.shape(present[0]).clone(), verdict: Verdict::Same }
    } else {
        multidirectional(&node.present_shapes())
    };
    Binding { rule: Rule::Multidirectional, outcome, rule_inputs: node.all_present(), target: None }
}

/// numpy broadcasting of the present inputs at the positions in `mask` only (a bit per position): the others are
/// no operands (QLinearAdd's scales and zero points).
pub fn bind_subset(node: &NodeView, mask: u64) -> Binding {
    let chosen = node.present_in(mask);
    let shapes: SmallVec<[&Shape; 4]> = chosen.iter().map(|&p| node.shape(p)).collect();
    let outcome = if chosen.len() > 1 && chosen.windows(2).all(|w| node.inputs[w[0]] == node.inputs[w[1]]) {
        Outcome { output: node.shape(chosen[0]).clone(), verdict: Verdict::Same }
    } else {
        multidirectional(&shapes)
    };
    let rule_inputs = chosen.iter().map(|&p| node.site_pos(p)).collect();
    Binding { rule: Rule::Multidirectional, outcome, rule_inputs, target: None }
}

/// Every rule input whose shape is not provably the output's, right-aligned.
pub fn rewrite_operands(site: &Site) -> super::RewriteOperands {
    // Pushed one by one: collected from an iterator, the list cost more than the comparisons.
    let mut operands = super::RewriteOperands::new();
    for &i in site.rule_inputs.iter().flatten() {
        if !site.inputs[i].shape.provably_eq(&site.output_shape) {
            operands.push(RewriteOperand { input: i, alignment: Alignment::Numpy });
        }
    }
    operands
}
/// The form `expand` gives a numpy site whose shapes are undecided: an anchor input, and every other input
/// `Expand(_, Shape(anchor))`.
pub fn already_explicit(site: &Site, made_by: super::MadeBy<'_, '_>) -> bool {
    let names: Vec<&str> = site.rule_inputs.iter().flatten().map(|&i| site.inputs[i].name.as_ref()).collect();
    names.iter().any(|anchor| {
        names.iter().filter(|v| *v != anchor).all(|v| {
            made_by(v, "Expand")
                .and_then(|e| e.input.get(1))
                .and_then(|t| made_by(t, "Shape"))
                .is_some_and(|s| s.input.first().map(|n| n.as_str()) == Some(anchor) && !crate::onnx::attr::has_any(s))
        })
    })
}

/// Every input the rule reads broadcasts by itself (the numpy rule of the standard ops and of the contrib ops that
/// follow it).
pub fn broadcasting_inputs(site: &Site) -> Vec<usize> {
    match site.kind {
        SiteKind::Multi | SiteKind::NumpyOf(_) => site.rule_inputs.iter().flatten().copied().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape of rank 0 to 3 with sizes among 0, 1, 2 and 3.
    pub(super) fn small_shapes() -> Vec<Shape> {
        let mut shapes = vec![Vec::new()];
        for rank in 1..=3 {
            for n in 0..4usize.pow(rank) {
                shapes.push((0..rank).map(|i| (n / 4usize.pow(i) % 4) as u64).collect());
            }
        }
        shapes.iter().map(|s: &Vec<u64>| Shape::known(s)).collect()
    }

    #[test]
    fn known_sizes_conclude_what_merging_axis_by_axis_concludes() {
        let shapes = small_shapes();
        for a in &shapes {
            for b in &shapes {
                assert_eq!(known_sizes(&[a, b]), Some(by_axis(&[a, b])), "{a} {b}");
            }
        }
        // Three shapes take the general way.
        for c in [&shapes[0], &shapes[7], &shapes[40]] {
            for (a, b) in shapes.iter().step_by(3).flat_map(|a| shapes.iter().step_by(5).map(move |b| (a, b))) {
                assert_eq!(known_sizes(&[a, b, c]), Some(by_axis(&[a, b, c])), "{a} {b} {c}");
            }
        }
    }

    #[test]
    fn known_sizes_leave_a_shape_with_a_symbol_to_merging_axis_by_axis() {
        let n = Shape::ranked(vec![Dim::Known(2), Dim::sym("N")]);
        let three = Shape::known(&[3, 1]);
        assert_eq!(known_sizes(&[&n, &three]), None, "a mismatch on a known axis is not concluded before the symbol");
        assert_eq!(known_sizes(&[&three, &Shape::unranked()]), None);
    }
}
