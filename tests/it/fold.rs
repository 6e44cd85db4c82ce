//! `onnx-bcast fold` on the small models of `fixtures/fold/` (written by `fixtures/fold/generate.py`): each
//! `*_folds.pb` shows a rule or form under which an explicit broadcast is proved redundant (ONNX
//! `docs/Broadcasting.md`, "Multidirectional Broadcasting" and "Unidirectional Broadcasting"), each `*_kept.pb` a
//! reason to keep one. Also: the exit codes, `--dry-run`, the JSON's typed reasons, idempotence, byte identity of
//! an unchanged model, one clear error for bad input, and `fold` undoing `expand` on the main fixtures.
//! Snapshots of the text and JSON output are in tests/it/snapshots/fold__*.snap.

use crate::common;
use crate::common::cli::run;

use std::path::{Path, PathBuf};
use std::process::Command;

use onnx_bcast::onnx::model::Model;
use onnx_bcast::rewrite::fold::{fold_model, FoldOptions, KeptReason};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("fixtures/fold").join(format!("{name}.pb"))
}

/// The op types of the main graph, in order.
fn ops(path: &Path) -> Vec<String> {
    let model = Model::open(path).unwrap();
    model.proto().graph.as_ref().unwrap().node.iter().map(|n| n.op_type().to_string()).collect()
}

fn fold_json(path: &Path) -> (i32, Value) {
    let out = tempfile::tempdir().unwrap();
    let dst = out.path().join("out.onnx");
    let r = run(&["fold", "--format", "json", path.to_str().unwrap(), dst.to_str().unwrap()]);
    (r.code, serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.stdout)))
}

/// Every fixture named `*_folds` has its explicit broadcasts removed, and `fold` exits 0 (the one whose outer
/// Expand is a graph output keeps that one, and exits 0 too: a broadcast kept is no finding).
#[test]
fn each_rule_and_form_folds_its_broadcast() {
    let cases: &[(&str, &[&str])] = &[
        ("multidirectional_add_folds", &["Add"]),
        ("where_folds", &["Where"]),
        ("variadic_sum_folds", &["Sum"]),
        ("variadic_max_folds", &["Max"]),
        ("gemm_c_folds", &["Gemm"]),
        ("prelu_slope_folds", &["PRelu"]),
        ("symbolic_shape_of_folds", &["Mul"]),
        ("symbolic_attention_mask_folds", &["Add"]),
        ("tile_folds", &["Add"]),
        ("mul_ones_folds", &["Sub"]),
        ("add_zeros_folds", &["Div"]),
        ("where_constant_folds", &["Add"]),
        ("subgraph_folds", &["If"]),
        ("function_folds", &["AddExpanded", "AddExpanded"]),
        ("expand_data_folds", &["Expand"]),
        // Expand of x [N] to [2, 3] holds only if N ∈ {1, 3}, and so does the Add once it reads x: the model
        // fails for exactly the sizes it failed for (what `expand` makes of a conditional site, undone).
        ("conditional_folds", &["Add"]),
    ];
    for (name, left) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.onnx");
        let r = run(&["fold", fixture(name).to_str().unwrap(), out.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{name}: {}{}", r.stdout, r.stderr);
        assert_eq!(ops(&out), *left, "{name}: the nodes left\n{}", r.stdout);
    }
}

/// The symbolic fold proves `[1, T]` against `[B, T]` from the symbols themselves and removes the whole shape
/// computation (Shape, Gather, Unsqueeze, Concat and their constants) with the Expand it fed.
#[test]
fn a_symbolic_attention_mask_folds_with_its_shape_computation() {
    let model = Model::open(fixture("symbolic_attention_mask_folds")).unwrap();
    let (plan, _) = fold_model(&model, FoldOptions::default()).unwrap();
    assert_eq!(plan.summary.folded.len(), 1);
    assert_eq!(plan.summary.folded[0].into, ["add_mask"]);
    assert_eq!(plan.summary.nodes_removed, 7, "Expand, Shape, 2 Gather, 2 Unsqueeze, Concat");
    assert_eq!(plan.summary.initializers_removed, 4, "both indices, the axes and the head count");
}

/// Each `*_kept` fixture keeps its broadcast for the reason its name gives, and `fold` exits 0: it did its job (the
/// model it wrote is valid, the broadcast is listed with its reason), and a kept broadcast is no finding.
#[test]
fn each_reason_keeps_the_broadcast() {
    let cases = [
        ("output_changes_kept", "output-changes"),
        ("symbolic_unproved_kept", "output-changes"),
        ("broadcast_conditional_kept", "broadcast-conditional"),
        ("other_consumer_kept", "other-consumer"),
        ("graph_output_kept", "graph-output"),
        ("not_broadcasting_input_kept", "not-broadcasting-input"),
        ("read_in_subgraph_kept", "read-in-subgraph"),
        ("function_calls_disagree_kept", "output-changes"),
    ];
    for (name, kind) in cases {
        let (code, json) = fold_json(&fixture(name));
        assert_eq!(code, 0, "{name}: {json}");
        assert_eq!(json["folded_count"], 0, "{name}: {json}");
        let kept = json["kept"].as_array().unwrap();
        assert_eq!(kept.len(), 1, "{name}: {json}");
        assert_eq!(kept[0]["reason"]["kind"], kind, "{name}: {json}");
    }
}

/// A symbol is never equal to another without proof: `[1]` expanded to `[N]` then added to `[M]` gives
/// `broadcast(M, N)`, and without the Expand `[M]`; the reason names both shapes.
#[test]
fn two_symbols_are_never_assumed_equal() {
    let model = Model::open(fixture("symbolic_unproved_kept")).unwrap();
    let (plan, _) = fold_model(&model, FoldOptions::default()).unwrap();
    match &plan.summary.kept[0].reason {
        KeptReason::OutputChanges { node, from, to, .. } => {
            assert_eq!(node, "add");
            assert_eq!((from.to_string(), to.to_string()), ("[broadcast(M, N)]".into(), "[M]".into()));
        }
        other => panic!("kept for {other:?}"),
    }
}

/// The conditions of a kept broadcast reach the JSON as a list, with the reason's kind and message.
/// A broadcast in a model-local function's body is named as `check` names its site: at its (first) call, with the
/// function and the node inside it (`main › call1 (Expand): in function local.AddExpanded (node #1 (Expand))`), in
/// text and JSON alike, never as a node of the main graph.
#[test]
fn a_function_body_node_is_named_as_check_names_it() {
    let path = fixture("function_folds");
    let check = run(&["check", "--format", "json", path.to_str().unwrap()]);
    let check: Value = serde_json::from_str(check.stdout.trim()).unwrap();
    let site = check["sites"].as_array().unwrap().iter().find(|s| s["op"] == "Expand").unwrap().clone();
    let (_, fold) = fold_json(&path);
    let folded = &fold["folded"][0];
    for key in ["graph", "node", "op", "functions"] {
        assert_eq!(folded[key], site[key], "{key}: fold {folded} check {site}");
    }
    assert_eq!(folded["functions"][0]["function"], "local.AddExpanded");
    let out = tempfile::tempdir().unwrap();
    let dst = out.path().join("out.onnx");
    let text = run(&["fold", "--dry-run", path.to_str().unwrap(), dst.to_str().unwrap()]).stdout;
    let line = text.lines().next().unwrap();
    assert!(
        line.contains(
            "folded main › call1 (Expand): in function local.AddExpanded (node #1 (Expand)): a read directly"
        ),
        "{line}"
    );
    let kept =
        run(&["fold", "--dry-run", fixture("function_calls_disagree_kept").to_str().unwrap(), dst.to_str().unwrap()]);
    assert!(
        kept.stdout.contains(
            "kept main › call1 (Expand): in function local.AddExpanded (node #0 (Expand)): #1 (Add) would give"
        ),
        "{}",
        kept.stdout
    );
}

#[test]
fn dry_run_json_says_why_each_broadcast_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never.onnx");
    let path = fixture("broadcast_conditional_kept");
    let r = run(&["fold", "--dry-run", "--format", "json", path.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(r.code, 0);
    assert!(!out.exists(), "--dry-run writes nothing");
    let json: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(json["written"], false);
    let reason = &json["kept"][0]["reason"];
    assert_eq!(reason["kind"], "broadcast-conditional");
    assert_eq!(reason["conditions"], serde_json::json!(["N ∈ {1, 3}"]));
    assert_eq!(reason["message"], "the broadcast itself holds only if N ∈ {1, 3}");
}

/// Every candidate is folded, removed with the nodes that alone read it, or kept with its reason: the totals add up,
/// in the text and in the JSON, on every fixture. A condition that only a folded `Where` read goes with it.
#[test]
fn every_candidate_is_folded_removed_with_its_readers_or_kept() {
    for entry in std::fs::read_dir(root().join("fixtures/fold")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "pb") {
            continue;
        }
        let (_, json) = fold_json(&path);
        let count = |key: &str| json[key].as_u64().unwrap();
        let listed = |key: &str| json[key].as_array().unwrap().len() as u64;
        assert_eq!(count("candidates"), count("folded_count") + count("removed_with_count") + count("kept_count"));
        for key in ["folded", "removed_with", "kept"] {
            assert_eq!(listed(key), count(&format!("{key}_count")), "{}: {key}", path.display());
        }
    }
    let (_, json) = fold_json(&fixture("where_condition_removed_with"));
    assert_eq!(json["removed_with"][0]["node"], "expand_condition", "{json}");
    assert_eq!(json["removed_with"][0]["with"], serde_json::json!(["where_true"]), "{json}");
    let r = run(&["fold", "--dry-run", fixture("where_condition_removed_with").to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("removed main › expand_condition (Expand) with where_true, which alone read it"));
    assert!(r.stdout.contains(": 1 of 2 explicit broadcasts folded, 1 removed with them, 0 kept;"), "{}", r.stdout);
}

/// `--dry-run` needs no OUT (and writes nothing); without `--dry-run`, OUT is required (a usage error, exit 2).
#[test]
fn dry_run_needs_no_output_path() {
    let path = fixture("multidirectional_add_folds");
    for command in ["fold", "expand", "infer"] {
        let r = run(&[command, "--dry-run", path.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{command}: {}", r.stderr);
        assert!(r.stdout.contains("dry run, nothing written"), "{command}: {}", r.stdout);
        let r = run(&[command, path.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{command}: {}", r.stderr);
        assert!(r.stderr.contains("<OUTPUT>"), "{command}: {}", r.stderr);
    }
}

/// Folding a folded model changes no byte, and a model with nothing to fold comes out byte for byte.
#[test]
fn fold_is_idempotent_and_leaves_an_unchanged_model_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(root().join("fixtures/fold")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "pb") {
            continue;
        }
        let once = dir.path().join("once.onnx");
        let twice = dir.path().join("twice.onnx");
        let r = run(&["fold", path.to_str().unwrap(), once.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{}: {}", path.display(), r.stderr);
        if r.stdout.contains(" 0 of ") {
            assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&once).unwrap(), "{}", path.display());
        }
        run(&["fold", once.to_str().unwrap(), twice.to_str().unwrap()]);
        assert_eq!(std::fs::read(&once).unwrap(), std::fs::read(&twice).unwrap(), "{}", path.display());
    }
}

/// `fold` undoes `expand` on the main fixtures whose sites hold without condition: the same bytes come back.
#[test]
fn fold_undoes_expand_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "multidirectional_add_ok",
        "multidirectional_where3_ok",
        "multidirectional_sum8_ok",
        "multidirectional_function_ok",
        "multidirectional_if_then_ok",
        "multidirectional_loop_body_ok",
        "symbolic_same",
    ] {
        let original = root().join("fixtures").join(format!("{name}.onnx"));
        let expanded = dir.path().join("expanded.onnx");
        let back = dir.path().join("back.onnx");
        assert_eq!(run(&["expand", original.to_str().unwrap(), expanded.to_str().unwrap()]).code, 0);
        let r = run(&["fold", expanded.to_str().unwrap(), back.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{name}: {}", r.stdout);
        assert_eq!(std::fs::read(&original).unwrap(), std::fs::read(&back).unwrap(), "{name}");
    }
}

/// Bad input: one error naming the file, exit 2, nothing written.
#[test]
fn a_file_that_is_no_model_is_one_error_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.onnx");
    std::fs::write(&bad, b"not a model at all").unwrap();
    let out = dir.path().join("out.onnx");
    let r = run(&["fold", bad.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("bad.onnx") && r.stderr.lines().count() == 1, "{}", r.stderr);
    assert!(!out.exists());
    let r = run(&["fold", fixture("tile_folds").to_str().unwrap(), "no/such/folder/out.onnx"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no/such/folder/out.onnx"), "{}", r.stderr);
}

#[test]
fn text_output_lists_folded_and_kept_broadcasts() {
    let r = run(&["fold", "--dry-run", "fixtures/fold/expand_data_folds.pb", "out.onnx"]);
    let text = format!("exit: {}\n--- stdout ---\n{}--- stderr ---\n{}", r.code, r.stdout, r.stderr);
    insta::assert_snapshot!("fold_text", text);
    let r = run(&["fold", "--dry-run", "--format", "json", "fixtures/fold/symbolic_unproved_kept.pb", "out.onnx"]);
    let json: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    insta::assert_json_snapshot!("fold_json", json);
}

/// `--materialized` writes a constant whose rows are all equal back in its small form, where its reader
/// broadcasts it anyway; without the flag the model is left byte for byte.
#[test]
fn materialized_constants_shrink_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture("materialized_folds");
    let plain = dir.path().join("plain.onnx");
    assert_eq!(run(&["fold", path.to_str().unwrap(), plain.to_str().unwrap()]).code, 0);
    assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&plain).unwrap());
    let small = dir.path().join("small.onnx");
    let r = run(&["fold", "--materialized", path.to_str().unwrap(), small.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let model = Model::open(&small).unwrap();
    let b = &model.proto().graph.as_ref().unwrap().initializer[0];
    assert_eq!((b.name(), b.dims.as_slice()), ("b_rows", &[3i64][..]));
}

/// `fold --materialized` undoes `expand --materialize-constants` byte for byte: the original constant, left unread
/// by `expand`, is read again and the written-out copy goes.
#[test]
fn fold_materialized_undoes_expand_materialize_constants() {
    let dir = tempfile::tempdir().unwrap();
    let original = fixture("constant_operand_unchanged");
    let (expanded, back) = (dir.path().join("expanded.onnx"), dir.path().join("back.onnx"));
    let r = run(&["expand", "--materialize-constants", original.to_str().unwrap(), expanded.to_str().unwrap()]);
    assert!(r.stdout.contains("1 constant materialized"), "{}", r.stdout);
    let r = run(&["fold", "--materialized", expanded.to_str().unwrap(), back.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(std::fs::read(&original).unwrap(), std::fs::read(&back).unwrap());
}

/// The committed fixtures are exactly what `fixtures/fold/generate.py` writes.
#[test]
fn fixtures_are_what_the_generator_writes() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(common::venv_python())
        .arg(root().join("fixtures/fold/generate.py"))
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let models = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pb"))
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    let (fresh, committed) = (models(dir.path()), models(&root().join("fixtures/fold")));
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&fresh), names(&committed));
    for ((name, a), (_, b)) in fresh.iter().zip(&committed) {
        assert!(a == b, "{name} differs from what generate.py writes");
    }
}
