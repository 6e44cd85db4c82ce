//! What must hold for any bytes read as a model by `infer`, `fold` and `--bind`: the bodies of the fuzz targets
//! `infer_roundtrip`, `fold_roundtrip` and `bind_rewrite`, which tests/it/fuzz_regressions.rs replays.

use onnx_bcast::analysis::{analyze_model_request, bind::input_symbols, Bindings, Options, Request};
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::pb::tensor_shape_proto::dimension::Value;
use onnx_bcast::onnx::pb::{GraphProto, ModelProto, ValueInfoProto};
use onnx_bcast::render;
use onnx_bcast::rewrite::annotate::{infer_model, InferOptions, MAX_DIM_PARAM};
use onnx_bcast::rewrite::expand::{expand_model_bound, ExpandOptions};
use onnx_bcast::rewrite::fold::{fold_model, FoldOptions};

use super::models::PATH;

fn model(data: &[u8]) -> Option<Model> {
    Model::from_bytes(PATH, bytes::Bytes::copy_from_slice(data)).ok()
}

fn decode(bytes: Vec<u8>, what: &str) -> Model {
    Model::from_bytes(PATH, bytes::Bytes::from(bytes)).unwrap_or_else(|e| panic!("{what} does not decode: {e}"))
}

/// A character of a human-readable line that a terminal or a CI log would act on (see `onnx_bcast::sys::escape`).
pub fn dangerous(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{feff}')
        || ('\u{200b}'..='\u{200f}').contains(&c)
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        || ('\u{fdd0}'..='\u{fdef}').contains(&c)
}

/// Text that a human-readable output wrote: no dangerous character, no line a CI runner reads as a command.
fn shown(text: &[u8], what: &str) {
    let text = std::str::from_utf8(text).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"));
    if let Some(c) = text.chars().find(|&c| dangerous(c)) {
        panic!("{what}: the output holds {c:?}: {text}");
    }
    if let Some(line) = text.lines().find(|l| l.trim_start().starts_with("::")) {
        panic!("{what}: a line is a workflow command: {line}");
    }
}

/// Every declaration of every graph of `m`.
fn declarations(m: &ModelProto) -> Vec<&ValueInfoProto> {
    fn walk<'a>(g: &'a GraphProto, out: &mut Vec<&'a ValueInfoProto>) {
        out.extend(g.input.iter().chain(&g.output).chain(&g.value_info));
        for node in &g.node {
            for a in &node.attribute {
                a.g.iter().chain(&a.graphs).for_each(|sub| walk(sub, out));
            }
        }
    }
    let mut out = Vec::new();
    m.graph.iter().for_each(|g| walk(g, &mut out));
    m.functions.iter().for_each(|f| out.extend(&f.value_info));
    out
}

/// `infer_roundtrip`: for every model that decodes, `infer` (as it is, and with `--overwrite-declared`) never
/// panics, is deterministic, writes bytes that decode, writes no `dim_param` longer than its limit, renders its
/// summary without a character a terminal would act on, and can infer its own output again.
pub fn infer_roundtrip(data: &[u8]) {
    let Some(model) = model(data) else { return };
    for overwrite_declared in [false, true] {
        let options = InferOptions { overwrite_declared, ..Default::default() };
        let Ok((plan, pieces)) = infer_model(&model, &options) else { continue };
        let first = pieces.to_vec(model.bytes()).unwrap();
        let (_, again) = infer_model(&model, &options).expect("the second inference of the same input failed");
        assert!(again.to_vec(model.bytes()).unwrap() == first, "inferring the same input twice gave different bytes");
        let mut text = Vec::new();
        onnx_bcast::render::infer::write_infer_text(&mut text, PATH, Some("out.onnx"), &plan.summary).unwrap();
        shown(&text, "infer's text");
        let inferred = decode(first, "the inferred model");
        for vi in declarations(inferred.proto()) {
            let dims = vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref());
            for d in dims.map(|s| s.dim.as_slice()).unwrap_or_default() {
                if let Some(Value::DimParam(p)) = &d.value {
                    // A declaration the model already had is kept as it is; only new text is bounded.
                    let original = declarations(model.proto()).into_iter().any(|o| o.name() == vi.name() && o == vi);
                    assert!(original || p.len() <= MAX_DIM_PARAM, "infer wrote a dim_param of {} bytes", p.len());
                }
            }
        }
        let _ = infer_model(&inferred, &options);
    }
}

/// `fold_roundtrip`: for every model that decodes, `fold` (and `fold --materialized`) never panics, is
/// deterministic, writes bytes that decode, renders its summary safely, and folding its output again changes no
/// byte (README: "a folded model folded again changes no byte").
pub fn fold_roundtrip(data: &[u8]) {
    let Some(model) = model(data) else { return };
    for materialized in [false, true] {
        let options = FoldOptions { materialized };
        let Ok((plan, pieces)) = fold_model(&model, options) else { continue };
        let first = pieces.to_vec(model.bytes()).unwrap();
        let (_, again) = fold_model(&model, options).expect("the second fold of the same input failed");
        assert!(again.to_vec(model.bytes()).unwrap() == first, "folding the same input twice gave different bytes");
        let mut text = Vec::new();
        onnx_bcast::render::fold::write_fold_text(&mut text, PATH, Some("out.onnx"), &plan.summary, false).unwrap();
        shown(&text, "fold's text");
        let folded = decode(first.clone(), "the folded model");
        if let Ok((_, pieces)) = fold_model(&folded, options) {
            assert!(pieces.to_vec(folded.bytes()).unwrap() == first, "folding the folded model changed it again");
        }
    }
}

/// `bind_rewrite`: the first byte picks sizes for the model's input symbols (the rest is the model): 0, 1, small
/// sizes, or one past what ONNX allows. For every model that decodes, the analysis with those bindings (`check
/// --bind`) never panics and refuses a binding only with a `BindError`; `infer --bind` and `expand --bind`
/// never panic, and what they write decodes; text output stays safe.
pub fn bind_rewrite(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Some(model) = model(rest) else { return };
    let sizes = [0u64, 1, 2, 3, 7, 64, 1 << 40, u64::MAX];
    let pairs: Vec<(String, u64)> = input_symbols(model.proto())
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name, sizes[(usize::from(pick) + i * 3) % sizes.len()]))
        .collect();
    let Ok(bindings) = Bindings::new(&pairs) else { return };
    let request = Request { bindings: bindings.clone(), ..Default::default() };
    if let Ok(analysis) = analyze_model_request(&model, Options { value_facts: true }, &request, None) {
        let report = check(&analysis, CheckOptions::default());
        let mut text = Vec::new();
        render::write_text(&mut text, PATH, &report).unwrap();
        render::write_shapes_text(&mut text, PATH, &analysis).unwrap();
        shown(&text, "check --bind's text");
    }
    let options = InferOptions { bindings: bindings.clone(), ..Default::default() };
    if let Ok((_, pieces)) = infer_model(&model, &options) {
        decode(pieces.to_vec(model.bytes()).unwrap(), "the model inferred with bindings");
    }
    if let Ok((_, pieces)) = expand_model_bound(&model, ExpandOptions::default(), &bindings) {
        decode(pieces.to_vec(model.bytes()).unwrap(), "the model expanded with bindings");
    }
}
