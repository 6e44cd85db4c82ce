//! A body whose values are dropped after their last reader (`check`, `expand`) is walked as its values flow, in
//! file order, with tables as large as the graph is wide (`src/analysis/flow.rs`); a body whose facts are all kept
//! (`shapes`, `infer`) is walked by numbers. Both walks must find the same sites and notes, whatever the body: a
//! value read again long after the node that made it, nodes out of file order, a name made twice, an undefined
//! input, subgraphs reading their enclosing graph's values.

use onnx_bcast::analysis::{analyze_model_with, Analysis, Options};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::pb::{attribute_proto::AttributeType, AttributeProto, GraphProto, NodeProto};

use crate::common::{fixture_models, float_input, named_node, opset17_model};

/// What an analysis found, as text: every site and note.
fn findings(analysis: &Analysis) -> (Vec<String>, Vec<String>) {
    let sites = analysis.sites.iter().map(|s| format!("{s:?}")).collect();
    let notes = analysis
        .notes
        .iter()
        .map(|n| format!("{:?} {} {:?} {:?} {}", n.code, n.graph, n.node, n.op, n.message))
        .collect();
    (sites, notes)
}

/// The findings of the walk as values flow (facts dropped) and of the walk by numbers (facts kept), which must
/// agree; the first of them.
fn both_walks(model: &Model, what: &str) -> (Vec<String>, Vec<String>) {
    let flowing = findings(&analyze_model_with(model, Options { value_facts: false }));
    let numbered = findings(&analyze_model_with(model, Options { value_facts: true }));
    assert_eq!(flowing, numbered, "{what}: the walk as values flow finds what the walk by numbers finds");
    flowing
}

fn model(nodes: Vec<NodeProto>, inputs: &[(&str, &[i64])], outputs: &[&str]) -> Model {
    let graph = GraphProto {
        name: Some("g".into()),
        node: nodes,
        input: inputs.iter().map(|(name, dims)| float_input(name, dims)).collect(),
        output: outputs
            .iter()
            .map(|name| float_input(name, &[]))
            .map(|mut vi| {
                vi.r#type = None;
                vi
            })
            .collect(),
        ..Default::default()
    };
    opset17_model("walk.onnx", graph)
}

const INPUTS: &[(&str, &[i64])] = &[("x", &[2, 3]), ("b", &[3]), ("c", &[4, 1, 1])];

#[test]
fn every_fixture_has_the_same_sites_and_notes_whether_its_values_flow_or_are_numbered() {
    for (path, model) in fixture_models() {
        both_walks(&model, &path.display().to_string());
    }
}

#[test]
fn a_value_read_again_long_after_the_node_that_made_it_is_still_there() {
    // `a` is read by the next node and again three nodes later; `e` by nobody. Dropped too early, `a` would be
    // undefined at its last reader, whose site would then not be [2, 3] against [2, 3].
    let nodes = vec![
        named_node("Add", "n0", &["x", "b"], "a"),
        named_node("Add", "n1", &["a", "b"], "d"),
        named_node("Relu", "n2", &["x"], "e"),
        named_node("Add", "n3", &["d", "c"], "f"),
        named_node("Add", "n4", &["a", "d"], "y"),
    ];
    let (sites, notes) = both_walks(&model(nodes, INPUTS, &["y", "f"]), "read again");
    assert!(notes.is_empty(), "no value is undefined: {notes:?}");
    assert_eq!(sites.len(), 4);
    assert!(sites[3].contains("Known(2), Known(3)") && !sites[3].contains("Unknown"), "{}", sites[3]);
}

#[test]
fn nodes_out_of_file_order_are_walked_producers_first() {
    let nodes = vec![named_node("Add", "n0", &["a", "c"], "y"), named_node("Add", "n1", &["x", "b"], "a")];
    let (sites, notes) = both_walks(&model(nodes, INPUTS, &["y"]), "out of order");
    assert!(notes.is_empty(), "{notes:?}");
    assert!(sites[1].contains("\"n0\"") && sites[1].contains("Known(4), Known(2), Known(3)"), "{}", sites[1]);
}

#[test]
fn values_found_by_number_each_find_their_own_when_a_number_is_used_again() {
    // `a`, then `cc`, are each read by a node other than the next, `bb` in between: `a` and `cc` (and the output
    // `y`) take one number in turn, `bb` another. Were a number to lead to another value's slot, the last site
    // would read `bb` ([4, 1, 3]) or `a` where it reads `cc` ([2, 3]).
    let nodes = vec![
        named_node("Add", "n0", &["x", "b"], "a"),
        named_node("Add", "n1", &["c", "b"], "bb"),
        named_node("Relu", "n2", &["a"], "cc"),
        named_node("Relu", "n3", &["bb"], "d"),
        named_node("Add", "n4", &["cc", "d"], "y"),
    ];
    let (sites, notes) = both_walks(&model(nodes, INPUTS, &["y"]), "numbers used again");
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(sites.len(), 3);
    assert!(sites[1].contains("Known(4), Known(1), Known(3)"), "{}", sites[1]);
    assert!(sites[2].contains("\"n4\"") && sites[2].contains("Known(4), Known(2), Known(3)"), "{}", sites[2]);
}

#[test]
fn a_name_made_twice_and_an_undefined_input_are_noted_alike() {
    let nodes = vec![
        named_node("Add", "n0", &["x", "b"], "a"),
        named_node("Add", "n1", &["a", "c"], "a"),
        named_node("Add", "n2", &["a", "missing"], "y"),
        named_node("Add", "n3", &["x", "b"], "b"),
    ];
    let (_, notes) = both_walks(&model(nodes, INPUTS, &["y"]), "made twice");
    assert_eq!(notes.iter().filter(|n| n.contains("DuplicateValue")).count(), 2, "{notes:?}");
    assert_eq!(notes.iter().filter(|n| n.contains("UndefinedValue")).count(), 1, "{notes:?}");
}

#[test]
fn a_subgraph_reads_its_enclosing_graphs_values_as_they_are_when_it_runs() {
    // The If's branches read `a` (made before the If) and `x`; the graph after the If reads `a` again.
    let branch = |name: &str, other: &str| GraphProto {
        name: Some(name.into()),
        node: vec![named_node("Add", "inner", &["a", other], "out"), named_node("Add", "inner2", &["out", "b"], "o")],
        output: vec![float_input("o", &[])],
        ..Default::default()
    };
    let graph_attr = |name: &str, g: GraphProto| AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Graph as i32),
        g: Some(g),
        ..Default::default()
    };
    let mut if_node = named_node("If", "if", &["cond"], "z");
    if_node.attribute =
        vec![graph_attr("then_branch", branch("then", "x")), graph_attr("else_branch", branch("else", "c"))];
    let nodes = vec![
        named_node("Add", "n0", &["x", "b"], "a"),
        named_node("Greater", "n1", &["b", "b"], "g"),
        named_node("ReduceMin", "n2", &["g"], "cond"),
        if_node,
        named_node("Add", "n3", &["z", "a"], "y"),
    ];
    let (sites, notes) = both_walks(&model(nodes, INPUTS, &["y"]), "subgraphs");
    assert!(!notes.iter().any(|n| n.contains("UndefinedValue")), "{notes:?}");
    assert!(sites.iter().filter(|s| s.contains("\"inner\"")).count() == 2, "{sites:?}");
}
