//! Lists the ops that stop shape inference in models with undecided sites: a development aid for choosing which
//! inference rules to write next. `cargo run --example opaque_ops -- MODEL...`
fn main() {
    let mut total = std::collections::BTreeMap::<String, usize>::new();
    for path in std::env::args().skip(1) {
        let Ok(model) = onnx_bcast::onnx::model::Model::open(&path) else { continue };
        let analysis = onnx_bcast::analysis::analyze(model.proto());
        if analysis.sites.iter().any(|s| matches!(s.verdict, onnx_bcast::rules::Verdict::Unknown)) {
            for (op, n) in analysis.opaque {
                *total.entry(op).or_default() += n;
            }
        }
    }
    let mut ranked: Vec<_> = total.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (op, n) in ranked.iter().take(40) {
        println!("{n:6} {op}");
    }
}
