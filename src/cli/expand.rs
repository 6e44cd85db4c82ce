//! `onnx-bcast expand`: the model read, every implicit broadcast planned explicit, optionally verified by running
//! both models, then written atomically, and the summary printed.

use std::io::{self, Write};
use std::path::Path;

use onnx_bcast::onnx::wire::Pieces;
use onnx_bcast::rewrite::expand::{Expand, ExpandOptions, ExpandSummary};

use super::args::{ExpandArgs, Format};
use super::Status;

const NO_VERIFY: &str =
    "onnx-bcast: error: --verify: built without the `verify` feature; rebuild with --features verify";

/// What was asked besides the rewrite itself.
struct Request {
    format: Format,
    dry_run: bool,
    quiet: bool,
    /// `--verify`, with the `--verify-size` bindings.
    verify: Option<Vec<(String, usize)>>,
    /// `--bind` and the ranges.
    analysis: onnx_bcast::analysis::Request,
}

pub fn command(args: ExpandArgs) -> io::Result<Status> {
    if args.verify && !cfg!(feature = "verify") {
        say!("{NO_VERIFY}");
        return Ok(Status::Failed);
    }
    let options = ExpandOptions {
        materialize_constants: args.materialize_constants,
        max_materialize_bytes: args.max_materialize_bytes,
        inline_external_below: args.inline_external_below,
        gather_external: args.gather_external_data,
    };
    let bindings = match onnx_bcast::analysis::Bindings::new(&args.bind) {
        Ok(bindings) => bindings,
        Err(e) => {
            say!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let request = Request {
        format: args.format,
        dry_run: args.dry_run,
        quiet: args.quiet,
        verify: args.verify.then_some(args.verify_size),
        analysis: onnx_bcast::analysis::Request { bindings, ranges: args.ranges.request(), ..Default::default() },
    };
    expand(&args.input, args.output.as_deref(), options, &request)
}

fn expand(input: &Path, output: Option<&Path>, options: ExpandOptions, request: &Request) -> io::Result<Status> {
    let shown = input.display().to_string();
    let command = Expand { options, request: &request.analysis };
    let between = super::hand_back_freed_memory_of_large_models;
    let planned = match super::rewrite::plan(&command, (input, output), request.dry_run, between) {
        Ok(planned) => planned,
        Err(status) => return Ok(status),
    };
    let (model, plan, pieces) = (&planned.model, &planned.plan, &planned.pieces);
    // A site left that broadcasts (or breaks its rule) is a finding; an undecided one is only under --strict.
    let findings = plan.summary.left.iter().any(|l| l.kind().is_finding());
    let status = if findings { Status::Findings } else { Status::Clean };
    // The rewrite is verified before OUT is written: a rewrite that computes something else is never written.
    let verified = match &request.verify {
        Some(sizes) => {
            let rewrite = ToVerify {
                shown: &shown,
                original: model.bytes(),
                pieces,
                unchanged: plan.edit.is_empty(),
                format: request.format,
                sizes,
            };
            let verified = verify_rewrite(rewrite)?;
            if verified != Status::Clean {
                if let Some(output) = output.filter(|_| !request.dry_run) {
                    say!("onnx-bcast: {}: not written, since verification failed", output.display());
                }
                write_summary(&shown, None, &plan.summary, request, Some(verified))?;
                return Ok(status.max(verified));
            }
            Some(verified)
        }
        None => None,
    };
    let written = match super::rewrite::write(&planned, input, output.filter(|_| !request.dry_run)) {
        Ok(written) => written,
        Err(status) => return Ok(status),
    };
    write_summary(&shown, written.as_deref(), &plan.summary, request, verified)?;
    onnx_bcast::sys::exit_without_freeing(planned);
    Ok(status.max(verified.unwrap_or(Status::Clean)))
}

/// `expand`'s summary, on stdout unless the model itself went there (OUT `-`), and then on stderr. `verified`:
/// the result of `--verify`, when it ran.
fn write_summary(
    shown: &str,
    written: Option<&str>,
    summary: &ExpandSummary,
    request: &Request,
    verified: Option<Status>,
) -> io::Result<()> {
    let mut out = super::rewrite::summary_out(written, request.format);
    match request.format {
        Format::Text => {
            onnx_bcast::render::expand::write_expand_text(&mut out, shown, written, summary, request.quiet)?
        }
        Format::Json => {
            let mut json = onnx_bcast::render::expand::ExpandJson::new(shown, written, summary);
            if let Some(status) = verified {
                json = json.verified(status == Status::Clean);
            }
            // Serialized into one buffer, then written: serde_json writes each quote, colon and comma apart, and
            // each such write through the output's writer cost more than the bytes (about 12 MB for 100,000 actions).
            let mut bytes = serde_json::to_vec(&json)?;
            bytes.push(b'\n');
            out.write_all(&bytes)?
        }
    }
    out.flush()
}

/// What `--verify` compares: the original model's bytes and the rewrite of them. (Without the `verify` feature
/// nothing reads it: `command` refuses --verify first.)
#[cfg_attr(not(feature = "verify"), allow(dead_code))]
struct ToVerify<'a> {
    shown: &'a str,
    original: &'a [u8],
    pieces: &'a Pieces,
    /// Whether nothing was rewritten.
    unchanged: bool,
    format: Format,
    /// The `--verify-size` bindings.
    sizes: &'a [(String, usize)],
}

/// `expand --verify`: runs both models with tract and compares their outputs.
#[cfg(feature = "verify")]
fn verify_rewrite(rewrite: ToVerify<'_>) -> io::Result<Status> {
    /// Inputs are drawn from this seed, so a run is reproducible.
    const SEED: u64 = 0x0b_ca57;
    let ToVerify { shown, original, pieces, unchanged, format, sizes } = rewrite;
    if unchanged {
        if format == Format::Text {
            tell!("verify: {shown}: nothing was rewritten, so the outputs are the original's");
        }
        return Ok(Status::Clean);
    }
    let rewritten = pieces.to_vec(original)?;
    let verified =
        onnx_bcast::sys::panics::guard(|| onnx_bcast::check::verify::verify_with(original, &rewritten, SEED, sizes));
    match verified {
        Ok(Ok(report)) if report.differs() => {
            say!("onnx-bcast: verify: {shown}: the rewritten model computes something else: {report}");
            for line in report.differences() {
                say!("onnx-bcast: verify: {shown}: {line}");
            }
            Ok(Status::Findings)
        }
        Ok(Ok(report)) => {
            if format == Format::Text {
                tell!("verify: {shown}: {report}");
            }
            Ok(Status::Clean)
        }
        // The original runs and the rewrite does not: a finding about the rewrite, like a difference.
        Ok(Err(e @ onnx_bcast::check::verify::VerifyError::Rewritten { .. })) => {
            say!("onnx-bcast: verify: {shown}: {e}");
            Ok(Status::Findings)
        }
        Ok(Err(e)) => {
            say!("onnx-bcast: error: verify: {shown}: {e}");
            Ok(Status::Failed)
        }
        Err(panic) => {
            say!("onnx-bcast: internal error: verify: {shown}: {panic}");
            Ok(Status::Failed)
        }
    }
}

/// `command` refuses --verify before expanding when the feature is off; this only keeps that promise if it is not.
#[cfg(not(feature = "verify"))]
fn verify_rewrite(_: ToVerify<'_>) -> io::Result<Status> {
    say!("{NO_VERIFY}");
    Ok(Status::Failed)
}
