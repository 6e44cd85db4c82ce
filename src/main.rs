//! The `onnx-bcast` command line.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Freed pages go back to the OS at once rather than after mimalloc's default 10 ms: decoding a large model
/// leaves the decoder's spare list room behind (see `source::fit_name_lists`), and a chain of a million nodes
/// then peaks at 493 MiB instead of 503 (issue 14 asks for under 500 MiB); the 100,000-node check is no slower.
#[cfg(feature = "mimalloc")]
fn purge_freed_memory_at_once() {
    // `mi_option_purge_delay` in mimalloc 3's `mi_option_t` (libmimalloc-sys 0.1.49 names no constant for it).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: sets one of mimalloc's numeric options; any value is valid, and options may be set at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

mod cli;

use cli::check::{check_command, CheckArgs};
use cli::{code_parser, Status};
use onnx_bcast::analysis::analyze_model;
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::diagnostic::Code;
use onnx_bcast::expand::{expand_model, ExpandOptions};
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
    /// Models are checked in parallel and reported in argument order (a folder's models in path order). Settings
    /// come from onnx-bcast.toml or [tool.onnx-bcast] in pyproject.toml, the first found from the current folder
    /// upwards; flags override them.
    ///
    /// Exit status: 0 when no model has an error, 1 when one does (a violation, a broken graph, a code made an error
    /// by --deny, or under --strict any implicit or conditional broadcast), 2 when a model could not be checked or
    /// the settings are wrong.
    Check(CheckArgs),
    /// Print every value's inferred element type and shape, or a Graphviz picture of the broadcasting sites.
    Shapes {
        /// The ONNX model files, in order; `-` reads one model from standard input.
        #[arg(required = true)]
        models: Vec<PathBuf>,
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
        /// The largest constant that --materialize-constants writes out, in bytes (units allowed: 1KiB, 16MiB, 2GB).
        #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = cli::parse_bytes)]
        max_materialize_bytes: u64,
        /// Write external data of at most BYTES per tensor into the model file itself (main-graph initializers).
        #[arg(long, value_name = "BYTES", value_parser = cli::parse_bytes)]
        inline_external_below: Option<u64>,
        /// Gather the external data of main-graph initializers into this one new file beside OUTPUT.
        #[arg(long, value_name = "FILE")]
        gather_external_data: Option<String>,
        /// Output format of the summary.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Print the plan and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Do not list the sites made explicit (one line each); the sites left implicit and the totals are still
        /// printed.
        #[arg(long, short)]
        quiet: bool,
        /// After rewriting, run the original and the rewritten model with tract-onnx on the same seeded random
        /// inputs (symbolic dims bound to small sizes) and compare every output. Exit 1 when they differ or the
        /// rewritten model fails where the original runs, 2 when tract cannot run the original. Needs a build with
        /// the `verify` feature (hidden from --help in builds without it).
        #[arg(long, hide = cfg!(not(feature = "verify")))]
        verify: bool,
        /// With --verify: bind the symbolic input dim SYMBOL to SIZE (e.g. `--verify-size height=64` for a model
        /// that needs multiples of 32) instead of the small sizes tried by default. Repeatable.
        #[arg(long, value_name = "SYMBOL=SIZE", value_parser = parse_size_binding, requires = "verify", hide = cfg!(not(feature = "verify")))]
        verify_size: Vec<(String, usize)>,
    },
    /// Explain a diagnostic code: what it means, which document its rule comes from, an example and a fix.
    Explain {
        /// The code, e.g. broadcast-violation.
        #[arg(value_name = "CODE", required_unless_present = "list", value_parser = code_parser(false), hide_possible_values = true)]
        code: Option<String>,
        /// List every code with its default severity and a one-line summary.
        #[arg(long, conflicts_with = "code")]
        list: bool,
    },
    /// Print a shell completion script, generated from this command line's definition.
    ///
    /// For example `onnx-bcast completions bash > ~/.local/share/bash-completion/completions/onnx-bcast`, or
    /// `onnx-bcast completions zsh > "${fpath[1]}/_onnx-bcast"`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from this command line's definition.
    ///
    /// `onnx-bcast man | man -l -` shows it; `--out-dir DIR` writes onnx-bcast.1 and a page per subcommand.
    Man {
        /// Write onnx-bcast.1 and onnx-bcast-SUBCOMMAND.1 into this folder instead of printing onnx-bcast(1).
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
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

fn main() -> ExitCode {
    #[cfg(feature = "mimalloc")]
    purge_freed_memory_at_once();
    // A panic is a bug in onnx-bcast, never the user's fault: one `internal error` line names the model and the
    // place (see onnx_bcast::panics), and the run goes on with the next model or ends with exit 2.
    onnx_bcast::panics::install_hook();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // A panic outside every per-model guard (writing the output, say) has printed its line: exit 2, not 101.
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli, &matches)));
    let Ok(ran) = ran else { return ExitCode::from(Status::Failed as u8) };
    match ran {
        Ok(status) => ExitCode::from(status as u8),
        // A reader that stopped listening (`| head`) is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("onnx-bcast: error: {e}");
            ExitCode::from(Status::Failed as u8)
        }
    }
}

fn run(cli: Cli, matches: &clap::ArgMatches) -> io::Result<Status> {
    match cli.command {
        Command::Check(args) => {
            let check_matches = matches.subcommand_matches("check").expect("the check subcommand was parsed");
            check_command(&args, check_matches)
        }
        Command::Explain { code, list } => {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            if list {
                out.write_all(onnx_bcast::explain::list().as_bytes())?;
            } else {
                let code = code.as_deref().and_then(Code::from_name).expect("clap accepts only codes");
                out.write_all(onnx_bcast::explain::text(code).as_bytes())?;
            }
            out.flush()?;
            Ok(Status::Clean)
        }
        Command::Completions { shell } => {
            let stdout = io::stdout();
            let mut out = io::BufWriter::new(stdout.lock());
            cli::completions::write(shell, &mut Cli::command(), &mut out)?;
            out.flush()?;
            Ok(Status::Clean)
        }
        Command::Man { out_dir } => {
            let command = Cli::command();
            match out_dir {
                Some(dir) => {
                    std::fs::create_dir_all(&dir)?;
                    clap_mangen::generate_to(command, &dir)?;
                }
                None => {
                    let stdout = io::stdout();
                    let mut out = io::BufWriter::new(stdout.lock());
                    clap_mangen::Man::new(command).render(&mut out)?;
                    out.flush()?;
                }
            }
            Ok(Status::Clean)
        }
        Command::Shapes { models, format } => {
            // Each model in turn, the worst status wins; a model that cannot be read does not stop the others.
            let mut worst = Status::Clean;
            for model in &models {
                worst = worst.max(shapes(model, format)?);
            }
            Ok(worst)
        }
        Command::Expand {
            input,
            output,
            materialize_constants,
            max_materialize_bytes,
            inline_external_below,
            gather_external_data,
            format,
            dry_run,
            quiet,
            verify,
            verify_size,
        } => {
            if verify && !cfg!(feature = "verify") {
                eprintln!(
                    "onnx-bcast: error: --verify: built without the `verify` feature; rebuild with --features verify"
                );
                return Ok(Status::Failed);
            }
            let options = ExpandOptions {
                materialize_constants,
                max_materialize_bytes,
                inline_external_below,
                gather_external: gather_external_data,
            };
            let verify = verify.then_some(verify_size);
            expand(&input, &output, options, format, dry_run, verify, quiet)
        }
    }
}

fn expand(
    input: &Path,
    output: &Path,
    options: ExpandOptions,
    format: Format,
    dry_run: bool,
    verify: Option<Vec<(String, usize)>>,
    quiet: bool,
) -> io::Result<Status> {
    let shown = input.display().to_string();
    let model = match Model::open(input) {
        Ok(model) => model,
        Err(e) => {
            eprintln!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    // OUT is judged before any work, so that a bad OUT costs nothing and is named in the message.
    if !dry_run {
        if let Err(e) = onnx_bcast::save::destination(output) {
            eprintln!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    }
    let planned = onnx_bcast::panics::guard(|| {
        onnx_bcast::panics::test_point("expand");
        expand_model(&model, options)
    });
    let (plan, pieces) = match planned {
        Ok(Ok(done)) => done,
        Ok(Err(onnx_bcast::expand::ExpandError::Broken(notes))) => {
            for note in &notes {
                eprintln!("onnx-bcast: {shown}: {}", onnx_bcast::refuse::line(note));
            }
            eprintln!("onnx-bcast: {shown}: not rewritten: `check` reports the model as broken; nothing was written");
            return Ok(Status::Findings);
        }
        Ok(Err(e)) => {
            eprintln!("onnx-bcast: error: {shown}: {e}");
            return Ok(Status::Failed);
        }
        Err(panic) => {
            eprintln!("onnx-bcast: internal error: {shown}: {panic}");
            return Ok(Status::Failed);
        }
    };
    let status = if plan.summary.left.is_empty() { Status::Clean } else { Status::Findings };
    // The rewrite is verified before OUT is written: a rewrite that computes something else is never written.
    let verified = if let Some(sizes) = &verify {
        let verified = verify_rewrite(&shown, model.bytes(), &pieces, plan.edit.is_empty(), format, sizes)?;
        if verified != Status::Clean {
            eprintln!("onnx-bcast: {}: not written, since verification failed", output.display());
            write_expand_summary(&shown, None, &plan.summary, format, quiet, Some(verified))?;
            return Ok(status.max(verified));
        }
        Some(verified)
    } else {
        None
    };
    let written = if dry_run {
        None
    } else {
        // An unchanged model written over itself needs no write at all.
        let unchanged_in_place = plan.edit.is_empty() && same_file(input, output);
        if !unchanged_in_place {
            if let Err(e) = onnx_bcast::expand::write_expanded(&model, &plan, &pieces, output) {
                eprintln!("onnx-bcast: error: {e}");
                return Ok(Status::Failed);
            }
        }
        Some(output.display().to_string())
    };
    write_expand_summary(&shown, written.as_deref(), &plan.summary, format, quiet, verified)?;
    Ok(status.max(verified.unwrap_or(Status::Clean)))
}

/// `expand`'s summary, on stdout unless the model itself went there (OUT `-`), and then on stderr. `verified`:
/// the result of `--verify`, when it ran.
fn write_expand_summary(
    shown: &str,
    written: Option<&str>,
    summary: &onnx_bcast::expand::ExpandSummary,
    format: Format,
    quiet: bool,
    verified: Option<Status>,
) -> io::Result<()> {
    let mut out: Box<dyn Write> = if written == Some("-") {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::BufWriter::new(io::stdout().lock()))
    };
    match format {
        Format::Text => onnx_bcast::render_expand::write_expand_text(&mut out, shown, written, summary, quiet)?,
        Format::Json => {
            let mut json = onnx_bcast::render_expand::expand_json(shown, written, summary);
            if let Some(status) = verified {
                json["verified"] = serde_json::Value::Bool(status == Status::Clean);
            }
            writeln!(out, "{json}")?
        }
    }
    out.flush()
}

/// `expand --verify`: runs both models with tract and compares their outputs.
#[cfg(feature = "verify")]
fn verify_rewrite(
    shown: &str,
    original: &[u8],
    pieces: &onnx_bcast::wire::Pieces,
    unchanged: bool,
    format: Format,
    sizes: &[(String, usize)],
) -> io::Result<Status> {
    /// Inputs are drawn from this seed, so a run is reproducible.
    const SEED: u64 = 0x0b_ca57;
    if unchanged {
        if format == Format::Text {
            println!("verify: {shown}: nothing was rewritten, so the outputs are the original's");
        }
        return Ok(Status::Clean);
    }
    let rewritten = pieces.to_vec(original)?;
    let verified = onnx_bcast::panics::guard(|| onnx_bcast::verify::verify_with(original, &rewritten, SEED, sizes));
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
            eprintln!("onnx-bcast: internal error: verify: {shown}: {panic}");
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
    _sizes: &[(String, usize)],
) -> io::Result<Status> {
    // `run` refuses --verify before expanding when the feature is off; this only keeps that promise if it is not.
    eprintln!("onnx-bcast: error: --verify: built without the `verify` feature; rebuild with --features verify");
    Ok(Status::Failed)
}

/// `SYMBOL=SIZE` for --verify-size.
fn parse_size_binding(text: &str) -> Result<(String, usize), String> {
    let (symbol, size) = text.split_once('=').ok_or_else(|| format!("'{text}' is not SYMBOL=SIZE"))?;
    let size = size.trim().parse::<usize>().map_err(|_| format!("'{size}' is not a size"))?;
    if symbol.trim().is_empty() || size == 0 {
        return Err(format!("'{text}' is not SYMBOL=SIZE with a size of at least 1"));
    }
    Ok((symbol.trim().to_string(), size))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn shapes(path: &Path, format: ShapesFormat) -> io::Result<Status> {
    let shown = path.display().to_string();
    let opened = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut io::stdin().lock(), &mut bytes)?;
        Model::from_bytes("-", bytes.into())
    } else {
        Model::open(path)
    };
    let model = match opened {
        Ok(model) => model,
        Err(e) => {
            eprintln!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let analysis = match onnx_bcast::panics::guard(|| analyze_model(&model)) {
        Ok(a) => a,
        Err(panic) => {
            eprintln!("onnx-bcast: internal error: {shown}: {panic}");
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
