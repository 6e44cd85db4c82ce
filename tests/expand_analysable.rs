//! `expand` never makes a model less analysable: every value whose shape the analysis of a model
//! resolves (known rank, no unknown dim) is resolved in the analysis of `expand`'s output too, with the same
//! shape where no fresh symbol is involved; and `expand` of `expand`'s output changes no byte. Held on every model
//! of the ONNX backend data (with `light/`), the real-model corpus and, where it has been built, the PyTorch
//! export corpus.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use onnx_bcast::analysis::{analyze_model_with, Options};
use onnx_bcast::expand::{expand_model, ExpandOptions};
use onnx_bcast::model::Model;
use onnx_bcast::shape::Shape;

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

/// What is wrong with `expand` on this model, if anything.
fn study(path: &Path) -> Option<String> {
    let model = Model::open(path).ok()?;
    let before = resolved(&model);
    let (_, pieces) = expand_model(&model, ExpandOptions::default()).ok()?;
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
