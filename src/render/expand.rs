//! Renderings of an `expand` run: the text summary (a line per site made explicit or left implicit, then the
//! totals) and the JSON object.

use std::io::{self, Write};

use crate::rewrite::expand::ExpandSummary;
use crate::sys::escape::{plain, text};

/// The JSON object of an expand run: names whole.
pub fn expand_json(input: &str, output: Option<&str>, summary: &ExpandSummary) -> serde_json::Value {
    serde_json::json!({
        "input": input,
        "output": output,
        "written": output.is_some(),
        "sites": summary.sites,
        "made_explicit": summary.made_explicit,
        "expands_inserted": summary.expands_inserted,
        "expands_shared": summary.expands_shared,
        "materialized": summary.materialized,
        "nodes_added": summary.nodes_added,
        "actions": summary.actions.iter().map(|a| serde_json::json!({
            "graph": a.graph, "node": a.node, "op": a.op,
            "steps": a.steps.iter().map(|s| plain(s)).collect::<Vec<_>>(),
            "conditions": a.conditions.iter().map(|c| plain(c)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "left": summary.left.iter().map(|l| serde_json::json!({
            "graph": l.graph, "node": l.node, "op": l.op, "kind": l.kind().as_str(), "reason": plain(&l.reason.to_string()),
        })).collect::<Vec<_>>(),
    })
}

/// The text of an expand run: unless `quiet`, one line per site made explicit (what each input became, and the
/// condition on symbols the site still holds under, if any); a line per site left implicit; then the totals. Paths
/// and names are shown as [`crate::sys::escape`] shows them.
pub fn write_expand_text(
    out: &mut impl Write,
    input: &str,
    output: Option<&str>,
    summary: &ExpandSummary,
    quiet: bool,
) -> io::Result<()> {
    let input = text(input);
    if !quiet {
        // A line per site: put together in one buffer, reused, when its parts are shown as they are written. Every
        // line starts with the input's path, kept in the buffer.
        let mut line = format!("{input}: ");
        let lead = line.len();
        for a in &summary.actions {
            let text: std::borrow::Cow<'_, str> = match (a.steps.as_slice(), a.conditions.is_empty()) {
                ([step], true) => step.into(),
                (steps, true) => steps.join("; ").into(),
                (steps, false) => {
                    format!("{} (still holds only if {})", steps.join("; "), crate::rules::all_of(&a.conditions)).into()
                }
            };
            line.truncate(lead);
            if crate::onnx::location::push_plain_at(&mut line, &a.graph, Some(&a.node), Some(&a.op)) {
                line.push_str(": ");
                if crate::render::brief::push_fitted_as_written(&mut line, lead, &text) {
                    line.push('\n');
                    out.write_all(line.as_bytes())?;
                    continue;
                }
            }
            let mut at = crate::onnx::location::at(&a.graph, Some(&a.node), Some(&a.op));
            at.push_str(": ");
            crate::render::brief::write_fitted(out, &input, &at, &text)?;
        }
    }
    for l in &summary.left {
        let at = crate::onnx::location::at(&l.graph, Some(&l.node), Some(&l.op));
        crate::render::brief::write_fitted(out, &input, &format!("left implicit {at}: "), &l.reason.to_string())?;
    }
    let target = match output {
        Some(o) => format!("wrote {}", text(o)),
        None => "dry run, nothing written".to_string(),
    };
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    writeln!(
        out,
        "{input}: {} of {} made explicit, {} inserted ({} shared), {} materialized, {} added, {} left; {target}",
        summary.made_explicit,
        plural(summary.sites, "site", "sites"),
        plural(summary.expands_inserted, "Expand", "Expands"),
        summary.expands_shared,
        plural(summary.materialized, "constant", "constants"),
        plural(summary.nodes_added, "node", "nodes"),
        summary.left.len(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::expand::Action;
    use crate::sys::escape::name;

    /// The line of each site as the general way writes it: the location escaped and shortened part by part, the
    /// text fitted by [`crate::render::brief::write_fitted`].
    fn line_the_long_way(input: &str, a: &Action) -> Vec<u8> {
        let mut at = crate::onnx::location::at(&a.graph, Some(&a.node), Some(&a.op));
        at.push_str(": ");
        let said = match a.conditions.is_empty() {
            true => a.steps.join("; "),
            false => format!("{} (still holds only if {})", a.steps.join("; "), crate::rules::all_of(&a.conditions)),
        };
        let mut out = Vec::new();
        crate::render::brief::write_fitted(&mut out, &text(input), &at, &said).unwrap();
        out
    }

    #[test]
    fn each_sites_line_is_the_one_its_parts_fitted_one_by_one_give() {
        let action = |graph: &str, node: &str, op: &str, steps: Vec<String>, conditions: Vec<String>| Action {
            graph: graph.into(),
            node: node.into(),
            op: op.into(),
            steps,
            conditions,
        };
        let step = |n: &str, to: &str| format!("{} [64] -> Expand to {to}", name(n));
        let long = "n".repeat(100);
        let actions = vec![
            action("main", "node_0", "Sub", vec![step("small_0", "[8, 64]")], vec![]),
            action("main", "#3 (Add)", "Add", vec![step("a", "[8, 64]"), step("b", "[8, 64]")], vec![]),
            action("main", "n", "Add", vec![step("x", "[N, 64]")], vec!["N ∈ {1, 8}".into()]),
            action("main", "bad\nname", "Add", vec![step("x", "[8, 64]")], vec![]),
            action("main", &long, "Add", vec![step(&long, "[8, 64]")], vec![]),
            action("main", "n", "Add", vec![step("x\u{1b}", "[8, 64]")], vec![]),
            action("main", "n", "Add", vec![step("x", &format!("[{}]", "9, ".repeat(120)))], vec![]),
            action(&"g/".repeat(100), "n", "Add", vec![step("x", "[8, 64]")], vec![]),
        ];
        let summary = ExpandSummary { actions, ..Default::default() };
        let mut out = Vec::new();
        write_expand_text(&mut out, "in:put\n.onnx", None, &summary, false).unwrap();
        let mut expected: Vec<u8> =
            summary.actions.iter().flat_map(|a| line_the_long_way("in:put\n.onnx", a)).collect();
        let totals = out.len() - out.iter().rev().skip(1).position(|&b| b == b'\n').unwrap_or(out.len() - 1) - 1;
        expected.extend_from_slice(&out[totals..]);
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
    }
}
