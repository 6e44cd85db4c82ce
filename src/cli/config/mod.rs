//! What `check` checks and how: the config file, `--exclude` globs, and the model files found in folders.
//!
//! The config file is `onnx-bcast.toml`, or the `[tool.onnx-bcast]` table of a `pyproject.toml`, found from the
//! current folder upwards: in each folder `onnx-bcast.toml` first, then a `pyproject.toml` that has the table (one
//! without it is passed over); the first hit wins. Its keys, all optional:
//!
//! ```toml
//! deny = ["conditional-broadcast"]   # codes (or "all") made errors
//! warn = ["negative-dim"]            # codes made warnings
//! allow = ["declared-shape-mismatch"] # codes whose findings are dropped
//! strict = true                       # like --strict
//! exclude = ["legacy/**", "*_bad.onnx"] # globs, relative to the config file's folder
//! range = ["seq=1..512", "batch=1..8"] # like --range
//! min-shapes = "images:1x3x320x320"   # like --min-shapes (also opt-shapes, max-shapes)
//! safe-ranges = true                  # like --safe-ranges
//!
//! [ops."com.example.Scale"]          # an op of your own kernels or plugins (DOMAIN.OP)
//! shape = "input 0"                   # "input K", "broadcast I..J" (a site, like Add) or "opaque"
//! type = "input 0"                    # "input K", an element type ("float", "int64", ...) or "opaque"
//! ```
//!
//! Within the file `all` is applied before the codes it names, so `deny = ["all"]` with `allow = ["negative-dim"]`
//! makes every code an error except `negative-dim`; naming one code in two lists is an error. Command-line flags come
//! after the file and so override it (`settings`: the merge of the two). `walk`: the `--exclude` globs and the model
//! files named or found in folders.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::check::{Level, RuleSelection, Selector, UnknownCode};

mod settings;
mod walk;

pub use settings::{check_options, exclude, load, range_request, ConfigChoice};
pub use walk::{find_models, is_model_file, Exclude, Target, Walk};

/// The name of the dedicated config file.
pub const CONFIG_FILE: &str = "onnx-bcast.toml";
/// The Python project file whose `[tool.onnx-bcast]` table is read.
pub const PYPROJECT_FILE: &str = "pyproject.toml";

/// The settings of a config file, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Codes (or `all`) whose findings are errors.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Codes (or `all`) whose findings are warnings.
    #[serde(default)]
    pub warn: Vec<String>,
    /// Codes (or `all`) whose findings are dropped.
    #[serde(default)]
    pub allow: Vec<String>,
    /// `--strict` by default (`--no-strict` turns it off again).
    pub strict: Option<bool>,
    /// Globs of paths not to check, relative to the config file's folder.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Ranges of sizes, as `--range` takes them (`seq=1..512`).
    #[serde(default)]
    pub range: Vec<String>,
    /// A TensorRT profile's shapes, as `--min-shapes`, `--opt-shapes` and `--max-shapes` take them.
    #[serde(rename = "min-shapes")]
    pub min_shapes: Option<String>,
    #[serde(rename = "opt-shapes")]
    pub opt_shapes: Option<String>,
    #[serde(rename = "max-shapes")]
    pub max_shapes: Option<String>,
    /// `--safe-ranges` by default.
    #[serde(rename = "safe-ranges")]
    pub safe_ranges: Option<bool>,
    /// Ops no built-in rule knows, declared by `"DOMAIN.OP"` (`[ops."com.example.Plugin"]`): their shapes and
    /// types (`infer::custom`).
    #[serde(default)]
    pub ops: std::collections::BTreeMap<String, OpSettings>,
}

/// One declared op, as written: `shape = "input 0" | "broadcast 0..1" | "opaque"`, `type = "input 0" | "float" |
/// ... | "opaque"` (optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpSettings {
    pub shape: String,
    #[serde(rename = "type")]
    pub elem: Option<String>,
}

/// A config file and its settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The file the settings came from.
    pub path: PathBuf,
    pub settings: Settings,
}

/// Why a config file or a setting cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {}", crate::sys::platform::io_reason(source), path = path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}", path = path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{path}: `{key}`: {source}", path = path.display())]
    UnknownCode { path: PathBuf, key: &'static str, source: UnknownCode },
    #[error("--{flag}: {source}")]
    Flag { flag: &'static str, source: UnknownCode },
    #[error("{path}: `{code}` is in both `{first}` and `{second}`", path = path.display())]
    Conflict { path: PathBuf, code: String, first: &'static str, second: &'static str },
    #[error("{path}: [ops.\"{op}\"]: {source}", path = path.display())]
    Op { path: PathBuf, op: String, source: crate::infer::custom::DeclError },
    #[error("{origin}: invalid glob `{pattern}`: {message}")]
    Glob { origin: String, pattern: String, message: String },
    #[error("{path}: `{key}`: {message}", path = path.display())]
    Range { path: PathBuf, key: &'static str, message: String },
    /// A config file's name that is not a regular file: refused, never opened (a FIFO would block), rather than
    /// passed over, since settings a user wrote would then be lost without a word.
    #[error("{path}: {kind}, not a config file; refused (never opened)", path = path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
}

/// What a config file's path is when it is no regular file, if it exists at all: `Ok(None)` when nothing has the
/// name, `Ok(Some(()))` for a regular file (or a link to one), and the refusal otherwise.
fn config_entry(path: &Path) -> Result<Option<()>, ConfigError> {
    let refuse = |kind| Err(ConfigError::NotAFile { path: path.into(), kind });
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ConfigError::Io { path: path.into(), source }),
        Ok(_) => {}
    }
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => refuse("a symbolic link to nothing"),
        Err(source) => Err(ConfigError::Io { path: path.into(), source }),
        Ok(m) if m.is_file() => Ok(Some(())),
        // A folder, a FIFO, a socket or a device, in words (src/platform.rs knows what a system can tell apart).
        Ok(m) => refuse(crate::sys::platform::kind_in_words(m.file_type())),
    }
}

impl Config {
    /// Reads a config file: `pyproject.toml` by its `[tool.onnx-bcast]` table (an error if it has none), any other
    /// file as an `onnx-bcast.toml`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        if config_entry(path)?.is_none() {
            let source = std::io::Error::from(std::io::ErrorKind::NotFound);
            return Err(ConfigError::Io { path: path.into(), source });
        }
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.into(), source })?;
        let is_pyproject = path.file_name().is_some_and(|n| n == PYPROJECT_FILE);
        let settings = if is_pyproject {
            match pyproject_settings(path, &text)? {
                Some(settings) => settings,
                None => {
                    return Err(ConfigError::Parse {
                        path: path.into(),
                        message: "has no [tool.onnx-bcast] table".into(),
                    })
                }
            }
        } else {
            parse(path, &text)?
        };
        Ok(Config { path: path.into(), settings })
    }

    /// Looks for a config file in `start` and each folder above it; the first one found wins. A file of either name
    /// that is not a regular file (a folder, a FIFO, a link to nothing) is an error, not passed over.
    pub fn discover(start: &Path) -> Result<Option<Config>, ConfigError> {
        for dir in start.ancestors() {
            let dedicated = dir.join(CONFIG_FILE);
            if config_entry(&dedicated)?.is_some() {
                return Config::load(&dedicated).map(Some);
            }
            let pyproject = dir.join(PYPROJECT_FILE);
            if config_entry(&pyproject)?.is_some() {
                let text = std::fs::read_to_string(&pyproject)
                    .map_err(|source| ConfigError::Io { path: pyproject.clone(), source })?;
                if let Some(settings) = pyproject_settings(&pyproject, &text)? {
                    return Ok(Some(Config { path: pyproject, settings }));
                }
            }
        }
        Ok(None)
    }

    /// The ops the file declares (`[ops]`).
    pub fn custom_ops(&self) -> Result<crate::infer::custom::CustomOps, ConfigError> {
        use crate::infer::custom::{CustomOps, OpDecl, ShapeRule, TypeRule};
        let mut ops = CustomOps::default();
        for (name, op) in &self.settings.ops {
            let bad = |source| ConfigError::Op { path: self.path.clone(), op: name.clone(), source };
            let shape = ShapeRule::parse(&op.shape).map_err(bad)?;
            let elem = match &op.elem {
                Some(text) => TypeRule::parse(text).map_err(bad)?,
                None => match shape {
                    ShapeRule::Opaque => TypeRule::Opaque,
                    ShapeRule::Input(k) | ShapeRule::Broadcast { first: k, .. } => TypeRule::Input(k),
                },
            };
            ops.declare(name, OpDecl { shape, elem }).map_err(bad)?;
        }
        Ok(ops)
    }

    /// The folder the config file is in: what its `exclude` globs are relative to.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The file's rule selection: `all` in each list first (allow, then warn, then deny), then the codes it names.
    pub fn rule_selection(&self) -> Result<RuleSelection, ConfigError> {
        let s = &self.settings;
        let lists: [(&'static str, &Vec<String>, Level); 3] =
            [("allow", &s.allow, Level::Allow), ("warn", &s.warn, Level::Warn), ("deny", &s.deny, Level::Deny)];
        let mut parsed = Vec::new();
        for (key, names, level) in lists {
            for name in names {
                let selector = Selector::parse(name).map_err(|source| ConfigError::UnknownCode {
                    path: self.path.clone(),
                    key,
                    source,
                })?;
                if let Some(&(_, first, _, _)) = parsed.iter().find(|(n, k, _, _)| *n == name && *k != key) {
                    return Err(ConfigError::Conflict {
                        path: self.path.clone(),
                        code: name.clone(),
                        first,
                        second: key,
                    });
                }
                parsed.push((name, key, selector, level));
            }
        }
        let mut rules = RuleSelection::default();
        for all_first in [true, false] {
            for (_, _, selector, level) in &parsed {
                if (*selector == Selector::All) == all_first {
                    rules.select(*selector, *level);
                }
            }
        }
        Ok(rules)
    }
}

fn parse(path: &Path, text: &str) -> Result<Settings, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse { path: path.into(), message: with_suggestion(e.to_string()) })
}

/// The keys of the settings table, for "did you mean".
const KEYS: [&str; 11] = [
    "deny",
    "warn",
    "allow",
    "strict",
    "exclude",
    "range",
    "min-shapes",
    "opt-shapes",
    "max-shapes",
    "safe-ranges",
    "ops",
];

/// A parse error about an unknown key, with the known key it is closest to (`exlude` → `exclude`).
fn with_suggestion(message: String) -> String {
    let Some(rest) = message.split("unknown field `").nth(1) else { return message };
    let Some(key) = rest.split('`').next() else { return message };
    match KEYS.iter().map(|k| (edit_distance(key, k), *k)).min() {
        Some((d, known)) if d <= 2 && d < key.len() => format!("{}\ndid you mean `{known}`?", message.trim_end()),
        _ => message,
    }
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// The `[tool.onnx-bcast]` table of a pyproject.toml, if it has one.
fn pyproject_settings(path: &Path, text: &str) -> Result<Option<Settings>, ConfigError> {
    #[derive(Deserialize)]
    struct Pyproject {
        tool: Option<Tool>,
    }
    #[derive(Deserialize)]
    struct Tool {
        #[serde(rename = "onnx-bcast")]
        onnx_bcast: Option<toml::Value>,
        /// The other tools' tables: a misspelt `[tool.onnx_bcast]` is among them.
        #[serde(flatten)]
        others: std::collections::BTreeMap<String, toml::Value>,
    }
    let project: Pyproject =
        toml::from_str(text).map_err(|e| ConfigError::Parse { path: path.into(), message: e.to_string() })?;
    let tool = project.tool;
    let misspelt = tool
        .as_ref()
        .and_then(|t| t.others.keys().find(|k| k.to_lowercase().replace(['-', '_', '.'], "") == "onnxbcast"));
    if let Some(name) = misspelt {
        return Err(ConfigError::Parse {
            path: path.into(),
            message: format!("[tool.{name}] is not read: the table is [tool.onnx-bcast]"),
        });
    }
    match tool.and_then(|t| t.onnx_bcast) {
        None => Ok(None),
        Some(table) => table.try_into().map(Some).map_err(|e: toml::de::Error| ConfigError::Parse {
            path: path.into(),
            message: with_suggestion(format!("[tool.onnx-bcast]: {e}")),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lists_apply_all_first_and_reject_conflicts() {
        use crate::diagnostic::{Code, Severity};
        let config = |settings: Settings| Config { path: "onnx-bcast.toml".into(), settings };
        let rules =
            config(Settings { deny: vec!["all".into()], allow: vec!["negative-dim".into()], ..Default::default() })
                .rule_selection()
                .unwrap();
        assert_eq!(rules.severity(Code::NegativeDim, Severity::Warning), None);
        assert_eq!(rules.severity(Code::ConditionalBroadcast, Severity::Warning), Some(Severity::Error));
        let conflict = config(Settings {
            deny: vec!["graph-cycle".into()],
            warn: vec!["graph-cycle".into()],
            ..Default::default()
        });
        assert!(matches!(conflict.rule_selection(), Err(ConfigError::Conflict { .. })));
        let unknown = config(Settings { warn: vec!["nope".into()], ..Default::default() });
        let message = unknown.rule_selection().unwrap_err().to_string();
        assert!(message.contains("`nope`") && message.contains("broadcast-violation"), "{message}");
    }
}
