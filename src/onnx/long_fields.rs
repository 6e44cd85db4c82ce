//! Names of 4 GiB or more, refused before the model is decoded: one clear error instead of a decoder that reads and
//! validates the whole name (two minutes for a 4 GiB one) and commands that hold names' lengths in 32 bits.
//!
//! Protobuf itself limits a message to 2 GiB, so no model another tool can read has such a field; only a crafted
//! file, or one from a writer that ignores the limit, does. What may legitimately be that long in a file past the
//! limit is tensor data (`raw_data`, the typed lists, `string_data`) and an attribute's values, and the messages
//! that hold them: a graph, its nodes and initializers, an attribute, a function, a training graph. Every other
//! field the schema gives these messages (a name, a value's declaration, a doc string, a metadata entry) is refused
//! at [`LIMIT`] bytes; a field the schema does not know is skipped by the decoder without being read, and here too.
//!
//! Only the fields' headers are read, and only inside fields of at least [`LIMIT`] bytes: a field that long lies in
//! messages at least as long. A file shorter than the limit holds no such field, and is not read at all here.
//!
//! What this guarantees to the layers above: every string of a loaded [`crate::onnx::model::Model`] is shorter than
//! 4 GiB, so its length fits a `u32` (`rewrite::expand` holds names' lengths that way).

use std::fmt;
use std::ops::Range;

use crate::onnx::source::{field_at, Source, MAX_HEAD};

/// The length, in bytes, from which a field other than tensor data is refused: 4 GiB, the first length a `u32`
/// does not hold.
pub const LIMIT: u64 = 1 << 32;

/// prost's recursion limit: a file nested deeper is refused by the decoder, which says so.
const MAX_DEPTH: usize = 100;

/// A field of the model too long to read: where it is, and how long it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongField {
    /// The fields from the model down to it, each with its position among its message's fields of the same number
    /// where the schema repeats it (`graph`, `node[3]`, `input[0]`).
    pub at: Vec<(&'static str, Option<usize>)>,
    /// Its length in bytes.
    pub len: u64,
}

impl fmt::Display for LongField {
    /// `graph.node[3].input[0] is 4294967296 bytes long; ...`: the place in the schema's words, never the
    /// field's own bytes (a name from the model, untrusted, and here too long to show).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, index)) in self.at.iter().enumerate() {
            let dot = if i == 0 { "" } else { "." };
            match index {
                Some(k) => write!(f, "{dot}{name}[{k}]")?,
                None => write!(f, "{dot}{name}")?,
            }
        }
        write!(f, " is {} bytes long; names and every field but tensor data must be under 4 GiB", self.len)
    }
}

/// The first field (in file order) of at least [`LIMIT`] bytes that is not tensor data, in the model held by
/// `source`; `None` when there is none, or when the fields' headers stop making sense before one is found (the
/// decoder then reports what is wrong, as it would have).
pub fn find(source: &Source) -> Option<LongField> {
    find_from(source, LIMIT)
}

/// [`find`], refusing fields from `limit` bytes on (tests ask with a small one).
fn find_from(source: &Source, limit: u64) -> Option<LongField> {
    if (source.len() as u64) < limit {
        return None;
    }
    let mut scan = Scan { source, limit, at: Vec::new() };
    match scan.message(0..source.len(), Message::Model, 0) {
        Err(Stop::Found(field)) => Some(field),
        Err(Stop::Unreadable) | Ok(()) => None,
    }
}

/// The messages that may hold tensor data, and so be long themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Message {
    Model,
    Graph,
    Node,
    Attribute,
    Tensor,
    SparseTensor,
    Function,
    TrainingInfo,
}

/// What a length-delimited field of a [`Message`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A message that may hold tensor data: looked into.
    Holds(Message),
    /// Tensor data, or an attribute's values: any length.
    Data,
    /// Anything else: a name, a declaration, a doc string, a metadata entry. Refused from the limit on.
    Refused,
}

/// The schema's name of field `number` of `message`, whether it is repeated, and what it is; `None` for a field
/// the schema does not know, or one that is never length-delimited. (`proto/onnx.proto`.)
fn field(message: Message, number: u32) -> Option<(&'static str, bool, Kind)> {
    use Kind::{Holds, Refused};
    use Message::*;
    let (name, repeated, kind) = match (message, number) {
        (Attribute | Tensor | SparseTensor, _) => return data_field(message, number),
        (Model, 2) => ("producer_name", false, Refused),
        (Model, 3) => ("producer_version", false, Refused),
        (Model, 4) => ("domain", false, Refused),
        (Model, 6) => ("doc_string", false, Refused),
        (Model, 7) => ("graph", false, Holds(Graph)),
        (Model, 8) => ("opset_import", true, Refused),
        (Model, 14) => ("metadata_props", true, Refused),
        (Model, 20) => ("training_info", true, Holds(TrainingInfo)),
        (Model, 25) => ("functions", true, Holds(Function)),
        (Model, 26) => ("configuration", true, Refused),
        (Graph, 1) => ("node", true, Holds(Node)),
        (Graph, 2) => ("name", false, Refused),
        (Graph, 5) => ("initializer", true, Holds(Tensor)),
        (Graph, 10) => ("doc_string", false, Refused),
        (Graph, 11) => ("input", true, Refused),
        (Graph, 12) => ("output", true, Refused),
        (Graph, 13) => ("value_info", true, Refused),
        (Graph, 14) => ("quantization_annotation", true, Refused),
        (Graph, 15) => ("sparse_initializer", true, Holds(SparseTensor)),
        (Graph, 16) => ("metadata_props", true, Refused),
        (Node, 1) => ("input", true, Refused),
        (Node, 2) => ("output", true, Refused),
        (Node, 3) => ("name", false, Refused),
        (Node, 4) => ("op_type", false, Refused),
        (Node, 5) => ("attribute", true, Holds(Attribute)),
        (Node, 6) => ("doc_string", false, Refused),
        (Node, 7) => ("domain", false, Refused),
        (Node, 8) => ("overload", false, Refused),
        (Node, 9) => ("metadata_props", true, Refused),
        (Node, 10) => ("device_configurations", true, Refused),
        (Function, 1) => ("name", false, Refused),
        (Function, 4) => ("input", true, Refused),
        (Function, 5) => ("output", true, Refused),
        (Function, 6) => ("attribute", true, Refused),
        (Function, 7) => ("node", true, Holds(Node)),
        (Function, 8) => ("doc_string", false, Refused),
        (Function, 9) => ("opset_import", true, Refused),
        (Function, 10) => ("domain", false, Refused),
        (Function, 11) => ("attribute_proto", true, Holds(Attribute)),
        (Function, 12) => ("value_info", true, Refused),
        (Function, 13) => ("overload", false, Refused),
        (Function, 14) => ("metadata_props", true, Refused),
        (TrainingInfo, 1) => ("initialization", false, Holds(Graph)),
        (TrainingInfo, 2) => ("algorithm", false, Holds(Graph)),
        (TrainingInfo, 3) => ("initialization_binding", true, Refused),
        (TrainingInfo, 4) => ("update_binding", true, Refused),
        _ => return None,
    };
    Some((name, repeated, kind))
}

/// [`field`] for the messages that hold tensor data themselves: an attribute, a tensor, a sparse tensor.
fn data_field(message: Message, number: u32) -> Option<(&'static str, bool, Kind)> {
    use Kind::{Data, Holds, Refused};
    use Message::*;
    let (name, repeated, kind) = match (message, number) {
        (Attribute, 1) => ("name", false, Refused),
        (Attribute, 4) => ("s", false, Data),
        (Attribute, 5) => ("t", false, Holds(Tensor)),
        (Attribute, 6) => ("g", false, Holds(Graph)),
        (Attribute, 7) => ("floats", false, Data),
        (Attribute, 8) => ("ints", false, Data),
        (Attribute, 9) => ("strings", true, Data),
        (Attribute, 10) => ("tensors", true, Holds(Tensor)),
        (Attribute, 11) => ("graphs", true, Holds(Graph)),
        (Attribute, 13) => ("doc_string", false, Refused),
        (Attribute, 14) => ("tp", false, Refused),
        (Attribute, 15) => ("type_protos", true, Refused),
        (Attribute, 21) => ("ref_attr_name", false, Refused),
        (Attribute, 22) => ("sparse_tensor", false, Holds(SparseTensor)),
        (Attribute, 23) => ("sparse_tensors", true, Holds(SparseTensor)),
        // A packed list is one field per run, and writers put the whole list in one: no position.
        (Tensor, 1) => ("dims", false, Data),
        (Tensor, 3) => ("segment", false, Refused),
        (Tensor, 4) => ("float_data", false, Data),
        (Tensor, 5) => ("int32_data", false, Data),
        (Tensor, 6) => ("string_data", true, Data),
        (Tensor, 7) => ("int64_data", false, Data),
        (Tensor, 8) => ("name", false, Refused),
        (Tensor, 9) => ("raw_data", false, Data),
        (Tensor, 10) => ("double_data", false, Data),
        (Tensor, 11) => ("uint64_data", false, Data),
        (Tensor, 12) => ("doc_string", false, Refused),
        (Tensor, 13) => ("external_data", true, Refused),
        (Tensor, 16) => ("metadata_props", true, Refused),
        (SparseTensor, 1) => ("values", false, Holds(Tensor)),
        (SparseTensor, 2) => ("indices", false, Holds(Tensor)),
        (SparseTensor, 3) => ("dims", false, Data),
        _ => return None,
    };
    Some((name, repeated, kind))
}

/// Why a scan stopped before the end.
enum Stop {
    Found(LongField),
    /// A header that does not parse, a read that failed, or nesting past prost's limit: the decoder reports it.
    Unreadable,
}

struct Scan<'s, 'a> {
    source: &'s Source<'a>,
    limit: u64,
    /// The fields from the model down to the message being read.
    at: Vec<(&'static str, Option<usize>)>,
}

impl Scan<'_, '_> {
    /// Reads the headers of the fields of `message`, held in `range`, looking into each of its long fields.
    fn message(&mut self, range: Range<usize>, message: Message, depth: usize) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Unreadable);
        }
        // How many fields of each known number were met: the next one's position. Known numbers only, so a
        // hostile run of distinct unknown numbers costs nothing here.
        let mut seen: Vec<(u32, usize)> = Vec::new();
        let mut pos = range.start;
        while pos < range.end {
            let head = pos..range.end.min(pos + MAX_HEAD);
            let beyond = range.end - head.end;
            let read = self.source.with_bytes(head, |head| field_at(head, pos, beyond));
            let Ok(Ok(f)) = read else { return Err(Stop::Unreadable) };
            pos = f.range.end;
            let Some((name, repeated, kind)) = field(message, f.number) else { continue };
            let index = match seen.iter_mut().find(|(n, _)| *n == f.number) {
                Some((_, count)) => std::mem::replace(count, *count + 1),
                None => {
                    seen.push((f.number, 1));
                    0
                }
            };
            let len = f.payload.len() as u64;
            if len < self.limit || kind == Kind::Data {
                continue;
            }
            self.at.push((name, repeated.then_some(index)));
            match kind {
                Kind::Holds(inner) => self.message(f.payload, inner, depth + 1)?,
                _ => return Err(Stop::Found(LongField { at: self.at.clone(), len })),
            }
            self.at.pop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::{
        attribute_proto, AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto,
    };
    use prost::Message as _;

    /// A limit small enough for models built in memory: every name of the models below is shorter.
    const SMALL: u64 = 64;

    fn long(c: char) -> String {
        c.to_string().repeat(SMALL as usize)
    }

    fn node(name: &str, inputs: &[&str]) -> NodeProto {
        NodeProto {
            name: Some(name.into()),
            op_type: Some("Add".into()),
            input: inputs.iter().map(|&i| i.into()).collect(),
            output: smallvec::smallvec!["y".into()],
            ..Default::default()
        }
    }

    /// A model of a few short names, `raw_data` of twice the small limit, and then `graph` changed by `change`.
    fn model(change: impl FnOnce(&mut GraphProto)) -> Vec<u8> {
        let data = TensorProto {
            name: Some("w".into()),
            raw_data: Some(vec![1; 2 * SMALL as usize].into()),
            ..Default::default()
        };
        let mut graph = GraphProto {
            node: vec![node("n0", &["a", "w"]), node("n1", &["y", "w"])],
            initializer: vec![data],
            ..Default::default()
        };
        change(&mut graph);
        ModelProto { ir_version: Some(8), graph: Some(graph), ..Default::default() }.encode_to_vec()
    }

    fn found(bytes: &[u8]) -> Option<String> {
        find_from(&Source::Memory(bytes), SMALL).map(|f| f.to_string())
    }

    #[test]
    fn a_long_name_is_found_where_it_is_and_named_by_its_place_not_its_bytes() {
        let at = |bytes: &[u8]| found(bytes).map(|s| s.split(" is ").next().unwrap().to_string());
        let input = model(|g| g.node[1].input[1] = long('x').into());
        assert_eq!(at(&input).as_deref(), Some("graph.node[1].input[1]"));
        assert!(!found(&input).unwrap().contains('x'), "the name's bytes are never shown");
        assert!(found(&input).unwrap().contains(&format!(" is {SMALL} bytes long")), "the field's length");
        let node_name = model(|g| g.node[0].name = Some(long('n').into()));
        assert_eq!(at(&node_name).as_deref(), Some("graph.node[0].name"));
        let declared = model(|g| g.value_info.push(ValueInfoProto { name: Some(long('v')), ..Default::default() }));
        assert_eq!(at(&declared).as_deref(), Some("graph.value_info[0]"));
        let initializer = model(|g| g.initializer[0].name = Some(long('w')));
        assert_eq!(at(&initializer).as_deref(), Some("graph.initializer[0].name"));
        // In a graph held by an attribute, and in a function's node.
        let body = |g: &mut GraphProto| {
            let inner = GraphProto { node: vec![node(&long('b'), &["a"])], ..Default::default() };
            let attribute = AttributeProto {
                name: Some("then_branch".into()),
                r#type: Some(attribute_proto::AttributeType::Graph as i32),
                g: Some(inner),
                ..Default::default()
            };
            g.node[1].attribute.push(attribute);
        };
        assert_eq!(at(&model(body)).as_deref(), Some("graph.node[1].attribute[0].g.node[0].name"));
        let mut with_function = ModelProto::decode(&model(|_| {})[..]).unwrap();
        let function = FunctionProto { node: vec![node("f", &[&long('f')])], ..Default::default() };
        with_function.functions = vec![FunctionProto::default(), function];
        assert_eq!(at(&with_function.encode_to_vec()).as_deref(), Some("functions[1].node[0].input[0]"));
    }

    #[test]
    fn tensor_data_and_fields_the_schema_does_not_know_may_be_long() {
        // `raw_data` twice the limit, in a graph and a node over it; and an unknown field of the node as long.
        assert_eq!(found(&model(|_| {})), None);
        let mut unknown = model(|_| {});
        let mut field = vec![0x9a, 0x01]; // field 19, length-delimited, at the model's top level.
        prost::encoding::encode_varint(2 * SMALL, &mut field);
        unknown.extend(field);
        unknown.extend(vec![b'u'; 2 * SMALL as usize]);
        assert_eq!(found(&unknown), None);
        // One byte short of the limit is no long field either.
        assert_eq!(found(&model(|g| g.node[0].name = Some(long('n')[1..].into()))), None);
    }

    #[test]
    fn headers_that_do_not_parse_are_left_to_the_decoder() {
        let mut bytes = model(|g| g.node[1].input[1] = long('x').into());
        // The graph's length made to run past the file's end: the decoder reports it, not this scan.
        let cut = bytes.len() - 1;
        bytes.truncate(cut);
        assert_eq!(found(&bytes), None);
    }
    /// The table of [`field`] is the schema's, written out by hand: checked here against `proto/onnx.proto` as
    /// protox reads it (as build.rs does), so that a field added to or renamed in the schema is not silently
    /// skipped. Every field of the eight container messages that can be length-delimited (a string, bytes, a
    /// message, a repeated scalar) is in the table under its schema name, a message of a container type is looked
    /// into as that type, and every row of the table is a field of the schema.
    #[test]
    fn the_table_of_fields_is_the_schemas() {
        const STRING: i32 = 9;
        const MESSAGE: i32 = 11;
        const BYTES: i32 = 12;
        const REPEATED: i32 = 3;
        let proto = concat!(env!("CARGO_MANIFEST_DIR"), "/proto");
        let schema = protox::compile([format!("{proto}/onnx.proto")], [proto]).expect("proto/onnx.proto compiles");
        let messages = &schema.file.iter().find(|f| f.name() == "onnx.proto").expect("onnx.proto").message_type;
        let containers = [
            ("ModelProto", Message::Model),
            ("GraphProto", Message::Graph),
            ("NodeProto", Message::Node),
            ("AttributeProto", Message::Attribute),
            ("TensorProto", Message::Tensor),
            ("SparseTensorProto", Message::SparseTensor),
            ("FunctionProto", Message::Function),
            ("TrainingInfoProto", Message::TrainingInfo),
        ];
        let container = |type_name: &str| containers.iter().find(|(n, _)| type_name == format!(".onnx.{n}"));
        for (name, message) in containers {
            let fields = &messages.iter().find(|m| m.name() == name).expect(name).field;
            for f in fields {
                let (number, kind) = (f.number() as u32, f.r#type.unwrap_or_default());
                if ![STRING, MESSAGE, BYTES].contains(&kind) && f.label.unwrap_or_default() != REPEATED {
                    continue;
                }
                let row = field(message, number);
                assert_eq!(row.map(|(n, _, _)| n), Some(f.name()), "{name}.{} ({number})", f.name());
                if let (MESSAGE, Some((_, held))) = (kind, container(f.type_name())) {
                    assert_eq!(row.map(|(_, _, k)| k), Some(Kind::Holds(*held)), "{name}.{}", f.name());
                }
            }
            for number in 1..64 {
                if let Some((row, _, _)) = field(message, number) {
                    let f = fields.iter().find(|f| f.number() as u32 == number);
                    assert_eq!(f.map(|f| f.name()), Some(row), "{name}: the table's {row} ({number})");
                }
            }
        }
    }
}
