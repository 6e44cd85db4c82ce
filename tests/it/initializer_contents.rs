//! The floating-point contents of an initializer are read only when a node that may ask for them reads it
//! (`src/analysis/scope.rs`, `Scope::set_lazy`): a broadcasting node of the ONNX domain reads shapes, types and
//! integer contents only, and most initializers are weights only such nodes read. Each test has a node that does
//! ask (Resize's scales), reached in another way, and checks what it made of them in a later site's input shape:
//! unread scales leave Resize's output unknown.

use onnx_bcast::analysis::{analyze_model_with, Analysis, Options};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::pb::{
    attribute_proto::AttributeType, tensor_proto::DataType, AttributeProto, FunctionProto, GraphProto, ModelProto,
    NodeProto, OperatorSetIdProto, TensorProto, ValueInfoProto,
};
use prost::Message;

use crate::common::{float_input, named_node as node};

/// Resize's scales, doubling the last two axes.
fn scales(name: &str) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: vec![4],
        data_type: Some(DataType::Float as i32),
        float_data: vec![1.0, 1.0, 2.0, 2.0],
        ..Default::default()
    }
}

fn graph(nodes: Vec<NodeProto>, inputs: Vec<ValueInfoProto>, initializer: Vec<TensorProto>, out: &str) -> GraphProto {
    GraphProto {
        name: Some("g".into()),
        node: nodes,
        input: inputs,
        initializer,
        output: vec![ValueInfoProto { name: Some(out.into()), ..Default::default() }],
        ..Default::default()
    }
}

fn model(graph: GraphProto, functions: Vec<FunctionProto>) -> ModelProto {
    let mut opset_import = vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }];
    if !functions.is_empty() {
        opset_import.push(OperatorSetIdProto { domain: Some("local".into()), version: Some(1) });
    }
    ModelProto { ir_version: Some(8), opset_import, graph: Some(graph), functions, ..Default::default() }
}

/// Analysed as `check` does (values dropped after their last reader, no facts recorded) and as `shapes` does;
/// both must give the site at `at` these input shapes.
fn site_shapes(m: &ModelProto, at: &str) -> Vec<String> {
    let loaded = Model::from_bytes("contents.onnx", m.encode_to_vec().into()).expect("the model decodes");
    let shapes = |a: &Analysis| {
        let site = a.sites.iter().find(|s| s.node == at).unwrap_or_else(|| panic!("no site at {at}"));
        site.inputs.iter().map(|i| format!("{} {}", i.name, i.shape)).collect::<Vec<_>>()
    };
    let checked = shapes(&analyze_model_with(&loaded, Options { value_facts: false }));
    assert_eq!(checked, shapes(&analyze_model_with(&loaded, Options { value_facts: true })));
    checked
}

#[test]
fn a_float_initializer_a_broadcasting_node_reads_first_still_gives_its_contents_to_a_resize_after_it() {
    let g = graph(
        vec![
            node("Mul", "square", &["scales", "scales"], "squared"),
            node("Resize", "up", &["x", "", "scales"], "big"),
            node("Add", "after", &["big", "y"], "out"),
        ],
        vec![float_input("x", &[1, 1, 2, 3]), float_input("y", &[1, 1, 4, 6])],
        vec![scales("scales")],
        "out",
    );
    assert_eq!(site_shapes(&model(g, vec![]), "after"), ["big [1, 1, 4, 6]", "y [1, 1, 4, 6]"]);
}

#[test]
fn a_subgraph_reads_the_float_contents_of_an_initializer_of_the_graph_around_it() {
    let then = graph(
        vec![node("Resize", "inner_up", &["x", "", "scales"], "big"), node("Add", "inner", &["big", "y"], "t")],
        vec![],
        vec![],
        "t",
    );
    let other = graph(vec![node("Identity", "pass", &["y"], "e")], vec![], vec![], "e");
    let branch = |attr: &str, g: GraphProto| AttributeProto {
        name: Some(attr.into()),
        r#type: Some(AttributeType::Graph as i32),
        g: Some(g),
        ..Default::default()
    };
    let if_node = NodeProto {
        attribute: vec![branch("then_branch", then), branch("else_branch", other)],
        ..node("If", "choose", &["c"], "out")
    };
    let mut cond = float_input("c", &[]);
    if let Some(t) = cond.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        t.elem_type = Some(DataType::Bool as i32);
    }
    let g = graph(
        vec![node("Mul", "square", &["scales", "scales"], "squared"), if_node],
        vec![cond, float_input("x", &[1, 1, 2, 3]), float_input("y", &[1, 1, 4, 6])],
        vec![scales("scales")],
        "out",
    );
    assert_eq!(site_shapes(&model(g, vec![]), "inner"), ["big [1, 1, 4, 6]", "y [1, 1, 4, 6]"]);
}

#[test]
fn a_function_called_with_a_float_initializer_reads_its_contents() {
    let f = FunctionProto {
        name: Some("Up".into()),
        domain: Some("local".into()),
        input: vec!["a".into(), "s".into()],
        output: vec!["b".into()],
        node: vec![node("Resize", "resize", &["a", "", "s"], "b")],
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        ..Default::default()
    };
    let call = NodeProto { domain: Some("local".into()), ..node("Up", "call", &["x", "scales"], "big") };
    let g = graph(
        vec![node("Mul", "square", &["scales", "scales"], "squared"), call, node("Add", "after", &["big", "y"], "out")],
        vec![float_input("x", &[1, 1, 2, 3]), float_input("y", &[1, 1, 4, 6])],
        vec![scales("scales")],
        "out",
    );
    assert_eq!(site_shapes(&model(g, vec![f]), "after"), ["big [1, 1, 4, 6]", "y [1, 1, 4, 6]"]);
}

#[test]
fn the_recorded_facts_of_a_float_initializer_hold_its_contents_though_only_a_broadcast_read_it() {
    let g = graph(
        vec![node("Mul", "square", &["scales", "x"], "out")],
        vec![float_input("x", &[4])],
        vec![scales("scales")],
        "out",
    );
    let loaded = Model::from_bytes("contents.onnx", model(g, vec![]).encode_to_vec().into()).expect("decodes");
    let a = analyze_model_with(&loaded, Options { value_facts: true });
    let main = a.graphs.iter().find(|g| g.path == "main").expect("the main graph's facts");
    let (_, facts) = main.values.iter().find(|(n, _)| n == "scales").expect("the initializer's facts");
    assert_eq!(facts.floats.as_deref(), Some(&[1.0, 1.0, 2.0, 2.0][..]));
}
