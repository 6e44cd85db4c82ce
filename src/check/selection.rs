//! Which findings a check reports and at which severity: `--strict`, and the `--deny`/`--warn`/`--allow` levels of
//! each code (or of `all`), as [`crate::check::Judge`] applies them. Re-exported from [`crate::check`].

use crate::diagnostic::{Code, Severity};

/// How [`check`](crate::check::check) judges a model.
///
/// Build it with struct-update syntax so that new fields keep old code compiling:
/// `CheckOptions { strict: true, ..Default::default() }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Every implicit broadcast and every conditional site is an error (the SONNX profile's "none" rule).
    pub strict: bool,
    /// Severity overrides per code (`--deny`, `--warn`, `--allow`, or the config file), applied last.
    pub rules: RuleSelection,
}

/// What a rule selection makes of one code's findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// Drop the findings.
    Allow,
    /// Report them as warnings (they do not fail the run).
    Warn,
    /// Report them as errors (they fail the run: exit 1).
    Deny,
}

impl Level {
    /// The flag and config key that selects this level: `allow`, `warn` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warn",
            Level::Deny => "deny",
        }
    }
}

/// What a `--deny`/`--warn`/`--allow` argument names: one code, or `all` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selector {
    All,
    Code(Code),
}

impl Selector {
    /// Parses `all` or a code's kebab-case name.
    pub fn parse(name: &str) -> Result<Selector, UnknownCode> {
        if name == "all" {
            return Ok(Selector::All);
        }
        Code::from_name(name).map(Selector::Code).ok_or_else(|| UnknownCode(name.to_string()))
    }
}

/// A name that is neither `all` nor a diagnostic code. Its message names it and lists the valid ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCode(pub String);

impl std::fmt::Display for UnknownCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let valid: Vec<&str> = std::iter::once("all").chain(Code::ALL.iter().map(|c| c.as_str())).collect();
        // Wrapped, so that no line of the message runs past a terminal's width.
        let text = format!("unknown code `{}`; valid codes: {}", self.0, valid.join(", "));
        let options = textwrap::Options::new(100)
            .subsequent_indent("  ")
            .word_splitter(textwrap::WordSplitter::NoHyphenation)
            .break_words(false);
        f.write_str(&textwrap::wrap(&text, options).join("\n"))
    }
}

impl std::error::Error for UnknownCode {}

const CODES: usize = Code::ALL.len();

/// Severity overrides per diagnostic code, like clippy's and ruff's `--deny`/`--warn`/`--allow`.
///
/// Each [`select`](RuleSelection::select) overrides what came before it for the codes it names, so a later `--allow
/// negative-dim` carves an exception out of an earlier `--deny all`. `allow` drops a code's findings, `warn` makes
/// them warnings and `deny` errors, which fail the run. A code given `warn` or `deny`, on its own or through
/// `all`, is also *enabled*: `implicit-broadcast` and `undecided-broadcast`, which only `--strict` reports
/// otherwise, are then reported without `--strict` (so `--deny all` is `--strict` with every other code denied).
///
/// ```
/// use onnx_bcast::check::{Level, RuleSelection, Selector};
/// use onnx_bcast::diagnostic::{Code, Severity};
///
/// let mut rules = RuleSelection::default();
/// rules.select(Selector::All, Level::Deny);
/// rules.select(Selector::parse("negative-dim").unwrap(), Level::Allow);
/// assert_eq!(rules.severity(Code::ConditionalBroadcast, Severity::Warning), Some(Severity::Error));
/// assert_eq!(rules.severity(Code::NegativeDim, Severity::Warning), None);
/// assert!(Selector::parse("no-such-code").is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleSelection {
    /// Per code (indexed by declaration order): the level.
    levels: [Option<Level>; CODES],
}

impl Default for RuleSelection {
    fn default() -> Self {
        RuleSelection { levels: [None; CODES] }
    }
}

impl RuleSelection {
    /// Sets the level of one code, or of every code.
    pub fn select(&mut self, selector: Selector, level: Level) {
        match selector {
            Selector::Code(code) => self.levels[code as usize] = Some(level),
            Selector::All => self.levels = [Some(level); CODES],
        }
    }

    /// The level selected for a code, if any.
    pub fn level(&self, code: Code) -> Option<Level> {
        self.levels[code as usize]
    }

    /// Whether no code has a level: the defaults apply everywhere.
    pub fn is_empty(&self) -> bool {
        self.levels.iter().all(Option::is_none)
    }

    /// The severity a finding of `code` gets, given the one it would have had; `None` drops it.
    pub fn severity(&self, code: Code, default: Severity) -> Option<Severity> {
        match self.level(code) {
            None => Some(default),
            Some(Level::Allow) => None,
            Some(Level::Warn) => Some(Severity::Warning),
            Some(Level::Deny) => Some(Severity::Error),
        }
    }

    /// Whether `code` has `warn` or `deny`, which turns on a code only `--strict` reports.
    pub fn enables(&self, code: Code) -> bool {
        matches!(self.levels[code as usize], Some(Level::Warn | Level::Deny))
    }
}
