//! `onnx-bcast fold`: the model read, every explicit broadcast that its consumers perform anyway planned away,
//! then written atomically, and the summary printed.

use std::io::{self, Write};

use onnx_bcast::rewrite::fold::{Fold, FoldOptions, FoldSummary};

use super::args::{FoldArgs, Format};
use super::Status;

pub fn command(args: &FoldArgs) -> io::Result<Status> {
    let options = FoldOptions { materialized: args.materialized };
    let shown = args.input.display().to_string();
    let (planned, written) =
        match super::rewrite::plan_and_write(&Fold(options), &args.input, args.output.as_deref(), args.dry_run) {
            Ok(done) => done,
            Err(status) => return Ok(status),
        };
    let plan = &planned.plan;
    write_summary(&shown, written.as_deref(), &plan.summary, args)?;
    onnx_bcast::sys::exit_without_freeing(planned);
    // A broadcast kept is not a finding: the model written is valid, with the reason listed.
    Ok(Status::Clean)
}

/// `fold`'s summary, on stdout unless the model itself went there (OUT `-`), and then on stderr.
fn write_summary(shown: &str, written: Option<&str>, summary: &FoldSummary, args: &FoldArgs) -> io::Result<()> {
    let mut out = super::rewrite::summary_out(written, args.format);
    match args.format {
        Format::Text => onnx_bcast::render::fold::write_fold_text(&mut out, shown, written, summary, args.quiet)?,
        Format::Json => writeln!(out, "{}", onnx_bcast::render::fold::fold_json(shown, written, summary))?,
    }
    out.flush()
}
