//! Arbitrary bytes → decode → analyze → check → render, as `onnx-bcast check` and `shapes` do. Nothing may
//! panic: decoding may refuse the bytes, everything after a successful decode must finish with a report.
#![no_main]

use libfuzzer_sys::fuzz_target;
use onnx_bcast::analysis::{analyze, analyze_model};
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::model::Model;
use onnx_bcast::render;

/// A folder that does not exist: external data references resolve to nothing, deterministically.
const PATH: &str = "/nonexistent/onnx-bcast-fuzz/model.onnx";

fuzz_target!(|data: &[u8]| {
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
            let _ = onnx_bcast::dot::main_graph(model.proto(), &analysis, &report);
        }
    }
    let mut text = Vec::new();
    render::write_shapes_text(&mut text, PATH, &analysis).unwrap();
    let _ = render::shapes_json(PATH, &analysis).to_string();
    // The CLI's own entry point, which also follows external data references.
    let _ = check(&analyze_model(&model), CheckOptions::default());
});
