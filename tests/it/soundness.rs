//! Soundness of shape inference: every shape `onnx-bcast shapes` infers agrees with the shapes onnxruntime computes when the
//! model runs with concrete input sizes. `scripts/soundness.py` does the work (see its docstring) over three sets:
//! the real-model corpus (`corpus/fetch.sh`), ~30 seeded generated models, and the ONNX backend tests that run in
//! onnxruntime. Every value of the main graph is exposed as an output and run with graph optimisations off; known
//! dims must match, symbols must bind consistently, expressions must evaluate to the actual size. Unknown dims and
//! ranks make no claim and are only counted.
//!
//! Nothing skips: if the venv, the backend data or the corpus cannot be had, the test fails. Any mismatch (a
//! soundness bug) fails it. The figures are printed and written to `target/soundness-summary.txt`.

use crate::common;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// Fewer than these means a set did not come out whole.
const MIN_CORPUS: u64 = 30;
const GENERATED: u64 = 30;
const MIN_BACKEND: u64 = 1500;

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn figures_line(name: &str, st: &Value) -> String {
    format!(
        "{name:<10} {:>6} models  {:>6} values compared ({} with a known rank)  {:>6} claims checked \
         (known {}, symbol {}, expression {})  {} symbol bindings  {} unknown dims skipped  \
         {} unknown ranks skipped  {} unchecked  {} not exposed  {} type mismatches  {} MISMATCHES",
        n(st, "models"),
        n(st, "values"),
        n(st, "values_ranked"),
        n(st, "claims"),
        n(st, "claims_known"),
        n(st, "claims_symbol"),
        n(st, "claims_expr"),
        n(st, "bindings"),
        n(st, "unknown_dims"),
        n(st, "unknown_ranks"),
        n(st, "unchecked"),
        n(st, "not_exposed"),
        n(st, "type_mismatches"),
        n(st, "mismatches"),
    )
}

#[test]
fn inferred_shapes_agree_with_onnxruntime() {
    let python = common::venv_python();
    let data = common::backend_data_dir();
    let corpus = common::corpus_dir();
    let bin = env!("CARGO_BIN_EXE_onnx-bcast");
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let out_json = tmp.join("soundness.json");
    let _ = std::fs::remove_file(&out_json);
    let script = common::repo_root().join("scripts").join("soundness.py");

    let out = Command::new(&python)
        .arg(&script)
        .arg(bin)
        .arg(&out_json)
        .arg("--corpus")
        .arg(&corpus)
        .arg("--backend")
        .arg(&data)
        .arg("--generated")
        .arg(GENERATED.to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "scripts/soundness.py failed ({}):\n{stdout}\n--- stderr ---\n{stderr}", out.status);

    let text = std::fs::read_to_string(&out_json).unwrap_or_else(|e| panic!("cannot read {}: {e}", out_json.display()));
    let report: Value = serde_json::from_str(&text).expect("soundness.json is not JSON");

    let mut summary = String::new();
    writeln!(summary, "onnx-bcast soundness against onnxruntime (scripts/soundness.py, {} s)", report["seconds"])
        .unwrap();
    for set in ["corpus", "generated", "backend"] {
        writeln!(summary, "{}", figures_line(set, &report["sets"][set]["stats"])).unwrap();
    }
    writeln!(summary, "{}", figures_line("total", &report["totals"])).unwrap();
    let backend = &report["sets"]["backend"];
    writeln!(
        summary,
        "backend: {} tests, {} left out because onnxruntime cannot run them as shipped; generated: {} rejected by \
         the generator (onnxruntime refused the drawn model)",
        backend["tests"],
        backend["excluded_count"],
        report["sets"]["generated"]["rejected_by_generator"].as_array().map_or(0, Vec::len)
    )
    .unwrap();
    let mismatches = report["mismatches"].as_array().cloned().unwrap_or_default();
    let type_mismatches = report["type_mismatches"].as_array().cloned().unwrap_or_default();
    let errors = report["errors"].as_array().cloned().unwrap_or_default();
    for m in mismatches.iter().take(60) {
        writeln!(
            summary,
            "MISMATCH [{}] {}: {}: inferred {}, actual {}: {}",
            m["set"].as_str().unwrap_or("?"),
            m["model"].as_str().unwrap_or("?"),
            m["value"].as_str().unwrap_or("?"),
            m["inferred"],
            m["actual"],
            m["why"].as_str().unwrap_or("?")
        )
        .unwrap();
    }
    if mismatches.len() > 60 {
        writeln!(summary, "... {} more mismatches in {}", mismatches.len() - 60, out_json.display()).unwrap();
    }
    for m in type_mismatches.iter().take(30) {
        writeln!(
            summary,
            "TYPE MISMATCH [{}] {}: {}: inferred {}, actual {}",
            m["set"].as_str().unwrap_or("?"),
            m["model"].as_str().unwrap_or("?"),
            m["value"].as_str().unwrap_or("?"),
            m["inferred"],
            m["actual"]
        )
        .unwrap();
    }
    for e in errors.iter().take(30) {
        writeln!(summary, "ERROR {}", e.as_str().unwrap_or("?").lines().next().unwrap_or("")).unwrap();
    }
    println!("{summary}");
    let target = tmp.parent().map(PathBuf::from).unwrap_or(tmp.clone());
    let summary_path = target.join("soundness-summary.txt");
    std::fs::write(&summary_path, &summary).unwrap_or_else(|e| panic!("cannot write {}: {e}", summary_path.display()));

    // Every set came out whole and claims were actually checked.
    let mut problems: Vec<String> = Vec::new();
    let sets = &report["sets"];
    if n(&sets["corpus"]["stats"], "models") < MIN_CORPUS {
        problems.push(format!(
            "only {} corpus models compared (expected at least {MIN_CORPUS})",
            sets["corpus"]["stats"]["models"]
        ));
    }
    if n(&sets["generated"]["stats"], "models") < GENERATED {
        problems.push(format!(
            "only {} generated models compared (expected {GENERATED})",
            sets["generated"]["stats"]["models"]
        ));
    }
    if n(&sets["backend"]["stats"], "models") < MIN_BACKEND {
        problems.push(format!(
            "only {} backend tests compared (expected at least {MIN_BACKEND})",
            sets["backend"]["stats"]["models"]
        ));
    }
    for set in ["corpus", "generated", "backend"] {
        if n(&sets[set]["stats"], "claims") == 0 {
            problems.push(format!("{set}: no claim was checked"));
        }
    }
    if !errors.is_empty() {
        problems.push(format!("{} model(s) could not be studied (see ERROR lines)", errors.len()));
    }
    if !type_mismatches.is_empty() {
        problems.push(format!("{} inferred element type(s) differ from onnxruntime's", type_mismatches.len()));
    }
    if !mismatches.is_empty() {
        problems.push(format!(
            "{} inferred shape(s) disagree with onnxruntime: soundness bugs (see MISMATCH lines)",
            mismatches.len()
        ));
    }
    assert!(problems.is_empty(), "soundness check failed:\n  {}\n\n{summary}", problems.join("\n  "));
}
