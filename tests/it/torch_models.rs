//! `onnx-bcast check`, `shapes` and `expand` over the PyTorch export corpus (corpus/README.md,
//! "PyTorch export corpus"): small random-init transformers and CNNs exported by `torch.onnx.export` with
//! TorchScript (opsets 14 and 17) and dynamo (opset 18, also with value_info stripped), dynamic batch and sequence
//! (and image size). `corpus/torch_fetch.sh` builds it in a cache outside the clone (the export runs again only
//! when the pins or the export script change) and `scripts/torch_models.py` measures it with onnx and onnxruntime;
//! this test judges its JSON. Building the corpus is not optional: if it fails, the test fails.
//!
//! Asserted, model by model: the script studied it; no violation (every model runs, so a violation is a false
//! positive); every inferred shape agrees with onnxruntime at two sizes of the dynamic axes; `expand` exits 0, its
//! output gives the original's outputs at both sizes and a second expand changes no byte; at least as many sites
//! resolved as onnxruntime's `symbolic_shape_infer`; `check --strict` on the rewritten model fails only on the
//! conditional sites the original already has (strict means proof; `seq ≤ 64` of a 64-entry position table is a
//! real condition, and making it explicit keeps it). Over the corpus: at least 99.5% of sites resolved.
//! The figures go to corpus/TORCH_FIGURES.md.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

/// Distinct model families each exporter must have produced.
const MIN_FAMILIES: usize = 25;

/// The families whose exports read their position table (66 rows) through a Gather of ids computed from the sizes:
/// `check` warns `index-bound` (`seq ≤ 64`), a true condition (onnxruntime fails at seq = 65: tests/it/ranges_corpus.rs).
/// Every other model has none (OPT's ids come from an attention mask, bounded only with `--range attention_mask=0..1`).
const DOCUMENTED_INDEX_BOUND: &[&str] = &["BART", "GPT-2", "GPT-Neo", "MPNet", "RoBERTa", "XLM-RoBERTa"];

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

fn n(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(-1)
}

/// The models folder `corpus/torch_fetch.sh` builds (or finds cached); panics (never skips) when it fails.
fn torch_corpus_dir() -> PathBuf {
    let dir = common::fetched_dir("corpus/torch_fetch.sh", "the PyTorch export corpus");
    assert!(dir.join("manifest.json").is_file(), "{} has no manifest.json", dir.display());
    dir
}

fn pct(part: i64, whole: i64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

#[test]
fn torch_exports_are_judged_soundly_and_expanded_faithfully() {
    let models = torch_corpus_dir();
    let python = crate::common::corpus_python(&models);
    let (report, _) = common::run_corpus_script(&python, "torch_models", &models, "TORCH_FIGURES.md");
    let records = report["models"].as_array().expect("torch-models.json has no models list");

    let mut problems: Vec<String> = Vec::new();
    let mut families: [BTreeSet<&str>; 2] = [BTreeSet::new(), BTreeSet::new()];
    for r in records {
        let model = s(r, "model");
        if let Some(crash) = r.get("crash") {
            problems.push(format!("{model}: the script could not study it:\n{}", crash.as_str().unwrap_or("?")));
            continue;
        }
        match s(r, "exporter") {
            "torchscript" => families[0].insert(s(r, "family")),
            "dynamo" => families[1].insert(s(r, "family")),
            other => panic!("{model}: unknown exporter {other}"),
        };
        // No false positive, of a broadcast or of what an op requires of its inputs.
        for v in r["violations"].as_array().into_iter().flatten() {
            problems.push(format!("{model}: violation at {}: {}", s(v, "site"), s(v, "message")));
        }
        for f in
            r["findings"].as_array().into_iter().flatten().filter(|f| common::VALIDATION_CODES.contains(&s(f, "code")))
        {
            problems.push(format!("{model}: {} at {}: {}", s(f, "code"), s(f, "node"), s(f, "message")));
        }
        let bounded = r["findings"].as_array().into_iter().flatten().any(|f| s(f, "code") == "index-bound");
        if bounded != DOCUMENTED_INDEX_BOUND.contains(&s(r, "family")) {
            problems.push(format!("{model}: index-bound {}", if bounded { "undocumented" } else { "gone" }));
        }
        // Soundness at both bindings.
        let sound = &r["soundness"];
        let runs = sound["runs"].as_array().map_or(&[][..], Vec::as_slice);
        if runs.len() != 2 || runs.iter().any(|x| x.get("error").is_some()) {
            problems.push(format!("{model}: soundness did not run at both sizes: {}", sound["runs"]));
        }
        for m in sound["mismatches"].as_array().into_iter().flatten().take(5) {
            problems.push(format!(
                "{model}: unsound shape of {}: inferred {}, onnxruntime {} ({})",
                s(m, "value"),
                m["inferred"],
                m["actual"],
                s(m, "why")
            ));
        }
        // expand: exit 0, same outputs at both sizes, idempotent.
        let ex = &r["expand"];
        if n(ex, "rc") != 0 {
            problems.push(format!("{model}: expand exits {}: {}", ex["rc"], s(ex, "stderr")));
        }
        if ex["ort_equal"].as_bool() != Some(true) {
            problems.push(format!("{model}: the rewritten model's outputs differ from the original's: {}", ex["ort"]));
        }
        if ex["idempotent"].as_bool() != Some(true) {
            problems.push(format!("{model}: a second expand changes the rewritten model (exit {})", ex["second_rc"]));
        }
        // check --strict on the rewritten model: only the original's conditions remain.
        let codes: Vec<&String> = ex["strict_codes"].as_object().map(|o| o.keys().collect()).unwrap_or_default();
        let has_conditions = r["conditional"].as_array().is_some_and(|c| !c.is_empty());
        if n(ex, "strict_rc") != 0 && (!has_conditions || codes.iter().any(|c| *c != "conditional-broadcast")) {
            problems.push(format!("{model}: check --strict on the rewritten model: {}", ex["strict_examples"]));
        }
        // At least what onnxruntime's symbolic shape inference resolves.
        let res = &r["resolved"];
        if n(res, "tool") < n(res, "ort") {
            problems.push(format!(
                "{model}: {} sites resolved, onnxruntime's symbolic_shape_infer resolves {} (it alone: {})",
                res["tool"], res["ort"], res["only_ort"]
            ));
        }
    }
    for (exporter, set) in ["torchscript", "dynamo"].iter().zip(&families) {
        if set.len() < MIN_FAMILIES {
            problems.push(format!("only {} model families exported by {exporter}: {set:?}", set.len()));
        }
    }

    let t = &report["totals"];
    let sites = n(t, "sites");
    let resolved = &t["resolved"];
    if n(resolved, "tool") * 1000 < sites * 995 {
        problems.push(format!("only {} of {sites} sites resolved (at least 99.5% must be)", resolved["tool"]));
    }
    println!(
        "torch models: {} models, {} sites; resolved: onnx-bcast {:.1}%, ORT symbolic {:.1}%, onnx data_prop {:.1}% \
         (at least 99.5%); {} conditional; expanded models clean under check --strict: {} of {} ({} findings); \
         Shape nodes {} -> {}; figures in corpus/TORCH_FIGURES.md",
        records.len(),
        sites,
        pct(n(resolved, "tool"), sites),
        pct(n(resolved, "ort"), sites),
        pct(n(resolved, "onnx"), sites),
        t["conditional"],
        t["strict_clean"],
        t["models"],
        t["strict_findings"],
        t["shape_nodes_before"],
        t["shape_nodes_after"],
    );
    for (variant, v) in t["per_variant"].as_object().into_iter().flatten() {
        let vs = n(v, "sites");
        println!(
            "  {variant}: {} models, {vs} sites, onnx-bcast {:.1}%, ORT {:.1}%, onnx {:.1}%",
            v["models"],
            pct(n(&v["resolved"], "tool"), vs),
            pct(n(&v["resolved"], "ort"), vs),
            pct(n(&v["resolved"], "onnx"), vs)
        );
    }
    assert!(
        problems.is_empty(),
        "{} problem(s) over the PyTorch export corpus:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}
