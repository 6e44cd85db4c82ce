//! A Graphviz picture of a model: each broadcasting site coloured by its verdict, value shapes on the edges, and
//! the bodies of If/Loop/Scan nodes as clusters beside them, so that people can see where broadcasts happen.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::analysis::{Analysis, GraphStep};
use crate::check::{Report, SiteReport};
use crate::onnx::attr::Attrs;
use crate::onnx::pb::{GraphProto, ModelProto};
use crate::rules::Verdict;

/// A site's verdict as the picture shows it: its name and fill colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shade {
    Same,
    Broadcast,
    Conditional,
    Violation,
    Unknown,
}

impl Shade {
    /// In the legend's order.
    const ALL: [Shade; 5] = [Shade::Same, Shade::Broadcast, Shade::Conditional, Shade::Violation, Shade::Unknown];

    /// The verdict `check` reports for the site: a type mismatch makes it a violation whatever its shapes say.
    fn of(report: &SiteReport) -> Shade {
        if report.site.type_mismatch.is_some() {
            return Shade::Violation;
        }
        match &report.site.verdict {
            Verdict::Same => Shade::Same,
            Verdict::Broadcast => Shade::Broadcast,
            Verdict::Conditional(_) => Shade::Conditional,
            Verdict::Violation(_) => Shade::Violation,
            Verdict::Unknown => Shade::Unknown,
        }
    }

    /// The verdict's name, as in JSON output.
    fn name(self) -> &'static str {
        match self {
            Shade::Same => "same",
            Shade::Broadcast => "broadcast",
            Shade::Conditional => "conditional",
            Shade::Violation => "violation",
            Shade::Unknown => "unknown",
        }
    }

    /// The fill colour, light enough to read black text on.
    fn colour(self) -> &'static str {
        match self {
            Shade::Same => "#d9f2d9",
            Shade::Broadcast => "#fff2a8",
            Shade::Conditional => "#ffc97a",
            Shade::Violation => "#ff8f8f",
            Shade::Unknown => "#cfdcff",
        }
    }
}

/// Text in a DOT string: shown as [`crate::sys::escape::text`] shows it (no control character reaches the file), then
/// DOT's own escapes (`\\` and `\"`, so that graphviz prints the escapes as they are and never reads `\N` or `\G`
/// of a name as its own).
fn escape(shown: &str) -> String {
    shown.replace('\\', "\\\\").replace('"', "\\\"")
}

/// An id or a label: the whole text, escaped (ids stay unique).
fn quote(s: &str) -> String {
    format!("\"{}\"", escape(&crate::sys::escape::text(s)))
}

/// A label of several lines, each escaped on its own; names past [`crate::sys::escape::NAME_CHARS`] are shortened.
fn lines(parts: &[&str]) -> String {
    let escaped: Vec<String> = parts.iter().map(|p| escape(&crate::sys::escape::short(p))).collect();
    format!("\"{}\"", escaped.join("\\n"))
}

/// The model as a `digraph`: the main graph, and the bodies of its If/Loop/Scan nodes (at any depth) as clusters
/// beside the node that holds them. Initializers appear only where they feed a broadcasting site.
pub fn main_graph(model: &ModelProto, analysis: &Analysis, report: &Report) -> String {
    let mut out = String::new();
    let Some(graph) = &model.graph else { return "digraph model {}\n".into() };
    let _ = writeln!(out, "digraph model {{");
    // newrank: dot ranks nodes across clusters without the cluster-by-cluster pass that fails on edges into bodies.
    let _ = writeln!(out, "  rankdir=TB; newrank=true;");
    let _ = writeln!(
        out,
        "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=11];"
    );
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=9];");
    let drawer = Drawer { analysis, report };
    // Edges go after every node and cluster: an edge written inside a cluster would pull its outer end into it.
    let mut canvas = Canvas { nodes: out, edges: String::new() };
    drawer.graph(&mut canvas, graph, &[], "", &HashMap::new(), &HashMap::new());
    let mut out = canvas.nodes;
    out.push_str(&canvas.edges);
    let _ = writeln!(out, "  subgraph cluster_legend {{ label=\"verdicts\"; fontname=\"Helvetica\"; fontsize=10;");
    for shade in Shade::ALL {
        let (name, colour) = (shade.name(), shade.colour());
        let _ = writeln!(out, "    \"legend:{name}\" [label=\"{name}\", fillcolor=\"{colour}\"];");
    }
    let _ = writeln!(out, "  }}");
    let _ = writeln!(out, "}}");
    out
}

/// The picture being written: node and cluster statements, and the edges that follow them all.
struct Canvas {
    nodes: String,
    edges: String,
}

struct Drawer<'a> {
    analysis: &'a Analysis,
    report: &'a Report,
}

impl<'a> Drawer<'a> {
    /// One graph body; `prefix` keeps its node ids apart from every other body's, and `outer` names the producers
    /// of the enclosing graphs' values, which a body may read.
    fn graph(
        &self,
        canvas: &mut Canvas,
        graph: &GraphProto,
        loc: &[GraphStep],
        prefix: &str,
        outer: &HashMap<String, String>,
        outer_facts: &HashMap<&'a str, &'a crate::onnx::tensor::ValueFacts>,
    ) {
        // A body reads the values of the graphs around it too: their facts label those edges.
        let mut facts = outer_facts.clone();
        if let Some(g) = self.analysis.graphs.iter().find(|g| g.loc == loc) {
            facts.extend(g.values.iter().map(|(n, f)| (n.as_str(), f)));
        }
        let sites: HashMap<usize, &SiteReport> = self
            .report
            .sites
            .iter()
            .filter(|r| r.site.loc.graph == loc && r.site.functions.is_empty())
            .map(|r| (r.site.loc.node, r))
            .collect();
        let shape_of = |name: &str| facts.get(name).map_or_else(|| "?".to_string(), |f| f.shape.to_string());
        let mut producer = outer.clone();
        let initializers: std::collections::HashSet<&str> = graph.initializer.iter().map(|t| t.name()).collect();
        for input in graph.input.iter().filter(|i| !initializers.contains(i.name())) {
            let id = format!("{prefix}in:{}", input.name());
            let label = lines(&[input.name(), &shape_of(input.name())]);
            let _ = writeln!(canvas.nodes, "  {} [shape=ellipse, fillcolor=\"#eeeeee\", label={label}];", quote(&id));
            producer.insert(input.name().to_string(), id);
        }
        for (i, node) in graph.node.iter().enumerate() {
            let id = format!("{prefix}n{i}");
            self.node(canvas, node, i, &id, &sites, &initializers, &mut producer, &shape_of);
            // Each body beside its node, in a box of its own.
            for (attribute, name, k, body) in Attrs::new(node, None).graphs() {
                let inner = format!("{id}_{attribute}_{k}_");
                let mut steps = loc.to_vec();
                steps.push(GraphStep::Subgraph { node: i, attribute, graph: k });
                let _ = writeln!(canvas.nodes, "  subgraph {} {{", quote(&format!("cluster_{inner}")));
                let _ = writeln!(
                    canvas.nodes,
                    "  label={}; fontname=\"Helvetica\"; fontsize=10;",
                    quote(&format!("{} {name}", node.op_type()))
                );
                self.graph(canvas, body, &steps, &inner, &producer, &facts);
                let _ = writeln!(canvas.nodes, "  }}");
                if !body.node.is_empty() {
                    let _ = writeln!(
                        canvas.edges,
                        "  {} -> {} [style=dashed, label={}];",
                        quote(&id),
                        quote(&format!("{inner}n0")),
                        quote(name)
                    );
                }
            }
            for output in node.output.iter().filter(|n| !n.is_empty()) {
                producer.insert(output.to_string(), id.clone());
            }
        }
        for output in &graph.output {
            let id = format!("{prefix}out:{}", output.name());
            let label = lines(&[output.name(), &shape_of(output.name())]);
            let _ = writeln!(canvas.nodes, "  {} [shape=ellipse, fillcolor=\"#eeeeee\", label={label}];", quote(&id));
            if let Some(p) = producer.get(output.name()) {
                let _ = writeln!(canvas.edges, "  {} -> {};", quote(p), quote(&id));
            }
        }
    }

    /// One node, coloured by its site's verdict, with an edge from each input's producer labelled by its shape.
    #[allow(clippy::too_many_arguments)]
    fn node(
        &self,
        canvas: &mut Canvas,
        node: &crate::onnx::pb::NodeProto,
        i: usize,
        id: &str,
        sites: &HashMap<usize, &SiteReport>,
        initializers: &std::collections::HashSet<&str>,
        producer: &mut HashMap<String, String>,
        shape_of: &dyn Fn(&str) -> String,
    ) {
        let name = if node.name().is_empty() { format!("#{i}") } else { node.name().to_string() };
        let (fill, label) = match sites.get(&i) {
            Some(r) => {
                let shade = Shade::of(r);
                (shade.colour(), lines(&[node.op_type(), &name, shade.name()]))
            }
            None => ("white", lines(&[node.op_type(), &name])),
        };
        let _ = writeln!(canvas.nodes, "  {} [fillcolor=\"{fill}\", label={label}];", quote(id));
        for input in node.input.iter().filter(|n| !n.is_empty()) {
            let from = match producer.get(input.as_str()) {
                Some(p) => p.clone(),
                // An initializer is drawn only where it feeds a site, as a small note.
                None if initializers.contains(input.as_str()) && sites.contains_key(&i) => {
                    let init = format!("{id}:init:{input}");
                    let _ =
                        writeln!(canvas.nodes, "  {} [shape=note, fontsize=9, label={}];", quote(&init), quote(input));
                    producer.insert(input.to_string(), init.clone());
                    init
                }
                None => continue,
            };
            let _ = writeln!(canvas.edges, "  {} -> {} [label={}];", quote(&from), quote(id), quote(&shape_of(input)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze_model;
    use crate::check::{check, report_verdict, CheckOptions};
    use crate::onnx::model::Model;

    /// The picture names and colours the verdict `check` reports (a type mismatch as a violation), and the
    /// fixtures below have every verdict.
    #[test]
    fn shades_name_the_verdicts_check_reports() {
        let mut seen = Vec::new();
        for fixture in [
            "multidirectional_add_ok.onnx",
            "multidirectional_add_bad.onnx",
            "multidirectional_dtype_bad.onnx",
            "symbolic_batch.onnx",
            "symbolic_same.onnx",
            "inference/unknown_dim_against_fixed_size.onnx",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(fixture);
            let model = Model::open(&path).expect("the fixture loads");
            let report = check(&analyze_model(&model), CheckOptions::default());
            for site in &report.sites {
                assert_eq!(Shade::of(site).name(), report_verdict(site).to_string(), "{fixture}");
                seen.push(Shade::of(site));
            }
        }
        for shade in Shade::ALL {
            assert!(seen.contains(&shade), "no fixture has a {} site", shade.name());
        }
    }
}
