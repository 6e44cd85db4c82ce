//! What `check` checks: `--exclude` globs, and the model files named or found in folders.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::ConfigError;

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
}
