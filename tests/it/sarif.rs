//! `onnx-bcast check --format sarif`: the log validates against the SARIF 2.1.0 JSON schema (vendored in
//! tests/data/, see its README for the source and license), every violation fixture has an error-level result at its
//! node, and every result's rule is declared by the driver.

use crate::common::cli::{run_in, Run};
use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("tests/data/sarif-schema-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::options().should_validate_formats(true).build(&schema).expect("the SARIF schema compiles")
}

/// Validates against the schema and the checks the schema cannot make: rule ids declared, indices consistent.
fn assert_valid(log: &Value) {
    let errors: Vec<String> = validator().iter_errors(log).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "the SARIF log breaks the 2.1.0 schema:\n{}", errors.join("\n"));
    let run = &log["runs"][0];
    assert_eq!(log["runs"].as_array().unwrap().len(), 1, "one run");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for code in onnx_bcast::diagnostic::Code::ALL {
        assert!(ids.contains(&code.as_str()), "rule {code} is declared");
    }
    for rule in rules {
        assert!(rule.get("helpUri").is_none(), "no helpUri");
        assert!(!rule["help"]["text"].as_str().unwrap().is_empty());
    }
    let artifacts = run["artifacts"].as_array().unwrap();
    for result in run["results"].as_array().unwrap() {
        let id = result["ruleId"].as_str().unwrap();
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(ids.get(index), Some(&id), "ruleIndex points at the rule {id}");
        let location = &result["locations"][0];
        let artifact = &location["physicalLocation"]["artifactLocation"];
        assert_eq!(location["physicalLocation"].as_object().unwrap().len(), 1, "artifactLocation only, no region");
        let artifact_index = artifact["index"].as_u64().unwrap() as usize;
        assert_eq!(artifacts[artifact_index]["location"]["uri"], artifact["uri"]);
        assert!(!location["logicalLocations"].as_array().unwrap().is_empty());
    }
}

fn sarif(dir: &Path, args: &[&str]) -> (Run, Value) {
    let r = run_in(dir, args);
    let log: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.stdout));
    (r, log)
}

/// The fixtures whose expected verdict is a violation: (file, code, graph, node).
fn violation_fixtures() -> Vec<(String, String, String, String)> {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("fixtures/expected.json")).unwrap()).unwrap();
    expected
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["verdict"] == "violation")
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            (s("file"), s("code"), s("graph"), s("node"))
        })
        .collect()
}

/// A folder of violation fixtures (half of them one level down): one error result per violation, at its node.
#[test]
fn violations_folder_validates_with_an_error_per_violation() {
    let fixtures = violation_fixtures();
    assert!(fixtures.len() >= 10, "expected.json lists the violation fixtures");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("violations");
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    let mut placed = Vec::new();
    for (i, (file, ..)) in fixtures.iter().enumerate() {
        let rel = if i % 2 == 0 { file.clone() } else { format!("nested/{file}") };
        std::fs::copy(root().join("fixtures").join(file), dir.join(&rel)).unwrap();
        placed.push(format!("violations/{rel}"));
    }
    let (r, log) = sarif(tmp.path(), &["check", "--format", "sarif", "violations"]);
    assert_eq!(r.code, 1, "violations fail the run\n{}", r.stderr);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    assert_valid(&log);

    let run = &log["runs"][0];
    let mut artifacts: Vec<&str> =
        run["artifacts"].as_array().unwrap().iter().map(|a| a["location"]["uri"].as_str().unwrap()).collect();
    let mut sorted = artifacts.clone();
    sorted.sort();
    assert_eq!(artifacts, sorted, "a folder's models in path order");
    artifacts.sort();
    placed.sort();
    assert_eq!(artifacts, placed, "every model is an artifact, by relative URI");
    assert_eq!(run["invocations"][0]["executionSuccessful"], true);

    let results = run["results"].as_array().unwrap();
    for ((file, code, graph, node), uri) in fixtures.iter().zip(fixtures.iter().enumerate().map(|(i, (f, ..))| {
        if i % 2 == 0 {
            format!("violations/{f}")
        } else {
            format!("violations/nested/{f}")
        }
    })) {
        let hit = results.iter().find(|res| {
            res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == uri.as_str()
                && res["ruleId"] == code.as_str()
        });
        let hit = hit.unwrap_or_else(|| panic!("{file}: no {code} result"));
        assert_eq!(hit["level"], "error", "{file}");
        let logical = &hit["locations"][0]["logicalLocations"][0];
        assert_eq!(logical["fullyQualifiedName"], format!("{graph}/{node}"), "{file}");
        assert_eq!(logical["name"], node.as_str(), "{file}");
        assert!(hit["message"]["text"].as_str().unwrap().starts_with(&format!("{graph} › {node} (")), "{file}");
    }
}

/// Warnings are `warning` results, rule selection changes levels, and a model that cannot be read is an error
/// notification of an unsuccessful invocation; the log still validates and stays one run.
#[test]
fn levels_selection_and_failures() {
    let (r, log) = sarif(
        &root(),
        &[
            "check",
            "--format",
            "sarif",
            "--warn",
            "broadcast-violation",
            "fixtures/symbolic_batch.onnx",
            "fixtures/multidirectional_add_bad.onnx",
            "fixtures/does_not_exist.onnx",
            "fixtures/malformed/empty.onnx",
        ],
    );
    assert_eq!(r.code, 2, "unreadable models win");
    assert_valid(&log);
    let run = &log["runs"][0];
    let levels: Vec<(&str, &str)> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|res| (res["ruleId"].as_str().unwrap(), res["level"].as_str().unwrap()))
        .collect();
    assert_eq!(levels, [("conditional-broadcast", "warning"), ("broadcast-violation", "warning")]);
    let invocation = &run["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    let notes = invocation["toolExecutionNotifications"].as_array().unwrap();
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[0]["level"], "error");
    assert_eq!(notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "fixtures/does_not_exist.onnx");
    assert_eq!(run["artifacts"].as_array().unwrap().len(), 4);
    assert!(r.stderr.contains("does_not_exist.onnx"), "failures also go to stderr");
}

/// The whole log of one model, as a reviewable snapshot.
#[test]
fn snapshot() {
    let (r, log) = sarif(&root(), &["check", "--format", "sarif", "fixtures/multidirectional_add_bad.onnx"]);
    assert_eq!(r.code, 1);
    assert_valid(&log);
    // The version changes with every release and the rules with every new code: the snapshot keeps the rest.
    let mut log = log;
    let driver = &mut log["runs"][0]["tool"]["driver"];
    driver["version"] = "[version]".into();
    driver["semanticVersion"] = "[version]".into();
    let first_rule = driver["rules"][0].clone();
    driver["rules"] = serde_json::json!([first_rule, "[one rule per code]"]);
    insta::assert_json_snapshot!("sarif_violation", log);
}

/// Paths that are not plain ASCII are percent-encoded in URIs, and absolute paths become file:// URIs.
#[test]
fn uris() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(root().join("fixtures/multidirectional_add_bad.onnx"), tmp.path().join("my model #1.onnx")).unwrap();
    let (_, log) = sarif(tmp.path(), &["check", "--format", "sarif", "."]);
    assert_valid(&log);
    assert_eq!(log["runs"][0]["artifacts"][0]["location"]["uri"], "my%20model%20%231.onnx");
    let absolute = tmp.path().join("my model #1.onnx");
    let (_, log) = sarif(tmp.path(), &["check", "--format", "sarif", absolute.to_str().unwrap()]);
    assert_valid(&log);
    let uri = log["runs"][0]["artifacts"][0]["location"]["uri"].as_str().unwrap().to_string();
    assert!(uri.starts_with("file:///") && uri.ends_with("/my%20model%20%231.onnx"), "{uri}");
}
