//! `onnx-bcast check`, `shapes`, `expand`, `fold` and `infer` over the deployment corpus (corpus/README.md,
//! "Deployment corpus", issue 24): the forms onnxruntime's own tools give small PyTorch exports (transformers
//! optimizer, offline optimization at every level, static QDQ and QOperator, dynamic and int4 quantization,
//! fp16), a decoder with past key/values, and onnxruntime-genai's model builder. `corpus/deploy_fetch.sh` builds
//! it in a cache outside the clone and `scripts/deploy_models.py` measures it with onnxruntime; this test judges
//! its JSON. Building the corpus is not optional: if it fails, the test fails.
//!
//! Asserted: at least 60 models from at least 8 tool paths; model by model, no opaque node; no violation (a model
//! the quantizer wrote broken, which onnxruntime refuses to load, may have type mismatches: they are true); every
//! inferred shape agrees with onnxruntime at two sizes of the dynamic axes; every QLinearAdd, QLinearMul and QGemm
//! is a site; `expand` exits 0, keeps the outputs at both sizes, adds no `check --strict` code the original lacks
//! and is idempotent; fold(expand(m)) has m's ops (or fold(m)'s, where m has explicit broadcasts of its own; an
//! explicit broadcast of a site that holds only under a condition stays); `infer` declares every contrib output and
//! its model gives the same outputs; at least as many sites resolved as onnxruntime's `symbolic_shape_infer` where
//! it runs. Over the corpus: at least 99.5% of sites resolved. The figures go to corpus/DEPLOY_FIGURES.md.

use crate::common;

use serde_json::Value;

const MIN_MODELS: usize = 60;
const MIN_TOOLS: usize = 8;

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

fn n(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(-1)
}

/// Whether onnxruntime refused to load the original model at every size (a tool wrote it broken).
fn refused_by_onnxruntime(r: &Value) -> bool {
    let runs = r["expand"]["ort"].as_array().map_or(&[][..], Vec::as_slice);
    !runs.is_empty() && runs.iter().all(|x| s(x, "status") == "original does not run")
}

/// What is wrong with one model's record.
fn problems_of(r: &Value, problems: &mut Vec<String>) {
    let model = s(r, "model");
    let broken = refused_by_onnxruntime(r);
    if n(r, "opaque_nodes") != 0 {
        problems.push(format!("{model}: opaque nodes {}", r["opaque_ops"]));
    }
    for v in r["violations"].as_array().into_iter().flatten() {
        if !(broken && s(v, "message").contains("requires one element type")) {
            problems.push(format!("{model}: violation at {}: {}", s(v, "site"), s(v, "message")));
        }
    }
    if r["qlinear_not_sites"].as_object().is_some_and(|o| !o.is_empty()) {
        problems.push(format!("{model}: QLinear nodes that are not sites: {}", r["qlinear_not_sites"]));
    }
    let sound = &r["soundness"];
    let runs = sound["runs"].as_array().map_or(&[][..], Vec::as_slice);
    if !broken && (runs.len() != 2 || runs.iter().any(|x| x.get("error").is_some())) {
        problems.push(format!("{model}: soundness did not run at both sizes: {}", sound["runs"]));
    }
    for m in sound["mismatches"].as_array().into_iter().flatten().take(5) {
        problems.push(format!(
            "{model}: unsound shape of {}: inferred {}, onnxruntime {}",
            s(m, "value"),
            m["inferred"],
            m["actual"]
        ));
    }
    let res = &r["resolved"];
    if n(res, "tool") < n(res, "ort") {
        problems.push(format!("{model}: {} sites resolved, ORT's symbolic inference {}", res["tool"], res["ort"]));
    }
    if broken {
        return;
    }
    let ex = &r["expand"];
    if n(ex, "rc") != 0 || ex["ort_equal"].as_bool() != Some(true) || ex["idempotent"].as_bool() != Some(true) {
        problems.push(format!(
            "{model}: expand exits {}, outputs {}, idempotent {}",
            ex["rc"], ex["ort"], ex["idempotent"]
        ));
    }
    let before = r["strict_original"]["codes"].as_object().cloned().unwrap_or_default();
    let added: Vec<&String> = ex["strict_codes"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .filter(|k| !before.contains_key(*k))
        .collect();
    if !added.is_empty() {
        problems.push(format!("{model}: check --strict on the expanded model adds {added:?}"));
    }
    let fold = &r["fold"];
    let same = fold["same_ops"].as_bool() == Some(true) || fold["same_as_fold_m"].as_bool() == Some(true);
    let conditional_kept = r["conditional"].as_array().is_some_and(|c| !c.is_empty())
        && fold["kept"]
            .as_array()
            .is_some_and(|k| k.iter().all(|x| x.as_str().unwrap_or("").contains("holds only if")));
    if !same && !conditional_kept {
        problems.push(format!(
            "{model}: fold(expand(m)) does not give back m's ops: {} (kept: {})",
            fold["diff_fold_m"], fold["kept"]
        ));
    }
    let inf = &r["infer"];
    if inf["ort_equal"].as_bool() != Some(true) || n(inf, "contrib_outputs_undeclared_count") != 0 {
        problems.push(format!(
            "{model}: infer: {} ({} contrib outputs undeclared)",
            inf["ort"], inf["contrib_outputs_undeclared_count"]
        ));
    }
}

#[test]
fn deployed_models_are_seen_into_judged_soundly_and_rewritten_faithfully() {
    let models = common::fetched_dir("corpus/deploy_fetch.sh", "the deployment corpus");
    let python = crate::common::corpus_python(&models);
    let (report, _) = common::run_corpus_script(&python, "deploy_models", &models, "DEPLOY_FIGURES.md");
    let records = report["models"].as_array().expect("deploy-models.json has no models list");
    let mut problems: Vec<String> = Vec::new();
    for r in records {
        if let Some(crash) = r.get("crash") {
            problems.push(format!(
                "{}: the script could not study it:\n{}",
                s(r, "model"),
                crash.as_str().unwrap_or("?")
            ));
            continue;
        }
        problems_of(r, &mut problems);
    }
    let t = &report["totals"];
    let tools = t["tools"].as_array().map_or(0, Vec::len);
    if records.len() < MIN_MODELS || tools < MIN_TOOLS {
        problems
            .push(format!("{} models from {tools} tool paths (at least {MIN_MODELS} from {MIN_TOOLS})", records.len()));
    }
    let sites = n(t, "sites");
    if n(&t["resolved"], "tool") * 1000 < sites * 995 {
        problems.push(format!("only {} of {sites} sites resolved (at least 99.5% must be)", t["resolved"]["tool"]));
    }
    println!(
        "deployment models: {} models from {tools} tool paths, {sites} sites, {} resolved (ORT symbolic: {} where it \
         runs on {} models, crashes on {}); {} opaque nodes; contrib sites {}; check {} s (whole processes) vs ORT {} s \
         (in process) where ORT runs; figures in corpus/DEPLOY_FIGURES.md",
        records.len(),
        t["resolved"]["tool"],
        t["resolved_where_ort_runs"]["ort"],
        t["ort_runs"],
        t["ort_crashes"].as_array().map_or(0, Vec::len),
        t["opaque_nodes"],
        t["contrib_sites"],
        t["check_seconds_where_ort_runs"],
        t["ort_seconds"],
    );
    assert!(
        problems.is_empty(),
        "{} problem(s) over the deployment corpus:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}
