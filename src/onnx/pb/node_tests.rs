//! Tests of `node.rs`: the compact `NodeProto` against prost's generated one (`reference`), field by field.

use super::*;
use crate::onnx::pb::reference as prosts;
use proptest::prelude::*;
use prost::Message;

/// prost's node with every field the schema declares set, lists of several, names past 24 bytes and not ASCII.
fn every_field() -> prosts::NodeProto {
    let attribute = |name: &str| prosts::AttributeProto {
        name: Some(name.into()),
        r#type: Some(prosts::attribute_proto::AttributeType::Ints as i32),
        ints: vec![1, -2, 3],
        ..Default::default()
    };
    let entry = |k: &str| prosts::StringStringEntryProto { key: Some(k.into()), value: Some("v".into()) };
    let device = prosts::NodeDeviceConfigurationProto {
        configuration_id: Some("c".into()),
        pipeline_stage: Some(2),
        ..Default::default()
    };
    prosts::NodeProto {
        input: vec!["x".into(), String::new(), "an input named past twenty-four bytes".into()],
        output: vec!["y".into(), "z\u{e9}".into()],
        name: Some("n\u{1f600}".into()),
        op_type: Some("MatMulInteger".into()),
        domain: Some("com.example.a.domain.of.more.than.24".into()),
        overload: Some("o".into()),
        attribute: vec![attribute("a"), attribute("b")],
        doc_string: Some("doc".into()),
        metadata_props: vec![entry("k1"), entry("k2")],
        device_configurations: vec![device],
    }
}

/// What prost's node and the compact one make of `bytes`: the same encoding, or the same error in words.
fn assert_agree(bytes: &[u8]) {
    let prost = prosts::NodeProto::decode(bytes).map(|n| n.encode_to_vec()).map_err(|e| e.to_string());
    let ours = NodeProto::decode(bytes).map_err(|e| e.to_string());
    if let Ok(node) = &ours {
        assert_eq!(node.encoded_len(), node.encode_to_vec().len());
    }
    assert_eq!(ours.map(|n| n.encode_to_vec()), prost, "{bytes:?}");
}

#[test]
fn a_usual_node_takes_192_bytes_and_holds_its_names_inline() {
    assert_eq!(std::mem::size_of::<NodeProto>(), 192);
    let usual = prosts::NodeProto {
        input: vec!["v499999".into(), "B".into()],
        output: vec!["v500000".into()],
        name: Some("n500000".into()),
        op_type: Some("Add".into()),
        ..Default::default()
    };
    let node = NodeProto::decode(usual.encode_to_vec().as_slice()).unwrap();
    assert!(!node.input.spilled() && !node.output.spilled() && node.rare.is_none());
    let names = node.input.iter().chain(&node.output).chain(&node.name).chain(&node.op_type);
    assert!(names.clone().all(|n| !n.is_heap_allocated()), "{node:?}");
    assert_eq!(names.map(CompactString::as_str).collect::<Vec<_>>(), ["v499999", "B", "v500000", "n500000", "Add"]);
}

#[test]
fn every_field_decodes_and_encodes_as_prosts() {
    let reference = every_field();
    let bytes = reference.encode_to_vec();
    assert_agree(&bytes);
    let node = NodeProto::decode(bytes.as_slice()).unwrap();
    assert_eq!(node.input.iter().map(CompactString::as_str).collect::<Vec<_>>(), reference.input);
    assert_eq!(node.output.iter().map(CompactString::as_str).collect::<Vec<_>>(), reference.output);
    assert_eq!(
        (node.name(), node.op_type(), node.domain()),
        (reference.name(), reference.op_type(), reference.domain())
    );
    assert_eq!((node.overload(), node.doc_string()), ("o", "doc"));
    // The nested messages are prost's own types on both sides: compared through their encodings.
    fn encoded<M: Message>(list: &[M]) -> Vec<Vec<u8>> {
        list.iter().map(Message::encode_to_vec).collect()
    }
    assert_eq!(encoded(&node.attribute), encoded(&reference.attribute));
    assert_eq!(encoded(node.metadata_props()), encoded(&reference.metadata_props));
    assert_eq!(encoded(node.device_configurations()), encoded(&reference.device_configurations));
}

/// Fields in any order, a list split by other fields, an optional field twice (the last wins), a message field
/// twice (both kept), unknown fields (dropped, as prost drops them), and a node merged into a node.
#[test]
fn fields_out_of_order_and_unknown_fields_decode_as_prosts() {
    let fields = every_field_apart();
    let mut reversed: Vec<u8> = fields.iter().rev().flatten().copied().collect();
    assert_agree(&reversed);
    let unknown_varint = [0x98, 0x06, 0x2a]; // field 99, varint 42
    let unknown_len = [0xa2, 0x06, 0x02, 0x61, 0x62]; // field 100, "ab"
    reversed.extend_from_slice(&unknown_varint);
    reversed.extend(fields.iter().flatten());
    reversed.extend_from_slice(&unknown_len);
    assert_agree(&reversed);
    let mut node = NodeProto::decode(every_field().encode_to_vec().as_slice()).unwrap();
    node.merge(reversed.as_slice()).unwrap();
    let mut prost = every_field();
    prost.merge(reversed.as_slice()).unwrap();
    assert_eq!(node.encode_to_vec(), prost.encode_to_vec());
    node.clear();
    assert_eq!(node, NodeProto::default());
}

#[test]
fn an_empty_box_of_rare_fields_equals_none() {
    let mut boxed = NodeProto::default();
    boxed.rare_mut();
    assert!(boxed.rare.is_some());
    assert_eq!(boxed, NodeProto::default());
    assert!(boxed.encode_to_vec().is_empty());
    boxed.rare_mut().overload = Some(String::new());
    assert_ne!(boxed, NodeProto::default(), "an empty overload is set");
}

/// Each field of [`every_field`] encoded apart (an element of a list a field of its own), in number order.
fn every_field_apart() -> Vec<Vec<u8>> {
    let n = every_field();
    let one = |node: prosts::NodeProto| node.encode_to_vec();
    let none = prosts::NodeProto::default;
    let mut out: Vec<Vec<u8>> = Vec::new();
    out.extend(n.input.iter().map(|x| one(prosts::NodeProto { input: vec![x.clone()], ..none() })));
    out.extend(n.output.iter().map(|x| one(prosts::NodeProto { output: vec![x.clone()], ..none() })));
    out.push(one(prosts::NodeProto { name: n.name.clone(), ..none() }));
    out.push(one(prosts::NodeProto { op_type: n.op_type.clone(), ..none() }));
    out.extend(n.attribute.iter().map(|x| one(prosts::NodeProto { attribute: vec![x.clone()], ..none() })));
    out.push(one(prosts::NodeProto { doc_string: n.doc_string.clone(), ..none() }));
    out.push(one(prosts::NodeProto { domain: n.domain.clone(), ..none() }));
    out.push(one(prosts::NodeProto { overload: n.overload.clone(), ..none() }));
    out.extend(n.metadata_props.iter().map(|x| one(prosts::NodeProto { metadata_props: vec![x.clone()], ..none() })));
    let devices = n.device_configurations.iter();
    out.extend(devices.map(|x| one(prosts::NodeProto { device_configurations: vec![x.clone()], ..none() })));
    assert_eq!(out.concat(), n.encode_to_vec(), "prost writes the fields in number order");
    out
}

/// The field of number `tag` (an index into the schema's ten numbers and two unknown ones) holding `text`, as a
/// string, as a message with `text` for a name, or with the wrong wire type.
fn field_bytes(tag: usize, text: &str, wrong_type: bool) -> Vec<u8> {
    let number = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 99, 100][tag];
    let mut out = Vec::new();
    if wrong_type {
        prost::encoding::encode_key(number, prost::encoding::WireType::Varint, &mut out);
        out.push(1);
        return out;
    }
    let payload = match number {
        5 => prosts::AttributeProto { name: Some(text.into()), ..Default::default() }.encode_to_vec(),
        9 => prosts::StringStringEntryProto { key: Some(text.into()), value: None }.encode_to_vec(),
        10 => prosts::NodeDeviceConfigurationProto { configuration_id: Some(text.into()), ..Default::default() }
            .encode_to_vec(),
        _ => text.as_bytes().to_vec(),
    };
    prost::encoding::bytes::encode(number, &payload, &mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Nodes of arbitrary fields in arbitrary order, some of the wrong wire type: the same encoding or error.
    #[test]
    fn nodes_of_arbitrary_fields_decode_as_prosts(
        fields in prop::collection::vec((0usize..12, ".{0,30}", prop::bool::weighted(0.05)), 0..16),
    ) {
        let bytes: Vec<u8> = fields.iter().flat_map(|(tag, text, wrong)| field_bytes(*tag, text, *wrong)).collect();
        assert_agree(&bytes);
    }

    /// Arbitrary bytes (mostly malformed): the same error, or the same node.
    #[test]
    fn arbitrary_bytes_decode_as_prosts(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        assert_agree(&bytes);
    }

    /// A valid node with bytes overwritten: non-UTF-8 names, cut fields, changed keys.
    #[test]
    fn mutated_nodes_decode_as_prosts(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let mut bytes = every_field().encode_to_vec();
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        assert_agree(&bytes);
    }
}
