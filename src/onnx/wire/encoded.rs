//! New messages of an edit, held encoded: a rewrite that adds thousands of nodes writes each one's bytes once,
//! where building it as a message first cost an allocation per name and list, then a pass to measure it and one
//! to encode it, then its drop.
//!
//! A message is written field by field through a [`Writer`], in the order of the field numbers (as prost's derived
//! code writes a message, so that the bytes are the very bytes prost writes for the same message: the writers'
//! tests compare them); a message at hand is encoded by prost itself ([`Encoded::push`]).

use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;

/// New messages for one field of a body (its nodes before one node, its new initializers, ...), each encoded as
/// its length then its bytes, one after the other: the field's key goes before each when they are written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Encoded {
    bytes: Vec<u8>,
    count: usize,
}

impl Encoded {
    /// The messages of `messages`, in order, encoded by prost.
    pub fn of<'m, M: Message + 'm>(messages: impl IntoIterator<Item = &'m M>) -> Encoded {
        let mut encoded = Encoded::default();
        messages.into_iter().for_each(|m| encoded.push(m));
        encoded
    }

    /// Adds `message`, encoded by prost.
    pub fn push(&mut self, message: &impl Message) {
        message.encode_length_delimited(&mut self.bytes).expect("a Vec grows as needed");
        self.count += 1;
    }

    /// Adds the message that `write` writes.
    pub fn push_with(&mut self, write: impl FnOnce(&mut Writer<'_>)) {
        delimited(&mut self.bytes, write);
        self.count += 1;
    }

    /// Room for `additional` more bytes at once: a list of new nodes before one node holds one or two, and grown
    /// by doubling from nothing it is moved four or five times on the way.
    pub fn reserve(&mut self, additional: usize) {
        self.bytes.reserve(additional);
    }

    /// How many messages there are.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes of every message with its length, without keys.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Appends the messages to `out` as fields numbered `tag`: each its key, then its length and bytes as held.
    pub(super) fn write_as_fields(&self, tag: u32, out: &mut Vec<u8>) {
        let mut rest = self.bytes.as_slice();
        out.reserve(rest.len() + self.count * 2);
        while !rest.is_empty() {
            let mut after_len = rest;
            let len = crate::onnx::source::varint(&mut after_len).expect("lengths written here") as usize;
            let whole = rest.len() - after_len.len() + len;
            encode_key(tag, WireType::LengthDelimited, out);
            out.extend_from_slice(&rest[..whole]);
            rest = &rest[whole..];
        }
    }
}

/// Writes one message's fields into the buffer of its encoding. The caller writes the fields in the order of their
/// numbers, and a field that is set is written even when it holds its default (as proto2's optional fields are).
pub struct Writer<'b> {
    buf: &'b mut Vec<u8>,
}

impl Writer<'_> {
    /// A `string` or `bytes` field.
    pub fn bytes(&mut self, tag: u32, value: &[u8]) {
        encode_key(tag, WireType::LengthDelimited, self.buf);
        encode_varint(value.len() as u64, self.buf);
        self.buf.extend_from_slice(value);
    }

    pub fn string(&mut self, tag: u32, value: &str) {
        self.bytes(tag, value.as_bytes());
    }

    /// An `int64` field (a negative value takes ten bytes, as prost writes it).
    pub fn int64(&mut self, tag: u32, value: i64) {
        encode_key(tag, WireType::Varint, self.buf);
        encode_varint(value as u64, self.buf);
    }

    /// An `int32` field (an enum's too): sign-extended, as prost writes it.
    pub fn int32(&mut self, tag: u32, value: i32) {
        self.int64(tag, i64::from(value));
    }

    /// A message field, written by `write`.
    pub fn message(&mut self, tag: u32, write: impl FnOnce(&mut Writer<'_>)) {
        encode_key(tag, WireType::LengthDelimited, self.buf);
        delimited(self.buf, write);
    }

    /// A message field, encoded by prost.
    pub fn prost(&mut self, tag: u32, message: &impl Message) {
        prost::encoding::message::encode(tag, message, self.buf);
    }
}

/// Appends the length of what `write` writes, then that. The length is written once it is known: a message under
/// 128 bytes (nearly every new one) in the byte kept for it, a longer one after moving its bytes up to make room.
fn delimited(buf: &mut Vec<u8>, write: impl FnOnce(&mut Writer<'_>)) {
    let at = buf.len();
    buf.push(0);
    write(&mut Writer { buf });
    let len = buf.len() - at - 1;
    set_length(buf, at, len as u64);
}

/// Writes `len` as a varint in place of the byte kept for it at `at`, moving the bytes after it up when it takes
/// more than that byte.
/// (Inline, the longer way apart: a call for the one store nearly every length takes was ~19 instructions a node
/// when `expand` splices 100,000 nodes.)
#[inline]
pub(super) fn set_length(buf: &mut Vec<u8>, at: usize, len: u64) {
    if len < 0x80 {
        buf[at] = len as u8;
    } else {
        set_long_length(buf, at, len);
    }
}

/// [`set_length`] for a length of two bytes or more.
#[cold]
#[inline(never)]
fn set_long_length(buf: &mut Vec<u8>, at: usize, len: u64) {
    let mut head = [0u8; 10];
    let mut free = &mut head[..];
    encode_varint(len, &mut free);
    let used = 10 - free.len();
    buf.splice(at..at + 1, head[..used].iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::{
        tensor_shape_proto::{dimension::Value, Dimension},
        AttributeProto, NodeProto, TensorShapeProto,
    };

    #[test]
    fn messages_written_field_by_field_are_the_bytes_prost_writes_for_them() {
        // Short and long (over 127 bytes: a length of two bytes), nested, negative and default values.
        for name in ["x", &"long".repeat(40)] {
            let attribute = AttributeProto {
                name: Some(name.into()),
                i: Some(-3),
                s: Some(Vec::new().into()),
                r#type: Some(-1),
                ..Default::default()
            };
            let shape = TensorShapeProto {
                dim: vec![
                    Dimension { value: Some(Value::DimValue(0)), denotation: None },
                    Dimension { value: None, denotation: None },
                    Dimension { value: Some(Value::DimParam(name.into())), denotation: None },
                ],
            };
            let node = NodeProto { attribute: vec![attribute.clone()], ..Default::default() };
            let mut written = Encoded::default();
            written.push_with(|w| {
                w.string(1, name);
                w.int64(3, -3);
                w.bytes(4, b"");
                w.int32(20, -1);
            });
            written.push_with(|w| {
                w.message(1, |w| w.int64(1, 0));
                w.message(1, |_| {});
                w.message(1, |w| w.string(2, name));
            });
            written.push_with(|w| w.prost(5, &attribute));
            let mut by_prost = Encoded::of([&attribute]);
            by_prost.push(&shape);
            by_prost.push(&node);
            assert_eq!(written, by_prost);
            assert_eq!(written.len(), 3);

            let mut fields = Vec::new();
            written.write_as_fields(7, &mut fields);
            let mut expected = Vec::new();
            prost::encoding::message::encode(7, &attribute, &mut expected);
            prost::encoding::message::encode(7, &shape, &mut expected);
            prost::encoding::message::encode(7, &node, &mut expected);
            assert_eq!(fields, expected);
        }
    }
}
