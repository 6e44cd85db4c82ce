//! One declaration: the inferred facts of a value written as a `ValueInfoProto`, or merged into the declaration it
//! already has. Known sizes are `dim_value`s; symbols and sizes derived from them are `dim_param`s holding their
//! text (`min(128, seq)`, `floor((H - 1) / 2) + 1`), the convention of onnxruntime's `symbolic_shape_infer`;
//! a size nothing names (a fresh symbol, or unknown) is left empty, since ONNX `docs/IR.md` ("Static tensor shapes")
//! reads an empty dimension as an unknown one and a made-up name would claim two such sizes are equal.

use crate::analysis::Bindings;
use crate::onnx::pb::tensor_shape_proto::{dimension::Value, Dimension};
use crate::onnx::pb::{type_proto, TensorShapeProto, TypeProto, ValueInfoProto};
use crate::onnx::tensor::{Kind, ValueFacts};
use crate::sizes::shape::{Dim, Shape};

/// The longest `dim_param` `infer` writes, in bytes: five times the longest derived size of the corpus of real
/// models (218 bytes, a `broadcast(…)` of strided feature-map sizes). A size whose text is longer (a model's
/// megabyte-long symbol, an expression near the budget of [`crate::sizes::sym::MAX_SIZE`] nodes) is left empty, as a size
/// nothing names is: a declaration that long helps no reader, and writing it for every value that has it would
/// multiply the model's size.
pub const MAX_DIM_PARAM: usize = 1024;

/// How a dim is written: `None` for an empty dimension.
pub fn dim_value(d: &Dim) -> Option<Value> {
    let param = |text: String| (text.len() <= MAX_DIM_PARAM).then_some(Value::DimParam(text));
    match d {
        _ if d.mentions_fresh() => None,
        Dim::Known(n) => i64::try_from(*n).ok().map(Value::DimValue),
        Dim::Sym(s) if s.len() > MAX_DIM_PARAM => None,
        Dim::Sym(s) => param(s.to_string()),
        Dim::Expr(_) | Dim::Broadcast(_) => param(d.to_string()),
        Dim::Unknown => None,
    }
}

fn dimension(value: Option<Value>) -> Dimension {
    Dimension { value, denotation: None }
}

/// The shape as written.
pub fn shape_proto(shape: &Shape) -> Option<TensorShapeProto> {
    let dims = shape.dims()?;
    Some(TensorShapeProto { dim: dims.iter().map(|d| dimension(dim_value(d))).collect() })
}

/// A new declaration of `name` from its facts; `None` when the element type is unknown (ONNX `docs/IR.md` requires
/// a tensor type's `elem_type`, and the value may not be a tensor at all).
pub fn new_declaration(name: &str, facts: &ValueFacts) -> Option<ValueInfoProto> {
    let elem = facts.elem?;
    let tensor = type_proto::Tensor { elem_type: Some(elem), shape: shape_proto(&facts.shape) };
    let of_tensor = || Box::new(TypeProto { tensor_type: Some(tensor.clone()), ..Default::default() });
    let sequence = |elem_type| Box::new(type_proto::Sequence { elem_type: Some(elem_type) });
    let map = |key| Box::new(type_proto::Map { key_type: Some(key), value_type: Some(of_tensor()) });
    let ty = match facts.kind {
        Kind::Tensor => TypeProto { tensor_type: Some(tensor.clone()), ..Default::default() },
        Kind::SparseTensor => {
            let sparse = type_proto::SparseTensor { elem_type: tensor.elem_type, shape: tensor.shape.clone() };
            TypeProto { sparse_tensor_type: Some(sparse), ..Default::default() }
        }
        Kind::Sequence => TypeProto { sequence_type: Some(sequence(of_tensor())), ..Default::default() },
        Kind::Optional => {
            let optional = type_proto::Optional { elem_type: Some(of_tensor()) };
            TypeProto { optional_type: Some(Box::new(optional)), ..Default::default() }
        }
        Kind::OptionalSequence => {
            let inner = Box::new(TypeProto { sequence_type: Some(sequence(of_tensor())), ..Default::default() });
            let optional = type_proto::Optional { elem_type: Some(inner) };
            TypeProto { optional_type: Some(Box::new(optional)), ..Default::default() }
        }
        Kind::Map { key } => TypeProto { map_type: Some(map(key)), ..Default::default() },
        Kind::SequenceOfMaps { key } => {
            let inner = Box::new(TypeProto { map_type: Some(map(key)), ..Default::default() });
            TypeProto { sequence_type: Some(sequence(inner)), ..Default::default() }
        }
        Kind::Other => return None,
    };
    Some(ValueInfoProto { name: Some(name.to_string()), r#type: Some(ty), ..Default::default() })
}

/// A declared dim with the bound symbols replaced: a `dim_param` naming or built from them becomes its size.
fn bound_dim(d: &Dimension, bindings: &Bindings) -> Dimension {
    match &d.value {
        Some(Value::DimParam(p)) if !bindings.is_empty() && !p.is_empty() => {
            match bindings.dim(&Dim::from_dim_param(p)) {
                Dim::Known(n) => Dimension { value: i64::try_from(n).ok().map(Value::DimValue), ..d.clone() },
                _ => d.clone(),
            }
        }
        _ => d.clone(),
    }
}

/// An existing tensor declaration completed from the inferred facts: the element type where none is declared, the
/// shape where none is, and on each axis a known size where inference proves one, else the declared dim (kept as
/// written, so declarations that agree stay), else the inferred one. With `replace`, the inferred facts win
/// everywhere they say something (`--overwrite-declared` on a contradiction). Bound symbols become sizes.
/// `None` for a declaration that is not a tensor's.
pub fn merged(
    declared: &ValueInfoProto,
    facts: &ValueFacts,
    bindings: &Bindings,
    replace: bool,
) -> Option<ValueInfoProto> {
    let tensor = declared.r#type.as_ref()?.tensor_type.as_ref()?;
    let declared_elem = tensor.elem_type.filter(|&e| e != 0);
    let elem = if replace { facts.elem.or(declared_elem) } else { declared_elem.or(facts.elem) };
    let shape = match (&tensor.shape, facts.shape.dims()) {
        (None, _) => shape_proto(&facts.shape),
        (Some(s), Some(dims)) if replace && s.dim.len() != dims.len() => shape_proto(&facts.shape),
        (Some(s), Some(dims)) if s.dim.len() == dims.len() => Some(TensorShapeProto {
            dim: s
                .dim
                .iter()
                .zip(dims)
                .map(|(d, inferred)| merged_dim(&bound_dim(d, bindings), inferred, replace))
                .collect(),
        }),
        (Some(s), _) => Some(TensorShapeProto { dim: s.dim.iter().map(|d| bound_dim(d, bindings)).collect() }),
    };
    let mut out = declared.clone();
    let ty = out.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()).expect("a tensor type, as above");
    ty.elem_type = elem;
    ty.shape = shape;
    Some(out)
}

fn merged_dim(declared: &Dimension, inferred: &Dim, replace: bool) -> Dimension {
    let written = dim_value(inferred);
    match (&declared.value, written) {
        (_, Some(Value::DimValue(n))) => Dimension { value: Some(Value::DimValue(n)), ..declared.clone() },
        // A negative size and Paddle's `?` name no size (as `tensor::shape_from_proto` reads them): what inference
        // knows replaces them.
        (Some(Value::DimValue(n)), _) if *n >= 0 && !replace => declared.clone(),
        (Some(Value::DimParam(p)), _) if !p.is_empty() && !p.starts_with('?') && !replace => declared.clone(),
        (_, Some(w)) => Dimension { value: Some(w), ..declared.clone() },
        (_, None) => declared.clone(),
    }
}

/// Facts of one value met at several call sites (a function body): what every call agrees on.
pub fn common(a: &ValueFacts, b: &ValueFacts) -> ValueFacts {
    if a.kind != b.kind {
        return ValueFacts::unknown();
    }
    let elem = a.elem.filter(|&e| Some(e) == b.elem);
    let shape = match (a.shape.dims(), b.shape.dims()) {
        (Some(x), Some(y)) if x.len() == y.len() => Shape::ranked(
            x.iter().zip(y).map(|(p, q)| if p.provably_eq(q) { p.clone() } else { Dim::Unknown }).collect(),
        ),
        _ => Shape::unranked(),
    };
    ValueFacts::of_kind(a.kind, elem, shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(dims: &[Option<Value>]) -> ValueInfoProto {
        let shape = Shape::ranked(vec![Dim::Unknown; dims.len()]);
        let mut vi = new_declaration("v", &ValueFacts::tensor(Some(1), shape)).unwrap();
        let t = vi.r#type.as_mut().unwrap().tensor_type.as_mut().unwrap();
        t.shape.as_mut().unwrap().dim.iter_mut().zip(dims).for_each(|(d, v)| d.value = v.clone());
        vi
    }

    fn dims(vi: &ValueInfoProto) -> Vec<Option<Value>> {
        let t = vi.r#type.as_ref().unwrap().tensor_type.as_ref().unwrap();
        t.shape.as_ref().unwrap().dim.iter().map(|d| d.value.clone()).collect()
    }

    #[test]
    fn a_derived_dim_is_written_as_its_expression_and_a_fresh_one_stays_empty() {
        assert_eq!(dim_value(&Dim::from_dim_param("Min(128, seq)")), Some(Value::DimParam("min(128, seq)".into())));
        assert_eq!(dim_value(&Dim::sym("?3")), None);
        assert_eq!(dim_value(&Dim::Known(4)), Some(Value::DimValue(4)));
    }

    #[test]
    fn a_dim_param_longer_than_the_limit_is_never_written() {
        let long = "n".repeat(MAX_DIM_PARAM + 1);
        assert_eq!(dim_value(&Dim::sym(&long)), None);
        let at_limit = "n".repeat(MAX_DIM_PARAM);
        assert_eq!(dim_value(&Dim::sym(&at_limit)), Some(Value::DimParam(at_limit.clone())));
        // An expression whose text is past the limit, although within the expression budget.
        let sum = (0..60).map(|i| format!("size_{i:02}_of_the_feature_map")).collect::<Vec<_>>().join(" + ");
        let d = Dim::from_dim_param(&sum);
        assert!(matches!(d, Dim::Expr(_)) && d.to_string().len() > MAX_DIM_PARAM, "{d}");
        assert_eq!(dim_value(&d), None);
    }

    #[test]
    fn an_agreeing_declaration_is_kept_and_its_empty_dims_filled() {
        let d = declared(&[Some(Value::DimParam("batch".into())), None]);
        let facts = ValueFacts::tensor(Some(1), Shape::ranked(vec![Dim::sym("N"), Dim::Known(3)]));
        let out = merged(&d, &facts, &Bindings::default(), false).unwrap();
        assert_eq!(dims(&out), [Some(Value::DimParam("batch".into())), Some(Value::DimValue(3))]);
    }

    #[test]
    fn a_bound_declared_symbol_becomes_its_size() {
        let d = declared(&[Some(Value::DimParam("2*seq".into()))]);
        let b = Bindings::new(&[("seq".into(), 5)]).unwrap();
        let out = merged(&d, &ValueFacts::tensor(Some(1), Shape::ranked(vec![Dim::Unknown])), &b, false).unwrap();
        assert_eq!(dims(&out), [Some(Value::DimValue(10))]);
    }

    /// A sequence is declared as a sequence of its elements' tensor type, read back as the same facts.
    #[test]
    fn a_sequence_is_declared_as_a_sequence_of_tensors() {
        let facts = ValueFacts::of_kind(Kind::Sequence, Some(1), Shape::ranked(vec![Dim::Unknown, Dim::Known(3)]));
        let vi = new_declaration("s", &facts).unwrap();
        let read = crate::onnx::tensor::facts_from_type(vi.r#type.as_ref(), &mut Vec::new(), false);
        assert_eq!(read, facts);
        let other = ValueFacts::of_kind(Kind::Other, Some(1), Shape::unranked());
        assert!(new_declaration("o", &other).is_none());
    }
}
