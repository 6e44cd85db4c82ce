//! A node's fields that no command reads, checked and dropped: its `doc_string`, and its `metadata_props`, where
//! PyTorch's exporter writes each node's stack trace, module path and FX node (albert.dynamo18: 310 kB over 136
//! nodes, 15% of its check decoding them). A model splices its own bytes when it is rewritten, so what a rewrite
//! writes keeps them. Each is checked as prost checks it when it decodes the field: a value it accepts is one
//! prost accepts, so a model that decodes here decodes there, and one that does not is handed to prost, which
//! gives its own error.

use super::{key, payload, WireType};
use crate::onnx::pb::field::entry::{KEY, VALUE};

/// A string field's value, checked as UTF-8 ([`ascii`] first, as almost all is).
#[inline(always)]
pub(super) fn string(bytes: &[u8]) -> Option<()> {
    (ascii(bytes) || std::str::from_utf8(bytes).is_ok()).then_some(())
}

/// Whether `bytes` are ASCII, checked 32 bytes at a time without a branch on each: a stack trace of a few
/// hundred bytes costs ~0.2 instructions a byte, where `is_ascii` and `from_utf8` cost ~1.
fn ascii(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(32);
    let mut high = 0;
    for c in &mut chunks {
        let word = |at: usize| u64::from_le_bytes(c[at..at + 8].try_into().expect("8 bytes"));
        high |= word(0) | word(8) | word(16) | word(24);
    }
    high & 0x8080_8080_8080_8080 == 0 && chunks.remainder().is_ascii()
}

/// A `StringStringEntryProto`: its key and value strings, in any order, repeated or not. Any other field
/// (which prost would skip, or fail on) makes it `None`, for prost to read.
pub(super) fn entry(mut rest: &[u8]) -> Option<()> {
    while !rest.is_empty() {
        match key(&mut rest)? {
            (KEY | VALUE, WireType::LengthDelimited) => string(payload(&mut rest)?)?,
            _ => return None,
        }
    }
    Some(())
}
