//! Renderings of an `infer` run: a line per declaration that contradicts inference, then the totals; or the JSON
//! object.

use std::io::{self, Write};

use crate::diagnostic::Code;
use crate::rewrite::annotate::InferSummary;

/// The JSON object of an infer run.
pub fn infer_json(input: &str, output: Option<&str>, summary: &InferSummary) -> serde_json::Value {
    serde_json::json!({
        "input": input,
        "output": output,
        "written": output.is_some(),
        "values": summary.values,
        "declared": summary.declared,
        "completed": summary.completed,
        "kept": summary.kept,
        "resolved": summary.resolved,
        "static": summary.static_shapes,
        "inputs_bound": summary.inputs_bound,
        "functions_skipped": summary.functions_skipped,
        "mismatches": summary.mismatches.iter().map(|m| serde_json::json!({
            "code": Code::DeclaredShapeMismatch.as_str(),
            "graph": m.graph, "value": m.value, "message": crate::sys::escape::plain(&m.why), "replaced": m.replaced,
        })).collect::<Vec<_>>(),
    })
}

/// The text of an infer run: one line per contradicting declaration (replaced or kept), then the totals.
pub fn write_infer_text(
    out: &mut impl Write,
    input: &str,
    output: Option<&str>,
    summary: &InferSummary,
) -> io::Result<()> {
    use crate::sys::escape::text;
    let input = text(input);
    for m in &summary.mismatches {
        let fate = if m.replaced { "replaced" } else { "kept; --overwrite-declared replaces it" };
        let code = Code::DeclaredShapeMismatch.as_str();
        let lead =
            format!("{code} {}: ", crate::onnx::location::at(&m.graph, Some(&format!("value {}", m.value)), None));
        crate::render::brief::write_fitted(out, &input, &lead, &format!("{} ({fate})", m.why))?;
    }
    let target = match output {
        Some(o) => format!("wrote {}", text(o)),
        None => "dry run, nothing written".to_string(),
    };
    let skipped = match summary.functions_skipped {
        0 => String::new(),
        n => format!(", {n} function bodies left as they are (IR version below 10)"),
    };
    writeln!(
        out,
        "{input}: {} values: {} declared, {} declarations completed, {} kept; {} fully resolved ({} static); {} inputs bound, {} mismatches{skipped}; {target}",
        summary.values,
        summary.declared,
        summary.completed,
        summary.kept,
        summary.resolved,
        summary.static_shapes,
        summary.inputs_bound,
        summary.mismatches.len(),
    )
}
