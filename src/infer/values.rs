//! Ops that compute shapes as values (Shape, Size, Range, ConstantOfShape…) and the value arithmetic of
//! broadcasting ops, so that targets of Reshape, Expand, Tile, Slice, Pad and Resize become known.

use super::Ctx;
use std::cmp::Ordering;

use super::valops;
use crate::onnx::tensor::{self, dim_value, IntValue, ValueFacts, INT64, MAX_VALUE_ELEMENTS};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        "Shape" => vec![shape_of(ctx)],
        "Size" => {
            let count = ctx.dims(0).and_then(|d| d.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(&d.to_poly()?)));
            vec![ValueFacts { value: Some(vec![count]), ..ValueFacts::tensor(Some(INT64), Shape::scalar()) }]
        }
        "ConstantOfShape" => vec![constant_of_shape(ctx)],
        "Range" => {
            super::indexing::range(ctx);
            vec![range(ctx)]
        }
        "NonZero" => {
            let rank = ctx.rank(0).map_or(Dim::Unknown, |r| Dim::Known(r as u64));
            let count = ctx.fresh();
            vec![ValueFacts::tensor(Some(INT64), Shape::ranked(vec![rank, count]))]
        }
        "NonMaxSuppression" => {
            let count = ctx.fresh();
            vec![ValueFacts::tensor(Some(INT64), Shape::ranked(vec![count, Dim::Known(3)]))]
        }
        "Compress" => {
            let count = ctx.fresh();
            let shape = match (ctx.attrs.int("axis"), ctx.dims(0)) {
                (None, _) => Shape::ranked(vec![count]),
                (Some(axis), Some(dims)) => match ctx.require_axis(vec![0], axis, dims.len()) {
                    Some(a) => {
                        let mut d = dims.to_vec();
                        d[a] = count;
                        Shape::ranked(d)
                    }
                    None => Shape::unranked(),
                },
                _ => Shape::unranked(),
            };
            vec![ValueFacts::tensor(ctx.elem(0), shape)]
        }
        "Unique" => {
            let count = ctx.fresh();
            let uniq = match (ctx.attrs.int("axis"), ctx.dims(0)) {
                (None, _) => Shape::ranked(vec![count.clone()]),
                (Some(axis), Some(dims)) => match ctx.require_axis(vec![0], axis, dims.len()) {
                    Some(a) => {
                        let mut d = dims.to_vec();
                        d[a] = count.clone();
                        Shape::ranked(d)
                    }
                    None => Shape::unranked(),
                },
                _ => Shape::unranked(),
            };
            let indices = ValueFacts::tensor(Some(INT64), Shape::ranked(vec![count.clone()]));
            let inverse_len = match ctx.attrs.int("axis") {
                None => ctx
                    .dims(0)
                    .and_then(|d| d.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(&d.to_poly()?)))
                    .map_or(Dim::Unknown, Dim::from_poly),
                Some(axis) => ctx
                    .dims(0)
                    .and_then(|d| super::normalize_axis(axis, d.len()).map(|a| d[a].clone()))
                    .unwrap_or(Dim::Unknown),
            };
            vec![
                ValueFacts::tensor(ctx.elem(0), uniq),
                indices.clone(),
                ValueFacts::tensor(Some(INT64), Shape::ranked(vec![inverse_len])),
                indices,
            ]
        }
        _ => return None,
    })
}

/// `Shape`: the dims of its input as a value, between `start` and `end` from opset 15.
fn shape_of(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let Some(dims) = ctx.dims(0) else {
        return ValueFacts::tensor(Some(INT64), Shape::ranked(vec![Dim::Unknown]));
    };
    let rank = dims.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let start = clamp(ctx.int("start", 0));
    let end = clamp(ctx.attrs.int("end").unwrap_or(rank));
    let picked = if start < end { &dims[start..end] } else { &[] };
    ValueFacts {
        value: Some(picked.iter().map(dim_value).collect()),
        ..ValueFacts::tensor(Some(INT64), Shape::known(&[picked.len() as u64]))
    }
}

fn constant_of_shape(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let fill = ctx.attrs.tensor("value");
    let elem = fill.and_then(|t| t.data_type).or(Some(1));
    let shape = match ctx.value(0) {
        Some(v) => Shape::ranked(v.iter().map(tensor::value_dim).collect()),
        None => match ctx.dims(0) {
            Some([Dim::Known(n)]) if *n <= crate::sizes::shape::MAX_RANK => {
                Shape::ranked(vec![Dim::Unknown; *n as usize])
            }
            _ => Shape::unranked(),
        },
    };
    // Small integer fills keep their contents: `ConstantOfShape([k])` with 1s often feeds Expand and Reshape.
    let fill_value = fill.and_then(tensor::int_values).and_then(|v| v.first().copied());
    let value = match (shape.element_count(), fill_value) {
        (Some(n), Some(f)) if n as usize <= MAX_VALUE_ELEMENTS => Some(vec![Some(Poly::constant(f)); n as usize]),
        // No `value` attribute: float zeros.
        _ => None,
    };
    ValueFacts { value, ..ValueFacts::tensor(elem, shape) }
}

/// `Range`: `max(0, ceil((limit - start) / delta))` elements, symbolic where start or limit is, for a constant
/// delta; the contents too when everything is a constant and small.
fn range(ctx: &mut Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let scalar = |i: usize| -> Option<Poly> { ctx.value(i)?.first()?.clone() };
    let (start, limit, delta) = (scalar(0), scalar(1), scalar(2));
    let step = delta.as_ref().and_then(Poly::as_constant).filter(|&d| d != 0);
    let len = start.as_ref().zip(limit.as_ref()).zip(step).and_then(|((s, l), d)| {
        let span = if d > 0 { l.sub(s)? } else { s.sub(l)? };
        Some(span.div_ceil(d.checked_abs()?)?.max_of(&Poly::constant(0)))
    });
    let len = len.or_else(|| float_range_len(ctx).map(Poly::constant));
    let value = match (start.as_ref().and_then(Poly::as_constant), len.as_ref().and_then(Poly::as_constant), step) {
        (Some(s), Some(n), Some(d)) if n as usize <= MAX_VALUE_ELEMENTS && ctx.floats(0).is_none() => {
            (0..n).map(|i| Some(i.checked_mul(d).and_then(|x| x.checked_add(s)).map(Poly::constant))).collect()
        }
        _ => None,
    };
    let len = len.map_or_else(|| ctx.fresh(), Dim::from_poly);
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(vec![len])) }
}

/// A floating-point `Range`'s length, `max(0, ceil((limit - start) / delta))`, as onnxruntime computes it (the
/// difference in the input type, the quotient in double). A quotient a rounding away from a whole number is left
/// unknown: another runtime may round it the other way.
fn float_range_len(ctx: &Ctx<'_, '_>) -> Option<i64> {
    let scalar = |i: usize| match ctx.floats(i)? {
        [x] => Some(*x),
        _ => None,
    };
    let (start, limit, delta) = (scalar(0)?, scalar(1)?, scalar(2)?);
    let span = match ctx.elem(0)? {
        1 => f64::from(limit as f32 - start as f32),
        11 => limit - start,
        _ => return None,
    };
    let q = span / delta;
    if !q.is_finite() || (q != q.round() && (q - q.round()).abs() < 1e-6) {
        return None;
    }
    let n = q.ceil().max(0.0);
    (n < 9e15).then_some(n as i64)
}

/// The contents of a broadcasting op's output, when its inputs' contents are known and it is small: shape
/// arithmetic (`Shape(x)[0] * 64`, `Concat(...) / 2`) in exported graphs.
pub fn broadcast_value(op: &str, inputs: &[Option<&ValueFacts>], output: &Shape) -> Option<Vec<IntValue>> {
    let out_dims: Vec<u64> = output.dims()?.iter().map(Dim::known).collect::<Option<_>>()?;
    let count = out_dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
    if count as usize > MAX_VALUE_ELEMENTS {
        return None;
    }
    // Expand lays its data out at the target shape; the shape input is no operand.
    if op == "Expand" {
        return valops::spread(inputs.first().copied().flatten().filter(|f| f.value.is_some())?, &out_dims);
    }
    // Each input's contents laid out at the output shape (an input of unknown contents as unknown entries, when
    // another input's are known).
    if !inputs.iter().any(|f| f.is_some_and(|f| f.value.is_some())) {
        return None;
    }
    let args: Vec<Vec<IntValue>> = inputs.iter().map(|f| valops::spread((*f)?, &out_dims)).collect::<Option<_>>()?;
    let elementwise = |f: &dyn Fn(&[&Poly]) -> Option<Poly>| -> Option<Vec<IntValue>> {
        Some(
            (0..count as usize)
                .map(|i| {
                    let operands: Option<Vec<&Poly>> = args.iter().map(|a| a[i].as_ref()).collect();
                    f(&operands?)
                })
                .collect(),
        )
    };
    let binary = |f: &dyn Fn(&Poly, &Poly) -> Option<Poly>| -> Option<Vec<IntValue>> {
        if args.len() != 2 {
            return None;
        }
        elementwise(&|x| f(x[0], x[1]))
    };
    let truth = |b: bool| Some(Poly::constant(i64::from(b)));
    let decided = |o: Option<Ordering>, test: fn(Ordering) -> bool| truth(test(o?));
    match op {
        "Add" => binary(&|a, b| a.add(b)),
        "Sub" => binary(&|a, b| a.sub(b)),
        "Mul" => binary(&|a, b| a.mul(b)),
        "Div" => binary(&int_div),
        // `fmod` is not known here; C's fmod and the floor modulo agree on a non-negative dividend and a positive
        // divisor.
        "Mod" => binary(&|a, b| {
            let zero = crate::sizes::sym::Ext::Fin(0);
            (a.bounds().lo >= zero && b.as_constant()? > 0).then(|| a.modulo(b)).flatten()
        }),
        "Max" => {
            elementwise(&|x| x.split_first().map(|(f, rest)| rest.iter().fold((*f).clone(), |acc, p| acc.max_of(p))))
        }
        "Min" => {
            elementwise(&|x| x.split_first().map(|(f, rest)| rest.iter().fold((*f).clone(), |acc, p| acc.min_of(p))))
        }
        "Sum" => elementwise(&|x| x.iter().try_fold(Poly::constant(0), |acc, p| acc.add(p))),
        // Sizes are never negative, so `Equal(N, -1)` is false whatever N is.
        "Equal" => binary(&|a, b| truth(a.eq_decided(b)?)),
        "Less" => binary(&|a, b| decided(a.compare(b), Ordering::is_lt)),
        "Greater" => binary(&|a, b| decided(a.compare(b), Ordering::is_gt)),
        "LessOrEqual" => binary(&|a, b| truth(a.at_most_for_all(b)?)),
        "GreaterOrEqual" => binary(&|a, b| truth(b.at_most_for_all(a)?)),
        "And" => binary(&|a, b| truth(a.as_constant()? != 0 && b.as_constant()? != 0)),
        "Or" => binary(&|a, b| truth(a.as_constant()? != 0 || b.as_constant()? != 0)),
        "Xor" => binary(&|a, b| truth((a.as_constant()? != 0) != (b.as_constant()? != 0))),
        "Where" => {
            let [c, x, y] = args.as_slice() else { return None };
            Some(
                c.iter()
                    .zip(x.iter().zip(y))
                    .map(|(c, (x, y))| match c.as_ref()?.as_constant()? {
                        0 => y.clone(),
                        _ => x.clone(),
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Integer `Div`, which truncates toward zero: a floor where the operands' signs make the two agree.
fn int_div(a: &Poly, b: &Poly) -> Option<Poly> {
    if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
        return (y != 0).then(|| x.checked_div(y)).flatten().map(Poly::constant);
    }
    let zero = crate::sizes::sym::Ext::Fin(0);
    if a.bounds().lo >= zero && b.bounds().lo > zero {
        return a.div_poly(b);
    }
    // An exact division truncates and floors alike.
    let q = a.div_poly(b)?;
    (q.mul(b)? == *a).then_some(q)
}
