//! `onnx-bcast infer` and `--bind` over the ONNX backend data, the real-model corpus and the PyTorch export corpus,
//! judged by onnx's checker and onnxruntime (`scripts/infer_study.py`, run once with the project venv). Never skips:
//! a missing data set or corpus fails the test with the reason.
//!
//! Asserted on every model: `infer` writes it; `check` gives the same verdicts on it as on the original; `onnx.checker.check_model(full_check=True)` accepts the output
//! (unless it rejects the original as well); onnxruntime runs the output wherever it runs the original, with equal
//! outputs, at every binding (two per dynamic axis for the corpora); every shape `infer` wrote in the main graph
//! agrees with the one onnxruntime computes. On every model with symbolic inputs of the corpora: `infer --bind` of
//! each input symbol leaves no `dim_param` anywhere, onnxruntime runs the static model at those sizes with the
//! original's outputs, and `check --bind` gives the same verdicts as `check` of the static model. The figures go to
//! `<target>/tmp/infer-figures.md` (and stdout with --nocapture).

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or_else(|| panic!("no count {key} in {v}"))
}

#[test]
fn infer_output_passes_the_checker_runs_the_same_and_agrees_with_onnxruntime_and_bind_makes_it_static() {
    let backend = common::backend_data_dir();
    let python = common::venv_python();
    let corpus = common::corpus_dir();
    let torch = common::fetched_dir("corpus/torch_fetch.sh", "the PyTorch export corpus");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let (report_path, figures) = (tmp.join("infer-study.json"), tmp.join("infer-figures.md"));
    let out = Command::new(&python)
        .arg(common::repo_root().join("scripts").join("infer_study.py"))
        .arg(env!("CARGO_BIN_EXE_onnx-bcast"))
        .arg(&report_path)
        .args(["--backend".as_ref(), backend.as_os_str(), "--corpus".as_ref(), corpus.as_os_str()])
        .args(["--torch".as_ref(), torch.as_os_str(), "--figures".as_ref(), figures.as_os_str()])
        .arg("--workdir")
        .arg(tmp.join("infer-study"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scripts/infer_study.py failed ({}):\n{stderr}", out.status);
    println!("{}", String::from_utf8_lossy(&out.stdout));
    let text = std::fs::read_to_string(&report_path).expect("the study wrote its report");
    let report: Value = serde_json::from_str(&text).expect("the report is JSON");

    let mut problems: Vec<String> = Vec::new();
    for r in report["models"].as_array().expect("a models list") {
        let model = r["model"].as_str().unwrap_or("?");
        for p in
            r["problems"].as_array().into_iter().flatten().chain(r["bind"]["problems"].as_array().into_iter().flatten())
        {
            problems.push(format!("{model}: {}", p.as_str().unwrap_or("?")));
        }
        for m in r["mismatches"].as_array().into_iter().flatten() {
            problems.push(format!("{model}: written shape disagrees with onnxruntime: {m}"));
        }
    }
    // Sanity: the sets are what they should be, and the judging judged something.
    let sets = &report["sets"];
    for (set, least_models, least_claims) in [("backend", 1500, 10_000), ("corpus", 30, 10_000), ("torch", 100, 50_000)]
    {
        let t = &sets[set];
        assert!(n(t, "models") >= least_models, "{set}: only {} models", n(t, "models"));
        assert_eq!(n(t, "written"), n(t, "models"), "{set}: every model is written");
        assert_eq!(n(t, "verdicts_kept"), n(t, "written"), "{set}: check gives the same verdicts after infer");
        assert_eq!(n(t, "checker_ok") + n(t, "checker_fails_original_too"), n(t, "written"), "{set}: checker");
        assert_eq!(n(t, "outputs_equal"), n(t, "ran"), "{set}: outputs");
        assert!(n(t, "claims") >= least_claims, "{set}: only {} shape claims judged", n(t, "claims"));
        assert!(n(t, "resolved_after") >= n(t, "resolved_before"), "{set}: infer never resolves less");
    }
    let torch = &sets["torch"];
    assert_eq!(n(torch, "bind_models"), n(torch, "models"), "every export has symbolic inputs to bind");
    for key in ["bind_static", "bind_outputs_equal", "bind_verdicts_equal"] {
        assert_eq!(n(torch, key), n(torch, "bind_models"), "torch: {key}");
    }
    assert!(n(&sets["corpus"], "bind_models") >= 10, "corpus: models with symbolic inputs");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
