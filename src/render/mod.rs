//! Renderings of a check report: one text line per finding plus a summary (optionally coloured), one JSON object
//! per model, GitHub Actions workflow commands, or one SARIF 2.1.0 log for a whole run.

use std::io::{self, Write};

use serde_json::Value;

use crate::check::{Finding, Report};
use crate::diagnostic::{Code, Severity};
use crate::sizes::shape::{Dim, Shape};

pub mod brief;
pub mod dot;
pub mod expand;
pub mod explain;
pub mod fold;
mod github;
pub mod infer;
mod json;
mod json_object;
mod ranges;
mod sarif;

pub use github::{github_command, github_escape_data, github_escape_property, write_github, write_github_findings};
pub use json::{
    error_json, report_json, site_json, summary_json, write_json_model_end, write_json_model_start, write_json_site,
    SiteWriter,
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
/// escaped and shortened ([`crate::sys::escape`]), and the location and message together at most
/// [`crate::render::brief::MAX_CHARS`] characters.
pub fn brief_message(f: &Finding) -> crate::render::brief::Brief {
    let lead = finding_label(f).chars().count() + finding_location(f).chars().count() + 3;
    crate::render::brief::abbreviate(
        f.message.marked(),
        crate::render::brief::AFTER_PATH.saturating_sub(lead).max(MESSAGE_AT_LEAST),
    )
}

/// What a finding's line keeps for its message however long its location is.
const MESSAGE_AT_LEAST: usize = 80;

/// `SEVERITY[CODE]`, as a finding's line starts.
pub fn finding_label(f: &Finding) -> String {
    format!("{}[{}]", f.severity.as_str(), f.code)
}

/// Where a finding is: `GRAPH › NODE (OP)`, `GRAPH › NODE` or `GRAPH` ([`crate::onnx::location::at`], each part escaped
/// and shortened), cut with `…` when it would leave a line less than 80 characters for the message.
pub fn finding_location(f: &Finding) -> String {
    let at = crate::onnx::location::at(&f.graph, f.node.as_deref(), f.op.as_deref());
    let room = crate::render::brief::AFTER_PATH - MESSAGE_AT_LEAST - finding_label(f).chars().count() - 3;
    crate::render::brief::cut(&at, room)
}

/// The frames of a site inside model-local functions, as `check`'s messages begin with them:
/// `in function local.F (node add): `, names marked.
pub fn function_frames(frames: &[crate::analysis::FunctionFrame]) -> String {
    use crate::sys::escape::name;
    frames.iter().map(|f| format!("in function {} (node {}): ", name(&f.function), name(&f.node))).collect()
}

/// Where a finding is with every name whole and unescaped (SARIF's fingerprint, which must not change with how
/// lines are shown).
pub fn finding_location_full(f: &Finding) -> String {
    match (f.node.as_deref(), f.op.as_deref()) {
        // An unnamed node is already labelled `#INDEX (OP)`: the op once is enough.
        (Some(node), Some(op)) if node.starts_with('#') && node.ends_with(&format!(" ({op})")) => {
            format!("{}/{node}", f.graph)
        }
        (Some(node), Some(op)) => format!("{}/{node} ({op})", f.graph),
        (Some(node), None) => format!("{}/{node}", f.graph),
        _ => f.graph.to_string(),
    }
}

/// How many findings of a code that can come by the hundred text and GitHub output show per model: a
/// `bind-contradiction` for every value a `--bind` size contradicts. JSON and SARIF list them all.
pub const SHOWN_OF_A_FLOOD: usize = 3;

/// Whether a code's findings can come by the hundred from one cause.
fn floods(code: Code) -> bool {
    code == Code::BindContradiction
}

/// The items to show one by one, in order, and for each code that floods (see [`SHOWN_OF_A_FLOOD`]) how many more
/// there are, with the severity of the first left out.
pub fn shown<'a, T>(
    items: impl IntoIterator<Item = &'a T>,
    key: impl Fn(&T) -> (Code, Severity),
) -> (Vec<&'a T>, Vec<(Code, Severity, usize)>) {
    let mut shown = Vec::new();
    let mut more: Vec<(Code, Severity, usize)> = Vec::new();
    let mut seen: std::collections::HashMap<Code, usize> = std::collections::HashMap::new();
    for item in items {
        let (c, severity) = key(item);
        let n = seen.entry(c).or_insert(0);
        *n += 1;
        if !floods(c) || *n <= SHOWN_OF_A_FLOOD {
            shown.push(item);
        } else if let Some(entry) = more.iter_mut().find(|(m, _, _)| *m == c) {
            entry.2 += 1;
        } else {
            more.push((c, severity, 1));
        }
    }
    (shown, more)
}

/// What stands for the findings of a flooding code left out: `and 7 more like these (--format json lists every
/// one)`.
pub fn more_line(n: usize) -> String {
    format!("and {n} more like these (--format json lists every one)")
}

/// One line per finding, `PATH: SEVERITY[CODE] GRAPH › NODE (OP): message`, the short names it uses defined on
/// the lines after it, then the summary line.
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
    write_findings_styled(out, path, report, palette, false, true)?;
    writeln!(
        out,
        "{}: {}",
        palette.paint(anstyle::Style::new().bold(), &crate::sys::escape::text(path)),
        summary_text(report)
    )
}

/// One line per finding, as [`write_text_styled`] writes them, without the summary line; with `errors_only`,
/// only the findings of error severity; with `legend`, each short name a message uses on a line of its own after
/// it (`    h₁ = floor(...)`), else the message with its expressions whole (cut to fit). A code that can come by the
/// hundred shows its first few, then how many more ([`shown`]).
pub fn write_findings_styled(
    out: &mut impl Write,
    path: &str,
    report: &Report,
    palette: Palette,
    errors_only: bool,
    legend: bool,
) -> io::Result<()> {
    let shown_path = palette.paint(anstyle::Style::new().bold(), &crate::sys::escape::text(path));
    let wanted = report.findings.iter().filter(|f| !errors_only || f.severity == Severity::Error);
    let (findings, more) = shown(wanted, |f| (f.code, f.severity));
    for f in findings {
        let label = palette.paint(palette.severity(f.severity), &finding_label(f));
        let at = finding_location(f);
        match legend {
            true => {
                let brief = brief_message(f);
                writeln!(out, "{shown_path}: {label} {at}: {}", brief.message)?;
                for line in brief.legend() {
                    writeln!(out, "{line}")?;
                }
            }
            false => {
                let lead = finding_label(f).chars().count() + at.chars().count() + 3;
                let budget = crate::render::brief::AFTER_PATH.saturating_sub(lead).max(MESSAGE_AT_LEAST);
                writeln!(
                    out,
                    "{shown_path}: {label} {at}: {}",
                    crate::render::brief::cut(&f.message.one_line(), budget)
                )?;
            }
        }
    }
    for (code, severity, n) in more {
        let label = palette.paint(palette.severity(severity), &format!("{}[{}]", severity.as_str(), code));
        writeln!(out, "{shown_path}: {label} {}", more_line(n))?;
    }
    Ok(())
}

/// The undecided sites no finding names, one line each: `PATH: note[undecided-broadcast] GRAPH › NODE (OP):
/// undecided (x's rank unknown); --strict reports it`.
pub fn write_undecided(out: &mut impl Write, path: &str, report: &Report, palette: Palette) -> io::Result<()> {
    let shown_path = palette.paint(anstyle::Style::new().bold(), path);
    for u in &report.undecided {
        let at = crate::onnx::location::at(&u.graph, Some(&u.node), Some(&u.op));
        let text = format!("undecided ({} unknown); --strict reports it as an error", u.unknown);
        let (line, _) = crate::render::brief::fit(&format!("note[{}] {at}: ", Code::UndecidedBroadcast), &text);
        writeln!(out, "{shown_path}: {line}")?;
    }
    Ok(())
}

/// The line of a model that could not be checked: `PATH: error: MESSAGE` (`internal error` for a bug), coloured
/// like an error finding; the message may hold marked names ([`crate::sys::escape::one_line`]).
pub fn failure_line(path: &str, label: &str, message: &str, palette: Palette) -> String {
    let message = message.strip_prefix(path).and_then(|m| m.strip_prefix(": ")).unwrap_or(message);
    let message = crate::render::brief::cut(
        &crate::sys::escape::one_line(message),
        crate::render::brief::AFTER_PATH - label.len() - 2,
    );
    let shown_path = palette.paint(anstyle::Style::new().bold(), &crate::sys::escape::text(path));
    format!("{shown_path}: {}: {message}", palette.paint(palette.severity(Severity::Error), label))
}

/// The summary line's text after `PATH: `.
pub fn summary_text(report: &Report) -> String {
    format!("{}{}", counts_text(&report.summary), opaque_text(&report.opaque))
}

/// The sites and their verdicts, counted: `3 sites: 1 same, 1 broadcast, 1 violation, 0 conditional, 0 unknown`.
pub fn counts_text(s: &crate::check::Summary) -> String {
    let plural = |n: usize, word: &str| if n == 1 { format!("{n} {word}") } else { format!("{n} {word}s") };
    format!(
        "{}: {} same, {} broadcast, {}, {} conditional, {} unknown",
        plural(s.sites, "site"),
        s.same,
        s.broadcast,
        plural(s.violations, "violation"),
        s.conditional,
        s.unknown,
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
    let names: Vec<String> = opaque.keys().map(|op| crate::sys::escape::short(op).into_owned()).collect();
    format!("; {nodes} of {ops}: {}", names.join(", "))
}

pub use crate::render::expand::{expand_json, write_expand_text};

fn elem_name(elem: Option<i32>) -> String {
    elem.map_or_else(|| "?".to_string(), crate::onnx::tensor::elem_type_name)
}

/// Every value's inferred element type and shape, graph by graph.
pub fn write_shapes_text(out: &mut impl Write, path: &str, analysis: &crate::analysis::Analysis) -> io::Result<()> {
    use crate::sys::escape::{short, text};
    let shown = text(path);
    for g in &analysis.graphs {
        writeln!(out, "{shown}: graph {}", crate::onnx::location::graph(&crate::sys::escape::text(&g.path)))?;
        for (name, facts) in &g.values {
            let kind = match facts.kind {
                crate::onnx::tensor::Kind::Tensor => String::new(),
                other => format!("{} of ", other.name()),
            };
            let text = match facts.contradicted {
                true => "unknown, follows a contradiction".to_string(),
                false => format!("{kind}{} {}", elem_name(facts.elem), facts.shape),
            };
            let (line, legend) = crate::render::brief::fit(&format!("  {}: ", short(name)), &text);
            writeln!(out, "{line}")?;
            for line in legend {
                writeln!(out, "{line}")?;
            }
        }
    }
    write_opaque(out, path, &analysis.opaque)?;
    write_contradictions(out, path, analysis)
}

/// The contradictions that leave what follows them unknown, one line each.
fn write_contradictions(out: &mut impl Write, path: &str, analysis: &crate::analysis::Analysis) -> io::Result<()> {
    for c in analysis.contradictions.iter().filter(|c| c.contradiction.is_certain()) {
        let at = crate::onnx::location::at(&c.graph, Some(&c.node), Some(&c.op));
        let (line, legend) =
            crate::render::brief::fit(&format!("what follows {at} is unknown: "), c.message().marked());
        writeln!(out, "{path}: {line}")?;
        for line in legend {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// A shape as one-line formats show it: each dim escaped, and one longer than a name may be (a megabyte-long
/// `dim_param`) shortened as a name is ([`crate::sys::escape::short`]).
pub fn shown_shape(shape: &Shape) -> String {
    match shape.dims() {
        None => shape.to_string(),
        Some(dims) => {
            let dims: Vec<String> =
                dims.iter().map(|d| crate::sys::escape::short(&d.to_string()).into_owned()).collect();
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
    let nodes = if nodes == 1 { "1 node".to_string() } else { format!("{nodes} nodes") };
    let lead = format!("inference stopped at {nodes} of ops it has no rule for: ");
    // As many ops as the line holds, then how many more.
    let mut ops: Vec<String> = Vec::new();
    let mut length = lead.chars().count();
    for (k, (op, n)) in opaque.iter().enumerate() {
        let item = format!("{} ×{n}", crate::sys::escape::short(op));
        let rest = opaque.len() - k;
        if length + item.chars().count() + 2 > crate::render::brief::AFTER_PATH - 20 && rest > 1 {
            ops.push(format!("and {rest} more ops"));
            break;
        }
        length += item.chars().count() + 2;
        ops.push(item);
    }
    writeln!(
        out,
        "{}: {lead}{}",
        crate::sys::escape::text(path),
        crate::render::brief::cut(&ops.join(", "), crate::render::brief::AFTER_PATH - lead.chars().count())
    )
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
fn value_json(name: &str, f: &crate::onnx::tensor::ValueFacts) -> Value {
    use crate::onnx::tensor::Kind;
    let mut v = serde_json::json!({
        "name": name,
        "elem_type": f.elem.map(crate::onnx::tensor::elem_type_name),
        "shape": shape_json(&f.shape),
    });
    if f.kind != Kind::Tensor {
        v["kind"] = Value::from(f.kind.name());
    }
    if let Kind::Map { key } | Kind::SequenceOfMaps { key } = f.kind {
        v["key_type"] = Value::from(crate::onnx::tensor::elem_type_name(key));
    }
    // Only where it is so: a value that follows a contradiction is unknown for that reason.
    if f.contradicted {
        v["follows_contradiction"] = Value::Bool(true);
    }
    v
}
