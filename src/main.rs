//! The `onnx-bcast` command line.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use onnx_bcast::analysis::analyze;
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::expand::{expand_model, ExpandOptions};
use onnx_bcast::model::{write_atomically, Model};
use onnx_bcast::render;

#[derive(Parser)]
#[command(name = "onnx-bcast", version, about = "Make broadcasting in ONNX models visible, checked and explicit")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check every broadcasting site of the models against its rule.
    ///
    /// Exit status: 0 when no model has a violation, 1 when one does (or, under --strict, has any implicit or
    /// conditional broadcast), 2 when a model could not be checked.
    Check {
        /// ONNX model files.
        #[arg(required = true)]
        models: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also fail on every implicit broadcast and every conditional site (the SONNX profile's rule).
        #[arg(long)]
        strict: bool,
        /// Also name the ops that stopped shape inference (no rule for them: their outputs are unknown).
        #[arg(long, short)]
        verbose: bool,
    },
    /// Print every value's inferred element type and shape, or a Graphviz picture of the broadcasting sites.
    Shapes {
        /// The ONNX model file.
        model: PathBuf,
        /// Output format: text, json, or dot (Graphviz; sites coloured by verdict, shapes on the edges).
        #[arg(long, value_enum, default_value_t = ShapesFormat::Text)]
        format: ShapesFormat,
    },
    /// Rewrite every implicit broadcast into explicit ops (Expand; Reshape and Tile below opset 8).
    ///
    /// Exit status: 0 when every broadcast was made explicit, 1 when some site was left as it was (a violation, or
    /// no faithful rewrite at the model's opset) or --verify found a difference, 2 when nothing could be written.
    Expand {
        /// The model to rewrite.
        input: PathBuf,
        /// Where to write the rewritten model (may be INPUT). Written atomically: a failure leaves it untouched.
        output: PathBuf,
        /// Write constant inputs (initializers, Constant nodes) out at their broadcast shape instead of adding an
        /// Expand, for toolchains that reject Expand.
        #[arg(long)]
        materialize_constants: bool,
        /// The largest constant, in bytes, that --materialize-constants writes out.
        #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
        max_materialize_bytes: u64,
        /// Output format of the summary.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Print the plan and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// After rewriting, run the original and the rewritten model with tract-onnx on the same seeded random
        /// inputs (symbolic dims bound to small sizes) and compare every output. Exit 1 when they differ or the
        /// rewritten model fails where the original runs, 2 when tract cannot run the original. Needs a build with
        /// the `verify` feature.
        #[arg(long)]
        verify: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ShapesFormat {
    Text,
    Json,
    Dot,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Exit statuses, ordered so that the worst of several models wins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    Clean = 0,
    Findings = 1,
    Failed = 2,
}

fn main() -> ExitCode {
    // A panic is a bug in onnx-bcast, never the user's fault: it is caught per model and reported as an internal
    // error naming the model, so the default hook's backtrace noise is silenced.
    std::panic::set_hook(Box::new(|_| {}));
    let cli = Cli::parse();
    match run(cli) {
        Ok(status) => ExitCode::from(status as u8),
        // A reader that stopped listening (`| head`) is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("onnx-bcast: error: {e}");
            ExitCode::from(Status::Failed as u8)
        }
    }
}

fn run(cli: Cli) -> io::Result<Status> {
    match cli.command {
        Command::Check { models, format, strict, verbose } => {
            check_models(&models, format, CheckOptions { strict }, verbose)
        }
        Command::Shapes { model, format } => shapes(&model, format),
        Command::Expand { input, output, materialize_constants, max_materialize_bytes, format, dry_run, verify } => {
            if verify && !cfg!(feature = "verify") {
                eprintln!(
                    "onnx-bcast: error: --verify: built without the `verify` feature; rebuild with --features verify"
                );
                return Ok(Status::Failed);
            }
            let options = ExpandOptions { materialize_constants, max_materialize_bytes };
            expand(&input, &output, options, format, dry_run, verify)
        }
    }
}

fn expand(
    input: &Path,
    output: &Path,
    options: ExpandOptions,
    format: Format,
    dry_run: bool,
    verify: bool,
) -> io::Result<Status> {
    let shown = input.display().to_string();
    let model = match Model::open(input) {
        Ok(model) => model,
        Err(e) => {
            eprintln!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let planned = std::panic::catch_unwind(|| expand_model(&model, options));
    let (plan, pieces) = match planned {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => {
            eprintln!("onnx-bcast: error: {shown}: {e}");
            return Ok(Status::Failed);
        }
        Err(panic) => {
            eprintln!("onnx-bcast: internal error: {shown}: {}", panic_message(&panic));
            return Ok(Status::Failed);
        }
    };
    let written = if dry_run {
        None
    } else {
        // An unchanged model written over itself needs no write at all.
        let unchanged_in_place = plan.edit.is_empty() && same_file(input, output);
        if !unchanged_in_place {
            if let Err(e) = write_atomically(output, |w| pieces.write_to(model.bytes(), w)) {
                eprintln!("onnx-bcast: error: {}: cannot write: {e}", output.display());
                return Ok(Status::Failed);
            }
        }
        Some(output.display().to_string())
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match format {
        Format::Text => render::write_expand_text(&mut out, &shown, written.as_deref(), &plan.summary, dry_run)?,
        Format::Json => writeln!(out, "{}", render::expand_json(&shown, written.as_deref(), &plan.summary))?,
    }
    out.flush()?;
    let status = if plan.summary.left.is_empty() { Status::Clean } else { Status::Findings };
    if verify {
        let verified = verify_rewrite(&shown, model.bytes(), &pieces, plan.edit.is_empty(), format)?;
        return Ok(status.max(verified));
    }
    Ok(status)
}

/// `expand --verify`: runs both models with tract and compares their outputs.
#[cfg(feature = "verify")]
fn verify_rewrite(
    shown: &str,
    original: &[u8],
    pieces: &onnx_bcast::wire::Pieces,
    unchanged: bool,
    format: Format,
) -> io::Result<Status> {
    /// Inputs are drawn from this seed, so a run is reproducible.
    const SEED: u64 = 0x0b_ca57;
    if unchanged {
        if format == Format::Text {
            println!("verify: {shown}: nothing was rewritten, so the outputs are the original's");
        }
        return Ok(Status::Clean);
    }
    let rewritten = pieces.to_vec(original);
    let verified = std::panic::catch_unwind(|| onnx_bcast::verify::verify(original, &rewritten, SEED));
    match verified {
        Ok(Ok(report)) if report.differs() => {
            eprintln!("onnx-bcast: verify: {shown}: the rewritten model computes something else: {report}");
            for line in report.differences() {
                eprintln!("onnx-bcast: verify: {shown}: {line}");
            }
            Ok(Status::Findings)
        }
        Ok(Ok(report)) => {
            if format == Format::Text {
                println!("verify: {shown}: {report}");
            }
            Ok(Status::Clean)
        }
        // The original runs and the rewrite does not: a finding about the rewrite, like a difference.
        Ok(Err(e @ onnx_bcast::verify::VerifyError::Rewritten { .. })) => {
            eprintln!("onnx-bcast: verify: {shown}: {e}");
            Ok(Status::Findings)
        }
        Ok(Err(e)) => {
            eprintln!("onnx-bcast: error: verify: {shown}: {e}");
            Ok(Status::Failed)
        }
        Err(panic) => {
            eprintln!("onnx-bcast: internal error: verify: {shown}: {}", panic_message(&panic));
            Ok(Status::Failed)
        }
    }
}

#[cfg(not(feature = "verify"))]
fn verify_rewrite(
    _shown: &str,
    _original: &[u8],
    _pieces: &onnx_bcast::wire::Pieces,
    _unchanged: bool,
    _format: Format,
) -> io::Result<Status> {
    // `run` refuses --verify before expanding when the feature is off; this only keeps that promise if it is not.
    eprintln!("onnx-bcast: error: --verify: built without the `verify` feature; rebuild with --features verify");
    Ok(Status::Failed)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn shapes(path: &Path, format: ShapesFormat) -> io::Result<Status> {
    let shown = path.display().to_string();
    let model = match Model::open(path) {
        Ok(model) => model,
        Err(e) => {
            eprintln!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let analysis = match std::panic::catch_unwind(|| analyze(model.proto())) {
        Ok(a) => a,
        Err(panic) => {
            eprintln!("onnx-bcast: internal error: {shown}: {}", panic_message(&panic));
            return Ok(Status::Failed);
        }
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match format {
        ShapesFormat::Text => render::write_shapes_text(&mut out, &shown, &analysis)?,
        ShapesFormat::Json => writeln!(out, "{}", render::shapes_json(&shown, &analysis))?,
        ShapesFormat::Dot => {
            let report = check(&analysis, CheckOptions::default());
            out.write_all(onnx_bcast::dot::main_graph(model.proto(), &analysis, &report).as_bytes())?
        }
    }
    out.flush()?;
    Ok(Status::Clean)
}

fn check_models(paths: &[PathBuf], format: Format, options: CheckOptions, verbose: bool) -> io::Result<Status> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut worst = Status::Clean;
    for path in paths {
        let shown = path.display().to_string();
        match Model::open(path) {
            Err(e) => {
                eprintln!("onnx-bcast: error: {e}");
                if format == Format::Json {
                    writeln!(out, "{}", render::error_json(&shown, &e.to_string()))?;
                }
                worst = worst.max(Status::Failed);
            }
            Ok(model) => {
                let checked = std::panic::catch_unwind(|| check(&analyze(model.proto()), options));
                let report = match checked {
                    Ok(report) => report,
                    Err(panic) => {
                        eprintln!("onnx-bcast: internal error: {shown}: {}", panic_message(&panic));
                        worst = worst.max(Status::Failed);
                        continue;
                    }
                };
                match format {
                    Format::Text => {
                        render::write_text(&mut out, &shown, &report)?;
                        if verbose {
                            render::write_opaque(&mut out, &shown, &report.opaque)?;
                        }
                    }
                    Format::Json => writeln!(out, "{}", render::report_json(&shown, &report))?,
                }
                if report.failed() {
                    worst = worst.max(Status::Findings);
                }
            }
        }
    }
    out.flush()?;
    Ok(worst)
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unexpected failure".into())
}
