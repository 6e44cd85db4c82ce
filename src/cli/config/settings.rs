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

/// The ranges of sizes to check over: the config file's, then the flags' (`flags`) over them: a `--range` replaces
/// the file's range of the same symbol, profile flags replace the file's profile, and `--safe-ranges` turns on what
/// the file leaves off.
pub fn range_request(
    config: Option<&Config>,
    flags: crate::rules::ranges::RangeRequest,
) -> Result<crate::rules::ranges::RangeRequest, ConfigError> {
    use crate::rules::ranges::profile::{Profile, Shapes};
    let Some(config) = config else { return Ok(flags) };
    let s = &config.settings;
    let error = |key: &'static str, message: String| ConfigError::Range { path: config.path.clone(), key, message };
    let mut ranges = Vec::new();
    for text in &s.range {
        let (name, range) =
            text.split_once('=').ok_or_else(|| error("range", format!("'{text}' is not NAME=MIN..MAX[/STEP]")))?;
        let range = crate::rules::ranges::SizeRange::parse(range.trim()).map_err(|e| error("range", e.to_string()))?;
        ranges.push((name.trim().to_string(), range));
    }
    ranges.retain(|(name, _)| !flags.ranges.iter().any(|(n, _)| n == name));
    ranges.extend(flags.ranges);
    let shapes = |key: &'static str, text: &Option<String>| -> Result<Shapes, ConfigError> {
        text.as_deref().map_or(Ok(Shapes::default()), |t| Shapes::parse(t).map_err(|e| error(key, e.to_string())))
    };
    let file_profile = Profile {
        min: shapes("min-shapes", &s.min_shapes)?,
        opt: shapes("opt-shapes", &s.opt_shapes)?,
        max: shapes("max-shapes", &s.max_shapes)?,
    };
    let profile = if flags.profile == Profile::default() { file_profile } else { flags.profile };
    let safe_ranges = flags.safe_ranges || s.safe_ranges.unwrap_or(false);
    Ok(crate::rules::ranges::RangeRequest { ranges, profile, safe_ranges })
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
    use crate::cli::config::Settings;
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
    fn range_flags_override_the_file_symbol_by_symbol() {
        let file = config(Settings {
            range: vec!["seq=1..512".into(), "batch=1..8".into()],
            max_shapes: Some("ids:8x512".into()),
            min_shapes: Some("ids:1x1".into()),
            ..Default::default()
        });
        let flags = crate::rules::ranges::RangeRequest {
            ranges: vec![("seq".into(), crate::rules::ranges::SizeRange::parse("1..64").unwrap())],
            ..Default::default()
        };
        let request = range_request(Some(&file), flags).unwrap();
        let shown: Vec<String> = request.ranges.iter().map(|(n, r)| format!("{n}={r}")).collect();
        assert_eq!(shown, ["batch=1..8", "seq=1..64"]);
        assert_eq!(request.profile.max.spelled(), "ids:8x512");
        let bad = config(Settings { range: vec!["seq=9..1".into()], ..Default::default() });
        let message = range_request(Some(&bad), Default::default()).unwrap_err().to_string();
        assert!(message.contains("`range`") && message.contains("9..1"), "{message}");
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
