//! Renderings of a check report: one text line per finding plus a summary, or one JSON object per model.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::check::{report_verdict, Finding, Report, SiteReport};
use crate::shape::{Dim, Shape};

/// A shape as JSON: null for an unknown rank, else a list of integers, symbol strings and nulls (unknown dims).
pub fn shape_json(shape: &Shape) -> Value {
    match shape.dims() {
        None => Value::Null,
        Some(dims) => Value::Array(
            dims.iter()
                .map(|d| match d {
                    Dim::Known(n) => Value::from(*n),
                    Dim::Unknown => Value::Null,
                    other => Value::from(other.to_string()),
                })
                .collect(),
        ),
    }
}

#[derive(Serialize)]
struct JsonInput<'a> {
    name: &'a str,
    shape: Value,
}

#[derive(Serialize)]
struct JsonFunction<'a> {
    function: &'a str,
    node: &'a str,
}

#[derive(Serialize)]
struct JsonSite<'a> {
    graph: &'a str,
    node: &'a str,
    op: &'a str,
    rule: &'static str,
    inputs: Vec<JsonInput<'a>>,
    output_shape: Value,
    verdict: &'static str,
    message: &'a str,
    code: Option<&'static str>,
    axis: Option<usize>,
    offending_input: Option<&'a str>,
    conditions: &'a [String],
    functions: Vec<JsonFunction<'a>>,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    code: &'static str,
    severity: &'static str,
    graph: &'a str,
    node: Option<&'a str>,
    op: Option<&'a str>,
    message: &'a str,
}

#[derive(Serialize)]
struct JsonSummary {
    sites: usize,
    same: usize,
    broadcast: usize,
    violations: usize,
    conditional: usize,
    unknown: usize,
    errors: usize,
    warnings: usize,
    /// Nodes whose op no inference rule knows.
    opaque_nodes: usize,
}

#[derive(Serialize)]
struct JsonModel<'a> {
    model: &'a str,
    sites: Vec<JsonSite<'a>>,
    findings: Vec<JsonFinding<'a>>,
    summary: JsonSummary,
    opaque_ops: &'a std::collections::BTreeMap<String, usize>,
}

fn json_site(r: &SiteReport) -> JsonSite<'_> {
    let s = &r.site;
    JsonSite {
        graph: &s.graph,
        node: &s.node,
        op: &s.op,
        rule: s.rule.as_str(),
        inputs: s.inputs.iter().map(|i| JsonInput { name: &i.name, shape: shape_json(&i.shape) }).collect(),
        output_shape: shape_json(&s.output_shape),
        verdict: report_verdict(r),
        message: &r.message,
        code: r.code.map(|c| c.as_str()),
        axis: r.axis,
        offending_input: r.offending_input.as_deref(),
        conditions: &r.conditions,
        functions: s.functions.iter().map(|f| JsonFunction { function: &f.function, node: &f.node }).collect(),
    }
}

fn json_finding(f: &Finding) -> JsonFinding<'_> {
    JsonFinding {
        code: f.code.as_str(),
        severity: f.severity.as_str(),
        graph: &f.graph,
        node: f.node.as_deref(),
        op: f.op.as_deref(),
        message: &f.message,
    }
}

/// The JSON object of one model's report.
pub fn report_json(path: &str, report: &Report) -> Value {
    let s = report.summary;
    let model = JsonModel {
        model: path,
        sites: report.sites.iter().map(json_site).collect(),
        findings: report.findings.iter().map(json_finding).collect(),
        summary: JsonSummary {
            sites: s.sites,
            same: s.same,
            broadcast: s.broadcast,
            violations: s.violations,
            conditional: s.conditional,
            unknown: s.unknown,
            errors: s.errors,
            warnings: s.warnings,
            opaque_nodes: report.opaque.values().sum(),
        },
        opaque_ops: &report.opaque,
    };
    serde_json::to_value(model).expect("report serializes")
}

/// The JSON object for a model that could not be checked.
pub fn error_json(path: &str, message: &str) -> Value {
    serde_json::json!({ "model": path, "error": message })
}

/// One line per finding, `PATH: SEVERITY[CODE] GRAPH/NODE (OP): message`, then the summary line.
pub fn write_text(out: &mut impl Write, path: &str, report: &Report) -> io::Result<()> {
    for f in &report.findings {
        let location = match (&f.node, &f.op) {
            (Some(node), Some(op)) => format!("{}/{} ({})", f.graph, node, op),
            (Some(node), None) => format!("{}/{}", f.graph, node),
            _ => f.graph.clone(),
        };
        writeln!(out, "{path}: {}[{}] {location}: {}", f.severity.as_str(), f.code, f.message)?;
    }
    let s = report.summary;
    let plural = |n: usize, word: &str| if n == 1 { format!("{n} {word}") } else { format!("{n} {word}s") };
    writeln!(
        out,
        "{path}: {}: {} same, {} broadcast, {}, {} conditional, {} unknown",
        plural(s.sites, "site"),
        s.same,
        s.broadcast,
        plural(s.violations, "violation"),
        s.conditional,
        s.unknown
    )
}

/// The JSON object of an expand run.
pub fn expand_json(input: &str, output: Option<&str>, summary: &crate::expand::ExpandSummary) -> Value {
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
            "graph": a.graph, "node": a.node, "op": a.op, "steps": a.steps,
        })).collect::<Vec<_>>(),
        "left": summary.left.iter().map(|l| serde_json::json!({
            "graph": l.graph, "node": l.node, "op": l.op, "reason": l.reason,
        })).collect::<Vec<_>>(),
    })
}

/// The text summary of an expand run; with `plan`, every action too (for `--dry-run`).
pub fn write_expand_text(
    out: &mut impl Write,
    input: &str,
    output: Option<&str>,
    summary: &crate::expand::ExpandSummary,
    plan: bool,
) -> io::Result<()> {
    if plan {
        for a in &summary.actions {
            for step in &a.steps {
                writeln!(out, "{input}: {}/{} ({}): {step}", a.graph, a.node, a.op)?;
            }
        }
    }
    for l in &summary.left {
        writeln!(out, "{input}: left implicit {}/{} ({}): {}", l.graph, l.node, l.op, l.reason)?;
    }
    let target = match output {
        Some(o) => format!("wrote {o}"),
        None => "dry run, nothing written".to_string(),
    };
    writeln!(
        out,
        "{input}: {} of {} sites made explicit, {} Expand inserted ({} shared), {} constants materialized, {} nodes added, {} left; {target}",
        summary.made_explicit,
        summary.sites,
        summary.expands_inserted,
        summary.expands_shared,
        summary.materialized,
        summary.nodes_added,
        summary.left.len(),
    )
}

fn elem_name(elem: Option<i32>) -> String {
    elem.map_or_else(|| "?".to_string(), crate::tensor::elem_type_name)
}

/// Every value's inferred element type and shape, graph by graph.
pub fn write_shapes_text(out: &mut impl Write, path: &str, analysis: &crate::analysis::Analysis) -> io::Result<()> {
    for g in &analysis.graphs {
        writeln!(out, "{path}: graph {}", g.path)?;
        for (name, facts) in &g.values {
            writeln!(out, "  {name}: {} {}", elem_name(facts.elem), facts.shape)?;
        }
    }
    write_opaque(out, path, &analysis.opaque)
}

/// The ops no inference rule knows, which leave their outputs unknown.
pub fn write_opaque(
    out: &mut impl Write,
    path: &str,
    opaque: &std::collections::BTreeMap<String, usize>,
) -> io::Result<()> {
    if opaque.is_empty() {
        return Ok(());
    }
    let nodes: usize = opaque.values().sum();
    let ops: Vec<String> = opaque.iter().map(|(op, n)| format!("{op} ×{n}")).collect();
    writeln!(out, "{path}: inference stopped at {nodes} node(s) of ops it has no rule for: {}", ops.join(", "))
}

pub fn shapes_json(path: &str, analysis: &crate::analysis::Analysis) -> Value {
    serde_json::json!({
        "model": path,
        "graphs": analysis.graphs.iter().map(|g| serde_json::json!({
            "graph": g.path,
            "values": g.values.iter().map(|(name, f)| serde_json::json!({
                "name": name,
                "elem_type": f.elem.map(crate::tensor::elem_type_name),
                "shape": shape_json(&f.shape),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "opaque_ops": analysis.opaque,
    })
}
