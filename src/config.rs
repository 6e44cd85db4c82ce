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
//! ```
//!
//! Within the file `all` is applied before the codes it names, so `deny = ["all"]` with `allow = ["negative-dim"]`
//! makes every code an error except `negative-dim`; naming one code in two lists is an error. Command-line flags come
//! after the file and so override it.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::check::{Level, RuleSelection, Selector, UnknownCode};

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
    #[error("{path}: cannot read: {source}", path = path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}", path = path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{path}: `{key}`: {source}", path = path.display())]
    UnknownCode { path: PathBuf, key: &'static str, source: UnknownCode },
    #[error("{path}: `{code}` is in both `{first}` and `{second}`", path = path.display())]
    Conflict { path: PathBuf, code: String, first: &'static str, second: &'static str },
    #[error("{origin}: invalid glob `{pattern}`: {message}")]
    Glob { origin: String, pattern: String, message: String },
}

impl Config {
    /// Reads a config file: `pyproject.toml` by its `[tool.onnx-bcast]` table (an error if it has none), any other
    /// file as an `onnx-bcast.toml`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
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

    /// Looks for a config file in `start` and each folder above it; the first one found wins.
    pub fn discover(start: &Path) -> Result<Option<Config>, ConfigError> {
        for dir in start.ancestors() {
            let dedicated = dir.join(CONFIG_FILE);
            if dedicated.is_file() {
                return Config::load(&dedicated).map(Some);
            }
            let pyproject = dir.join(PYPROJECT_FILE);
            if pyproject.is_file() {
                let text = std::fs::read_to_string(&pyproject)
                    .map_err(|source| ConfigError::Io { path: pyproject.clone(), source })?;
                if let Some(settings) = pyproject_settings(&pyproject, &text)? {
                    return Ok(Some(Config { path: pyproject, settings }));
                }
            }
        }
        Ok(None)
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
const KEYS: [&str; 5] = ["deny", "warn", "allow", "strict", "exclude"];

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

/// Paths not to check: globs, each set relative to a base folder.
///
/// A path is excluded when a glob matches one of its components (`legacy` excludes every folder or file named so),
/// the path relative to the glob's base folder (the current folder for `--exclude`, the config file's folder for
/// its `exclude`), or the absolute path, or a leading part of either (`models/old` excludes everything below it).
/// `*` does not cross `/`; `**` does.
#[derive(Clone, Debug, Default)]
pub struct Exclude {
    sets: Vec<(GlobSet, PathBuf)>,
    cwd: PathBuf,
}

impl Exclude {
    /// No exclusions; relative paths are taken from `cwd`.
    pub fn new(cwd: &Path) -> Exclude {
        Exclude { sets: Vec::new(), cwd: normalize(cwd) }
    }

    /// Adds globs relative to `base`; `origin` (`--exclude`, a config file) names them in errors.
    pub fn add(&mut self, patterns: &[String], base: &Path, origin: &str) -> Result<(), ConfigError> {
        if patterns.is_empty() {
            return Ok(());
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let trimmed = pattern.strip_prefix("./").unwrap_or(pattern).trim_end_matches('/');
            let glob = GlobBuilder::new(trimmed).literal_separator(true).build().map_err(|e| ConfigError::Glob {
                origin: origin.to_string(),
                pattern: pattern.clone(),
                message: e.kind().to_string(),
            })?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| ConfigError::Glob {
            origin: origin.to_string(),
            pattern: patterns.join(", "),
            message: e.to_string(),
        })?;
        let base = if base.is_absolute() { base.to_path_buf() } else { self.cwd.join(base) };
        self.sets.push((set, normalize(&base)));
        Ok(())
    }

    /// Whether no glob was added.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Whether `path` (as given or found: relative to the current folder, or absolute) is excluded.
    pub fn is_excluded(&self, path: &Path) -> bool {
        if self.sets.is_empty() {
            return false;
        }
        let given = normalize(path);
        let absolute = normalize(&self.cwd.join(path));
        self.sets.iter().any(|(set, base)| {
            let names = given.components().filter_map(|c| match c {
                Component::Normal(n) => Some(PathBuf::from(n)),
                _ => None,
            });
            let relative = absolute.strip_prefix(base).ok().map(Path::to_path_buf);
            names
                .chain(relative.iter().flat_map(|r| prefixes(r)))
                .chain(prefixes(&absolute))
                .any(|candidate| set.is_match(&candidate))
        })
    }
}

/// `a/b/c` → `a`, `a/b`, `a/b/c`.
fn prefixes(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut acc = PathBuf::new();
    for c in path.components() {
        acc.push(c);
        if matches!(c, Component::Normal(_)) {
            out.push(acc.clone());
        }
    }
    out
}

/// Drops `.` components and resolves `..` against what precedes it, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// One thing to check, in the order the command line gives: a model file, or a path that could not be walked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A model file (named, or found in a folder). It may not exist: opening it reports that.
    Model(PathBuf),
    /// A folder (or part of one) that could not be read.
    Unreadable { path: PathBuf, message: String },
}

impl Target {
    /// The path as shown in output.
    pub fn path(&self) -> &Path {
        match self {
            Target::Model(p) => p,
            Target::Unreadable { path, .. } => path,
        }
    }
}

/// How [`find_models`] treats the paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    /// Skip a path named on the command line when it is excluded (otherwise it is checked whatever the globs say).
    pub force_exclude: bool,
    /// Skip hidden files and folders and what `.gitignore`, `.ignore` and `.git/info/exclude` list, below a folder.
    pub honour_ignore_files: bool,
}

impl Default for Walk {
    fn default() -> Self {
        Walk { force_exclude: false, honour_ignore_files: true }
    }
}

/// What the command-line paths name: each file as it is, each folder as every `.onnx` file below it (sorted by
/// path; symbolic links to folders are not followed; hidden folders and ignored paths skipped unless
/// `walk.honour_ignore_files` is off), in argument order, without the excluded ones found in folders (and the
/// excluded named ones with `walk.force_exclude`). A model named twice, or found twice, is checked once, in its
/// first place. Returns the targets and a warning per folder with no model in it.
pub fn find_models(paths: &[PathBuf], exclude: &Exclude, walk: Walk) -> (Vec<Target>, Vec<String>) {
    let mut targets = Vec::new();
    let mut warnings = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut first_time = |target: &Target| match target {
        Target::Model(path) => seen.insert(std::fs::canonicalize(path).unwrap_or_else(|_| normalize(path))),
        Target::Unreadable { .. } => true,
    };
    for path in paths {
        if walk.force_exclude && exclude.is_excluded(path) {
            continue;
        }
        if !path.is_dir() {
            let target = Target::Model(path.clone());
            if first_time(&target) {
                targets.push(target);
            }
            continue;
        }
        let mut found = walk_folder(path, exclude, walk.honour_ignore_files);
        found.sort_by(|a, b| a.path().cmp(b.path()));
        if found.is_empty() {
            warnings.push(format!("{}: no .onnx file below this folder", path.display()));
        }
        targets.extend(found.into_iter().filter(|t| first_time(t)));
    }
    (targets, warnings)
}

/// The model files below `dir`, walked by the `ignore` crate (ripgrep's): `.gitignore` files apply inside and
/// outside a Git repository, as ruff applies them.
fn walk_folder(dir: &Path, exclude: &Exclude, honour_ignore_files: bool) -> Vec<Target> {
    let mut builder = ignore::WalkBuilder::new(dir);
    builder.standard_filters(honour_ignore_files).require_git(false).follow_links(false);
    let exclude = exclude.clone();
    builder.filter_entry(move |entry| entry.depth() == 0 || !exclude.is_excluded(entry.path()));
    let mut found = Vec::new();
    for entry in builder.build() {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                let is_file =
                    entry.file_type().is_some_and(|k| k.is_file()) || (entry.path_is_symlink() && path.is_file());
                if entry.depth() > 0 && is_file && is_model_file(path) {
                    found.push(Target::Model(path.to_path_buf()));
                }
            }
            Err(e) => {
                let path = error_path(&e).unwrap_or(dir).to_path_buf();
                found.push(Target::Unreadable { path, message: format!("cannot read folder: {}", error_cause(&e)) });
            }
        }
    }
    found
}

fn error_path(e: &ignore::Error) -> Option<&Path> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => error_path(err),
        _ => None,
    }
}

/// The error without the path it names (the target names it).
fn error_cause(e: &ignore::Error) -> String {
    match e {
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => error_cause(err),
        other => other.to_string(),
    }
}

/// Whether a file name ends in `.onnx` (any case).
pub fn is_model_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excluder(patterns: &[&str], base: &str) -> Exclude {
        let mut e = Exclude::new(Path::new("/srv/repo"));
        e.add(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>(), Path::new(base), "test").unwrap();
        e
    }

    #[test]
    fn globs_match_names_paths_and_leading_parts() {
        let e = excluder(&["legacy", "*_bad.onnx", "models/old"], "/srv/repo");
        assert!(e.is_excluded(Path::new("models/legacy/a.onnx")));
        assert!(e.is_excluded(Path::new("x/y_bad.onnx")));
        assert!(e.is_excluded(Path::new("models/old/sub/a.onnx")));
        assert!(e.is_excluded(Path::new("./models/old")));
        assert!(!e.is_excluded(Path::new("models/new/a.onnx")));
        assert!(!e.is_excluded(Path::new("old/models/a.onnx")));
    }

    #[test]
    fn globs_are_relative_to_their_base() {
        let e = excluder(&["sub/**"], "/srv");
        assert!(e.is_excluded(Path::new("/srv/sub/a.onnx")));
        assert!(!e.is_excluded(Path::new("sub/a.onnx")), "that is /srv/repo/sub/a.onnx");
        let e = excluder(&["repo/models/*.onnx"], "/srv");
        assert!(e.is_excluded(Path::new("models/a.onnx")), "relative to /srv: repo/models/a.onnx");
        assert!(!e.is_excluded(Path::new("models/deeper/a.onnx")), "* does not cross /");
    }

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
