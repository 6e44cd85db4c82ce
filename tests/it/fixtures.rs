//! The broadcasting fixtures in `fixtures/` against `onnx-bcast check`.
//!
//! `fixtures/expected.json` (written by `fixtures/generate.py`) says, for every fixture, which node's site the
//! checker must report and what it must say about it. Each test below runs `onnx-bcast check --format json` on
//! the fixtures of one rule and compares the site on the named node field by field; every mismatch in a test is
//! collected and reported together.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn manifest() -> Vec<Value> {
    let path = root().join("fixtures/expected.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Array(entries)) => entries,
        other => panic!("{}: expected a JSON array, got {other:?}", path.display()),
    }
}

fn s<'a>(entry: &'a Value, key: &str) -> &'a str {
    entry[key].as_str().unwrap_or_else(|| panic!("manifest entry {entry}: `{key}` is not a string"))
}

/// Runs the binary from the crate root, so fixture paths are `fixtures/<file>`.
fn onnx_bcast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("cannot run onnx-bcast")
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The one JSON report line `check --format json` prints for one model.
fn report(out: &Output) -> Result<Value, String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() != 1 {
        return Err(format!("expected one JSON line for one model, got {}", lines.len()));
    }
    serde_json::from_str(lines[0]).map_err(|e| format!("stdout is not JSON: {e}"))
}

/// Checks one manifest entry; returns every mismatch found.
fn check_entry(entry: &Value) -> Vec<String> {
    let file = s(entry, "file");
    let path = format!("fixtures/{file}");
    let out = onnx_bcast(&["check", "--format", "json", &path]);
    let mut errors = Vec::new();
    let mut fail = |msg: String| errors.push(format!("{file}: {msg}"));

    let want_exit = entry["exit"].as_i64().expect("exit is an integer");
    if out.status.code().map(i64::from) != Some(want_exit) {
        fail(format!("expected exit {want_exit}\n{}", describe(&out)));
    }
    let report = match report(&out) {
        Ok(r) => r,
        Err(e) => {
            fail(format!("{e}\n{}", describe(&out)));
            return errors;
        }
    };
    match report["model"].as_str() {
        Some(m) if m.ends_with(file) => {}
        other => fail(format!("report's \"model\" is {other:?}, expected the path {path}")),
    }

    let verdict = s(entry, "verdict");
    let violations = report["summary"]["violations"].as_u64();
    let ok_count = if verdict == "violation" { violations.is_some_and(|v| v >= 1) } else { violations == Some(0) };
    if !ok_count {
        fail(format!("summary.violations is {violations:?} for a fixture whose verdict is {verdict}"));
    }

    let node = s(entry, "node");
    let graph = s(entry, "graph");
    let empty = Vec::new();
    let sites = report["sites"].as_array().unwrap_or(&empty);
    let on_node: Vec<&Value> = sites.iter().filter(|site| site["node"] == node).collect();
    let candidates: Vec<&Value> = if on_node.len() > 1 {
        on_node.iter().copied().filter(|site| site["graph"] == graph).collect()
    } else {
        on_node
    };
    let site = match candidates.as_slice() {
        [site] => *site,
        // "same" means no finding: a checker may leave out a node where nothing is broadcast (Gemm without C).
        [] if verdict == "same" => return errors,
        [] => {
            fail(format!("no site on node {node:?}; sites: {}", report["sites"]));
            return errors;
        }
        many => {
            fail(format!("{} sites on node {node:?} in graph {graph:?}: {many:?}", many.len()));
            return errors;
        }
    };

    for key in ["verdict", "rule", "code", "offending_input", "axis", "graph", "op", "output_shape"] {
        if key == "output_shape" && entry.get(key).is_none() {
            continue;
        }
        let got = site.get(key).unwrap_or(&Value::Null);
        if *got != entry[key] {
            fail(format!("node {node:?}: {key} is {got}, expected {}\nsite: {site}", entry[key]));
        }
    }
    if verdict == "violation" && site["message"].as_str().is_none_or(|m| m.is_empty()) {
        fail(format!("node {node:?}: a violation needs a message\nsite: {site}"));
    }
    if verdict == "conditional" && site["conditions"].as_array().is_none_or(|c| c.is_empty()) {
        fail(format!("node {node:?}: a conditional site needs its conditions\nsite: {site}"));
    }
    errors
}

/// Which test proves a fixture: every entry belongs to exactly one.
fn category(entry: &Value) -> &'static str {
    let file = s(entry, "file");
    if file.starts_with("symbolic_") {
        "symbolic"
    } else if file.contains("_dtype_") {
        "type-mismatch"
    } else if file.contains("_function_") {
        "function"
    } else if s(entry, "graph") != "main" {
        "subgraph"
    } else if file.contains("_zero_") {
        "size-zero"
    } else {
        match s(entry, "rule") {
            "multidirectional" => "multidirectional",
            "unidirectional" => "unidirectional",
            "legacy-axis" => "legacy-axis",
            "bidirectional" => "bidirectional",
            "none" => "none",
            other => panic!("{file}: unknown rule {other:?}"),
        }
    }
}

const CATEGORIES: &[&str] = &[
    "multidirectional",
    "unidirectional",
    "legacy-axis",
    "bidirectional",
    "none",
    "size-zero",
    "type-mismatch",
    "subgraph",
    "function",
    "symbolic",
];

fn check_category(name: &str) {
    let entries: Vec<Value> = manifest().into_iter().filter(|e| category(e) == name).collect();
    assert!(!entries.is_empty(), "no fixture in category {name}");
    let errors: Vec<String> = entries.iter().flat_map(check_entry).collect();
    assert!(
        errors.is_empty(),
        "{} problems in the {} {name} fixtures:\n\n{}",
        errors.len(),
        entries.len(),
        errors.join("\n\n")
    );
}

/// Add, Where, Sum-8, Max with 2 and 3 inputs: numpy broadcasting and SONNX constraint C1.
#[test]
fn multidirectional_broadcasting() {
    check_category("multidirectional");
}

/// Gemm's C to (M, N) (with transA/transB, scalar C, no C, Gemm-6 broadcast=1) and PRelu's slope to X.
#[test]
fn unidirectional_broadcasting() {
    check_category("unidirectional");
}

/// Opset < 7 broadcast=1 with axis: B is a run of A's dimensions from `axis`, trailing 1s dropped.
#[test]
fn legacy_axis_broadcasting() {
    check_category("legacy-axis");
}

/// Expand against a constant target shape (Constant node or initializer).
#[test]
fn bidirectional_broadcasting() {
    check_category("bidirectional");
}

/// Sum-6, Add-6 without broadcast, Gemm-6 without broadcast: shapes must be equal.
#[test]
fn rule_none_requires_equal_shapes() {
    check_category("none");
}

/// 0 with 1 gives 0, 0 with 3 is a violation (numpy, not max()).
#[test]
fn size_zero_follows_numpy() {
    check_category("size-zero");
}

/// Add float + double, Where int32 / int64.
#[test]
fn element_type_mismatch() {
    check_category("type-mismatch");
}

/// Sites inside If and Loop bodies, on outer-scope values.
#[test]
fn subgraph_sites() {
    check_category("subgraph");
}

/// A site inside a model-local function is reported at the calling node.
#[test]
fn function_sites_reported_at_call() {
    check_category("function");
}

/// Symbolic dimensions give conditional or same verdicts, never violations.
#[test]
fn symbolic_dimensions_are_conditional() {
    check_category("symbolic");
}

/// `check --strict` fails on any implicit broadcast or conditional site, and passes where shapes are the same
/// or the broadcast is an explicit `Expand`.
#[test]
fn strict_fails_on_implicit_broadcast() {
    let mut errors = Vec::new();
    let mut checked = 0;
    for entry in manifest() {
        let file = s(&entry, "file");
        if !(file.ends_with("_ok.onnx") || file.starts_with("symbolic_")) {
            continue;
        }
        // Expand is the explicit form of a broadcast: strict mode accepts it unless it is conditional.
        let explicit = s(&entry, "rule") == "bidirectional";
        let want = match s(&entry, "verdict") {
            "broadcast" if explicit => 0,
            "broadcast" | "conditional" => 1,
            "same" => 0,
            _ => continue,
        };
        checked += 1;
        let out = onnx_bcast(&["check", "--strict", &format!("fixtures/{file}")]);
        if out.status.code() != Some(want) {
            errors.push(format!("{file}: check --strict: expected exit {want}\n{}", describe(&out)));
        }
    }
    assert!(checked > 0);
    assert!(errors.is_empty(), "{} wrong:\n\n{}", errors.len(), errors.join("\n\n"));
}

/// The manifest and the fixture directory agree, every violation has its valid twin, every fixture is tiny,
/// and every entry is proved by one of the tests above.
#[test]
fn manifest_matches_fixture_directory() {
    let dir = root().join("fixtures");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".onnx"))
        .collect();
    let entries = manifest();
    let listed: BTreeSet<String> = entries.iter().map(|e| s(e, "file").to_string()).collect();
    assert_eq!(listed.len(), entries.len(), "a fixture is listed twice");
    assert_eq!(on_disk, listed, "fixtures/*.onnx and fixtures/expected.json disagree");
    for entry in &entries {
        let file = s(entry, "file");
        assert!(CATEGORIES.contains(&category(entry)));
        let size = std::fs::metadata(Path::new(&dir).join(file)).unwrap().len();
        assert!(size < 10 * 1024, "{file}: {size} bytes");
        let verdict = s(entry, "verdict");
        assert!(["violation", "broadcast", "same", "conditional"].contains(&verdict), "{file}: {verdict}");
        assert_eq!(entry["exit"], i64::from(verdict == "violation"), "{file}: exit");
        let code = match verdict {
            "violation" if entry["code"] == "type-mismatch" => "type-mismatch",
            "violation" => "broadcast-violation",
            "conditional" => "conditional-broadcast",
            _ => "",
        };
        if code.is_empty() {
            assert!(entry["code"].is_null(), "{file}: code");
        } else {
            assert_eq!(entry["code"], code, "{file}: code");
        }
        if let Some(stem) = file.strip_suffix("_bad.onnx") {
            assert_eq!(verdict, "violation", "{file}");
            assert!(listed.contains(&format!("{stem}_ok.onnx")), "{file} has no valid twin");
        } else if file.ends_with("_ok.onnx") {
            assert_ne!(verdict, "violation", "{file}");
        } else {
            assert!(file.starts_with("symbolic_"), "{file}: neither _bad, _ok nor symbolic_");
            assert_ne!(verdict, "violation", "{file}");
        }
    }
}
