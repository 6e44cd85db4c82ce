//! The wire-level writer's tests: edits applied to small models, read back with prost.

use super::*;
use crate::onnx::pb::{AttributeProto, GraphProto, ModelProto, NodeProto};

fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        ..Default::default()
    }
}

/// A model whose graph carries a field this schema does not know (number 99), as a newer exporter might write.
fn model_with_unknown_field() -> Vec<u8> {
    let graph = GraphProto { node: vec![node("Add", &["a", "b"], "c")], name: Some("g".into()), ..Default::default() };
    let mut graph_bytes = graph.encode_to_vec();
    encode_varint(99 << 3, &mut graph_bytes); // field 99, varint
    encode_varint(42, &mut graph_bytes);
    let mut model = ModelProto { ir_version: Some(8), ..Default::default() }.encode_to_vec();
    encode_varint(u64::from(MODEL_GRAPH << 3 | 2), &mut model);
    encode_varint(graph_bytes.len() as u64, &mut model);
    model.extend_from_slice(&graph_bytes);
    model
}

#[test]
fn an_empty_edit_reproduces_the_input_byte_for_byte() {
    let source = model_with_unknown_field();
    assert_eq!(apply(&source, &ModelEdit::default()).unwrap().to_vec(&source).unwrap(), source);
}

#[test]
fn an_edit_keeps_unknown_fields_and_places_new_nodes_before_their_consumer() {
    let source = model_with_unknown_field();
    let mut edit = ModelEdit::default();
    let g = edit.graph_mut(&[]);
    g.insert_before.insert(0, vec![node("Expand", &["b", "s"], "b2")]);
    g.node_edits.insert(0, NodeEdit { inputs: Some(vec!["a".into(), "b2".into()]), drop_attributes: vec![] });
    let out = apply(&source, &edit).unwrap().to_vec(&source).unwrap();
    let model = ModelProto::decode(out.as_slice()).unwrap();
    let nodes = &model.graph.as_ref().unwrap().node;
    assert_eq!(nodes.iter().map(|n| n.op_type()).collect::<Vec<_>>(), ["Expand", "Add"]);
    assert_eq!(nodes[1].input, ["a", "b2"]);
    let mut unknown = Vec::new();
    encode_varint(99 << 3, &mut unknown);
    encode_varint(42, &mut unknown);
    assert!(out.windows(unknown.len()).any(|w| w == unknown), "the unknown field survives");
}

#[test]
fn a_declaration_replaced_by_position_leaves_its_neighbours_byte_for_byte() {
    use crate::onnx::pb::ValueInfoProto;
    let named = |n: &str| ValueInfoProto { name: Some(n.into()), ..Default::default() };
    let graph = GraphProto {
        node: vec![node("Add", &["a", "b"], "c")],
        output: vec![named("c"), named("d")],
        value_info: vec![named("e")],
        ..Default::default()
    };
    let source = ModelProto { graph: Some(graph), ..Default::default() }.encode_to_vec();
    let mut edit = ModelEdit::default();
    let doc = ValueInfoProto { doc_string: Some("new".into()), ..named("d") };
    edit.graph_mut(&[]).declaration_edits.insert((field::graph::OUTPUT, 1), doc.clone());
    let out = ModelProto::decode(apply(&source, &edit).unwrap().to_vec(&source).unwrap().as_slice()).unwrap();
    let g = out.graph.unwrap();
    assert_eq!(g.output, [named("c"), doc]);
    assert_eq!(g.value_info, [named("e")]);
}

#[test]
fn dropped_attributes_and_subgraph_edits_reach_nested_graphs() {
    let inner = GraphProto { node: vec![node("Add", &["x", "y"], "z")], ..Default::default() };
    let branch =
        AttributeProto { name: Some("then_branch".into()), g: Some(inner), r#type: Some(5), ..Default::default() };
    let legacy = AttributeProto { name: Some("broadcast".into()), i: Some(1), r#type: Some(2), ..Default::default() };
    // Attributes set and read whole (this file is test code of its own; the layers test reads attributes only in
    // `#[cfg(test)]` items and attr.rs).
    let outer = NodeProto { attribute: vec![legacy, branch], ..node("If", &["cond"], "out") };
    let model =
        ModelProto { graph: Some(GraphProto { node: vec![outer], ..Default::default() }), ..Default::default() };
    let source = model.encode_to_vec();
    let mut edit = ModelEdit::default();
    edit.graph_mut(&[]).node_edits.insert(0, NodeEdit { inputs: None, drop_attributes: vec!["broadcast".into()] });
    let sub = [GraphStep::Subgraph { node: 0, attribute: 1, graph: 0 }];
    edit.graph_mut(&sub).insert_before.insert(0, vec![node("Identity", &["y"], "y2")]);
    let out = ModelProto::decode(apply(&source, &edit).unwrap().to_vec(&source).unwrap().as_slice()).unwrap();
    let NodeProto { attribute: kept, .. } = &out.graph.unwrap().node[0];
    assert_eq!(kept.len(), 1);
    let then = kept[0].g.as_ref().unwrap();
    assert_eq!(then.node.iter().map(|n| n.op_type()).collect::<Vec<_>>(), ["Identity", "Add"]);
}
