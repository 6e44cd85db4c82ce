//! Where `check`'s results go: each model's findings in the chosen format, in order, then (text and GitHub) one
//! total line for the run.

use std::io::{self, Read, Seek, Write};

use onnx_bcast::check::{Report, Summary};
use onnx_bcast::diagnostic::{Code, Severity};
use onnx_bcast::render;

/// How much `check` says.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Errors only: error findings and models that could not be checked.
    Quiet,
    /// Findings, then the total line.
    Normal,
    /// Also every model's summary line and the ops inference stopped at.
    Verbose,
}

/// One model's result.
pub struct Outcome {
    /// The path as shown in output.
    pub shown: String,
    pub report: Result<Report, Failure>,
    /// The model's JSON object, written as its sites were judged (JSON output only).
    pub json: Option<Spool>,
}

/// Why a model could not be checked.
pub enum Failure {
    /// It could not be read or decoded; the message names the path.
    Load(String),
    /// onnx-bcast panicked on it: a bug.
    Internal(String),
}

impl Failure {
    /// The message for stderr (after `onnx-bcast: `).
    fn stderr(&self, shown: &str) -> String {
        match self {
            Failure::Load(message) => format!("error: {message}"),
            Failure::Internal(message) => format!("internal error: {shown}: {message}"),
        }
    }

    /// The message for a report (JSON `error`, SARIF notification, GitHub annotation).
    pub fn message(&self) -> String {
        match self {
            Failure::Load(message) => message.clone(),
            Failure::Internal(message) => format!("internal error: {message}"),
        }
    }
}

/// The output formats.
pub enum Sink {
    Text {
        palette: render::Palette,
    },
    Json,
    Github,
    /// SARIF is one log for the whole run: the outcomes are kept until the end.
    Sarif(Vec<Outcome>),
}

/// A format, how much it says, and the totals of the run so far.
pub struct Reporter {
    sink: Sink,
    verbosity: Verbosity,
    /// `--statistics`: per-code counts instead of the findings (text output).
    statistics: bool,
    totals: Totals,
}

/// What a run found, over all its models.
#[derive(Default)]
struct Totals {
    models: usize,
    failed: usize,
    sites: Summary,
    /// Findings per code and severity, in the order of the codes' table.
    codes: std::collections::BTreeMap<(Code, Severity), usize>,
    /// Nodes of ops no rule knows, by op, over every model.
    opaque: std::collections::BTreeMap<String, usize>,
}

impl Totals {
    fn add(&mut self, outcome: &Outcome) {
        self.models += 1;
        match &outcome.report {
            Err(_) => self.failed += 1,
            Ok(report) => {
                let (t, s) = (&mut self.sites, report.summary);
                t.sites += s.sites;
                t.same += s.same;
                t.broadcast += s.broadcast;
                t.violations += s.violations;
                t.conditional += s.conditional;
                t.unknown += s.unknown;
                t.errors += s.errors;
                t.warnings += s.warnings;
                for f in &report.findings {
                    *self.codes.entry((f.code, f.severity)).or_insert(0) += 1;
                }
                for (op, n) in &report.opaque {
                    *self.opaque.entry(op.clone()).or_default() += n;
                }
            }
        }
    }

    /// `--statistics`: a line per code and severity with findings, most first (`  12  error    broadcast-violation
    /// the input shapes break the op's broadcasting rule`).
    fn statistics(&self) -> Vec<String> {
        let mut rows: Vec<(&(Code, Severity), &usize)> = self.codes.iter().collect();
        rows.sort_by_key(|&(key, n)| (std::cmp::Reverse(*n), *key));
        let width = rows.iter().map(|(_, n)| n.to_string().len()).max().unwrap_or(1);
        let code_width = rows.iter().map(|((c, _), _)| c.as_str().len()).max().unwrap_or(0);
        rows.into_iter()
            .map(|((code, severity), n)| {
                let summary = code.doc().summary;
                format!("{n:>width$}  {:7}  {:code_width$}  {summary}", severity.as_str(), code.as_str())
            })
            .collect()
    }

    /// The run's totals as one JSON object (`--statistics --format json`): the counts of the total line, and a
    /// row per code and severity with findings, most first: `{"models", "could_not_check", "sites", "same",
    /// "broadcast", "violations", "conditional", "unknown", "errors", "warnings", "codes": [{"code", "severity",
    /// "count", "summary"}]}`.
    fn json(&self) -> serde_json::Value {
        let s = self.sites;
        let mut rows: Vec<(&(Code, Severity), &usize)> = self.codes.iter().collect();
        rows.sort_by_key(|&(key, n)| (std::cmp::Reverse(*n), *key));
        let codes: Vec<serde_json::Value> = rows
            .into_iter()
            .map(|((code, severity), n)| {
                serde_json::json!({
                    "code": code.as_str(), "severity": severity.as_str(), "count": n, "summary": code.doc().summary,
                })
            })
            .collect();
        serde_json::json!({
            "models": self.models,
            "could_not_check": self.failed,
            "sites": s.sites,
            "same": s.same,
            "broadcast": s.broadcast,
            "violations": s.violations,
            "conditional": s.conditional,
            "unknown": s.unknown,
            "errors": s.errors,
            "warnings": s.warnings,
            "codes": codes,
        })
    }

    /// `checked 3 models, 5 sites: 1 same, 3 broadcast, 1 violation, 0 conditional, 0 unknown; 1 error, 0 warnings`,
    /// and how many models could not be checked, if any.
    fn line(&self) -> String {
        let plural = |n: usize, word: &str| if n == 1 { format!("{n} {word}") } else { format!("{n} {word}s") };
        let s = self.sites;
        let failed = match self.failed {
            0 => String::new(),
            n => format!("; {} could not be checked", plural(n, "model")),
        };
        format!(
            "checked {}, {}; {}, {}{failed}{}",
            plural(self.models, "model"),
            render::counts_text(&s),
            plural(s.errors, "error"),
            plural(s.warnings, "warning"),
            render::opaque_text(&self.opaque),
        )
    }
}

impl Reporter {
    pub fn new(sink: Sink, verbosity: Verbosity, statistics: bool) -> Reporter {
        Reporter { sink, verbosity, statistics, totals: Totals::default() }
    }

    /// Whether the output is text for people (text, GitHub commands), not data (JSON, SARIF).
    pub fn is_for_people(&self) -> bool {
        matches!(self.sink, Sink::Text { .. } | Sink::Github)
    }

    /// Whether models stream their JSON objects as their sites are judged.
    pub fn streams_json(&self) -> bool {
        matches!(self.sink, Sink::Json) && !self.statistics
    }

    /// Writes one model's result, in its place in the output. In text output a model that could not be checked
    /// is a line among the others; in the other formats it is also on stderr, next to the machine-readable report.
    pub fn emit(&mut self, out: &mut impl Write, outcome: Outcome) -> io::Result<()> {
        self.totals.add(&outcome);
        let (quiet, verbose) = (self.verbosity == Verbosity::Quiet, self.verbosity == Verbosity::Verbose);
        let shown = outcome.shown.as_str();
        if let (Err(failure), false) = (&outcome.report, matches!(self.sink, Sink::Text { .. })) {
            say!("onnx-bcast: {}", failure.stderr(shown));
        }
        match (&mut self.sink, &outcome.report) {
            (Sink::Text { .. } | Sink::Json, Ok(_)) if self.statistics => {}
            (Sink::Text { palette }, Ok(report)) => {
                render::write_findings_styled(out, shown, report, *palette, quiet, true)?;
                if !quiet {
                    render::write_undecided(out, shown, report, *palette)?;
                }
                if let Some(ranges) = &report.ranges {
                    render::write_ranges_text(out, shown, ranges)?;
                }
                if verbose {
                    writeln!(out, "{}: {}", onnx_bcast::sys::escape::text(shown), render::summary_text(report))?;
                    render::write_opaque(out, shown, &report.opaque)?;
                }
            }
            (Sink::Text { palette }, Err(failure)) => {
                let (label, message) = match failure {
                    Failure::Load(m) => ("error", m.as_str()),
                    Failure::Internal(m) => ("internal error", m.as_str()),
                };
                writeln!(out, "{}", render::failure_line(shown, label, message, *palette))?;
            }
            (Sink::Json, Ok(_)) => match outcome.json {
                Some(spool) => spool.copy_to(out)?,
                None => unreachable!("a JSON run spools every report"),
            },
            (Sink::Json, Err(failure)) => writeln!(out, "{}", render::error_json(shown, &failure.message()))?,
            (Sink::Github, Ok(report)) => {
                render::write_github_findings(out, shown, report, quiet)?;
                if verbose {
                    writeln!(out, "{}: {}", onnx_bcast::sys::escape::text(shown), render::summary_text(report))?;
                }
            }
            (Sink::Github, Err(failure)) => {
                let message = onnx_bcast::sys::escape::one_line(&failure.message());
                writeln!(out, "{}", render::github_command("error", shown, "onnx-bcast", &message))?
            }
            (Sink::Sarif(kept), _) => kept.push(outcome),
        }
        Ok(())
    }

    /// Writes what is only complete at the end of the run: the total line (text, GitHub; not with --quiet), or the
    /// SARIF log.
    pub fn finish(self, out: &mut impl Write) -> io::Result<()> {
        match self.sink {
            Sink::Json if self.statistics => writeln!(out, "{}", self.totals.json()),
            Sink::Text { .. } if self.statistics => {
                for line in self.totals.statistics() {
                    writeln!(out, "{line}")?;
                }
                writeln!(out, "{}", self.totals.line())
            }
            Sink::Text { .. } | Sink::Github if self.verbosity != Verbosity::Quiet => {
                writeln!(out, "{}", self.totals.line())
            }
            Sink::Sarif(kept) => write_sarif(out, &kept),
            _ => Ok(()),
        }
    }
}

fn write_sarif(out: &mut impl Write, kept: &[Outcome]) -> io::Result<()> {
    let messages: Vec<Option<String>> = kept.iter().map(|o| o.report.as_ref().err().map(Failure::message)).collect();
    let models: Vec<render::SarifModel<'_>> = kept
        .iter()
        .zip(&messages)
        .map(|(o, message)| render::SarifModel {
            path: &o.shown,
            outcome: match (&o.report, message) {
                (Ok(report), _) => Ok(report),
                (Err(_), Some(message)) => Err(message.as_str()),
                (Err(_), None) => unreachable!("a failure has a message"),
            },
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &render::sarif_log(&models))?;
    writeln!(out)
}

/// A model's JSON object while it is written: in memory up to [`Spool::IN_MEMORY`] bytes, then in an unnamed
/// temporary file, so that a model checked ahead of its turn in the output holds little memory however many sites
/// it has.
pub enum Spool {
    Memory(Vec<u8>),
    File(io::BufWriter<std::fs::File>),
}

impl Default for Spool {
    fn default() -> Spool {
        Spool::Memory(Vec::new())
    }
}

impl Spool {
    const IN_MEMORY: usize = 4 << 20;
    /// What a spool grows to by doubling, as a small model's report does, before it reserves [`Spool::IN_MEMORY`].
    const GROWN: usize = 64 << 10;

    /// Writes the spooled bytes to `out`.
    fn copy_to(self, out: &mut impl Write) -> io::Result<()> {
        match self {
            Spool::Memory(bytes) => out.write_all(&bytes),
            Spool::File(writer) => {
                let mut file = writer.into_inner().map_err(io::IntoInnerError::into_error)?;
                file.rewind()?;
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        return Ok(());
                    }
                    out.write_all(&buf[..n])?;
                }
            }
        }
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Spool::Memory(bytes) = self {
            let wanted = bytes.len() + buf.len();
            if wanted <= Spool::IN_MEMORY {
                if wanted > bytes.capacity() && wanted > Spool::GROWN {
                    // A large report: all memory may hold, reserved at once. Grown by doubling, the Vec would free as
                    // much again on its way, which the allocator keeps resident a while (6 MiB more peak RSS for
                    // 100,000 sites' JSON); pages never written are never resident.
                    bytes.reserve_exact(Spool::IN_MEMORY - bytes.len());
                }
                bytes.extend_from_slice(buf);
                return Ok(buf.len());
            }
            let mut file = io::BufWriter::with_capacity(1 << 20, tempfile::tempfile()?);
            file.write_all(bytes)?;
            *self = Spool::File(file);
        }
        match self {
            Spool::File(file) => file.write(buf),
            Spool::Memory(_) => unreachable!("spilled above"),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Spool::Memory(_) => Ok(()),
            Spool::File(file) => file.flush(),
        }
    }
}
