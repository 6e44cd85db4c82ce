//! Renderings of a `fold` run: the text summary (a line per broadcast folded or kept, then the totals) and the
//! JSON object, whose `kept[].reason` is the reason's kind (an enum, see [`crate::rewrite::fold::KeptReason::kind`]) with
//! its fields.

use std::io::{self, Write};

use serde_json::{json, Value};

use crate::rewrite::fold::{FoldSummary, KeptReason};

/// A kept broadcast's reason as JSON: `kind`, the consumer it is about, its details, and the sentence.
fn reason_json(reason: &KeptReason) -> Value {
    let mut v = json!({ "kind": reason.kind(), "message": crate::sys::escape::plain(&reason.to_string()) });
    if let Some((node, op)) = reason.consumer() {
        v["consumer"] = json!({ "node": node, "op": op });
    }
    match reason {
        KeptReason::NotBroadcastingConsumer { input, .. } => v["input"] = json!(input),
        KeptReason::ConsumerConditional { conditions, .. } | KeptReason::BroadcastConditional { conditions } => {
            v["conditions"] = json!(conditions.iter().map(ToString::to_string).collect::<Vec<_>>())
        }
        KeptReason::OutputChanges { from, to, .. } => {
            v["from"] = json!(from.to_string());
            v["to"] = json!(to.to_string());
        }
        _ => {}
    }
    v
}

/// A broadcast's function frames as `check`'s JSON lists a site's (`[{"function", "node"}]`, empty outside
/// functions).
fn frames_json(frames: &[crate::analysis::FunctionFrame]) -> Value {
    json!(frames.iter().map(|f| json!({ "function": f.function, "node": f.node })).collect::<Vec<_>>())
}

/// The JSON object of a fold run.
pub fn fold_json(input: &str, output: Option<&str>, summary: &FoldSummary) -> Value {
    json!({
        "input": input,
        "output": output,
        "written": output.is_some(),
        "candidates": summary.candidates,
        "folded_count": summary.folded.len(),
        "removed_with_count": summary.removed_with.len(),
        "kept_count": summary.kept.len(),
        "nodes_removed": summary.nodes_removed,
        "initializers_removed": summary.initializers_removed,
        "constants_shrunk": summary.constants_shrunk,
        "folded": summary.folded.iter().map(|f| json!({
            "graph": f.graph, "node": f.node, "op": f.op, "functions": frames_json(&f.functions),
            "form": f.form.as_str(), "source": f.source, "into": f.into,
        })).collect::<Vec<_>>(),
        "removed_with": summary.removed_with.iter().map(|r| json!({
            "graph": r.graph, "node": r.node, "op": r.op, "form": r.form.as_str(), "with": r.with,
        })).collect::<Vec<_>>(),
        "kept": summary.kept.iter().map(|k| json!({
            "graph": k.graph, "node": k.node, "op": k.op, "functions": frames_json(&k.functions),
            "form": k.form.as_str(), "reason": reason_json(&k.reason),
        })).collect::<Vec<_>>(),
    })
}

/// The text of a fold run: unless `quiet`, one line per broadcast folded (the consumers that read its source now);
/// a line per broadcast kept, with the reason; then the totals.
pub fn write_fold_text(
    out: &mut impl Write,
    input: &str,
    output: Option<&str>,
    summary: &FoldSummary,
    quiet: bool,
) -> io::Result<()> {
    use crate::render::function_frames;
    use crate::sys::escape::text;
    let input = text(input);
    if !quiet {
        for f in &summary.folded {
            let into: Vec<_> = f.into.iter().map(|n| crate::sys::escape::name(n).to_string()).collect();
            let into = if into.is_empty() { String::new() } else { format!(" into {}", into.join(", ")) };
            let at = crate::onnx::location::at(&f.graph, Some(&f.node), Some(&f.op));
            let frames = function_frames(&f.functions);
            let text = format!("{frames}{} read directly{into}", crate::sys::escape::name(&f.source));
            crate::render::brief::write_fitted(out, &input, &format!("folded {at}: "), &text)?;
        }
    }
    for r in &summary.removed_with {
        let at = crate::onnx::location::at(&r.graph, Some(&r.node), Some(&r.op));
        let text = format!("with {}, which alone read it", r.with.join(", "));
        crate::render::brief::write_fitted(out, &input, &format!("removed {at} "), &text)?;
    }
    for k in &summary.kept {
        let at = crate::onnx::location::at(&k.graph, Some(&k.node), Some(&k.op));
        let reason = format!("{}{}", function_frames(&k.functions), k.reason);
        crate::render::brief::write_fitted(out, &input, &format!("kept {at}: "), &reason)?;
    }
    let target = match output {
        Some(o) => format!("wrote {}", text(o)),
        None => "dry run, nothing written".to_string(),
    };
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let removed_with = match summary.removed_with.len() {
        0 => String::new(),
        n => format!(", {n} removed with them"),
    };
    writeln!(
        out,
        "{input}: {} of {} folded{removed_with}, {} kept; {} removed, {} removed, {} shrunk; {target}",
        summary.folded.len(),
        plural(summary.candidates, "explicit broadcast", "explicit broadcasts"),
        summary.kept.len(),
        plural(summary.nodes_removed, "node", "nodes"),
        plural(summary.initializers_removed, "initializer", "initializers"),
        plural(summary.constants_shrunk, "constant", "constants"),
    )
}
