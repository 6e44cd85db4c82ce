//! Element types and the facts that tensors and type declarations give about values.

use crate::onnx::pb::{tensor_proto::DataLocation, DataType, TensorProto, TensorShapeProto, TypeProto};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

/// The most elements of an integer tensor whose values shape inference reads (shape vectors, axes).
pub const MAX_VALUE_ELEMENTS: usize = 64;

pub const BOOL: i32 = DataType::Bool as i32;
pub const INT64: i32 = DataType::Int64 as i32;
pub const INT32: i32 = DataType::Int32 as i32;

pub use crate::onnx::pb::elem_type_name;

/// One element of a small integer tensor: its exact value (a constant or a symbolic expression), or unknown.
pub type IntValue = Option<Poly>;

/// What kind of value a value is (ONNX `docs/IR.md`, "Input / Output Data Types"). The facts of a container are
/// those of the tensors it holds: a sequence's `elem` and `shape` are what every element shares, an optional's those
/// of the tensor it may hold, a map's `elem` the type of its values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    #[default]
    Tensor,
    SparseTensor,
    Sequence,
    /// An optional tensor.
    Optional,
    /// An optional sequence of tensors.
    OptionalSequence,
    /// A map from keys of element type `key` (ai.onnx.ml: DictVectorizer's and CastMap's inputs).
    Map {
        key: i32,
    },
    /// A sequence of maps (ai.onnx.ml ZipMap's output).
    SequenceOfMaps {
        key: i32,
    },
    /// A type this tool does not follow (opaque, or nested deeper than the above): nothing is known of it.
    Other,
}

impl Kind {
    /// The name `shapes --format json` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tensor => "tensor",
            Kind::SparseTensor => "sparse_tensor",
            Kind::Sequence => "sequence",
            Kind::Optional => "optional",
            Kind::OptionalSequence => "optional_sequence",
            Kind::Map { .. } => "map",
            Kind::SequenceOfMaps { .. } => "sequence_map",
            Kind::Other => "other",
        }
    }

    /// Whether values of this kind are sized like one tensor: a size, named or not, is one size there (the elements
    /// of a sequence or the values of a map may each have their own).
    pub fn is_tensor(self) -> bool {
        matches!(self, Kind::Tensor | Kind::SparseTensor | Kind::Optional)
    }
}

/// What is known about one value: its element type, its shape, and for small tensors their contents (integer
/// contents as polynomials, so that symbolic sizes flow through shape computations).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueFacts {
    pub elem: Option<i32>,
    pub shape: Shape,
    /// The contents of a small integer or boolean tensor, row-major.
    pub value: Option<Vec<IntValue>>,
    /// The contents of a small floating-point tensor (Resize scales, say).
    pub floats: Option<Vec<f64>>,
    /// The value follows a contradiction (an op whose inputs break its specification, or that reads such a value):
    /// no run of the model reaches it, so nothing is known of it and nothing is derived from it.
    pub contradicted: bool,
    /// A tensor, unless said otherwise; `elem` and `shape` then describe the tensors the value holds.
    pub kind: Kind,
}

impl ValueFacts {
    /// A tensor of known element type and shape, contents unknown.
    pub fn tensor(elem: Option<i32>, shape: Shape) -> ValueFacts {
        ValueFacts { elem, shape, value: None, floats: None, contradicted: false, kind: Kind::Tensor }
    }

    /// A value of `kind` holding tensors of this element type and shape.
    pub fn of_kind(kind: Kind, elem: Option<i32>, shape: Shape) -> ValueFacts {
        ValueFacts { kind, ..ValueFacts::tensor(elem, shape) }
    }

    /// Nothing is known: not even that it is a tensor.
    fn knows_nothing(&self) -> bool {
        self.kind == Kind::Tensor && self.elem.is_none() && self.shape.dims().is_none() && self.value.is_none()
    }

    pub fn unknown() -> ValueFacts {
        ValueFacts::default()
    }

    /// A value that follows a contradiction: unknown, and marked so that what reads it is too.
    pub fn contradicted() -> ValueFacts {
        ValueFacts { contradicted: true, ..ValueFacts::default() }
    }

    /// Fills what `self` leaves unknown from `declared` (a value_info or graph output). Inferred facts win where
    /// both are known; contradictions are left for the caller to report.
    pub fn filled_from(mut self, declared: &ValueFacts) -> ValueFacts {
        // A declaration says nothing about a value no run reaches.
        if self.contradicted {
            return self;
        }
        if self.knows_nothing() {
            self.kind = declared.kind;
        } else if self.kind != declared.kind {
            return self;
        }
        self.elem = self.elem.or(declared.elem);
        match (&mut self.shape.0, declared.shape.dims()) {
            (None, Some(_)) => self.shape = declared.shape.clone(),
            (Some(mine), Some(theirs)) if mine.len() == theirs.len() => {
                for (m, t) in mine.iter_mut().zip(theirs) {
                    // A fresh symbol says only "some size": a declaration says more.
                    if matches!(m, Dim::Unknown) || (m.is_fresh() && !matches!(t, Dim::Unknown)) {
                        *m = t.clone();
                    }
                }
            }
            _ => {}
        }
        self
    }
}

/// How a declaration contradicts inferred facts: a different element type, rank, or known size.
pub fn contradiction(inferred: &ValueFacts, declared: &ValueFacts) -> Option<String> {
    if inferred.kind != declared.kind {
        // Only a value inference knows something of is claimed to be of its kind.
        let claims = !inferred.knows_nothing() && ![inferred.kind, declared.kind].contains(&Kind::Other);
        return claims.then(|| format!("declared a {}, inferred a {}", declared.kind.name(), inferred.kind.name()));
    }
    if let (Some(i), Some(d)) = (inferred.elem, declared.elem) {
        if i != d {
            return Some(format!("declared {}, inferred {}", elem_type_name(d), elem_type_name(i)));
        }
    }
    let (Some(i), Some(d)) = (inferred.shape.dims(), declared.shape.dims()) else { return None };
    if i.len() != d.len() {
        return Some(format!(
            "declared rank {} {}, inferred rank {} {}",
            d.len(),
            declared.shape,
            i.len(),
            inferred.shape
        ));
    }
    let axis = i.iter().zip(d).position(|(a, b)| matches!((a, b), (Dim::Known(x), Dim::Known(y)) if x != y))?;
    Some(format!("declared {}, inferred {} (axis {axis})", declared.shape, inferred.shape))
}

/// A shape declaration, with the axes whose dim_value is negative (read as unknown). With `expressions`, a
/// `dim_param` that reads as an expression over symbols (`2*s0`, `floor(height/2 - 1/2) + 1`, as PyTorch declares
/// derived sizes) is that expression; a graph input's `dim_param` is always a name standing for itself, since
/// ONNX gives it no other meaning and two inputs may well be named `T` and `2*T` independently.
pub fn shape_from_proto(shape: Option<&TensorShapeProto>, negative_axes: &mut Vec<usize>, expressions: bool) -> Shape {
    use crate::onnx::pb::tensor_shape_proto::dimension::Value;
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
                // Some exporters (Paddle) write "?" for "unnamed": that names no size, and names starting with '?'
                // are the fresh symbols inference makes, which must never alias a declared one.
                Some(Value::DimParam(p)) if !p.is_empty() && !p.starts_with('?') && expressions => {
                    Dim::from_dim_param(p)
                }
                Some(Value::DimParam(p)) if !p.is_empty() && !p.starts_with('?') => Dim::sym(p),
                _ => Dim::Unknown,
            })
            .collect(),
    )
}

/// Facts from a declared type: a tensor's, or those of the tensors a sequence, optional or map holds. A type of
/// no declared kind says nothing; opaque types and deeper nestings are [`Kind::Other`].
pub fn facts_from_type(ty: Option<&TypeProto>, negative_axes: &mut Vec<usize>, expressions: bool) -> ValueFacts {
    let Some(ty) = ty else { return ValueFacts::unknown() };
    let mut tensor = |kind: Kind, t: &crate::onnx::pb::type_proto::Tensor| {
        let mut shape = shape_from_proto(t.shape.as_ref(), negative_axes, expressions);
        // The elements of a sequence each have their own sizes where a name stands (ONNX's own test data declares
        // `seq(float[N])` holding tensors of 6, 1 and 4 elements): only a number is one size for all.
        if !kind.is_tensor() {
            shape = per_element(shape);
        }
        ValueFacts::of_kind(kind, t.elem_type.filter(|&e| e != 0), shape)
    };
    let other = ValueFacts::of_kind(Kind::Other, None, Shape::unranked());
    if let Some(t) = &ty.tensor_type {
        return tensor(Kind::Tensor, t);
    }
    if let Some(t) = &ty.sparse_tensor_type {
        let t = crate::onnx::pb::type_proto::Tensor { elem_type: t.elem_type, shape: t.shape.clone() };
        return tensor(Kind::SparseTensor, &t);
    }
    let inner = |t: &Option<Box<TypeProto>>| t.as_deref().cloned().unwrap_or_default();
    if let Some(s) = &ty.sequence_type {
        let elem = inner(&s.elem_type);
        return match (&elem.tensor_type, &elem.map_type) {
            (Some(t), _) => tensor(Kind::Sequence, t),
            (None, Some(m)) => map_facts(m, true, negative_axes, expressions),
            _ => other,
        };
    }
    if let Some(o) = &ty.optional_type {
        let elem = inner(&o.elem_type);
        if let Some(t) = &elem.tensor_type {
            return tensor(Kind::Optional, t);
        }
        return match elem.sequence_type.as_deref().map(|s| inner(&s.elem_type)).and_then(|e| e.tensor_type) {
            Some(t) => tensor(Kind::OptionalSequence, &t),
            None => other,
        };
    }
    if let Some(m) = &ty.map_type {
        return map_facts(m, false, negative_axes, expressions);
    }
    if ty.opaque_type.is_some() {
        return other;
    }
    ValueFacts::unknown()
}

/// A shape every element of a container has: its known sizes, the others unknown.
fn per_element(shape: Shape) -> Shape {
    match shape.0 {
        Some(dims) => {
            Shape::ranked(dims.into_iter().map(|d| if d.known().is_some() { d } else { Dim::Unknown }).collect())
        }
        None => shape,
    }
}

/// A map's facts (or a sequence of maps'): its key type, and its values' tensor facts.
fn map_facts(
    m: &crate::onnx::pb::type_proto::Map,
    in_sequence: bool,
    negative_axes: &mut Vec<usize>,
    expressions: bool,
) -> ValueFacts {
    let Some(key) = m.key_type.filter(|&k| k != 0) else {
        return ValueFacts::of_kind(Kind::Other, None, Shape::unranked());
    };
    let kind = if in_sequence { Kind::SequenceOfMaps { key } } else { Kind::Map { key } };
    let values = facts_from_type(m.value_type.as_deref(), negative_axes, expressions);
    match values.kind {
        Kind::Tensor => ValueFacts { kind, shape: per_element(values.shape), ..values },
        _ => ValueFacts::of_kind(Kind::Other, None, Shape::unranked()),
    }
}

/// Facts from a tensor (initializer or Constant). Only small tensors stored in the file are read.
pub fn facts_from_tensor(t: &TensorProto) -> ValueFacts {
    ValueFacts { floats: float_values(t), ..facts_from_tensor_but_floats(t) }
}

/// [`facts_from_tensor`] without the floating-point contents ([`float_values`]), which few ops read: a walk reads
/// them for an initializer only when a node that may ask for them reads it.
pub fn facts_from_tensor_but_floats(t: &TensorProto) -> ValueFacts {
    let shape =
        Shape::ranked(t.dims.iter().map(|&d| if d >= 0 { Dim::Known(d as u64) } else { Dim::Unknown }).collect());
    let value = int_values(t).map(|v| v.into_iter().map(|x| Some(Poly::constant(x))).collect());
    ValueFacts { value, ..ValueFacts::tensor(valid_elem(t.data_type()), shape) }
}

/// A tensor's element type, when it is one: `UNDEFINED` (0, also what an unset `data_type` reads as) and numbers
/// outside `TensorProto.DataType` are none, and the tensor is refused ([`data_mismatch`]) as onnxruntime refuses it.
pub fn valid_elem(data_type: i32) -> Option<i32> {
    match DataType::try_from(data_type) {
        Ok(DataType::Undefined) | Err(_) => None,
        Ok(_) => Some(data_type),
    }
}

/// `0 (UNDEFINED)`, or the number.
fn elem_label(data_type: i32) -> String {
    match data_type {
        0 => "0 (UNDEFINED)".to_string(),
        n => n.to_string(),
    }
}

/// A shape-vector entry as a dim; unknown and negative entries (Reshape's -1, say) are not sizes.
pub fn value_dim(v: &IntValue) -> Dim {
    v.clone().map_or(Dim::Unknown, Dim::from_poly)
}

/// A dim as a shape-vector entry.
pub fn dim_value(d: &Dim) -> IntValue {
    d.to_poly()
}

/// The element count of a tensor held in the file with at most [`MAX_VALUE_ELEMENTS`] elements.
fn small_count(t: &TensorProto) -> Option<usize> {
    if t.data_location == Some(DataLocation::External as i32) {
        return None;
    }
    let count = t.dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))?;
    (count <= MAX_VALUE_ELEMENTS).then_some(count)
}

/// The contents of a small int32/int64 tensor held in the file.
#[inline]
pub fn int_values(t: &TensorProto) -> Option<Vec<i64>> {
    // The element type first, without a call: most tensors (every initializer's facts ask) are not integers, and
    // their dims need not be multiplied out.
    int_contents(t, int_elem(t)?)
}

/// The element type of `t` when it is one whose contents [`int_values`] reads.
#[inline]
fn int_elem(t: &TensorProto) -> Option<DataType> {
    use DataType::{Bool, Int16, Int32, Int64, Int8, Uint16, Uint8};
    let elem = DataType::try_from(t.data_type?).ok()?;
    matches!(elem, Bool | Uint8 | Int8 | Uint16 | Int16 | Int32 | Int64).then_some(elem)
}

/// Whether [`facts_from_tensor_but_floats`] of `t` depends on its element type (as `data_type()` reads it) and
/// dims alone, as for every tensor but an integer one: a walk then makes them once for all tensors alike.
pub fn facts_by_type_and_dims(t: &TensorProto) -> bool {
    int_elem(t).is_none()
}

/// [`int_values`] of a tensor of integer element type `elem`.
fn int_contents(t: &TensorProto, elem: DataType) -> Option<Vec<i64>> {
    use DataType::{Bool, Int16, Int32, Int64, Int8, Uint16, Uint8};
    let count = small_count(t)?;
    let values: Vec<i64> = match (elem, t.raw_data.as_ref()) {
        (Int8, Some(raw)) => raw.iter().map(|&b| b as i8 as i64).collect(),
        (Bool | Uint8, Some(raw)) => raw.iter().map(|&b| b as i64).collect(),
        (Bool | Uint8 | Int8 | Uint16 | Int16, None) => t.int32_data.iter().map(|&v| v as i64).collect(),
        (Int64, Some(raw)) => raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
        (Int32, Some(raw)) => {
            raw.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")) as i64).collect()
        }
        (Int64, None) => t.int64_data.clone(),
        (Int32, None) => t.int32_data.iter().map(|&v| v as i64).collect(),
        _ => return None,
    };
    (values.len() == count).then_some(values)
}

/// The contents of a small float/double tensor held in the file.
pub fn float_values(t: &TensorProto) -> Option<Vec<f64>> {
    let count = small_count(t)?;
    let values: Vec<f64> = match (DataType::try_from(t.data_type?).ok()?, t.raw_data.as_ref()) {
        (DataType::Float, Some(raw)) => {
            raw.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")) as f64).collect()
        }
        (DataType::Double, Some(raw)) => {
            raw.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
        }
        (DataType::Float, None) => t.float_data.iter().map(|&v| v as f64).collect(),
        (DataType::Double, None) => t.double_data.clone(),
        _ => return None,
    };
    (values.len() == count).then_some(values)
}

/// How a tensor's stored data disagrees with its dims and type, if it does (data kept outside the file is not
/// looked at here).
#[inline]
pub fn data_mismatch(t: &TensorProto) -> Option<String> {
    // The usual tensor (every small initializer) first, without a call: raw data in the file, of a fixed-size
    // element type, as long as its dims need. Every check of `mismatch` then passes, so this only answers sooner.
    if let (Some(raw), Some(size), None) =
        (&t.raw_data, t.data_type.and_then(crate::onnx::pb::raw_size), t.data_location)
    {
        let count = t.dims.iter().try_fold(size as u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?));
        if count == Some(raw.len() as u64) {
            return None;
        }
    }
    mismatch(t)
}

/// [`data_mismatch`], every case.
fn mismatch(t: &TensorProto) -> Option<String> {
    if valid_elem(t.data_type()).is_none() {
        return Some(format!("has data_type {}, which is no element type", elem_label(t.data_type())));
    }
    if t.data_location == Some(DataLocation::External as i32) {
        return None;
    }
    let count = t.dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?));
    let Some(count) = count else {
        return Some(format!("has dims {:?}, whose element count is negative or overflows", t.dims));
    };
    let dt = t.data_type?;
    let (found, unit) = if let Some(raw) = &t.raw_data {
        let size = crate::onnx::pb::raw_size(dt)? as u64;
        (raw.len() as u64, size)
    } else {
        use DataType::*;
        let n = match DataType::try_from(dt).ok()? {
            Float => t.float_data.len() as u64,
            Complex64 => t.float_data.len() as u64 / 2,
            Double => t.double_data.len() as u64,
            Complex128 => t.double_data.len() as u64 / 2,
            Int64 => t.int64_data.len() as u64,
            Uint32 | Uint64 => t.uint64_data.len() as u64,
            String => t.string_data.len() as u64,
            Uint8 | Int8 | Uint16 | Int16 | Int32 | Bool | Float16 | Bfloat16 | Float8e4m3fn | Float8e4m3fnuz
            | Float8e5m2 | Float8e5m2fnuz | Float8e8m0 => t.int32_data.len() as u64,
            Undefined | Uint4 | Int4 | Float4e2m1 | Uint2 | Int2 => return None,
        };
        (n, 1)
    };
    let needed = count.checked_mul(unit)?;
    (found != needed).then(|| {
        let what = if unit == 1 { "elements" } else { "bytes" };
        format!("holds {found} {what} of {} data where dims {:?} need {needed}", elem_type_name(dt), t.dims)
    })
}

/// A model whose caller left the data of some main-graph initializers out (`raw_data` of `(index, byte length)`),
/// to analyse it without copying gigabytes (the Python API's `check` of an `onnx.ModelProto`): each such tensor gets
/// that many zero bytes, views of one anonymous map whose pages are never touched. Analysis reads the values of a
/// tensor only when its dims hold at most [`MAX_VALUE_ELEMENTS`] elements and its data has exactly their size (at
/// most 1 KiB), and only the length of any other, so it judges the model exactly as with the real data as long as
/// every tensor left out has more elements than that or more data than 1 KiB; others are refused. For analysis
/// only: the zeros are never to be written.
pub fn with_placeholder_data(
    mut model: crate::onnx::model::Model,
    left_out: &[(usize, usize)],
) -> Result<crate::onnx::model::Model, crate::onnx::model::LoadError> {
    let path = model.path().to_path_buf();
    let refuse = |reason: String| crate::onnx::model::LoadError::Decode { path: path.clone(), reason };
    let longest = left_out.iter().map(|&(_, len)| len).max().unwrap_or(0);
    let zeros = match longest {
        0 => bytes::Bytes::new(),
        n => memmap2::MmapMut::map_anon(n)
            .and_then(|map| map.make_read_only())
            .map(bytes::Bytes::from_owner)
            .map_err(|e| refuse(format!("cannot map {n} bytes to stand for tensor data: {e}")))?,
    };
    let initializers = model.proto().graph.as_ref().map_or(&[][..], |g| &g.initializer[..]);
    let values_read = |index: usize, len: usize| {
        let Some(t) = initializers.get(index) else { return true };
        let count = t.dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?));
        count.is_some_and(|c| c <= MAX_VALUE_ELEMENTS as u64) && len <= 16 * MAX_VALUE_ELEMENTS
    };
    let refused: Vec<usize> = left_out.iter().filter(|&&(i, len)| values_read(i, len)).map(|&(i, _)| i).collect();
    for &(index, len) in left_out {
        if refused.contains(&index) || !model.fill_left_out_data(index, zeros.slice(..len)) {
            return Err(refuse(format!("initializer {index} cannot stand for {len} bytes left out")));
        }
    }
    Ok(model)
}

#[cfg(test)]
mod placeholder_tests {
    /// `with_placeholder_data` stands in for the data of a tensor whose values analysis never reads, with its
    /// exact length (so tensor-data-mismatch still sees a wrong size), and refuses one whose values it would read.
    #[test]
    fn placeholder_data_only_for_tensors_whose_values_are_never_read() {
        use crate::onnx::pb::{GraphProto, ModelProto, TensorProto};
        use prost::Message;
        let tensor = |name: &str, dims: Vec<i64>| TensorProto {
            name: Some(name.into()),
            dims,
            data_type: Some(crate::onnx::pb::DataType::Float as i32),
            ..Default::default()
        };
        let graph =
            GraphProto { initializer: vec![tensor("w", vec![256, 512]), tensor("s", vec![4])], ..Default::default() };
        let bytes = ModelProto { graph: Some(graph), ..Default::default() }.encode_to_vec();
        let open = || crate::onnx::model::Model::from_bytes("<bytes>", bytes.clone().into()).unwrap();
        let model = super::with_placeholder_data(open(), &[(0, 256 * 512 * 4 - 8)]).unwrap();
        let w = &model.proto().graph.as_ref().unwrap().initializer[0];
        assert_eq!(w.raw_data.as_ref().map(|d| d.len()), Some(256 * 512 * 4 - 8));
        assert!(w.raw_data.as_ref().unwrap().iter().all(|&b| b == 0));
        assert!(super::data_mismatch(w).is_some(), "the length is the caller's, short by 8 bytes");
        assert!(super::with_placeholder_data(open(), &[(1, 16)]).is_err(), "4 elements: analysis reads their values");
        assert!(super::with_placeholder_data(open(), &[(2, 4096)]).is_err(), "no such initializer");
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;
    use crate::onnx::pb::type_proto;

    fn tensor_type(elem: i32, dims: &[i64]) -> Box<TypeProto> {
        use crate::onnx::pb::tensor_shape_proto::{dimension::Value, Dimension};
        let dim = dims.iter().map(|&d| Dimension { value: Some(Value::DimValue(d)), denotation: None }).collect();
        let shape = Some(TensorShapeProto { dim });
        Box::new(TypeProto {
            tensor_type: Some(type_proto::Tensor { elem_type: Some(elem), shape }),
            ..Default::default()
        })
    }

    fn sequence_of(elem: Box<TypeProto>) -> TypeProto {
        TypeProto {
            sequence_type: Some(Box::new(type_proto::Sequence { elem_type: Some(elem) })),
            ..Default::default()
        }
    }

    #[test]
    fn declared_sequences_optionals_and_maps_give_the_facts_of_the_tensors_they_hold() {
        let facts = |t: &TypeProto| facts_from_type(Some(t), &mut Vec::new(), false);
        let seq = facts(&sequence_of(tensor_type(1, &[2, 3])));
        assert_eq!(seq, ValueFacts::of_kind(Kind::Sequence, Some(1), Shape::known(&[2, 3])));
        let optional_seq = TypeProto {
            optional_type: Some(Box::new(type_proto::Optional {
                elem_type: Some(Box::new(sequence_of(tensor_type(7, &[4])))),
            })),
            ..Default::default()
        };
        assert_eq!(facts(&optional_seq).kind, Kind::OptionalSequence);
        let map = Box::new(type_proto::Map { key_type: Some(8), value_type: Some(tensor_type(1, &[])) });
        let zipmap = sequence_of(Box::new(TypeProto { map_type: Some(map), ..Default::default() }));
        assert_eq!(facts(&zipmap), ValueFacts::of_kind(Kind::SequenceOfMaps { key: 8 }, Some(1), Shape::scalar()));
        let nested = sequence_of(Box::new(sequence_of(tensor_type(1, &[]))));
        assert_eq!(facts(&nested).kind, Kind::Other, "a sequence of sequences is not followed");
    }

    /// ONNX's backend test `test_sequence_map_add_2_sequences` declares `seq(float[N])` and feeds tensors of 6, 1
    /// and 4 elements: a name in a sequence's element type is no one size.
    #[test]
    fn a_named_size_in_a_sequence_element_type_is_unknown() {
        use crate::onnx::pb::tensor_shape_proto::{dimension::Value, Dimension};
        let mut elem = tensor_type(1, &[3]);
        let shape = elem.tensor_type.as_mut().unwrap().shape.as_mut().unwrap();
        shape.dim.insert(0, Dimension { value: Some(Value::DimParam("N".into())), denotation: None });
        let seq = facts_from_type(Some(&sequence_of(elem.clone())), &mut Vec::new(), false);
        assert_eq!(seq.shape, Shape::ranked(vec![Dim::Unknown, Dim::Known(3)]));
        let tensor = facts_from_type(Some(&elem), &mut Vec::new(), false);
        assert_eq!(tensor.shape, Shape::ranked(vec![Dim::sym("N"), Dim::Known(3)]));
    }

    #[test]
    fn a_declared_kind_fills_nothing_known_and_contradicts_a_known_tensor() {
        let declared = ValueFacts::of_kind(Kind::Sequence, Some(1), Shape::known(&[2]));
        assert_eq!(ValueFacts::unknown().filled_from(&declared), declared);
        let tensor = ValueFacts::tensor(Some(1), Shape::known(&[2]));
        assert_eq!(tensor.clone().filled_from(&declared), tensor, "a tensor is not filled from a sequence");
        assert!(contradiction(&tensor, &declared).is_some());
        assert!(contradiction(&ValueFacts::unknown(), &declared).is_none(), "nothing inferred, nothing claimed");
        let other = ValueFacts::of_kind(Kind::Other, None, Shape::unranked());
        assert!(contradiction(&tensor, &other).is_none(), "an opaque declaration is not judged");
    }
}

#[cfg(test)]
mod mismatch_tests {
    use super::{data_mismatch, mismatch, DataLocation, TensorProto};
    use bytes::Bytes;

    /// `data_mismatch` answers the usual raw-data tensor before its full checks: the answer must be theirs for
    /// every element type (invalid ones too), dims (empty, zero, negative, overflowing), data length and location.
    #[test]
    fn the_quick_answer_for_raw_data_is_the_full_checks_answer() {
        let dims: [&[i64]; 8] = [&[], &[0], &[3], &[2, 3], &[-1, 3], &[i64::MAX, 2], &[1 << 32, 1 << 32], &[1, 6]];
        let types = (0..=27).chain([100, -1]);
        let lengths = [None, Some(0), Some(3), Some(6), Some(12), Some(24), Some(48), Some(96)];
        let locations = [None, Some(0), Some(DataLocation::External as i32)];
        let mut usual = 0;
        for data_type in types {
            for dims in dims {
                for len in lengths {
                    for location in locations {
                        let t = TensorProto {
                            dims: dims.to_vec(),
                            data_type: Some(data_type),
                            raw_data: len.map(|n| Bytes::from(vec![0u8; n])),
                            data_location: location,
                            ..Default::default()
                        };
                        let full = mismatch(&t);
                        usual += usize::from(full.is_none() && len.is_some() && location.is_none());
                        assert_eq!(data_mismatch(&t), full, "{t:?}");
                    }
                }
            }
        }
        assert!(usual > 50, "the quick answer was asked of {usual} fitting tensors only");
    }
}
