//! `onnx-bcast check`: the settings (the config file, then the flags), the models from the paths, then the run
//! over them (`run`), each result written to the chosen output (`sink`).

use std::io::{self, IsTerminal};

use onnx_bcast::check::{CheckOptions, Level};
use onnx_bcast::cli::config::{self, find_models, ConfigChoice, Exclude, Walk};
use onnx_bcast::render;
use onnx_bcast::rules::ranges::RangeRequest;

use super::args::{CheckArgs, CheckFormat, ColorWhen};
use super::run::run_checks;
use super::sink::{Reporter, Sink, Verbosity};
use super::Status;

/// `check`: settings from the config file and the flags, the models from the paths, then every model checked on a
/// pool of threads and reported in order as soon as the ones before it are done.
pub fn command(args: &CheckArgs, matches: &clap::ArgMatches) -> io::Result<Status> {
    if args.statistics && !matches!(args.format, CheckFormat::Text | CheckFormat::Json) {
        say!("onnx-bcast: error: --statistics counts findings in text or JSON output, not in GitHub or SARIF output");
        return Ok(Status::Failed);
    }
    let cwd = std::env::current_dir()?;
    let (options, exclude, custom_ops, ranges) = match settings(args, matches, &cwd) {
        Ok(settings) => settings,
        Err(e) => {
            say!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let walk = Walk { force_exclude: args.force_exclude, honour_ignore_files: !args.no_ignore };
    let (targets, warnings) = find_models(&args.models, &exclude, walk);
    for warning in warnings {
        say!("onnx-bcast: warning: {warning}");
    }
    let request = match onnx_bcast::analysis::Bindings::new(&args.bind) {
        Ok(bindings) => onnx_bcast::analysis::Request {
            bindings,
            ranges,
            custom_ops: std::sync::Arc::new(custom_ops),
            training_graphs: true,
            ..Default::default()
        },
        Err(e) => {
            say!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let witness = args.witness.as_deref();
    run_checks(&targets, options, args.jobs, reporter(args), (&request, witness))
}

/// Where the results go: the format, its colours, and how much it says.
fn reporter(args: &CheckArgs) -> Reporter {
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
    Reporter::new(sink, verbosity, args.statistics)
}

/// The config file (unless --no-config), then the flags over it (`onnx_bcast::cli::config::settings`): --strict and
/// --no-strict, the rule flags in command-line order, --exclude added to the file's `exclude`, the ranges.
fn settings(
    args: &CheckArgs,
    matches: &clap::ArgMatches,
    cwd: &std::path::Path,
) -> Result<(CheckOptions, Exclude, onnx_bcast::infer::custom::CustomOps, RangeRequest), config::ConfigError> {
    let choice = match (&args.config, args.no_config) {
        (_, true) => ConfigChoice::None,
        (Some(path), false) => ConfigChoice::File(path),
        (None, false) => ConfigChoice::Discover(cwd),
    };
    let config = config::load(choice)?;
    let mut flags: Vec<(usize, Level, &str)> = Vec::new();
    for (id, level) in [("deny", Level::Deny), ("warn", Level::Warn), ("allow", Level::Allow)] {
        if let (Some(indices), Some(values)) = (matches.indices_of(id), matches.get_many::<String>(id)) {
            flags.extend(indices.zip(values).map(|(i, v)| (i, level, v.as_str())));
        }
    }
    flags.sort_by_key(|&(i, _, _)| i);
    let rule_flags: Vec<(Level, &str)> = flags.into_iter().map(|(_, level, name)| (level, name)).collect();
    // --strict and --no-strict override each other: clap keeps the last one given.
    let strict = match (args.strict, args.no_strict) {
        (true, _) => Some(true),
        (false, true) => Some(false),
        (false, false) => None,
    };
    let options = config::check_options(config.as_ref(), &rule_flags, strict)?;
    if let (true, Some(config)) = (args.verbose, &config) {
        say!("onnx-bcast: settings from {}", config.path.display());
    }
    let exclude = config::exclude(config.as_ref(), &args.exclude, cwd)?;
    let custom_ops = config.as_ref().map(config::Config::custom_ops).transpose()?.unwrap_or_default();
    let flags = RangeRequest { safe_ranges: args.safe_ranges, ..args.ranges.request() };
    let ranges = config::range_request(config.as_ref(), flags)?;
    Ok((options, exclude, custom_ops, ranges))
}
