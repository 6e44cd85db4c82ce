//! A value's declaration (`ValueInfoProto`) read from contiguous bytes, as [`super`] reads nodes: the common form,
//! a name, a tensor type of an element type and dims (`dim_value` or `dim_param`), and metadata, or `None` for
//! prost to read. Why: PyTorch's exporter declares every value of a graph, and prost's generated code spent ~2,600
//! instructions on each (five nested messages, each through the `Buf` trait), as much as the nodes they declare.
//!
//! Each message is merged as prost merges it: a field met twice is merged again (a message into the one there, a
//! number or string replacing the one there, a dim appended), so that the value is prost's for any order of fields.
//! Fields are matched by their key byte as written (every field read here has a one-byte key); any other key, or
//! one of these written in more bytes than it needs, hands the declaration to prost.

use super::{key_byte, payload, reserve_run, string, varint};
use crate::onnx::pb::field::{entry, type_proto, value_info, LEN};
use crate::onnx::pb::tensor_shape_proto::{dimension::Value, Dimension};
use crate::onnx::pb::{type_proto::Tensor, StringStringEntryProto, TensorShapeProto, TypeProto, ValueInfoProto};

/// How many levels of messages a declaration nests below its fields: type, tensor type, shape, dim. A body reads
/// declarations here only when prost's recursion limit leaves room for them all.
pub(super) const DEPTH: usize = 4;

/// The wire type of a varint field.
const VARINT: u32 = 0;

/// `info` (a default one) decoded from its bytes; `None` where prost's code should decode it.
pub(super) fn decode_value_info(bytes: &[u8], info: &mut ValueInfoProto) -> Option<()> {
    const NAME: u8 = key_byte(value_info::NAME, LEN);
    const TYPE: u8 = key_byte(value_info::TYPE, LEN);
    const METADATA: u8 = key_byte(value_info::METADATA_PROPS, LEN);
    let mut rest = bytes;
    while let [first, ref after @ ..] = *rest {
        rest = after;
        match first {
            NAME => info.name = Some(string(&mut rest)?),
            TYPE => of_type(payload(&mut rest)?, info.r#type.get_or_insert_with(Default::default))?,
            METADATA => {
                let entry = metadata(payload(&mut rest)?)?;
                reserve_run(&mut info.metadata_props, METADATA, rest);
                info.metadata_props.push(entry);
            }
            _ => return None,
        }
    }
    Some(())
}

/// A `TypeProto` holding a tensor type, merged into `ty`.
fn of_type(mut rest: &[u8], ty: &mut TypeProto) -> Option<()> {
    const TENSOR_TYPE: u8 = key_byte(type_proto::TENSOR_TYPE, LEN);
    while let [TENSOR_TYPE, ref after @ ..] = *rest {
        rest = after;
        tensor(payload(&mut rest)?, ty.tensor_type.get_or_insert_with(Default::default))?;
    }
    rest.is_empty().then_some(())
}

/// A `TypeProto.Tensor`, merged into `tensor`.
fn tensor(mut rest: &[u8], tensor: &mut Tensor) -> Option<()> {
    const ELEM_TYPE: u8 = key_byte(type_proto::ELEM_TYPE, VARINT);
    const SHAPE: u8 = key_byte(type_proto::SHAPE, LEN);
    while let [first, ref after @ ..] = *rest {
        rest = after;
        match first {
            // prost reads an int32 as a varint cast to the type.
            ELEM_TYPE => tensor.elem_type = Some(varint(&mut rest)? as i32),
            SHAPE => shape(payload(&mut rest)?, tensor.shape.get_or_insert_with(Default::default))?,
            _ => return None,
        }
    }
    Some(())
}

/// A `TensorShapeProto`: its dims appended to `shape`'s.
fn shape(mut rest: &[u8], shape: &mut TensorShapeProto) -> Option<()> {
    const DIM: u8 = key_byte(type_proto::DIM, LEN);
    while let [DIM, ref after @ ..] = *rest {
        rest = after;
        let dim = dim(payload(&mut rest)?)?;
        reserve_run(&mut shape.dim, DIM, rest);
        shape.dim.push(dim);
    }
    rest.is_empty().then_some(())
}

/// A `Dimension` of a value or a name (the last one written, as prost's oneof keeps), without a denotation.
fn dim(mut rest: &[u8]) -> Option<Dimension> {
    const DIM_VALUE: u8 = key_byte(type_proto::DIM_VALUE, VARINT);
    const DIM_PARAM: u8 = key_byte(type_proto::DIM_PARAM, LEN);
    let mut dim = Dimension::default();
    while let [first, ref after @ ..] = *rest {
        rest = after;
        dim.value = Some(match first {
            DIM_VALUE => Value::DimValue(varint(&mut rest)? as i64),
            DIM_PARAM => Value::DimParam(string(&mut rest)?),
            _ => return None,
        });
    }
    Some(dim)
}

/// A `StringStringEntryProto` (a declaration's or a node's metadata entry).
pub(super) fn metadata(mut rest: &[u8]) -> Option<StringStringEntryProto> {
    const KEY: u8 = key_byte(entry::KEY, LEN);
    const VALUE: u8 = key_byte(entry::VALUE, LEN);
    let mut pair = StringStringEntryProto::default();
    while let [first, ref after @ ..] = *rest {
        rest = after;
        match first {
            KEY => pair.key = Some(string(&mut rest)?),
            VALUE => pair.value = Some(string(&mut rest)?),
            _ => return None,
        }
    }
    Some(pair)
}
