//! The main graph's lists sized before decoding, from a scan of the field headers, and node name lists fitted
//! after it.
//!
//! Why: a `Vec<NodeProto>` grown by doubling copies its 192-byte nodes over and over, and at its last doubling holds
//! the old and the new buffer at once (92 MiB and 183 MiB for a million nodes). Counting the graph's fields first
//! costs a few instructions a field (the headers are parsed in place; payloads are skipped, so tensor data is not
//! read).

use std::fs::File;
use std::ops::Range;

use crate::onnx::pb::{field, GraphProto, ModelProto, NodeProto};
use crate::onnx::source::{for_each_field, varint, FileSource, Source, Window, MAX_HEAD};

/// How many nodes, initializers, inputs, outputs and value_infos the main graph has.
type Counts = [usize; 5];

/// An empty model whose main graph (when `counts` says there is one) has room for what it will hold.
pub fn presized(counts: Option<Counts>) -> ModelProto {
    let graph = counts.map(|counts| GraphProto {
        node: Vec::with_capacity(counts[0]),
        initializer: Vec::with_capacity(counts[1]),
        input: Vec::with_capacity(counts[2]),
        output: Vec::with_capacity(counts[3]),
        value_info: Vec::with_capacity(counts[4]),
        ..Default::default()
    });
    ModelProto { graph, ..Default::default() }
}

/// The main graph's counts in the model file `file` of `len` bytes; `None` when there is no graph or the headers
/// do not parse (the decoder then reports what is wrong).
pub fn counts_in_file(file: &File, len: usize) -> Option<Counts> {
    let source = Source::File(FileSource::new(file, len));
    let mut graphs = Vec::new();
    for_each_field(&source, 0..len, |f| {
        if f.number == field::model::GRAPH {
            graphs.push(f.payload)
        }
    })
    .ok()?;
    let mut counts = None;
    let mut window = Window::default();
    for graph in graphs {
        let counts = counts.get_or_insert([0; 5]);
        let mut pos = graph.start;
        while pos < graph.end {
            let head = window.head(file, pos, MAX_HEAD.min(graph.end - pos), len).ok()?;
            let head = &head[..head.len().min(graph.end - pos)];
            pos += count_headers(head, graph.end - pos, counts)?;
        }
    }
    counts
}

/// Counts the fields of a graph whose headers lie whole in `head`, the graph's bytes from a field on (`left` of
/// them in all), and returns how far the next field starts from there; `None` where a field ends past the graph.
/// Why all at once: the window is asked for bytes once for many headers (a small tensor's 270 bytes hold one
/// header: ~90 instructions a field went to asking), and the loop keeps its place in registers, relative to
/// `head` (~45 instructions a field where it carried the file's offsets); out of line, where nothing else competes
/// for registers.
#[inline(never)]
fn count_headers(head: &[u8], left: usize, counts: &mut Counts) -> Option<usize> {
    // Where the graph goes on past `head`, a header is read from it only where MAX_HEAD bytes remain (one cut by
    // its end is read again, from the next window).
    let go_on = if head.len() < left { (head.len() + 1).saturating_sub(MAX_HEAD) } else { head.len() };
    let mut at = 0;
    loop {
        at += count_usual_field(&head[at..], left - at, counts)?;
        if at >= go_on {
            return Some(at);
        }
    }
}

/// The main graph's counts in the model held in `bytes`, as [`counts_in_file`].
pub fn counts_in_memory(bytes: &[u8]) -> Option<Counts> {
    let mut graphs = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let (key, header, skip) = header(&bytes[pos..])?;
        let end = (pos + header).checked_add(skip).filter(|&end| end <= bytes.len())?;
        if key == u64::from(field::model::GRAPH << 3 | field::LEN) {
            graphs.push(pos + header..end);
        }
        pos = end;
    }
    let mut counts = None;
    for graph in graphs {
        let counts = counts.get_or_insert([0; 5]);
        let mut pos = graph.start;
        while pos < graph.end {
            pos = count_field(&bytes[pos..graph.end], pos..graph.end, counts)?;
        }
    }
    counts
}

/// [`count_field`] at the start of `head`, with `left` bytes of the graph from there: the length of the field, or
/// `None` where it ends past them. The usual header is read first in a few instructions: the one-byte key of a
/// length-delimited field (numbers under 16: nodes, initializers) and a length of one or two bytes.
#[inline(always)]
fn count_usual_field(head: &[u8], left: usize, counts: &mut Counts) -> Option<usize> {
    let usual = |key: u8| key & 0x87 == field::LEN as u8;
    let (key, header, skip) = match *head {
        [key, len, ..] if usual(key) && len < 0x80 => (key, 2, usize::from(len)),
        [key, low, high, ..] if usual(key) && high < 0x80 => (key, 3, usize::from(low & 0x7f) | usize::from(high) << 7),
        _ => return count_field(head, 0..left, counts),
    };
    count(u32::from(key >> 3), counts);
    Some(header + skip).filter(|&end| end <= left)
}

/// Counts the graph field whose header starts `head` (the bytes at `rest.start`, up to `rest.end` at most) and
/// returns where the next field starts.
#[inline(always)]
fn count_field(head: &[u8], rest: Range<usize>, counts: &mut Counts) -> Option<usize> {
    let (key, header, skip) = header(head)?;
    if key & 7 == u64::from(field::LEN) {
        count(u32::try_from(key >> 3).ok()?, counts);
    }
    (rest.start + header).checked_add(skip).filter(|&end| end <= rest.end)
}

/// Counts a length-delimited field of the graph of number `number`.
#[inline(always)]
fn count(number: u32, counts: &mut Counts) {
    // The place in `counts` of each field number under 16 ([`NONE`]: not counted), looked up rather than matched:
    // a graph of small fields (10,000 small tensors, or nodes) spent ~7 instructions a field on the match.
    const NONE: u8 = u8::MAX;
    const SLOTS: [u8; 16] = {
        let mut slots = [NONE; 16];
        slots[field::graph::NODE as usize] = 0;
        slots[field::graph::INITIALIZER as usize] = 1;
        slots[field::graph::INPUT as usize] = 2;
        slots[field::graph::OUTPUT as usize] = 3;
        slots[field::graph::VALUE_INFO as usize] = 4;
        slots
    };
    if let Some(&slot) = SLOTS.get(number as usize).filter(|&&slot| slot != NONE) {
        counts[usize::from(slot)] += 1;
    }
}

/// A field's key, the length of its header (key and length or value) and how many bytes of payload follow it.
#[inline(always)]
fn header(head: &[u8]) -> Option<(u64, usize, usize)> {
    // Keys and lengths of one or two bytes (most of them) without a call.
    let mut rest = head;
    let key = varint(&mut rest)?;
    let skip = match key & 7 {
        0 => varint(&mut rest).map(|_| 0)?,
        1 => 8,
        2 => usize::try_from(varint(&mut rest)?).ok()?,
        5 => 4,
        _ => return None,
    };
    Some((key, head.len() - rest.len(), skip))
}

/// A node's name list longer than what it holds inline (two inputs, one output: see [`crate::onnx::pb::node`])
/// grows by doubling, on the fast path as in prost's code: up to twice its length in room to spare. Moving the
/// names into lists of their exact length gives it back.
pub fn fit_name_lists(model: &mut ModelProto) {
    let functions = model.functions.iter_mut().map(|f| &mut f.node);
    for nodes in model.graph.as_mut().map(|g| &mut g.node).into_iter().chain(functions) {
        nodes.iter_mut().for_each(fit);
    }
}

/// A node's name lists at their length: a list grown past what it holds inline has room to spare (up to twice its
/// length), and is moved back inline when it fits there.
fn fit(node: &mut NodeProto) {
    if node.input.spilled() {
        node.input.shrink_to_fit();
    }
    if node.output.spilled() {
        node.output.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::{TensorProto, ValueInfoProto};
    use prost::Message;
    use std::io::Write;

    fn graph(nodes: usize, tensors: usize) -> GraphProto {
        let node = |i: usize| NodeProto {
            input: smallvec::smallvec![format!("x{i}").into()],
            name: Some("n".repeat(i).into()),
            ..Default::default()
        };
        let tensor = |i: usize| TensorProto { raw_data: Some(vec![7; i * 50].into()), ..Default::default() };
        let info = || ValueInfoProto { name: Some("v".into()), ..Default::default() };
        GraphProto {
            node: (0..nodes).map(node).collect(),
            initializer: (0..tensors).map(tensor).collect(),
            input: vec![info(), info()],
            output: vec![info()],
            value_info: vec![info(); 3],
            name: Some("g".into()),
            ..Default::default()
        }
    }

    fn counts_both_ways(bytes: &[u8]) -> Option<Counts> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        let in_memory = counts_in_memory(bytes);
        assert_eq!(counts_in_file(file.as_file(), bytes.len()), in_memory, "file and memory count alike");
        in_memory
    }

    #[test]
    fn the_counts_are_the_graphs_list_lengths() {
        // Names and tensors of growing size: keys and lengths of one, two and three bytes.
        let model = ModelProto { ir_version: Some(8), graph: Some(graph(300, 400)), ..Default::default() };
        assert_eq!(counts_both_ways(&model.encode_to_vec()), Some([300, 400, 2, 1, 3]));
        // A graph field twice: prost merges them, so the counts add up.
        let mut bytes = model.encode_to_vec();
        bytes.extend(ModelProto { graph: Some(graph(2, 1)), ..Default::default() }.encode_to_vec());
        assert_eq!(counts_both_ways(&bytes), Some([302, 401, 4, 2, 6]));
        let decoded = ModelProto::decode(bytes.as_slice()).unwrap().graph.unwrap();
        assert_eq!((decoded.node.len(), decoded.initializer.len()), (302, 401));
    }

    /// Headers are counted from what one read brought in, many at a time, and a header cut by the read's end is
    /// read again: nodes of 166 to 186 bytes with headers of three bytes (a length of two). A read starts at a
    /// field and takes 4 KiB, so with 178-byte fields (4,096 = 23 × 178 + 2) every read ends two bytes into a
    /// header.
    #[test]
    fn headers_cut_by_the_end_of_a_read_are_read_again() {
        for len in 160..=180 {
            let node = NodeProto { input: smallvec::smallvec!["x".repeat(len).into()], ..Default::default() };
            let graph = GraphProto { node: vec![node; 1_000], ..Default::default() };
            let bytes = ModelProto { graph: Some(graph), ..Default::default() }.encode_to_vec();
            assert_eq!(counts_both_ways(&bytes), Some([1_000, 0, 0, 0, 0]), "inputs of {len} bytes");
        }
    }

    #[test]
    fn no_graph_or_a_malformed_header_gives_no_counts() {
        assert_eq!(counts_both_ways(&ModelProto { ir_version: Some(8), ..Default::default() }.encode_to_vec()), None);
        let bytes = ModelProto { graph: Some(graph(3, 0)), ..Default::default() }.encode_to_vec();
        assert_eq!(counts_both_ways(&bytes[..bytes.len() - 1]), None, "a graph cut short");
    }

    #[test]
    fn fitted_name_lists_hold_their_names_at_their_length() {
        // Three inputs grown to room for four, and one output spilled to the heap: each at its length after.
        let mut node = NodeProto { input: ["a", "b", "c"].map(Into::into).into_iter().collect(), ..Default::default() };
        node.output = smallvec::SmallVec::with_capacity(2);
        node.output.push("y".into());
        assert_eq!((node.input.capacity(), node.output.spilled()), (4, true));
        let mut model =
            ModelProto { graph: Some(GraphProto { node: vec![node], ..Default::default() }), ..Default::default() };
        fit_name_lists(&mut model);
        let node = &model.graph.unwrap().node[0];
        assert_eq!((node.input.as_slice(), node.input.capacity()), (&["a", "b", "c"].map(Into::into)[..], 3));
        assert!(!node.output.spilled() && node.output.as_slice() == ["y"]);
    }
}
