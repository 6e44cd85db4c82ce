//! `onnx-bcast infer`: the model read, every value's inferred shape planned as a declaration, written atomically
//! (unless --dry-run), and the summary printed.

use std::io::{self, Write};

use onnx_bcast::analysis::Bindings;
use onnx_bcast::rewrite::annotate::{Annotate, InferOptions, InferSummary};

use super::args::{Format, InferArgs};
use super::Status;

pub fn command(args: &InferArgs) -> io::Result<Status> {
    let bindings = match Bindings::new(&args.bind) {
        Ok(b) => b,
        Err(e) => {
            say!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let options = InferOptions { bindings, overwrite_declared: args.overwrite_declared, ranges: args.ranges.request() };
    let shown = args.input.display().to_string();
    let (planned, written) =
        match super::rewrite::plan_and_write(&Annotate(&options), &args.input, args.output.as_deref(), args.dry_run) {
            Ok(done) => done,
            Err(status) => return Ok(status),
        };
    let plan = &planned.plan;
    write_summary(&shown, written.as_deref(), &plan.summary, args.format)?;
    let kept = plan.summary.mismatches.iter().any(|m| !m.replaced);
    onnx_bcast::sys::exit_without_freeing(planned);
    Ok(if kept { Status::Findings } else { Status::Clean })
}

/// The summary, on stdout unless the model itself went there (OUT `-`), and then on stderr.
fn write_summary(shown: &str, written: Option<&str>, summary: &InferSummary, format: Format) -> io::Result<()> {
    let mut out = super::rewrite::summary_out(written, format);
    match format {
        Format::Text => onnx_bcast::render::infer::write_infer_text(&mut out, shown, written, summary)?,
        Format::Json => writeln!(out, "{}", onnx_bcast::render::infer::infer_json(shown, written, summary))?,
    }
    out.flush()
}
