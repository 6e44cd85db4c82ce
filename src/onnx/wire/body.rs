//! Splicing one body (a graph or a function's body): its fields walked in order, each copied, left out, replaced
//! or rebuilt as the edit says, and its new initializers, inputs and value_info placed where an encoder would.
//!
//! Nodes come in long runs, and a rewrite mostly leaves a node as it is or changes only its inputs: such nodes are
//! spliced a run at a time from one view of the source's bytes ([`BodySplice::run`]): an untouched node's range
//! joins the copied range before it, an edited one is its new header and inputs then the rest of it copied. Every
//! other node, and any run that stops short, takes the general way, field by field ([`BodySplice::one_node`]),
//! which writes the very same bytes. Walking the graph's fields one header read at a time, and each edited node
//! through the general entry, cost about 1,200 instructions a node: a tenth of `expand`'s.

use super::encoded::set_length;
use super::node::{inputs_end, write_inputs, NodeSplice};
use super::*;
use crate::onnx::source::{field_at, varint, Field, MAX_HEAD};

/// The most bytes of an edited node's other fields that are copied into the new bytes rather than kept as a range
/// of the source (a node larger than that holds a large attribute).
const KEPT_BYTES: usize = 256;

/// How much of the source a run of nodes is read from at once: well under the source's largest window
/// (`source::MAX_READ`), which a larger view is read into a buffer of its own.
const RUN_BYTES: usize = 256 << 10;

pub(super) fn body(
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
    let mut nodes = BodySplice::new(source, edit, here, loc, kind);
    let mut initializer_index = 0;
    // Positions among the fields of each number other than nodes and initializers: a declaration may be replaced
    // (`infer`), an input or value_info left out (`fold`).
    let mut positions: BTreeMap<u32, usize> = BTreeMap::new();
    // Field by field as the headers are read: a list of a graph's fields would be as long as its nodes.
    let mut pos = range.start;
    while pos < range.end {
        let f = header(source, pos, range.end)?;
        while pending.first().is_some_and(|(tag, _)| *tag < f.number) {
            out.append(pending.remove(0).1);
        }
        pos = f.range.end;
        if f.number == kind.node {
            match nodes.run(f.range.start, range.end, out)? {
                Some(after) => pos = after,
                None => nodes.one_node(f, out)?,
            }
        } else if Some(f.number) == kind.initializer {
            match here.initializer_edits.get(&initializer_index) {
                _ if here.remove_initializers.contains(&initializer_index) => {}
                Some(t) => out.message(f.number, t),
                None => out.copy(f.range),
            }
            initializer_index += 1;
        } else {
            let position = positions.entry(f.number).or_default();
            other_field(here, kind, (f, position), out);
        }
    }
    for (_, p) in pending {
        out.append(p);
    }
    Ok(())
}

/// The field at `pos` of a message that ends at `end`, its header read where the source holds it.
fn header(source: &Source, pos: usize, end: usize) -> Result<Field, WireError> {
    let head = pos..end.min(pos + MAX_HEAD);
    let beyond = end - head.end;
    source.with_bytes(head, |head| field_at(head, pos, beyond))?
}

/// The nodes of one body being spliced: the next one's position, and the edits at it and after it.
struct BodySplice<'s, 'e> {
    source: &'s Source<'s>,
    edit: &'e ModelEdit,
    here: &'e GraphEdit,
    loc: Vec<GraphStep>,
    kind: &'e BodyFields,
    /// The position of the next node.
    index: usize,
    inserts: Cursor<'e, Encoded>,
    node_edits: Cursor<'e, NodeEdit>,
    /// The nodes with an edited graph among their attributes (or deeper), in order, from the next node on.
    subs: std::iter::Peekable<std::vec::IntoIter<usize>>,
    /// The nodes with any graph of the edit below them, even one left empty: the others' edits may take the
    /// short way.
    any_below: std::iter::Peekable<std::vec::IntoIter<usize>>,
}

impl<'s, 'e> BodySplice<'s, 'e> {
    fn new(
        source: &'s Source<'s>,
        edit: &'e ModelEdit,
        here: &'e GraphEdit,
        loc: Vec<GraphStep>,
        kind: &'e BodyFields,
    ) -> Self {
        let subs = nodes_with_subgraphs_in(edit, &loc, |e| !e.is_empty()).into_iter().peekable();
        let any_below = nodes_with_subgraphs_in(edit, &loc, |_| true).into_iter().peekable();
        let (inserts, node_edits) = (here.insert_before.cursor(), here.node_edits.cursor());
        BodySplice { source, edit, here, loc, kind, index: 0, inserts, node_edits, subs, any_below }
    }

    /// The next node, `f`, the general way: new nodes before it, then it left out, rebuilt or copied.
    fn one_node(&mut self, f: Field, out: &mut Pieces) -> Result<(), WireError> {
        let index = self.index;
        self.index += 1;
        if let Some(new_nodes) = self.inserts.at(index) {
            out.owned_with(|v| new_nodes.write_as_fields(self.kind.node, v));
        }
        if self.here.remove_nodes.contains(&index) {
            return Ok(());
        }
        let node_edit = self.node_edits.at(index);
        let loc = &self.loc;
        let below = |attribute: usize, graph: usize| {
            let mut l = loc.clone();
            l.push(GraphStep::Subgraph { node: index, attribute, graph });
            l
        };
        while self.subs.next_if(|&n| n < index).is_some() {}
        while self.any_below.next_if(|&n| n < index).is_some() {}
        let has_sub = self.subs.peek() == Some(&index);
        if node_edit.is_some() || has_sub {
            let no_graph_below = self.any_below.peek() != Some(&index);
            let at = NodeSplice { source: self.source, model: self.edit, no_graph_below };
            out.field(self.kind.node, |out| node(at, f.payload, node_edit, &below, out))?;
        } else {
            out.copy(f.range);
        }
        Ok(())
    }

    /// The node fields from `start` on (in a body that ends at `end`), spliced the quick way while they can be:
    /// where the first one not spliced starts, or `None` if not even the one at `start` was (it is left for
    /// [`BodySplice::one_node`]).
    fn run(&mut self, start: usize, end: usize, out: &mut Pieces) -> Result<Option<usize>, WireError> {
        // Nodes left out or with a graph of the edit below them take the general way.
        while self.subs.next_if(|&n| n < self.index).is_some() {}
        while self.any_below.next_if(|&n| n < self.index).is_some() {}
        let removed = self.here.remove_nodes.range(self.index..).next();
        let general = [self.any_below.peek(), removed].into_iter().flatten().min().copied().unwrap_or(usize::MAX);
        if general == self.index {
            return Ok(None);
        }
        let view = start..end.min(start + RUN_BYTES);
        let spliced = self.source.with_bytes(view, |bytes| self.run_in(bytes, start, general, out))?;
        Ok((spliced > 0).then_some(start + spliced))
    }

    /// [`BodySplice::run`] over `bytes`, the source's from `start`, up to the node at position `general`: how many
    /// of the bytes were spliced.
    fn run_in(&mut self, bytes: &[u8], start: usize, general: usize, out: &mut Pieces) -> usize {
        let key = u64::from(self.kind.node << 3 | WireType::LengthDelimited as u32);
        let mut done = 0;
        while self.index < general {
            // A node field whole in `bytes`, or the run stops.
            let mut rest = &bytes[done..];
            if varint(&mut rest) != Some(key) {
                break;
            }
            let Some(len) = varint(&mut rest).and_then(|len| usize::try_from(len).ok()).filter(|&l| l <= rest.len())
            else {
                break;
            };
            let payload = &rest[..len];
            let field = done..bytes.len() - rest.len() + len;
            let at = start + field.start..start + field.end;
            let edit = self.node_edits.at(self.index);
            let inputs = match edit {
                None => None,
                Some(e) if e.inputs != InputEdit::Kept && e.drop_attributes.is_empty() => match inputs_end(payload) {
                    Some(inputs_end) => Some((&e.inputs, inputs_end)),
                    None => break,
                },
                Some(_) => break,
            };
            if let Some(new_nodes) = self.inserts.at(self.index) {
                out.owned_with(|v| new_nodes.write_as_fields(self.kind.node, v));
            }
            match inputs {
                None => out.copy(at),
                Some((inputs, inputs_end)) => {
                    let (written, kept) = payload.split_at(inputs_end);
                    // A small node's other fields are copied in with its new inputs, so that a run of edited nodes
                    // is one piece of new bytes (a piece costs more to keep and write than a few bytes to copy).
                    let whole = kept.len() <= KEPT_BYTES;
                    out.owned_with(|v| {
                        // A node's key is one byte, in a graph (field 1) as in a function's body (field 7).
                        match u8::try_from(key) {
                            Ok(key @ ..=0x7f) => v.push(key),
                            _ => encode_varint(key, v),
                        }
                        let at = v.len();
                        v.push(0);
                        write_inputs(written, inputs, v);
                        if whole {
                            v.extend_from_slice(kept);
                        }
                        let len = v.len() - at - 1 + if whole { 0 } else { kept.len() };
                        set_length(v, at, len as u64);
                    });
                    if !whole {
                        out.copy(at.end - kept.len()..at.end);
                    }
                }
            }
            self.index += 1;
            done = field.end;
        }
        done
    }
}

/// A field of a body other than a node or an initializer, the `position`-th of its number: replaced by its
/// declaration's edit (`infer`), left out (`fold`), or copied.
fn other_field(here: &GraphEdit, kind: &BodyFields, (f, position): (Field, &mut usize), out: &mut Pieces) {
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
    let mut add = |tag, new: &Encoded| {
        let mut p = Pieces::default();
        if !new.is_empty() {
            p.owned_with(|v| new.write_as_fields(tag, v));
        }
        pending.push((tag, p));
    };
    if let Some(tag) = kind.initializer {
        add(tag, &here.initializers);
    }
    if let Some(tag) = kind.input {
        add(tag, &here.inputs);
    }
    add(kind.value_info, &here.value_info);
    pending.sort_by_key(|(tag, _)| *tag);
    pending
}
