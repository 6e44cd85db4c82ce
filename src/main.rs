//! The `onnx-bcast` command line.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rayon::iter::{ParallelBridge, ParallelIterator};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

mod cli;

use onnx_bcast::analysis::{analyze_model, analyze_model_each};

/// `check` and `expand` read sites, not the facts of every value.
const SITES_ONLY: onnx_bcast::analysis::Options = onnx_bcast::analysis::Options { value_facts: false };
use onnx_bcast::check::{check, CheckOptions, Judge, Level, Report, RuleSelection, Selector};
use onnx_bcast::config::{find_models, Config, Exclude, Target};
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
        /// Write external data of at most BYTES per tensor into the model file itself (main-graph initializers).
        #[arg(long, value_name = "BYTES")]
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
        /// After rewriting, run the original and the rewritten model with tract-onnx on the same seeded random
        /// inputs (symbolic dims bound to small sizes) and compare every output. Exit 1 when they differ or the
        /// rewritten model fails where the original runs, 2 when tract cannot run the original. Needs a build with
        /// the `verify` feature.
        #[arg(long)]
        verify: bool,
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

#[derive(Args)]
struct CheckArgs {
    /// ONNX model files, or folders: every .onnx file below a folder is checked, in path order.
    #[arg(required = true)]
    models: Vec<PathBuf>,
    /// Output format: text (coloured on a terminal), json (one object per model per line), sarif (one SARIF 2.1.0
    /// log for the whole run), github (GitHub Actions workflow commands, shown as annotations).
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    format: CheckFormat,
    /// Also fail on every implicit broadcast and every conditional site (the SONNX profile's rule).
    #[arg(long, overrides_with = "no_strict")]
    strict: bool,
    /// Do not apply --strict, even if the config file sets `strict = true`.
    #[arg(long, overrides_with = "strict")]
    no_strict: bool,
    /// Also name the ops that stopped shape inference (no rule for them: their outputs are unknown), and the config
    /// file used (on stderr).
    #[arg(long, short)]
    verbose: bool,
    /// Report CODE as an error, which fails the run (exit 1); `all` for every code. Repeatable; a later --deny,
    /// --warn or --allow overrides an earlier one, and all of them override the config file.
    #[arg(long, value_name = "CODE", value_parser = code_parser(true), hide_possible_values = true)]
    deny: Vec<String>,
    /// Report CODE as a warning, which does not fail the run; `all` for every code. Repeatable.
    #[arg(long, value_name = "CODE", value_parser = code_parser(true), hide_possible_values = true)]
    warn: Vec<String>,
    /// Do not report CODE at all; `all` for every code. Repeatable.
    #[arg(long, value_name = "CODE", value_parser = code_parser(true), hide_possible_values = true)]
    allow: Vec<String>,
    /// Skip paths that match GLOB: a file or folder name (`legacy`, `*_bad.onnx`) or a path relative to the current
    /// folder (`models/old/**`). Repeatable; adds to the config file's `exclude`.
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
    /// Read settings from FILE (an onnx-bcast.toml, or a pyproject.toml's [tool.onnx-bcast]) instead of looking
    /// for one.
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    config: Option<PathBuf>,
    /// Read no config file.
    #[arg(long)]
    no_config: bool,
    /// When to colour text output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    color: ColorWhen,
    /// Check at most N models at once (default: one per core).
    #[arg(long, short, value_name = "N")]
    jobs: Option<std::num::NonZeroUsize>,
}

/// `all` and every diagnostic code (without `all` for `explain`), each with its summary for completions.
fn code_parser(with_all: bool) -> PossibleValuesParser {
    let all = with_all.then(|| PossibleValue::new("all").help("every code"));
    let codes = Code::ALL.iter().map(|&c| PossibleValue::new(c.as_str()).help(onnx_bcast::explain::summary(c)));
    PossibleValuesParser::new(all.into_iter().chain(codes))
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CheckFormat {
    Text,
    Json,
    Sarif,
    Github,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorWhen {
    Auto,
    Always,
    Never,
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
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match run(cli, &matches) {
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
        Command::Shapes { model, format } => shapes(&model, format),
        Command::Expand {
            input,
            output,
            materialize_constants,
            max_materialize_bytes,
            inline_external_below,
            gather_external_data,
            format,
            dry_run,
            verify,
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
            if let Err(e) = onnx_bcast::expand::write_expanded(&model, &plan, &pieces, output) {
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
    let rewritten = pieces.to_vec(original)?;
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
    let analysis = match std::panic::catch_unwind(|| analyze_model(&model)) {
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

/// `check`: settings from the config file and the flags, the models from the paths, then every model checked on a
/// pool of threads and reported in order as soon as the ones before it are done.
fn check_command(args: &CheckArgs, matches: &clap::ArgMatches) -> io::Result<Status> {
    let cwd = std::env::current_dir()?;
    let settings = match settings(args, matches, &cwd) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("onnx-bcast: error: {message}");
            return Ok(Status::Failed);
        }
    };
    let (targets, warnings) = find_models(&args.models, &settings.exclude);
    for warning in warnings {
        eprintln!("onnx-bcast: warning: {warning}");
    }
    let palette = render::Palette::choose(
        match args.color {
            ColorWhen::Auto => render::ColorChoice::Auto,
            ColorWhen::Always => render::ColorChoice::Always,
            ColorWhen::Never => render::ColorChoice::Never,
        },
        io::stdout().is_terminal(),
    );
    let sink = match args.format {
        CheckFormat::Text => Sink::Text { palette, verbose: args.verbose },
        CheckFormat::Json => Sink::Json,
        CheckFormat::Github => Sink::Github,
        CheckFormat::Sarif => Sink::Sarif(Vec::new()),
    };
    run_checks(&targets, settings.options, args.jobs, sink)
}

/// What the config file and the flags make of a run.
struct Settings {
    options: CheckOptions,
    exclude: Exclude,
}

/// The config file (unless --no-config), then the flags over it: --strict/--no-strict, the rule flags in command
/// line order, --exclude added to the file's `exclude`.
fn settings(args: &CheckArgs, matches: &clap::ArgMatches, cwd: &Path) -> Result<Settings, String> {
    let config = if args.no_config {
        None
    } else if let Some(path) = &args.config {
        Some(Config::load(path).map_err(|e| e.to_string())?)
    } else {
        Config::discover(cwd).map_err(|e| e.to_string())?
    };
    let mut rules = match &config {
        Some(config) => config.rule_selection().map_err(|e| e.to_string())?,
        None => RuleSelection::default(),
    };
    let mut flags: Vec<(usize, Level, &String)> = Vec::new();
    for (id, level) in [("deny", Level::Deny), ("warn", Level::Warn), ("allow", Level::Allow)] {
        if let (Some(indices), Some(values)) = (matches.indices_of(id), matches.get_many::<String>(id)) {
            flags.extend(indices.zip(values).map(|(i, v)| (i, level, v)));
        }
    }
    flags.sort_by_key(|&(i, _, _)| i);
    for (_, level, name) in flags {
        rules.select(Selector::parse(name).map_err(|e| format!("--{}: {e}", level.as_str()))?, level);
    }
    let strict = if args.strict {
        true
    } else if args.no_strict {
        false
    } else {
        config.as_ref().and_then(|c| c.settings.strict).unwrap_or(false)
    };
    if let (true, Some(config)) = (args.verbose, &config) {
        eprintln!("onnx-bcast: settings from {}", config.path.display());
    }
    let mut exclude = Exclude::new(cwd);
    exclude.add(&args.exclude, cwd, "--exclude").map_err(|e| e.to_string())?;
    if let Some(config) = &config {
        let origin = config.path.display().to_string();
        exclude.add(&config.settings.exclude, config.dir(), &origin).map_err(|e| e.to_string())?;
    }
    Ok(Settings { options: CheckOptions { strict, rules }, exclude })
}

/// One model's result.
struct Outcome {
    /// The path as shown in output.
    shown: String,
    report: Result<Report, Failure>,
}

/// Why a model could not be checked.
enum Failure {
    /// It could not be read or decoded; the message names the path.
    Load(String),
    /// onnx-bcast panicked on it: a bug.
    Internal(String),
}

impl Failure {
    /// The message for stderr (after `onnx-bcast: `).
    fn stderr(&self, shown: &str) -> String {
        match self {
            Failure::Load(message) => format!("error: {message}"),
            Failure::Internal(message) => format!("internal error: {shown}: {message}"),
        }
    }

    /// The message for a report (JSON `error`, SARIF notification, GitHub annotation).
    fn message(&self) -> String {
        match self {
            Failure::Load(message) => message.clone(),
            Failure::Internal(message) => format!("internal error: {message}"),
        }
    }
}

/// Checks one model on a worker thread. Sites are kept only for output that lists them (JSON); otherwise each is
/// judged and dropped as the analysis reaches it.
fn check_target(target: &Target, options: CheckOptions, keep_sites: bool) -> Outcome {
    let shown = target.path().display().to_string();
    let report = match target {
        Target::Unreadable { path, message } => Err(Failure::Load(format!("{}: {message}", path.display()))),
        // Loading is inside the guard too: a panic on a worker thread must not take the other models down.
        Target::Model(path) => std::panic::catch_unwind(|| match Model::open(path) {
            Err(e) => Err(Failure::Load(e.to_string())),
            Ok(model) => {
                let mut judge = Judge::new(options, keep_sites);
                let analysis = analyze_model_each(&model, SITES_ONLY, &mut |site| judge.judge(site));
                Ok(judge.finish(&analysis))
            }
        })
        .unwrap_or_else(|panic| Err(Failure::Internal(panic_message(&panic)))),
    };
    Outcome { shown, report }
}

/// Where results go, by output format.
enum Sink {
    Text {
        palette: render::Palette,
        verbose: bool,
    },
    Json,
    Github,
    /// SARIF is one log for the whole run: the outcomes are kept until the end.
    Sarif(Vec<Outcome>),
}

impl Sink {
    /// Whether the output shows every site, not just the findings and the summary.
    fn lists_sites(&self) -> bool {
        matches!(self, Sink::Json)
    }

    /// Writes one model's result; a failure also goes to stderr in every format.
    fn emit(&mut self, out: &mut impl Write, outcome: Outcome) -> io::Result<()> {
        if let Err(failure) = &outcome.report {
            eprintln!("onnx-bcast: {}", failure.stderr(&outcome.shown));
        }
        let shown = outcome.shown.as_str();
        match (self, &outcome.report) {
            (Sink::Text { palette, verbose }, Ok(report)) => {
                render::write_text_styled(out, shown, report, *palette)?;
                if *verbose {
                    render::write_opaque(out, shown, &report.opaque)?;
                }
            }
            (Sink::Text { .. }, Err(_)) => {}
            (Sink::Json, Ok(report)) => writeln!(out, "{}", render::report_json(shown, report))?,
            (Sink::Json, Err(failure)) => writeln!(out, "{}", render::error_json(shown, &failure.message()))?,
            (Sink::Github, Ok(report)) => render::write_github(out, shown, report)?,
            (Sink::Github, Err(failure)) => {
                writeln!(out, "{}", render::github_command("error", shown, "onnx-bcast", &failure.message()))?
            }
            (Sink::Sarif(kept), _) => kept.push(outcome),
        }
        Ok(())
    }

    /// Writes what is only complete at the end of the run: the SARIF log.
    fn finish(self, out: &mut impl Write) -> io::Result<()> {
        if let Sink::Sarif(kept) = self {
            let messages: Vec<Option<String>> =
                kept.iter().map(|o| o.report.as_ref().err().map(Failure::message)).collect();
            let models: Vec<render::SarifModel<'_>> = kept
                .iter()
                .zip(&messages)
                .map(|(o, message)| render::SarifModel {
                    path: &o.shown,
                    outcome: match (&o.report, message) {
                        (Ok(report), _) => Ok(report),
                        (Err(_), Some(message)) => Err(message.as_str()),
                        (Err(_), None) => unreachable!("a failure has a message"),
                    },
                })
                .collect();
            serde_json::to_writer_pretty(&mut *out, &render::sarif_log(&models))?;
            writeln!(out)?;
        }
        Ok(())
    }
}

/// The exit status one outcome asks for.
fn status_of(outcome: &Outcome) -> Status {
    match &outcome.report {
        Err(_) => Status::Failed,
        Ok(report) if report.failed() => Status::Findings,
        Ok(_) => Status::Clean,
    }
}

/// A progress bar on stderr, for long runs on a terminal only: never when stderr is not a terminal, under CI, with
/// `TERM=dumb`, for fewer than [`PROGRESS_MIN_MODELS`] models totalling under [`PROGRESS_MIN_BYTES`], or before the
/// run has taken [`PROGRESS_DELAY`].
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    visible: bool,
    start: std::time::Instant,
}

const PROGRESS_MIN_MODELS: usize = 16;
const PROGRESS_MIN_BYTES: u64 = 64 << 20;
const PROGRESS_DELAY: Duration = Duration::from_millis(500);

impl Progress {
    fn new(targets: &[Target]) -> Progress {
        let env_set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "false" && v != "0");
        let terminal =
            io::stderr().is_terminal() && !env_set("CI") && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
        let long = || {
            targets.len() >= PROGRESS_MIN_MODELS
                || targets.iter().map(|t| std::fs::metadata(t.path()).map_or(0, |m| m.len())).sum::<u64>()
                    >= PROGRESS_MIN_BYTES
        };
        let bar = (terminal && long()).then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(targets.len() as u64),
                indicatif::ProgressDrawTarget::hidden(),
            );
            let style =
                indicatif::ProgressStyle::with_template("{spinner} checking {pos}/{len} models {wide_bar} {elapsed}")
                    .expect("the template is valid");
            bar.set_style(style);
            bar
        });
        Progress { bar, visible: false, start: std::time::Instant::now() }
    }

    /// Shows the bar once the run has gone on long enough.
    fn tick(&mut self) {
        if let Some(bar) = &self.bar {
            if !self.visible && self.start.elapsed() >= PROGRESS_DELAY {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.enable_steady_tick(Duration::from_millis(100));
                self.visible = true;
            }
        }
    }

    /// Counts `n` models done after running `f`, which writes their results; when `f` writes to the terminal
    /// (`interrupts`), the bar is cleared while it does and drawn again after.
    fn models_done<T>(&self, n: usize, interrupts: bool, f: impl FnOnce() -> T) -> T {
        let result = match &self.bar {
            Some(bar) if self.visible && interrupts => bar.suspend(f),
            _ => f(),
        };
        if let Some(bar) = &self.bar {
            bar.inc(n as u64);
        }
        result
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Checks the models on a pool of `jobs` threads (default: one per core) and emits each result in target order as
/// soon as the ones before it are out, so output streams and memory holds only results that arrived early. A
/// failure to write (a closed pipe) stops the remaining checks.
fn run_checks(
    targets: &[Target],
    options: CheckOptions,
    jobs: Option<std::num::NonZeroUsize>,
    mut sink: Sink,
) -> io::Result<Status> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.map_or(0, |n| n.get()))
        // Analysis recurses into subgraphs and function bodies: as much stack as the main thread has.
        .stack_size(16 << 20)
        .thread_name(|i| format!("onnx-bcast-check-{i}"))
        .build()
        .map_err(io::Error::other)?;
    let keep_sites = sink.lists_sites();
    let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
    let cancel = AtomicBool::new(false);
    let mut progress = Progress::new(targets);
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let stdout_is_terminal = io::stdout().is_terminal();
    // With a bar on the terminal, results on the terminal must be out before the bar is drawn again.
    let flush_each = progress.bar.is_some() && stdout_is_terminal;
    let result = std::thread::scope(|scope| {
        let cancel = &cancel;
        scope.spawn(move || {
            pool.install(|| {
                // par_bridge hands out targets in order, so results arrive roughly in order.
                targets.iter().enumerate().par_bridge().for_each_with(tx, |tx, (i, target)| {
                    if !cancel.load(Ordering::Relaxed) {
                        let _ = tx.send((i, check_target(target, options, keep_sites)));
                    }
                });
            })
        });
        let mut worst = Status::Clean;
        let mut early = BTreeMap::new();
        let mut next = 0;
        let emitted = (|| -> io::Result<()> {
            loop {
                progress.tick();
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok((i, outcome)) => {
                        early.insert(i, outcome);
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
                }
                let mut ready = Vec::new();
                while let Some(outcome) = early.remove(&next) {
                    next += 1;
                    worst = worst.max(status_of(&outcome));
                    ready.push(outcome);
                }
                if ready.is_empty() {
                    continue;
                }
                // Failures go to stderr, where the bar is.
                let interrupts = stdout_is_terminal || ready.iter().any(|o| o.report.is_err());
                progress.models_done(ready.len(), interrupts, || -> io::Result<()> {
                    for outcome in ready {
                        sink.emit(&mut out, outcome)?;
                    }
                    if flush_each {
                        out.flush()?;
                    }
                    Ok(())
                })?;
            }
        })();
        if emitted.is_err() {
            cancel.store(true, Ordering::Relaxed);
        }
        drop(rx);
        emitted.map(|()| worst)
    });
    progress.finish();
    let worst = result?;
    sink.finish(&mut out)?;
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
