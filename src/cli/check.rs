//! `onnx-bcast check`: its flags, the settings they make with the config file, and the run over the models.

use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use onnx_bcast::check::{CheckOptions, Level, RuleSelection, Selector};
use onnx_bcast::config::{find_models, Config, Exclude, Walk};
use onnx_bcast::render;

use super::run::run_checks;
use super::sink::{Reporter, Sink, Verbosity};
use super::{code_parser, Status};

#[derive(Args)]
pub struct CheckArgs {
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
    /// Also print each model's summary line, name the ops that stopped shape inference (no rule for them: their
    /// outputs are unknown), and the config file used (on stderr).
    #[arg(long, short, conflicts_with = "quiet")]
    verbose: bool,
    /// Print only errors (findings of error severity, and models that could not be checked): no warnings and no
    /// total line. The exit code is the same.
    #[arg(long, short)]
    quiet: bool,
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
    /// Skip excluded paths even when they are named on the command line (a named file or folder is checked
    /// otherwise, whatever --exclude says), e.g. for pre-commit, which names the staged files.
    #[arg(long)]
    force_exclude: bool,
    /// Also walk into hidden folders and paths that .gitignore, .ignore or .git/info/exclude list.
    #[arg(long)]
    no_ignore: bool,
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
    #[arg(long, short, value_name = "N", value_parser = super::parse_jobs)]
    jobs: Option<std::num::NonZeroUsize>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    Sarif,
    Github,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

/// `check`: settings from the config file and the flags, the models from the paths, then every model checked on a
/// pool of threads and reported in order as soon as the ones before it are done.
pub fn check_command(args: &CheckArgs, matches: &clap::ArgMatches) -> io::Result<Status> {
    let cwd = std::env::current_dir()?;
    let settings = match settings(args, matches, &cwd) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("onnx-bcast: error: {message}");
            return Ok(Status::Failed);
        }
    };
    let walk = Walk { force_exclude: args.force_exclude, honour_ignore_files: !args.no_ignore };
    let (targets, warnings) = find_models(&args.models, &settings.exclude, walk);
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
    let verbosity = match (args.quiet, args.verbose) {
        (true, _) => Verbosity::Quiet,
        (false, true) => Verbosity::Verbose,
        (false, false) => Verbosity::Normal,
    };
    let sink = match args.format {
        CheckFormat::Text => Sink::Text { palette },
        CheckFormat::Json => Sink::Json,
        CheckFormat::Github => Sink::Github,
        CheckFormat::Sarif => Sink::Sarif(Vec::new()),
    };
    let sink = Reporter::new(sink, verbosity);
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
