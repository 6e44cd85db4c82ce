//! Renderings of an `expand` run: the text summary (a line per site made explicit or left implicit, then the
//! totals) and the JSON object.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::rewrite::expand::ExpandSummary;
use crate::sys::escape::{plain, text};

/// The JSON object of an expand run: names whole.
pub fn expand_json(input: &str, output: Option<&str>, summary: &ExpandSummary) -> serde_json::Value {
    serde_json::to_value(ExpandJson::new(input, output, summary)).expect("an expand summary is JSON")
}

/// The JSON object of an expand run ([`expand_json`]'s, with `verified` at the end when given), serialized straight
/// from the summary: a large model's 100,000 actions made into a tree of values first cost twice what planning them
/// did, and as much again to write.
#[derive(serde::Serialize)]
pub struct ExpandJson<'a> {
    input: &'a str,
    output: Option<&'a str>,
    written: bool,
    sites: usize,
    made_explicit: usize,
    expands_inserted: usize,
    expands_shared: usize,
    materialized: usize,
    nodes_added: usize,
    actions: Actions<'a>,
    left: Left<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verified: Option<bool>,
}

impl<'a> ExpandJson<'a> {
    pub fn new(input: &'a str, output: Option<&'a str>, summary: &'a ExpandSummary) -> Self {
        ExpandJson {
            input,
            output,
            written: output.is_some(),
            sites: summary.sites,
            made_explicit: summary.made_explicit,
            expands_inserted: summary.expands_inserted,
            expands_shared: summary.expands_shared,
            materialized: summary.materialized,
            nodes_added: summary.nodes_added,
            actions: Actions(&summary.actions),
            left: Left(&summary.left),
            verified: None,
        }
    }

    /// With `"verified"`: whether `--verify` found the outputs alike.
    pub fn verified(self, verified: bool) -> Self {
        ExpandJson { verified: Some(verified), ..self }
    }
}

/// The actions, an object each: steps and conditions plain.
struct Actions<'a>(&'a [crate::rewrite::expand::Action]);

impl serde::Serialize for Actions<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|a| {
            let steps: Vec<_> = a.steps().collect();
            let conditions: Vec<_> = a.conditions.iter().map(|c| plain(c)).collect();
            ActionJson { graph: a.graph(), node: a.node(), op: a.op(), steps, conditions }
        }))
    }
}

#[derive(serde::Serialize)]
struct ActionJson<'a> {
    graph: &'a str,
    node: &'a str,
    op: &'a str,
    steps: Vec<Cow<'a, str>>,
    conditions: Vec<Cow<'a, str>>,
}

/// The sites left implicit, an object each: the reason plain.
struct Left<'a>(&'a [crate::rewrite::expand::LeftSite]);

impl serde::Serialize for Left<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|l| LeftJson {
            graph: &l.graph,
            node: &l.node,
            op: &l.op,
            kind: l.kind().as_str(),
            reason: plain(&l.reason.to_string()).into_owned(),
        }))
    }
}

#[derive(serde::Serialize)]
struct LeftJson<'a> {
    graph: &'a str,
    node: &'a str,
    op: &'a str,
    kind: &'a str,
    reason: String,
}

/// How many bytes of the sites' lines [`write_expand_text`] gathers before it writes them: one at a time, each line
/// cost a call into the writer (100,000 for a large model), and the writer's buffer of 8 KiB a write to the system
/// every 80 lines.
const GATHERED: usize = 64 << 10;

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
        // A line per site: put together in one buffer when its parts are shown as they are written (the plan put
        // such a line together already), the lines gathered there and written [`GATHERED`] bytes at a time.
        let lead = format!("{input}: ");
        let mut lines = String::with_capacity(GATHERED + 4096);
        for a in &summary.actions {
            let at = lines.len();
            lines.push_str(&lead);
            if let Some(start) = a.push_shown(&mut lines) {
                if crate::render::brief::fits_as_written(&lines[at..], lead.len(), start - at) {
                    lines.push('\n');
                    if lines.len() >= GATHERED {
                        out.write_all(lines.as_bytes())?;
                        lines.clear();
                    }
                    continue;
                }
            }
            // The lines before this one go out first.
            lines.truncate(at);
            out.write_all(lines.as_bytes())?;
            lines.clear();
            let steps: Vec<_> = a.marked_steps().collect();
            let text: std::borrow::Cow<'_, str> = match (steps.as_slice(), a.conditions.is_empty()) {
                ([step], true) => step.as_ref().into(),
                (steps, true) => steps.join("; ").into(),
                (steps, false) => {
                    format!("{} (still holds only if {})", steps.join("; "), crate::rules::all_of(&a.conditions)).into()
                }
            };
            let mut at = crate::onnx::location::at(a.graph(), Some(a.node()), Some(a.op()));
            at.push_str(": ");
            crate::render::brief::write_fitted(out, &input, &at, &text)?;
        }
        out.write_all(lines.as_bytes())?;
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
    use crate::rewrite::expand::{Action, ActionText};
    use crate::sizes::shape::parse_shape;
    use crate::sys::escape::name;

    /// The line of each site as the general way writes it from its parts, each step with its name marked: the
    /// location escaped and shortened part by part, the text fitted by [`crate::render::brief::write_fitted`].
    fn line_the_long_way(
        input: &str,
        (graph, node, op): (&str, &str, &str),
        steps: &[String],
        conditions: &[String],
    ) -> Vec<u8> {
        let mut at = crate::onnx::location::at(graph, Some(node), Some(op));
        at.push_str(": ");
        let said = match conditions.is_empty() {
            true => steps.join("; "),
            false => format!("{} (still holds only if {})", steps.join("; "), crate::rules::all_of(conditions)),
        };
        let mut out = Vec::new();
        crate::render::brief::write_fitted(&mut out, &text(input), &at, &said).unwrap();
        out
    }

    #[test]
    fn the_json_written_straight_from_the_summary_is_the_object_built_as_values() {
        use crate::rewrite::expand::{LeftReason, LeftSite};
        let marked =
            [format!("{} [64] -> Expand to [N, 64]", name("x\"y")), format!("{} [] -> Expand to [N, 64]", name("z"))];
        let conditions = vec!["N ∈ {1, 8}".to_string()];
        let actions = vec![
            Action::new("main", "n\u{1b}", "Add", &marked, conditions).expect("a short text"),
            Action::new("main/If_0/then_branch", "#3 (Mul)", "Mul", &marked[..1], vec![]).expect("a short text"),
        ];
        let left = |reason| LeftSite { graph: "main".into(), node: "m".into(), op: "Sub".into(), reason };
        let left = vec![left(LeftReason::BreaksRule), left(LeftReason::LegacyAxisNeedsStaticShapes)];
        let summary =
            ExpandSummary { sites: 4, made_explicit: 2, expands_inserted: 3, actions, left, ..Default::default() };
        for output in [Some("out.onnx"), None] {
            // The object as a tree of values, `verified` added at the end as a key of its own.
            let mut tree = serde_json::json!({
                "input": "in\"put", "output": output, "written": output.is_some(), "sites": summary.sites,
                "made_explicit": summary.made_explicit, "expands_inserted": summary.expands_inserted,
                "expands_shared": summary.expands_shared, "materialized": summary.materialized,
                "nodes_added": summary.nodes_added,
                "actions": summary.actions.iter().map(|a| serde_json::json!({
                    "graph": a.graph(), "node": a.node(), "op": a.op(), "steps": a.steps().collect::<Vec<_>>(),
                    "conditions": a.conditions.iter().map(|c| plain(c)).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "left": summary.left.iter().map(|l| serde_json::json!({
                    "graph": l.graph, "node": l.node, "op": l.op, "kind": l.kind().as_str(),
                    "reason": plain(&l.reason.to_string()),
                })).collect::<Vec<_>>(),
            });
            let written = ExpandJson::new("in\"put", output, &summary);
            assert_eq!(serde_json::to_string(&written).unwrap(), tree.to_string());
            assert_eq!(expand_json("in\"put", output, &summary), tree);
            tree["verified"] = serde_json::Value::Bool(false);
            assert_eq!(serde_json::to_string(&written.verified(false)).unwrap(), tree.to_string());
        }
    }

    #[test]
    fn each_sites_line_is_the_one_its_parts_fitted_one_by_one_give() {
        let long = "n".repeat(100);
        let nines = vec!["9"; 120].join(",");
        let at_limit = "x".repeat(crate::sys::escape::NAME_CHARS);
        let past_limit = "x".repeat(crate::sys::escape::NAME_CHARS + 1);
        let deep = "g/".repeat(100);
        // (graph, node, op, [(input, target shape)], conditions)
        type Case<'a> = (&'a str, &'a str, &'a str, Vec<(&'a str, &'a str)>, Vec<String>);
        let cases: Vec<Case> = vec![
            ("main", "node_0", "Sub", vec![("small_0", "8,64")], vec![]),
            ("main", "#3 (Add)", "Add", vec![("a", "8,64"), ("b", "8,64")], vec![]),
            ("main", "#3 (Add)", "Mul", vec![("a", "8,64")], vec![]),
            ("main", "n", "Add", vec![("x", "N,64")], vec!["N ∈ {1, 8}".into()]),
            ("main", "bad\nname", "Add", vec![("x", "8,64")], vec![]),
            ("main", &long, "Add", vec![(&long, "8,64")], vec![]),
            ("main", "n", "Add", vec![("x\u{1b}", "8,64")], vec![]),
            ("main", "n", "Add", vec![(": x", "8,64")], vec![]),
            ("main", "n", "Add", vec![(&at_limit, "8,64")], vec![]),
            ("main", "n", "Add", vec![(&past_limit, "8,64")], vec![]),
            ("main", "n", "Add", vec![("x\u{FDD0}y", "8,64")], vec![]),
            ("main", "n", "Add", vec![("x", "N\u{FDD0}M,64"), ("y", "8,64")], vec![]),
            ("main", "n", "Add", vec![("x", "Länge,64")], vec![]),
            ("main", "n", "Add", vec![("x", &nines)], vec![]),
            (&deep, "n", "Add", vec![("x", "8,64")], vec![]),
            // Back to a graph of before, after a site whose steps were marked anew.
            ("main", "n", "Add", vec![("x", "N\u{FDD0}M,64")], vec![]),
            ("main", "node_1", "Sub", vec![("small_1", "8,64")], vec![]),
            // Back to a graph other than the main one, after the main graph's, whose path the text leaves out; and
            // a second site of it, whose text keeps the path of the first.
            (&deep, "n", "Add", vec![("x", "8,64")], vec![]),
            (&deep, "m", "Mul", vec![("y", "8,64")], vec![]),
            ("main/If_0/then_branch", "n", "Add", vec![("x", "8,64")], vec![]),
            ("main/If_0/then_branch", "m", "Add", vec![("x", "8,64")], vec![]),
        ];
        let mut actions = Vec::new();
        let mut expected = Vec::new();
        // One text for every site, as the plan keeps it from site to site. The cases over and over, until the
        // lines are more than the summary gathers before it writes them, twice.
        let mut text = ActionText::default();
        let round: usize = cases.iter().map(|(_, node, ..)| node.len() + 40).sum();
        let rounds = std::iter::repeat_n(&cases, 2 * GATHERED / round + 1);
        for (graph, node, op, steps, conditions) in rounds.flatten() {
            // As the plan puts the action together, and its steps as they were written with their names marked.
            text.begin(graph, node, op);
            let mut marked = Vec::new();
            for (input, to) in steps {
                text.step(input, &parse_shape("64"), "Expand to", &parse_shape(to), "");
                marked.push(format!("{} [64] -> Expand to {}", name(input), parse_shape(to)));
            }
            let action = text.finish(conditions.clone()).expect("a short text");
            assert_eq!(Ok(&action), Action::new(graph, node, op, &marked, conditions.clone()).as_ref());
            expected.extend(line_the_long_way("in:put\n.onnx", (graph, node, op), &marked, conditions));
            actions.push(action);
        }
        let summary = ExpandSummary { actions, ..Default::default() };
        let mut out = Vec::new();
        write_expand_text(&mut out, "in:put\n.onnx", None, &summary, false).unwrap();
        let totals = out.len() - out.iter().rev().skip(1).position(|&b| b == b'\n').unwrap_or(out.len() - 1) - 1;
        expected.extend_from_slice(&out[totals..]);
        assert!(out.len() > 2 * GATHERED, "{}", out.len());
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
    }
}
