//! GitHub Actions workflow commands: an annotation per finding.

use std::io::{self, Write};

use super::{brief_message, finding_location, summary_text};
use crate::check::{Finding, Report};
use crate::diagnostic::Severity;
use crate::render::brief::MAX_CHARS;

/// Escapes the message of a GitHub Actions workflow command: `%`, `\r` and `\n` ([`crate::sys::escape::github_data`]).
pub fn github_escape_data(text: &str) -> String {
    crate::sys::escape::github_data(text)
}

/// Escapes a property value of a workflow command (`file=`, `title=`): the message's escapes plus `:` and `,`.
pub fn github_escape_property(text: &str) -> String {
    crate::sys::escape::github_property(text)
}

/// One workflow command: `::LEVEL file=PATH,title=TITLE::MESSAGE`. The path and title are shown as
/// [`crate::sys::escape::text`] shows any text, then escaped as properties; the message must already be shown (a
/// finding's [`super::brief_message`], a [`crate::sys::escape::one_line`]) and is escaped as the command's data.
pub fn github_command(level: &str, path: &str, title: &str, message: &str) -> String {
    use crate::sys::escape::text;
    format!(
        "::{level} file={},title={}::{}",
        github_escape_property(&text(path)),
        github_escape_property(&text(title)),
        github_escape_data(message)
    )
}

/// GitHub Actions workflow commands: an `::error` or `::warning` per finding (titled with its code,
/// the message led by its location), then the plain summary line, which the log shows as it is.
pub fn write_github(out: &mut impl Write, path: &str, report: &Report) -> io::Result<()> {
    write_github_findings(out, path, report, false)?;
    writeln!(out, "{}: {}", crate::sys::escape::text(path), summary_text(report))
}

/// The workflow commands of [`write_github`] without the summary line; with `errors_only`, only `::error`s. A code
/// that can come by the hundred shows its first few, then one annotation saying how many more (see
/// [`super::shown`]).
pub fn write_github_findings(out: &mut impl Write, path: &str, report: &Report, errors_only: bool) -> io::Result<()> {
    let wanted = report.findings.iter().filter(|f| !errors_only || f.severity == Severity::Error);
    let (findings, more) = super::shown(wanted, |f| (f.code, f.severity));
    for f in findings {
        let level = level(f.severity);
        let prefix = github_command(level, "", f.code.as_str(), "").chars().count();
        let message = annotation(f, MAX_CHARS.saturating_sub(prefix));
        writeln!(out, "{}", github_command(level, path, f.code.as_str(), &message))?;
    }
    for (code, severity, n) in more {
        let message = super::more_line(n);
        writeln!(out, "{}", github_command(level(severity), path, code.as_str(), &message))?;
    }
    Ok(())
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// An annotation's text within `budget` characters, on its one line: the short names defined after the message
/// (`…; where h₁ = floor(…)`) when that fits, else the message with its expressions whole, cut to fit. A name is
/// never used without its definition.
fn annotation(f: &Finding, budget: usize) -> String {
    let at = finding_location(f);
    let brief = brief_message(f);
    let named = match brief.names.is_empty() {
        true => format!("{at}: {}", brief.message),
        false => format!("{at}: {}; where {}", brief.message, brief.legend_inline()),
    };
    if github_escape_data(&named).chars().count() <= budget {
        return named;
    }
    crate::render::brief::cut(&format!("{at}: {}", f.message.one_line()), budget)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Code;

    fn finding(message: &str) -> Finding {
        Finding {
            code: Code::BroadcastViolation,
            severity: Severity::Error,
            graph: "main".into(),
            node: Some("/m/Add".into()),
            op: Some("Add".into()),
            message: message.into(),
            conditions: Vec::new(),
            site: None,
        }
    }

    /// Issue 28: a short name is defined in the annotation that uses it, or the annotation uses none.
    #[test]
    fn an_annotation_defines_its_short_names_or_uses_none() {
        let h = "floor((height - 1) / 2) + 1";
        let f = finding(&format!("A [1, {h}] and B [1, 3] do not broadcast: on axis 1, B has 3 where A has {h}"));
        let text = annotation(&f, 250);
        assert_eq!(text, format!("main › /m/Add (Add): A [1, h₁] and B [1, 3] do not broadcast: on axis 1, B has 3 where A has h₁; where h₁ = {h}"));
        let long = format!("{h} + {}", "x".repeat(200));
        let f = finding(&format!("A [1, {long}] and B [1, 3] do not broadcast: on axis 1, B has 3 where A has {long}"));
        let text = annotation(&f, 250);
        assert!(!text.contains("h₁") && text.chars().count() <= 250, "{text}");
    }
}
