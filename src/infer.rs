//! Shape inference for ops that do not broadcast: a per-op table, extended op by op.
//!
//! Broadcasting ops get their output shapes from the broadcast rules themselves (see `analysis`). An op without
//! a rule here gives outputs of unknown type and shape, never an error.

use crate::attr::Attrs;
use crate::shape::{Dim, Shape};
use crate::tensor::{self, ValueFacts, BOOL};

/// Ops whose single output has the shape and type of their first input.
const SHAPE_PRESERVING: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Ceil",
    "Celu",
    "Cos",
    "Cosh",
    "Elu",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "LeakyRelu",
    "Log",
    "LogSoftmax",
    "LpNormalization",
    "LRN",
    "MeanVarianceNormalization",
    "Mish",
    "Neg",
    "Not",
    "Reciprocal",
    "Relu",
    "Round",
    "Selu",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Softmax",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
    "Clip",
    "BitwiseNot",
    "Swish",
];

/// Ops whose single output has the shape of their first input and is boolean.
const SHAPE_PRESERVING_BOOL: &[&str] = &["IsNaN", "IsInf"];

/// Infers the outputs of a non-broadcasting node. `inputs` holds the facts of each input position (`None` for
/// an absent optional input or an unknown value).
pub fn infer(op: &str, attrs: Attrs<'_>, inputs: &[Option<&ValueFacts>], outputs: usize) -> Vec<ValueFacts> {
    let input = |i: usize| inputs.get(i).copied().flatten();
    let first = input(0).cloned().unwrap_or_default();
    let same_shape = |elem| ValueFacts { elem, shape: first.shape.clone(), value: None };
    let mut result = match op {
        "Identity" => vec![first.clone()],
        _ if SHAPE_PRESERVING.contains(&op) => vec![same_shape(first.elem)],
        _ if SHAPE_PRESERVING_BOOL.contains(&op) => vec![same_shape(Some(BOOL))],
        // Casting an integer vector keeps its contents when the target is an integer type too.
        "Cast" => {
            let to = attrs.int("to").and_then(|t| i32::try_from(t).ok());
            let keeps = matches!(to, Some(tensor::INT64 | tensor::INT32));
            vec![ValueFacts { elem: to, shape: first.shape.clone(), value: first.value.clone().filter(|_| keeps) }]
        }
        "CastLike" => vec![same_shape(input(1).and_then(|t| t.elem))],
        "Dropout" => vec![same_shape(first.elem), same_shape(Some(BOOL))],
        "Constant" => vec![constant(attrs)],
        _ => Vec::new(),
    };
    result.resize_with(outputs, ValueFacts::unknown);
    result
}

/// The value of a `Constant` node, from whichever `value*` attribute it carries.
fn constant(attrs: Attrs<'_>) -> ValueFacts {
    if let Some(t) = attrs.tensor("value") {
        return tensor::facts_from_tensor(t);
    }
    let vector = |elem, n: usize, value| ValueFacts { elem: Some(elem), shape: Shape::known(&[n as u64]), value };
    let scalar = |elem, value| ValueFacts { elem: Some(elem), shape: Shape::scalar(), value };
    let Some(attr) =
        ["value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings", "sparse_value"]
            .into_iter()
            .find_map(|name| attrs.get(name).map(|a| (name, a)))
    else {
        return ValueFacts::unknown();
    };
    match attr {
        ("value_float", _) => scalar(1, None),
        ("value_floats", a) => vector(1, a.floats.len(), None),
        ("value_int", a) => scalar(tensor::INT64, a.i.map(|v| vec![tensor::int_dim(v)])),
        ("value_ints", a) => vector(tensor::INT64, a.ints.len(), small_ints(&a.ints)),
        ("value_string", _) => scalar(8, None),
        ("value_strings", a) => vector(8, a.strings.len(), None),
        (_, a) => a
            .sparse_tensor
            .as_ref()
            .map(|s| ValueFacts {
                elem: s.values.as_ref().and_then(|v| v.data_type),
                shape: Shape::ranked(s.dims.iter().map(|&d| tensor::int_dim(d)).collect()),
                value: None,
            })
            .unwrap_or_default(),
    }
}

fn small_ints(values: &[i64]) -> Option<Vec<Dim>> {
    (values.len() <= tensor::MAX_VALUE_ELEMENTS).then(|| values.iter().map(|&v| tensor::int_dim(v)).collect())
}
