//! Inference as a validator (issue 26): an op whose inputs break what its specification requires is a finding
//! named like a broadcast violation, what follows it is unknown in `shapes` and never written by `infer`, and a
//! division that must be exact is one (issue 25, point 2). The fixtures are `fixtures/contradiction/` (made by its
//! generate.py); the generated set of contradictory models with valid twins, judged against onnxruntime, is made by
//! scripts/contradictions.py (about 500 models of a few hundred bytes, written under the target directory: a few
//! seconds of onnxruntime, nothing fetched beyond the test venv).

use crate::common;
use crate::common::cli::run;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const MATMUL_CONCAT: &str = "fixtures/contradiction/matmul_concat.onnx";

#[test]
fn matmul_of_2x3_by_4x5_then_concat_is_one_error_naming_node_op_shapes_and_axis() {
    let r = run(&["check", "--no-config", MATMUL_CONCAT]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let findings: Vec<&str> = r.stdout.lines().filter(|l| l.contains("error[")).collect();
    assert_eq!(findings.len(), 1, "only the MatMul: the Concat reads what follows it\n{}", r.stdout);
    let f = findings[0];
    assert!(f.contains("error[shape-contradiction] main › mm (MatMul): "), "{f}");
    assert!(f.contains("A [2, 3] and B [4, 5]"), "{f}");
    assert!(f.contains("A has 3 on its axis 1 where B has 4 on its axis 0"), "{f}");
}

#[test]
fn shapes_marks_what_follows_a_contradiction_unknown() {
    let r = run(&["shapes", "--format", "json", MATMUL_CONCAT]);
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    let values = report["graphs"][0]["values"].as_array().unwrap();
    let get = |name: &str| values.iter().find(|v| v["name"] == name).unwrap_or_else(|| panic!("{name}"));
    for name in ["C", "E"] {
        assert_eq!(get(name)["shape"], Value::Null, "{name}");
        assert_eq!(get(name)["follows_contradiction"], true, "{name}");
    }
    // A value beside the contradiction keeps what is known of it.
    assert_eq!(get("F")["shape"], serde_json::json!([2, 7]));
    assert!(get("F").get("follows_contradiction").is_none());
    let text = run(&["shapes", MATMUL_CONCAT]).stdout;
    assert!(text.contains("  C: unknown, follows a contradiction"), "{text}");
    assert!(text.contains("what follows main › mm (MatMul) is unknown"), "{text}");
}

#[test]
fn infer_writes_no_shape_derived_through_a_contradiction() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("contradictions-infer");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out.onnx");
    let r = run(&["infer", MATMUL_CONCAT, out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let written = run(&["shapes", "--format", "json", out.to_str().unwrap()]);
    let report: Value = serde_json::from_str(&written.stdout).unwrap();
    // Read back, C and E are as unknown as before: nothing about them was written.
    for v in report["graphs"][0]["values"].as_array().unwrap() {
        if v["name"] == "C" || v["name"] == "E" {
            assert_eq!(v["shape"], Value::Null, "{v}");
        }
    }
    let model = onnx_bcast::onnx::model::Model::open(&out).unwrap();
    let graph = model.proto().graph.as_ref().unwrap();
    assert!(graph.value_info.iter().all(|vi| vi.name() != "C"), "no declaration of C");
    let e = graph.output.iter().find(|o| o.name() == "E").unwrap();
    let shape = e.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref());
    assert!(shape.is_none(), "E's declaration gets no shape: {e:?}");
}

#[test]
fn a_contradiction_in_a_branch_or_a_function_is_reported_there_and_followed_out_of_it() {
    let r = run(&["check", "--no-config", "fixtures/contradiction/branch_matmul.onnx"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error[shape-contradiction] main/if/then_branch › mm (MatMul): "), "{}", r.stdout);
    let shapes = run(&["shapes", "fixtures/contradiction/branch_matmul.onnx"]).stdout;
    for value in ["y", "z"] {
        assert!(shapes.contains(&format!("  {value}: unknown, follows a contradiction")), "{value}: {shapes}");
    }
    let r = run(&["check", "--no-config", "fixtures/contradiction/function_matmul.onnx"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout
            .contains("error[shape-contradiction] main › call (MatMul): in function local.F (node inner_mm): x [2, 3]"),
        "{}",
        r.stdout
    );
    let shapes = run(&["shapes", "fixtures/contradiction/function_matmul.onnx"]).stdout;
    assert!(shapes.contains("  E: unknown, follows a contradiction"), "{shapes}");
}

#[test]
fn a_symbolic_inner_size_is_a_condition_not_an_error() {
    let r = run(&["check", "--no-config", "fixtures/contradiction/matmul_symbolic.onnx"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stdout.contains("warning[conditional-shape] main › mm (MatMul): holds only if K = 768: "),
        "{}",
        r.stdout
    );
    // --strict is about broadcasts; the condition fails a run only when denied.
    let strict = run(&["check", "--no-config", "--strict", "fixtures/contradiction/matmul_symbolic.onnx"]);
    assert_eq!(strict.code, 0, "{}", strict.stdout);
    let denied =
        run(&["check", "--no-config", "--deny", "conditional-shape", "fixtures/contradiction/matmul_symbolic.onnx"]);
    assert_eq!(denied.code, 1, "{}", denied.stdout);
}

#[test]
fn reshape_minus_one_divides_exactly_or_says_when_it_does() {
    const RESHAPE: &str = "fixtures/contradiction/reshape_symbolic.onnx";
    let r = run(&["check", "--no-config", RESHAPE]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("holds only if 4 divides 6·N"), "{}", r.stdout);
    // With N = 5, 30 elements do not make rows of 4 (issue 25: it was `[4, 7]`, rounded down).
    let bound = run(&["check", "--no-config", "--bind", "N=5", RESHAPE]);
    assert_eq!(bound.code, 1, "{}", bound.stdout);
    assert!(bound.stdout.contains("error[inexact-division] main › reshape (Reshape): "), "{}", bound.stdout);
    assert!(bound.stdout.contains("4 does not divide 30"), "{}", bound.stdout);
    // With N = 6 it is exact: [4, 9], no finding.
    let exact = run(&["check", "--no-config", "--bind", "N=6", RESHAPE]);
    assert_eq!(exact.code, 0, "{}", exact.stdout);
    assert!(!exact.stdout.contains("reshape"), "{}", exact.stdout);
    let shapes = run(&["shapes", "--bind", "N=6", RESHAPE]).stdout;
    assert!(shapes.contains("  y: float [4, 9]"), "{shapes}");
    // Without a binding no size is written for the -1: a size nothing names.
    let shapes = run(&["shapes", RESHAPE]).stdout;
    assert!(shapes.contains("  y: float [4, ?"), "{shapes}");
}

/// A conditional-shape finding's conditions, typed in its JSON (`conditions`, one object per condition tagged by its
/// kind, as `rules::ConditionKind` has them); the message is unchanged and a certain finding has no such field.
#[test]
fn conditional_shape_findings_carry_their_conditions_typed_in_json() {
    let findings = |model: &str| -> Value {
        let r = run(&["check", "--no-config", "--format", "json", model]);
        let report: Value = serde_json::from_str(r.stdout.trim()).expect("one JSON object");
        report["findings"].clone()
    };
    let matmul = findings("fixtures/contradiction/matmul_symbolic.onnx");
    assert_eq!(
        matmul[0]["message"],
        "holds only if K = 768: A [N, K] and B [768, 64] (the inner sizes of the product are equal)"
    );
    assert_eq!(
        matmul[0]["conditions"],
        serde_json::json!([{"kind": "one_of", "axis": 1, "symbol": "K", "values": [768]}])
    );
    let reshape = findings("fixtures/contradiction/reshape_symbolic.onnx");
    assert_eq!(
        reshape[0]["conditions"],
        serde_json::json!([{"kind": "divides", "axis": 1, "divisor": 4, "divides": "6*N"}])
    );
    let certain = findings(MATMUL_CONCAT);
    assert_eq!(certain[0]["code"], "shape-contradiction");
    assert!(certain[0].get("conditions").is_none(), "{certain}");
}

#[test]
fn an_initializer_that_contradicts_its_input_is_an_error() {
    let r = run(&["check", "--no-config", "fixtures/contradiction/initializer_shape.onnx"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("error[initializer-mismatch] main: input 'x' is declared float [4, 3] where its initializer is float [8, 7]"),
        "{}",
        r.stdout
    );
}

/// scripts/contradictions.py: at least 200 contradictory static models, each with a valid twin; onnxruntime refuses
/// every model `check` flags and runs every model it does not.
#[test]
fn onnxruntime_refuses_every_flagged_model_and_runs_every_other() {
    let python = common::venv_python();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("contradictions");
    let _ = std::fs::remove_dir_all(&dir);
    let json = dir.with_extension("json");
    let out = std::process::Command::new(&python)
        .arg(root().join("scripts/contradictions.py"))
        .arg(env!("CARGO_BIN_EXE_onnx-bcast"))
        .arg(&dir)
        .arg(&json)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(out.status.success(), "scripts/contradictions.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    println!("{}", report["totals"]);
    let models = report["models"].as_array().unwrap();
    let bad = models.iter().filter(|m| m["kind"] == "bad").count();
    assert!(bad >= 200, "only {bad} contradictory models");
    let mut problems = Vec::new();
    for m in models {
        let (flagged, refused) = (m["flagged"] == true, m["refused"] == true);
        if m["checked"] != true {
            problems.push(format!("{}: check reported nothing", m["name"]));
        } else if flagged && !refused {
            problems.push(format!("{}: flagged ({}) but onnxruntime runs it", m["name"], m["messages"]));
        } else if !flagged && refused {
            problems.push(format!("{}: not flagged but onnxruntime refuses it: {}", m["name"], m["ort_error"]));
        } else if (m["kind"] == "bad") != flagged {
            problems.push(format!("{}: a {} model, flagged {flagged}", m["name"], m["kind"]));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n  {}", problems.len(), problems.join("\n  "));
}
