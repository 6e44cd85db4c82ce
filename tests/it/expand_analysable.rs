//! `expand` never makes a model less analysable: every value whose shape the analysis of a model
//! resolves (known rank, no unknown dim) is resolved in the analysis of `expand`'s output too, with the same
//! shape where no fresh symbol is involved; and `expand` of `expand`'s output changes no byte. `expand` never adds
//! findings either: `check --strict` of its output reports no code more often than of its input (an undecided site
//! stays as it is, rather than becoming three), and no value is expanded to a shape provably its own. Held on every
//! model of the ONNX backend data (with `light/`), the real-model corpus and the PyTorch export corpus.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use onnx_bcast::analysis::{analyze_model_with, Options};
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::rewrite::expand::{expand_model, ExpandOptions, ExpandSummary};
use onnx_bcast::sizes::shape::Shape;

/// A graph path without the indices of unnamed nodes (`main/#28 (If)/then_branch`), which move when expand
/// inserts nodes before them.
fn stable_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut after_hash = false;
    for c in path.chars() {
        if after_hash && c.is_ascii_digit() {
            continue;
        }
        after_hash = c == '#';
        out.push(c);
    }
    out
}

/// Resolved shapes by (graph path, value name).
fn resolved(model: &Model) -> HashMap<(String, String), Shape> {
    let analysis = analyze_model_with(model, Options { value_facts: true });
    let mut out = HashMap::new();
    for g in &analysis.graphs {
        for (name, facts) in &g.values {
            if facts.shape.is_resolved() {
                out.insert((stable_path(&g.path), name.clone()), facts.shape.clone());
            }
        }
    }
    out
}

fn mentions_fresh(s: &Shape) -> bool {
    s.to_string().contains('?')
}

/// How often `check --strict` reports each code on a model.
fn strict_findings(model: &Model) -> HashMap<&'static str, usize> {
    let report = check(
        &analyze_model_with(model, Options { value_facts: false }),
        CheckOptions { strict: true, ..Default::default() },
    );
    let mut counts = HashMap::new();
    for f in &report.findings {
        *counts.entry(f.code.as_str()).or_insert(0) += 1;
    }
    counts
}

/// The steps of `expand` that make a value explicit at a shape provably its own: `x [N, 3] -> Expand to [N, 3]`
/// (a shape with an unknown dim `?` is nobody's own: the size may be another input's).
fn expanded_to_own_shape(summary: &ExpandSummary) -> Vec<String> {
    let mut found = Vec::new();
    for step in summary.actions.iter().flat_map(|a| a.steps()) {
        let Some((from, to)) = step.split_once(" -> ") else { continue };
        let shape = from.split_once(' ').map_or("", |(_, shape)| shape);
        let target = to.split_once(" to ").map_or("", |(_, t)| t.trim_end_matches(" (computed in the graph)"));
        if shape == target && !shape.contains('?') && !shape.contains("unknown") {
            found.push(step.to_string());
        }
    }
    found
}

/// What is wrong with `expand` on this model, if anything.
fn study(path: &Path) -> Option<String> {
    let model = Model::open(path).ok()?;
    let before = resolved(&model);
    let (plan, pieces) = expand_model(&model, ExpandOptions::default()).ok()?;
    let bytes = pieces.to_vec(model.source()).expect("the expanded model is laid out in memory");
    let expanded = Model::from_bytes(path, bytes.into()).expect("expand's output decodes");
    let after = resolved(&expanded);
    let mut lost: Vec<String> = before
        .iter()
        .filter_map(|(key, shape)| match after.get(key) {
            None => Some(format!("{}/{}: {shape} becomes unresolved", key.0, key.1)),
            Some(s) if s != shape && !mentions_fresh(s) && !mentions_fresh(shape) => {
                Some(format!("{}/{}: {shape} becomes {s}", key.0, key.1))
            }
            Some(_) => None,
        })
        .collect();
    lost.sort();
    let (was, is) = (strict_findings(&model), strict_findings(&expanded));
    for (code, &n) in &is {
        let had = was.get(code).copied().unwrap_or(0);
        if n > had {
            lost.push(format!("check --strict reports {code} {n} times, against {had} before"));
        }
    }
    lost.extend(expanded_to_own_shape(&plan.summary).into_iter().map(|s| format!("expanded to its own shape: {s}")));
    let (_, again) = expand_model(&expanded, ExpandOptions::default()).ok()?;
    let twice = again.to_vec(expanded.source()).expect("laid out");
    if twice != expanded.bytes().as_ref() {
        lost.push("a second expand changes the model".into());
    }
    (!lost.is_empty()).then(|| format!("{}: {}", path.display(), lost.join("; ")))
}

fn models_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "onnx") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn check_all(models: &[PathBuf], min: usize) {
    assert!(models.len() >= min, "only {} models found (expected at least {min})", models.len());
    let problems: Vec<String> = models.iter().filter_map(|m| study(m)).collect();
    assert!(problems.is_empty(), "{} of {} models:\n{}", problems.len(), models.len(), problems.join("\n"));
}

#[test]
fn expand_keeps_every_resolved_shape_of_the_backend_models() {
    let data = common::backend_data_dir();
    let mut models = common::backend_models(&data);
    models.extend(models_under(&data.join("light")));
    check_all(&models, 1900);
}

#[test]
fn expand_keeps_every_resolved_shape_of_the_real_models() {
    check_all(&models_under(&common::corpus_dir()), 30);
}

#[test]
fn expand_keeps_every_resolved_shape_of_the_pytorch_exports() {
    check_all(&models_under(&common::fetched_dir("corpus/torch_fetch.sh", "the PyTorch export corpus")), 130);
}

/// The silero example of issue 28: its one undecided site (an input of unknown rank) is left as it is, with its
/// reason, and its `Pow` sites expand the scalar exponent only, never the base to its own shape (4 Expands for
/// 4 sites, not 8).
#[test]
fn silero_keeps_its_undecided_site_and_expands_no_value_to_its_own_shape() {
    let dir = common::corpus_dir().join("silero-vad");
    let model = Model::open(dir.join("silero_vad_16k_op15.onnx")).unwrap();
    let (plan, _) = expand_model(&model, ExpandOptions::default()).unwrap();
    let left: Vec<_> = plan.summary.left.iter().map(|l| (l.node.as_str(), &l.reason)).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(matches!(left[0].1, onnx_bcast::rewrite::expand::LeftReason::Undecided { .. }), "{left:?}");
    let words = left[0].1.to_string();
    let reason = onnx_bcast::sys::escape::plain(&words);
    assert!(reason.contains("/model/decoder/Concat_output_0's rank unknown"), "{reason}");
    let model = Model::open(dir.join("silero_vad.onnx")).unwrap();
    let (plan, _) = expand_model(&model, ExpandOptions::default()).unwrap();
    assert_eq!((plan.summary.made_explicit, plan.summary.expands_inserted), (4, 4));
}
