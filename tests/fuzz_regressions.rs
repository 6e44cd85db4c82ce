//! Replays every input the fuzzers (fuzz/, `cargo +nightly fuzz`) ever crashed or hung on, on stable with plain
//! `cargo test`, so a fixed crash stays fixed. The inputs live in `tests/fuzz_regressions/`, one file each, named
//! `TARGET-WHAT` (see the README there):
//!
//! - model-shaped inputs (from `decode_check`, `expand_roundtrip` and `file_source`): the raw bytes. Each is opened
//!   from a file and decoded from memory, which must agree (with their expansions); when it
//!   decodes it is analysed, checked (plain and strict), rendered, and expanded (plain and materializing), the
//!   expansion twice to see that it is deterministic; the rewritten bytes must decode, and expanding them again
//!   must not panic. Nothing may panic.
//! - `*.shapes` (from `broadcast_algebra`): shapes in the compact text form of `onnx_bcast::shape::parse_shape`,
//!   one per line (`2,N,?`, an empty line for a scalar, `*` for an unknown rank), and optionally a line
//!   `axis: K` for the legacy rule. Every rule runs on them, in every order, without panicking.
//!
//! Every input gets a time budget too: a fuzzer timeout that came back would otherwise only make the suite slow.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use onnx_bcast::analysis::analyze;
use onnx_bcast::broadcast::{bidirectional, equal_shapes, legacy_axis, multidirectional, unidirectional};
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::expand::{expand_model, ExpandOptions};
use onnx_bcast::model::Model;
use onnx_bcast::render;
use onnx_bcast::shape::{parse_shape, Shape};

/// A folder that does not exist: external data references resolve to nothing, as in the fuzz targets.
const PATH: &str = "/nonexistent/onnx-bcast-fuzz/model.onnx";

/// Generous for a debug build: the fuzzers' timeout was 30 s on an optimized one.
const BUDGET: Duration = Duration::from_secs(60);

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions")
}

fn inputs() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/fuzz_regressions exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    files
}

fn expand(model: &Model, options: &ExpandOptions) -> Option<Vec<u8>> {
    let (_plan, pieces) = expand_model(model, options.clone()).ok()?;
    let out = pieces.to_vec(model.bytes()).unwrap();
    assert_eq!(out.len() as u64, pieces.len(), "Pieces::len disagrees with the bytes written");
    Some(out)
}

fn decode(bytes: Vec<u8>, what: &str) -> Model {
    Model::from_bytes(PATH, bytes::Bytes::from(bytes)).unwrap_or_else(|e| panic!("{what} does not decode: {e}"))
}

/// The work of fuzz/fuzz_targets/file_source.rs on one input: opened from a file and decoded from memory, the
/// model must be the same, and so must its expansion read either way.
fn replay_file_source(data: &[u8]) {
    use std::io::Write;
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    file.write_all(data).expect("write the input");
    if let Some(why) = common::file_and_memory_disagree(file.path()) {
        panic!("file and memory disagree: {why}");
    }
}

/// The work of fuzz/fuzz_targets/decode_check.rs, expand_roundtrip.rs and file_source.rs on one input.
fn replay_model(data: &[u8]) {
    replay_file_source(data);
    let Ok(model) = Model::from_bytes(PATH, bytes::Bytes::copy_from_slice(data)) else {
        return;
    };
    let analysis = analyze(model.proto());
    for strict in [false, true] {
        let report = check(&analysis, CheckOptions { strict, ..Default::default() });
        let mut text = Vec::new();
        render::write_text(&mut text, PATH, &report).unwrap();
        render::write_opaque(&mut text, PATH, &report.opaque).unwrap();
        let _ = render::report_json(PATH, &report).to_string();
        let _ = onnx_bcast::dot::main_graph(model.proto(), &analysis, &report);
    }
    let mut text = Vec::new();
    render::write_shapes_text(&mut text, PATH, &analysis).unwrap();
    let _ = render::shapes_json(PATH, &analysis).to_string();
    let _ = check(&onnx_bcast::analysis::analyze_model(&model), CheckOptions::default());

    let options = [
        ExpandOptions::default(),
        ExpandOptions { materialize_constants: true, max_materialize_bytes: 4096, ..Default::default() },
    ];
    for opts in &options {
        let Some(first) = expand(&model, opts) else {
            continue;
        };
        let second = expand(&model, opts).expect("the second expansion of the same input failed");
        assert!(first == second, "expanding the same input twice gave different bytes");
        let rewritten = decode(first, "the rewritten model");
        if let Some(again) = expand(&rewritten, opts) {
            decode(again, "the model rewritten twice");
        }
    }
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

/// The rules on the shapes of a `.shapes` file, in every order: nothing panics, and multidirectional is
/// commutative in its verdict and output.
fn replay_shapes(text: &str) {
    let mut shapes: Vec<Shape> = Vec::new();
    let mut axis = None;
    for line in text.lines() {
        match line.strip_prefix("axis:") {
            Some(a) => axis = Some(a.trim().parse::<i64>().expect("axis: an i64")),
            None => shapes.push(parse_shape(line)),
        }
    }
    assert!(!shapes.is_empty(), "a .shapes file holds at least one shape");
    let all: Vec<&Shape> = shapes.iter().collect();
    let multi = multidirectional(&all);
    let _ = equal_shapes(&all);
    for p in permutations(shapes.len().min(5)) {
        let permuted: Vec<&Shape> = p.iter().map(|&i| &shapes[i]).collect();
        let q = multidirectional(&permuted);
        assert_eq!(q.verdict.as_str(), multi.verdict.as_str(), "{shapes:?} in order {p:?}");
        assert_eq!(q.output, multi.output, "{shapes:?} in order {p:?}");
        let _ = equal_shapes(&permuted);
    }
    for a in &shapes {
        for b in &shapes {
            let _ = unidirectional(a, b);
            let _ = bidirectional(a, b);
            for ax in [axis, None, Some(-1), Some(i64::MIN), Some(i64::MAX)] {
                let _ = legacy_axis(a, b, ax);
            }
        }
    }
}

#[test]
fn every_fuzz_regression_input_replays_cleanly() {
    let files = inputs();
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(path).unwrap();
        let start = Instant::now();
        let result = std::panic::catch_unwind(|| {
            if name.ends_with(".shapes") {
                replay_shapes(std::str::from_utf8(&data).expect("a .shapes file is text"));
            } else {
                replay_model(&data);
            }
        });
        if let Err(panic) = result {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            failures.push(format!("{name}: panicked: {message}"));
        } else if start.elapsed() > BUDGET {
            failures.push(format!("{name}: took {:?} (budget {BUDGET:?})", start.elapsed()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fuzz regressions fail:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// The regression files stay small (they are committed) and are named after the target that found them.
#[test]
fn regression_files_are_small_and_named() {
    for path in inputs() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= 64 * 1024, "{name}: {size} bytes; minimize it (cargo fuzz tmin) below 64 KiB");
        assert!(
            ["decode_check-", "expand_roundtrip-", "file_source-", "broadcast_algebra-"]
                .iter()
                .any(|p| name.starts_with(p)),
            "{name}: name it TARGET-WHAT after the fuzz target that found it"
        );
    }
}
