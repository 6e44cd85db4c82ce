//! Ranges of input sizes over the corpora (issue 27), judged from `scripts/range_study.py`'s JSON: every model
//! with symbolic inputs of the PyTorch export corpus, the real-model corpus and the ONNX backend tests, under three
//! sets of ranges each. Building the corpora is not optional: if one cannot be had, the test fails.
//!
//! Asserted: at every size drawn inside ranges where `check --range` says every site holds and no index bound is
//! left, onnxruntime raises no error at a broadcasting site nor at a Gather with an index bound (errors elsewhere
//! are the study's figures, not claims of ours); every witness `--witness` writes fails in onnxruntime; every
//! PyTorch model whose position table meets a broadcast, or is read by a Gather of computed ids (`index-bound`; an attention mask given `--range NAME=0..1`),
//! gets exactly `seq ∈ 1..max_position_embeddings` as its safe range, its witness `max + 1` fails in onnxruntime,
//! and every site and index bound is proven over `1..max`; nudenet's YOLOv8 and the PP-OCR detectors get steps of 32
//! within 320..640, their witnesses fail, and 320..640/32 is proven. The figures go to the target folder; the
//! committed corpus/RANGE_FIGURES.md comes from a release binary (its timings mean something).
//!
//! Cost: 147 s on the shared two-core machine once the corpora are cached (onnxruntime runs each of 157 models at five
//! sizes per range, and on each witness); 253 s at a load of 8 with the index bounds (one more check per position
//! table, 56 more witnesses); cold, the corpora's own fetches, which tests/it/torch_models.rs and tests/it/real_models.rs
//! need as well.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The PyTorch models whose position table meets a broadcasting site (BERT, ALBERT, CLIP, DeBERTa and v2,
/// DistilBERT, ELECTRA, GPT-Neo: eight families, four exports each).
const MIN_POSITION_TABLES: usize = 32;
/// The PyTorch models that read their position table through a Gather of computed ids (`index-bound`): BART, GPT-2,
/// MPNet, OPT (given `--range attention_mask=0..1`), RoBERTa, XLM-RoBERTa, four exports each.
const MIN_GATHERED_TABLES: usize = 24;
/// nudenet's YOLOv8 and two PP-OCR detectors.
const DETECTORS: usize = 3;

fn torch_corpus_dir() -> PathBuf {
    common::fetched_dir("corpus/torch_fetch.sh", "the PyTorch export corpus")
}

#[test]
fn ranges_are_decided_soundly_over_every_corpus() {
    let torch = torch_corpus_dir();
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(torch.join("manifest.json")).unwrap()).unwrap();
    let python = PathBuf::from(manifest["python"].as_str().expect("the manifest names its python"));
    let out_json = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("range_study.json");
    let out = Command::new(&python)
        .arg(common::repo_root().join("scripts").join("range_study.py"))
        .arg(env!("CARGO_BIN_EXE_onnx-bcast"))
        .arg(&out_json)
        .args(["--torch".as_ref(), torch.as_os_str()])
        .args(["--corpus".as_ref(), common::corpus_dir().as_os_str()])
        .args(["--backend".as_ref(), common::backend_data_dir().as_os_str()])
        // The test's binary is a debug build: its times say nothing, so one round (the figures come from a release
        // binary run by hand, corpus/RANGE_FIGURES.md says which).
        .args(["--timing-rounds", "1"])
        .arg("--figures")
        .arg(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("RANGE_FIGURES.md"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(out.status.success(), "scripts/range_study.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();

    let mut problems = Vec::new();
    for (set, records) in report["records"].as_object().unwrap() {
        for rec in records.as_array().unwrap() {
            let model = rec["model"].as_str().unwrap_or("?");
            if let Some(e) = rec.get("error") {
                problems.push(format!("{set} {model}: not studied: {e}"));
            }
            for run in rec["runs"].as_array().into_iter().flatten() {
                for d in run["draws"].as_array().into_iter().flatten().filter(|d| d["at_site"] == true) {
                    problems.push(format!(
                        "{set} {model} {}: every site holds, yet onnxruntime fails at {}: {}",
                        run["ranges"], d["sizes"], d["error"]
                    ));
                }
                for w in run["witnesses"].as_array().into_iter().flatten().filter(|w| w["fails"] != true) {
                    problems.push(format!("{set} {model}: the witness {} runs in onnxruntime", w["sizes"]));
                }
            }
        }
    }
    let acceptance = &report["acceptance"];
    let (mut tables, mut gathered) = (0, 0);
    for p in acceptance["position_tables"].as_array().unwrap() {
        let model = p["model"].as_str().unwrap();
        match (p["conditional_sites"].as_u64(), p["index_bounds"].as_u64()) {
            (Some(0), Some(0)) => continue, // no table at all (rotary, relative buckets): no limit to find
            (Some(0), _) => gathered += 1,
            _ => tables += 1,
        }
        if p["exact"] != true {
            problems.push(format!("{model}: safe seq {} is not 1..{}", p["safe_seq"], p["table"]));
        }
        let witnesses = p["witnesses"].as_array().unwrap();
        if witnesses.is_empty()
            || witnesses.iter().any(|w| w["fails"] != true || w["sizes"]["seq"] != p["table"].as_u64().unwrap() + 1)
        {
            problems.push(format!("{model}: the witnesses {witnesses:?} are not seq = max + 1 failing in onnxruntime"));
        }
        if p["proven_below"] != true {
            problems
                .push(format!("{model}: not every site is proven over 1..{}: {}", p["table"], p["decisions_below"]));
        }
    }
    assert!(tables >= MIN_POSITION_TABLES, "only {tables} position tables meet a broadcast");
    assert!(gathered >= MIN_GATHERED_TABLES, "only {gathered} position tables are read by a Gather of computed ids");
    let detectors = acceptance["detectors"].as_array().unwrap();
    assert_eq!(detectors.len(), DETECTORS, "{detectors:?}");
    for d in detectors {
        let model = d["model"].as_str().unwrap();
        if d["steps_of_32"] != true {
            problems.push(format!("{model}: safe sides {} are not 320..640/32", d["safe"]));
        }
        let witnesses = d["witnesses"].as_array().unwrap();
        if witnesses.is_empty() || witnesses.iter().any(|w| w["fails"] != true) {
            problems.push(format!("{model}: the witnesses {witnesses:?} do not all fail in onnxruntime"));
        }
        if d["proven_stepped"] != true {
            problems.push(format!("{model}: 320..640/32 is not proven: {}", d["decisions_stepped"]));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
