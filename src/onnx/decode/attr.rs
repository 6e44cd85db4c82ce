//! A node's attributes (`AttributeProto`) read from contiguous bytes, as [`super`] reads nodes: the forms exporters
//! write (a name and a type, then one value: an integer, a float, a string, a tensor, a list of integers, floats or
//! strings), or `None` for prost to read the node. Why: PyTorch's exporters give most nodes an attribute or a few
//! (the 132 PyTorch models: 27,000 attributes over 55,000 nodes), and through prost's generated code each cost a
//! pass through the `Buf` trait per field, and a move of the 900-byte attribute into a list grown by doubling:
//! ~1,700 instructions an attribute, a quarter of decoding those models.
//!
//! Each field is merged as prost merges it (a value replaced, a list appended to, a tensor merged into the one
//! there), so that the value is prost's for any order of fields; fields it does not read (a graph, a type, a doc
//! string) are merged by prost's code for the field with the context prost would pass.

use bytes::Bytes;
use prost::encoding::DecodeContext;
use prost::Message;

use super::{decode_tensor, in_place, key, payload, reserve_run, string, varint};
use crate::onnx::pb::AttributeProto;

/// What prost passes to the fields of a node's attribute, and to the fields of an attribute's tensor.
#[derive(Debug)]
pub(super) struct AttrContext {
    pub(super) ctx: DecodeContext,
    /// `None` where prost's recursion limit is reached at an attribute's fields: prost then reads its tensor.
    pub(super) tensor: Option<DecodeContext>,
}

// The keys of the fields read here, as exporters write them: one byte each, and two for `type` (number 20, a
// varint: 160 written in two bytes).
const NAME: u8 = 1 << 3 | 2;
const F: u8 = 2 << 3 | 5;
const I: u8 = 3 << 3;
const S: u8 = 4 << 3 | 2;
const T: u8 = 5 << 3 | 2;
const FLOATS: u8 = 7 << 3 | 5;
const INTS: u8 = 8 << 3;
const STRINGS: u8 = 9 << 3 | 2;
const TYPE: [u8; 2] = [0xa0, 0x01];
/// The key of a node's attribute field (number 5, length-delimited).
const ATTRIBUTE_KEY: u8 = 5 << 3 | 2;

/// Appends the attribute of `bytes` to `list` (made in place: an attribute is ~900 bytes, which a move copies),
/// with room made at once for the attributes that follow it in `after` (a node's attributes are written one after
/// another). `None`, with `list` as it was, where prost should read the node. Out of line: inlined, it doubled the
/// size of the node's loop over its fields, and every node paid for it.
#[inline(never)]
pub(super) fn push_attribute(
    list: &mut Vec<AttributeProto>,
    bytes: &[u8],
    after: &[u8],
    ctx: &AttrContext,
) -> Option<()> {
    reserve_run(list, ATTRIBUTE_KEY, after);
    in_place(list, |attribute| decode_attribute(bytes, ctx, attribute))
}

/// `attribute` merged with the fields of `bytes`; `None` where prost should read it.
pub(super) fn decode_attribute(bytes: &[u8], ctx: &AttrContext, attribute: &mut AttributeProto) -> Option<()> {
    let mut rest = bytes;
    while let [first, ref after @ ..] = *rest {
        match first {
            NAME => {
                rest = after;
                attribute.name = Some(string(&mut rest)?);
            }
            // prost reads int64 and int32 (and an enumeration) as a varint cast to the type.
            I => {
                rest = after;
                attribute.i = Some(varint(&mut rest)? as i64);
            }
            _ if rest.starts_with(&TYPE) => {
                rest = &rest[TYPE.len()..];
                attribute.r#type = Some(varint(&mut rest)? as i32);
            }
            F => {
                let (value, after) = after.split_first_chunk::<4>()?;
                rest = after;
                attribute.f = Some(f32::from_le_bytes(*value));
            }
            S => {
                rest = after;
                attribute.s = Some(Bytes::copy_from_slice(payload(&mut rest)?));
            }
            T => {
                rest = after;
                let tensor = attribute.t.get_or_insert_with(Default::default);
                decode_tensor(payload(&mut rest)?, ctx.tensor.as_ref()?, tensor)?;
            }
            INTS => {
                rest = after;
                attribute.ints.push(varint(&mut rest)? as i64);
            }
            FLOATS => {
                let (value, after) = after.split_first_chunk::<4>()?;
                rest = after;
                attribute.floats.push(f32::from_le_bytes(*value));
            }
            STRINGS => {
                rest = after;
                attribute.strings.push(Bytes::copy_from_slice(payload(&mut rest)?));
            }
            _ => {
                let (tag, wire_type) = key(&mut rest)?;
                attribute.merge_field(tag, wire_type, &mut rest, ctx.ctx.clone()).ok()?;
            }
        }
    }
    Some(())
}
