//! Rule selection (`--deny`, `--warn`, `--allow`) and the config file (`onnx-bcast.toml`, `[tool.onnx-bcast]` in
//! `pyproject.toml`), found from the current folder upwards, through the command line. Each test builds its folders
//! in a temporary directory and runs the binary inside them.

use crate::common::cli::{run_in, Run};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

/// A temporary tree: `files` are (relative path, contents); `models` are (relative path, fixture name).
fn tree(files: &[(&str, &str)], models: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = tmp.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    for (path, name) in models {
        let path = tmp.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(fixture(name), path).unwrap();
    }
    tmp
}

const COND: &str = "symbolic_batch.onnx"; // one conditional-broadcast warning
const BAD: &str = "multidirectional_add_bad.onnx"; // one broadcast-violation error
const OK: &str = "multidirectional_add_ok.onnx"; // one implicit broadcast, clean

fn finding_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.contains('[')).collect()
}

#[test]
fn flags_change_severities() {
    let t = tree(&[], &[("cond.onnx", COND), ("bad.onnx", BAD)]);
    let dir = t.path();

    let r = run_in(dir, &["check", "cond.onnx"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run_in(dir, &["check", "--deny", "conditional-broadcast", "cond.onnx"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("cond.onnx: error[conditional-broadcast] main › add (Add): holds only if"), "{r:?}");

    let r = run_in(dir, &["check", "--warn", "broadcast-violation", "bad.onnx"]);
    assert_eq!(r.code, 0, "a violation made a warning does not fail: {r:?}");
    assert!(r.stdout.contains("bad.onnx: warning[broadcast-violation]"), "{r:?}");

    let r = run_in(dir, &["check", "--allow", "broadcast-violation", "bad.onnx"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(finding_lines(&r.stdout).is_empty(), "an allowed finding is dropped: {r:?}");
    assert!(r.stdout.contains("1 violation"), "the site's verdict stays in the summary: {r:?}");

    // JSON: the finding's severity follows the selection; summary counts follow the findings.
    let r = run_in(dir, &["check", "--format", "json", "--deny", "all", "cond.onnx"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["findings"][0]["severity"], "error");
    assert_eq!(v["summary"]["errors"], 1);
    assert_eq!(v["summary"]["warnings"], 0);
}

/// Later flags override earlier ones, whatever their kind; `all` covers every code.
#[test]
fn later_flags_win() {
    let t = tree(&[], &[("cond.onnx", COND), ("bad.onnx", BAD)]);
    let dir = t.path();
    let r = run_in(dir, &["check", "--deny", "all", "--allow", "conditional-broadcast", "cond.onnx", "bad.onnx"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(finding_lines(&r.stdout).len(), 1, "{r:?}");
    let r = run_in(dir, &["check", "--allow", "conditional-broadcast", "--deny", "all", "cond.onnx"]);
    assert_eq!(r.code, 1, "deny all comes last: {r:?}");
    let r = run_in(dir, &["check", "--allow", "all", "cond.onnx", "bad.onnx"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(finding_lines(&r.stdout).is_empty(), "{r:?}");
    let r = run_in(dir, &["check", "--warn", "all", "--deny", "broadcast-violation", "bad.onnx"]);
    assert_eq!(r.code, 1, "{r:?}");
}

/// Naming a code that only --strict reports turns it on: --warn shows implicit broadcasts without failing, --deny
/// fails on them; `all` names them too, so `--deny all` is `--strict` with every other code denied.
#[test]
fn naming_a_strict_code_enables_it() {
    let t = tree(&[], &[("ok.onnx", OK)]);
    let dir = t.path();
    let r = run_in(dir, &["check", "--warn", "implicit-broadcast", "ok.onnx"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("ok.onnx: warning[implicit-broadcast] main › add (Add): implicit broadcast of"), "{r:?}");
    let r = run_in(dir, &["check", "--deny", "implicit-broadcast", "ok.onnx"]);
    assert_eq!(r.code, 1, "{r:?}");
    let r = run_in(dir, &["check", "--deny", "all", "ok.onnx"]);
    assert_eq!(r.code, 1, "all enables the strict-only codes: {r:?}");
    assert!(r.stdout.contains("error[implicit-broadcast]"), "{r:?}");
    let strict = run_in(dir, &["check", "--strict", "ok.onnx"]);
    assert_eq!(finding_lines(&r.stdout), finding_lines(&strict.stdout), "--deny all reports what --strict does");
    let r = run_in(dir, &["check", "--warn", "all", "ok.onnx"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("warning[implicit-broadcast]"), "{r:?}");
    let t2 = tree(&[("onnx-bcast.toml", "deny = [\"all\"]\n")], &[("ok.onnx", OK)]);
    let r = run_in(t2.path(), &["check", "ok.onnx"]);
    assert_eq!(r.code, 1, "deny = [\"all\"] in the config too: {r:?}");
    let r = run_in(dir, &["check", "--strict", "--warn", "implicit-broadcast", "ok.onnx"]);
    assert_eq!(r.code, 0, "--strict's error made a warning: {r:?}");
}

#[test]
fn unknown_codes_are_usage_errors_listing_the_valid_ones() {
    let t = tree(&[], &[("ok.onnx", OK)]);
    for flag in ["--deny", "--warn", "--allow"] {
        let r = run_in(t.path(), &["check", flag, "broadcast-violations", "ok.onnx"]);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stdout.is_empty());
        assert!(r.stderr.contains("'broadcast-violations'"), "names the code: {r:?}");
        for code in onnx_bcast::diagnostic::Code::ALL {
            assert!(r.stderr.contains(code.as_str()), "lists {code}: {r:?}");
        }
    }
    let t = tree(&[("onnx-bcast.toml", "warn = [\"all\", \"no-such-code\"]\n")], &[("ok.onnx", OK)]);
    let r = run_in(t.path(), &["check", "ok.onnx"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stdout.is_empty(), "nothing is checked with wrong settings: {r:?}");
    assert!(
        r.stderr
            .contains("onnx-bcast.toml: `warn`: unknown code `no-such-code`; valid codes: all, broadcast-violation"),
        "{r:?}"
    );
}

#[test]
fn bad_config_files_are_errors() {
    for (text, expect) in [
        ("deny = [\"graph-cycle\"]\nwarn = [\"graph-cycle\"]\n", "`graph-cycle` is in both `warn` and `deny`"),
        ("strict = true\nexclude = \"x\"\n", "exclude"),
        ("denny = [\"all\"]\n", "denny"),
        ("deny = [\n", "onnx-bcast.toml"),
        ("exclude = [\"a[\"]\n", "invalid glob `a[`"),
    ] {
        let t = tree(&[("onnx-bcast.toml", text)], &[("ok.onnx", OK)]);
        let r = run_in(t.path(), &["check", "ok.onnx"]);
        assert_eq!(r.code, 2, "{text}: {r:?}");
        assert!(r.stderr.starts_with("onnx-bcast: error: "), "{r:?}");
        assert!(r.stderr.contains(expect), "{text}: {r:?}");
    }
}

/// A config file's name that is no regular file (a link to nothing, a folder, a FIFO) is an error naming it, found
/// or given with --config, never passed over with its settings lost, and a FIFO is never opened (which would block
/// until the 60 s timeout).
#[test]
fn a_config_name_that_is_no_regular_file_is_an_error() {
    for name in ["onnx-bcast.toml", "pyproject.toml"] {
        for (kind, said) in [("dangling", "a symbolic link to nothing"), ("folder", "a folder"), ("fifo", "a FIFO")] {
            let t = tree(&[], &[("sub/ok.onnx", OK)]);
            let entry = t.path().join(name);
            match kind {
                "dangling" => std::os::unix::fs::symlink("gone.toml", &entry).unwrap(),
                "folder" => std::fs::create_dir(&entry).unwrap(),
                _ => {
                    let c = std::ffi::CString::new(entry.to_str().unwrap()).unwrap();
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                }
            }
            for args in [vec!["check", "ok.onnx"], vec!["check", "--config", entry.to_str().unwrap(), "ok.onnx"]] {
                let r = run_in(&t.path().join("sub"), &args);
                assert_eq!(r.code, 2, "{name} {kind} {args:?}: {r:?}");
                assert!(
                    r.stderr.contains(name) && r.stderr.contains(said) && r.stderr.contains("never opened"),
                    "{r:?}"
                );
                assert_eq!(r.stderr.lines().count(), 1, "{r:?}");
            }
            // --no-config reads no file, so nothing is in the way.
            assert_eq!(run_in(&t.path().join("sub"), &["check", "--no-config", "ok.onnx"]).code, 0);
        }
    }
}

/// The config file is found from the current folder upwards, and the nearest one wins.
#[test]
fn discovery_walks_up_and_the_nearest_wins() {
    let t = tree(
        &[
            ("onnx-bcast.toml", "deny = [\"conditional-broadcast\"]\n"),
            ("a/b/c/.keep", ""),
            ("x/onnx-bcast.toml", "allow = [\"conditional-broadcast\"]\n"),
            ("x/y/.keep", ""),
        ],
        &[("cond.onnx", COND)],
    );
    let model = t.path().join("cond.onnx");
    let model = model.to_str().unwrap();
    let r = run_in(t.path(), &["check", model]);
    assert_eq!(r.code, 1, "the config beside: {r:?}");
    let r = run_in(&t.path().join("a/b/c"), &["check", model]);
    assert_eq!(r.code, 1, "three folders up: {r:?}");
    let r = run_in(&t.path().join("a/b/c"), &["check", "--verbose", model]);
    let used = t.path().join("onnx-bcast.toml");
    assert!(r.stderr.contains(&format!("onnx-bcast: settings from {}", used.display())), "{r:?}");
    let r = run_in(&t.path().join("x/y"), &["check", model]);
    assert_eq!(r.code, 0, "the nearer file wins: {r:?}");
    assert!(finding_lines(&r.stdout).is_empty(), "{r:?}");
    // Flags override the file; --no-config and --config.
    let r = run_in(&t.path().join("a/b/c"), &["check", "--warn", "conditional-broadcast", model]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run_in(&t.path().join("a/b/c"), &["check", "--no-config", model]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("warning[conditional-broadcast]"));
    let r = run_in(&t.path().join("a"), &["check", "--config", "../x/onnx-bcast.toml", model]);
    assert!(finding_lines(&r.stdout).is_empty(), "{r:?}");
}

/// pyproject.toml counts only with a [tool.onnx-bcast] table; in one folder onnx-bcast.toml comes first.
#[test]
fn pyproject_tables() {
    let t = tree(
        &[
            ("pyproject.toml", "[project]\nname = \"outer\"\n\n[tool.onnx-bcast]\ndeny = [\"all\"]\n"),
            ("inner/pyproject.toml", "[project]\nname = \"inner\"\n\n[tool.ruff]\nline-length = 100\n"),
            ("both/pyproject.toml", "[tool.onnx-bcast]\ndeny = [\"all\"]\n"),
            ("both/onnx-bcast.toml", "warn = [\"all\"]\n"),
            ("typo/pyproject.toml", "[tool.onnx-bcast]\nstrict = \"yes\"\n"),
        ],
        &[("cond.onnx", COND)],
    );
    let model = t.path().join("cond.onnx");
    let model = model.to_str().unwrap();
    let r = run_in(t.path(), &["check", model]);
    assert_eq!(r.code, 1, "[tool.onnx-bcast] denies all: {r:?}");
    let r = run_in(&t.path().join("inner"), &["check", model]);
    assert_eq!(r.code, 1, "a pyproject.toml without the table is passed over: {r:?}");
    let r = run_in(&t.path().join("both"), &["check", model]);
    assert_eq!(r.code, 0, "onnx-bcast.toml before pyproject.toml: {r:?}");
    let r = run_in(&t.path().join("typo"), &["check", model]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("pyproject.toml") && r.stderr.contains("[tool.onnx-bcast]"), "{r:?}");
}

#[test]
fn strict_from_the_config_and_no_strict() {
    let t = tree(&[("onnx-bcast.toml", "strict = true\n")], &[("ok.onnx", OK)]);
    let r = run_in(t.path(), &["check", "ok.onnx"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("error[implicit-broadcast]"));
    let r = run_in(t.path(), &["check", "--no-strict", "ok.onnx"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run_in(t.path(), &["check", "--no-strict", "--strict", "ok.onnx"]);
    assert_eq!(r.code, 1, "the last of --strict and --no-strict wins: {r:?}");
}

/// `exclude` globs in the config are relative to its folder; --exclude adds to them, relative to the current one.
#[test]
fn excludes_from_the_config_and_the_command_line() {
    let t = tree(
        &[("onnx-bcast.toml", "exclude = [\"models/legacy\", \"*_skip.onnx\"]\n")],
        &[
            ("models/a.onnx", OK),
            ("models/legacy/old.onnx", BAD),
            ("models/sub/b_skip.onnx", BAD),
            ("models/sub/c.onnx", COND),
            ("models/sub/deeper/d.onnx", OK),
        ],
    );
    let summaries = |r: &Run| -> Vec<String> {
        let per_model = r.stdout.lines().filter(|l| l.contains(" site") && !l.starts_with("checked "));
        per_model.map(|l| l.split(": ").next().unwrap().to_string()).collect()
    };
    let r = run_in(t.path(), &["check", "-v", "models"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(summaries(&r), ["models/a.onnx", "models/sub/c.onnx", "models/sub/deeper/d.onnx"]);
    // From a subfolder the config's globs still mean the same files.
    let r = run_in(&t.path().join("models"), &["check", "-v", "."]);
    assert_eq!(summaries(&r), ["./a.onnx", "./sub/c.onnx", "./sub/deeper/d.onnx"], "{r:?}");
    let r = run_in(t.path(), &["check", "-v", "models", "--exclude", "deeper", "--exclude", "models/*.onnx"]);
    assert_eq!(summaries(&r), ["models/sub/c.onnx"], "{r:?}");
    // A named file is checked whatever the globs say (ruff's rule), unless --force-exclude (which the pre-commit
    // hook passes, since pre-commit names the files one by one).
    let r = run_in(t.path(), &["check", "-v", "models/legacy/old.onnx", "models/a.onnx"]);
    assert_eq!(summaries(&r), ["models/legacy/old.onnx", "models/a.onnx"], "{r:?}");
    assert_eq!(r.code, 1);
    let r = run_in(t.path(), &["check", "-v", "--force-exclude", "models/legacy/old.onnx", "models/a.onnx"]);
    assert_eq!(summaries(&r), ["models/a.onnx"], "{r:?}");
    assert_eq!(r.code, 0);
    let r = run_in(t.path(), &["check", "-v", "--no-config", "models"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(summaries(&r).len(), 5, "{r:?}");
}

/// A misspelt table name is an error, not silently no settings; an unknown key names the key it is closest to.
#[test]
fn misspelt_table_and_keys_get_a_suggestion() {
    let t = tree(&[("pyproject.toml", "[tool.onnx_bcast]\nstrict = true\n")], &[("ok.onnx", OK)]);
    let r = run_in(t.path(), &["check", "ok.onnx"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("[tool.onnx_bcast] is not read: the table is [tool.onnx-bcast]"), "{r:?}");
    let t = tree(&[("onnx-bcast.toml", "exlude = [\"legacy\"]\n")], &[("ok.onnx", OK)]);
    let r = run_in(t.path(), &["check", "ok.onnx"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("did you mean `exclude`?"), "{r:?}");
}
