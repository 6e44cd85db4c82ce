//! When the walk drops a node-made value ([`Reads`]): right after its last reader, once, and never a body output.

use super::reads::Reads;
use super::scope::{Producers, Scope};
use super::*;

/// A Relu node (any op the walk follows would do) reading `inputs` and making `outputs`; flow_tests builds with it too.
pub(super) fn node(inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|&s| s.into()).collect(),
        output: outputs.iter().map(|&s| s.into()).collect(),
        op_type: Some("Relu".into()),
        ..Default::default()
    }
}

/// The slots alive after each walk position, with the nodes walked in `order`; `x` is the body's one input.
fn alive_after_each(nodes: &[NodeProto], order: &[usize], outputs: &[&str]) -> Vec<Vec<u32>> {
    let mut scope = Scope::unordered(1);
    scope.define("x", ValueFacts::unknown());
    let producers = Producers::of(nodes, &mut scope, |_, _, _| {});
    let outputs: Vec<u32> = outputs.iter().map(|name| scope.slot(name)).collect();
    let mut reads = Reads::plan(&producers, &scope, order, &outputs);
    scope.settle(&producers, false);
    let mut alive = Vec::new();
    for (position, &index) in order.iter().enumerate() {
        for (k, name) in nodes[index].output.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
            scope.define_made(producers.first_output(index) + k as u32, name, ValueFacts::unknown());
        }
        reads.after(position, &mut scope, &producers);
        alive.push(scope.alive());
    }
    alive
}

#[test]
fn a_value_goes_right_after_its_last_reader_once_though_read_twice_and_a_body_output_never() {
    // Slots: x 0, a 1, b 2, c 3, e 4 (read by nobody), d 5 (the body's output).
    let nodes = [
        node(&["x"], &["a"]),
        node(&["a"], &["b"]),
        node(&["a", "b"], &["c"]),
        node(&["x"], &["e"]),
        node(&["c", "c", "b"], &["d"]),
    ];
    let alive = alive_after_each(&nodes, &[0, 1, 2, 3, 4], &["d"]);
    assert_eq!(alive, [vec![0, 1], vec![0, 1, 2], vec![0, 2, 3], vec![0, 2, 3], vec![0, 5]]);
}

#[test]
fn in_a_walk_out_of_file_order_a_value_goes_after_its_last_reader_by_walk_position() {
    // Node 0 reads what node 1 makes: the walk takes node 1 first. Slots: x 0, a 1 (node 0's), b 2 (node 1's).
    let nodes = [node(&["b"], &["a"]), node(&["x"], &["b"])];
    let alive = alive_after_each(&nodes, &[1, 0], &["a"]);
    assert_eq!(alive, [vec![0, 2], vec![0, 1]]);
}
