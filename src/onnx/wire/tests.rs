//! The wire-level writer's tests: edits applied to small models, read back with prost.

use super::*;
use crate::onnx::pb::{AttributeProto, GraphProto, ModelProto, NodeProto};

fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        input: inputs.iter().map(|&s| s.into()).collect(),
        output: smallvec::smallvec![output.into()],
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
    g.insert_before.insert(0, Encoded::of([&node("Expand", &["b", "s"], "b2")]));
    g.node_edits.insert(0, NodeEdit { inputs: InputEdit::All(vec!["a".into(), "b2".into()]), drop_attributes: vec![] });
    let out = apply(&source, &edit).unwrap().to_vec(&source).unwrap();
    let model = ModelProto::decode(out.as_slice()).unwrap();
    let nodes = &model.graph.as_ref().unwrap().node;
    assert_eq!(nodes.iter().map(|n| n.op_type()).collect::<Vec<_>>(), ["Expand", "Add"]);
    assert_eq!(nodes[1].input.as_slice(), ["a", "b2"]);
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
    edit.graph_mut(&[])
        .node_edits
        .insert(0, NodeEdit { inputs: InputEdit::Kept, drop_attributes: vec!["broadcast".into()] });
    let sub = [GraphStep::Subgraph { node: 0, attribute: 1, graph: 0 }];
    edit.graph_mut(&sub).insert_before.insert(0, Encoded::of([&node("Identity", &["y"], "y2")]));
    let out = ModelProto::decode(apply(&source, &edit).unwrap().to_vec(&source).unwrap().as_slice()).unwrap();
    let NodeProto { attribute: kept, .. } = &out.graph.unwrap().node[0];
    assert_eq!(kept.len(), 1);
    let then = kept[0].g.as_ref().unwrap();
    assert_eq!(then.node.iter().map(|n| n.op_type()).collect::<Vec<_>>(), ["Identity", "Add"]);
}

/// A node's bytes spliced with `edit`, the short way allowed or not: the output's bytes.
fn spliced_node(bytes: &[u8], edit: &NodeEdit, short_way: bool) -> Vec<u8> {
    let source = Source::Memory(bytes);
    let (model, mut out) = (ModelEdit::default(), Pieces::default());
    let at = node::NodeSplice { source: &source, model: &model, no_graph_below: short_way };
    node::node(at, 0..bytes.len(), Some(edit), &|_, _| Vec::new(), &mut out).unwrap();
    out.to_vec(bytes).unwrap()
}

/// Encodes `fields` (number, payload) as length-delimited fields, with a length of `pad` bytes more than it needs
/// (a valid, unusual encoding).
fn encoded(fields: &[(u32, &str)], pad: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for (number, payload) in fields {
        encode_varint(u64::from(number << 3 | 2), &mut v);
        let mut len = Vec::new();
        encode_varint(payload.len() as u64, &mut len);
        for _ in 0..pad {
            *len.last_mut().unwrap() |= 0x80;
            len.push(0);
        }
        v.extend_from_slice(&len);
        v.extend_from_slice(payload.as_bytes());
    }
    v
}

#[test]
fn a_node_with_new_inputs_is_spliced_the_short_way_as_the_general_way_splices_it() {
    use smallvec::smallvec;
    let attribute = AttributeProto { name: Some("axis".into()), i: Some(1), r#type: Some(2), ..Default::default() };
    let written = NodeProto { attribute: vec![attribute], ..node("Add", &["x", "", "b"], "y") }.encode_to_vec();
    let nodes = [
        written,
        // Inputs after the output, an input with a long length, no inputs, nothing at all.
        encoded(&[(2, "y"), (1, "x"), (4, "Add"), (1, "b")], 0),
        encoded(&[(1, "x"), (1, "b"), (2, "y")], 1),
        encoded(&[(2, "y"), (4, "Add")], 0),
        Vec::new(),
    ];
    let edits = [
        InputEdit::All(vec!["x2".into(), "b2".into()]),
        InputEdit::At(smallvec![(0, "x2".into())]),
        InputEdit::At(smallvec![(1, "b2".into()), (2, "z".into()), (7, "past the end".into())]),
        InputEdit::At(smallvec![]),
    ];
    for (n, bytes) in nodes.iter().enumerate() {
        for inputs in &edits {
            let edit = NodeEdit { inputs: inputs.clone(), drop_attributes: Vec::new() };
            let general = spliced_node(bytes, &edit, false);
            assert_eq!(spliced_node(bytes, &edit, true), general, "node {n}, {inputs:?}");
            let decoded = NodeProto::decode(general.as_slice()).unwrap();
            let was = NodeProto::decode(bytes.as_slice()).unwrap();
            let expected: crate::onnx::pb::node::Inputs = match inputs {
                InputEdit::All(all) => all.iter().map(|x| x.into()).collect(),
                InputEdit::At(at) => (was.input.iter().enumerate())
                    .map(|(i, x)| at.iter().find(|(p, _)| *p == i).map_or(x.clone(), |(_, new)| new.as_ref().into()))
                    .collect(),
                InputEdit::Kept => unreachable!(),
            };
            // Every field but the inputs as it was.
            assert_eq!(decoded, NodeProto { input: expected, ..was }, "node {n}, {inputs:?}");
        }
    }
    // The node as an encoder writes it takes the short way (the general way reads its fields one by one).
    let mut out = Pieces::default();
    assert!(node::inputs_only(&nodes[0], 0, &edits[1], &mut out));
    assert!(!node::inputs_only(&nodes[1], 0, &edits[1], &mut Pieces::default()));
}

/// The node at position `i` of [`many_nodes`]: some with attributes (`axis` among them unless `without_axis`), a
/// few large enough that the rest of them after their inputs is copied as a range of the source rather than
/// written anew.
fn numbered_node(i: usize, without_axis: bool) -> NodeProto {
    let n = node("Add", &[&format!("a{i}"), &format!("b{i}")], &format!("c{i}"));
    let text = if i.is_multiple_of(11) { "t".repeat(300) } else { String::new() };
    let mut attributes = Vec::new();
    if i.is_multiple_of(3) {
        if !without_axis {
            attributes.push(AttributeProto {
                name: Some("axis".into()),
                i: Some(1),
                r#type: Some(2),
                ..Default::default()
            });
        }
        attributes.push(AttributeProto {
            name: Some("doc".into()),
            s: Some(text.into_bytes().into()),
            ..Default::default()
        });
    }
    NodeProto { name: Some(format!("n{i}").into()), attribute: attributes, ..n }
}

/// A model of `count` nodes, as prost encodes it.
fn many_nodes(count: usize) -> ModelProto {
    let graph = GraphProto { node: (0..count).map(|i| numbered_node(i, false)).collect(), ..Default::default() };
    ModelProto { ir_version: Some(8), graph: Some(graph), ..Default::default() }
}

#[test]
fn a_graph_spliced_node_by_node_and_in_runs_is_what_prost_encodes_for_the_edited_graph() {
    // Over 256 KiB of nodes, so that runs stop where a view of the source ends; every kind of node edit, nodes
    // removed and new nodes, in a pattern that puts each kind next to each other kind.
    let count = 12_000;
    let model = many_nodes(count);
    let source = model.encode_to_vec();
    assert!(source.len() > 300 << 10);
    let (mut edit, mut expected) = (ModelEdit::default(), model.clone());
    let (g, nodes) = (edit.graph_mut(&[]), &mut expected.graph.as_mut().unwrap().node);
    let long = "x".repeat(200);
    for i in (0..count).rev() {
        let inputs = match i % 7 {
            1 => InputEdit::At(smallvec::smallvec![(1, format!("b{i}_new").into())]),
            2 => InputEdit::All(vec!["x".into(), "y".into(), "z".into()]),
            3 | 4 => InputEdit::At(smallvec::smallvec![(0, long.as_str().into())]),
            _ => InputEdit::Kept,
        };
        let drop_attributes = if i % 7 == 4 { vec!["axis".to_string()] } else { Vec::new() };
        if !drop_attributes.is_empty() {
            nodes[i] = numbered_node(i, true);
        }
        let n = &mut nodes[i];
        match &inputs {
            InputEdit::At(at) => at.iter().for_each(|(p, name)| n.input[*p] = name.as_ref().into()),
            InputEdit::All(all) => n.input = all.iter().map(|s| s.into()).collect(),
            InputEdit::Kept => {}
        }
        if i % 7 != 0 && i % 7 != 5 {
            g.node_edits.insert(i, NodeEdit { inputs, drop_attributes });
        }
        if i % 7 == 5 {
            g.remove_nodes.insert(i);
            nodes.remove(i);
        }
        if i.is_multiple_of(5) {
            let new = node("Expand", &[&format!("a{i}"), "s"], &format!("e{i}"));
            g.insert_before.insert(i, Encoded::of([&new]));
            nodes.insert(i, new);
        }
    }
    let out = apply(&source, &edit).unwrap().to_vec(&source).unwrap();
    assert_eq!(out, expected.encode_to_vec());
}

#[test]
fn the_room_reserved_for_a_splice_holds_its_pieces_in_a_row_apart_and_around_new_nodes() {
    use smallvec::smallvec;
    let count = 3_000;
    let graph = GraphProto {
        node: (0..count).map(|i| node("Add", &[&format!("a{i}"), "b"], &format!("c{i}"))).collect(),
        ..Default::default()
    };
    let source = ModelProto { ir_version: Some(8), graph: Some(graph), ..Default::default() }.encode_to_vec();
    // Which nodes are edited, and which get new nodes before them.
    type Pattern = (&'static str, fn(usize) -> bool, fn(usize) -> bool);
    let patterns: [Pattern; 3] = [
        ("every node", |_| true, |i| i % 10 == 0),
        ("every other node", |i| i % 2 == 0, |_| false),
        ("new nodes between nodes left as they are", |i| i % 3 == 0, |i| i % 3 == 2),
    ];
    for (name, edited, inserted) in patterns {
        let mut edit = ModelEdit::default();
        let g = edit.graph_mut(&[]);
        for i in 0..count {
            if inserted(i) {
                g.insert_before.insert(i, Encoded::of([&node("Expand", &["b", "s"], &format!("e{i}"))]));
            }
            if edited(i) {
                let inputs = InputEdit::At(smallvec![(1, format!("e{i}").into())]);
                g.node_edits.insert(i, NodeEdit { inputs, drop_attributes: Vec::new() });
            }
        }
        let reserved = node_items(&edit.graphs[&Vec::new()]) + 16;
        let pieces = apply(&source, &edit).unwrap();
        assert!(pieces.items.len() <= reserved, "{name}: {} items, room for {reserved}", pieces.items.len());
        assert!(pieces.items.capacity() < 2 * reserved, "{name}: the room was never grown");
    }
    // Every node edited is one run: room for a few items, not two per node.
    let mut edit = ModelEdit::default();
    let g = edit.graph_mut(&[]);
    for i in 0..count {
        g.node_edits.insert(i, NodeEdit { inputs: InputEdit::At(smallvec![(1, "x".into())]), drop_attributes: vec![] });
    }
    assert_eq!(node_items(g), 2);
}
