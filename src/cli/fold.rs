//! `onnx-bcast fold`: the model read, every explicit broadcast that its consumers perform anyway planned away,
//! then written atomically, and the summary printed.

use std::io::{self, Write};
use std::path::Path;

use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::wire::Pieces;
use onnx_bcast::rewrite::fold::{fold_model, FoldError, FoldOptions, FoldPlan, FoldSummary};

use super::args::{FoldArgs, Format};
use super::Status;

pub fn command(args: &FoldArgs) -> io::Result<Status> {
    let options = FoldOptions { materialized: args.materialized };
    let shown = args.input.display().to_string();
    let output = args.output.as_deref().filter(|_| !args.dry_run);
    let (model, plan, pieces) = match plan(&args.input, output, options, args.dry_run) {
        Ok(planned) => planned,
        Err(status) => return Ok(status),
    };
    let written = match output {
        None => None,
        Some(output) => {
            // An unchanged model written over itself needs no write at all.
            let unchanged_in_place = plan.edit.is_empty() && super::same_file(&args.input, output);
            if !unchanged_in_place {
                if let Err(e) = onnx_bcast::rewrite::fold::write_folded(&model, &pieces, output) {
                    say!("onnx-bcast: error: {e}");
                    return Ok(Status::Failed);
                }
            }
            Some(output.display().to_string())
        }
    };
    write_summary(&shown, written.as_deref(), &plan.summary, args)?;
    // A broadcast kept is not a finding: the model written is valid, with the reason listed.
    Ok(Status::Clean)
}

/// The model at `input`, and its plan; `Err` with the exit status once the reason is printed.
fn plan(
    input: &Path,
    output: Option<&Path>,
    options: FoldOptions,
    dry_run: bool,
) -> Result<(Model, FoldPlan, Pieces), Status> {
    let shown = input.display().to_string();
    let model = super::open_for_rewrite(input, output, dry_run)?;
    let plan = || {
        onnx_bcast::sys::panics::test_point("fold");
        fold_model(&model, options)
    };
    let (plan, pieces) = super::planned(&shown, "rewritten", plan, |e| match e {
        FoldError::Broken(notes) => Some(notes),
        _ => None,
    })?;
    Ok((model, plan, pieces))
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
