//! GitHub Actions workflow commands: an annotation per finding.

use std::io::{self, Write};

use super::{brief_message, finding_location, summary_text};
use crate::check::Report;
use crate::diagnostic::Severity;

/// Escapes the message of a GitHub Actions workflow command: `%`, `\r` and `\n` ([`crate::escape::github_data`]).
pub fn github_escape_data(text: &str) -> String {
    crate::escape::github_data(text)
}

/// Escapes a property value of a workflow command (`file=`, `title=`): the message's escapes plus `:` and `,`.
pub fn github_escape_property(text: &str) -> String {
    crate::escape::github_property(text)
}

/// One workflow command: `::LEVEL file=PATH,title=TITLE::MESSAGE`. The path and title are shown as
/// [`crate::escape::text`] shows any text, then escaped as properties; the message must already be shown (a
/// finding's [`super::brief_message`], a [`crate::escape::one_line`]) and is escaped as the command's data.
pub fn github_command(level: &str, path: &str, title: &str, message: &str) -> String {
    use crate::escape::text;
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
    writeln!(out, "{}: {}", crate::escape::text(path), summary_text(report))
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
