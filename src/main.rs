//! The `onnx-bcast` command line.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use onnx_bcast::analysis::analyze;
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::model::Model;
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
    },
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
        Command::Check { models, format, strict } => check_models(&models, format, CheckOptions { strict }),
    }
}

fn check_models(paths: &[PathBuf], format: Format, options: CheckOptions) -> io::Result<Status> {
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
                    Format::Text => render::write_text(&mut out, &shown, &report)?,
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
