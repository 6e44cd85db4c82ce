//! The command line's definition (clap): every subcommand, its flags, and the parsers of their values.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, Parser, Subcommand, ValueEnum};

use onnx_bcast::diagnostic::Code;

use super::lazy::Lazy;

#[derive(Parser)]
#[command(
    name = "onnx-bcast",
    version,
    max_term_width = 100,
    about = "Make broadcasting in ONNX models visible, checked and explicit"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Check every broadcasting site of the models against its rule.
    ///
    /// Models are checked in parallel and reported in argument order (a folder's models in path order). Settings
    /// come from onnx-bcast.toml or [tool.onnx-bcast] in pyproject.toml, the first found from the current folder
    /// upwards; flags override them.
    ///
    /// Exit status: 0 when no model has an error, 1 when one does (a violation, a broken graph, a --bind size the
    /// model contradicts, a code made an error by --deny, or under --strict any implicit, conditional or undecided
    /// broadcast), 2 when a model could not be checked or the settings are wrong.
    Check(Lazy<CheckArgs>),
    /// Print every value's inferred element type and shape, or a Graphviz picture of the broadcasting sites.
    ///
    /// With --range (or a TensorRT profile), every size that is one number at every size of the ranges is shown as
    /// that number (`min(64, seq)` is 64 for seq ∈ 64..512), and what is one number for part of them only stays an
    /// expression.
    ///
    /// Exit status: 0 when every model's shapes were printed, 1 when a --bind size contradicts a model (its shapes
    /// are printed, each contradiction on stderr), 2 when a model could not be read.
    Shapes(Lazy<ShapesArgs>),
    /// Rewrite every implicit broadcast into explicit ops (Expand; Reshape and Tile below opset 8).
    ///
    /// An undecided site (shapes not known well enough to tell whether it broadcasts) is left as it is and listed:
    /// rewritten, it would become several undecided sites.
    ///
    /// With --range (or a TensorRT profile), a conditional site proven to hold at every size of the ranges is made
    /// explicit with no condition left to state, and one that fails somewhere in them is left as it is, named with
    /// its smallest failing sizes.
    ///
    /// Exit status: 0 when written with every site that broadcasts made explicit, 1 when such a site was left as
    /// it was (a violation, or no faithful rewrite at the model's opset), --verify found a difference, or the model
    /// is broken or contradicts --bind (nothing written), 2 when nothing could be written.
    Expand(Lazy<ExpandArgs>),
    /// Write every value's inferred element type and shape into the model (value_info and graph outputs, in
    /// subgraphs and function bodies too); with --bind, a static model.
    ///
    /// Symbols stay dim_params; a derived size is written as its expression (`min(128, seq)`). Declarations that
    /// agree are kept; one that contradicts inference is reported (declared-shape-mismatch) and replaced only with
    /// --overwrite-declared. Everything else stays byte for byte. With --range (or a TensorRT profile), what is
    /// written holds at every size of the ranges (a size that is one number there as that number), and a model with
    /// a site that fails somewhere in them is not written.
    ///
    /// Exit status: 0 when written with no contradiction left, 1 when a contradicting declaration was kept (or
    /// the model is broken or contradicts --bind, and nothing was written), 2 when nothing could be written.
    Infer(Lazy<InferArgs>),
    /// Remove explicit broadcasts (Expand, Tile of size-1 axes, Mul by ones, Add of zeros, Where on a constant
    /// condition) that every consumer performs anyway under its own broadcasting rule: the inverse of `expand`.
    ///
    /// A broadcast is removed only where the consumers' rules are proved to give the same output shapes (symbols
    /// included, never assumed equal); the others are kept and listed with the reason.
    ///
    /// Exit status: 0 when written (a broadcast kept is listed with its reason, and is no failure), 1 when the
    /// model is broken (nothing written), 2 when nothing could be written.
    Fold(Lazy<FoldArgs>),
    /// Explain a diagnostic code: what it means, which document its rule comes from, an example and a fix.
    Explain(Lazy<ExplainArgs>),
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
pub struct CheckArgs {
    /// ONNX model files, or folders: every .onnx file below a folder is checked, in path order; `-` reads one model
    /// from standard input.
    #[arg(required = true)]
    pub models: Vec<PathBuf>,
    /// Output format: text (coloured on a terminal), json (one object per model per line), sarif (one SARIF 2.1.0
    /// log for the whole run), github (GitHub Actions workflow commands, shown as annotations).
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
    /// Ask for proof: every implicit broadcast, every conditional site (even an explicit Expand's) and every site
    /// whose shapes are not known well enough to decide it (undecided) is an error (the SONNX profile's rule).
    #[arg(long, overrides_with = "no_strict")]
    pub strict: bool,
    /// Do not apply --strict, even if the config file sets `strict = true`.
    #[arg(long, overrides_with = "strict")]
    pub no_strict: bool,
    /// Also print each model's summary line, name the ops that stopped shape inference (no rule for them: their
    /// outputs are unknown), and the config file used (on stderr).
    #[arg(long, short, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Print only errors (findings of error severity, and models that could not be checked): no warnings and no
    /// total line. The exit code is the same.
    #[arg(long, short)]
    pub quiet: bool,
    /// Instead of the findings, print how many there are of each code (most first), then the total line; with
    /// --format json, the run's totals and the counts as one JSON object.
    #[arg(long, conflicts_with = "quiet")]
    pub statistics: bool,
    /// Report CODE as an error, which fails the run (exit 1); `all` for every code. Repeatable; a later --deny,
    /// --warn or --allow overrides an earlier one, and all of them override the config file.
    #[arg(long, value_name = "CODE", value_parser = code_parser(true), hide_possible_values = true)]
    pub deny: Vec<String>,
    /// Report CODE as a warning, which does not fail the run; `all` for every code. Repeatable.
    #[arg(long, value_name = "CODE", value_parser = code_parser(true), hide_possible_values = true)]
    pub warn: Vec<String>,
    /// Do not report CODE at all; `all` for every code. Repeatable.
    #[arg(long, value_name = "CODE", value_parser = code_parser(true), hide_possible_values = true)]
    pub allow: Vec<String>,
    /// Skip paths that match GLOB: a file or folder name (`legacy`, `*_bad.onnx`) or a path relative to the current
    /// folder (`models/old/**`). Repeatable; adds to the config file's `exclude`.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Skip excluded paths even when they are named on the command line (a named file or folder is checked
    /// otherwise, whatever --exclude says), e.g. for pre-commit, which names the staged files.
    #[arg(long)]
    pub force_exclude: bool,
    /// Also walk into hidden folders and paths that .gitignore, .ignore or .git/info/exclude list.
    #[arg(long)]
    pub no_ignore: bool,
    /// Read settings from FILE (an onnx-bcast.toml, or a pyproject.toml's [tool.onnx-bcast]) instead of looking
    /// for one.
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Read no config file.
    #[arg(long)]
    pub no_config: bool,
    /// When to colour text output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
    /// Check at most N models at once (default: one per core).
    #[arg(long, short, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<NonZeroUsize>,
    /// Give the symbol NAME (a dim_param of the model's inputs) the size SIZE before inference, so that every size
    /// derived from it is worked out again. Repeatable. A name no input declares is an error (exit 2); a size the
    /// model contradicts is a finding (bind-contradiction, exit 1).
    #[arg(long, value_name = "NAME=SIZE", value_parser = parse_bind)]
    pub bind: Vec<(String, u64)>,
    #[command(flatten)]
    pub ranges: RangeArgs,
    /// Report, per symbol, the largest range (and step) within the given ranges where every site holds, as trtexec
    /// flags and onnxruntime TensorRT provider options ready to paste. A symbol of the inputs without a range is
    /// searched within 1..65536.
    #[arg(long)]
    pub safe_ranges: bool,
    /// For each site that fails somewhere in the ranges, write input tensors of its smallest failing sizes (random
    /// data; ONNX TensorProto files, `onnx.load_tensor` reads them) into DIR/MODEL/N/, with witnesses.json listing
    /// the sites, sizes and files.
    #[arg(long, value_name = "DIR")]
    pub witness: Option<PathBuf>,
}

/// Ranges of input sizes to decide every conditional site over: `--range`, or TensorRT's per-input spelling.
#[derive(Args, Clone, Default)]
pub struct RangeArgs {
    /// Decide every conditional site for every size of the symbol NAME from MIN to MAX (both included), by STEP
    /// when given (`--range seq=1..512`, `--range height=320..640/32`): it holds for all of them (a proof), fails at
    /// its smallest failing sizes (a broadcast-violation), or stays conditional on the part left unproven.
    /// Repeatable. A single size (`seq=128`) is a --bind. NAME may also be an integer input, whose values then
    /// stay within MIN..MAX (`--range attention_mask=0..1`): what bounds indices computed from it.
    #[arg(long = "range", value_name = "NAME=MIN..MAX[/STEP]", value_parser = parse_range)]
    pub range: Vec<(String, onnx_bcast::rules::ranges::SizeRange)>,
    /// The smallest shape of each dynamic input, as trtexec's --minShapes takes it (`images:1x3x320x320`, inputs
    /// separated by commas): with --max-shapes, a range for each symbol of the inputs' dims.
    #[arg(long, value_name = "SHAPES", visible_alias = "minShapes", value_parser = parse_shapes)]
    pub min_shapes: Vec<onnx_bcast::rules::ranges::profile::Shapes>,
    /// The shape of each dynamic input to optimize for, as trtexec's --optShapes takes it (reported back in the
    /// profile of --safe-ranges; it must lie within --min-shapes and --max-shapes).
    #[arg(long, value_name = "SHAPES", visible_alias = "optShapes", value_parser = parse_shapes, requires = "max_shapes")]
    pub opt_shapes: Vec<onnx_bcast::rules::ranges::profile::Shapes>,
    /// The largest shape of each dynamic input, as trtexec's --maxShapes takes it (`images:8x3x640x640`).
    #[arg(long, value_name = "SHAPES", visible_alias = "maxShapes", value_parser = parse_shapes, requires = "min_shapes")]
    pub max_shapes: Vec<onnx_bcast::rules::ranges::profile::Shapes>,
}

impl RangeArgs {
    /// The request the flags make (several shape flags of one kind add up).
    pub fn request(&self) -> onnx_bcast::rules::ranges::RangeRequest {
        use onnx_bcast::rules::ranges::profile::{Profile, Shapes};
        let join = |all: &[Shapes]| Shapes(all.iter().flat_map(|s| s.0.clone()).collect());
        onnx_bcast::rules::ranges::RangeRequest {
            ranges: self.range.clone(),
            profile: Profile { min: join(&self.min_shapes), opt: join(&self.opt_shapes), max: join(&self.max_shapes) },
            safe_ranges: false,
        }
    }
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

#[derive(Args)]
pub struct ShapesArgs {
    /// The ONNX model files, in order; `-` reads one model from standard input.
    #[arg(required = true)]
    pub models: Vec<PathBuf>,
    /// Output format: text, json, or dot (Graphviz; sites coloured by verdict, shapes on the edges).
    #[arg(long, value_enum, default_value_t = ShapesFormat::Text)]
    pub format: ShapesFormat,
    /// Give the symbol NAME (a dim_param of the model's inputs) the size SIZE before inference, so that every size
    /// derived from it is worked out again. Repeatable. A name no input declares is an error (exit 2); a size the
    /// model contradicts is a finding (bind-contradiction, exit 1).
    #[arg(long, value_name = "NAME=SIZE", value_parser = parse_bind)]
    pub bind: Vec<(String, u64)>,
    #[command(flatten)]
    pub ranges: RangeArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShapesFormat {
    Text,
    Json,
    Dot,
}

#[derive(Args)]
pub struct ExpandArgs {
    /// The model to rewrite.
    pub input: PathBuf,
    /// Where to write the rewritten model (may be INPUT; `-` for standard output). Written atomically: a failure
    /// leaves it untouched. Not needed with --dry-run.
    #[arg(required_unless_present = "dry_run")]
    pub output: Option<PathBuf>,
    /// Write constant inputs (initializers, Constant nodes) out at their broadcast shape instead of adding an
    /// Expand, for toolchains that reject Expand.
    #[arg(long)]
    pub materialize_constants: bool,
    /// The largest constant that --materialize-constants writes out, in bytes (units allowed: 1KiB, 16MiB, 2GB).
    #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = parse_bytes)]
    pub max_materialize_bytes: u64,
    /// Write external data of at most BYTES per tensor into the model file itself (main-graph initializers).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub inline_external_below: Option<u64>,
    /// Gather the external data of main-graph initializers into this one new file beside OUTPUT.
    #[arg(long, value_name = "FILE")]
    pub gather_external_data: Option<String>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Print the plan and write nothing (OUTPUT may then be left out).
    #[arg(long)]
    pub dry_run: bool,
    /// Do not list the sites made explicit (one line each); the sites left implicit and the totals are still
    /// printed.
    #[arg(long, short)]
    pub quiet: bool,
    /// After rewriting, run the original and the rewritten model with tract-onnx on the same seeded random
    /// inputs (symbolic dims bound to small sizes) and compare every output. Exit 1 when they differ or the
    /// rewritten model fails where the original runs, 2 when tract cannot run the original. Needs a build with
    /// the `verify` feature (hidden from --help in builds without it).
    #[arg(long, hide = cfg!(not(feature = "verify")))]
    pub verify: bool,
    /// With --verify: bind the symbolic input dim SYMBOL to SIZE (e.g. `--verify-size height=64` for a model
    /// that needs multiples of 32) instead of the small sizes tried by default. Repeatable.
    #[arg(long, value_name = "SYMBOL=SIZE", value_parser = parse_size_binding, requires = "verify", hide = cfg!(not(feature = "verify")))]
    pub verify_size: Vec<(String, usize)>,
    /// Give the symbol NAME (a dim_param of the model's inputs) the size SIZE before inference, so that every size
    /// derived from it is worked out again. Repeatable. A name no input declares is an error (exit 2); a size the
    /// model contradicts is a finding (bind-contradiction, exit 1).
    #[arg(long, value_name = "NAME=SIZE", value_parser = parse_bind)]
    pub bind: Vec<(String, u64)>,
    #[command(flatten)]
    pub ranges: RangeArgs,
}

#[derive(Args)]
pub struct InferArgs {
    /// The model to annotate.
    pub input: PathBuf,
    /// Where to write the annotated model (may be INPUT; `-` for standard output). Written atomically: a failure
    /// leaves it untouched. Not needed with --dry-run.
    #[arg(required_unless_present = "dry_run")]
    pub output: Option<PathBuf>,
    /// Give the symbol NAME (a dim_param of the model's inputs) the size SIZE before inference; the inputs are
    /// rewritten too, so binding every symbol writes a static model. Repeatable.
    ///
    /// A name no input declares is an error (exit 2); a size the model contradicts is a finding
    /// (bind-contradiction, exit 1, nothing written).
    #[arg(long, value_name = "NAME=SIZE", value_parser = parse_bind)]
    pub bind: Vec<(String, u64)>,
    /// Replace declarations that contradict inference with the inferred facts instead of keeping them.
    #[arg(long)]
    pub overwrite_declared: bool,
    #[command(flatten)]
    pub ranges: RangeArgs,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Print the summary and write nothing (OUTPUT may then be left out).
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args)]
pub struct FoldArgs {
    /// The model to fold.
    pub input: PathBuf,
    /// Where to write the folded model (may be INPUT; `-` for standard output). Written atomically: a failure
    /// leaves it untouched. Not needed with --dry-run.
    #[arg(required_unless_present = "dry_run")]
    pub output: Option<PathBuf>,
    /// Also write constants that are expanded copies of smaller ones (all rows equal) back in their small form,
    /// where every reader broadcasts them anyway: undoes `expand --materialize-constants`.
    #[arg(long)]
    pub materialized: bool,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Print the plan and write nothing (OUTPUT may then be left out).
    #[arg(long)]
    pub dry_run: bool,
    /// Do not list the broadcasts folded (one line each); those kept and the totals are still printed.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Args)]
pub struct ExplainArgs {
    /// The code, e.g. broadcast-violation; without one, the list of codes.
    #[arg(value_name = "CODE", value_parser = code_parser(false), hide_possible_values = true)]
    pub code: Option<String>,
    /// List every code with its default severity and a one-line summary.
    #[arg(long, conflicts_with = "code")]
    pub list: bool,
    /// With --list: text, or markdown (the table of docs/codes.md).
    #[arg(long, value_enum, default_value_t = ListFormat::Text, requires = "list")]
    pub format: ListFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Text,
    Markdown,
}

/// `all` and every diagnostic code (without `all` for `explain`), each with its summary for completions. An unknown
/// name is a usage error that says where the codes are listed, rather than listing them on one long line.
pub fn code_parser(with_all: bool) -> CodeParser {
    CodeParser { with_all }
}

/// The value parser of a diagnostic code (see [`code_parser`]).
#[derive(Clone, Copy)]
pub struct CodeParser {
    with_all: bool,
}

impl CodeParser {
    fn values(self) -> Vec<PossibleValue> {
        let all = self.with_all.then(|| PossibleValue::new("all").help("every code"));
        let codes =
            Code::ALL.iter().map(|&c| PossibleValue::new(c.as_str()).help(onnx_bcast::render::explain::summary(c)));
        all.into_iter().chain(codes).collect()
    }
}

impl clap::builder::TypedValueParser for CodeParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let inner = PossibleValuesParser::new(self.values());
        inner.parse_ref(cmd, arg, value).map_err(|_| {
            let shown = value.to_string_lossy();
            let what = arg.map_or_else(String::new, |a| format!(" for '{a}'"));
            let valid: Vec<String> = self.values().iter().map(|v| v.get_name().to_string()).collect();
            // The codes wrapped, a line at a time, rather than clap's one line of them all.
            let text = format!("unknown code '{shown}'{what}; valid codes: {}", valid.join(", "));
            let message = onnx_bcast::render::brief::wrapped(&text, "  ");
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{message}\n")).with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.values().into_iter()))
    }
}

/// `-j N`: a number of threads, at least 1.
pub fn parse_jobs(text: &str) -> Result<NonZeroUsize, String> {
    let n: usize = text.trim().parse().map_err(|_| format!("`{text}` is not a number of threads"))?;
    NonZeroUsize::new(n).ok_or_else(|| "must be at least 1; leave -j out for one thread per core".to_string())
}

/// A size in bytes: a number, optionally with a unit, `KiB`/`MiB`/`GiB` (powers of 1024, also `K`, `M`, `G`) or
/// `kB`/`MB`/`GB` (powers of 1000); `16MiB`, `1.5 GiB` and `4096` are all sizes.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return Err(format!("`{text}`: unknown unit `{unit}`; use B, KiB, MiB, GiB, kB, MB or GB")),
    };
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a size in bytes (e.g. 4096, 16MiB)"))?;
    let bytes = value * scale as f64;
    if !(0.0..=u64::MAX as f64).contains(&bytes) {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(bytes.round() as u64)
}

/// `SYMBOL=SIZE` for --verify-size.
pub fn parse_size_binding(text: &str) -> Result<(String, usize), String> {
    let (symbol, size) = text.split_once('=').ok_or_else(|| format!("'{text}' is not SYMBOL=SIZE"))?;
    let size = size.trim().parse::<usize>().map_err(|_| format!("'{size}' is not a size"))?;
    if symbol.trim().is_empty() || size == 0 {
        return Err(format!("'{text}' is not SYMBOL=SIZE with a size of at least 1"));
    }
    Ok((symbol.trim().to_string(), size))
}

/// `NAME=MIN..MAX[/STEP]` for --range.
pub fn parse_range(text: &str) -> Result<(String, onnx_bcast::rules::ranges::SizeRange), String> {
    let (name, range) = text.split_once('=').ok_or_else(|| format!("'{text}' is not NAME=MIN..MAX[/STEP]"))?;
    if name.trim().is_empty() {
        return Err(format!("'{text}' names no symbol"));
    }
    let range = onnx_bcast::rules::ranges::SizeRange::parse(range.trim()).map_err(|e| e.to_string())?;
    Ok((name.trim().to_string(), range))
}

/// `NAME:DxD…[,NAME:DxD…]` for --min-shapes, --opt-shapes and --max-shapes.
pub fn parse_shapes(text: &str) -> Result<onnx_bcast::rules::ranges::profile::Shapes, String> {
    onnx_bcast::rules::ranges::profile::Shapes::parse(text).map_err(|e| e.to_string())
}

/// `NAME=SIZE` for --bind: a symbol and a size (0 included: numpy and ONNX allow empty tensors).
pub fn parse_bind(text: &str) -> Result<(String, u64), String> {
    let (name, size) = text.split_once('=').ok_or_else(|| format!("'{text}' is not NAME=SIZE"))?;
    let size = size.trim().parse::<u64>().map_err(|_| format!("'{}' is not a size", size.trim()))?;
    if name.trim().is_empty() {
        return Err(format!("'{text}' names no symbol"));
    }
    Ok((name.trim().to_string(), size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_and_decimal_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("1KiB"), Ok(1024));
        assert_eq!(parse_bytes("16MiB"), Ok(16 << 20));
        assert_eq!(parse_bytes("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("2kB"), Ok(2000));
        assert_eq!(parse_bytes("1M"), Ok(1 << 20));
        assert!(parse_bytes("12 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_bytes("MiB").is_err());
    }

    #[test]
    fn jobs_must_be_at_least_one() {
        assert_eq!(parse_jobs("3").map(|n| n.get()), Ok(3));
        assert!(parse_jobs("0").unwrap_err().contains("at least 1"));
        assert!(parse_jobs("x").is_err());
    }

    #[test]
    fn size_bindings_name_a_symbol_and_a_positive_size() {
        assert_eq!(parse_size_binding("height = 64"), Ok(("height".to_string(), 64)));
        assert!(parse_size_binding("height").is_err());
        assert!(parse_size_binding("=3").is_err());
        assert!(parse_size_binding("h=0").is_err());
    }

    #[test]
    fn bindings_name_a_symbol_and_a_size() {
        assert_eq!(parse_bind("seq=512"), Ok(("seq".to_string(), 512)));
        assert_eq!(parse_bind(" batch = 0"), Ok(("batch".to_string(), 0)));
        assert!(parse_bind("seq").is_err());
        assert!(parse_bind("=3").is_err());
        assert!(parse_bind("seq=-1").is_err());
    }

    #[test]
    fn ranges_name_a_symbol_and_sizes() {
        let (name, range) = parse_range("seq=1..512").unwrap();
        assert_eq!((name.as_str(), range.to_string().as_str()), ("seq", "1..512"));
        assert_eq!(parse_range(" h = 320..640/32").unwrap().1.to_string(), "320..640/32");
        assert!(parse_range("seq").is_err());
        assert!(parse_range("=1..2").is_err());
        assert!(parse_range("seq=9..1").unwrap_err().contains("larger than MAX"));
    }

    #[test]
    fn the_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
