//! Shape inference for reductions: the Reduce* family, ArgMax/ArgMin and TopK. Reducing every element of a small
//! integer value keeps its contents, so `ReduceProd(Shape(x))` is the element count of `x` as a polynomial.

use super::{Contradiction, Ctx, Detail, Requirement};
use crate::onnx::tensor::{IntValue, ValueFacts, INT64};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

const REDUCE: &[&str] = &[
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
];

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        op if REDUCE.contains(&op) => vec![reduce(ctx)],
        "ArgMax" | "ArgMin" => vec![arg_reduce(ctx)],
        "TopK" => top_k(ctx),
        _ => return None,
    })
}

/// Which axes a Reduce node reduces.
#[derive(Debug, PartialEq)]
enum Axes {
    /// None: empty axes with `noop_with_empty_axes`; the output is the input.
    Noop,
    All,
    List(Vec<i64>),
    /// Given but not known; how many, when that is known.
    Unknown(Option<usize>),
}

fn reduce_axes(ctx: &Ctx<'_, '_>) -> Axes {
    // ReduceSum took its axes from an input first, at opset 13; the others at 18.
    let since = if ctx.op == "ReduceSum" { 13 } else { 18 };
    let attr = ctx.attrs.ints("axes").filter(|a| !a.is_empty());
    if ctx.opset < since {
        return attr.map_or(Axes::All, |a| Axes::List(a.to_vec()));
    }
    let empty = if ctx.int("noop_with_empty_axes", 0) != 0 { Axes::Noop } else { Axes::All };
    if ctx.inputs.len() > 1 {
        // A named axes input with nothing known of it may be anything, empty included.
        return match ctx.ints(1) {
            Some(v) if v.is_empty() => empty,
            Some(v) => Axes::List(v),
            None => match ctx.dims(1) {
                Some([Dim::Known(0)]) => empty,
                Some([Dim::Known(k)]) => Axes::Unknown(usize::try_from(*k).ok()),
                _ => Axes::Unknown(None),
            },
        };
    }
    match attr {
        // An axes attribute at an opset that has none: not part of the op, so nothing is assumed.
        Some(_) => Axes::Unknown(None),
        None => empty,
    }
}

fn reduce(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let input = ctx.input(0).cloned().unwrap_or_default();
    let keepdims = ctx.int("keepdims", 1) != 0;
    let axes = reduce_axes(ctx);
    let dims = input.shape.dims();
    // Which input axes are reduced, when the axes and rank are known.
    let mask: Option<Vec<bool>> = match (&axes, dims) {
        (Axes::Noop, _) => return input,
        (Axes::All, Some(d)) => Some(vec![true; d.len()]),
        (Axes::List(list), Some(d)) => {
            let mut mask = vec![false; d.len()];
            // Each axis within the rank; one named twice is reduced once.
            for &a in list {
                match ctx.require_axis(vec![0, 1], a, d.len()) {
                    Some(a) => mask[a] = true,
                    None => return ValueFacts::tensor(input.elem, Shape::unranked()),
                }
            }
            Some(mask)
        }
        _ => None,
    };
    let shape = match (mask.as_ref(), dims) {
        (Some(mask), Some(d)) => Shape::ranked(
            d.iter()
                .zip(mask)
                .filter_map(|(d, &r)| match (r, keepdims) {
                    (false, _) => Some(d.clone()),
                    (true, true) => Some(Dim::Known(1)),
                    (true, false) => None,
                })
                .collect(),
        ),
        _ => match (&axes, dims) {
            (Axes::All, None) if !keepdims => Shape::scalar(),
            // Each dim stays or becomes 1: only a 1 is sure.
            (Axes::Unknown(_), Some(d)) if keepdims => {
                Shape::ranked(d.iter().map(|d| if d.is_one() { Dim::Known(1) } else { Dim::Unknown }).collect())
            }
            (Axes::Unknown(Some(k)), Some(d)) => match d.len().checked_sub(*k) {
                Some(r) => Shape::ranked(vec![Dim::Unknown; r]),
                None => Shape::unranked(),
            },
            _ => Shape::unranked(),
        },
    };
    let every_axis = mask.as_ref().is_some_and(|m| m.iter().all(|&r| r));
    let value = if every_axis { fold_value(ctx.op, input.value.as_deref(), &shape) } else { None };
    ValueFacts { value, ..ValueFacts::tensor(input.elem, shape) }
}

/// The one element of reducing every element of `value`, for the reductions that stay in integers.
fn fold_value(op: &str, value: Option<&[IntValue]>, out: &Shape) -> Option<Vec<IntValue>> {
    let value = value?;
    let elements: Vec<&Poly> = value.iter().map(Option::as_ref).collect::<Option<_>>()?;
    let result = match op {
        "ReduceSum" => elements.iter().try_fold(Poly::constant(0), |acc, p| acc.add(p)),
        "ReduceProd" => elements.iter().try_fold(Poly::constant(1), |acc, p| acc.mul(p)),
        "ReduceMax" => elements.split_first().map(|(f, rest)| rest.iter().fold((*f).clone(), |acc, p| acc.max_of(p))),
        "ReduceMin" => elements.split_first().map(|(f, rest)| rest.iter().fold((*f).clone(), |acc, p| acc.min_of(p))),
        _ => None,
    }?;
    (out.element_count() == Some(1)).then(|| vec![Some(result)])
}

/// ArgMax, ArgMin: int64 indices, `axis` (default 0) removed or kept as 1.
fn arg_reduce(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let keepdims = ctx.int("keepdims", 1) != 0;
    let axis = ctx.int("axis", 0);
    let shape = ctx
        .dims(0)
        .and_then(|d| {
            let a = ctx.require_axis(vec![0], axis, d.len())?;
            let mut out = d.to_vec();
            if keepdims {
                out[a] = Dim::Known(1);
            } else {
                out.remove(a);
            }
            Some(Shape::ranked(out))
        })
        .unwrap_or_default();
    ValueFacts::tensor(Some(INT64), shape)
}

/// TopK: values and int64 indices, the input's shape with `axis` (default -1) of size k. k is an attribute before
/// opset 10 and an input `[k]` from it; an unknown k is a fresh size, the same for both outputs.
fn top_k(ctx: &mut Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let axis = ctx.int("axis", -1);
    let k = if ctx.opset < 10 {
        ctx.attrs.int("k").and_then(|k| u64::try_from(k).ok()).map(Dim::Known)
    } else {
        match ctx.value(1) {
            Some([Some(p)]) => Some(Dim::from_poly(p.clone())).filter(|d| !matches!(d, Dim::Unknown)),
            _ => None,
        }
    };
    let shape = match ctx.dims(0).map(|d| (d.to_vec(), ctx.require_axis(vec![0], axis, d.len()))) {
        Some((mut out, Some(a))) => {
            // k of an axis of n elements: at most n.
            if let (Some(count), Some(n)) = (k.as_ref().and_then(Dim::known), out[a].known()) {
                if count > n && ctx.opset >= 10 {
                    let detail = Detail::TooMany { input: 1, count: count as i64, size: out[a].clone() };
                    ctx.report(Contradiction::violated(Requirement::IndexInRange, vec![0, 1], detail));
                }
            }
            out[a] = k.unwrap_or_else(|| ctx.fresh());
            Shape::ranked(out)
        }
        _ => Shape::unranked(),
    };
    vec![ValueFacts::tensor(elem, shape.clone()), ValueFacts::tensor(Some(INT64), shape)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::AttributeProto;
    use crate::sizes::shape::parse_shape;

    use crate::infer::test_support::{int, ints, run_rule};

    fn t(shape: &str) -> Option<ValueFacts> {
        Some(ValueFacts::tensor(Some(1), parse_shape(shape)))
    }

    /// A 1-D int64 value with the given elements (`None`: unknown).
    fn value(elements: Vec<Option<Poly>>) -> Option<ValueFacts> {
        let shape = Shape::known(&[elements.len() as u64]);
        Some(ValueFacts { value: Some(elements), ..ValueFacts::tensor(Some(INT64), shape) })
    }

    fn consts(v: &[i64]) -> Option<ValueFacts> {
        value(v.iter().map(|&x| Some(Poly::constant(x))).collect())
    }

    fn run(op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]) -> Vec<ValueFacts> {
        run_rule(infer, op, opset, attrs, inputs, 2)
    }

    fn shape(op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]) -> String {
        run(op, opset, attrs, inputs)[0].shape.to_string()
    }

    #[test]
    fn keepdims_both_ways_and_negative_axes() {
        let x = || t("N,C,W");
        assert_eq!(shape("ReduceMean", 13, vec![ints("axes", &[1])], &[x()]), "[N, 1, W]");
        assert_eq!(shape("ReduceMean", 13, vec![ints("axes", &[1]), int("keepdims", 0)], &[x()]), "[N, W]");
        assert_eq!(shape("ReduceMax", 13, vec![ints("axes", &[-1])], &[x()]), "[N, C, 1]");
        assert_eq!(shape("ReduceL2", 13, vec![ints("axes", &[-1, 0]), int("keepdims", 0)], &[x()]), "[C]");
        // No axes: every axis.
        assert_eq!(shape("ReduceSumSquare", 13, vec![], &[x()]), "[1, 1, 1]");
        assert_eq!(shape("ReduceLogSumExp", 13, vec![int("keepdims", 0)], &[x()]), "[]");
        assert_eq!(shape("ReduceMin", 13, vec![int("keepdims", 0)], &[t("*")]), "[]");
        assert_eq!(shape("ReduceMin", 13, vec![], &[t("*")]), "[unknown rank]");
        // An axis out of range: nothing is claimed.
        assert_eq!(shape("ReduceMean", 13, vec![ints("axes", &[3])], &[x()]), "[unknown rank]");
        let out = run("ReduceProd", 13, vec![ints("axes", &[0])], &[x()]);
        assert_eq!(out[0].elem, Some(1));
    }

    #[test]
    fn axes_move_to_an_input() {
        let x = || t("N,C,W");
        // ReduceSum from 13, the others from 18.
        assert_eq!(shape("ReduceSum", 13, vec![], &[x(), consts(&[0, 2])]), "[1, C, 1]");
        assert_eq!(shape("ReduceSum", 11, vec![ints("axes", &[1])], &[x()]), "[N, 1, W]");
        assert_eq!(shape("ReduceMean", 18, vec![int("keepdims", 0)], &[x(), consts(&[-1])]), "[N, C]");
        // Empty axes: every axis, or none with noop_with_empty_axes.
        assert_eq!(shape("ReduceMean", 18, vec![], &[x()]), "[1, 1, 1]");
        assert_eq!(shape("ReduceMean", 18, vec![int("noop_with_empty_axes", 1)], &[x()]), "[N, C, W]");
        assert_eq!(shape("ReduceSum", 13, vec![int("noop_with_empty_axes", 1)], &[x(), consts(&[])]), "[N, C, W]");
        // Axes whose values are unknown: the rank from their count, or with keepdims each dim may become 1.
        let unknown = || Some(ValueFacts::tensor(Some(INT64), parse_shape("1")));
        assert_eq!(shape("ReduceMax", 18, vec![int("keepdims", 0)], &[x(), unknown()]), "[?, ?]");
        assert_eq!(shape("ReduceMax", 18, vec![], &[t("N,1,W"), unknown()]), "[?, 1, ?]");
        let any = Some(ValueFacts::tensor(Some(INT64), parse_shape("K")));
        assert_eq!(shape("ReduceMax", 18, vec![int("keepdims", 0)], &[x(), any]), "[unknown rank]");
    }

    #[test]
    fn reducing_a_shape_value_keeps_its_contents() {
        let dims = value(vec![Some(Poly::atom("N")), Some(Poly::constant(3)), Some(Poly::atom("H"))]);
        let out = run("ReduceProd", 18, vec![int("keepdims", 0)], std::slice::from_ref(&dims));
        assert_eq!(out[0].shape.to_string(), "[]");
        let product = out[0].value.as_ref().and_then(|v| v[0].clone()).map(|p| p.to_string());
        assert_eq!(product.as_deref(), Some("3*H*N"));
        let out = run("ReduceSum", 13, vec![], &[dims, consts(&[0])]);
        assert_eq!(out[0].shape.to_string(), "[1]");
        let sum = out[0].value.as_ref().and_then(|v| v[0].clone()).map(|p| p.to_string());
        assert_eq!(sum.as_deref(), Some("H + N + 3"));
        let out = run("ReduceMax", 13, vec![], &[consts(&[4, 9, 2])]);
        assert_eq!(out[0].value, Some(vec![Some(Poly::constant(9))]));
        // An unknown element: the contents are unknown.
        let out = run("ReduceProd", 13, vec![], &[value(vec![Some(Poly::atom("N")), None])]);
        assert_eq!(out[0].value, None);
    }

    #[test]
    fn arg_reductions_are_int64() {
        let out = run("ArgMax", 13, vec![int("axis", 1)], &[t("N,C,W")]);
        assert_eq!((out[0].elem, out[0].shape.to_string()), (Some(INT64), "[N, 1, W]".to_string()));
        let out =
            run("ArgMin", 13, vec![int("axis", -1), int("keepdims", 0), int("select_last_index", 1)], &[t("N,C,W")]);
        assert_eq!(out[0].shape.to_string(), "[N, C]");
        assert_eq!(shape("ArgMax", 13, vec![], &[t("N,C")]), "[1, C]");
    }

    #[test]
    fn top_k_sizes() {
        let k = value(vec![Some(Poly::atom("K"))]);
        let out = run("TopK", 11, vec![], &[t("N,100"), k]);
        let got: Vec<_> = out.iter().map(|f| (f.elem, f.shape.to_string())).collect();
        assert_eq!(got, [(Some(1), "[N, K]".to_string()), (Some(INT64), "[N, K]".to_string())]);
        let out = run("TopK", 11, vec![int("axis", 0)], &[t("N,100"), consts(&[5])]);
        assert_eq!(out[0].shape.to_string(), "[5, 100]");
        // Before opset 10, k is an attribute.
        assert_eq!(shape("TopK", 1, vec![int("k", 3)], &[t("N,100")]), "[N, 3]");
        // An unknown k: one fresh size shared by both outputs.
        let unknown = Some(ValueFacts::tensor(Some(INT64), parse_shape("1")));
        let out = run("TopK", 11, vec![], &[t("N,100"), unknown]);
        assert_eq!(out[0].shape.to_string(), "[N, ?1]");
        assert_eq!(out[0].shape, out[1].shape);
    }
}
