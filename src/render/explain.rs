//! The documentation of the diagnostic codes, rendered from their table ([`crate::diagnostic`]): the text of
//! `onnx-bcast explain CODE` and `--list`, the table of codes of docs/codes.md, and the `help` of each rule in SARIF output.

use crate::diagnostic::{Code, Origin, Reported};

/// The first sentence of a code's description: a one-line summary.
pub fn summary(code: Code) -> &'static str {
    let d = code.description();
    match d.find(". ") {
        Some(i) => &d[..=i],
        None => d,
    }
}

use crate::render::brief::wrapped;

/// The text of `onnx-bcast explain CODE`, wrapped to 100 columns (the example's lines as `check` printed them).
pub fn text(code: Code) -> String {
    let doc = code.doc();
    let mut out = format!(
        "{code} (default severity: {})\n\n{}\n",
        code.default_severity().as_str(),
        wrapped(code.description(), "")
    );
    match doc.origin {
        Origin::Documents(sources) => {
            out.push_str("\nSource:\n");
            for s in sources {
                out.push_str(&format!("  {}\n", wrapped(&format!("{}: {}", s.name(), s.what()), "    ")));
            }
        }
        Origin::Other(origin) => {
            out.push_str(&format!("\n{}\n", wrapped(&format!("Source: {origin} (not a broadcasting rule)"), "")))
        }
    }
    // The example's run, its lines of this code only (a fixture may have other findings too).
    let example = &doc.example;
    let mut lines = example.transcript().lines();
    let fixture = format!("the repository's {}", example.fixture);
    out.push_str(&format!("\n{}\n", wrapped(&format!("Example: {} ({fixture})", example.model), "  ")));
    if let Some(command) = lines.next() {
        out.push_str(&format!("  {command}\n"));
    }
    let tag = format!("[{code}]");
    for line in lines.filter(|l| l.contains(&tag)) {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str(&format!("\n{}\n", wrapped(&format!("Fix: {}", doc.help), "")));
    out
}

/// `(only under --strict) ` for the codes only `--strict` reports: their severity alone would read as if every
/// model got them.
fn only_under_strict(code: Code) -> &'static str {
    match code.doc().reported {
        Reported::OnlyUnderStrict => "(only under --strict) ",
        Reported::Always | Reported::ErrorUnderStrict => "",
    }
}

/// The text of `onnx-bcast explain --list` (and of `explain` alone): every code, its default severity and summary,
/// one per line (the summary wrapped under itself past 100 columns).
pub fn list() -> String {
    let width = Code::ALL.iter().map(|c| c.as_str().len()).max().unwrap_or(0);
    let indent = " ".repeat(width + 2 + 7 + 2);
    Code::ALL
        .iter()
        .map(|&c| {
            let when = only_under_strict(c);
            let line = format!("{:width$}  {:7}  {when}{}", c.as_str(), c.default_severity().as_str(), summary(c));
            format!("{}\n", wrapped(&line, &indent))
        })
        .collect()
}

/// The table of codes of docs/codes.md (`onnx-bcast explain --list --format markdown`): code, severity (and when it is
/// reported), summary.
pub fn markdown() -> String {
    let mut out = String::from("| code | severity | meaning |\n| --- | --- | --- |\n");
    for &code in Code::ALL {
        let doc = code.doc();
        let severity = doc.severity.as_str();
        let severity = match doc.reported {
            Reported::Always => severity.to_string(),
            Reported::ErrorUnderStrict => format!("{severity} (error under `--strict`)"),
            Reported::OnlyUnderStrict => format!("{severity}, only under `--strict`"),
        };
        out.push_str(&format!("| `{code}` | {severity} | {} |\n", doc.summary));
    }
    out
}

/// The `help` text of a rule in SARIF output: the description and how to fix it (no URL).
pub fn help(code: Code) -> String {
    let doc = code.doc();
    let mut out = code.description().to_string();
    out.push_str(&format!("\n\nFix: {}", doc.help));
    if let Origin::Documents(sources) = doc.origin {
        let names: Vec<&str> = sources.iter().map(|s| s.name()).collect();
        out.push_str(&format!("\n\nSource: {}.", names.join("; ")));
    }
    out.push_str(&format!("\n\nMore: onnx-bcast explain {code}"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_markdown_table_has_a_row_per_code() {
        let table = markdown();
        assert_eq!(table.lines().count(), Code::ALL.len() + 2);
        for &code in Code::ALL {
            assert!(table.contains(&format!("| `{code}` |")), "{code}");
        }
    }

    #[test]
    fn explain_shows_the_example_run_of_its_code() {
        for &code in Code::ALL {
            let text = text(code);
            let command = format!("  $ {}\n", code.doc().example.command());
            assert!(text.contains(&command), "{code}: {text}");
            assert!(text.contains(&format!(": {}[{code}] ", code.default_severity().as_str())), "{code}: {text}");
        }
    }
}
