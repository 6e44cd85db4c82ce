//! `onnx-bcast shapes`: several models in one run, `-` for standard input, and the main graph listed
//! before the subgraphs it contains.

use std::io::Write;
use std::process::{Command, Stdio};

fn fixture(name: &str) -> String {
    format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn shapes(args: &[&str], stdin: Option<&[u8]>) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .arg("shapes")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.unwrap_or_default()).expect("stdin written");
    drop(input);
    let out = child.wait_with_output().expect("the binary ends");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn shapes_takes_several_models_in_order() {
    let (a, b) = (fixture("multidirectional_add_ok.onnx"), fixture("symbolic_batch.onnx"));
    let (code, out) = shapes(&[&a, &b], None);
    assert_eq!(code, 0, "{out}");
    let first = out.find(&format!("{a}: graph main")).expect("the first model");
    let second = out.find(&format!("{b}: graph main")).expect("the second model");
    assert!(first < second, "{out}");
}

#[test]
fn shapes_reads_a_model_from_standard_input() {
    let bytes = std::fs::read(fixture("multidirectional_add_ok.onnx")).unwrap();
    let (code, out) = shapes(&["-"], Some(&bytes));
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("-: graph main\n"), "{out}");
    assert!(out.contains("  A: float [2, 3]"), "{out}");
}

#[test]
fn shapes_lists_the_main_graph_before_its_subgraphs() {
    let path = fixture("multidirectional_if_then_ok.onnx");
    let (code, out) = shapes(&[&path], None);
    assert_eq!(code, 0, "{out}");
    let graphs: Vec<&str> = out.lines().filter(|l| l.contains(": graph ")).collect();
    assert!(graphs.len() >= 2 && graphs[0].ends_with(": graph main"), "{graphs:?}");
}

/// `shapes --format dot` draws the bodies of If/Loop/Scan nodes too, each as a cluster beside its node, with the
/// body's broadcasting sites coloured by verdict (a picture of silero_vad that drew only the main graph showed 1 of its 21 sites).
#[test]
fn dot_draws_subgraph_bodies_with_their_sites() {
    let path = fixture("multidirectional_if_then_bad.onnx");
    let (code, out) = shapes(&["--format", "dot", &path], None);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("digraph model {") && out.trim_end().ends_with('}'), "{out}");
    assert!(out.contains("subgraph \"cluster_n0_"), "the If's bodies are clusters: {out}");
    // The violation inside the then-branch is drawn in the violation colour.
    assert!(out.contains("fillcolor=\"#ff8f8f\", label=\"Add"), "{out}");
    let opened = out.matches('{').count();
    assert_eq!(opened, out.matches('}').count(), "balanced braces: {out}");
}
