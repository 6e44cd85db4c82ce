//! Renderings of a check report: one text line per finding plus a summary (optionally coloured), one JSON object
//! per model, GitHub Actions workflow commands, or one SARIF 2.1.0 log for a whole run.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::check::{report_verdict, Finding, Report, SiteReport};
use crate::diagnostic::{Code, Severity};
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
    message: String,
    code: Option<&'static str>,
    axis: Option<usize>,
    offending_input: Option<&'a str>,
    conditions: &'a [String],
    functions: Vec<JsonFunction<'a>>,
    constraints: Vec<Value>,
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
        message: r.message(),
        code: r.code.map(|c| c.as_str()),
        axis: r.axis,
        offending_input: r.offending_input.as_deref(),
        conditions: &r.conditions,
        functions: s.functions.iter().map(|f| JsonFunction { function: &f.function, node: &f.node }).collect(),
        constraints: match &s.verdict {
            crate::broadcast::Verdict::Conditional(conditions) => conditions.iter().map(constraint_json).collect(),
            _ => Vec::new(),
        },
    }
}

/// A dim as a JSON value: its size, or its expression.
fn dim_json(dim: &Dim) -> Value {
    match dim {
        Dim::Known(n) => Value::from(*n),
        other => Value::from(other.to_string()),
    }
}

/// One condition of a conditional site, structured: `{"axis", "symbol", "values"}` when a symbol must take one of
/// some values, `{"axis", "expression", "values"}` when an expression must, `{"axis", "equal_or_one": [dims]}` when
/// dims must be equal or 1, `{"axis", "input", "unknown_dim_values"}` when an unknown dim of rule input `input`
/// must, and `{"axis", "symbol" or "expression", "at_most"}` for a size capped by a buffer (`seq ≤ 512`).
fn constraint_json(condition: &crate::broadcast::Condition) -> Value {
    use crate::broadcast::ConditionKind;
    match &condition.kind {
        ConditionKind::OneOf { dim, options } => {
            let key = if matches!(dim, Dim::Sym(_)) { "symbol" } else { "expression" };
            serde_json::json!({
                "axis": condition.axis,
                key: dim.to_string(),
                "values": options.iter().map(dim_json).collect::<Vec<_>>(),
            })
        }
        ConditionKind::EqualOrOne { dims } => serde_json::json!({
            "axis": condition.axis,
            "equal_or_one": dims.iter().map(dim_json).collect::<Vec<_>>(),
        }),
        ConditionKind::UnknownOneOf { input, options } => serde_json::json!({
            "axis": condition.axis,
            "input": input,
            "unknown_dim_values": options.iter().map(dim_json).collect::<Vec<_>>(),
        }),
        ConditionKind::AtMost { dim, bound } => {
            let key = if matches!(dim, Dim::Sym(_)) { "symbol" } else { "expression" };
            serde_json::json!({ "axis": condition.axis, key: dim.to_string(), "at_most": dim_json(bound) })
        }
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

/// The start of a model's JSON object as [`report_json`] writes it, up to its list of sites: for output that
/// streams the sites ([`write_json_site`]) as they are judged, then ends with [`write_json_model_end`].
pub fn write_json_model_start(out: &mut impl Write, path: &str) -> io::Result<()> {
    out.write_all(b"{\"model\":")?;
    serde_json::to_writer(&mut *out, path)?;
    out.write_all(b",\"sites\":[")
}

/// One site of a streamed model object; `first` for the first one (no comma before it).
pub fn write_json_site(out: &mut impl Write, site: &SiteReport, first: bool) -> io::Result<()> {
    if !first {
        out.write_all(b",")?;
    }
    serde_json::to_writer(&mut *out, &json_site(site))?;
    Ok(())
}

/// The rest of a streamed model object after its sites: findings, summary, opaque ops, and the newline.
pub fn write_json_model_end(out: &mut impl Write, report: &Report) -> io::Result<()> {
    out.write_all(b"],\"findings\":")?;
    let findings: Vec<JsonFinding<'_>> = report.findings.iter().map(json_finding).collect();
    serde_json::to_writer(&mut *out, &findings)?;
    out.write_all(b",\"summary\":")?;
    serde_json::to_writer(&mut *out, &json_summary(report))?;
    out.write_all(b",\"opaque_ops\":")?;
    serde_json::to_writer(&mut *out, &report.opaque)?;
    out.write_all(b"}\n")
}

fn json_summary(report: &Report) -> JsonSummary {
    let s = report.summary;
    JsonSummary {
        sites: s.sites,
        same: s.same,
        broadcast: s.broadcast,
        violations: s.violations,
        conditional: s.conditional,
        unknown: s.unknown,
        errors: s.errors,
        warnings: s.warnings,
        opaque_nodes: report.opaque.values().sum(),
    }
}

/// The JSON object of one model's report.
pub fn report_json(path: &str, report: &Report) -> Value {
    let model = JsonModel {
        model: path,
        sites: report.sites.iter().map(json_site).collect(),
        findings: report.findings.iter().map(json_finding).collect(),
        summary: json_summary(report),
        opaque_ops: &report.opaque,
    };
    serde_json::to_value(model).expect("report serializes")
}

/// The JSON object for a model that could not be checked.
pub fn error_json(path: &str, message: &str) -> Value {
    serde_json::json!({ "model": path, "error": message })
}

/// A finding's message as text, SARIF and GitHub output show it: long dim expressions named (`h₁`), and the
/// location and message together at most [`crate::brief::MAX_CHARS`] characters.
pub fn brief_message(f: &Finding) -> crate::brief::Brief {
    let budget = crate::brief::MAX_CHARS.saturating_sub(finding_location(f).chars().count() + 2).max(80);
    crate::brief::abbreviate(&f.message, budget)
}

/// Where a finding is: `GRAPH/NODE (OP)`, `GRAPH/NODE` or `GRAPH`.
pub fn finding_location(f: &Finding) -> String {
    match (&f.node, &f.op) {
        // An unnamed node is already labelled `#INDEX (OP)`: the op once is enough.
        (Some(node), Some(op)) if node.starts_with('#') && node.ends_with(&format!(" ({op})")) => {
            format!("{}/{}", f.graph, node)
        }
        (Some(node), Some(op)) => format!("{}/{} ({})", f.graph, node, op),
        (Some(node), None) => format!("{}/{}", f.graph, node),
        _ => f.graph.clone(),
    }
}

/// One line per finding, `PATH: SEVERITY[CODE] GRAPH/NODE (OP): message`, then the summary line.
pub fn write_text(out: &mut impl Write, path: &str, report: &Report) -> io::Result<()> {
    write_text_styled(out, path, report, Palette::PLAIN)
}

/// ANSI styles for text output, or none. The text is the same either way; colour only wraps parts of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Palette {
    enabled: bool,
}

impl Palette {
    /// No colour: plain text.
    pub const PLAIN: Palette = Palette { enabled: false };
    /// ANSI colours: the path bold, the severity and code in the severity's colour.
    pub const ANSI: Palette = Palette { enabled: true };

    /// Colour only when asked for: `always`, or `auto` on a terminal (`is_terminal`) unless `NO_COLOR` is set to a
    /// non-empty value or `TERM` is `dumb`.
    pub fn choose(choice: ColorChoice, is_terminal: bool) -> Palette {
        let env_set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        let enabled = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_terminal && !env_set("NO_COLOR") && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
            }
        };
        Palette { enabled }
    }

    /// Whether this palette writes escape codes.
    pub fn is_enabled(self) -> bool {
        self.enabled
    }

    fn paint(self, style: anstyle::Style, text: &str) -> String {
        if self.enabled {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    }

    fn severity(self, severity: Severity) -> anstyle::Style {
        let color = match severity {
            Severity::Error => anstyle::AnsiColor::Red,
            Severity::Warning => anstyle::AnsiColor::Yellow,
        };
        anstyle::Style::new().bold().fg_color(Some(color.into()))
    }
}

/// When to colour text output (`--color`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    Always,
    Never,
}

/// [`write_text`] with colour: the same characters, with the path bold and `SEVERITY[CODE]` coloured.
pub fn write_text_styled(out: &mut impl Write, path: &str, report: &Report, palette: Palette) -> io::Result<()> {
    write_findings_styled(out, path, report, palette, false, false)?;
    writeln!(out, "{}: {}", palette.paint(anstyle::Style::new().bold(), path), summary_text(report))
}

/// One line per finding, as [`write_text_styled`] writes them, without the summary line; with `errors_only`,
/// only the findings of error severity; with `legend`, each short name a message uses on a line of its own after
/// it (`    h₁ = floor(...)`).
pub fn write_findings_styled(
    out: &mut impl Write,
    path: &str,
    report: &Report,
    palette: Palette,
    errors_only: bool,
    legend: bool,
) -> io::Result<()> {
    let shown_path = palette.paint(anstyle::Style::new().bold(), path);
    for f in report.findings.iter().filter(|f| !errors_only || f.severity == Severity::Error) {
        let label = palette.paint(palette.severity(f.severity), &format!("{}[{}]", f.severity.as_str(), f.code));
        let brief = brief_message(f);
        writeln!(out, "{shown_path}: {label} {}: {}", finding_location(f), brief.message)?;
        if legend {
            for (name, expression) in &brief.names {
                writeln!(out, "    {name} = {expression}")?;
            }
        }
    }
    Ok(())
}

/// The line of a model that could not be checked: `PATH: error: MESSAGE` (`internal error` for a bug), coloured
/// like an error finding.
pub fn failure_line(path: &str, label: &str, message: &str, palette: Palette) -> String {
    let message = message.strip_prefix(path).and_then(|m| m.strip_prefix(": ")).unwrap_or(message);
    let shown_path = palette.paint(anstyle::Style::new().bold(), path);
    format!("{shown_path}: {}: {message}", palette.paint(palette.severity(Severity::Error), label))
}

/// The summary line's text after `PATH: `.
pub fn summary_text(report: &Report) -> String {
    let s = report.summary;
    let plural = |n: usize, word: &str| if n == 1 { format!("{n} {word}") } else { format!("{n} {word}s") };
    format!(
        "{}: {} same, {} broadcast, {}, {} conditional, {} unknown",
        plural(s.sites, "site"),
        s.same,
        s.broadcast,
        plural(s.violations, "violation"),
        s.conditional,
        s.unknown
    )
}

/// Escapes the message of a GitHub Actions workflow command: `%`, `\r` and `\n`.
pub fn github_escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a property value of a workflow command (`file=`, `title=`): the message's escapes plus `:` and `,`.
pub fn github_escape_property(text: &str) -> String {
    github_escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// One workflow command: `::LEVEL file=PATH,title=TITLE::MESSAGE`.
pub fn github_command(level: &str, path: &str, title: &str, message: &str) -> String {
    format!(
        "::{level} file={},title={}::{}",
        github_escape_property(path),
        github_escape_property(title),
        github_escape_data(message)
    )
}

/// GitHub Actions workflow commands: an `::error` or `::warning` per finding (titled with its code,
/// the message led by its location), then the plain summary line, which the log shows as it is.
pub fn write_github(out: &mut impl Write, path: &str, report: &Report) -> io::Result<()> {
    write_github_findings(out, path, report, false)?;
    writeln!(out, "{path}: {}", summary_text(report))
}

/// The workflow commands of [`write_github`] without the summary line; with `errors_only`, only `::error`s.
pub fn write_github_findings(out: &mut impl Write, path: &str, report: &Report, errors_only: bool) -> io::Result<()> {
    for f in report.findings.iter().filter(|f| !errors_only || f.severity == Severity::Error) {
        let level = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let message = format!("{}: {}", finding_location(f), brief_message(f).message);
        writeln!(out, "{}", github_command(level, path, f.code.as_str(), &message))?;
    }
    Ok(())
}

/// What a SARIF log says about one model: its report, or why it could not be checked.
#[derive(Clone, Copy, Debug)]
pub struct SarifModel<'a> {
    /// The model's path as given on the command line or found in a folder.
    pub path: &'a str,
    pub outcome: Result<&'a Report, &'a str>,
}

/// The `uri` of a path in SARIF: relative paths stay relative (`/`-separated, `./` dropped), absolute ones become
/// `file://` URIs; characters outside RFC 3986's path characters are percent-encoded.
pub fn sarif_uri(path: &str) -> String {
    let unified = if cfg!(windows) { path.replace('\\', "/") } else { path.to_string() };
    let drive = |s: &str| cfg!(windows) && s.as_bytes().get(1) == Some(&b':');
    let absolute = unified.starts_with('/') || drive(&unified);
    let unified = if drive(&unified) { format!("/{unified}") } else { unified };
    let mut rel = unified.as_str();
    while let Some(rest) = rel.strip_prefix("./") {
        rel = rest;
    }
    let mut encoded = String::with_capacity(rel.len());
    for b in rel.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=@/".contains(&b) || (b == b':' && absolute);
        if keep {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    if absolute {
        format!("file://{encoded}")
    } else {
        encoded
    }
}

fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// `broadcast-violation` → `BroadcastViolation`: a rule's `name` in SARIF.
fn pascal_case(code: &str) -> String {
    code.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

/// One SARIF result: a finding at its model (physical location) and graph and node (logical locations).
fn sarif_result(f: &Finding, artifact_location: &Value) -> Value {
    use serde_json::json;
    let rule_index = Code::ALL.iter().position(|&c| c == f.code).expect("every code is in ALL");
    let graph = json!({ "name": f.graph, "fullyQualifiedName": f.graph, "kind": "module" });
    let logical = match &f.node {
        Some(node) => vec![json!({
            "name": node,
            "fullyQualifiedName": format!("{}/{}", f.graph, node),
            "kind": "member",
        })],
        None => vec![graph],
    };
    let mut properties = serde_json::Map::new();
    properties.insert("graph".into(), json!(f.graph));
    if let Some(node) = &f.node {
        properties.insert("node".into(), json!(node));
    }
    if let Some(op) = &f.op {
        properties.insert("op".into(), json!(op));
    }
    let brief = brief_message(f);
    if brief.message != f.message {
        properties.insert("fullMessage".into(), json!(f.message));
        let names: serde_json::Map<String, Value> = brief.names.iter().map(|(n, e)| (n.clone(), json!(e))).collect();
        properties.insert("names".into(), Value::Object(names));
    }
    json!({
        "ruleId": f.code.as_str(),
        "ruleIndex": rule_index,
        "level": sarif_level(f.severity),
        "message": { "text": format!("{}: {}", finding_location(f), brief.message) },
        "locations": [{
            "physicalLocation": { "artifactLocation": artifact_location },
            "logicalLocations": logical,
        }],
        "partialFingerprints": {
            "onnxBcastLocation/v1": format!("{}:{}", f.code, finding_location(f)),
        },
        "properties": properties,
    })
}

/// One SARIF 2.1.0 log for a whole run: one run whose `tool.driver` declares a rule per diagnostic code, every model
/// as an artifact, one result per finding (level from its severity, the model as physical location, graph and node
/// as logical locations; ONNX models have no source text, so no regions), and each model that could not be checked
/// as an error notification of the invocation.
pub fn sarif_log(models: &[SarifModel<'_>]) -> Value {
    use serde_json::json;
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|&code| {
            json!({
                "id": code.as_str(),
                "name": pascal_case(code.as_str()),
                "shortDescription": { "text": crate::explain::summary(code) },
                "fullDescription": { "text": code.description() },
                "help": { "text": crate::explain::help(code) },
                "defaultConfiguration": { "level": sarif_level(code.default_severity()) },
            })
        })
        .collect();
    let mut artifacts = Vec::new();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for (index, model) in models.iter().enumerate() {
        let uri = sarif_uri(model.path);
        let artifact_location = json!({ "uri": uri, "index": index });
        artifacts.push(json!({ "location": { "uri": uri }, "roles": ["analysisTarget"] }));
        match model.outcome {
            Ok(report) => {
                results.extend(report.findings.iter().map(|f| sarif_result(f, &artifact_location)));
            }
            Err(message) => notifications.push(json!({
                "level": "error",
                "message": { "text": message },
                "locations": [{ "physicalLocation": { "artifactLocation": artifact_location } }],
            })),
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "onnx-bcast",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                },
            },
            "invocations": [{
                "executionSuccessful": notifications.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
            "artifacts": artifacts,
            "results": results,
        }],
    })
}

pub use crate::render_expand::{expand_json, write_expand_text};

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
    let nodes = if nodes == 1 { "1 node".to_string() } else { format!("{nodes} nodes") };
    writeln!(out, "{path}: inference stopped at {nodes} of ops it has no rule for: {}", ops.join(", "))
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
