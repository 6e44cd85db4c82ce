//! What the walk of a body in file order ([`Flow`]) plans for each node input and output, and which bodies it leaves
//! to the walk by numbers.

use super::declared::Declared;
use super::flow::{Flow, LAST, NAMED, POSITION, PREVIOUS, RANGED, SETTLED, UNREAD};
use super::reads_tests::node;
use super::scope::Scope;
use super::*;

/// The plan of `nodes` in a body whose inputs and initializers are `settled` and whose outputs are `outputs`: the
/// inputs' flags and the outputs' flags, node by node, and the slots the settled inputs read.
type Planned = (Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<u32>);

fn plan(nodes: &[NodeProto], settled: &[&'static str], outputs: &[&str]) -> Option<Planned> {
    let mut scope = Scope::unordered(settled.len());
    settled.iter().for_each(|name| scope.define(name, ValueFacts::unknown()));
    let flow = Flow::plan(nodes, &scope, outputs, &Declared::default())?;
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    let (mut i, mut o) = (0, 0);
    for n in nodes {
        ins.push(flow.inputs[i..i + n.input.len()].to_vec());
        outs.push(flow.outputs[o..o + n.output.len()].to_vec());
        (i, o) = (i + n.input.len(), o + n.output.len());
    }
    Some((ins, outs, flow.settled))
}

const PREVIOUS_0: u8 = PREVIOUS;
const PREVIOUS_1: u8 = PREVIOUS | 1 << POSITION;

#[test]
fn a_value_the_next_node_alone_reads_goes_after_it_unnamed_and_an_input_or_initializer_never() {
    let nodes = [node(&["x", "w"], &["a"]), node(&["a", "w"], &["b"]), node(&["w", "b"], &["y"])];
    let (ins, outs, settled) = plan(&nodes, &["x", "w"], &["y"]).expect("followed as it flows");
    assert_eq!(ins, [vec![SETTLED, SETTLED], vec![PREVIOUS_0 | LAST, SETTLED], vec![SETTLED, PREVIOUS_0 | LAST]]);
    assert_eq!(settled, [0, 1, 1, 1], "the inputs' and initializers' slots, in the order the walk reads them");
    assert_eq!(outs, [vec![0], vec![0], vec![NAMED]], "the body's output is found by name and never goes");
}

#[test]
fn a_value_read_again_after_the_next_node_is_named_and_goes_after_its_last_reader_only() {
    // a: read by the next node and by the last one (twice there); e: read by nobody; c: by the next node but one.
    let nodes = [node(&["x"], &["a"]), node(&["a"], &["c"]), node(&["x"], &["e"]), node(&["a", "c", "a"], &["y"])];
    let (ins, outs, _) = plan(&nodes, &["x"], &["y"]).expect("followed as it flows");
    assert_eq!(ins, [vec![SETTLED], vec![PREVIOUS_0], vec![SETTLED], vec![0, LAST, LAST]]);
    assert_eq!(outs, [vec![NAMED], vec![NAMED], vec![UNREAD], vec![NAMED]]);
}

#[test]
fn a_node_reading_the_previous_nodes_output_twice_drops_it_once() {
    let nodes = [node(&["x"], &["s", "a"]), node(&["a", "a", "s"], &["y"])];
    let (ins, outs, _) = plan(&nodes, &["x"], &["y"]).expect("followed as it flows");
    assert_eq!(ins[1], [PREVIOUS_1, PREVIOUS_1 | LAST, PREVIOUS_0 | LAST]);
    assert_eq!(outs[0], [0, 0]);
}

#[test]
fn a_name_no_node_makes_is_read_from_outside_and_never_dropped_here() {
    // `outer` is an enclosing scope's value (or undefined): no node here makes it.
    let nodes = [node(&["x", "outer"], &["a"]), node(&["a", "outer"], &["y"])];
    let (ins, _, _) = plan(&nodes, &["x"], &["y"]).expect("followed as it flows");
    assert_eq!(ins[0], [SETTLED, 0]);
    assert_eq!(ins[1], [PREVIOUS_0 | LAST, LAST], "its last read is planned; the walk finds no slot of its own");
}

#[test]
fn a_name_made_twice_or_made_and_an_input_is_left_to_the_walk_by_numbers() {
    let twice = [node(&["x"], &["a"]), node(&["a"], &["a"]), node(&["a"], &["y"])];
    assert!(plan(&twice, &["x"], &["y"]).is_none(), "made by two nodes");
    let shadowing = [node(&["x"], &["w"]), node(&["w"], &["y"])];
    assert!(plan(&shadowing, &["x", "w"], &["y"]).is_none(), "made by a node and an initializer");
}

#[test]
fn a_node_reading_what_a_later_node_makes_is_left_to_the_walk_by_numbers() {
    let out_of_order = [node(&["b"], &["y"]), node(&["x"], &["b"])];
    assert!(plan(&out_of_order, &["x"], &["y"]).is_none());
    let own_output = [node(&["x", "a"], &["a"])];
    assert!(plan(&own_output, &["x"], &["a"]).is_none(), "a node reading its own output");
}

#[test]
fn an_omitted_first_output_is_skipped_and_the_next_node_reads_the_second_by_position() {
    // The first output's name is carried from one node to the next: an empty one must match no input.
    let nodes = [node(&["x"], &["", "a"]), node(&["a", "x"], &["", "y"])];
    let (ins, outs, settled) = plan(&nodes, &["x"], &["y"]).expect("followed as it flows");
    assert_eq!(ins[1], [PREVIOUS_1 | LAST, SETTLED]);
    assert_eq!(outs, [vec![0, 0], vec![0, NAMED]]);
    assert_eq!(settled, [0, 0]);
}

#[test]
fn values_read_by_name_are_numbered_and_a_number_is_used_again_once_its_value_is_made() {
    // Planned from the last node: `y` takes 0, then `cc` (read by n4) takes 0 again once `y` is made, `bb` 1, `a`
    // 0 once `cc` is made. A value holds its number from the node that makes it to its last reader.
    let nodes = [
        node(&["x"], &["a"]),
        node(&["x"], &["bb"]),
        node(&["a"], &["cc"]),
        node(&["bb"], &["d"]),
        node(&["cc", "d"], &["y"]),
    ];
    let mut scope = Scope::unordered(1);
    scope.define("x", ValueFacts::unknown());
    let flow = Flow::plan(&nodes, &scope, &["y"], &Declared::default()).expect("followed as it flows");
    let numbers = &flow.numbers;
    assert_eq!(numbers.reads, [0, 1, 0], "a, bb, cc as n2, n3, n4 read them");
    assert_eq!(numbers.makes, [0, 1, 0, 0], "a, bb, cc, y as n0, n1, n2, n4 make them");
    assert_eq!((numbers.body_outputs.as_slice(), numbers.count), (&[0][..], 2), "as many as are held at once");
}

#[test]
fn the_numbers_of_a_nodes_outputs_come_in_the_order_of_its_outputs() {
    // Each of the three outputs is read by the last node, not the next: each takes a number of its own, and the
    // walk meets them in the order the node lists them.
    let nodes = [node(&["x"], &["p", "q", "r"]), node(&["x"], &["s"]), node(&["r", "p", "q", "s"], &["y"])];
    let mut scope = Scope::unordered(1);
    scope.define("x", ValueFacts::unknown());
    let flow = Flow::plan(&nodes, &scope, &["y"], &Declared::default()).expect("followed as it flows");
    // Planned from the last node: y 0 (free again once made), then q 0, p 1, r 2 as the last node's inputs from
    // its last; s is the previous node's output, read by position.
    assert_eq!(flow.numbers.reads, [2, 1, 0], "r, p, q as the last node reads them");
    assert_eq!(flow.numbers.makes, [1, 0, 2, 0], "p, q, r as the first node makes them; y");
}

fn op(op_type: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto { op_type: Some(op_type.into()), ..node(inputs, outputs) }
}

#[test]
fn a_value_range_is_worked_out_where_a_gathers_indices_read_it_and_nowhere_else() {
    let contrib = NodeProto { domain: Some("com.microsoft".into()), ..op("Gather", &["t", "j"], &["h"]) };
    let nodes = [
        // i: read by an Unsqueeze two nodes on, whose output the next node (a Gather) reads as indices.
        op("Add", &["p", "one"], &["i"]),
        // s: a shape, which the Reshape reads as no range; r: read by a Mul whose range nothing reads.
        op("Concat", &["p", "p"], &["s"]),
        op("Reshape", &["x", "s"], &["r"]),
        op("Unsqueeze", &["i"], &["u"]),
        op("Gather", &["t", "u"], &["g"]),
        op("Mul", &["i", "r"], &["m"]),
        // j: read as indices by a Gather of another domain, which checks none.
        op("Add", &["p", "one"], &["j"]),
        contrib,
    ];
    let (_, outs, _) = plan(&nodes, &["p", "one", "x", "t"], &["g", "m", "h"]).expect("followed as it flows");
    let ranged: Vec<bool> = outs.iter().map(|o| o[0] & RANGED != 0).collect();
    assert_eq!(ranged, [true, false, false, true, true, false, false, true]);
}
