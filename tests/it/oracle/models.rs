//! What must hold for any bytes read as a model: the bodies of the fuzz targets `decode_check`, `expand_roundtrip`
//! and `file_source`, which tests/it/fuzz_regressions.rs replays on every input they ever failed on.

use std::io::{Read, Seek, Write};
use std::path::Path;

use onnx_bcast::analysis::{analyze, analyze_model};
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::render;
use onnx_bcast::rewrite::expand::{expand_model, ExpandOptions};
use prost::Message;

/// A folder that does not exist: external data references resolve to nothing, deterministically.
pub const PATH: &str = "/nonexistent/onnx-bcast-fuzz/model.onnx";

/// `decode_check`: decode → analyze → check (plain and strict) → render (text, JSON, shapes, dot), as `onnx-bcast
/// check` and `shapes` do. Nothing may panic: decoding may refuse the bytes, everything after a successful decode
/// must finish with a report.
pub fn decode_check(data: &[u8]) {
    let Ok(model) = Model::from_bytes(PATH, bytes::Bytes::copy_from_slice(data)) else {
        return;
    };
    let analysis = analyze(model.proto());
    for strict in [false, true] {
        let report = check(&analysis, CheckOptions { strict, ..Default::default() });
        // The CLI renders outside its panic guard: a panic here would be exit 101.
        let mut text = Vec::new();
        render::write_text(&mut text, PATH, &report).unwrap();
        render::write_opaque(&mut text, PATH, &report.opaque).unwrap();
        let _ = render::report_json(PATH, &report).to_string();
        if !strict {
            let _ = onnx_bcast::render::dot::main_graph(model.proto(), &analysis, &report);
        }
    }
    let mut text = Vec::new();
    render::write_shapes_text(&mut text, PATH, &analysis).unwrap();
    let _ = render::shapes_json(PATH, &analysis).to_string();
    // The CLI's own entry point, which also follows external data references.
    let _ = check(&analyze_model(&model), CheckOptions::default());
}

/// The rewritten bytes, when `expand` accepts the model (a refusal is not a crash).
fn expand(model: &Model, options: &ExpandOptions) -> Option<Vec<u8>> {
    let (_plan, pieces) = expand_model(model, options.clone()).ok()?;
    let out = pieces.to_vec(model.bytes()).unwrap();
    assert_eq!(out.len() as u64, pieces.len(), "Pieces::len disagrees with the bytes written");
    Some(out)
}

fn decode(bytes: Vec<u8>, what: &str) -> Model {
    Model::from_bytes(PATH, bytes::Bytes::from(bytes)).unwrap_or_else(|e| panic!("{what} does not decode: {e}"))
}

/// `expand_roundtrip`: for every model that decodes, expanding never panics, the rewritten bytes decode again,
/// the rewrite is deterministic (same input, same bytes), and expanding the rewritten model again does not panic
/// either (nor, when it succeeds, produce undecodable bytes). Both option sets; materializing is capped small so
/// that an input cannot ask for gigabytes.
pub fn expand_roundtrip(data: &[u8]) {
    let Ok(model) = Model::from_bytes(PATH, bytes::Bytes::copy_from_slice(data)) else {
        return;
    };
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

/// `file_source`: `data` written to `scratch`, then opened from the file (a `pread` window, large fields as map
/// views) and decoded from memory: both must accept or both refuse, and decode to the same model, and so must
/// their expansions read either way.
pub fn file_source(data: &[u8], scratch: &Path) {
    std::fs::File::create(scratch).and_then(|mut f| f.write_all(data)).expect("write the scratch file");
    if let Some(why) = file_and_memory_disagree(scratch) {
        panic!("file and memory disagree: {why}");
    }
}

/// What differs between the model opened from the file at `path` and the one decoded from the same bytes in
/// memory, if anything: whether they decode, what they decode to, and their expansion read through the file (by
/// `to_vec` and by `write_to_file`) or from memory.
pub fn file_and_memory_disagree(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let (from_file, in_memory) = match (Model::open(path), Model::from_bytes(path, bytes::Bytes::from(bytes))) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(_), Err(_)) => return None,
        (a, b) => return Some(format!("file: {:?}, memory: {:?}", a.err(), b.err())),
    };
    // Compared encoded: a NaN in a tensor or attribute is not equal to itself.
    if from_file.proto().encode_to_vec() != in_memory.proto().encode_to_vec() {
        return Some("decode to different models".into());
    }
    let Ok((_, pieces)) = expand_model(&from_file, ExpandOptions::default()) else { return None };
    let through_file = pieces.to_vec(from_file.source()).expect("read the model file");
    if through_file != pieces.to_vec(in_memory.bytes()).unwrap() {
        return Some("the expansion read through the file differs".into());
    }
    let mut out = tempfile::tempfile().expect("a temporary file");
    pieces.write_to_file(from_file.source(), &mut out).expect("write the expansion");
    let mut written = Vec::new();
    out.rewind().and_then(|_| out.read_to_end(&mut written)).expect("read the expansion back");
    (written != through_file).then(|| "write_to_file differs from to_vec".into())
}
