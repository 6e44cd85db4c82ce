//! Ops outside the ONNX default domain (issue 24), on the fixtures of `fixtures/contrib/` (written by
//! `fixtures/contrib/generate.py`): nodes of unknown ops are counted, named and, under `--strict`, findings; a
//! declaration in `onnx-bcast.toml` makes them analysable; shape values keep their known entries past them; and
//! onnxruntime's contrib ops are inferred and, where they broadcast, judged as sites.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use onnx_bcast::analysis::{analyze_model_with, Analysis, Options};
use onnx_bcast::onnx::model::Model;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/contrib").join(format!("{name}.onnx"))
}

fn analyze(name: &str) -> Analysis {
    let path = fixture(name);
    let model = Model::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    analyze_model_with(&model, Options { value_facts: true })
}

fn shape(a: &Analysis, value: &str) -> String {
    let main = a.graphs.iter().find(|g| g.path == "main").expect("the main graph's facts");
    let (_, facts) = main.values.iter().find(|(n, _)| n == value).unwrap_or_else(|| panic!("no value {value}"));
    facts.shape.to_string()
}

/// `onnx-bcast check ARGS` in `dir` (where a config file may be): exit status and stdout.
fn check_in(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .arg("check")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("CI", "true")
        .timeout(Duration::from_secs(60))
        .output()
        .expect("onnx-bcast runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("internal error"), "{args:?}: {stderr}");
    (out.status.code().expect("exit code"), String::from_utf8(out.stdout).expect("UTF-8"))
}

/// A fresh folder with this `onnx-bcast.toml` (none when `config` is `None`).
fn folder(name: &str, config: Option<&str>) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("contrib-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(text) = config {
        std::fs::write(dir.join("onnx-bcast.toml"), text).unwrap();
    }
    dir
}

#[test]
fn known_entries_of_a_shape_value_survive_an_unknown_op_before_it() {
    // Reshape(o, Concat(Gather(Shape(o), 0), Gather(Shape(o), 1), [4, 16])) with o from custom.Mystery.
    let a = analyze("partial_shape_after_unknown_op");
    assert_eq!(shape(&a, "o"), "[unknown rank]");
    assert_eq!(shape(&a, "r"), "[?, ?, 4, 16]");
    assert_eq!(shape(&a, "t"), "[?, 4, ?, 16]");
    assert_eq!(shape(&a, "y"), "[?, 4, ?, 16]");
    assert_eq!(a.opaque.get("custom.Mystery"), Some(&1));
}

#[test]
fn the_summary_line_counts_and_names_the_nodes_of_unknown_ops() {
    let dir = folder("summary", None);
    let path = fixture("unknown_domain_op");
    let (status, out) = check_in(&dir, &[path.to_str().unwrap()]);
    assert_eq!(status, 0, "{out}");
    let last = out.lines().last().unwrap();
    assert!(last.ends_with("; 2 nodes of 1 unknown op: custom.Scale"), "{out}");
    // The JSON summary counts them too (an existing field), and names them by op.
    let (_, json) = check_in(&dir, &["--format", "json", path.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(report["summary"]["opaque_nodes"], 2);
    assert_eq!(report["opaque_ops"]["custom.Scale"], 2);
}

#[test]
fn under_strict_every_opaque_node_is_a_finding_with_its_code() {
    let dir = folder("strict", None);
    let path = fixture("unknown_domain_op");
    let (status, out) = check_in(&dir, &["--strict", path.to_str().unwrap()]);
    assert_eq!(status, 1, "{out}");
    let opaque: Vec<&str> = out.lines().filter(|l| l.contains("error[opaque-node]")).collect();
    assert_eq!(opaque.len(), 2, "{out}");
    assert!(opaque[0].contains("main › #0 (Scale)") && opaque[0].contains("custom.Scale"), "{out}");
    // Without --strict the code is not reported; naming it turns it on, as for implicit-broadcast.
    let (_, out) = check_in(&dir, &["--warn", "opaque-node", path.to_str().unwrap()]);
    assert_eq!(out.lines().filter(|l| l.contains("warning[opaque-node]")).count(), 2, "{out}");
}

#[test]
fn a_declaration_in_the_config_file_makes_an_unknown_op_analysable() {
    let config = "[ops.\"custom.Scale\"]\nshape = \"input 0\"\n";
    let dir = folder("declared", Some(config));
    let path = fixture("unknown_domain_op");
    let (status, out) = check_in(&dir, &["--strict", path.to_str().unwrap()]);
    // No opaque node, and the Add after the two Scale nodes is decided: an implicit broadcast of b.
    assert!(!out.contains("opaque-node") && !out.contains("unknown op"), "{out}");
    assert!(out.contains("error[implicit-broadcast]") && out.contains("b [8] to [batch, 8]"), "{out}");
    assert_eq!(status, 1);
    let (status, out) = check_in(&dir, &[path.to_str().unwrap()]);
    assert_eq!(status, 0, "{out}");
    assert!(out.contains("1 site: 0 same, 1 broadcast"), "{out}");
}

#[test]
fn an_op_declared_as_a_numpy_broadcast_is_a_site_judged_like_add() {
    let config = "[ops.\"custom.Blend\"]\nshape = \"broadcast 0..1\"\ntype = \"float\"\n";
    let dir = folder("blend", Some(config));
    let (_, out) = check_in(&dir, &["--format", "json", fixture("declared_broadcast_op").to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let site = &report["sites"][0];
    assert_eq!(site["op"], "Blend");
    assert_eq!(site["rule"], "multidirectional");
    assert_eq!(site["output_shape"], serde_json::json!(["batch", 3, 8]));
    assert_eq!(report["summary"]["opaque_nodes"], 0);
}

#[test]
fn a_bad_declaration_is_an_error_naming_the_file_and_the_op() {
    let dir = folder("bad", Some("[ops.\"custom.Scale\"]\nshape = \"same as 0\"\n"));
    let (status, _) = check_in(&dir, &[fixture("unknown_domain_op").to_str().unwrap()]);
    assert_eq!(status, 2);
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .args(["check", fixture("unknown_domain_op").to_str().unwrap()])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("onnx-bcast.toml") && stderr.contains("custom.Scale") && stderr.contains("same as 0"));
}

/// The committed fixtures are exactly what `fixtures/contrib/generate.py` writes.
#[test]
fn committed_fixtures_are_what_the_generator_writes() {
    let python = common::venv_python();
    let out_dir = folder("generated", None);
    let status = std::process::Command::new(&python)
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/contrib/generate.py"))
        .arg("--out")
        .arg(&out_dir)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(status.success());
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/contrib");
    for entry in std::fs::read_dir(&out_dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let a = std::fs::read(entry.path()).unwrap();
        let b = std::fs::read(committed.join(&name)).unwrap_or_default();
        assert!(a == b, "{name:?} differs from what generate.py writes");
    }
}

/// `onnx-bcast CMD IN OUT`, from the crate root; its exit status.
fn rewrite(cmd: &str, input: &Path, output: &Path) -> i32 {
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .args([cmd, input.to_str().unwrap(), output.to_str().unwrap()])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("onnx-bcast runs");
    out.status.code().expect("exit code")
}

/// Whether onnxruntime gives both models the same outputs, exactly, on seeded random inputs.
fn same_outputs_in_onnxruntime(a: &Path, b: &Path) -> bool {
    let script = r#"
import sys, numpy as np, onnxruntime as ort
rng = np.random.default_rng(0)
a, b = (ort.InferenceSession(p, providers=["CPUExecutionProvider"]) for p in sys.argv[1:3])
feeds = {i.name: (rng.standard_normal(i.shape).astype(np.float32) if i.type == "tensor(float)"
                  else rng.integers(0, 255, i.shape).astype(np.uint8)) for i in a.get_inputs()}
ra, rb = a.run(None, feeds), b.run(None, feeds)
sys.exit(0 if all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(ra, rb)) else 1)
"#;
    std::process::Command::new(common::venv_python())
        .args(["-c", script, a.to_str().unwrap(), b.to_str().unwrap()])
        .status()
        .expect("python runs")
        .success()
}

#[test]
fn an_attention_bias_broadcasts_one_way_towards_the_scores() {
    let a = analyze("attention_bias_mha");
    assert_eq!(a.sites.len(), 1);
    let site = &a.sites[0];
    assert_eq!(site.verdict, onnx_bcast::rules::Verdict::Broadcast);
    assert_eq!(site.output_shape.to_string(), "[batch, 2, seq, kv]");
    // The op's own output is inferred, not the scores' shape.
    assert_eq!(shape(&a, "y"), "[batch, seq, 32]");
    let bad = analyze("attention_bias_mha_bad");
    assert!(matches!(bad.sites[0].verdict, onnx_bcast::rules::Verdict::Violation(_)));
}

#[test]
fn expand_makes_an_attention_bias_explicit_and_fold_takes_it_out_again() {
    let dir = folder("attention-expand", None);
    for name in ["attention_bias_mha", "attention_bias_mha_static"] {
        let (expanded, again, folded) = (dir.join("e.onnx"), dir.join("e2.onnx"), dir.join("f.onnx"));
        assert_eq!(rewrite("expand", &fixture(name), &expanded), 0, "{name}");
        let (status, out) = check_in(&dir, &["--strict", expanded.to_str().unwrap()]);
        assert_eq!(status, 0, "{name}: the expanded model passes --strict: {out}");
        assert_eq!(rewrite("expand", &expanded, &again), 0);
        assert_eq!(std::fs::read(&expanded).unwrap(), std::fs::read(&again).unwrap(), "{name}: expand is idempotent");
        rewrite("fold", &expanded, &folded);
        assert_eq!(std::fs::read(&folded).unwrap(), std::fs::read(fixture(name)).unwrap(), "{name}: fold(expand(m))");
    }
    let expanded = dir.join("static.onnx");
    rewrite("expand", &fixture("attention_bias_mha_static"), &expanded);
    assert!(same_outputs_in_onnxruntime(&fixture("attention_bias_mha_static"), &expanded));
}

#[test]
fn qlinear_add_mul_and_qgemm_are_sites_that_expand_and_fold_rewrite_faithfully() {
    let a = analyze("qlinear_broadcasts");
    let ops: Vec<(&str, &str)> = a.sites.iter().map(|s| (s.op.as_ref(), s.verdict.as_str())).collect();
    assert_eq!(ops, [("QLinearAdd", "broadcast"), ("QLinearMul", "broadcast"), ("QGemm", "broadcast")]);
    // The scales and zero points are no operands: the message names A and B.
    assert_eq!(onnx_bcast::sys::escape::plain(&a.sites[0].list_inputs()), "x [2, 8, 4, 4] and b [8, 1, 1]");
    assert_eq!(shape(&a, "projected"), "[3, 8]");
    let dir = folder("qlinear", None);
    let (expanded, folded) = (dir.join("e.onnx"), dir.join("f.onnx"));
    assert_eq!(rewrite("expand", &fixture("qlinear_broadcasts"), &expanded), 0);
    assert!(same_outputs_in_onnxruntime(&fixture("qlinear_broadcasts"), &expanded), "integer outputs exactly equal");
    let (status, out) = check_in(&dir, &["--strict", expanded.to_str().unwrap()]);
    assert_eq!(status, 0, "{out}");
    rewrite("fold", &expanded, &folded);
    assert_eq!(std::fs::read(&folded).unwrap(), std::fs::read(fixture("qlinear_broadcasts")).unwrap());
}

#[test]
fn bias_add_is_a_numpy_site_that_expand_leaves_in_its_documented_form() {
    let a = analyze("bias_add");
    assert_eq!(a.sites[0].verdict, onnx_bcast::rules::Verdict::Broadcast);
    assert_eq!(a.sites[0].output_shape.to_string(), "[batch, seq, 8]");
    let dir = folder("bias-add", None);
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .args(["expand", "--format", "json", fixture("bias_add").to_str().unwrap()])
        .arg(dir.join("e.onnx"))
        .output()
        .unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["made_explicit"], 0);
    let reason = summary["left"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("takes its bias only as (C)") && reason.contains("com.microsoft.BiasAdd"), "{reason}");
}
