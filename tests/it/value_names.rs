//! Which value a name stands for where a model defines it more than once: a node output named like an initializer,
//! a name two nodes make, a node reading its own output, a subgraph reading (or hiding) an outer value, a function
//! reading its own inputs. The walk resolves names to numbered values once (`src/analysis/scope.rs`); each test
//! gives the candidate values different shapes, so that a read of the wrong one shows in a site's input shapes.
//! Every model is analysed twice: keeping every value's facts (`shapes`) and dropping each after its last reader
//! (`check`), which walk the body differently.

use onnx_bcast::analysis::{analyze_model_with, Analysis, Options};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::pb::{
    attribute_proto::AttributeType, tensor_proto::DataType, AttributeProto, FunctionProto, GraphProto, ModelProto,
    NodeProto, OperatorSetIdProto, TensorProto, ValueInfoProto,
};
use prost::Message;

use crate::common::{float_input, named_node as node};

fn initializer(name: &str, dims: &[i64]) -> TensorProto {
    let len = dims.iter().product::<i64>() as usize;
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(DataType::Float as i32),
        float_data: vec![1.0; len],
        ..Default::default()
    }
}

fn bool_input(name: &str) -> ValueInfoProto {
    let mut v = float_input(name, &[]);
    if let Some(t) = v.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        t.elem_type = Some(DataType::Bool as i32);
    }
    v
}

fn graph(nodes: Vec<NodeProto>, inputs: Vec<ValueInfoProto>, outputs: &[&str]) -> GraphProto {
    GraphProto {
        name: Some("g".into()),
        node: nodes,
        input: inputs,
        output: outputs.iter().map(|o| ValueInfoProto { name: Some(o.to_string()), ..Default::default() }).collect(),
        ..Default::default()
    }
}

/// An If node on `cond` whose branches are `then` and a branch that returns `then`'s outputs' first input.
fn if_node(name: &str, cond: &str, then: GraphProto, output: &str) -> NodeProto {
    let first_read = then.node[0].input[0].clone();
    let out = then.output[0].name().to_string();
    let other = graph(vec![node("Identity", &format!("{name}_else"), &[&first_read], &out)], vec![], &[&out]);
    let branch = |attr: &str, g: GraphProto| AttributeProto {
        name: Some(attr.into()),
        r#type: Some(AttributeType::Graph as i32),
        g: Some(g),
        ..Default::default()
    };
    NodeProto {
        attribute: vec![branch("then_branch", then), branch("else_branch", other)],
        ..node("If", name, &[cond], output)
    }
}

fn model(graph: GraphProto, functions: Vec<FunctionProto>) -> ModelProto {
    let mut opset_import = vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }];
    if !functions.is_empty() {
        opset_import.push(OperatorSetIdProto { domain: Some("local".into()), version: Some(1) });
    }
    ModelProto { ir_version: Some(8), opset_import, graph: Some(graph), functions, ..Default::default() }
}

/// The model analysed as `shapes` does (every value's facts kept) and as `check` does (each value dropped after its
/// last reader): the sites of both must agree; the first is returned.
fn analyze(m: &ModelProto) -> Analysis {
    let loaded = Model::from_bytes("value_names.onnx", m.encode_to_vec().into()).expect("the model decodes");
    let kept = analyze_model_with(&loaded, Options { value_facts: true });
    let dropped = analyze_model_with(&loaded, Options { value_facts: false });
    let shapes = |a: &Analysis| a.sites.iter().map(|s| (s.node.to_string(), inputs(s))).collect::<Vec<_>>();
    assert_eq!(shapes(&kept), shapes(&dropped), "the two walks read different values");
    kept
}

fn inputs(site: &onnx_bcast::analysis::Site<'_>) -> Vec<String> {
    site.inputs.iter().map(|i| format!("{} {}", i.name, i.shape)).collect()
}

/// The input names and shapes of the site at node `name`.
fn site(a: &Analysis, name: &str) -> Vec<String> {
    let s = a.sites.iter().find(|s| s.node == name).unwrap_or_else(|| panic!("no site at {name}"));
    inputs(s)
}

/// The main graph's recorded values, in order, with their shapes.
fn recorded(a: &Analysis) -> Vec<String> {
    let main = a.graphs.iter().find(|g| g.path == "main").expect("the main graph's facts");
    main.values.iter().map(|(n, f)| format!("{n} {}", f.shape)).collect()
}

fn codes(a: &Analysis) -> Vec<&'static str> {
    a.notes.iter().map(|n| n.code.as_str()).collect()
}

#[test]
fn a_node_output_named_like_an_initializer_is_what_every_node_after_it_reads() {
    // The reader comes first in the file; it reads the node's x, so it is walked after the node.
    let g = GraphProto {
        initializer: vec![initializer("x", &[3])],
        ..graph(
            vec![node("Add", "reader", &["x", "y"], "r"), node("Relu", "maker", &["y"], "x")],
            vec![float_input("y", &[2, 5])],
            &["r"],
        )
    };
    let a = analyze(&model(g, vec![]));
    assert_eq!(site(&a, "reader"), ["x [2, 5]", "y [2, 5]"]);
    assert_eq!(codes(&a), ["duplicate-value"]);
    // The name is recorded once, where the initializer defined it, with the node's facts.
    assert_eq!(recorded(&a), ["y [2, 5]", "x [2, 5]", "r [2, 5]"]);
}

#[test]
fn a_subgraph_walked_before_the_node_shadowing_an_initializer_reads_the_initializer_and_one_after_it_the_node() {
    let reads_x = |name: &str| {
        graph(vec![node("Add", name, &["x", "x"], &format!("{name}_out"))], vec![], &[&format!("{name}_out")])
    };
    let g = GraphProto {
        initializer: vec![initializer("x", &[3])],
        ..graph(
            vec![
                if_node("before", "c", reads_x("inner_before"), "b1"),
                node("Relu", "maker", &["y"], "x"),
                if_node("after", "c", reads_x("inner_after"), "b2"),
            ],
            vec![bool_input("c"), float_input("y", &[2, 5])],
            &["b1", "b2"],
        )
    };
    let a = analyze(&model(g, vec![]));
    assert_eq!(site(&a, "inner_before"), ["x [3]", "x [3]"]);
    assert_eq!(site(&a, "inner_after"), ["x [2, 5]", "x [2, 5]"]);
}

#[test]
fn a_name_two_nodes_make_is_read_as_the_definition_walked_last() {
    // The file makes x twice, the first time from a value made further down: the walk meets the second definition
    // first (it needs nothing), then `later`, then the first definition, then the reader, which reads that one.
    let g = graph(
        vec![
            node("Identity", "first_x", &["later"], "x"),
            node("Identity", "second_x", &["b"], "x"),
            node("Relu", "later_maker", &["a"], "later"),
            node("Add", "reader", &["x", "later"], "r"),
        ],
        vec![float_input("a", &[4]), float_input("b", &[6])],
        &["r", "x"],
    );
    let a = analyze(&model(g, vec![]));
    assert_eq!(site(&a, "reader"), ["x [4]", "later [4]"]);
    assert_eq!(codes(&a), ["duplicate-value"]);
    assert_eq!(recorded(&a), ["a [4]", "b [6]", "x [4]", "later [4]", "r [4]"]);
}

#[test]
fn a_node_reading_its_own_output_named_like_an_input_reads_the_input() {
    let g = graph(
        vec![node("Add", "loop", &["x", "w"], "x")],
        vec![float_input("x", &[3]), float_input("w", &[1])],
        &["x"],
    );
    let a = analyze(&model(g, vec![]));
    assert_eq!(site(&a, "loop"), ["x [3]", "w [1]"]);
    assert_eq!(codes(&a), ["duplicate-value", "graph-cycle"]);
}

#[test]
fn a_node_reading_a_value_only_a_later_node_of_a_cycle_makes_reads_nothing_and_is_not_told_it_is_undefined() {
    let g = graph(
        vec![node("Add", "one", &["two_out", "w"], "one_out"), node("Add", "two", &["one_out", "w"], "two_out")],
        vec![float_input("w", &[2])],
        &["two_out"],
    );
    let a = analyze(&model(g, vec![]));
    assert_eq!(site(&a, "one"), ["two_out [unknown rank]", "w [2]"]);
    assert_eq!(codes(&a), ["graph-cycle"]);
}

#[test]
fn a_subgraph_value_named_like_an_outer_value_hides_it_inside_the_subgraph_only() {
    let then = graph(
        vec![node("Relu", "hider", &["u"], "t"), node("Add", "inner", &["t", "t"], "inner_out")],
        vec![],
        &["inner_out"],
    );
    let g = graph(
        vec![
            node("Relu", "t_maker", &["v"], "t"),
            if_node("branch", "c", then, "b"),
            node("Add", "outer", &["t", "t"], "o"),
        ],
        vec![bool_input("c"), float_input("u", &[7]), float_input("v", &[2])],
        &["b", "o"],
    );
    let a = analyze(&model(g, vec![]));
    assert_eq!(site(&a, "inner"), ["t [7]", "t [7]"]);
    assert_eq!(site(&a, "outer"), ["t [2]", "t [2]"]);
}

#[test]
fn a_function_body_reads_its_own_inputs_and_values_not_the_callers_of_the_same_names() {
    let f = FunctionProto {
        name: Some("F".into()),
        domain: Some("local".into()),
        input: vec!["a".into()],
        output: vec!["r".into()],
        node: vec![node("Relu", "f_make", &["a"], "made"), node("Add", "f_add", &["a", "made"], "r")],
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        ..Default::default()
    };
    let call = NodeProto { domain: Some("local".into()), ..node("F", "call", &["b"], "out") };
    let g = graph(
        vec![node("Relu", "made_outside", &["a"], "made"), call, node("Add", "after", &["out", "made"], "o")],
        vec![float_input("a", &[5]), float_input("b", &[3])],
        &["o"],
    );
    let a = analyze(&model(g, vec![f]));
    let in_f = a.sites.iter().find(|s| s.functions.iter().any(|f| f.node == "f_add")).expect("the function's site");
    assert_eq!(inputs(in_f), ["a [3]", "made [3]"]);
    assert_eq!(site(&a, "after"), ["out [3]", "made [5]"]);
}

/// The declarations of initializers (here `value_info` entries) are compared with the tensors in the order the
/// initializers are defined, both where the graph declares fewer values than it has inputs and initializers (each
/// declaration is then looked up among them) and where it declares more (each of them among the declarations).
#[test]
fn declarations_of_initializers_are_compared_in_definition_order_whether_declarations_or_initializers_are_more() {
    let misdeclared = [9, 2, 7, 0, 11, 4];
    let mut g = graph(vec![node("Add", "add", &["x", "w_0"], "y")], vec![float_input("x", &[2])], &["y"]);
    g.initializer = (0..12).map(|k| initializer(&format!("w_{k}"), &[2])).collect();
    g.value_info = misdeclared.iter().map(|k| float_input(&format!("w_{k}"), &[3])).collect();
    let compared = |a: &Analysis| -> Vec<String> {
        let named = a.notes.iter().map(|n| n.message.plain().into_owned());
        named.filter_map(|m| Some(m.split('\'').nth(1)?.to_string())).filter(|n| n.starts_with("w_")).collect()
    };
    let in_order: Vec<String> = [0, 2, 4, 7, 9, 11].iter().map(|k| format!("w_{k}")).collect();
    let few = analyze(&model(g.clone(), vec![]));
    assert_eq!(compared(&few), in_order, "{:?}", few.notes);
    // More declarations than inputs and initializers: a chain of nodes whose outputs are all declared.
    let mut many = g;
    for k in 0..20 {
        let (from, to) = (if k == 0 { "y".to_string() } else { format!("c_{}", k - 1) }, format!("c_{k}"));
        many.node.push(node("Identity", &format!("id_{k}"), &[&from], &to));
        many.value_info.push(float_input(&to, &[2]));
    }
    many.output[0].name = Some("c_19".into());
    let more = analyze(&model(many, vec![]));
    assert_eq!(compared(&more), in_order, "{:?}", more.notes);
}
