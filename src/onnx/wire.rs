//! Writing an edited model at the wire level.
//!
//! An edit names what changes (nodes inserted or edited, values added) in which graph. Applying it walks the
//! original bytes field by field: untouched fields are copied as byte ranges of the input, so unknown fields and
//! tensor data survive exactly and are copied file to file without passing through this process; only the messages
//! on the path to an edit are rebuilt, with their lengths recomputed. An empty edit reproduces the input byte for
//! byte. The walk reads field headers through [`Source`], never the whole input.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::Range;

use prost::encoding::{encode_varint, WireType};
use prost::Message;

use crate::onnx::model::GraphStep;
use crate::onnx::pb::field;
pub use crate::onnx::source::WireError;
use crate::onnx::source::{fields, try_for_each_field, Source};

mod by_position;
mod node;
pub use by_position::{ByPosition, Cursor};
use node::node;

/// Nodes and values to add to one graph (or function body), and edits of its existing nodes.
#[derive(Clone, Debug, Default)]
pub struct GraphEdit {
    /// New nodes to place right before the node at this position.
    pub insert_before: ByPosition<Vec<crate::onnx::pb::NodeProto>>,
    pub node_edits: ByPosition<NodeEdit>,
    /// Existing initializers replaced whole, by position (external data moved or inlined).
    pub initializer_edits: BTreeMap<usize, crate::onnx::pb::TensorProto>,
    /// New initializers (graphs only; function bodies get Constant nodes instead).
    pub initializers: Vec<crate::onnx::pb::TensorProto>,
    /// New graph inputs: before IR version 4 every initializer must also be one.
    pub inputs: Vec<crate::onnx::pb::ValueInfoProto>,
    pub value_info: Vec<crate::onnx::pb::ValueInfoProto>,
    /// Existing declarations replaced whole, by (field number: the body's `input`, `output` or `value_info`;
    /// position among the fields of that number). `infer` writes shapes into declarations this way.
    pub declaration_edits: BTreeMap<(u32, usize), crate::onnx::pb::ValueInfoProto>,
    /// Existing nodes left out, by position (a rewrite that removes them: `fold`).
    pub remove_nodes: std::collections::BTreeSet<usize>,
    /// Existing initializers left out, by position.
    pub remove_initializers: std::collections::BTreeSet<usize>,
    /// Existing `value_info` entries left out, by position (those of values no longer computed).
    pub remove_value_info: std::collections::BTreeSet<usize>,
    /// Existing graph inputs left out, by position (below IR version 4, the entries of removed initializers).
    pub remove_inputs: std::collections::BTreeSet<usize>,
}

impl GraphEdit {
    pub fn is_empty(&self) -> bool {
        self.insert_before.is_empty()
            && self.node_edits.is_empty()
            && self.remove_nodes.is_empty()
            && self.remove_initializers.is_empty()
            && self.remove_value_info.is_empty()
            && self.remove_inputs.is_empty()
            && self.initializer_edits.is_empty()
            && self.initializers.is_empty()
            && self.inputs.is_empty()
            && self.value_info.is_empty()
            && self.declaration_edits.is_empty()
    }
}

/// A change to an existing node: new input names and attributes to drop. Everything else is kept as written.
#[derive(Clone, Debug, Default)]
pub struct NodeEdit {
    pub inputs: InputEdit,
    pub drop_attributes: Vec<String>,
}

/// What becomes of an edited node's inputs. However they change, the node's inputs are written together where its
/// first field was (as an encoder writes field 1 first), each with the shortest header.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum InputEdit {
    /// As they are.
    #[default]
    Kept,
    /// The whole list replaced.
    All(Vec<String>),
    /// The inputs at these positions replaced (in increasing order of position; a position past the node's inputs
    /// is ignored), the others kept: `expand` changes one or two inputs of a node, and names them without a copy
    /// of the node's other inputs (the names it makes are shared by the nodes that read them).
    At(smallvec::SmallVec<[(usize, std::sync::Arc<str>); 2]>),
}

/// Edits for a whole model, keyed by the graph they apply to.
#[derive(Clone, Debug, Default)]
pub struct ModelEdit {
    pub graphs: BTreeMap<Vec<GraphStep>, GraphEdit>,
}

impl ModelEdit {
    pub fn is_empty(&self) -> bool {
        self.graphs.values().all(GraphEdit::is_empty)
    }

    pub fn graph_mut(&mut self, loc: &[GraphStep]) -> &mut GraphEdit {
        self.graphs.entry(loc.to_vec()).or_default()
    }
}

/// Output as a sequence of input byte ranges and new bytes. The new bytes (field headers, rebuilt names, encoded
/// new messages) are kept one after the other in one buffer, so that the pieces of a rewrite that edits every node
/// cost a few words per node rather than an allocation per field.
#[derive(Debug, Default)]
pub struct Pieces {
    items: Vec<Piece>,
    /// The bytes of every [`Piece::Owned`].
    owned: Vec<u8>,
    len: u64,
}

#[derive(Debug)]
enum Piece {
    /// A range of the input.
    Copy(Range<usize>),
    /// A range of [`Pieces::owned`].
    Owned(Range<usize>),
}

/// Where a field begun by [`Pieces::begin_field`] starts: the item its header goes in front of (in the room kept
/// for it before that item's bytes) and the output's length before it.
struct FieldStart {
    item: usize,
    len: u64,
}

/// The new bytes [`Pieces::reserve_for`] expects of an edited node (the room for its header and its new inputs'
/// fields) and of a new message: more than most take.
const EDITED_BYTES: usize = MAX_FIELD_HEADER + 48;
const NEW_BYTES: usize = 96;

/// The longest header of a length-delimited field: its key (a field number up to 2^29) and its length as varints.
const MAX_FIELD_HEADER: usize = 5 + 10;

impl Pieces {
    fn copy(&mut self, range: Range<usize>) {
        self.len += range.len() as u64;
        if let Some(Piece::Copy(last)) = self.items.last_mut() {
            if last.end == range.start {
                last.end = range.end;
                return;
            }
        }
        self.items.push(Piece::Copy(range));
    }

    /// New bytes, written by `write` into the buffer of owned bytes.
    fn owned_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let start = self.owned.len();
        write(&mut self.owned);
        let end = self.owned.len();
        self.len += (end - start) as u64;
        if let Some(Piece::Owned(last)) = self.items.last_mut() {
            if last.end == start {
                last.end = end;
                return;
            }
        }
        self.items.push(Piece::Owned(start..end));
    }

    fn owned(&mut self, bytes: &[u8]) {
        self.owned_with(|owned| owned.extend_from_slice(bytes));
    }

    fn append(&mut self, other: Pieces) {
        for item in other.items {
            match item {
                Piece::Copy(r) => self.copy(r),
                Piece::Owned(r) => self.owned(&other.owned[r]),
            }
        }
    }

    /// Starts a length-delimited field whose payload is what is added until [`Pieces::end_field`]. Room for the
    /// header is kept in the owned bytes, before an item that the payload's first new bytes then extend: a
    /// rewritten node is its header and new inputs in one item, and the rest of it copied in another.
    fn begin_field(&mut self) -> FieldStart {
        self.owned.resize(self.owned.len() + MAX_FIELD_HEADER, 0);
        let end = self.owned.len();
        self.items.push(Piece::Owned(end..end));
        FieldStart { item: self.items.len() - 1, len: self.len }
    }

    /// Ends the field begun at `start`: its header, now that the payload's length is known, written at the end of
    /// the room kept for it (the rest of the room is never written out).
    fn end_field(&mut self, start: FieldStart, tag: u32) {
        let mut header = [0u8; MAX_FIELD_HEADER];
        let key = u64::from(tag << 3 | WireType::LengthDelimited as u32);
        let size = match (key, self.len - start.len) {
            // Both varints of one byte (a node of a graph, under 128 bytes): written as they are.
            (..=0x7f, len @ ..=0x7f) => {
                header[..2].copy_from_slice(&[key as u8, len as u8]);
                2
            }
            (key, len) => {
                let mut buf = &mut header[..];
                encode_varint(key, &mut buf);
                encode_varint(len, &mut buf);
                MAX_FIELD_HEADER - buf.len()
            }
        };
        let Piece::Owned(range) = &mut self.items[start.item] else { unreachable!("a field starts with new bytes") };
        range.start -= size;
        self.owned[range.start..range.start + size].copy_from_slice(&header[..size]);
        self.len += size as u64;
    }

    /// A length-delimited field whose payload `payload` adds.
    fn field<E>(&mut self, tag: u32, payload: impl FnOnce(&mut Pieces) -> Result<(), E>) -> Result<(), E> {
        let start = self.begin_field();
        payload(self)?;
        self.end_field(start, tag);
        Ok(())
    }

    fn message(&mut self, tag: u32, message: &impl Message) {
        self.owned_with(|bytes| {
            // No room reserved first: that would measure the message once more than encoding it does, and the
            // buffer of every new byte grows by doubling anyway.
            encode_varint(u64::from(tag << 3 | WireType::LengthDelimited as u32), bytes);
            message.encode_length_delimited(bytes).expect("a Vec grows as needed");
        });
    }

    /// Room for the nodes `edit` edits and inserts at once, from their counts: grown by doubling, the lists of a
    /// rewrite of every node of a large graph leave their old copies freed (as much again as they end up) but not
    /// yet handed back to the system while the output is written, which is `expand`'s peak.
    fn reserve_for(&mut self, edit: &ModelEdit) {
        let (mut edited, mut inserted) = (0, 0);
        for g in edit.graphs.values() {
            // (Declarations and initializers replaced, `infer`'s edit, are written whole: their size is their own.)
            edited += g.node_edits.len();
            inserted += g.insert_before.iter().map(|(_, nodes)| nodes.len()).sum::<usize>();
        }
        // (New initializers, inputs and value_info are laid out apart first: see `pending_fields`.)
        // An edited node is its header and new inputs, then the rest of it copied; a new node is encoded whole,
        // between two copied ranges.
        self.items.reserve(2 * edited + 2 * inserted + 16);
        self.owned.reserve(edited * EDITED_BYTES + inserted * NEW_BYTES);
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes the output, taking copied ranges from `source`.
    pub fn write_to<'a>(&self, source: impl Into<Source<'a>>, out: &mut (impl Write + ?Sized)) -> io::Result<()> {
        let source = source.into();
        let mut buffer = Vec::new();
        for item in &self.items {
            match item {
                Piece::Copy(r) => {
                    for start in r.clone().step_by(COPY_CHUNK) {
                        buffer.clear();
                        source.read_into(start..r.end.min(start + COPY_CHUNK), &mut buffer)?;
                        out.write_all(&buffer)?;
                    }
                }
                Piece::Owned(r) => out.write_all(&self.owned[r.clone()])?,
            }
        }
        Ok(())
    }

    /// Writes the output to a file. When `source` is a file, large input ranges are written straight from a
    /// memory map of it, a window at a time, so that tensor data is copied once, page cache to page cache.
    pub fn write_to_file<'a>(&self, source: impl Into<Source<'a>>, out: &mut std::fs::File) -> io::Result<()> {
        let source = source.into();
        let Some(file) = source.file() else {
            return self.write_to(source, out);
        };
        // Smaller ranges (headers and small tensors) are read and gathered into one write.
        const DIRECT: usize = 1 << 16;
        let mut buffer: Vec<u8> = Vec::with_capacity(1 << 20);
        for item in &self.items {
            match item {
                Piece::Owned(r) => buffer.extend_from_slice(&self.owned[r.clone()]),
                Piece::Copy(r) if r.len() < DIRECT => source.read_into(r.clone(), &mut buffer)?,
                Piece::Copy(r) => {
                    out.write_all(&buffer)?;
                    buffer.clear();
                    crate::sys::copy::copy_range(file, r.clone(), out)?;
                }
            }
            if buffer.len() >= 1 << 20 {
                out.write_all(&buffer)?;
                buffer.clear();
            }
        }
        out.write_all(&buffer)
    }

    /// The output in memory. Fails only when reading a file source fails.
    pub fn to_vec<'a>(&self, source: impl Into<Source<'a>>) -> io::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(self.len as usize);
        self.write_to(source, &mut v)?;
        Ok(v)
    }
}

/// How much of the input `write_to` reads at a time.
const COPY_CHUNK: usize = 1 << 20;

/// Field numbers of the containers the writer edits.
struct BodyFields {
    node: u32,
    initializer: Option<u32>,
    input: Option<u32>,
    value_info: u32,
}

const GRAPH: BodyFields = BodyFields {
    node: field::graph::NODE,
    initializer: Some(field::graph::INITIALIZER),
    input: Some(field::graph::INPUT),
    value_info: field::graph::VALUE_INFO,
};
const FUNCTION: BodyFields =
    BodyFields { node: field::function::NODE, initializer: None, input: None, value_info: field::function::VALUE_INFO };
const MODEL_GRAPH: u32 = field::model::GRAPH;
const MODEL_FUNCTIONS: u32 = field::model::FUNCTIONS;
const NODE_INPUT: u32 = field::node::INPUT;
const NODE_ATTRIBUTE: u32 = field::node::ATTRIBUTE;
const ATTRIBUTE_NAME: u32 = field::attribute::NAME;
const ATTRIBUTE_G: u32 = field::attribute::G;
const ATTRIBUTE_GRAPHS: u32 = field::attribute::GRAPHS;

/// Applies `edit` to the model encoded in `source`.
pub fn apply<'a>(source: impl Into<Source<'a>>, edit: &ModelEdit) -> Result<Pieces, WireError> {
    let source = &source.into();
    let mut out = Pieces::default();
    if edit.is_empty() {
        out.copy(0..source.len());
        return Ok(out);
    }
    out.reserve_for(edit);
    let mut function_index = 0;
    for f in fields(source, 0..source.len())? {
        let loc = match f.number {
            MODEL_GRAPH => Some((Vec::new(), &GRAPH)),
            MODEL_FUNCTIONS => {
                function_index += 1;
                Some((vec![GraphStep::Function(function_index - 1)], &FUNCTION))
            }
            _ => None,
        };
        match loc {
            Some((loc, kind)) if touches(edit, &loc) => {
                out.field(f.number, |out| body(source, f.payload, edit, loc, kind, out))?;
            }
            _ => out.copy(f.range),
        }
    }
    Ok(out)
}

/// Whether any edit applies at `loc` or below it.
fn touches(edit: &ModelEdit, loc: &[GraphStep]) -> bool {
    edit.graphs.iter().any(|(k, e)| k.starts_with(loc) && !e.is_empty())
}

fn body(
    source: &Source,
    range: Range<usize>,
    edit: &ModelEdit,
    loc: Vec<GraphStep>,
    kind: &BodyFields,
    out: &mut Pieces,
) -> Result<(), WireError> {
    let empty = GraphEdit::default();
    let here = edit.graphs.get(&loc).unwrap_or(&empty);
    let mut pending = pending_fields(here, kind);

    let mut node_index = 0;
    let mut initializer_index = 0;
    // Positions among the fields of each number other than nodes and initializers: a declaration may be replaced
    // (`infer`), an input or value_info left out (`fold`).
    let mut positions: BTreeMap<u32, usize> = BTreeMap::new();
    // The edits of nodes, read in the order of the nodes.
    let (mut inserts, mut node_edits) = (here.insert_before.cursor(), here.node_edits.cursor());
    let subs = nodes_with_subgraphs_in(edit, &loc, |e| !e.is_empty());
    let mut subs = subs.iter().peekable();
    // The nodes with any graph of the edit below them, even one left empty: the others' edits may take the short way.
    let any_below = nodes_with_subgraphs_in(edit, &loc, |_| true);
    let mut any_below = any_below.iter().peekable();
    // Field by field as the headers are read: a list of a graph's fields would be as long as its nodes.
    try_for_each_field(source, range, |f| {
        while pending.first().is_some_and(|(tag, _)| *tag < f.number) {
            out.append(pending.remove(0).1);
        }
        if Some(f.number) == kind.initializer {
            match here.initializer_edits.get(&initializer_index) {
                _ if here.remove_initializers.contains(&initializer_index) => {}
                Some(t) => out.message(f.number, t),
                None => out.copy(f.range),
            }
            initializer_index += 1;
            return Ok(());
        }
        if f.number != kind.node {
            let position = positions.entry(f.number).or_default();
            other_field(here, kind, (f, position), out);
            return Ok(());
        }
        if let Some(new_nodes) = inserts.at(node_index) {
            new_nodes.iter().for_each(|n| out.message(kind.node, n));
        }
        if here.remove_nodes.contains(&node_index) {
            node_index += 1;
            return Ok(());
        }
        let node_edit = node_edits.at(node_index);
        let below = |attribute: usize, graph: usize| {
            let mut l = loc.clone();
            l.push(GraphStep::Subgraph { node: node_index, attribute, graph });
            l
        };
        while subs.next_if(|&&n| n < node_index).is_some() {}
        while any_below.next_if(|&&n| n < node_index).is_some() {}
        let has_sub = subs.peek() == Some(&&node_index);
        if node_edit.is_some() || has_sub {
            let no_graph_below = any_below.peek() != Some(&&node_index);
            let at = node::NodeSplice { source, model: edit, no_graph_below };
            out.field(kind.node, |out| node(at, f.payload, node_edit, &below, out))?;
        } else {
            out.copy(f.range);
        }
        node_index += 1;
        Ok(())
    })?;
    for (_, p) in pending {
        out.append(p);
    }
    Ok(())
}

/// A field of a body other than a node or an initializer, the `position`-th of its number: replaced by its
/// declaration's edit (`infer`), left out (`fold`), or copied.
fn other_field(
    here: &GraphEdit,
    kind: &BodyFields,
    (f, position): (crate::onnx::source::Field, &mut usize),
    out: &mut Pieces,
) {
    let replaced = here.declaration_edits.get(&(f.number, *position));
    let removed = removals(here, kind, f.number).is_some_and(|r| r.contains(position));
    *position += 1;
    match replaced {
        Some(v) => out.message(f.number, v),
        None if removed => {}
        None => out.copy(f.range),
    }
}

/// The positions of the nodes of the body at `loc` that have a graph of the edit (one that `counts`) among their
/// attributes (or deeper), in order.
fn nodes_with_subgraphs_in(edit: &ModelEdit, loc: &[GraphStep], counts: impl Fn(&GraphEdit) -> bool) -> Vec<usize> {
    let below = edit.graphs.iter().filter(|(k, e)| k.len() > loc.len() && k.starts_with(loc) && counts(e));
    let mut nodes: Vec<usize> = below
        .filter_map(|(k, _)| match k[loc.len()] {
            GraphStep::Subgraph { node, .. } => Some(node),
            _ => None,
        })
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

/// The entries a body leaves out among its fields numbered `number`, when they are inputs or value_info.
fn removals<'e>(here: &'e GraphEdit, kind: &BodyFields, number: u32) -> Option<&'e std::collections::BTreeSet<usize>> {
    if number == kind.value_info {
        Some(&here.remove_value_info)
    } else if Some(number) == kind.input {
        Some(&here.remove_inputs)
    } else {
        None
    }
}

/// The new initializers, inputs and value_info of a body, by field number. They go after the existing fields of
/// their number, before the first field numbered higher: the order a protobuf encoder would have used.
fn pending_fields(here: &GraphEdit, kind: &BodyFields) -> Vec<(u32, Pieces)> {
    let mut pending: Vec<(u32, Pieces)> = Vec::new();
    if let Some(tag) = kind.initializer {
        let mut p = Pieces::default();
        here.initializers.iter().for_each(|t| p.message(tag, t));
        pending.push((tag, p));
    }
    if let Some(tag) = kind.input {
        let mut p = Pieces::default();
        here.inputs.iter().for_each(|v| p.message(tag, v));
        pending.push((tag, p));
    }
    let mut p = Pieces::default();
    here.value_info.iter().for_each(|v| p.message(kind.value_info, v));
    pending.push((kind.value_info, p));
    pending.sort_by_key(|(tag, _)| *tag);
    pending
}

#[cfg(test)]
mod tests;
