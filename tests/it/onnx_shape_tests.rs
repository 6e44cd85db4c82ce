//! ONNX's own shape-inference unit tests (`shape_inference_test.py`, `data_propagation_test.py`,
//! `symbolic_shape_test.py` of the pinned onnx sdist, fetched by `scripts/onnx_tests.sh`) as conformance tests for
//! `onnx-bcast shapes`: `scripts/onnx_shape_tests.py` runs them, captures each model with what the test expects
//! inference to produce, and judges `shapes --format json` on it, as the tests build the model and with its
//! initializers read as constants. Never skips: when the tests cannot be fetched, this fails with the reason.
//!
//! Asserted: no wrong value and no crash in either set, the share of expected values inferred as precisely as the
//! test expects above its floor, and `check`'s findings on the models inference must reject at least their floor;
//! every such model classified by why it is rejected (scripts/onnx_reject_classes.py, with no entry left over), and
//! a finding on every one of the in-scope classes: a broadcast, a shape contradiction or a rank (issue 26).
//! The figures go to `<target>/tmp/onnx-shape-tests.md` (and stdout with --nocapture).

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Floors of the figures (the measured ones are in the report and the figures file).
const PRECISE_AS_BUILT: f64 = 0.87;
const PRECISE_CONSTANTS: f64 = 0.98;
const REJECTED_WITH_FINDING: u64 = 148;

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or_else(|| panic!("no count {key} in the report"))
}

#[test]
fn onnx_shape_inference_tests_get_no_wrong_value_no_crash_and_their_precision_floor() {
    let dir = common::fetched_dir("scripts/onnx_tests.sh", "ONNX's shape-inference tests");
    let python = dir.join("venv").join("bin").join("python");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let (report_path, figures) = (tmp.join("onnx-shape-tests.json"), tmp.join("onnx-shape-tests.md"));
    let out = Command::new(&python)
        .arg(common::repo_root().join("scripts").join("onnx_shape_tests.py"))
        .arg(env!("CARGO_BIN_EXE_onnx-bcast"))
        .arg(&dir)
        .arg(&report_path)
        .arg("--workdir")
        .arg(tmp.join("onnx-shape-tests"))
        .arg("--figures")
        .arg(&figures)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scripts/onnx_shape_tests.py failed ({}):\n{stderr}", out.status);
    println!("{}", String::from_utf8_lossy(&out.stdout));
    let text = std::fs::read_to_string(&report_path).expect("the script wrote its report");
    let report: Value = serde_json::from_str(&text).expect("the report is JSON");

    let mut problems = Vec::new();
    for (set, floor) in [("as_built", PRECISE_AS_BUILT), ("constants", PRECISE_CONSTANTS)] {
        let s = &report["sets"][set];
        assert!(n(s, "models") >= 850, "{set}: only {} models captured", n(s, "models"));
        assert!(n(s, "values") >= 1100, "{set}: only {} expected values captured", n(s, "values"));
        for key in ["crash_list", "refused_list"] {
            for c in s[key].as_array().expect("a list") {
                problems.push(format!("{set}: {key}: {} {}", c["test"], c["error"]));
            }
        }
        for w in s["wrong_values"].as_array().expect("a list") {
            let (test, value) = (w["test"].as_str().unwrap_or("?"), w["value"].as_str().unwrap_or("?"));
            problems.push(format!("{set}: wrong value {value} in {test} ({}): {}", w["op"], w["why"]));
        }
        let share = s["precise_share"].as_f64().expect("a share");
        if share < floor {
            problems.push(format!(
                "{set}: {:.1}% of expected values precise, floor {:.1}%",
                share * 100.0,
                floor * 100.0
            ));
        }
    }
    let rejected = &report["rejected"];
    for c in rejected["crash_list"].as_array().expect("a list") {
        problems.push(format!("check crashed on a model inference must reject: {} {}", c["test"], c["error"]));
    }
    assert!(n(rejected, "models") >= 150, "only {} models inference must reject", n(rejected, "models"));
    if n(rejected, "with_finding") < REJECTED_WITH_FINDING {
        problems.push(format!(
            "check finds something in {} of the {} models inference must reject, floor {REJECTED_WITH_FINDING}",
            n(rejected, "with_finding"),
            n(rejected, "models")
        ));
    }
    for e in rejected["in_scope_without_finding"].as_array().expect("a list") {
        problems.push(format!("no finding from check ({}): {} {}", e["reason"], e["test"], e["error"]));
    }
    for t in rejected["unclassified"].as_array().expect("a list") {
        problems.push(format!("not in scripts/onnx_reject_classes.py: {t}"));
    }
    for t in rejected["stale"].as_array().expect("a list") {
        problems.push(format!("scripts/onnx_reject_classes.py classifies {t}, which rejects no model"));
    }
    let in_scope = rejected["classes"].as_object().expect("the classes").values().filter(|c| c["in_scope"] == true);
    assert!(in_scope.map(|c| n(c, "models")).sum::<u64>() >= 60, "fewer in-scope models than classified");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The domains whose every operator, at every version the pinned onnx defines, has inference.
const COVERED_DOMAINS: [&str; 4] = ["", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview"];

/// Every operator schema the pinned onnx knows (`onnx.defs.get_all_schemas_with_history()`) in the covered domains,
/// at each of its versions, has a rule: a broadcasting op's, or an inference rule of `onnx_bcast::infer`.
#[test]
fn every_operator_of_the_pinned_onnx_has_inference_at_every_version() {
    let dir = common::fetched_dir("scripts/onnx_tests.sh", "ONNX's shape-inference tests");
    let python = dir.join("venv").join("bin").join("python");
    let list = "import json, onnx.defs as d\n\
                print(json.dumps(sorted({(s.domain, s.name, s.since_version) for s in d.get_all_schemas_with_history()})))";
    let out = Command::new(&python).args(["-c", list]).output().expect("the venv's python runs");
    assert!(out.status.success(), "listing the schemas failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let schemas: Vec<(String, String, i64)> = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let covered: Vec<&(String, String, i64)> =
        schemas.iter().filter(|(d, _, _)| COVERED_DOMAINS.contains(&d.as_str())).collect();
    let newest = covered.iter().filter(|(d, _, _)| d.is_empty()).map(|s| s.2).max().unwrap_or(0);
    assert!(newest >= 28 && covered.len() >= 400, "{} schemas up to opset {newest}", covered.len());
    let missing: Vec<String> = covered
        .iter()
        .filter(|(domain, op, version)| !onnx_bcast::infer::has_rule(domain, op, *version))
        .map(|(domain, op, version)| format!("{domain}{}{op}-{version}", if domain.is_empty() { "" } else { "." }))
        .collect();
    assert!(missing.is_empty(), "{} operator versions without inference: {}", missing.len(), missing.join(", "));
}
