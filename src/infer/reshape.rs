//! Ops that keep the elements and change the shape: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, each with what
//! its specification requires of the new shape (the element count kept, a whole `-1`, a permutation, squeezed dims
//! of size 1, axes in range).

use super::require::equal_condition;
use super::At;
use super::{dim_at, valops, Contradiction, Ctx, Detail, Malformed, Requirement, Verdict, Whence};
use crate::onnx::tensor::{IntValue, ValueFacts};
use crate::rules::Condition;
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::{memo, Poly};

fn product(dims: &[Dim]) -> Option<Poly> {
    dims.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(&d.to_poly()?))
}

/// The element count of `dims`: a product of known sizes in integers (as the polynomials give it: nothing past
/// int64), any other worked out once per thread for each shape (every layer of a network reshapes the same ones).
fn size_of(dims: &[Dim]) -> Dim {
    if dims.iter().all(|d| matches!(d, Dim::Known(_))) {
        let n = dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(i64::try_from(d.known()?).ok()?));
        return n.map_or(Dim::Unknown, |n| Dim::from_poly(Poly::constant(n)));
    }
    thread_local! {
        static SIZES: memo::Table<Vec<Dim>, Dim> = Default::default();
    }
    memo::remembered(&SIZES, dims.to_vec(), |dims| product(dims).map_or(Dim::Unknown, Dim::from_poly))
}

/// Reshape (ONNX `Reshape`): "At most one dimension of the new shape can be -1 … A dimension could also be 0, in
/// which case the actual dimension value is unchanged (i.e. taken from the input tensor)"; the element count is
/// kept, so the -1 is the input's count divided by the others', which must divide it exactly.
pub(super) fn reshape(ctx: &mut Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let target: Option<Vec<IntValue>> = match ctx.attrs.ints("shape") {
        Some(s) if ctx.opset < 5 => Some(s.iter().map(|&v| Some(Poly::constant(v))).collect()),
        _ => ctx.value(1).map(<[IntValue]>::to_vec),
    };
    let data = ctx.dims(0);
    // The contents pass through unchanged: reshaping a shape vector keeps its values.
    let value = ctx.input(0).and_then(|f| f.value.clone());
    let Some(target) = target else {
        let shape = match ctx.dims(1) {
            Some([Dim::Known(n)]) if *n <= crate::sizes::shape::MAX_RANK => {
                Shape::ranked(vec![Dim::Unknown; *n as usize])
            }
            _ => Shape::unranked(),
        };
        return ValueFacts { value, ..ValueFacts::tensor(elem, shape) };
    };
    let allow_zero = ctx.int("allowzero", 0) != 0;
    let mut infer_at = None;
    let mut dims: Vec<Dim> = Vec::with_capacity(target.len());
    for (i, t) in target.iter().enumerate() {
        let dim = match t.as_ref().map(|p| (p, p.as_constant())) {
            Some((_, Some(-1))) if infer_at.is_some() => return malformed(ctx, Malformed::SeveralInferred),
            Some((_, Some(-1))) => {
                infer_at = Some(i);
                Dim::Unknown
            }
            Some((_, Some(v))) if v < -1 => return malformed(ctx, Malformed::NegativeEntry(v)),
            Some((_, Some(0))) if !allow_zero => match data {
                Some(d) if i >= d.len() => {
                    return malformed(ctx, Malformed::CopiesNoDim { index: i, rank: d.len() });
                }
                _ => dim_at(data, i),
            },
            Some((p, _)) => Dim::from_poly(p.clone()),
            None => Dim::Unknown,
        };
        dims.push(dim);
    }
    let total = data.map_or(Dim::Unknown, size_of);
    match infer_at {
        Some(i) => {
            let others: Vec<Dim> = dims.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, d)| d.clone()).collect();
            dims[i] = ctx.divide(Requirement::ElementCount, vec![0, 1], i, &total, &size_of(&others));
        }
        None => element_count(ctx, &total, &size_of(&dims), &dims),
    }
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
}

/// A Reshape target that breaks the op's rules on its own.
fn malformed(ctx: &Ctx<'_, '_>, m: Malformed) -> ValueFacts {
    ctx.report(Contradiction::violated(Requirement::ElementCount, vec![0, 1], Detail::Malformed(m)));
    ValueFacts::unknown()
}

/// Reshape without a -1 keeps the element count: `elements` must be what the target `dims` hold.
fn element_count(ctx: &Ctx<'_, '_>, elements: &Dim, holds: &Dim, dims: &[Dim]) {
    if matches!(elements, Dim::Unknown) || matches!(holds, Dim::Unknown) || elements.provably_eq(holds) {
        return;
    }
    let verdict = match (elements.known(), holds.known()) {
        (Some(_), Some(_)) => {
            let target = Shape::ranked(dims.to_vec());
            Verdict::Violated(Detail::ElementCount { elements: elements.clone(), target, holds: holds.clone() })
        }
        _ if elements.mentions_fresh() || holds.mentions_fresh() => return,
        _ => Verdict::Conditional(vec![Condition { axis: 0, kind: equal_condition(elements, holds) }]),
    };
    ctx.report(Contradiction { requirement: Requirement::ElementCount, inputs: vec![0, 1], verdict });
}

/// Flatten: `[d0 … d(axis-1), d(axis) …]` → `[d0 ⋯ d(axis-1), d(axis) ⋯]`; the axis may also be the rank itself.
pub(super) fn flatten(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::ranked(vec![Dim::Unknown, Dim::Unknown]) };
    // The axis counts from the back like any axis (-1 is the last), and may also be the rank itself.
    let axis = ctx.int("axis", 1);
    let rank = d.len() as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    if !(0..=rank).contains(&a) {
        let detail = Detail::AxisOutOfRange { axis, rank: d.len() };
        ctx.report(Contradiction::violated(Requirement::AxisInRange, vec![0], detail));
        return Shape::unranked();
    }
    let a = a as usize;
    Shape::ranked(vec![size_of(&d[..a]), size_of(&d[a..])])
}

/// Transpose: `perm` (every axis once; reversed without it).
pub(super) fn transpose(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let Some(d) = ctx.dims(0) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let perm: Vec<i64> = match ctx.attrs.ints("perm") {
        // Present, even empty, it is the permutation (onnxruntime refuses an empty one for rank 1 and more).
        Some(p) => p.to_vec(),
        None => (0..d.len() as i64).rev().collect(),
    };
    // Every entry in `0..rank`: onnxruntime refuses a negative one.
    let axes: Option<Vec<usize>> = perm.iter().map(|&p| usize::try_from(p).ok().filter(|&p| p < d.len())).collect();
    let permutation = axes.filter(|a| {
        let mut sorted = a.clone();
        sorted.sort_unstable();
        sorted.dedup();
        a.len() == d.len() && sorted.len() == d.len()
    });
    let Some(axes) = permutation else {
        let detail = Detail::Malformed(Malformed::NotAPermutation { perm, rank: d.len() });
        ctx.report(Contradiction::violated(Requirement::Permutation, vec![0], detail));
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    let value = ctx.input(0).and_then(valops::contents).and_then(|(shape, v)| valops::transpose(&shape, v, &axes));
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(axes.iter().map(|&a| d[a].clone()).collect())) }
}

/// Squeeze: the dims at `axes` go, each of which must be 1; without axes every dim of size 1 goes.
pub(super) fn squeeze(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let value = ctx.input(0).and_then(|f| f.value.clone());
    let Some(d) = ctx.dims(0) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let axes = if ctx.opset < 13 { ctx.attrs.ints("axes").map(<[i64]>::to_vec) } else { ctx.axes("axes", 1) };
    let dims = match axes {
        Some(axes) if !axes.is_empty() => {
            let Some(axes) = ctx.require_axes(vec![0, 1], &axes, d.len()) else {
                return ValueFacts::tensor(elem, Shape::unranked());
            };
            for &a in &axes {
                let at = At::new(0, a, d[a].clone());
                ctx.require_size(Requirement::SqueezeOne, vec![0], at, Dim::Known(1), Whence::Required);
            }
            d.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, x)| x.clone()).collect()
        }
        // Without axes every size-1 dim goes, which is only decidable when no dim could be 1 unseen.
        None if ctx.opset >= 13 && ctx.has_input(1) => return ValueFacts::tensor(elem, Shape::unranked()),
        _ if d.iter().all(|x| x.known().is_some()) => d.iter().filter(|x| !x.is_one()).cloned().collect(),
        _ => return ValueFacts::tensor(elem, Shape::unranked()),
    };
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
}

/// Unsqueeze: a dim of 1 at each of `axes`, counted in the output's rank.
pub(super) fn unsqueeze(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let value = ctx.input(0).and_then(|f| f.value.clone());
    let axes = if ctx.opset < 13 { ctx.attrs.ints("axes").map(<[i64]>::to_vec) } else { ctx.axes("axes", 1) };
    let (Some(d), Some(axes)) = (ctx.dims(0), axes) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    let rank = d.len() + axes.len();
    let Some(mut positions) = ctx.require_axes(vec![0, 1], &axes, rank) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    positions.sort_unstable();
    let mut source = d.iter();
    let dims = (0..rank)
        .map(|i| if positions.contains(&i) { Some(Dim::Known(1)) } else { source.next().cloned() })
        .collect::<Option<Vec<Dim>>>();
    ValueFacts { value, ..ValueFacts::tensor(elem, dims.map_or_else(Shape::unranked, Shape::ranked)) }
}
