//! A node's doc string and metadata entries, read on the fast path: PyTorch's exporter writes each node's stack
//! trace, module path and FX node there (albert.dynamo18: 310 kB over 136 nodes), and prost's generated code spent
//! more on them than on the rest of the node. They are kept, not dropped: a loaded model re-encodes to the bytes
//! it was read from (`tests/it/roundtrip.rs`). Each is read as prost reads it: a value it accepts is the value
//! prost makes, and one it does not accept (not UTF-8, an entry with another field) is handed to prost, which
//! reads it or gives its own error.

use super::{key, payload, WireType};
use crate::onnx::pb::field::entry::{KEY, VALUE};
use crate::onnx::pb::StringStringEntryProto;

/// A string field's value, if it is UTF-8.
#[inline(always)]
pub(super) fn string(bytes: &[u8]) -> Option<String> {
    std::str::from_utf8(bytes).ok().map(str::to_owned)
}

/// A `StringStringEntryProto`: its key and value strings, in any order, repeated or not (the last one counts, as
/// in prost). Any other field (which prost would skip, or fail on) makes it `None`, for prost to read.
pub(super) fn entry(mut rest: &[u8]) -> Option<StringStringEntryProto> {
    let mut entry = StringStringEntryProto::default();
    while !rest.is_empty() {
        let slot = match key(&mut rest)? {
            (KEY, WireType::LengthDelimited) => &mut entry.key,
            (VALUE, WireType::LengthDelimited) => &mut entry.value,
            _ => return None,
        };
        *slot = Some(string(payload(&mut rest)?)?);
    }
    Some(entry)
}
