//! Arbitrary bytes → decode → expand. For every model that decodes: expanding never panics, the rewritten bytes
//! decode again (as a model with a graph), the rewrite is deterministic (same input, same bytes), and expanding
//! the rewritten model again does not panic either (nor, when it succeeds, produce undecodable bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use onnx_bcast::expand::{expand_model, ExpandOptions};
use onnx_bcast::model::Model;

const PATH: &str = "/nonexistent/onnx-bcast-fuzz/model.onnx";

fn expand(model: &Model, options: &ExpandOptions) -> Option<Vec<u8>> {
    // A WireError is a refusal (the input's bytes are not what the decoder made of them), not a crash.
    let (_plan, pieces) = expand_model(model, options.clone()).ok()?;
    let out = pieces.to_vec(model.bytes()).unwrap();
    assert_eq!(out.len() as u64, pieces.len(), "Pieces::len disagrees with the bytes written");
    Some(out)
}

fn decode(bytes: Vec<u8>, what: &str) -> Model {
    match Model::from_bytes(PATH, bytes::Bytes::from(bytes)) {
        Ok(m) => m,
        Err(e) => panic!("{what} does not decode: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(model) = Model::from_bytes(PATH, bytes::Bytes::copy_from_slice(data)) else {
        return;
    };
    // Both option sets; materializing is capped small so the fuzzer cannot ask for gigabytes.
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
});
