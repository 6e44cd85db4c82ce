//! `onnx-bcast expand` against the ONNX backend test data, judged by real runtimes.
//!
//! Runs `scripts/expand_conformance.py` with the venv's Python (one process for the whole suite) and asserts:
//!
//! 1. every node test with a broadcasting op whose ORIGINAL model passes in onnxruntime also passes once rewritten;
//! 2. `onnx.checker.check_model(full_check=True)` accepts every rewritten node model;
//! 3. `onnx-bcast check --strict` exits 0 on every rewritten node model (when expand exited 0);
//! 4. a second `expand` of a rewritten node model is byte-identical;
//! 5. pytorch-converted/ and pytorch-operator/ (opset 6, legacy `broadcast=1`): the rewritten models compute the
//!    expected outputs in onnx's ReferenceEvaluator (primary), agree with the original on fresh random inputs there
//!    (the stored data of the add tests is uninitialized memory), and, as a cross-check, compute them after
//!    version_converter to opset 13 in onnxruntime; a model whose ORIGINAL fails in an evaluator is that
//!    evaluator's exclusion, listed with its error in the summary (the script's docstring explains each);
//! 6. `expand --materialize-constants` keeps the node tests' outputs too.
//!
//! Never skips: without the venv or the data the test fails with the reason. The figures are printed (run with
//! --nocapture) and written to `<target>/expand-conformance-summary.txt`; the full JSON report, with per-test
//! details, to `<target>/expand-conformance-report.json`; the rewritten models stay under
//! `<target>/tmp/expand-conformance/` for inspection.

use crate::common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn target_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is <target dir>/tmp.
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).to_path_buf()
}

fn num(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for key in path {
        cur = cur.get(*key).unwrap_or_else(|| panic!("report has no {}", path.join(".")));
    }
    cur.as_u64().unwrap_or_else(|| panic!("report's {} is not a count: {cur}", path.join(".")))
}

fn list<'a>(v: &'a Value, path: &[&str]) -> &'a Vec<Value> {
    let mut cur = v;
    for key in path {
        cur = cur.get(*key).unwrap_or_else(|| panic!("report has no {}", path.join(".")));
    }
    cur.as_array().unwrap_or_else(|| panic!("report's {} is not a list", path.join(".")))
}

fn entries(items: &[Value]) -> String {
    items
        .iter()
        .map(|it| {
            let mut line = format!(
                "    {}: {}",
                it.get("test").and_then(Value::as_str).unwrap_or("?"),
                it.get("reason").and_then(Value::as_str).unwrap_or("?")
            );
            if let Some(sites) = it.get("sites").and_then(Value::as_array) {
                for s in sites.iter().take(4) {
                    let _ = write!(line, "\n        {}", s.as_str().unwrap_or("?"));
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn expand_keeps_backend_models_running_and_valid() {
    let data = common::backend_data_dir();
    let python = common::venv_python();
    let bin = env!("CARGO_BIN_EXE_onnx-bcast");
    let script = common::repo_root().join("scripts").join("expand_conformance.py");
    let target = target_dir();
    let report_path = target.join("expand-conformance-report.json");
    let summary_path = target.join("expand-conformance-summary.txt");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("expand-conformance");
    let _ = std::fs::remove_file(&report_path);

    let out = Command::new(&python)
        .arg(&script)
        .arg(bin)
        .arg(&data)
        .arg("--report")
        .arg(&report_path)
        .arg("--workdir")
        .arg(&work)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", python.display(), script.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} failed ({}); it must run to the end whatever the rewrite does.\n--- stderr ---\n{stderr}",
        script.display(),
        out.status
    );
    let text = std::fs::read_to_string(&report_path)
        .unwrap_or_else(|e| panic!("{} wrote no report at {}: {e}", script.display(), report_path.display()));
    let report: Value = serde_json::from_str(&text).expect("the report is JSON");
    let summary = report["summary_text"].as_str().expect("the report has a summary_text").to_string();

    let node = &report["node"];
    let torch = &report["pytorch"];
    let nf = |k: &str| list(node, &["failures", k]);
    let pf = |k: &str| list(torch, &["failures", k]);

    // Each acceptance point: its name and its failures. Sanity bounds on the figures guard against a suite that
    // passes by running nothing.
    let mut checks: Vec<(String, Vec<Value>)> = Vec::new();
    let mut sanity: Vec<String> = Vec::new();
    let mut bound = |ok: bool, what: String| {
        if !ok {
            sanity.push(what);
        }
    };
    let with_op = num(node, &["figures", "tests_with_broadcast_op"]);
    let orig_ok = num(node, &["figures", "original_passes_ort"]);
    bound(with_op >= 450, format!("only {with_op} node tests with a broadcasting op (expected about 500)"));
    bound(orig_ok >= 400, format!("only {orig_ok} originals pass in onnxruntime (expected about 480)"));
    bound(
        num(node, &["figures", "expand_exit", "2"]) == 0,
        format!("expand failed (exit 2) on {} node tests", num(node, &["figures", "expand_exit", "2"])),
    );
    bound(
        num(node, &["figures", "models_made_explicit"]) >= 100,
        "expand made hardly any node test explicit".to_string(),
    );
    bound(
        num(torch, &["figures", "models_made_explicit"]) >= 10,
        "expand made hardly any pytorch model explicit".to_string(),
    );
    bound(
        num(torch, &["figures", "reference_differential_checked"]) >= 10,
        "hardly any rewritten pytorch model was compared with its original on fresh inputs".to_string(),
    );
    bound(
        num(torch, &["figures", "reference_rewritten_checked"]) >= 100,
        "ReferenceEvaluator checked hardly any rewritten pytorch model".to_string(),
    );
    bound(
        num(node, &["figures", "rewritten_passes_ort"]) + nf("ort").len() as u64 == orig_ok,
        "every passing original must have its rewrite judged".to_string(),
    );

    checks.push(("[1] rewritten node model fails in onnxruntime where the original passes".into(), nf("ort").clone()));
    checks.push(("[2] onnx.checker (full_check) rejects the rewritten node model".into(), nf("checker").clone()));
    checks.push(("[3] check --strict fails on the rewritten node model".into(), nf("strict").clone()));
    checks.push(("[4] a second expand changes the rewritten node model".into(), nf("idempotence").clone()));
    checks.push(("[5] ReferenceEvaluator: rewritten pytorch model differs".into(), pf("reference").clone()));
    checks.push((
        "[5] ReferenceEvaluator on fresh inputs: rewritten pytorch model differs from the original".into(),
        pf("reference_differential").clone(),
    ));
    checks.push((
        "[5] version_converter+onnxruntime: rewritten pytorch model differs".into(),
        pf("converted_ort").clone(),
    ));
    checks.push(("[5] expand left sites or failed on a pytorch model".into(), pf("expand").clone()));
    checks.push(("[6] --materialize-constants model differs in onnxruntime".into(), nf("materialize").clone()));

    let mut verdict = String::from("\nacceptance:\n");
    for (name, failures) in &checks {
        let _ = writeln!(
            verdict,
            "  {} {name}: {} failures",
            if failures.is_empty() { "ok  " } else { "FAIL" },
            failures.len()
        );
    }
    for s in &sanity {
        let _ = writeln!(verdict, "  FAIL sanity: {s}");
    }
    let full = format!("{summary}{verdict}");
    std::fs::write(&summary_path, &full).unwrap_or_else(|e| panic!("cannot write {}: {e}", summary_path.display()));
    println!("{full}");
    println!("summary: {}\nreport: {}", summary_path.display(), report_path.display());

    let mut message = String::new();
    for (name, failures) in &checks {
        if !failures.is_empty() {
            let shown: Vec<Value> = failures.iter().take(15).cloned().collect();
            let _ = writeln!(message, "{name}: {} failures\n{}", failures.len(), entries(&shown));
            if failures.len() > shown.len() {
                let _ = writeln!(
                    message,
                    "    ... and {} more (see {})",
                    failures.len() - shown.len(),
                    summary_path.display()
                );
            }
        }
    }
    for s in &sanity {
        let _ = writeln!(message, "sanity: {s}");
    }
    assert!(message.is_empty(), "expand conformance failed:\n{message}");
}
