//! Tests of `decode.rs`: the fast path against prost's generated decoding, on crafted and mutated models.

use super::*;
use crate::onnx::pb::tensor_shape_proto::{dimension::Value::*, Dimension};
use crate::onnx::pb::{attribute_proto, reference, type_proto, AttributeProto, StringStringEntryProto};
use crate::onnx::pb::{TensorShapeProto, TypeProto, ValueInfoProto};
use crate::onnx::source::tests::file_with;
use compact_str::{format_compact, CompactString};
use proptest::prelude::*;

pub(super) fn node(i: usize, inputs: usize) -> NodeProto {
    let mut node = NodeProto {
        input: (0..inputs).map(|k| format_compact!("v{}", i + k)).collect(),
        output: [format_compact!("v{}", i + inputs), CompactString::default()].into_iter().collect(),
        // Non-ASCII names, and names too long to be held inline.
        name: Some(if i.is_multiple_of(6) {
            format_compact!("a name of more than 24 bytes {i}")
        } else {
            format_compact!("n\u{e9}{i}")
        }),
        op_type: Some("Add".into()),
        domain: i.is_multiple_of(3).then(|| "ai.onnx".into()),
        attribute: (0..i % 4).map(|k| attribute(i + k)).collect(),
        rare: None,
    };
    if i.is_multiple_of(5) {
        node.rare_mut().doc_string = Some("doc".into());
    }
    if i.is_multiple_of(7) {
        node.rare_mut().overload = Some("o".into());
    }
    if i % 4 == 1 {
        node.rare_mut().metadata_props =
            vec![StringStringEntryProto { key: Some("k".into()), value: Some("v".into()) }];
    }
    node
}

/// An attribute of each form the fast path reads (an integer, a float, bytes that are not UTF-8, a tensor, lists
/// of each kind) and of forms it hands to prost (a doc string, a reference, a type, an empty list written packed).
pub(super) fn attribute(k: usize) -> AttributeProto {
    use attribute_proto::AttributeType as Type;
    let of = |ty: Type| AttributeProto { name: Some(format!("a{k}")), r#type: Some(ty as i32), ..Default::default() };
    match k % 8 {
        0 => AttributeProto { i: Some(k as i64 - 3), ..of(Type::Int) },
        1 => AttributeProto { f: Some(k as f32 * -0.5), ..of(Type::Float) },
        2 => AttributeProto { s: Some(Bytes::from(vec![b's', 0xff, k as u8])), ..of(Type::String) },
        3 => AttributeProto { t: Some(tensor(k)), ..of(Type::Tensor) },
        4 => AttributeProto { ints: [1, -1, 1 << 40, 0][..k % 5].to_vec(), ..of(Type::Ints) },
        5 => AttributeProto { floats: vec![1.5, -0.0, f32::MAX], ..of(Type::Floats) },
        6 => {
            AttributeProto { strings: vec![Bytes::from_static(b"x"), Bytes::from(vec![0xfe; k])], ..of(Type::Strings) }
        }
        _ => AttributeProto {
            doc_string: Some("d".into()),
            ref_attr_name: Some("r".into()),
            tp: Some(TypeProto { denotation: Some("TENSOR".into()), ..Default::default() }),
            ..of(Type::TypeProto)
        },
    }
}

fn tensor(i: usize) -> TensorProto {
    TensorProto {
        name: Some(format!("t{i}")),
        dims: vec![i as i64, -1, 3],
        data_type: Some(1),
        raw_data: i.is_multiple_of(2).then(|| Bytes::from(vec![i as u8; i * 3])),
        float_data: if i.is_multiple_of(3) { vec![1.5, -2.0] } else { vec![] },
        // Negative values are varints of ten bytes.
        int32_data: if i % 5 == 1 { vec![7, -3, (i as i32) << 20] } else { vec![] },
        doc_string: i.is_multiple_of(4).then(|| "d".into()),
        ..Default::default()
    }
}

/// A declaration of each form the fast path reads (dims of values and names, a dim met twice, metadata, fields
/// written twice) and of forms it hands to prost (a denotation, a sequence type, a doc string, no type).
fn declaration(i: usize) -> ValueInfoProto {
    let dim = |value| Dimension { denotation: None, value: Some(value) };
    let mut shape = vec![
        dim(DimValue(i as i64)),
        dim(DimParam(format!("n{}", i % 3))),
        dim(DimValue(-1)),
        dim(DimParam("\u{e9}".into())),
    ];
    shape.truncate(i % 5);
    let tensor = type_proto::Tensor {
        elem_type: (i % 6 != 5).then_some(1 + i as i32 % 3),
        shape: (i % 7 != 6).then_some(TensorShapeProto { dim: shape }),
    };
    let mut ty = TypeProto { tensor_type: Some(tensor), ..Default::default() };
    match i % 11 {
        3 => ty.denotation = Some("TENSOR".into()),
        4 => {
            ty = TypeProto {
                sequence_type: Some(Box::new(type_proto::Sequence { elem_type: Some(Box::new(ty)) })),
                ..Default::default()
            }
        }
        5 => ty
            .tensor_type
            .as_mut()
            .unwrap()
            .shape
            .get_or_insert_default()
            .dim
            .push(Dimension { denotation: Some("DATA_BATCH".into()), value: None }),
        _ => {}
    }
    ValueInfoProto {
        name: (i % 8 != 7).then(|| format!("v{i}")),
        r#type: (i % 9 != 8).then_some(ty),
        doc_string: (i % 10 == 9).then(|| "d".into()),
        metadata_props: (0..i % 3)
            .map(|k| StringStringEntryProto { key: Some(format!("k{k}")), value: (k != 1).then(|| "a value".into()) })
            .collect(),
    }
}

/// The declarations of the forms the fast path reads are read there (their dims and metadata entries into lists
/// made at once as long as they end up), and read as prost reads them, alone and two merged (each field met twice: a name replaced, a type merged, dims appended, metadata appended); the others
/// are handed to prost.
#[test]
fn declarations_of_the_common_forms_are_read_on_the_fast_path_as_prost_reads_them() {
    let read = |bytes: &[u8]| {
        let mut info = ValueInfoProto::default();
        info::decode_value_info(bytes, &mut info).map(|()| info)
    };
    let handed_over = |i: usize| (matches!(i % 11, 3..=5) && i % 9 != 8) || i % 10 == 9;
    for i in 0..60 {
        let bytes = declaration(i).encode_to_vec();
        let once = read(&bytes);
        assert_eq!(once, (!handed_over(i)).then(|| declaration(i)), "declaration {i}");
        // Its lists made at once as long as they end up.
        if let Some(info) = once {
            let dims = info.r#type.and_then(|t| t.tensor_type?.shape).map(|s| s.dim).unwrap_or_default();
            assert_eq!((dims.capacity(), info.metadata_props.capacity()), (dims.len(), info.metadata_props.len()));
        }
        for j in [i + 1, i + 13] {
            let both = [bytes.clone(), declaration(j).encode_to_vec()].concat();
            if let Some(merged) = read(&both) {
                assert_eq!(merged, ValueInfoProto::decode(both.as_slice()).unwrap(), "{i} then {j}");
            } else {
                assert!(handed_over(i) || handed_over(j), "{i} then {j}");
            }
        }
    }
}

/// A model with every kind of field the fast paths read or hand over: nodes with attributes (one holding a
/// graph of its own), initializers, declarations, a function, and fields of the model itself.
fn model() -> ModelProto {
    let inner = GraphProto { node: vec![node(105, 1)], name: Some("body".into()), ..Default::default() };
    let then_branch = AttributeProto { name: Some("then_branch".into()), g: Some(inner), ..Default::default() };
    let with_graph = NodeProto { attribute: vec![then_branch], ..node(50, 2) };
    let mut nodes: Vec<NodeProto> = (0..40).map(|i| node(i, i % 4)).collect();
    nodes.insert(7, with_graph);
    let graph = GraphProto {
        node: nodes,
        initializer: (0..12).map(tensor).collect(),
        name: Some("g".into()),
        input: (0..4).map(declaration).collect(),
        output: (4..6).map(declaration).collect(),
        value_info: (6..40).map(declaration).collect(),
        ..Default::default()
    };
    let function = FunctionProto {
        name: Some("f".into()),
        node: vec![node(3, 2), node(4, 0)],
        value_info: (40..44).map(declaration).collect(),
        ..Default::default()
    };
    ModelProto {
        ir_version: Some(8),
        producer_name: Some("test".into()),
        graph: Some(graph),
        functions: vec![function],
        ..Default::default()
    }
}

/// What prost's generated code (its own `NodeProto` included) and this module make of `bytes`, from a slice and
/// from shared `Bytes`, with and without the initializers' fast path: the same value or the same error, in words;
/// a value is compared by its encoding with prost's, and whole with what prost's code makes with the compact node.
/// Whole means field by field as `Debug` shows it: `==` would call two models unequal wherever a mutated float is a
/// NaN (NaN ≠ NaN), and the encodings already compare every float bit for bit.
fn assert_agree(bytes: &[u8]) {
    let prosts = reference::ModelProto::decode(bytes).map(|m| m.encode_to_vec()).map_err(|e| e.to_string());
    let show = |r: Result<ModelProto, DecodeError>| {
        r.map(|m| (m.encode_to_vec(), format!("{m:?}"))).map_err(|e| e.to_string())
    };
    let reference = show(ModelProto::decode(bytes));
    assert_eq!(reference.as_ref().map(|(b, _)| b), prosts.as_ref(), "the compact node is prost's");
    for tensors in [false, true] {
        let mut from_slice = ModelProto::default();
        let slice = merge_model(&mut from_slice, bytes, tensors).map(|_| from_slice);
        assert_eq!(show(slice), reference, "from a slice, tensors {tensors}");
        let mut shared = ModelProto::default();
        let shared = merge_model(&mut shared, Bytes::copy_from_slice(bytes), tensors).map(|_| shared);
        assert_eq!(show(shared), reference, "from Bytes, tensors {tensors}");
    }
}

#[test]
fn the_fast_path_decodes_what_prost_decodes() {
    let bytes = model().encode_to_vec();
    assert_agree(&bytes);
    let mut decoded = ModelProto::default();
    merge_model(&mut decoded, &bytes[..], true).unwrap();
    assert_eq!(decoded, model());
}

/// A float attribute and tensor that are NaN (as a mutated byte makes them) decode alike on both paths: the check
/// compares them bit for bit, where `==` would call every model holding a NaN unequal to itself.
#[test]
fn nan_floats_decode_alike() {
    let mut m = model();
    let graph = m.graph.as_mut().unwrap();
    let nan = AttributeProto {
        name: Some("nan".into()),
        f: Some(f32::NAN),
        floats: vec![f32::NAN, -f32::NAN],
        ..Default::default()
    };
    graph.node.push(NodeProto { attribute: vec![nan], ..node(60, 1) });
    graph.initializer[0].float_data = vec![f32::NAN];
    assert_agree(&m.encode_to_vec());
}

/// A node read on the fast path keeps its doc string and metadata entries, as one read by prost (in a graph of an
/// attribute) does, and its other seldom-set field, `overload`: a loaded model re-encodes to its own bytes.
#[test]
fn the_fast_path_keeps_a_nodes_doc_string_and_metadata() {
    let bytes = model().encode_to_vec();
    let mut decoded = ModelProto::default();
    merge_model(&mut decoded, &bytes[..], true).unwrap();
    let nodes = &decoded.graph.as_ref().unwrap().node;
    let written = &model().graph.unwrap().node;
    assert!(
        written.iter().any(|n| !n.metadata_props().is_empty()) && written.iter().any(|n| !n.doc_string().is_empty())
    );
    let notes = |list: &[NodeProto]| {
        list.iter().map(|n| (n.doc_string().to_string(), n.metadata_props().to_vec())).collect::<Vec<_>>()
    };
    assert_eq!(notes(nodes), notes(written));
    assert_eq!(decoded.encode_to_vec(), bytes, "re-encoded byte-identical");
    let overloads = |list: &[NodeProto]| list.iter().map(|n| n.overload().to_string()).collect::<Vec<_>>();
    assert_eq!(overloads(nodes), overloads(written));
    assert!(overloads(nodes).contains(&"o".to_string()));
    let inner = &crate::onnx::attr::subgraph(&nodes[7], 0, 0).unwrap().node[0];
    assert_eq!(inner.metadata_props(), node(105, 1).metadata_props());
    assert!(!inner.metadata_props().is_empty(), "node 105 has metadata");
    assert!(!inner.doc_string().is_empty(), "node 105 has a doc string");
}

/// Graphs nested in attributes down to prost's recursion limit and past it: the fast path counts the levels
/// prost counts, so the deepest model that decodes and the error of the next one are the same.
#[test]
fn the_recursion_limit_is_prosts() {
    let mut outcomes = Vec::new();
    for depth in 28..36 {
        let mut graph = GraphProto { node: vec![node(0, 1)], ..Default::default() };
        for _ in 0..depth {
            let body = AttributeProto { name: Some("body".into()), g: Some(graph), ..Default::default() };
            let holder = NodeProto { attribute: vec![body], ..node(1, 1) };
            graph = GraphProto { node: vec![holder], ..Default::default() };
        }
        let bytes = ModelProto { graph: Some(graph), ..Default::default() }.encode_to_vec();
        assert_agree(&bytes);
        outcomes.push(ModelProto::decode(bytes.as_slice()).is_ok());
    }
    assert!(outcomes.contains(&true) && outcomes.contains(&false), "the limit lies in the range: {outcomes:?}");
}

#[test]
fn malformed_nodes_fail_as_prost_fails() {
    let good = model().encode_to_vec();
    // A node's string that is not UTF-8, a key of tag 0, a wire type that does not exist, a group, a length
    // past the node: spliced into the first node.
    let graph_at = good.iter().position(|&b| b == 0x3a).unwrap(); // ModelProto.graph, LEN
                                                                  // Then the notes: a doc string, and a metadata entry's value, that are not UTF-8; an entry whose key is a
                                                                  // varint, and one whose value runs past it.
    let notes: [&[u8]; 4] = [
        &[0x32, 0x02, 0xff, 0xfe],
        &[0x4a, 0x03, 0x12, 0x01, 0xff],
        &[0x4a, 0x02, 0x08, 0x01],
        &[0x4a, 0x02, 0x12, 0x05],
    ];
    let read: [&[u8]; 5] =
        [&[0x0a, 0x02, 0xff, 0xfe], &[0x00, 0x01], &[0x0e, 0x01], &[0x0b, 0x0c], &[0x0a, 0x7f, 0x61]];
    for bad in read.into_iter().chain(notes) {
        let node = NodeProto { op_type: Some("Relu".into()), ..Default::default() }.encode_to_vec();
        let mut node_bytes = bad.to_vec();
        node_bytes.extend_from_slice(&node);
        let mut graph = vec![0x0a, node_bytes.len() as u8];
        graph.extend_from_slice(&node_bytes);
        let mut bytes = good[..graph_at].to_vec();
        bytes.push(0x3a);
        bytes.push(graph.len() as u8);
        bytes.extend_from_slice(&graph);
        assert!(ModelProto::decode(bytes.as_slice()).is_err(), "{bad:?} is malformed");
        assert_agree(&bytes);
    }
}

/// A node field whose key is written in two bytes where one would do (a varint may be written longer) is not the
/// key byte the fast path matches: it is handed to prost, which merges it into the same node, so each node of
/// every form (names, attributes, doc string, metadata, overload) decodes as prost decodes it, whichever of its
/// fields is written so.
#[test]
fn a_nodes_fields_with_keys_written_long_decode_as_prost_decodes_them() {
    let mut variants = 0;
    for i in 0..12 {
        let node = node(i, i % 4);
        let bytes = node.encode_to_vec();
        let mut at = 0;
        while at < bytes.len() {
            let field = crate::onnx::source::field_at(&bytes[at..], at, 0).unwrap();
            assert!(bytes[at] < 0x80, "a one-byte key");
            let mut long = bytes[..at].to_vec();
            long.extend_from_slice(&[bytes[at] | 0x80, 0x00]);
            long.extend_from_slice(&bytes[at + 1..]);
            let graph = wrap(field::graph::NODE, &long);
            let model = wrap(field::model::GRAPH, &graph);
            assert_agree(&model);
            let mut decoded = ModelProto::default();
            merge_model(&mut decoded, &model[..], true).unwrap();
            assert_eq!(decoded.graph.unwrap().node, std::slice::from_ref(&node), "node {i}, field {}", field.number);
            at = field.range.end;
            variants += 1;
        }
    }
    assert!(variants > 60, "{variants} variants");
}

/// A declaration whose fields, or its type's, shape's, dims' or metadata entries' fields, have a key written in two
/// bytes where one would do: the fast path hands it to prost, so each decodes as prost decodes it, whichever key
/// is written so.
#[test]
fn declarations_with_keys_written_long_decode_as_prost_decodes_them() {
    // The fields read as messages, by their path of field numbers from the declaration.
    let nested: [&[u32]; 5] = [&[2], &[2, 1], &[2, 1, 2], &[2, 1, 2, 1], &[4]];
    let mut variants = 0;
    for i in 0..30 {
        let declaration = declaration(i);
        let bytes = declaration.encode_to_vec();
        for k in 0.. {
            let mut n = k;
            let long = with_long_key(&bytes, &[], &nested, &mut n);
            if n < usize::MAX / 2 {
                break; // fewer keys than `k + 1`
            }
            let model = wrap(field::model::GRAPH, &wrap(field::graph::VALUE_INFO, &long));
            assert_agree(&model);
            let mut decoded = ModelProto::default();
            merge_model(&mut decoded, &model[..], true).unwrap();
            assert_eq!(decoded.graph.unwrap().value_info, std::slice::from_ref(&declaration), "{i}, key {k}");
            variants += 1;
        }
    }
    assert!(variants > 150, "{variants} variants");
}

/// `bytes`, a message of one-byte keys, encoded again with its `n`th key met (depth first, counting down `n`)
/// written in two bytes; the length-delimited fields whose paths `nested` lists are read as messages.
fn with_long_key(bytes: &[u8], path: &[u32], nested: &[&[u32]], n: &mut usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let field = crate::onnx::source::field_at(&bytes[at..], at, 0).unwrap();
        let key = bytes[at];
        assert!(key < 0x80, "a one-byte key");
        if *n == 0 {
            out.extend_from_slice(&[key | 0x80, 0]);
        } else {
            out.push(key);
        }
        *n = n.wrapping_sub(1);
        let inner = [path, &[field.number]].concat();
        if key & 7 == 2 && nested.contains(&inner.as_slice()) {
            let payload = with_long_key(&bytes[field.payload.clone()], &inner, nested, n);
            prost::encoding::encode_varint(payload.len() as u64, &mut out);
            out.extend_from_slice(&payload);
        } else {
            out.extend_from_slice(&bytes[at + 1..field.range.end]);
        }
        at = field.range.end;
    }
    out
}

/// A tensor's packed runs of floats and 32-bit integers (the quantized exports' scales and zero points), well
/// formed, two of them appended, or ending past their last value (a float cut short, a varint cut by the run's
/// end, a run past the tensor): the same tensor as prost's, or the same error.
#[test]
fn a_tensors_packed_runs_decode_as_prost_decodes_them() {
    let runs: [&[u8]; 8] = [
        &[0x22, 8, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0],
        &[0x22, 4, 0, 0, 0x80, 0x3f, 0x22, 4, 0, 0, 0, 0x40],
        &[0x22, 5, 0, 0, 0x80, 0x3f, 1],
        &[0x2a, 3, 0x01, 0xff, 0x7f, 0x2a, 1, 0x05],
        &[0x2a, 11, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02],
        &[0x2a, 2, 0x05, 0x80],
        &[0x2a, 9, 0x05],
        &[0x22, 0, 0x2a, 0],
    ];
    let mut decoded = Vec::new();
    for run in runs {
        let mut initializer = TensorProto { name: Some("t".into()), ..Default::default() }.encode_to_vec();
        initializer.extend_from_slice(run);
        let model = wrap(field::model::GRAPH, &wrap(field::graph::INITIALIZER, &initializer));
        assert_agree(&model);
        decoded.push(ModelProto::decode(model.as_slice()).is_ok());
    }
    assert_eq!(decoded, [true, true, false, true, true, false, false, true]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// A valid model with bytes overwritten, inserted or cut away: both decoders agree, on success and on
    /// failure.
    #[test]
    fn mutated_models_decode_alike(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut bytes = model().encode_to_vec();
        for (at, byte, how) in edits {
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => bytes.truncate(i.max(1)),
            }
        }
        assert_agree(&bytes);
    }

    /// Arbitrary bytes as the payload of a main-graph node, a main-graph initializer and a function's node
    /// (the fast paths' inputs), after a valid node: both decoders agree.
    #[test]
    fn arbitrary_nodes_and_tensors_decode_alike(payload in prop::collection::vec(any::<u8>(), 0..120)) {
        let first = wrap(field::graph::NODE, &node(1, 2).encode_to_vec());
        for (outer, number) in [(field::model::GRAPH, field::graph::NODE), (field::model::GRAPH,
            field::graph::INITIALIZER), (field::model::FUNCTIONS, field::function::NODE)] {
            let mut body = first.clone();
            body.extend(wrap(number, &payload));
            assert_agree(&wrap(outer, &body));
        }
    }

    #[test]
    fn arbitrary_bytes_decode_alike(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        assert_agree(&bytes);
    }
}

#[test]
fn a_model_decodes_with_its_lists_sized_as_they_end_up() {
    // Nodes of 0 to 4 inputs and 0 to 2 outputs: lists longer than what a node holds inline end at their length.
    let names = |n: usize| (0..n).map(|k| format_compact!("x{k}"));
    let node = |i: usize| NodeProto {
        op_type: Some("Relu".into()),
        name: Some(format_compact!("n{i}")),
        input: names(i % 5).collect(),
        output: names(i % 3).collect(),
        ..Default::default()
    };
    let graph = GraphProto { node: (0..1000).map(node).collect(), ..Default::default() };
    let bytes = ModelProto { ir_version: Some(8), graph: Some(graph), ..Default::default() }.encode_to_vec();
    let (f, map) = file_with(&bytes);
    let model = decode_model(f.as_file(), &map).unwrap();
    assert_eq!(model, ModelProto::decode(bytes.as_slice()).unwrap());
    let nodes = model.graph.unwrap().node;
    assert_eq!(nodes.capacity(), 1000);
    for node in &nodes {
        assert!(!node.input.spilled() || node.input.capacity() == node.input.len(), "{:?}", node.input);
        assert!(!node.output.spilled() || node.output.capacity() == node.output.len(), "{:?}", node.output);
    }
    // No graph field: none is made up.
    let bytes = ModelProto { ir_version: Some(8), ..Default::default() }.encode_to_vec();
    let (f, map) = file_with(&bytes);
    assert_eq!(decode_model(f.as_file(), &map).unwrap().graph, None);
}

/// A field's bytes: key and length of a length-delimited field of `number`, then `inner`.
fn wrap(number: u32, inner: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_key(number, WireType::LengthDelimited, &mut out);
    prost::encoding::encode_varint(inner.len() as u64, &mut out);
    out.extend_from_slice(inner);
    out
}

/// Initializers are read in runs (one key byte compared, then the next initializer): a run ends with its graph,
/// though the model's next field has the key of an initializer (`ModelProto.model_version`, number 5, written
/// length-delimited, which prost refuses) or of a node (number 1), and a graph's run ends with the graph's own
/// length even where a later field is an initializer of the graph merged again.
#[test]
fn a_run_of_initializers_ends_with_its_graph_though_the_next_field_has_an_initializers_key() {
    let tensors =
        |from: usize| GraphProto { initializer: (from..from + 3).map(tensor).collect(), ..Default::default() };
    let graph = wrap(field::model::GRAPH, &tensors(0).encode_to_vec());
    for after in [wrap(5, &tensor(9).encode_to_vec()), wrap(1, &tensor(9).encode_to_vec())] {
        let bytes = [graph.clone(), after].concat();
        assert!(ModelProto::decode(bytes.as_slice()).is_err(), "prost refuses a model_version of wire type 2");
        assert_agree(&bytes);
    }
    let twice = [graph.clone(), wrap(field::model::GRAPH, &tensors(3).encode_to_vec())].concat();
    assert_agree(&twice);
    let mut decoded = ModelProto::default();
    merge_model(&mut decoded, &twice[..], true).unwrap();
    assert_eq!(decoded.graph.unwrap().initializer, (0..6).map(tensor).collect::<Vec<_>>());
}

/// A function's nodes are read in runs too; its key (number 7) is also `ModelProto.graph`'s, so a run that went
/// past the function would read the graph after it as a node (this one reads as a node: its node as an input
/// name, its name as an output).
#[test]
fn a_run_of_function_nodes_ends_with_its_function_though_the_graph_after_it_has_a_nodes_key() {
    let function = FunctionProto { name: Some("f".into()), node: vec![node(3, 2), node(4, 1)], ..Default::default() };
    let relu = NodeProto { op_type: Some("Relu".into()), ..Default::default() };
    let graph = GraphProto { node: vec![relu], name: Some("g".into()), ..Default::default() };
    assert!(NodeProto::decode(graph.encode_to_vec().as_slice()).is_ok());
    let bytes =
        [wrap(field::model::FUNCTIONS, &function.encode_to_vec()), wrap(field::model::GRAPH, &graph.encode_to_vec())]
            .concat();
    assert_agree(&bytes);
    let mut decoded = ModelProto::default();
    merge_model(&mut decoded, &bytes[..], true).unwrap();
    assert_eq!((decoded.functions, decoded.graph), (vec![function], Some(graph)));
}

/// A tensor's dims, read as a run into one allocation of their number: prost's values (negative ones are
/// ten-byte varints), more dims than the run holds at once, dims split by another field, packed dims (prost's),
/// and `raw_data` of 200 bytes (a length of two bytes).
#[test]
fn a_tensors_dims_are_prosts_in_one_exact_allocation() {
    let dims: Vec<i64> = vec![3, -1, 0, 1 << 40, 7, 1, 1, 2, 9, -5, 4];
    let base = TensorProto {
        name: Some("t".into()),
        data_type: Some(2),
        raw_data: Some(Bytes::from(vec![5; 200])),
        ..Default::default()
    };
    for run in [1, 4, 8, 9, dims.len()] {
        let graph = GraphProto {
            initializer: vec![TensorProto { dims: dims[..run].to_vec(), ..base.clone() }],
            ..Default::default()
        };
        let bytes = ModelProto { graph: Some(graph), ..Default::default() }.encode_to_vec();
        assert_agree(&bytes);
        let mut decoded = ModelProto::default();
        merge_model(&mut decoded, &bytes[..], true).unwrap();
        let t = &decoded.graph.unwrap().initializer[0];
        assert_eq!((&t.dims[..], t.dims.capacity()), (&dims[..run], run));
    }
    // One tensor's dims in two runs, with its name between them (a tensor's fields may come in any order).
    let mut inner = TensorProto { dims: dims[..3].to_vec(), ..Default::default() }.encode_to_vec();
    inner.extend(TensorProto { name: Some("n".into()), dims: dims[3..].to_vec(), ..base.clone() }.encode_to_vec());
    let bytes = wrap(field::model::GRAPH, &wrap(field::graph::INITIALIZER, &inner));
    assert_agree(&bytes);
    // Packed dims, which writers do not use but prost reads.
    let mut packed = Vec::new();
    prost::encoding::int64::encode_packed(field::tensor::DIMS, &dims, &mut packed);
    let bytes = wrap(field::model::GRAPH, &wrap(field::graph::INITIALIZER, &packed));
    assert_agree(&bytes);
    assert_eq!(ModelProto::decode(bytes.as_slice()).unwrap().graph.unwrap().initializer[0].dims, dims);
}
