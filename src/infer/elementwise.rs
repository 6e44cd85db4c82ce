//! Ops whose outputs have the shape of their first input: activations, unary math, casts, and Constant.

use super::Ctx;
use crate::onnx::tensor::{self, ValueFacts, BOOL, INT64};
use crate::sizes::shape::Shape;
use crate::sizes::sym::Poly;

/// Ops whose single output has the shape and type of their first input. (A `match`, not a list searched in
/// turn: every node that does not broadcast is asked, and most are none of these.)
fn shape_preserving(op: &str) -> bool {
    matches!(
        op,
        "Abs"
            | "Acos"
            | "Acosh"
            | "Asin"
            | "Asinh"
            | "Atan"
            | "Atanh"
            | "Ceil"
            | "Celu"
            | "Cos"
            | "Cosh"
            | "Elu"
            | "Erf"
            | "Exp"
            | "Floor"
            | "Gelu"
            | "HardSigmoid"
            | "HardSwish"
            | "Hardmax"
            | "LeakyRelu"
            | "Log"
            | "LogSoftmax"
            | "LpNormalization"
            | "LRN"
            | "MeanVarianceNormalization"
            | "Mish"
            | "Neg"
            | "Not"
            | "Reciprocal"
            | "Relu"
            | "Round"
            | "Selu"
            | "Shrink"
            | "Sigmoid"
            | "Sign"
            | "Sin"
            | "Sinh"
            | "Softmax"
            | "Softplus"
            | "Softsign"
            | "Sqrt"
            | "Tan"
            | "Tanh"
            | "ThresholdedRelu"
            | "Clip"
            | "BitwiseNot"
            | "Swish"
            | "CumSum"
            | "Trilu"
            | "ReverseSequence"
            | "Binarizer"
            | "Normalizer"
            | "Scaler"
    )
}

/// Ops whose single output has the shape of their first input and is boolean.
fn shape_preserving_bool(op: &str) -> bool {
    matches!(op, "IsNaN" | "IsInf")
}

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let op = ctx.op;
    // Borrowed, not cloned: most nodes asked are not of these ops.
    let unknown = ValueFacts::default();
    let first = ctx.input(0).unwrap_or(&unknown);
    let same_shape = |elem| ValueFacts::tensor(elem, first.shape.clone());
    Some(match op {
        "Identity" => vec![first.clone()],
        "Neg" => vec![ValueFacts { value: map(first.value.as_deref(), Poly::neg), ..same_shape(first.elem) }],
        "Abs" => vec![ValueFacts { value: map(first.value.as_deref(), Poly::abs), ..same_shape(first.elem) }],
        "Not" => vec![ValueFacts {
            value: map(first.value.as_deref(), |p| Some(Poly::constant(i64::from(p.as_constant()? == 0)))),
            ..same_shape(first.elem)
        }],
        // An axis given to a softmax lies within the rank (onnxruntime refuses one that does not); a scalar has
        // no axis to normalize over.
        "Softmax" | "LogSoftmax" | "Hardmax" => {
            ctx.require_rank(0, super::require::RankNeed::AtLeast(1));
            if let (Some(axis), Some(rank)) = (ctx.attrs.int("axis"), ctx.rank(0).filter(|&r| r > 0)) {
                ctx.require_axis(vec![0], axis, rank);
            }
            vec![same_shape(first.elem)]
        }
        _ if shape_preserving(op) => vec![same_shape(first.elem)],
        _ if shape_preserving_bool(op) => vec![same_shape(Some(BOOL))],
        // Casting integer contents keeps them when the target is an integer type too.
        "Cast" => {
            let to = super::elem_attr(ctx, "to");
            let value = match to {
                Some(INT64 | tensor::INT32) => first.value.clone(),
                Some(BOOL) => map(first.value.as_deref(), |p| Some(Poly::constant(i64::from(p.as_constant()? != 0)))),
                _ => None,
            };
            vec![ValueFacts { value, ..same_shape(to) }]
        }
        "CastLike" => vec![same_shape(ctx.elem(1))],
        // Random values of the input's shape, of the `dtype` asked for (else the input's type).
        "RandomUniformLike" | "RandomNormalLike" | "Bernoulli" => {
            vec![same_shape(super::elem_attr(ctx, "dtype").or(first.elem))]
        }
        "RandomUniform" | "RandomNormal" => {
            let dims = ctx
                .attrs
                .ints("shape")
                .map(|d| d.iter().map(|&v| tensor::value_dim(&Some(Poly::constant(v)))).collect());
            // float unless `dtype` says otherwise; a `dtype` present but unset is 0, no type.
            let elem = match ctx.attrs.int("dtype") {
                None => Some(1),
                Some(_) => super::elem_attr(ctx, "dtype"),
            };
            vec![ValueFacts::tensor(elem, dims.map_or_else(Shape::unranked, Shape::ranked))]
        }
        "Dropout" => vec![same_shape(first.elem), same_shape(Some(BOOL))],
        "Constant" => vec![constant(ctx)],
        _ => return None,
    })
}

/// The contents mapped entry by entry; an entry the map cannot give becomes unknown.
fn map(value: Option<&[tensor::IntValue]>, f: impl Fn(&Poly) -> Option<Poly>) -> Option<Vec<tensor::IntValue>> {
    Some(value?.iter().map(|v| v.as_ref().and_then(&f)).collect())
}

/// The value of a `Constant` node, from whichever `value*` attribute it carries.
fn constant(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let attrs = ctx.attrs;
    if let Some(t) = attrs.tensor("value") {
        return tensor::facts_from_tensor(t);
    }
    let ints = |v: &[i64]| {
        (v.len() <= tensor::MAX_VALUE_ELEMENTS).then(|| v.iter().map(|&x| Some(Poly::constant(x))).collect())
    };
    let floats = |v: &[f32]| (v.len() <= tensor::MAX_VALUE_ELEMENTS).then(|| v.iter().map(|&x| x as f64).collect());
    let of = |elem, shape| ValueFacts::tensor(Some(elem), shape);
    if let Some(f) = attrs.float("value_float") {
        return ValueFacts { floats: Some(vec![f as f64]), ..of(1, Shape::scalar()) };
    }
    if let Some(a) = attrs.get("value_floats") {
        return ValueFacts { floats: floats(&a.floats), ..of(1, Shape::known(&[a.floats.len() as u64])) };
    }
    if let Some(i) = attrs.int("value_int") {
        return ValueFacts { value: Some(vec![Some(Poly::constant(i))]), ..of(INT64, Shape::scalar()) };
    }
    if let Some(a) = attrs.get("value_ints") {
        return ValueFacts { value: ints(&a.ints), ..of(INT64, Shape::known(&[a.ints.len() as u64])) };
    }
    if attrs.get("value_string").is_some() {
        return of(8, Shape::scalar());
    }
    if let Some(a) = attrs.get("value_strings") {
        return of(8, Shape::known(&[a.strings.len() as u64]));
    }
    if let Some(s) = attrs.get("sparse_value").and_then(|a| a.sparse_tensor.as_ref()) {
        let shape = Shape::ranked(s.dims.iter().map(|&d| tensor::value_dim(&Some(Poly::constant(d)))).collect());
        return ValueFacts::tensor(s.values.as_ref().and_then(|v| v.data_type), shape);
    }
    ValueFacts::unknown()
}
