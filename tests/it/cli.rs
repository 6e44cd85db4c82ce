//! Snapshot tests of `onnx-bcast check`'s command line: what a user sees, byte for byte.
//!
//! The binary runs from the crate root with paths relative to it, so the snapshots (tests/it/snapshots/cli__*.snap)
//! are the same on every machine. Each text snapshot holds the command, its exit code, stdout and stderr; each
//! JSON snapshot holds the exit code and the parsed stdout objects. To review a change of output:
//! `INSTA_UPDATE=always cargo test --test it -- cli::` (or `cargo insta review`), then read the diff.

use crate::common::cli::{run, Run};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A text run as one snapshot: the command, its exit code, then stdout and stderr.
fn transcript(args: &[&str]) -> (Run, String) {
    let r = run(args);
    let text = format!(
        "$ onnx-bcast {}\nexit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
        args.join(" "),
        r.code,
        r.stdout,
        r.stderr
    );
    (r, text)
}

/// A JSON run as one value: exit code, each stdout line parsed, stderr lines.
fn json_transcript(args: &[&str]) -> (Run, Value) {
    let r = run(args);
    let stdout: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}")))
        .collect();
    let value =
        json!({ "args": args, "exit": r.code, "stdout": stdout, "stderr": r.stderr.lines().collect::<Vec<_>>() });
    (r, value)
}

/// The model named on each summary line of a text run (`--verbose`), in output order; the total line is not one.
fn summarized_models(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| !l.starts_with("checked ") && (l.contains(" site: ") || l.contains(" sites: ")))
        .map(|l| l.split(": ").next().unwrap())
        .collect()
}

#[test]
fn text_violation() {
    let (r, text) = transcript(&["check", "fixtures/multidirectional_add_bad.onnx"]);
    assert_eq!(r.code, 1);
    insta::assert_snapshot!("text_violation", text);
}

#[test]
fn text_violation_in_subgraph() {
    let (r, text) = transcript(&["check", "fixtures/multidirectional_if_then_bad.onnx"]);
    assert_eq!(r.code, 1);
    insta::assert_snapshot!("text_violation_in_subgraph", text);
}

#[test]
fn text_conditional() {
    let (r, text) = transcript(&["check", "fixtures/symbolic_batch.onnx"]);
    assert_eq!(r.code, 0, "a conditional site is a warning");
    insta::assert_snapshot!("text_conditional", text);
}

#[test]
fn text_clean() {
    let (r, text) = transcript(&["check", "fixtures/multidirectional_add_ok.onnx"]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.is_empty());
    insta::assert_snapshot!("text_clean", text);
}

#[test]
fn json_violation() {
    let (r, value) = json_transcript(&["check", "--format", "json", "fixtures/multidirectional_add_bad.onnx"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stdout.lines().count(), 1, "one JSON object per model, on one line");
    insta::assert_json_snapshot!("json_violation", value);
}

#[test]
fn json_conditional() {
    let (r, value) = json_transcript(&["check", "--format", "json", "fixtures/symbolic_batch.onnx"]);
    assert_eq!(r.code, 0);
    insta::assert_json_snapshot!("json_conditional", value);
}

/// Several models in one run: reports in argument order, exit code the worst of them (violation: 1).
#[test]
fn several_models_text() {
    let models = [
        "fixtures/multidirectional_add_ok.onnx",
        "fixtures/multidirectional_add_bad.onnx",
        "fixtures/symbolic_batch.onnx",
    ];
    let mut args = vec!["check"];
    args.extend(models);
    let (r, text) = transcript(&args);
    assert_eq!(r.code, 1, "the worst of 0, 1, 0");
    assert_eq!(summarized_models(&r.stdout), Vec::<&str>::new(), "no summary per model without --verbose");
    assert!(r.stdout.ends_with("; 1 error, 1 warning\n"), "one total line at the end:\n{}", r.stdout);
    insta::assert_snapshot!("several_models_text", text);

    // The same models in another order, with --verbose: a summary per model, and the output follows the arguments.
    let reversed: Vec<&str> = models.iter().rev().copied().collect();
    let mut args = vec!["check", "--verbose"];
    args.extend(&reversed);
    let (r, text) = transcript(&args);
    assert_eq!(r.code, 1);
    assert_eq!(summarized_models(&r.stdout), reversed);
    insta::assert_snapshot!("several_models_verbose", text);
}

/// ruff's --quiet: error findings and models that could not be checked, nothing else; the same exit code.
#[test]
fn quiet_prints_only_errors() {
    let (r, text) = transcript(&[
        "check",
        "--quiet",
        "fixtures/multidirectional_add_ok.onnx",
        "fixtures/multidirectional_add_bad.onnx",
        "fixtures/symbolic_batch.onnx",
        "fixtures/does_not_exist.onnx",
    ]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout.lines().count(), 2, "the violation and the missing model:\n{}", r.stdout);
    insta::assert_snapshot!("quiet", text);
    let clean = run(&["check", "-q", "fixtures/symbolic_batch.onnx"]);
    assert_eq!((clean.code, clean.stdout.as_str()), (0, ""), "a warning is not an error");
}

/// A model named twice, or named and found in a named folder, is checked once, in its first place.
#[test]
fn a_model_named_twice_is_checked_once() {
    let ok = "fixtures/multidirectional_add_ok.onnx";
    let r = run(&["check", "-v", ok, "./fixtures/multidirectional_add_ok.onnx", ok]);
    assert_eq!(summarized_models(&r.stdout), [ok]);
    assert!(r.stdout.contains("checked 1 model, "), "{}", r.stdout);
    let r = run(&["check", "-v", "--exclude", "malformed", ok, "fixtures"]);
    let listed = summarized_models(&r.stdout);
    assert_eq!(listed.iter().filter(|m| m.ends_with("multidirectional_add_ok.onnx")).count(), 1, "{listed:?}");
}

/// A file that is not a binary ONNX model says what it looks like, in the report, in order, on stdout.
#[test]
fn not_a_binary_model_says_what_it_looks_like() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("model.onnx.txt");
    std::fs::write(&text, "ir_version: 8\ngraph {\n  name: \"main\"\n}\n").unwrap();
    let zip = dir.path().join("model.zip");
    std::fs::write(&zip, b"PK\x03\x04\x14\x00\x00\x00\x08\x00garbage").unwrap();
    let empty = dir.path().join("empty.onnx");
    std::fs::write(&empty, b"").unwrap();
    let (text, zip, empty) = (text.to_str().unwrap(), zip.to_str().unwrap(), empty.to_str().unwrap());
    let ok = "fixtures/multidirectional_add_ok.onnx";
    let r = run(&["check", "-v", text, ok, zip, empty]);
    assert_eq!(r.code, 2);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], format!("{text}: error: not a binary ONNX model (looks like text)"));
    assert!(lines[1].starts_with(ok), "in argument order: {lines:?}");
    assert_eq!(lines[2], format!("{zip}: error: not a binary ONNX model (looks like a zip archive)"));
    assert_eq!(lines[3], format!("{empty}: error: not a binary ONNX model (empty file)"));
    assert!(lines[4].ends_with("; 3 models could not be checked"), "{lines:?}");
    assert!(r.stderr.is_empty(), "text output has it all on stdout: {}", r.stderr);
}

/// A model that cannot be read among good ones: the others are still checked, the error is a line of the report
/// in its place (stdout, so that `> report.txt` keeps it), and the exit code is the worst (2) even though it is not
/// the last model.
#[test]
fn several_models_with_an_unreadable_one() {
    let (r, text) = transcript(&[
        "check",
        "--verbose",
        "fixtures/multidirectional_add_bad.onnx",
        "fixtures/does_not_exist.onnx",
        "fixtures/multidirectional_add_ok.onnx",
    ]);
    assert_eq!(r.code, 2, "the worst of 1, 2, 0");
    assert_eq!(
        summarized_models(&r.stdout),
        ["fixtures/multidirectional_add_bad.onnx", "fixtures/multidirectional_add_ok.onnx"]
    );
    insta::assert_snapshot!("several_models_with_an_unreadable_one", text);
}

/// The same in JSON: one object per model in argument order, the unreadable one as `{"model", "error"}`.
#[test]
fn several_models_json() {
    let models = [
        "fixtures/multidirectional_add_ok.onnx",
        "fixtures/does_not_exist.onnx",
        "fixtures/none_add6_bad.onnx",
        "fixtures/symbolic_two.onnx",
    ];
    let mut args = vec!["check", "--format", "json"];
    args.extend(models);
    let (r, value) = json_transcript(&args);
    assert_eq!(r.code, 2);
    let order: Vec<&str> = value["stdout"].as_array().unwrap().iter().map(|o| o["model"].as_str().unwrap()).collect();
    assert_eq!(order, models, "one object per model, in argument order");
    insta::assert_json_snapshot!("several_models_json", value);
}

/// The worst code wins whatever the order: clean then violation, violation then clean.
#[test]
fn exit_code_is_the_worst() {
    let ok = "fixtures/multidirectional_add_ok.onnx";
    let bad = "fixtures/multidirectional_add_bad.onnx";
    let cond = "fixtures/symbolic_two.onnx";
    let missing = "fixtures/does_not_exist.onnx";
    for (models, want) in [
        (vec![ok], 0),
        (vec![ok, cond], 0),
        (vec![ok, bad], 1),
        (vec![bad, ok], 1),
        (vec![missing, bad], 2),
        (vec![bad, missing], 2),
        (vec![ok, missing, ok], 2),
    ] {
        let mut args = vec!["check"];
        args.extend(&models);
        assert_eq!(run(&args).code, want, "{models:?}");
    }
}

/// --strict: an implicit broadcast and a conditional site become errors (exit 1); an explicit Expand and a site
/// without broadcast stay clean.
#[test]
fn strict() {
    let models = [
        "fixtures/multidirectional_add_ok.onnx",
        "fixtures/symbolic_batch.onnx",
        "fixtures/bidirectional_expand_ok.onnx",
        "fixtures/multidirectional_dtype_ok.onnx",
    ];
    let mut args = vec!["check", "--strict"];
    args.extend(models);
    let (r, text) = transcript(&args);
    assert_eq!(r.code, 1);
    insta::assert_snapshot!("strict", text);

    for (model, plain, strict) in [(models[0], 0, 1), (models[1], 0, 1), (models[2], 0, 0), (models[3], 0, 0)] {
        assert_eq!(run(&["check", model]).code, plain, "{model} without --strict");
        assert_eq!(run(&["check", "--strict", model]).code, strict, "{model} with --strict");
    }
}

#[test]
fn strict_json() {
    let (r, value) =
        json_transcript(&["check", "--strict", "--format", "json", "fixtures/multidirectional_add_ok.onnx"]);
    assert_eq!(r.code, 1);
    insta::assert_json_snapshot!("strict_json", value);
}

#[test]
fn check_help() {
    let (r, text) = transcript(&["check", "--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.is_empty());
    insta::assert_snapshot!("check_help", text);
}

/// `check` without a model is a usage error (clap's exit code 2, not a crash).
#[test]
fn check_without_models() {
    let (r, text) = transcript(&["check"]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.is_empty());
    insta::assert_snapshot!("check_without_models", text);
}

/// `onnx-bcast check MODELS... | head -c 1`: the reader goes away after one byte. The run must end quietly with
/// exit 0: no panic ("failed printing to stdout"), nothing on stderr.
#[test]
fn broken_pipe_ends_quietly() {
    // Enough output that it cannot all sit in the pipe's buffer (64 KiB on Linux) before the reader closes it:
    // the writer is bound to hit the closed pipe.
    let copies = fixture_copies(40);
    for format in ["text", "json"] {
        let args: Vec<&str> = vec!["check", "--verbose", "--format", format, copies.path().to_str().unwrap()];
        let full = run(&args);
        assert!(
            full.stdout.len() > 256 * 1024,
            "{format}: only {} bytes of output, too little to fill the pipe",
            full.stdout.len()
        );

        let mut child = Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
            .args(&args)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout); // like `head -c 1` exiting
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        assert!(!stderr.contains("panicked"), "{format}: panic on a closed pipe:\n{stderr}");
        assert_eq!(status.code(), Some(0), "{format}: a closed pipe ends the run with 0 ({status})\nstderr:\n{stderr}");
        assert!(stderr.is_empty(), "{format}: a closed pipe is not an error worth a message:\n{stderr}");
    }
}

/// `--format github`: a workflow command per finding (error, warning), titled with its code and escaped by GitHub's
/// rules, then the plain summary line; an unreadable model is an `::error` too.
#[test]
fn github_format() {
    let (r, text) = transcript(&[
        "check",
        "--format",
        "github",
        "fixtures/multidirectional_add_bad.onnx",
        "fixtures/symbolic_batch.onnx",
        "fixtures/does_not_exist.onnx",
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.lines().any(|l| l.starts_with(
        "::error file=fixtures/multidirectional_add_bad.onnx,title=broadcast-violation::main › add (Add): "
    )));
    assert!(r
        .stdout
        .lines()
        .any(|l| l.starts_with("::warning file=fixtures/symbolic_batch.onnx,title=conditional-broadcast::")));
    insta::assert_snapshot!("github_format", text);
}

#[test]
fn github_escaping() {
    use onnx_bcast::render::github_command;
    assert_eq!(
        github_command("error", "a,b:c%.onnx", "t", "100% sure:\r\nnext, line"),
        "::error file=a%2Cb%3Ac%25.onnx,title=t::100%25 sure:%0D%0Anext, line"
    );
}

/// The summary line of each model in output order, for folder runs (paths may contain any character but ": ").
fn all_summaries(stdout: &str) -> Vec<String> {
    summarized_models(stdout).into_iter().map(str::to_string).collect()
}

/// A folder holding `n` copies of every good fixture (a model named twice is checked once, so many distinct files
/// make a long run).
fn fixture_copies(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        let sub = dir.path().join(format!("copy{i:03}"));
        std::fs::create_dir(&sub).unwrap();
        for f in good_fixtures() {
            let name = std::path::Path::new(&f).file_name().unwrap();
            std::fs::copy(root().join(&f), sub.join(name)).unwrap();
        }
    }
    dir
}

/// Sorted `.onnx` files below `fixtures/` that are not in `malformed/`.
fn good_fixtures() -> Vec<String> {
    let mut files = Vec::new();
    let mut folders = vec![root().join("fixtures")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with("malformed") {
                folders.push(path);
            } else if path.extension().is_some_and(|x| x == "onnx") {
                files.push(path.strip_prefix(root()).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    files
}

/// Files and folders mixed: output in argument order (a folder's models sorted), whatever the number of threads,
/// and the exit code is the worst of them.
#[test]
fn parallel_output_follows_the_arguments() {
    let bad = "fixtures/multidirectional_add_bad.onnx";
    let ok = "fixtures/multidirectional_add_ok.onnx";
    // Each model once, in its first place: `ok` before the folder, `bad` inside it.
    let mut want = vec![ok.to_string()];
    want.extend(good_fixtures().into_iter().filter(|f| f != ok));
    let mut outputs = Vec::new();
    for jobs in ["1", "2", "4"] {
        let r = run(&["check", "-v", "-j", jobs, "--exclude", "malformed", ok, "fixtures", bad, ok]);
        assert_eq!(r.code, 1, "-j {jobs}: the worst is a violation");
        assert_eq!(all_summaries(&r.stdout), want, "-j {jobs}");
        outputs.push(r.stdout);
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]), "the same output byte for byte with 1, 2 and 4 threads");

    // JSON too, with a failure in the middle: one object per model in order, exit 2.
    let r = run(&["check", "--format", "json", "--exclude", "malformed", ok, "fixtures/missing.onnx", "fixtures"]);
    assert_eq!(r.code, 2);
    let models: Vec<String> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["model"].as_str().unwrap().to_string())
        .collect();
    let mut want = vec![ok.to_string(), "fixtures/missing.onnx".to_string()];
    want.extend(good_fixtures().into_iter().filter(|f| f != ok));
    assert_eq!(models, want);
}

/// A folder with unreadable models among good ones: every model is still checked, exit 2.
#[test]
fn folder_with_malformed_models() {
    let r = run(&["check", "--format", "json", "fixtures/malformed", "fixtures/multidirectional_add_ok.onnx"]);
    assert_eq!(r.code, 2);
    let objects: Vec<Value> = r.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = objects.last().unwrap();
    assert_eq!(last["model"], "fixtures/multidirectional_add_ok.onnx");
    assert!(last.get("sites").is_some());
    let malformed = &objects[..objects.len() - 1];
    assert!(malformed.iter().all(|o| o.get("error").is_some() || o.get("sites").is_some()));
    let unreadable = malformed.iter().filter(|o| o.get("error").is_some()).count();
    assert!(unreadable >= 10, "the unreadable ones are reported and the rest still checked: {unreadable}");
    let mut names: Vec<&str> = malformed.iter().map(|o| o["model"].as_str().unwrap()).collect();
    let listed = names.clone();
    names.sort();
    assert_eq!(listed, names, "in path order");
}

#[test]
fn empty_folder_warns() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run(&["check", tmp.path().to_str().unwrap(), "fixtures/multidirectional_add_ok.onnx"]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains("no .onnx file below this folder"), "{}", r.stderr);
}

/// Colour only on request or on a terminal, never through NO_COLOR; the characters are the same.
#[test]
fn colour() {
    let model = "fixtures/multidirectional_add_bad.onnx";
    let plain = run(&["check", model]);
    assert!(!plain.stdout.contains('\x1b'), "no colour into a pipe");
    let coloured = run(&["check", "--color", "always", model]);
    assert!(
        coloured.stdout.contains("\x1b[1m\x1b[31merror[broadcast-violation]")
            || coloured.stdout.contains("\x1b[1;31merror[broadcast-violation]"),
        "{:?}",
        coloured.stdout
    );
    let stripped: String = {
        let mut out = String::new();
        let mut chars = coloured.stdout.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    };
    assert_eq!(stripped, plain.stdout);
    assert_eq!(run(&["check", "--color", "never", model]).stdout, plain.stdout);
    let json = run(&["check", "--color", "always", "--format", "json", model]);
    assert!(!json.stdout.contains('\x1b'), "only text is coloured");
}

/// On a terminal (a pseudo-terminal made by `script`): colour by default, none with NO_COLOR; a progress bar only
/// for long runs, and never into a pipe or under CI.
#[test]
fn terminal_colour_and_progress() {
    let bin = env!("CARGO_BIN_EXE_onnx-bcast");
    let in_pty = |env: &str, args: &str| -> String {
        let out = std::process::Command::new("script")
            .args(["-qec", &format!("env -u CI {env} {bin} {args}"), "/dev/null"])
            .current_dir(root())
            .stdin(Stdio::null())
            .output()
            .expect("script (util-linux) runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let model = "fixtures/multidirectional_add_bad.onnx";
    assert!(in_pty("", &format!("check {model}")).contains("\x1b["), "colour on a terminal");
    assert!(!in_pty("NO_COLOR=1", &format!("check {model}")).contains("\x1b["), "NO_COLOR turns it off");

    // Many models on a terminal (one thread: about 2 s in a debug build, past the bar's 0.5 s delay): the bar is drawn
    // on stderr, which `script` merges into its output.
    let copies = fixture_copies(60);
    let many = copies.path().to_str().unwrap();
    let slow = in_pty("NO_COLOR=1", &format!("check --format json -j 1 {many}"));
    assert!(
        slow.contains("checking "),
        "a progress bar on a terminal for a long run:\n{}",
        &slow[..slow.len().min(2000)]
    );
    let under_ci = in_pty("NO_COLOR=1 CI=true", &format!("check --format json -j 1 {many}"));
    assert!(!under_ci.contains("checking "), "never under CI");
    let r = run(&["check", "--format", "json", many]);
    assert!(!r.stderr.contains("checking "), "never into a pipe");
}

#[test]
fn explain() {
    let (r, text) = transcript(&["explain", "broadcast-violation"]);
    assert_eq!(r.code, 0);
    for source in [
        "ONNX Broadcasting.md",
        "SONNX Broadcast spec, constraint C1",
        "OpenVINO broadcast rules",
        "OpenVINO Broadcast-1",
    ] {
        assert!(r.stdout.contains(source), "{source}");
    }
    insta::assert_snapshot!("explain_broadcast_violation", text);

    let r = run(&["explain", "--list"]);
    assert_eq!(r.code, 0);
    // One entry per code, a summary past 100 columns wrapped under itself.
    assert_eq!(r.stdout.lines().filter(|l| !l.starts_with(' ')).count(), onnx_bcast::diagnostic::Code::ALL.len());
    assert_eq!(run(&["explain"]).stdout, r.stdout, "explain without a code lists them");
    for code in onnx_bcast::diagnostic::Code::ALL {
        assert!(r.stdout.lines().any(|l| l.starts_with(code.as_str())), "{code}");
        let one = run(&["explain", code.as_str()]);
        assert_eq!(one.code, 0, "{code}");
        let words = one.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(code.description()), "{code}: the description, wrapped");
        assert!(one.stdout.contains("Example:") && one.stdout.contains("Fix:"), "{code}");
    }
    let r = run(&["explain", "broadcast"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("'broadcast'") && r.stderr.contains("broadcast-violation"), "{}", r.stderr);
}

/// Completion scripts and the man page come from the clap definition: they know every subcommand and flag.
#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let r = run(&["completions", shell]);
        assert_eq!(r.code, 0, "{shell}");
        for word in ["check", "explain", "deny", "format", "exclude"] {
            assert!(r.stdout.contains(word), "{shell} completions know {word}");
        }
    }
    let bash = run(&["completions", "bash"]).stdout;
    assert!(bash.contains("broadcast-violation"), "codes complete after --deny");
    let man = run(&["man"]);
    assert_eq!(man.code, 0);
    assert!(man.stdout.starts_with(".ie") || man.stdout.contains(".TH onnx-bcast"), "{}", &man.stdout[..200]);
    assert!(man.stdout.contains("check") && man.stdout.contains("expand"));
    let tmp = tempfile::tempdir().unwrap();
    let r = run(&["man", "--out-dir", tmp.path().to_str().unwrap()]);
    assert_eq!(r.code, 0);
    for page in ["onnx-bcast.1", "onnx-bcast-check.1", "onnx-bcast-explain.1"] {
        let text = std::fs::read_to_string(tmp.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page}");
    }
    let check_page = std::fs::read_to_string(tmp.path().join("onnx-bcast-check.1")).unwrap();
    assert!(check_page.contains("deny"));
}

/// A folder walk skips hidden folders (a `.venv` holding the onnx wheel's test models) and what `.gitignore` or
/// `.ignore` list, in a Git repository or not; `--no-ignore` walks into them.
#[test]
fn folder_walks_honour_ignore_files_and_skip_hidden_folders() {
    let dir = tempfile::tempdir().unwrap();
    let model = root().join("fixtures/multidirectional_add_ok.onnx");
    for sub in [".venv/lib/onnx/backend", "build", "scratch", "models"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        std::fs::copy(&model, dir.path().join(sub).join("m.onnx")).unwrap();
    }
    std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
    std::fs::write(dir.path().join(".ignore"), "scratch\n").unwrap();
    let bin = env!("CARGO_BIN_EXE_onnx-bcast");
    let checked = |args: &[&str]| -> Vec<String> {
        let out = Command::new(bin).arg("check").arg("-v").args(args).current_dir(dir.path()).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        summarized_models(&stdout).into_iter().map(str::to_string).collect()
    };
    assert_eq!(checked(&["."]), ["./models/m.onnx"]);
    assert_eq!(
        checked(&["--no-ignore", "."]),
        ["./.venv/lib/onnx/backend/m.onnx", "./build/m.onnx", "./models/m.onnx", "./scratch/m.onnx"]
    );
    // A folder or file named on the command line is walked or checked, ignored or not.
    assert_eq!(checked(&["build", ".venv/lib/onnx/backend/m.onnx"]), ["build/m.onnx", ".venv/lib/onnx/backend/m.onnx"]);
}

/// ruff's rule: a file named on the command line is checked even if --exclude (or the config's `exclude`) matches
/// it; `--force-exclude` skips it (for pre-commit, which names the staged files). Found files are always excluded.
#[test]
fn a_named_file_is_checked_unless_force_exclude() {
    let named = "fixtures/multidirectional_add_ok.onnx";
    let r = run(&["check", "-v", "--exclude", "*_ok.onnx", named]);
    assert_eq!(summarized_models(&r.stdout), [named]);
    let r = run(&["check", "-v", "--force-exclude", "--exclude", "*_ok.onnx", named]);
    assert_eq!(summarized_models(&r.stdout), Vec::<&str>::new());
    let r = run(&["check", "-v", "--exclude", "*_ok.onnx", "--exclude", "malformed", "fixtures"]);
    assert!(summarized_models(&r.stdout).iter().all(|m| !m.ends_with("_ok.onnx")), "{}", r.stdout);
}

/// `expand` lists each site it makes explicit, one line each, and says when the site still holds only for some
/// sizes of its symbols; `--quiet` leaves the list out.
#[test]
fn expand_lists_the_sites_it_changes() {
    let (r, text) = transcript(&["expand", "--dry-run", "fixtures/symbolic_batch.onnx", "out.onnx"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("main › add (Add): ") && r.stdout.contains("(still holds only if N ∈ {1, 2})"));
    insta::assert_snapshot!("expand_lists_sites", text);
    let (r, text) = transcript(&["expand", "--dry-run", "fixtures/multidirectional_where3_ok.onnx", "out.onnx"]);
    assert_eq!(r.code, 0);
    insta::assert_snapshot!("expand_lists_sites_static", text);
    let r = run(&["expand", "--dry-run", "--quiet", "fixtures/multidirectional_where3_ok.onnx", "out.onnx"]);
    assert_eq!(r.stdout.lines().count(), 1, "only the totals: {}", r.stdout);
}

/// A message is read at a glance: in text, SARIF and GitHub output a long dim expression gets a short name (`h₁`),
/// defined beside the finding (text: on the line after it; SARIF: in the message; GitHub: in the annotation, or
/// no name at all when the definition does not fit), and no line runs past 300 characters; JSON keeps the full
/// message.
#[test]
fn long_messages_are_short_in_text_sarif_and_github() {
    let model = "fixtures/multidirectional_long_message_bad.onnx";
    let long_dim = "batch_size_of_the_exported_encoder_model_after_tracing";
    let text = run(&["check", model]);
    let finding = text.stdout.lines().next().unwrap();
    let message = finding.split_once("error[broadcast-violation] ").unwrap().1;
    assert!(message.chars().count() <= 300, "{} characters: {message}", message.chars().count());
    assert!(message.contains("[h₁, 3]") && !message.contains(long_dim), "{message}");
    assert!(
        message.contains('…')
            && message.ends_with("on axis 1, hidden_state_of_layer_39 has 4 where hidden_state_of_layer_00 has 3"),
        "the list of 40 inputs is cut, the axis and the two sizes are not: {message}"
    );
    assert!(text.stdout.contains(&format!("\n    h₁ = {long_dim}\n")), "without --verbose: {}", text.stdout);

    let github = run(&["check", "--format", "github", model]);
    let line = github.stdout.lines().next().unwrap();
    assert!(line.replace(model, "").chars().count() <= 300, "{line}");
    let annotation = line.split_once("::").unwrap().1.split_once("::").unwrap().1;
    assert!(!annotation.contains("h₁") || annotation.contains(&format!("h₁ = {long_dim}")), "{annotation}");

    let sarif: Value = serde_json::from_str(&run(&["check", "--format", "sarif", model]).stdout).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    let shown = result["message"]["text"].as_str().unwrap();
    assert!(shown.lines().all(|l| l.chars().count() <= 300), "{shown}");
    assert!(shown.ends_with(&format!("\nh₁ = {long_dim}")), "{shown}");
    assert_eq!(result["properties"]["names"]["h₁"], long_dim);
    assert!(result["properties"]["fullMessage"].as_str().unwrap().contains("hidden_state_of_layer_39"));

    let json: Value = serde_json::from_str(&run(&["check", "--format", "json", model]).stdout).unwrap();
    let full = json["findings"][0]["message"].as_str().unwrap();
    assert!(full.contains(long_dim) && full.contains("hidden_state_of_layer_39 [4]"), "JSON keeps everything: {full}");
}

/// JSON sites carry their conditions structured beside the prose: the symbol (or expression) and its values.
#[test]
fn json_conditions_are_structured() {
    let r = run(&["check", "--format", "json", "fixtures/symbolic_batch.onnx"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let site = &v["sites"][0];
    assert_eq!(site["conditions"], json!(["N ∈ {1, 2}"]));
    assert_eq!(site["constraints"], json!([{ "axis": 0, "symbol": "N", "values": [1, 2] }]));
}

/// An unknown dim's condition names its input and the axis of that input's own shape in JSON too, not only the
/// input's position among the rule's operands (which says nothing to a reader of the report).
#[test]
fn json_condition_on_an_unknown_dim_names_its_input_and_own_axis() {
    let r = run(&["check", "--format", "json", "fixtures/inference/unknown_dim_against_fixed_size.onnx"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let site = &v["sites"][0];
    assert_eq!(site["conditions"], json!(["the unknown dim 2 of q ∈ {1, 2}"]));
    assert_eq!(
        site["constraints"],
        json!([{ "axis": 2, "input": 0, "input_name": "q", "input_axis": 2, "unknown_dim_values": [1, 2] }])
    );
}
