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

mod body;
mod by_position;
mod encoded;
mod node;
use body::body;
pub use by_position::{ByPosition, Cursor};
pub use encoded::{Encoded, Writer};
use node::node;

/// Nodes and values to add to one graph (or function body), and edits of its existing nodes.
#[derive(Clone, Debug, Default)]
pub struct GraphEdit {
    /// New nodes to place right before the node at this position, encoded.
    pub insert_before: ByPosition<Encoded>,
    pub node_edits: ByPosition<NodeEdit>,
    /// Existing initializers replaced whole, by position (external data moved or inlined).
    pub initializer_edits: BTreeMap<usize, crate::onnx::pb::TensorProto>,
    /// New initializers (graphs only; function bodies get Constant nodes instead).
    pub initializers: Encoded,
    /// New graph inputs: before IR version 4 every initializer must also be one.
    pub inputs: Encoded,
    pub value_info: Encoded,
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
    At(ReplacedInputs),
}

/// The inputs an [`InputEdit::At`] replaces, by position. One is held inline, more on the heap: a site broadcasts
/// one operand far more often than two, and an edit is held for every node `expand` rewrites from the site's plan
/// to the write: with room for two inline, a node's edit and its position took 96 bytes, 9.6 MB for 100,000
/// nodes, where one inline takes 72.
pub type ReplacedInputs = smallvec::SmallVec<[(usize, std::sync::Arc<str>); 1]>;

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

/// The new bytes [`Pieces::reserve_for`] expects of an edited node: a small one is written whole (up to
/// `body::KEPT_BYTES` of its other fields, and its header and new inputs), a larger one as its header and new
/// inputs. More than nearly all take: room reserved and never written is never given memory.
const EDITED_BYTES: usize = 320;

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
        let (mut edited, mut items, mut inserted_bytes) = (0, 16, 0);
        for g in edit.graphs.values() {
            // (Declarations and initializers replaced, `infer`'s edit, are written whole: their size is their own.)
            edited += g.node_edits.len();
            items += node_items(g);
            for (_, nodes) in g.insert_before.iter() {
                // (Each node's key, one byte in a graph or a function body, comes on top.)
                inserted_bytes += nodes.bytes().len() + nodes.len();
            }
        }
        // (New initializers, inputs and value_info are laid out apart first: see `pending_fields`.)
        self.items.reserve(items);
        self.owned.reserve(edited * EDITED_BYTES + inserted_bytes);
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
        // Smaller ranges (headers and small tensors) are read and gathered into one write; larger new bytes are
        // written from where they are held. (A rewrite of every node of a graph makes its new bytes one piece as
        // long as the graph: gathered, it grew this buffer to that size, a copy of the graph's new bytes at the
        // peak of `expand`'s memory, 8 MiB more for 100,000 nodes.) The buffer is `GATHER` bytes: in the binary a
        // block with pages of its own (see `cli::alloc`), touched as far as it is filled, where a 1 MiB one was a
        // fresh 2 MiB huge page.
        const DIRECT: usize = 1 << 16;
        const GATHER: usize = 256 << 10;
        let mut buffer: Vec<u8> = Vec::with_capacity(GATHER);
        for item in &self.items {
            match item {
                Piece::Owned(r) if r.len() < DIRECT => buffer.extend_from_slice(&self.owned[r.clone()]),
                Piece::Owned(r) => {
                    out.write_all(&buffer)?;
                    buffer.clear();
                    out.write_all(&self.owned[r.clone()])?;
                }
                Piece::Copy(r) if r.len() < DIRECT => source.read_into(r.clone(), &mut buffer)?,
                Piece::Copy(r) => {
                    out.write_all(&buffer)?;
                    buffer.clear();
                    crate::sys::copy::copy_range(file, r.clone(), out)?;
                }
            }
            if buffer.len() >= GATHER {
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

/// How many items the splice of `g`'s nodes makes, about: a run of nodes edited the short way (and of new nodes
/// before them) is one piece of new bytes, and the nodes left as they are after it one copied range; a node edited
/// the general way (attributes dropped) is a few. Room for two items per edited node, as many as nodes edited
/// apart from each other make, was 4.8 MB for a rewrite of 100,000 nodes in a row, which makes a handful: its first
/// touch alone cost a fresh 2 MiB huge page at `expand`'s peak. (A node larger than `body::KEPT_BYTES` is two more;
/// the list grows for those.)
fn node_items(g: &GraphEdit) -> usize {
    let (mut runs, mut general, mut last) = (0, 0, None);
    for (position, e) in g.node_edits.iter() {
        if last.map(|l: usize| l + 1) != Some(position) {
            runs += 1;
        }
        if e.inputs == InputEdit::Kept || !e.drop_attributes.is_empty() {
            general += 1;
        }
        last = Some(position);
    }
    // New nodes before a node not edited, after another not edited, begin a run of their own.
    let mut edits = g.node_edits.cursor();
    for (position, _) in g.insert_before.iter() {
        let after_edited = position.checked_sub(1).is_some_and(|p| edits.at(p).is_some());
        if !after_edited && edits.at(position).is_none() {
            runs += 1;
        }
    }
    2 * runs + 3 * general
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

#[cfg(test)]
mod tests;
