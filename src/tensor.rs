//! Element types and the facts that tensors and type declarations give about values.

use crate::proto::{tensor_proto::DataLocation, TensorProto, TensorShapeProto, TypeProto};
use crate::shape::{Dim, Shape};

/// The most elements of an integer tensor whose values shape inference reads (shape vectors, axes).
pub const MAX_VALUE_ELEMENTS: usize = 64;

pub const BOOL: i32 = 9;
pub const INT64: i32 = 7;
pub const INT32: i32 = 6;

/// The ONNX name of an element type, as written in messages.
pub fn elem_type_name(elem: i32) -> String {
    let name = match elem {
        1 => "float",
        2 => "uint8",
        3 => "int8",
        4 => "uint16",
        5 => "int16",
        6 => "int32",
        7 => "int64",
        8 => "string",
        9 => "bool",
        10 => "float16",
        11 => "double",
        12 => "uint32",
        13 => "uint64",
        14 => "complex64",
        15 => "complex128",
        16 => "bfloat16",
        17 => "float8e4m3fn",
        18 => "float8e4m3fnuz",
        19 => "float8e5m2",
        20 => "float8e5m2fnuz",
        21 => "uint4",
        22 => "int4",
        23 => "float4e2m1",
        24 => "float8e8m0",
        25 => "uint2",
        26 => "int2",
        other => return format!("element type {other}"),
    };
    name.to_string()
}

/// What is known about one value: its element type, its shape, and for small integer tensors their contents
/// (as dims, so that symbolic sizes can flow through shape computations later).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueFacts {
    pub elem: Option<i32>,
    pub shape: Shape,
    pub value: Option<Vec<Dim>>,
}

impl ValueFacts {
    pub fn unknown() -> ValueFacts {
        ValueFacts::default()
    }

    /// Fills what `self` leaves unknown from `declared` (a value_info or graph output). Inferred facts win where
    /// both are known; contradictions are left for the caller to report.
    pub fn filled_from(mut self, declared: &ValueFacts) -> ValueFacts {
        self.elem = self.elem.or(declared.elem);
        match (&mut self.shape.0, declared.shape.dims()) {
            (None, Some(_)) => self.shape = declared.shape.clone(),
            (Some(mine), Some(theirs)) if mine.len() == theirs.len() => {
                for (m, t) in mine.iter_mut().zip(theirs) {
                    if matches!(m, Dim::Unknown) {
                        *m = t.clone();
                    }
                }
            }
            _ => {}
        }
        self
    }
}

/// A shape declaration, with the axes whose dim_value is negative (read as unknown).
pub fn shape_from_proto(shape: Option<&TensorShapeProto>, negative_axes: &mut Vec<usize>) -> Shape {
    use crate::proto::tensor_shape_proto::dimension::Value;
    let Some(shape) = shape else { return Shape::unranked() };
    Shape::ranked(
        shape
            .dim
            .iter()
            .enumerate()
            .map(|(axis, d)| match &d.value {
                Some(Value::DimValue(v)) if *v >= 0 => Dim::Known(*v as u64),
                Some(Value::DimValue(_)) => {
                    negative_axes.push(axis);
                    Dim::Unknown
                }
                Some(Value::DimParam(p)) if !p.is_empty() => Dim::sym(p),
                _ => Dim::Unknown,
            })
            .collect(),
    )
}

/// Facts from a declared type. Sequences, maps, optionals and opaque types are not tensors: nothing is known
/// of their shape.
pub fn facts_from_type(ty: Option<&TypeProto>, negative_axes: &mut Vec<usize>) -> ValueFacts {
    let Some(ty) = ty else { return ValueFacts::unknown() };
    let (elem, shape) = if let Some(t) = &ty.tensor_type {
        (t.elem_type, t.shape.as_ref())
    } else if let Some(t) = &ty.sparse_tensor_type {
        (t.elem_type, t.shape.as_ref())
    } else {
        return ValueFacts::unknown();
    };
    ValueFacts { elem: elem.filter(|&e| e != 0), shape: shape_from_proto(shape, negative_axes), value: None }
}

/// Facts from a tensor (initializer or Constant). Only small integer tensors stored in the file are read.
pub fn facts_from_tensor(t: &TensorProto) -> ValueFacts {
    let shape =
        Shape::ranked(t.dims.iter().map(|&d| if d >= 0 { Dim::Known(d as u64) } else { Dim::Unknown }).collect());
    let value = int_values(t).map(|v| v.into_iter().map(int_dim).collect());
    ValueFacts { elem: t.data_type.filter(|&e| e != 0), shape, value }
}

/// A shape-vector entry as a dim; negative entries (Reshape's -1, say) are not sizes.
pub fn int_dim(v: i64) -> Dim {
    if v >= 0 {
        Dim::Known(v as u64)
    } else {
        Dim::Unknown
    }
}

/// The contents of a small int32/int64 tensor held in the file.
pub fn int_values(t: &TensorProto) -> Option<Vec<i64>> {
    if t.data_location == Some(DataLocation::External as i32) {
        return None;
    }
    let count = t.dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))?;
    if count > MAX_VALUE_ELEMENTS {
        return None;
    }
    let values: Vec<i64> = match (t.data_type?, t.raw_data.as_ref()) {
        (INT64, Some(raw)) => raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
        (INT32, Some(raw)) => {
            raw.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")) as i64).collect()
        }
        (INT64, None) => t.int64_data.clone(),
        (INT32, None) => t.int32_data.iter().map(|&v| v as i64).collect(),
        _ => return None,
    };
    (values.len() == count).then_some(values)
}
