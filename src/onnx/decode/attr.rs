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

use super::{by_prost, decode_tensor, in_place, key_byte, payload, reserve_run, string, varint};
use crate::onnx::pb::field::{self, attribute, LEN};
use crate::onnx::pb::{AttributeProto, NodeProto};

/// What prost passes to the fields of a node's attribute, and to the fields of an attribute's tensor.
#[derive(Debug)]
pub(super) struct AttrContext {
    pub(super) ctx: DecodeContext,
    /// `None` where prost's recursion limit is reached at an attribute's fields: prost then reads its tensor.
    pub(super) tensor: Option<DecodeContext>,
}

// The keys of the fields read here, as exporters write them: one byte each (field number and wire type), and two
// for `type` (number 20, a varint: 160 written in two bytes).
const NAME: u8 = key_byte(attribute::NAME, LEN);
const F: u8 = key_byte(attribute::F, FIXED32);
const I: u8 = key_byte(attribute::I, VARINT);
const S: u8 = key_byte(attribute::S, LEN);
const T: u8 = key_byte(attribute::T, LEN);
const FLOATS: u8 = key_byte(attribute::FLOATS, FIXED32);
const INTS: u8 = key_byte(attribute::INTS, VARINT);
const STRINGS: u8 = key_byte(attribute::STRINGS, LEN);
const TYPE: [u8; 2] = [(attribute::TYPE << 3) as u8 | 0x80, (attribute::TYPE << 3 >> 7) as u8];
/// The key of a node's attribute field.
const ATTRIBUTE_KEY: u8 = key_byte(field::node::ATTRIBUTE, LEN);
const VARINT: u32 = 0;
const FIXED32: u32 = 5;

/// Appends the attribute of `bytes` to `node`'s (made in place: an attribute is ~900 bytes, which a move copies),
/// with room made at once for the attributes that follow it in `after` (a node's attributes are written one after
/// another). `None`, with the list as it was, where prost should read the node.
pub(super) fn push_attribute(node: &mut NodeProto, bytes: &[u8], after: &[u8], ctx: &AttrContext) -> Option<()> {
    let list = &mut node.attribute;
    reserve_run(list, ATTRIBUTE_KEY, after);
    in_place(list, |attribute| decode_attribute(bytes, ctx, attribute))
}

/// `attribute` merged with the fields of `bytes`; `None` where prost should read it.
fn decode_attribute(bytes: &[u8], ctx: &AttrContext, attribute: &mut AttributeProto) -> Option<()> {
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
            _ => rest = by_prost(rest, &ctx.ctx, attribute)?,
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{attribute, node};
    use super::super::{decode_node, inner_context, Inner};
    use super::*;
    use crate::onnx::pb::StringStringEntryProto;
    use prost::encoding::{message, WireType};
    use prost::Message;

    /// A node's attributes are read on the fast path, every form of them (those handed to prost field by field),
    /// each into a list made at once as long as the node's run of attributes (and its metadata entries likewise);
    /// and an attribute written twice over is merged as prost merges it (a name replaced, lists appended to, a
    /// tensor merged into the one there).
    #[test]
    fn attributes_are_read_on_the_fast_path_as_prost_reads_them() {
        let inner = Inner::of(&DecodeContext::default()).unwrap();
        for i in 0..24 {
            let mut written = node(i, 1);
            written.attribute = (0..i % 6).map(|k| attribute(i + k)).collect();
            let entry = |k| StringStringEntryProto { key: Some(format!("k{k}")), value: Some("at a line".into()) };
            written.rare_mut().metadata_props = (0..i % 5).map(entry).collect();
            let mut read = NodeProto::default();
            assert_eq!(decode_node(&written.encode_to_vec(), &inner, &mut read), Some(()), "node {i}");
            assert_eq!(read, written, "node {i}");
            assert_eq!(read.attribute.capacity(), read.attribute.len(), "node {i}");
            let metadata = &read.rare().metadata_props;
            assert_eq!(metadata.capacity(), metadata.len(), "node {i}");
        }
        let ctx = inner.attribute_fields.as_ref().unwrap();
        for k in 0..16 {
            for j in [k, k + 1, k + 3, k + 6] {
                let both = [attribute(k).encode_to_vec(), attribute(j).encode_to_vec()].concat();
                let mut read = AttributeProto::default();
                assert_eq!(decode_attribute(&both, ctx, &mut read), Some(()), "{k} then {j}");
                assert_eq!(read, AttributeProto::decode(both.as_slice()).unwrap(), "{k} then {j}");
            }
        }
    }

    /// Near prost's recursion limit, a node with an attribute holding a tensor is read on the fast path only at levels
    /// where prost reads it, and then as prost reads it; where the limit falls at the node or its attribute, the fast
    /// path hands the node to prost, which reports the limit.
    #[test]
    fn a_nodes_attributes_meet_prosts_recursion_limit_where_prost_does() {
        let written = node(3, 1);
        assert!(written.attribute[0].t.is_some(), "node 3's first attribute holds a tensor");
        let bytes = written.encode_to_vec();
        let mut levels = vec![DecodeContext::default()];
        while let Some(next) = inner_context(levels.last().unwrap()) {
            levels.push(next);
        }
        let (mut fast, mut refused) = (0, 0);
        for ctx in &levels {
            let mut prosts = NodeProto::default();
            let prosts =
                message::merge(WireType::LengthDelimited, &mut prosts, &mut &wrap_len(&bytes)[..], ctx.clone())
                    .map(|()| prosts);
            let mut read = NodeProto::default();
            match Inner::of(ctx).and_then(|inner| decode_node(&bytes, &inner, &mut read)) {
                Some(()) => {
                    assert_eq!(prosts.as_ref().ok(), Some(&read));
                    fast += 1;
                }
                None => refused += usize::from(prosts.is_err()),
            }
        }
        // prost refuses the node where the limit falls at its attribute or the node itself; where it falls among
        // the tensor's fields, prost reads it, and so does the fast path one level on (`inner_context` asks one
        // level more).
        assert_eq!((fast, refused), (levels.len() - 3, 2), "levels read fast, and refused by both");
    }

    /// `inner` after its length, as a length-delimited field's payload is written.
    fn wrap_len(inner: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::encode_varint(inner.len() as u64, &mut out);
        out.extend_from_slice(inner);
        out
    }
}
