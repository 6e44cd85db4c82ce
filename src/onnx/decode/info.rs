//! A value's declaration (`ValueInfoProto`) read from contiguous bytes, as [`super`] reads nodes: the common form,
//! a name, a tensor type of an element type and dims (`dim_value` or `dim_param`), and metadata, or `None` for
//! prost to read. Why: PyTorch's exporter declares every value of a graph, and prost's generated code spent ~2,600
//! instructions on each (five nested messages, each through the `Buf` trait), as much as the nodes they declare.
//!
//! Each message is merged as prost merges it: a field met twice is merged again (a message into the one there, a
//! number or string replacing the one there, a dim appended), so that the value is prost's for any order of fields.

use prost::encoding::WireType;

use super::{key, payload, reserve_run, string, varint};
use crate::onnx::pb::field::{self, entry, type_proto, value_info};
use crate::onnx::pb::tensor_shape_proto::{dimension::Value, Dimension};
use crate::onnx::pb::{type_proto::Tensor, StringStringEntryProto, TensorShapeProto, TypeProto, ValueInfoProto};

/// How many levels of messages a declaration nests below its fields: type, tensor type, shape, dim. A body reads
/// declarations here only when prost's recursion limit leaves room for them all.
pub(super) const DEPTH: usize = 4;

const LEN: WireType = WireType::LengthDelimited;

/// `info` (a default one) decoded from its bytes; `None` where prost's code should decode it.
pub(super) fn decode_value_info(bytes: &[u8], info: &mut ValueInfoProto) -> Option<()> {
    use value_info::*;
    let mut rest = bytes;
    while !rest.is_empty() {
        match key(&mut rest)? {
            (NAME, LEN) => info.name = Some(string(&mut rest)?),
            (TYPE, LEN) => of_type(payload(&mut rest)?, info.r#type.get_or_insert_with(Default::default))?,
            (METADATA_PROPS, LEN) => {
                let entry = metadata(payload(&mut rest)?)?;
                reserve_run(&mut info.metadata_props, (METADATA_PROPS << 3 | field::LEN) as u8, rest);
                info.metadata_props.push(entry);
            }
            _ => return None,
        }
    }
    Some(())
}

/// A `TypeProto` holding a tensor type, merged into `ty`.
fn of_type(mut rest: &[u8], ty: &mut TypeProto) -> Option<()> {
    while !rest.is_empty() {
        match key(&mut rest)? {
            (type_proto::TENSOR_TYPE, LEN) => {
                tensor(payload(&mut rest)?, ty.tensor_type.get_or_insert_with(Default::default))?
            }
            _ => return None,
        }
    }
    Some(())
}

/// A `TypeProto.Tensor`, merged into `tensor`.
fn tensor(mut rest: &[u8], tensor: &mut Tensor) -> Option<()> {
    while !rest.is_empty() {
        match key(&mut rest)? {
            // prost reads an int32 as a varint cast to the type.
            (type_proto::ELEM_TYPE, WireType::Varint) => tensor.elem_type = Some(varint(&mut rest)? as i32),
            (type_proto::SHAPE, LEN) => shape(payload(&mut rest)?, tensor.shape.get_or_insert_with(Default::default))?,
            _ => return None,
        }
    }
    Some(())
}

/// A `TensorShapeProto`: its dims appended to `shape`'s.
fn shape(mut rest: &[u8], shape: &mut TensorShapeProto) -> Option<()> {
    while !rest.is_empty() {
        match key(&mut rest)? {
            (type_proto::DIM, LEN) => {
                let dim = dim(payload(&mut rest)?)?;
                reserve_run(&mut shape.dim, (type_proto::DIM << 3 | field::LEN) as u8, rest);
                shape.dim.push(dim);
            }
            _ => return None,
        }
    }
    Some(())
}

/// A `Dimension` of a value or a name (the last one written, as prost's oneof keeps), without a denotation.
fn dim(mut rest: &[u8]) -> Option<Dimension> {
    let mut dim = Dimension::default();
    while !rest.is_empty() {
        dim.value = Some(match key(&mut rest)? {
            (type_proto::DIM_VALUE, WireType::Varint) => Value::DimValue(varint(&mut rest)? as i64),
            (type_proto::DIM_PARAM, LEN) => Value::DimParam(string(&mut rest)?),
            _ => return None,
        });
    }
    Some(dim)
}

/// A `StringStringEntryProto` (a declaration's or a node's metadata entry).
pub(super) fn metadata(mut rest: &[u8]) -> Option<StringStringEntryProto> {
    let mut pair = StringStringEntryProto::default();
    while !rest.is_empty() {
        match key(&mut rest)? {
            (entry::KEY, LEN) => pair.key = Some(string(&mut rest)?),
            (entry::VALUE, LEN) => pair.value = Some(string(&mut rest)?),
            _ => return None,
        }
    }
    Some(pair)
}
