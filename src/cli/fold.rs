//! `onnx-bcast fold`: the model read, every explicit broadcast that its consumers perform anyway planned away,
//! then written atomically, and the summary printed.

use std::io::{self, Write};

use onnx_bcast::rewrite::fold::{Fold, FoldOptions, FoldSummary};

use super::args::{FoldArgs, Format};
use super::Status;

pub fn command(args: &FoldArgs) -> io::Result<Status> {
    let options = FoldOptions { materialized: args.materialized };
    let shown = args.input.display().to_string();
    let output = args.output.as_deref().filter(|_| !args.dry_run);
    let planned = match super::rewrite::plan(&Fold(options), &args.input, output, args.dry_run) {
        Ok(planned) => planned,
        Err(status) => return Ok(status),
    };
    let written = match super::rewrite::write(&planned, &args.input, output) {
        Ok(written) => written,
        Err(status) => return Ok(status),
    };
    let plan = &planned.plan;
    write_summary(&shown, written.as_deref(), &plan.summary, args)?;
    // A broadcast kept is not a finding: the model written is valid, with the reason listed.
    Ok(Status::Clean)
}

/// `fold`'s summary, on stdout unless the model itself went there (OUT `-`), and then on stderr.
fn write_summary(shown: &str, written: Option<&str>, summary: &FoldSummary, args: &FoldArgs) -> io::Result<()> {
    // Text for people in ASCII where the terminal is not UTF-8; JSON as it is.
    let text = args.format == Format::Text;
    let mut out: Box<dyn Write> = if written == Some("-") {
        let ascii = text && super::charset::stderr_ascii();
        Box::new(super::charset::Text::new(io::stderr().lock(), ascii))
    } else {
        let ascii = text && super::charset::stdout_ascii();
        Box::new(io::BufWriter::new(super::charset::Text::new(io::stdout().lock(), ascii)))
    };
    match args.format {
        Format::Text => onnx_bcast::render::fold::write_fold_text(&mut out, shown, written, summary, args.quiet)?,
        Format::Json => writeln!(out, "{}", onnx_bcast::render::fold::fold_json(shown, written, summary))?,
    }
    out.flush()
}
