//! Ops that compute shapes as values (Shape, Size, Range, ConstantOfShape…) and the value arithmetic of
//! broadcasting ops, so that targets of Reshape, Expand, Tile, Slice, Pad and Resize become known.

use super::Ctx;
use crate::materialize::broadcast_index;
use crate::shape::{Dim, Shape};
use crate::sym::Poly;
use crate::tensor::{self, dim_value, IntValue, ValueFacts, INT64, MAX_VALUE_ELEMENTS};

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        "Shape" => vec![shape_of(ctx)],
        "Size" => {
            let count = ctx.dims(0).and_then(|d| d.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(&d.to_poly()?)));
            vec![ValueFacts { value: Some(vec![count]), ..ValueFacts::tensor(Some(INT64), Shape::scalar()) }]
        }
        "ConstantOfShape" => vec![constant_of_shape(ctx)],
        "Range" => vec![range(ctx)],
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
                (Some(axis), Some(dims)) => match super::normalize_axis(axis, dims.len()) {
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
                (Some(axis), Some(dims)) => match super::normalize_axis(axis, dims.len()) {
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
            Some([Dim::Known(n)]) if *n <= crate::analysis::MAX_RANK => Shape::ranked(vec![Dim::Unknown; *n as usize]),
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

fn range(ctx: &mut Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let scalar = |i: usize| -> Option<Poly> { ctx.value(i)?.first()?.clone() };
    let (start, limit, delta) = (scalar(0), scalar(1), scalar(2));
    let ints = |p: &Option<Poly>| p.as_ref().and_then(Poly::as_constant);
    let (len, value) = match (ints(&start), ints(&limit), ints(&delta)) {
        (Some(s), Some(l), Some(d)) if d != 0 => {
            let n = ((l - s) as f64 / d as f64).ceil().max(0.0) as u64;
            let value = (n as usize <= MAX_VALUE_ELEMENTS)
                .then(|| (0..n as i64).map(|i| Some(Poly::constant(s + i * d))).collect());
            (Dim::Known(n), value)
        }
        // `Range(0, n, 1)` over a size n: n elements.
        (Some(0), None, Some(1)) => (limit.map_or(Dim::Unknown, Dim::from_poly), None),
        _ => (ctx.fresh(), None),
    };
    let floats_given = ctx.floats(0).is_some();
    let value = if floats_given { None } else { value };
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(vec![len])) }
}

/// The contents of a broadcasting op's output, when its inputs' contents are known and it is small: shape
/// arithmetic (`Shape(x)[0] * 64`, `Concat(...) / 2`) in exported graphs.
pub fn broadcast_value(op: &str, inputs: &[Option<&ValueFacts>], output: &Shape) -> Option<Vec<IntValue>> {
    let out_dims: Vec<u64> = output.dims()?.iter().map(Dim::known).collect::<Option<_>>()?;
    let count = out_dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
    if count as usize > MAX_VALUE_ELEMENTS {
        return None;
    }
    // Each input's contents laid out at the output shape.
    let spread = |f: &ValueFacts| -> Option<Vec<IntValue>> {
        let dims: Vec<u64> = f.shape.dims()?.iter().map(Dim::known).collect::<Option<_>>()?;
        let value = f.value.as_ref()?;
        let index = broadcast_index(&dims, &out_dims)?;
        index.iter().map(|&i| value.get(i).cloned()).collect()
    };
    let args: Vec<Vec<IntValue>> = inputs.iter().map(|f| spread((*f)?)).collect::<Option<_>>()?;
    let binary = |f: &dyn Fn(&Poly, &Poly) -> Option<Poly>| -> Option<Vec<IntValue>> {
        let [a, b] = args.as_slice() else { return None };
        Some(a.iter().zip(b).map(|(x, y)| f(x.as_ref()?, y.as_ref()?)).collect())
    };
    let truth = |b: bool| Some(Poly::constant(i64::from(b)));
    match op {
        "Add" => binary(&|a, b| a.add(b)),
        "Sub" => binary(&|a, b| a.sub(b)),
        "Mul" => binary(&|a, b| a.mul(b)),
        "Div" => binary(&|a, b| match (a.as_constant(), b.as_constant()) {
            // Integer division truncates toward zero.
            (Some(x), Some(y)) if y != 0 => Some(Poly::constant(x / y)),
            _ => a.div_poly(b),
        }),
        "Mod" => binary(&|a, b| match (a.as_constant(), b.as_constant()) {
            (Some(x), Some(y)) if y != 0 => Some(Poly::constant(x.rem_euclid(y))),
            _ => None,
        }),
        "Max" if args.len() == 2 => binary(&|a, b| Some(a.max_of(b))),
        "Min" if args.len() == 2 => binary(&|a, b| Some(a.min_of(b))),
        "Equal" => binary(&|a, b| match (a.as_constant(), b.as_constant()) {
            (Some(x), Some(y)) => truth(x == y),
            _ if a == b => truth(true),
            _ => None,
        }),
        "Less" => binary(&|a, b| truth(a.as_constant()? < b.as_constant()?)),
        "Greater" => binary(&|a, b| truth(a.as_constant()? > b.as_constant()?)),
        "And" => binary(&|a, b| truth(a.as_constant()? != 0 && b.as_constant()? != 0)),
        "Or" => binary(&|a, b| truth(a.as_constant()? != 0 || b.as_constant()? != 0)),
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
