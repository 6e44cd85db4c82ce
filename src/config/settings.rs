//! The settings of a `check` run: the config file's, then the command line's flags over them.

use std::path::Path;

use crate::check::{CheckOptions, Level, RuleSelection, Selector};

use super::{Config, ConfigError, Exclude};

/// Which config file a run reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigChoice<'a> {
    /// None (`--no-config`).
    None,
    /// This file (`--config FILE`).
    File(&'a Path),
    /// The first found from this folder upwards ([`Config::discover`]).
    Discover(&'a Path),
}

/// The config file a run reads, if there is one.
pub fn load(choice: ConfigChoice<'_>) -> Result<Option<Config>, ConfigError> {
    match choice {
        ConfigChoice::None => Ok(None),
        ConfigChoice::File(path) => Config::load(path).map(Some),
        ConfigChoice::Discover(start) => Config::discover(start),
    }
}

/// What to check for: the config file's rule selection and `strict`, then the flags over them. `rule_flags` are
/// the `--deny`/`--warn`/`--allow` flags in command-line order (a later one overrides an earlier one); `strict` is
/// the last of `--strict` (true) and `--no-strict` (false), if either was given.
pub fn check_options(
    config: Option<&Config>,
    rule_flags: &[(Level, &str)],
    strict: Option<bool>,
) -> Result<CheckOptions, ConfigError> {
    let mut rules = match config {
        Some(config) => config.rule_selection()?,
        None => RuleSelection::default(),
    };
    for &(level, name) in rule_flags {
        let selector = Selector::parse(name).map_err(|source| ConfigError::Flag { flag: level.as_str(), source })?;
        rules.select(selector, level);
    }
    let strict = strict.or_else(|| config.and_then(|c| c.settings.strict)).unwrap_or(false);
    Ok(CheckOptions { strict, rules })
}

/// The paths not to check: the `--exclude` globs (relative to `cwd`) and the config file's (relative to its folder).
pub fn exclude(config: Option<&Config>, flags: &[String], cwd: &Path) -> Result<Exclude, ConfigError> {
    let mut exclude = Exclude::new(cwd);
    exclude.add(flags, cwd, "--exclude")?;
    if let Some(config) = config {
        let origin = config.path.display().to_string();
        exclude.add(&config.settings.exclude, config.dir(), &origin)?;
    }
    Ok(exclude)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::diagnostic::{Code, Severity};

    fn config(settings: Settings) -> Config {
        Config { path: "/srv/repo/onnx-bcast.toml".into(), settings }
    }

    #[test]
    fn flags_override_the_config_file_and_each_other_in_order() {
        let file = config(Settings { deny: vec!["negative-dim".into()], strict: Some(true), ..Default::default() });
        let options = check_options(Some(&file), &[(Level::Warn, "all"), (Level::Allow, "negative-dim")], None)
            .expect("valid flags");
        assert!(options.strict, "the file's `strict` holds without a flag");
        assert_eq!(options.rules.severity(Code::NegativeDim, Severity::Warning), None);
        assert_eq!(options.rules.severity(Code::GraphCycle, Severity::Error), Some(Severity::Warning));
        let options = check_options(Some(&file), &[], Some(false)).expect("valid flags");
        assert!(!options.strict, "--no-strict overrides the file");
        assert_eq!(options.rules.severity(Code::NegativeDim, Severity::Warning), Some(Severity::Error));
    }

    #[test]
    fn an_unknown_code_in_a_flag_names_the_flag() {
        let message = check_options(None, &[(Level::Deny, "nope")], None).unwrap_err().to_string();
        assert!(message.starts_with("--deny: ") && message.contains("`nope`"), "{message}");
    }

    #[test]
    fn excludes_of_the_file_are_relative_to_its_folder() {
        let file = config(Settings { exclude: vec!["legacy/**".into()], ..Default::default() });
        let exclude = exclude(Some(&file), &["*_bad.onnx".into()], Path::new("/srv/repo/models")).unwrap();
        assert!(exclude.is_excluded(Path::new("/srv/repo/legacy/a.onnx")));
        assert!(exclude.is_excluded(Path::new("x_bad.onnx")));
        assert!(!exclude.is_excluded(Path::new("/srv/repo/models/a.onnx")));
    }
}
