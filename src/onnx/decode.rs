//! Decoding a model with the hottest messages (the nodes and declarations of the main graph and of the model's
//! functions, the nodes' attributes, and the main graph's initializers) read from contiguous bytes, and everything
//! else by prost's generated code. (Declarations, `ValueInfoProto`: [`info`]; attributes: [`attr`].)
//!
//! Why: in prost's generated decoding a node of five short strings costs ~3,500 instructions: every field goes
//! through the `Buf` trait, each string is cleared, grown and copied, then validated, and each name list grows to
//! room for four. Here a node whose bytes lie in the buffer's current chunk is read from that slice into the
//! compact node ([`crate::onnx::pb::node`]): a name of up to 24 bytes of ASCII is checked a word at a time and
//! held inline, without an allocation, and the node is built in place in its list.
//!
//! What keeps this the same decoder as prost's: the fast path is taken only when it succeeds, and it leaves the buffer
//! untouched otherwise. Anything it does not read itself (unknown fields, packed dims, a malformed key or length, bad
//! UTF-8, a message cut by the chunk's end or over [`LARGE`] bytes) makes it give up, and prost's generated
//! `merge_field` then decodes the same bytes from the same position: the same value, or the same error, with the same
//! path of `Message.field` steps. Fields it hands to prost from inside a node, attribute or tensor (an attribute's
//! graph, say) are merged with the context prost itself would pass, so the recursion limit counts the same levels.
//! Large tensors are never read here, so `raw_data` of [`LARGE`] bytes or more stays a view of the file's map (see
//! [`crate::onnx::source`]).
//!
//! A node's doc string and metadata entries, where PyTorch's exporter writes each node's stack trace (albert.dynamo18:
//! 310 kB over 136 nodes), are read on the fast path too, and kept: a loaded model re-encodes to its own bytes.
//!
//! The types are prost's generated ones and the compact node, which decodes as prost's generated node does; this
//! only replaces how a few of them are filled.

use bytes::{Buf, BufMut, Bytes};
use prost::encoding::{message, skip_field, DecodeContext, WireType};
use prost::{DecodeError, Message};

use crate::onnx::pb::{field, FunctionProto, GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto};
use crate::onnx::presize;
use crate::onnx::source::{merge_with, varint, DecodeFailure, LARGE};
use std::fs::File;

mod attr;
mod info;
mod text;

use text::{compact, string};

/// Decodes `buf` into `model` exactly as `model.merge(buf)` does (value, or error), faster. With `tensors`, the
/// main graph's small initializers are read on the fast path too: their `raw_data` is then a copy, which is what
/// a buffer that copies small fields (the file's window) gives anyway; a buffer of shared `Bytes` gives views, so
/// it is decoded with `tensors` false.
pub fn merge_model(model: &mut ModelProto, buf: impl Buf, tensors: bool) -> Result<(), DecodeError> {
    ModelMerge { model, tensors }.merge(buf)
}

/// Decodes a model from a file like [`crate::onnx::source::decode`], with the main graph's lists sized up front
/// ([`presize`]): 100,000 nodes are not copied over and over as their list doubles.
pub fn decode_model(file: &File, map: &Bytes) -> Result<ModelProto, DecodeFailure> {
    let mut model = presize::presized(presize::counts_in_file(file, map.len()));
    // The window copies fields under LARGE, so the initializers' fast path copies what this buffer would.
    merge_with(file, map, |buf| merge_model(&mut model, buf, true))?;
    presize::fit_name_lists(&mut model);
    Ok(model)
}

/// Adds prost's path step to an error, as the generated code does for a field's failure.
fn step(mut error: DecodeError, message: &'static str, field: &'static str) -> DecodeError {
    error.push(message, field);
    error
}

/// `ModelProto` with its graph and functions decoded by [`BodyMerge`]; every other field is prost's.
#[derive(Debug)]
struct ModelMerge<'a> {
    model: &'a mut ModelProto,
    tensors: bool,
}

impl Message for ModelMerge<'_> {
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            field::model::GRAPH => {
                // As generated: the graph is made before the wire type is checked.
                let graph = self.model.graph.get_or_insert_with(Default::default);
                merge_body(wire_type, graph, self.tensors, buf, ctx).map_err(|e| step(e, "ModelProto", "graph"))
            }
            field::model::FUNCTIONS => {
                let mut function = FunctionProto::default();
                merge_body(wire_type, &mut function, false, buf, ctx)
                    .map_err(|e| step(e, "ModelProto", "functions"))?;
                self.model.functions.push(function);
                Ok(())
            }
            _ => self.model.merge_field(tag, wire_type, buf, ctx),
        }
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        self.model.encode_raw(buf)
    }

    fn encoded_len(&self) -> usize {
        self.model.encoded_len()
    }

    fn clear(&mut self) {
        self.model.clear()
    }
}

/// A message that holds nodes (and maybe initializers) in repeated fields.
trait Body: Message {
    /// The field number of its nodes.
    const NODE: u32;
    /// The field number of its initializers, if it has any.
    const INITIALIZER: Option<u32>;
    fn nodes(&mut self) -> &mut Vec<NodeProto>;
    fn initializers(&mut self) -> &mut Vec<TensorProto>;
    /// Its list of declarations of field number `tag`, if it has one.
    fn declarations(tag: u32) -> Option<fn(&mut Self) -> &mut Vec<ValueInfoProto>>;
}

impl Body for GraphProto {
    const NODE: u32 = field::graph::NODE;
    const INITIALIZER: Option<u32> = Some(field::graph::INITIALIZER);
    fn nodes(&mut self) -> &mut Vec<NodeProto> {
        &mut self.node
    }
    fn initializers(&mut self) -> &mut Vec<TensorProto> {
        &mut self.initializer
    }
    fn declarations(tag: u32) -> Option<fn(&mut Self) -> &mut Vec<ValueInfoProto>> {
        use field::graph::*;
        match tag {
            INPUT => Some(|g| &mut g.input),
            OUTPUT => Some(|g| &mut g.output),
            VALUE_INFO => Some(|g| &mut g.value_info),
            _ => None,
        }
    }
}

impl Body for FunctionProto {
    const NODE: u32 = field::function::NODE;
    const INITIALIZER: Option<u32> = None;
    fn nodes(&mut self) -> &mut Vec<NodeProto> {
        &mut self.node
    }
    fn initializers(&mut self) -> &mut Vec<TensorProto> {
        unreachable!("a function has no initializers")
    }
    fn declarations(tag: u32) -> Option<fn(&mut Self) -> &mut Vec<ValueInfoProto>> {
        (tag == field::function::VALUE_INFO).then_some(|f| &mut f.value_info)
    }
}

/// Merges a graph or function body as `message::merge` does (the same value or error), through [`BodyMerge`].
fn merge_body<M: Body>(
    wire_type: WireType,
    body: &mut M,
    tensors: bool,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    let end = end_of_message(buf);
    message::merge(wire_type, &mut BodyMerge { body, tensors, inner: None, end }, buf, ctx)
}

/// What `buf.remaining()` will be once past the length-delimited message whose length starts `buf`, when that
/// length is in the current chunk and the message within the buffer (prost reports the other cases itself).
fn end_of_message(buf: &impl Buf) -> Option<usize> {
    let chunk = buf.chunk();
    let mut rest = chunk;
    let len = usize::try_from(varint(&mut rest)?).ok()?;
    buf.remaining().checked_sub(chunk.len() - rest.len())?.checked_sub(len)
}

/// A graph or function body whose nodes (and initializers) take the fast path where they can.
#[derive(Debug)]
struct BodyMerge<'a, M> {
    body: &'a mut M,
    tensors: bool,
    /// The context prost passes to the fields of a node (or tensor) of this body, found at the first one; `None`
    /// inside while unknown, and `Some(None)` when the recursion limit is reached (prost then reports it).
    inner: Option<Option<Inner>>,
    /// `buf.remaining()` at the body's end ([`end_of_message`]), when known: fields are read in runs up to it.
    end: Option<usize>,
}

impl<M: Body> BodyMerge<'_, M> {
    /// Reads the field of number `tag` whose key prost has just read, and the fields of the same key that follow
    /// it in the body, as long as each takes the fast path ([`BodyMerge::fast`]). Why runs: a graph's nodes and
    /// initializers come one after another, and prost's loop costs ~200 instructions a field to read a key and
    /// hand the field over; here the next key is one byte compared. False, with the buffer and the list as they
    /// were, when the first field does not take the fast path.
    #[inline(always)]
    fn run<T: Default>(
        &mut self,
        buf: &mut impl Buf,
        ctx: &DecodeContext,
        tag: u32,
        list: fn(&mut M) -> &mut Vec<T>,
        decode: fn(&[u8], &Inner, &mut T) -> Option<()>,
    ) -> bool {
        if !self.fast(buf, ctx, 0, list, decode) {
            return false;
        }
        // The key of a length-delimited field of number `tag`, one byte for the numbers read here (1, 5, 7 and 11 to
        // 13).
        let key = u8::try_from(tag << 3 | field::LEN).expect("a field number under 16");
        let Some(end) = self.end else { return true };
        while buf.remaining() > end && buf.chunk().first() == Some(&key) && self.fast(buf, ctx, 1, list, decode) {}
        true
    }

    /// Reads one message of the body from the buffer's current chunk with `decode`, into a new last element of
    /// `list`, and moves past it (filled in place: a node is 192 bytes, which a move copies). The chunk starts
    /// with `key` bytes of the field's key (0 when prost has read it), then the message's length. False, with the
    /// buffer and the list as they were, where the fast path does not apply. (A field that ends past the body is
    /// read as prost reads it, which then fails on the body's length.)
    #[inline(always)]
    fn fast<T: Default>(
        &mut self,
        buf: &mut impl Buf,
        ctx: &DecodeContext,
        key: usize,
        list: fn(&mut M) -> &mut Vec<T>,
        decode: fn(&[u8], &Inner, &mut T) -> Option<()>,
    ) -> bool {
        let BodyMerge { body, inner, .. } = self;
        let Some(inner) = inner.get_or_insert_with(|| Inner::of(ctx)) else { return false };
        let chunk = buf.chunk();
        let mut rest = &chunk[key..];
        let len = varint(&mut rest).and_then(|len| usize::try_from(len).ok());
        let Some(len) = len.filter(|&len| len < LARGE && len <= rest.len()) else { return false };
        let list = list(body);
        list.reserve(1);
        if in_place(list, |last| decode(&rest[..len], inner, last)).is_none() {
            return false;
        }
        let used = chunk.len() - rest.len() + len;
        buf.advance(used);
        true
    }
}

impl<M: Body> Message for BodyMerge<'_, M> {
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        if wire_type == WireType::LengthDelimited {
            let done = if tag == M::NODE {
                self.run(buf, &ctx, tag, M::nodes, decode_node)
            } else if self.tensors && Some(tag) == M::INITIALIZER {
                self.run(buf, &ctx, tag, M::initializers, |bytes, inner, t| decode_tensor(bytes, &inner.ctx, t))
            } else if let Some(list) = M::declarations(tag) {
                self.run(buf, &ctx, tag, list, |bytes, inner, info| {
                    inner.nests.then(|| info::decode_value_info(bytes, info)).flatten()
                })
            } else {
                false
            };
            if done {
                return Ok(());
            }
        }
        self.body.merge_field(tag, wire_type, buf, ctx)
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        self.body.encode_raw(buf)
    }

    fn encoded_len(&self) -> usize {
        self.body.encoded_len()
    }

    fn clear(&mut self) {
        self.body.clear()
    }
}

/// Appends to `list` a default element filled by `fill`, made where it will stay: a default tensor is 360 bytes,
/// an attribute ~900, which building it apart and pushing it copies. `None`, with `list` as it was, when `fill`
/// fails.
#[inline(always)]
fn in_place<T: Default>(list: &mut Vec<T>, fill: impl FnOnce(&mut T) -> Option<()>) -> Option<()> {
    list.reserve(1);
    let last = list.spare_capacity_mut()[0].write(T::default());
    if fill(last).is_none() {
        // SAFETY: `last` was written just above and is not part of the list: dropped here, once.
        unsafe { std::ptr::drop_in_place(last) };
        return None;
    }
    // SAFETY: the element after the list's last one was written above, and `reserve` made room for it.
    unsafe { list.set_len(list.len() + 1) };
    Some(())
}

/// What the fast paths know of where a message of a body lies among prost's levels of recursion.
#[derive(Debug)]
struct Inner {
    /// The context prost gives the fields of a message of the body (a node's, a tensor's).
    ctx: DecodeContext,
    /// Whether prost's recursion limit leaves room for [`info::DEPTH`] levels of messages below those fields (a
    /// declaration's type and what it holds, a node's metadata entry): where it does not, prost reads them, and
    /// reports the limit.
    nests: bool,
    /// What prost passes inside a node's attribute, `None` where its limit is reached at the attributes.
    attribute_fields: Option<attr::AttrContext>,
}

impl Inner {
    /// `None` when prost's limit is reached at the body's messages themselves.
    fn of(ctx: &DecodeContext) -> Option<Inner> {
        let ctx = inner_context(ctx)?;
        let mut below = Some(ctx.clone());
        for _ in 0..info::DEPTH {
            below = below.as_ref().and_then(inner_context);
        }
        let attribute_fields = inner_context(&ctx).map(|ctx| attr::AttrContext { tensor: inner_context(&ctx), ctx });
        Some(Inner { ctx, nests: below.is_some(), attribute_fields })
    }
}

/// The context prost gives the fields of a message nested in a message decoded with `ctx`. prost keeps the
/// recursion count private, so it is had from prost: a one-field message is merged and its field's context kept.
fn inner_context(ctx: &DecodeContext) -> Option<DecodeContext> {
    #[derive(Debug, Default)]
    struct Probe(Option<DecodeContext>);
    impl Message for Probe {
        fn merge_field(
            &mut self,
            tag: u32,
            wire_type: WireType,
            buf: &mut impl Buf,
            ctx: DecodeContext,
        ) -> Result<(), DecodeError> {
            self.0 = Some(ctx.clone());
            skip_field(wire_type, tag, buf, ctx)
        }
        fn encode_raw(&self, _: &mut impl BufMut) {}
        fn encoded_len(&self) -> usize {
            0
        }
        fn clear(&mut self) {}
    }
    let mut probe = Probe::default();
    // A message of two bytes: field 1, varint 0.
    message::merge(WireType::LengthDelimited, &mut probe, &mut &[2u8, 8, 0][..], ctx.clone()).ok()?;
    probe.0
}

/// A field key that prost's `decode_key` accepts: at most `u32::MAX`, a known wire type, a tag of at least 1.
#[inline(always)]
fn key(rest: &mut &[u8]) -> Option<(u32, WireType)> {
    let key = u32::try_from(varint(rest)?).ok()?;
    let wire_type = match key & 7 {
        0 => WireType::Varint,
        1 => WireType::SixtyFourBit,
        2 => WireType::LengthDelimited,
        3 => WireType::StartGroup,
        4 => WireType::EndGroup,
        5 => WireType::ThirtyTwoBit,
        _ => return None,
    };
    let tag = key >> 3;
    (tag >= 1).then_some((tag, wire_type))
}

/// Where `list` is full, room for one element and for as many more as `rest` starts with fields of the one-byte key
/// `key` (length-delimited): the fields of a repeated message field are written one after another (a node's
/// attributes, its metadata entries, a shape's dims), and a list grown by doubling copies its elements over and
/// over, where this makes it once, as long as it ends up.
#[inline(always)]
fn reserve_run<T>(list: &mut Vec<T>, key: u8, mut rest: &[u8]) {
    if list.len() < list.capacity() {
        return;
    }
    let mut n = 1;
    while let [first, ref after @ ..] = *rest {
        rest = after;
        if first != key || payload(&mut rest).is_none() {
            break;
        }
        n += 1;
    }
    if list.capacity() == 0 {
        // The first run (nearly always the only one): one allocation, without `reserve`'s path through a growth
        // (~40 instructions a list).
        *list = Vec::with_capacity(n);
    } else {
        list.reserve_exact(n);
    }
}

/// The payload of a length-delimited field.
#[inline(always)]
fn payload<'b>(rest: &mut &'b [u8]) -> Option<&'b [u8]> {
    let len = usize::try_from(varint(rest)?).ok()?;
    if len > rest.len() {
        return None;
    }
    let (bytes, after) = rest.split_at(len);
    *rest = after;
    Some(bytes)
}

/// `node` (a default one) decoded from its bytes: its names, attributes ([`attr`]), doc string and metadata entries
/// here, its other fields by prost's code for the field with `ctx`. `None` where prost's code should decode it.
/// (Its name lists hold two inputs and one output inline; longer ones grow, and [`presize::fit_name_lists`] fits
/// them once the model is read.)
///
/// Fields are matched by their key byte as written (every field read here has a one-byte key), not by a key
/// decoded into a number and a wire type: one jump a field where there were two (with the slice kept in registers,
/// ~80 instructions fewer a five-field node, the bench's). A key written otherwise (in more bytes than it needs)
/// is decoded and its field handed to prost, which merges it into the same node.
fn decode_node(bytes: &[u8], inner: &Inner, node: &mut NodeProto) -> Option<()> {
    use node_key::*;
    let mut rest = bytes;
    while let [first, ref after @ ..] = *rest {
        let at = rest;
        rest = after;
        match first {
            INPUT_KEY => node.input.push(compact(&mut rest)?),
            OUTPUT_KEY => node.output.push(compact(&mut rest)?),
            NAME_KEY => node.name = Some(compact(&mut rest)?),
            OP_TYPE_KEY => node.op_type = Some(compact(&mut rest)?),
            DOMAIN_KEY => node.domain = Some(compact(&mut rest)?),
            _ => rest = node_fields(at, inner, node)?,
        }
    }
    Some(())
}

/// The bytes after the fields of `node` that `at` starts with, up to the next name (or the end), read into `node`:
/// attributes, metadata entries, a doc string, and any other field by prost's code. Out of line, so that the names'
/// loop keeps its slice and the node in registers; a run of such fields (a node's attributes, then its five
/// metadata entries in PyTorch's dynamo exports) is read in one call.
#[inline(never)]
fn node_fields<'b>(at: &'b [u8], inner: &Inner, node: &mut NodeProto) -> Option<&'b [u8]> {
    use node_key::*;
    let mut rest = at;
    while let [first, ref after @ ..] = *rest {
        match first {
            ATTRIBUTE_KEY => {
                rest = after;
                let bytes = payload(&mut rest)?;
                attr::push_attribute(node, bytes, rest, inner.attribute_fields.as_ref()?)?;
            }
            METADATA_KEY => {
                if !inner.nests {
                    return None;
                }
                rest = after;
                let entry = info::metadata(payload(&mut rest)?)?;
                let list = &mut node.rare_mut().metadata_props;
                reserve_run(list, METADATA_KEY, rest);
                list.push(entry);
            }
            DOC_STRING_KEY => {
                rest = after;
                node.rare_mut().doc_string = Some(string(&mut rest)?);
            }
            INPUT_KEY | OUTPUT_KEY | NAME_KEY | OP_TYPE_KEY | DOMAIN_KEY => break,
            _ => rest = by_prost(rest, &inner.ctx, node)?,
        }
    }
    Some(rest)
}

/// The keys of a node's fields read on the fast path, as written: one byte each.
mod node_key {
    use super::key_byte;
    use crate::onnx::pb::field::{node::*, LEN};
    pub(super) const INPUT_KEY: u8 = key_byte(INPUT, LEN);
    pub(super) const OUTPUT_KEY: u8 = key_byte(OUTPUT, LEN);
    pub(super) const NAME_KEY: u8 = key_byte(NAME, LEN);
    pub(super) const OP_TYPE_KEY: u8 = key_byte(OP_TYPE, LEN);
    pub(super) const DOMAIN_KEY: u8 = key_byte(DOMAIN, LEN);
    pub(super) const ATTRIBUTE_KEY: u8 = key_byte(ATTRIBUTE, LEN);
    pub(super) const DOC_STRING_KEY: u8 = key_byte(DOC_STRING, LEN);
    pub(super) const METADATA_KEY: u8 = key_byte(METADATA_PROPS, LEN);
}

/// The bytes after the field that `at` starts with, merged into `message` by prost's code for the field with `ctx`;
/// `None` where the key or the field is malformed. Out of line, and on a copy of the caller's slice, which then
/// stays in registers.
#[inline(never)]
fn by_prost<'b>(at: &'b [u8], ctx: &DecodeContext, message: &mut impl Message) -> Option<&'b [u8]> {
    let mut rest = at;
    let (tag, wire_type) = key(&mut rest)?;
    message.merge_field(tag, wire_type, &mut rest, ctx.clone()).ok()?;
    Some(rest)
}

/// The one-byte key of field `number` (under 16) of wire type `wire`.
const fn key_byte(number: u32, wire: u32) -> u8 {
    assert!(number < 16 && wire < 8);
    (number << 3 | wire) as u8
}

/// `tensor` merged with the fields of `bytes` (all under [`LARGE`]: `raw_data` is copied, as the file's window
/// copies it); fields other than dims, element type, name and data are merged by prost with `ctx`. `None` where
/// prost should decode it.
fn decode_tensor(bytes: &[u8], ctx: &DecodeContext, tensor: &mut TensorProto) -> Option<()> {
    use field::tensor::*;
    // The keys of the fields read here, each one byte (their numbers are under 16): a key is matched as it is
    // written, and any other key (or a longer form of these) is read and handed to prost.
    const DIMS_KEY: u8 = (DIMS << 3) as u8;
    const DATA_TYPE_KEY: u8 = (DATA_TYPE << 3) as u8;
    const NAME_KEY: u8 = (NAME << 3 | field::LEN) as u8;
    const RAW_DATA_KEY: u8 = (RAW_DATA << 3 | field::LEN) as u8;
    let mut rest = bytes;
    while let [first, ref after @ ..] = *rest {
        match first {
            // prost reads int64 and int32 as a varint cast to the type.
            DIMS_KEY => {
                rest = after;
                // A run of dims (all of them, as writers put them) in one exact allocation.
                let mut dims = [varint(&mut rest)? as i64; 8];
                let mut n = 1;
                while n < dims.len() && rest.first() == Some(&DIMS_KEY) {
                    rest = &rest[1..];
                    dims[n] = varint(&mut rest)? as i64;
                    n += 1;
                }
                if tensor.dims.is_empty() {
                    // One exact allocation, without `reserve`'s path through a growth.
                    tensor.dims = dims[..n].to_vec();
                } else {
                    tensor.dims.reserve_exact(n);
                    tensor.dims.extend_from_slice(&dims[..n]);
                }
            }
            DATA_TYPE_KEY => {
                rest = after;
                tensor.data_type = Some(varint(&mut rest)? as i32);
            }
            NAME_KEY => {
                rest = after;
                tensor.name = Some(string(&mut rest)?);
            }
            RAW_DATA_KEY => {
                rest = after;
                tensor.raw_data = Some(Bytes::copy_from_slice(payload(&mut rest)?));
            }
            _ => rest = by_prost(rest, ctx, tensor)?,
        }
    }
    Some(())
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
