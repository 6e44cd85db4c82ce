//! Shape inference through the patterns PyTorch exporters write, one fixture each, made by
//! `fixtures/inference/generate.py` (every fixture runs in onnxruntime with the sizes these shapes predict). Each
//! test names the pattern and pins the shapes and verdicts inference must reach.

use onnx_bcast::analysis::{analyze_model_with, Analysis, Options};
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::rules::Verdict;

fn analyze(name: &str) -> Analysis {
    let path = format!("{}/fixtures/inference/{name}.onnx", env!("CARGO_MANIFEST_DIR"));
    let model = Model::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    analyze_model_with(&model, Options { value_facts: true })
}

fn shape(a: &Analysis, value: &str) -> String {
    let main = a.graphs.iter().find(|g| g.path == "main").expect("the main graph's facts");
    let (_, facts) = main.values.iter().find(|(n, _)| n == value).unwrap_or_else(|| panic!("no value {value}"));
    facts.shape.to_string()
}

fn verdicts(a: &Analysis) -> Vec<&'static str> {
    a.sites.iter().map(|s| s.verdict.as_str()).collect()
}

fn messages(a: &Analysis) -> Vec<String> {
    check(a, CheckOptions::default()).findings.iter().map(|f| f.message.plain().into_owned()).collect()
}

#[test]
fn slice_of_a_buffer_up_to_a_symbolic_length_is_capped_and_holds_only_up_to_the_buffer() {
    let a = analyze("slice_buffer_to_sequence");
    assert_eq!(shape(&a, "pos"), "[1, min(64, seq)]");
    assert_eq!(shape(&a, "pos_emb"), "[1, min(64, seq), 8]");
    assert_eq!(shape(&a, "emb"), "[batch, seq, 8]");
    assert_eq!(verdicts(&a), ["conditional"]);
    assert!(messages(&a)[0].starts_with("holds only if seq ≤ 64: "), "{:?}", messages(&a));
}

#[test]
fn torchscript_expand_batch_minus_one_is_resolved_because_a_size_is_never_minus_one() {
    let a = analyze("expand_batch_minus_one");
    assert_eq!(shape(&a, "is_minus_one"), "[2]");
    assert_eq!(shape(&a, "y"), "[batch, 4]");
    assert!(a.sites.iter().all(|s| matches!(s.verdict, Verdict::Same | Verdict::Broadcast)), "{:?}", verdicts(&a));
}

#[test]
fn slice_with_a_negative_end_on_a_symbolic_axis_matches_the_slice_from_one() {
    let a = analyze("slice_negative_end");
    assert_eq!(shape(&a, "head"), "[N, max(0, T - 1), 8]");
    assert_eq!(shape(&a, "tail"), "[N, max(0, T - 1), 8]");
    assert_eq!(verdicts(&a), ["same"]);
}

#[test]
fn torchscript_pad_pattern_flows_through_reshape_slice_and_transpose() {
    let a = analyze("torchscript_pad");
    assert_eq!(shape(&a, "pairs"), "[4, 2]");
    assert_eq!(shape(&a, "pads"), "[8]");
    assert_eq!(shape(&a, "y"), "[N, C, H + 7, W + 3]");
}

#[test]
fn tile_repeats_from_a_div_cast_concat_chain() {
    let a = analyze("tile_repeats_chain");
    assert_eq!(shape(&a, "tiled"), "[N*floor(M / 2), 4]");
}

#[test]
fn unknown_dim_of_known_rank_against_a_fixed_size_is_conditional_naming_input_and_axis() {
    let a = analyze("unknown_dim_against_fixed_size");
    assert_eq!(shape(&a, "q"), "[?, ?, ?]");
    assert_eq!(verdicts(&a), ["conditional", "same", "unknown"]);
    assert_eq!(
        messages(&a)[0],
        "holds only if the unknown dim 2 of q ∈ {1, 2}: q [?, ?, ?] and b [2] broadcast to [?, ?, 2]"
    );
    // Two unknown shapes meet undecided; strict says which dims keep it so.
    let strict = CheckOptions { strict: true, ..Default::default() };
    let undecided: Vec<String> = check(&a, strict).findings.iter().map(|f| f.message.plain().into_owned()).collect();
    let want = "cannot prove the inputs share one shape (q's dims 0, 1 and 2, r's dims 0, 1 and 2 unknown): \
                q [?, ?, ?] and r [?, ?, ?]";
    assert!(undecided.iter().any(|m| m == want), "{undecided:?}");
}

#[test]
fn if_with_a_condition_known_from_the_graph_takes_its_branch() {
    let a = analyze("if_known_condition");
    assert_eq!(shape(&a, "picked"), "[2, 4]");
    assert_eq!(shape(&a, "out"), "[2, 4]");
}

#[test]
fn below_ir_4_initializers_listed_as_inputs_are_constants() {
    let a = analyze("ir3_initializer_shapes");
    assert_eq!(shape(&a, "w"), "[1, 3]");
    assert_eq!(verdicts(&a), ["broadcast"]);
}

/// nudenet: PyTorch declared `(floor(floor(floor(height/2 - 1/2)/2)/2) + 1)*(…width…)` on a value that
/// inference cannot follow. Before, the declaration was an opaque name and printed without its parentheses
/// (`floor(floor(floor(height/2 - 1/2)/2)/2) + 1*floor(floor(floor(width/2 - 1/2)/2)/2) + 1`), and the same size
/// inferred through the pools read `floor((height - 1) / 2)`-style: two forms of one quantity, never equal. Now the
/// declaration is read as the expression it is, in inference's own normal form, so the site is decided.
#[test]
fn declared_sympy_dims_read_as_the_expressions_inference_writes() {
    let a = analyze("declared_sympy_dims");
    assert_eq!(shape(&a, "anchors"), shape(&a, "flat").replacen("[2,", "[1, 2,", 1));
    assert_eq!(verdicts(&a), ["broadcast"]);
    insta::assert_snapshot!(messages_all(&a).join("\n"));
}

fn messages_all(a: &Analysis) -> Vec<String> {
    let strict = CheckOptions { strict: true, ..Default::default() };
    check(a, strict).findings.iter().map(|f| f.message.plain().into_owned()).collect()
}
