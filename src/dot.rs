//! A Graphviz picture of the main graph: each broadcasting site coloured by its verdict, value shapes on the
//! edges, so that people can see where broadcasts happen.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::analysis::Analysis;
use crate::check::{report_verdict, Report};
use crate::proto::ModelProto;

/// Fill colours by verdict, light enough to read black text on.
fn colour(verdict: &str) -> &'static str {
    match verdict {
        "same" => "#d9f2d9",
        "broadcast" => "#fff2a8",
        "conditional" => "#ffc97a",
        "violation" => "#ff8f8f",
        _ => "#cfdcff",
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn quote(s: &str) -> String {
    format!("\"{}\"", escape(s))
}

/// A label of several lines, each escaped on its own.
fn lines(parts: &[&str]) -> String {
    let escaped: Vec<String> = parts.iter().map(|p| escape(p)).collect();
    format!("\"{}\"", escaped.join("\\n"))
}

/// The main graph as a `digraph`. Initializers appear only where they feed a broadcasting site.
pub fn main_graph(model: &ModelProto, analysis: &Analysis, report: &Report) -> String {
    let mut out = String::new();
    let Some(graph) = &model.graph else { return "digraph model {}\n".into() };
    let facts: HashMap<&str, &crate::tensor::ValueFacts> = analysis
        .graphs
        .iter()
        .find(|g| g.loc.is_empty())
        .map(|g| g.values.iter().map(|(n, f)| (n.as_str(), f)).collect())
        .unwrap_or_default();
    let sites: HashMap<usize, &crate::check::SiteReport> = report
        .sites
        .iter()
        .filter(|r| r.site.loc.graph.is_empty() && r.site.functions.is_empty())
        .map(|r| (r.site.loc.node, r))
        .collect();
    let shape_of = |name: &str| facts.get(name).map_or_else(|| "?".to_string(), |f| f.shape.to_string());
    let mut producer: HashMap<&str, String> = HashMap::new();
    let _ = writeln!(out, "digraph model {{");
    let _ = writeln!(out, "  rankdir=TB;");
    let _ = writeln!(
        out,
        "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=11];"
    );
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=9];");
    let initializers: std::collections::HashSet<&str> = graph.initializer.iter().map(|t| t.name()).collect();
    for input in graph.input.iter().filter(|i| !initializers.contains(i.name())) {
        let id = format!("in:{}", input.name());
        let label = lines(&[input.name(), &shape_of(input.name())]);
        let _ = writeln!(out, "  {} [shape=ellipse, fillcolor=\"#eeeeee\", label={label}];", quote(&id));
        producer.insert(input.name(), id);
    }
    for (i, node) in graph.node.iter().enumerate() {
        let id = format!("n{i}");
        let name = if node.name().is_empty() { format!("#{i}") } else { node.name().to_string() };
        let (fill, label) = match sites.get(&i) {
            Some(r) => {
                let verdict = report_verdict(r);
                (colour(verdict), lines(&[node.op_type(), &name, verdict]))
            }
            None => ("white", lines(&[node.op_type(), &name])),
        };
        let _ = writeln!(out, "  {id} [fillcolor=\"{fill}\", label={label}];");
        for input in node.input.iter().filter(|n| !n.is_empty()) {
            let from = match producer.get(input.as_str()) {
                Some(p) => p.clone(),
                // An initializer is drawn only where it feeds a site, as a small note.
                None if initializers.contains(input.as_str()) && sites.contains_key(&i) => {
                    let id = format!("init:{input}");
                    let _ = writeln!(out, "  {} [shape=note, fontsize=9, label={}];", quote(&id), quote(input));
                    producer.insert(input.as_str(), id.clone());
                    id
                }
                None => continue,
            };
            let _ = writeln!(out, "  {} -> {id} [label={}];", quote(&from), quote(&shape_of(input)));
        }
        for output in node.output.iter().filter(|n| !n.is_empty()) {
            producer.insert(output.as_str(), id.clone());
        }
    }
    for output in &graph.output {
        let id = format!("out:{}", output.name());
        let label = lines(&[output.name(), &shape_of(output.name())]);
        let _ = writeln!(out, "  {} [shape=ellipse, fillcolor=\"#eeeeee\", label={label}];", quote(&id));
        if let Some(p) = producer.get(output.name()) {
            let _ = writeln!(out, "  {} -> {};", quote(p), quote(&id));
        }
    }
    let _ = writeln!(out, "  subgraph cluster_legend {{ label=\"verdicts\"; fontname=\"Helvetica\"; fontsize=10;");
    for v in ["same", "broadcast", "conditional", "violation", "unknown"] {
        let _ = writeln!(out, "    \"legend:{v}\" [label=\"{v}\", fillcolor=\"{}\"];", colour(v));
    }
    let _ = writeln!(out, "  }}");
    let _ = writeln!(out, "}}");
    out
}
