//! Renderings of a check report: one text line per finding plus a summary (optionally coloured), one JSON object
//! per model, GitHub Actions workflow commands, or one SARIF 2.1.0 log for a whole run.

use std::io::{self, Write};

use serde_json::Value;

use crate::check::{Finding, Report};
use crate::diagnostic::Severity;
use crate::shape::{Dim, Shape};

mod github;
mod json;
mod ranges;
mod sarif;

pub use github::{github_command, github_escape_data, github_escape_property, write_github, write_github_findings};
pub use json::{
    error_json, report_json, site_json, summary_json, write_json_model_end, write_json_model_start, write_json_site,
};
pub use ranges::{decision_json, range_report_json, write_ranges_text};
pub use sarif::{sarif_log, sarif_uri, SarifModel};

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

/// A finding's message as text, SARIF and GitHub output show it: long dim expressions named (`h₁`), names
/// escaped and shortened ([`crate::escape`]), and the location and message together at most
/// [`crate::brief::MAX_CHARS`] characters.
pub fn brief_message(f: &Finding) -> crate::brief::Brief {
    let budget = crate::brief::MAX_CHARS.saturating_sub(finding_location(f).chars().count() + 2).max(80);
    crate::brief::abbreviate(f.message.marked(), budget)
}

/// Where a finding is, as one-line formats show it: `GRAPH/NODE (OP)`, `GRAPH/NODE` or `GRAPH`, each part escaped
/// and shortened ([`crate::escape::short`]).
pub fn finding_location(f: &Finding) -> String {
    shown_location(&f.graph, f.node.as_deref(), f.op.as_deref())
}

/// A location as one-line formats show it (`GRAPH/NODE (OP)`, each part escaped and shortened), for `check`'s
/// findings and the lines of `fold`.
pub fn shown_location(graph: &str, node: Option<&str>, op: Option<&str>) -> String {
    use crate::escape::short;
    location_of(&short(graph), node.map(short).as_deref(), op.map(short).as_deref())
}

/// The frames of a site inside model-local functions, as `check`'s messages begin with them:
/// `in function local.F (node add): `, names marked.
pub fn function_frames(frames: &[crate::analysis::FunctionFrame]) -> String {
    use crate::escape::name;
    frames.iter().map(|f| format!("in function {} (node {}): ", name(&f.function), name(&f.node))).collect()
}

/// [`finding_location`] with every name whole and unescaped (SARIF's fingerprint).
pub fn finding_location_full(f: &Finding) -> String {
    location_of(&f.graph, f.node.as_deref(), f.op.as_deref())
}

fn location_of(graph: &str, node: Option<&str>, op: Option<&str>) -> String {
    match (node, op) {
        // An unnamed node is already labelled `#INDEX (OP)`: the op once is enough.
        (Some(node), Some(op)) if node.starts_with('#') && node.ends_with(&format!(" ({op})")) => {
            format!("{graph}/{node}")
        }
        (Some(node), Some(op)) => format!("{graph}/{node} ({op})"),
        (Some(node), None) => format!("{graph}/{node}"),
        _ => graph.to_string(),
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
    writeln!(
        out,
        "{}: {}",
        palette.paint(anstyle::Style::new().bold(), &crate::escape::text(path)),
        summary_text(report)
    )
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
    let shown_path = palette.paint(anstyle::Style::new().bold(), &crate::escape::text(path));
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
/// like an error finding; the message may hold marked names ([`crate::escape::one_line`]).
pub fn failure_line(path: &str, label: &str, message: &str, palette: Palette) -> String {
    let message = message.strip_prefix(path).and_then(|m| m.strip_prefix(": ")).unwrap_or(message);
    let shown_path = palette.paint(anstyle::Style::new().bold(), &crate::escape::text(path));
    let message = crate::escape::one_line(message);
    format!("{shown_path}: {}: {message}", palette.paint(palette.severity(Severity::Error), label))
}

/// The summary line's text after `PATH: `.
pub fn summary_text(report: &Report) -> String {
    let s = report.summary;
    let plural = |n: usize, word: &str| if n == 1 { format!("{n} {word}") } else { format!("{n} {word}s") };
    format!(
        "{}: {} same, {} broadcast, {}, {} conditional, {} unknown{}",
        plural(s.sites, "site"),
        s.same,
        s.broadcast,
        plural(s.violations, "violation"),
        s.conditional,
        s.unknown,
        opaque_text(&report.opaque)
    )
}

/// `; 2 nodes of 1 unknown op: custom.Foo` when some nodes' ops have no rule (nothing otherwise), for the end of
/// a summary line: what the tool could not see into is always said.
pub fn opaque_text(opaque: &std::collections::BTreeMap<String, usize>) -> String {
    if opaque.is_empty() {
        return String::new();
    }
    let nodes: usize = opaque.values().sum();
    let nodes = if nodes == 1 { "1 node".to_string() } else { format!("{nodes} nodes") };
    let ops = if opaque.len() == 1 { "1 unknown op".to_string() } else { format!("{} unknown ops", opaque.len()) };
    let names: Vec<String> = opaque.keys().map(|op| crate::escape::short(op).into_owned()).collect();
    format!("; {nodes} of {ops}: {}", names.join(", "))
}

pub use crate::render_expand::{expand_json, write_expand_text};

fn elem_name(elem: Option<i32>) -> String {
    elem.map_or_else(|| "?".to_string(), crate::tensor::elem_type_name)
}

/// Every value's inferred element type and shape, graph by graph.
pub fn write_shapes_text(out: &mut impl Write, path: &str, analysis: &crate::analysis::Analysis) -> io::Result<()> {
    use crate::escape::{short, text};
    let shown = text(path);
    for g in &analysis.graphs {
        writeln!(out, "{shown}: graph {}", short(&g.path))?;
        for (name, facts) in &g.values {
            let kind = match facts.kind {
                crate::tensor::Kind::Tensor => String::new(),
                other => format!("{} of ", other.name()),
            };
            match facts.contradicted {
                true => writeln!(out, "  {}: unknown, follows a contradiction", short(name))?,
                false => {
                    writeln!(out, "  {}: {kind}{} {}", short(name), elem_name(facts.elem), shown_shape(&facts.shape))?
                }
            }
        }
    }
    write_opaque(out, path, &analysis.opaque)?;
    write_contradictions(out, path, analysis)
}

/// The contradictions that leave what follows them unknown, one line each.
fn write_contradictions(out: &mut impl Write, path: &str, analysis: &crate::analysis::Analysis) -> io::Result<()> {
    for c in analysis.contradictions.iter().filter(|c| c.contradiction.is_certain()) {
        let at = shown_location(&c.graph, Some(&c.node), Some(&c.op));
        let path = crate::escape::text(path);
        writeln!(out, "{path}: what follows {at} is unknown: {}", c.message().one_line())?;
    }
    Ok(())
}

/// A shape as one-line formats show it: each dim escaped, and one longer than a name may be (a megabyte-long
/// `dim_param`) shortened as a name is ([`crate::escape::short`]).
pub fn shown_shape(shape: &Shape) -> String {
    match shape.dims() {
        None => shape.to_string(),
        Some(dims) => {
            let dims: Vec<String> = dims.iter().map(|d| crate::escape::short(&d.to_string()).into_owned()).collect();
            format!("[{}]", dims.join(", "))
        }
    }
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
    let ops: Vec<String> = opaque.iter().map(|(op, n)| format!("{} ×{n}", crate::escape::short(op))).collect();
    let nodes = if nodes == 1 { "1 node".to_string() } else { format!("{nodes} nodes") };
    let path = crate::escape::text(path);
    writeln!(out, "{path}: inference stopped at {nodes} of ops it has no rule for: {}", ops.join(", "))
}

pub fn shapes_json(path: &str, analysis: &crate::analysis::Analysis) -> Value {
    serde_json::json!({
        "model": path,
        "graphs": analysis.graphs.iter().map(|g| serde_json::json!({
            "graph": g.path,
            "values": g.values.iter().map(|(name, f)| value_json(name, f)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "opaque_ops": analysis.opaque,
    })
}

/// One value of `shapes --format json`: a tensor's name, element type and shape; any other kind of value also says
/// its `kind` (and a map its `key_type`), the element type and shape then being those of the tensors it holds.
fn value_json(name: &str, f: &crate::tensor::ValueFacts) -> Value {
    use crate::tensor::Kind;
    let mut v = serde_json::json!({
        "name": name,
        "elem_type": f.elem.map(crate::tensor::elem_type_name),
        "shape": shape_json(&f.shape),
    });
    if f.kind != Kind::Tensor {
        v["kind"] = Value::from(f.kind.name());
    }
    if let Kind::Map { key } | Kind::SequenceOfMaps { key } = f.kind {
        v["key_type"] = Value::from(crate::tensor::elem_type_name(key));
    }
    // Only where it is so: a value that follows a contradiction is unknown for that reason.
    if f.contradicted {
        v["follows_contradiction"] = Value::Bool(true);
    }
    v
}
