//! What onnxruntime's contrib ops require of their inputs' sizes reaches `check` as the standard ops' requirements
//! do (issue 27, soundness on the deployment corpus): GroupQueryAttention as onnxruntime-genai writes it
//! (`fixtures/contrib/group_query_attention_*.onnx`, from `fixtures/contrib/generate.py`) needs its caches' last dim
//! to be the head size (16) and its lengths consistent, which no declared shape says. The conditions are a
//! `conditional-shape` warning; over `--range` they are proven, fail at their smallest sizes (an error, a witness,
//! kept out of `--safe-ranges`) or stay unproven; a binding that breaks them is a `shape-contradiction`. Each claim
//! is run in onnxruntime: the witnesses fail, sizes inside a proven range run.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value as Json;

/// Past and new tokens in a mask-given total (T from the attention mask, as the genai builder writes it).
const CACHE: &str = "fixtures/contrib/group_query_attention_cache.onnx";
/// T computed as P + S from the shapes: a cache that grows by the new tokens.
const GROWN: &str = "fixtures/contrib/group_query_attention_grown.onnx";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("contrib-requirements").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `onnx-bcast check --format json MODEL ARGS` from the crate root: exit status and the model's report.
fn check(model: &str, args: &[&str]) -> (i32, Json) {
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .args(["check", "--no-config", "--format", "json", model])
        .args(args)
        .current_dir(root())
        .timeout(Duration::from_secs(120))
        .output()
        .expect("onnx-bcast runs");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let report = serde_json::from_str(stdout.lines().next().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout} {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().expect("exit code"), report)
}

/// The findings of `code`, as (severity, message).
fn findings(report: &Json, code: &str) -> Vec<(String, String)> {
    let all = report["findings"].as_array().unwrap();
    let of = all.iter().filter(|f| f["code"] == code);
    of.map(|f| (f["severity"].as_str().unwrap().to_string(), f["message"].as_str().unwrap().to_string())).collect()
}

fn ranges(pairs: &[&str]) -> Vec<String> {
    pairs.iter().flat_map(|p| ["--range".to_string(), p.to_string()]).collect()
}

#[test]
fn group_query_attention_states_the_cache_head_size_and_the_lengths_it_requires() {
    let (code, report) = check(CACHE, &[]);
    assert_eq!(code, 0, "a condition is a warning: {report}");
    let found = findings(&report, "conditional-shape");
    assert_eq!(found.len(), 1, "one finding for the node's conditions: {report}");
    let (severity, message) = &found[0];
    assert_eq!(severity, "warning");
    for part in ["kv_cache_dim = 16", "(seq ∈ {1, total} or batch = 1)", "(total = past + seq or total ≤ past)"] {
        assert!(message.contains(part), "{part} in {message}");
    }
    assert!(message.contains("total ≤ 64"), "the rotary table's rows: {message}");
    let conditions = report["findings"].as_array().unwrap().iter().find(|f| f["code"] == "conditional-shape").unwrap()
        ["conditions"]
        .clone();
    assert!(conditions.as_array().unwrap().iter().any(|c| c["kind"] == "any_of"), "{conditions}");
}

#[test]
fn a_binding_off_the_head_size_is_a_shape_contradiction() {
    let (code, report) = check(CACHE, &["--bind", "kv_cache_dim=8"]);
    assert_eq!(code, 1, "{report}");
    let found = findings(&report, "shape-contradiction");
    assert!(found.iter().any(|(_, m)| m.contains("past_key") && m.contains("16 is required")), "{found:?}");
}

#[test]
fn over_a_range_without_the_head_size_the_requirement_fails_at_its_smallest_size() {
    let args = ranges(&["kv_cache_dim=1..8", "batch=1..4", "seq=1..64", "past=1..64", "total=1..64"]);
    let (code, report) = check(CACHE, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1, "{report}");
    assert!(findings(&report, "conditional-shape").is_empty(), "{report}");
    let found = findings(&report, "shape-contradiction");
    assert_eq!(found.len(), 1, "{report}");
    assert_eq!(found[0].0, "error");
    assert!(found[0].1.starts_with("fails at ") && found[0].1.contains("kv_cache_dim = 1"), "{}", found[0].1);
    let failures = report["ranges"]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "the failure is recorded for --witness and --safe-ranges: {report}");
}

#[test]
fn at_the_head_size_a_growing_cache_is_proven_within_its_rotary_table() {
    let proven = ranges(&["kv_cache_dim=16", "batch=1..4", "seq=1", "past=0..63"]);
    let (code, report) = check(GROWN, &proven.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!((code, report["summary"]["warnings"].as_u64()), (0, Some(0)), "{report}");
    // A prompt after a past is for one sequence only: batch 1..4 with seq 1..8 fails at batch = 2, seq = 2.
    let prompt = ranges(&["kv_cache_dim=16", "batch=1..4", "seq=1..8", "past=0..32"]);
    let (code, report) = check(GROWN, &prompt.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1, "{report}");
    let found = findings(&report, "shape-contradiction");
    assert!(found[0].1.contains("batch = 2") && found[0].1.contains("seq = 2"), "{found:?}");
}

#[test]
fn safe_ranges_keep_the_lengths_the_rotary_table_cannot_hold_out() {
    let args = ranges(&["kv_cache_dim=16", "batch=1", "seq=1", "past=0..200"]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.push("--safe-ranges");
    let (_, report) = check(GROWN, &args);
    let safe = &report["ranges"]["safe"]["symbols"];
    assert_eq!(safe["past"], serde_json::json!({"min": 0, "max": 63, "step": 1}), "{report}");
}

/// Runs `model` in onnxruntime on each witness written to `witnesses` (each must fail) and at each of `sizes`
/// (each must run, the mask all ones and the caches of the head size); the failures found, in words.
fn onnxruntime_disagrees(model: &Path, witnesses: &Path, sizes: &[[u32; 3]]) -> Vec<String> {
    let script = r#"
import glob, json, os, sys
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
model, witnesses, sizes = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
so = ort.SessionOptions(); so.log_severity_level = 4
s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
def fails(feeds):
    try:
        s.run(None, feeds); return False
    except Exception:
        return True
problems, seen = [], 0
for d in sorted(glob.glob(os.path.join(witnesses, "**", "input_0.pb"), recursive=True)):
    feeds = {}
    for f in glob.glob(os.path.join(os.path.dirname(d), "input_*.pb")):
        t = onnx.load_tensor(f); feeds[t.name] = numpy_helper.to_array(t)
    seen += 1
    if not fails(feeds): problems.append("the witness " + d + " runs")
if seen == 0: problems.append("no witness written")
rng = np.random.default_rng(0)
for batch, seq, past in sizes:
    cache = rng.standard_normal((batch, 1, past, 16)).astype(np.float32)
    feeds = {"query": rng.standard_normal((batch, seq, 64)).astype(np.float32), "past_key": cache,
             "past_value": cache, "attention_mask": np.ones((batch, past + seq), np.int64)}
    if fails(feeds): problems.append(f"batch {batch}, seq {seq}, past {past} fails")
print("\n".join(problems))
"#;
    let sizes = serde_json::to_string(sizes).unwrap();
    let out = std::process::Command::new(common::venv_python())
        .args(["-c", script, model.to_str().unwrap(), witnesses.to_str().unwrap(), &sizes])
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

#[test]
fn witnesses_fail_in_onnxruntime_and_sizes_of_a_proven_range_run() {
    let dir = scratch("onnxruntime");
    let witnesses = dir.join("w");
    let args = ranges(&["kv_cache_dim=1..32", "batch=1", "seq=1..4", "past=0..64"]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--witness", witnesses.to_str().unwrap()]);
    let (code, report) = check(GROWN, &args);
    assert_eq!(code, 1, "{report}");
    // Proven: kv_cache_dim = 16, one sequence or one new token, past + seq ≤ 64.
    for proven in [["batch=1", "seq=1..4", "past=0..60"], ["batch=1..3", "seq=1", "past=0..63"]] {
        let args = ranges(&[&["kv_cache_dim=16"][..], &proven[..]].concat());
        let (code, report) = check(GROWN, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!((code, report["summary"]["warnings"].as_u64()), (0, Some(0)), "{proven:?}: {report}");
    }
    let sizes = [[1, 1, 0], [1, 4, 60], [1, 3, 17], [3, 1, 63], [2, 1, 5]];
    let problems = onnxruntime_disagrees(&root().join(GROWN), &witnesses, &sizes);
    assert!(problems.is_empty(), "{problems:#?}");
}
