//! Splicing one edited node: its new inputs written in place of its input fields, attributes dropped, and the
//! graphs of its attributes edited; every other field copied as written.
//!
//! A node whose only change is its inputs (what `expand` and `fold` do to nearly every node they touch) takes the
//! short way ([`inputs_only`]): its bytes are read once, where the source holds them, and its fields found by
//! their one-byte headers, without the general walk's per-field calls or a read of each attribute; it writes the
//! very bytes the general way writes.

use super::*;
use crate::onnx::source::varint;

/// Where the splice of one node reads from, and what it may take the short way.
pub(super) struct NodeSplice<'s, 'e> {
    pub source: &'s Source<'s>,
    pub model: &'e ModelEdit,
    /// No graph of the model's edit lies in this node's attributes (not even one left empty): nothing but its inputs
    /// and attributes to drop can change in it.
    pub no_graph_below: bool,
}

/// A node of at most this many bytes takes the short way when it can (a larger one is rare, and may hold a tensor
/// in an attribute: it is not read whole).
const SHORT_WAY_MAX: usize = 1 << 10;

pub(super) fn node(
    at: NodeSplice<'_, '_>,
    range: Range<usize>,
    edit: Option<&NodeEdit>,
    below: &dyn Fn(usize, usize) -> Vec<GraphStep>,
    out: &mut Pieces,
) -> Result<(), WireError> {
    let NodeSplice { source, model, no_graph_below } = at;
    let short = |e: &&NodeEdit| {
        no_graph_below && e.inputs != InputEdit::Kept && e.drop_attributes.is_empty() && range.len() <= SHORT_WAY_MAX
    };
    if let Some(e) = edit.filter(short) {
        if source.with_bytes(range.clone(), |bytes| inputs_only(bytes, range.start, &e.inputs, out))? {
            return Ok(());
        }
    }
    let merged;
    let inputs = match edit.map(|e| &e.inputs) {
        None | Some(InputEdit::Kept) => None,
        Some(InputEdit::All(inputs)) => Some(inputs.as_slice()),
        Some(InputEdit::At(replaced)) => {
            merged = merged_inputs(source, range.clone(), replaced)?;
            Some(merged.as_slice())
        }
    };
    let mut inputs_written = false;
    let mut attribute = 0;
    let write_inputs = |out: &mut Pieces, inputs: &[String]| {
        for name in inputs {
            out.owned_with(|v| string_field(NODE_INPUT, name.as_bytes(), v));
        }
    };
    // Field by field as they are read: a rewrite of every node of a graph lists no node's fields.
    try_for_each_field(source, range, |f| {
        match (f.number, inputs) {
            (NODE_INPUT, Some(inputs)) => {
                if !inputs_written {
                    write_inputs(out, inputs);
                    inputs_written = true;
                }
                return Ok(());
            }
            (n, Some(inputs)) if n > NODE_INPUT && !inputs_written => {
                write_inputs(out, inputs);
                inputs_written = true;
            }
            _ => {}
        }
        if f.number != NODE_ATTRIBUTE {
            out.copy(f.range);
            return Ok(());
        }
        attribute += 1;
        node_attribute(source, f, (attribute - 1, edit), model, below, out)
    })?;
    if let (Some(inputs), false) = (inputs, inputs_written) {
        write_inputs(out, inputs);
    }
    Ok(())
}

/// The node's inputs as written in `source[range]`, with those at the positions of `replaced` replaced.
fn merged_inputs(
    source: &Source,
    range: Range<usize>,
    replaced: &[(usize, std::sync::Arc<str>)],
) -> Result<Vec<String>, WireError> {
    let mut inputs = Vec::new();
    let mut name = Vec::new();
    try_for_each_field(source, range, |f| {
        if f.number == NODE_INPUT {
            let new = replaced.iter().find(|(p, _)| *p == inputs.len());
            name.clear();
            source.read_into(f.payload, &mut name)?;
            let written = String::from_utf8_lossy(&name).into_owned();
            inputs.push(new.map_or(written, |(_, n)| n.to_string()));
        }
        Ok(())
    })?;
    Ok(inputs)
}

/// The short way of a node whose only change is its inputs: `bytes` are the node's (from `start` in the source).
/// It takes a node whose input fields come first, as an encoder writes them, each with the one-byte header an
/// encoder writes: the new inputs, then the rest of the node copied in one piece. `false`, with nothing added to
/// `out`, for any other node (an input after another field, a field numbered 0, bytes not well formed), which the
/// general way splices (and gives the error, if any).
pub(super) fn inputs_only(bytes: &[u8], start: usize, inputs: &InputEdit, out: &mut Pieces) -> bool {
    let Some(inputs_end) = inputs_end(bytes) else { return false };
    out.owned_with(|v| write_inputs(&bytes[..inputs_end], inputs, v));
    if inputs_end < bytes.len() {
        out.copy(start + inputs_end..start + bytes.len());
    }
    true
}

/// Where the input fields of a node's `bytes` end (the first other field), when they come first, each with the
/// one-byte key an encoder writes, and the node's bytes are well formed: what the short way of a node whose inputs
/// change takes. `None` for any other node.
pub(super) fn inputs_end(bytes: &[u8]) -> Option<usize> {
    // The input fields, then the others, none of which may be an input.
    let mut rest = bytes;
    while let [INPUT_KEY, ..] = *rest {
        next_field(&mut rest)?;
    }
    let inputs_end = bytes.len() - rest.len();
    while !rest.is_empty() {
        if next_field(&mut rest)? >> 3 == u64::from(NODE_INPUT) {
            return None;
        }
    }
    Some(inputs_end)
}

/// Reads past the field `rest` starts with, whole in `rest`: its key, or `None` (see [`field_head`]).
#[inline(always)]
fn next_field(rest: &mut &[u8]) -> Option<u64> {
    let (key, len) = match **rest {
        // A node's usual field: a name, its key and length a byte each.
        [key, len, ..] if key & 0x87 == 2 && key >= 8 && len < 0x80 => {
            *rest = &rest[2..];
            (u64::from(key), usize::from(len))
        }
        _ => field_head(rest)?,
    };
    *rest = rest.get(len..)?;
    Some(key)
}

/// The key of the field `rest` starts with, and the length of what follows its header (its payload, or a fixed
/// size), read past the header; `None` for a field numbered 0, a group, or a varint not well formed.
fn field_head(rest: &mut &[u8]) -> Option<(u64, usize)> {
    let key = varint(rest)?;
    let len = match key & 7 {
        _ if key >> 3 == 0 => return None,
        0 => varint(rest).map(|_| 0)?,
        1 => 8,
        5 => 4,
        2 => varint(rest).and_then(|len| usize::try_from(len).ok())?,
        _ => return None,
    };
    Some((key, len))
}

/// Appends the input fields of a node whose input fields were `fields` (as [`inputs_end`] finds them, each with
/// its one-byte key), under `inputs`.
pub(super) fn write_inputs(fields: &[u8], inputs: &InputEdit, v: &mut Vec<u8>) {
    match inputs {
        InputEdit::All(all) => all.iter().for_each(|name| string_field(NODE_INPUT, name.as_bytes(), v)),
        InputEdit::At(replaced) => {
            let mut fields = fields;
            let mut position = 0;
            // Each an input field, with its one-byte key: its name follows its length.
            while let [_, after_key @ ..] = fields {
                let mut name = after_key;
                let len = varint(&mut name).unwrap_or(0) as usize;
                let header = fields.len() - name.len();
                let (name, after) = name.split_at(len);
                match replaced.iter().find(|(p, _)| *p == position) {
                    Some((_, new)) => string_field(NODE_INPUT, new.as_bytes(), v),
                    // Kept with a one-byte length, the shortest: copied as it is written, header and all.
                    None if header == 2 => v.extend_from_slice(&fields[..2 + len]),
                    None => string_field(NODE_INPUT, name, v),
                }
                (fields, position) = (after, position + 1);
            }
        }
        InputEdit::Kept => unreachable!("a node whose inputs are kept takes the general way"),
    }
}

/// An input field's key: field 1, length-delimited, in the one byte an encoder writes it in.
const INPUT_KEY: u8 = (NODE_INPUT << 3) as u8 | WireType::LengthDelimited as u8;

/// A length-delimited field of `bytes`, with the shortest header.
pub(super) fn string_field(tag: u32, s: &[u8], v: &mut Vec<u8>) {
    let key = tag << 3 | WireType::LengthDelimited as u32;
    match (u8::try_from(key), u8::try_from(s.len())) {
        // Both varints of one byte (a node's input field and a name under 128 bytes): written as they are.
        (Ok(key @ ..=0x7f), Ok(len @ ..=0x7f)) => v.extend_from_slice(&[key, len]),
        _ => {
            encode_varint(u64::from(key), v);
            encode_varint(s.len() as u64, v);
        }
    }
    v.extend_from_slice(s);
}

/// The node's attribute `f`, the `this`-th: left out if the edit drops it, rebuilt if a graph in it is edited,
/// else copied.
fn node_attribute(
    source: &Source,
    f: crate::onnx::source::Field,
    (this, edit): (usize, Option<&NodeEdit>),
    model: &ModelEdit,
    below: &dyn Fn(usize, usize) -> Vec<GraphStep>,
    out: &mut Pieces,
) -> Result<(), WireError> {
    let attr_fields = fields(source, f.payload.clone())?;
    let mut name = Vec::new();
    if let Some(a) = attr_fields.iter().find(|a| a.number == ATTRIBUTE_NAME) {
        source.read_into(a.payload.clone(), &mut name)?;
    }
    if edit.is_some_and(|e| e.drop_attributes.iter().any(|d| d.as_bytes() == name)) {
        return Ok(());
    }
    let edited_graph = |k: usize| model.graphs.keys().any(|key| key.starts_with(&below(this, k)));
    let graphs = attr_fields.iter().filter(|a| a.number == ATTRIBUTE_G || a.number == ATTRIBUTE_GRAPHS).count();
    if !(0..graphs).any(edited_graph) {
        out.copy(f.range);
        return Ok(());
    }
    out.field(NODE_ATTRIBUTE, |out| {
        let mut graph_index = 0;
        for a in attr_fields {
            if a.number == ATTRIBUTE_G || a.number == ATTRIBUTE_GRAPHS {
                let k = graph_index;
                graph_index += 1;
                if edited_graph(k) {
                    out.field(a.number, |out| body(source, a.payload, model, below(this, k), &GRAPH, out))?;
                    continue;
                }
            }
            out.copy(a.range);
        }
        Ok::<(), WireError>(())
    })
}
