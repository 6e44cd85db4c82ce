//! Every command README.md and docs/ show, run (issue 28: none can go stale). Each ```sh block line that starts
//! with `onnx-bcast` runs through bash in a scratch folder per page holding `model.onnx` (a model with a `seq ≤ 64`
//! condition: fixtures/inference/slice_buffer_to_sequence.onnx), `models/` (a clean model, one with a violation and
//! one with a condition) and the repository's `fixtures/` and `docs/`, in the page's order; a `# exit N` comment is
//! the exit code it must give, and a command without one must not fail to do its job (exit 0 or 1). Any other
//! command a page shows must be one of [`OTHER_COMMANDS`], each named with the test that runs it. A ```console
//! block is a transcript: each `$ onnx-bcast …` line runs the same way and must print exactly the lines under it;
//! a `<!-- transcript: NAME = torch:FILE -->` line before it puts FILE of the PyTorch export corpus in the folder
//! as NAME. The Python examples run in python/tests/test_docs.py; README.md stays within 250 lines.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Commands the pages show that are not `onnx-bcast` itself, and what runs each of them.
const OTHER_COMMANDS: &[(&str, &str)] = &[
    (
        "pip install .",
        "scripts/python_wheel.sh builds this wheel with maturin and installs it (tests/it/python_package.rs)",
    ),
    ("pip wheel . --no-deps -w dist", "scripts/python_wheel.sh builds the wheel the same way (maturin build)"),
    ("cargo install --path .", "every test runs the binary `cargo build` makes of this crate"),
    ("cargo install --path . --features verify", "tests/it/expand_battery.rs builds and runs the verify feature"),
    ("cargo test", ".ci/run runs it on a clean checkout"),
    ("cargo test --features portable-write", "run for issue 28 (its notes give the figures)"),
    ("bash scripts/python_wheel.sh", "tests/it/python_package.rs"),
    ("bash corpus/fetch.sh", "tests/it/real_models.rs, through common::corpus_dir"),
    ("bash corpus/torch_fetch.sh", "tests/it/torch_models.rs, through common::fetched_dir"),
    ("bash bench/run.sh", "the benchmark itself (bench/README.md); speed is never a timed test"),
];

/// The `sh` blocks of a Markdown page: each command line, with the exit code its `# exit N` comment gives.
fn commands(page: &str) -> Vec<(String, Option<i32>)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in page.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_sh = !in_sh && trimmed == "```sh";
            continue;
        }
        if !in_sh || trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        out.push(split_exit(trimmed));
    }
    out
}

/// A transcript's command, the exit code its `# exit N` comment gives, and the lines it must print.
#[derive(Debug, PartialEq)]
struct Shown {
    command: String,
    exit: Option<i32>,
    output: String,
}

/// A transcript: the files its `<!-- transcript: NAME = torch:FILE -->` line names, and its commands.
type Transcript = (Vec<(String, String)>, Vec<Shown>);

/// The ```console blocks of a page, each with the corpus files its `<!-- transcript: … -->` line names.
fn transcripts(page: &str) -> Vec<Transcript> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    let mut block: Option<Vec<Shown>> = None;
    for line in page.lines() {
        if block.is_some() && line.trim() == "```" {
            out.push((std::mem::take(&mut files), block.take().unwrap()));
        } else if let Some(shown) = block.as_mut() {
            if let Some(command) = line.strip_prefix("$ ") {
                let (command, exit) = split_exit(command);
                shown.push(Shown { command, exit, output: String::new() });
            } else if let Some(last) = shown.last_mut() {
                last.output.push_str(line);
                last.output.push('\n');
            }
        } else if line.trim() == "```console" {
            block = Some(Vec::new());
        } else if let Some(rest) = line.strip_prefix("<!-- transcript: ").and_then(|r| r.strip_suffix(" -->")) {
            let (name, from) = rest.split_once(" = ").expect("<!-- transcript: NAME = torch:FILE -->");
            files.push((name.to_string(), from.to_string()));
        }
    }
    out
}

/// A command line and the exit code of its `# exit N` comment.
fn split_exit(line: &str) -> (String, Option<i32>) {
    let trimmed = line.trim();
    let (command, comment) = match trimmed.find(" # ") {
        Some(at) => (trimmed[..at].trim(), Some(&trimmed[at + 3..])),
        None => (trimmed, None),
    };
    let exit = comment
        .and_then(|c| c.strip_prefix("exit "))
        .and_then(|c| c.chars().next())
        .and_then(|c| c.to_digit(10))
        .map(|d| d as i32);
    (command.to_string(), exit)
}

/// Runs one command line of a page through bash in `dir`, with the test's binary first on PATH.
fn run_shown(dir: &Path, command: &str) -> Output {
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    Command::new("bash")
        .args(["-c", &format!("set -o pipefail; {command}")])
        .current_dir(dir)
        .env("PATH", &path)
        .env("CI", "true")
        .env("NO_COLOR", "1")
        .env("ONNX_BCAST_CHARSET", "utf-8")
        .output()
        .unwrap()
}

/// Whether an exit code is what the page says: the code of `# exit N`, or without one a command that did its job.
fn exit_as_shown(code: i32, exit: Option<i32>) -> bool {
    match exit {
        Some(want) => code == want,
        None => code == 0 || code == 1,
    }
}

/// The pages: README.md and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A folder to run a page's commands in: `model.onnx`, `models/`, `fixtures/`, `docs/` and `onnx-bcast` on PATH.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = root().join("fixtures");
    std::fs::copy(fixtures.join("inference/slice_buffer_to_sequence.onnx"), dir.path().join("model.onnx")).unwrap();
    std::fs::create_dir(dir.path().join("models")).unwrap();
    for name in ["multidirectional_add_ok", "multidirectional_add_bad", "symbolic_batch"] {
        let to = dir.path().join("models").join(format!("{name}.onnx"));
        std::fs::copy(fixtures.join(format!("{name}.onnx")), to).unwrap();
    }
    symlink(&fixtures, &dir.path().join("fixtures"));
    symlink(&root().join("docs"), &dir.path().join("docs"));
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    symlink(Path::new(env!("CARGO_BIN_EXE_onnx-bcast")), &dir.path().join("bin/onnx-bcast"));
    dir
}

#[cfg(unix)]
fn symlink(from: &Path, to: &Path) {
    std::os::unix::fs::symlink(from, to).unwrap();
}

#[test]
fn every_command_the_readme_and_docs_show_runs_as_they_say() {
    let mut wrong = Vec::new();
    let mut ran = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let shown = page.strip_prefix(root()).unwrap().display().to_string();
        let dir = scratch();
        for (command, exit) in commands(&text) {
            if !command.starts_with("onnx-bcast") {
                if !OTHER_COMMANDS.iter().any(|(c, _)| *c == command) {
                    wrong.push(format!("{shown}: `{command}` is neither onnx-bcast nor a command a test runs"));
                }
                continue;
            }
            let out = run_shown(dir.path(), &command);
            ran += 1;
            let code = out.status.code().unwrap_or(-1);
            if !exit_as_shown(code, exit) {
                let stderr = String::from_utf8_lossy(&out.stderr);
                wrong.push(format!("{shown}: `{command}` exited {code}, documented {exit:?}: {stderr}"));
            }
        }
    }
    assert!(ran > 60, "only {ran} commands found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every transcript (```console) of README.md and docs/ prints what the page shows, line for line.
#[test]
fn every_transcript_the_readme_and_docs_show_prints_what_they_show() {
    let mut wrong = Vec::new();
    let mut ran = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let shown_page = page.strip_prefix(root()).unwrap().display().to_string();
        for (files, commands) in transcripts(&text) {
            let dir = scratch();
            for (name, from) in files {
                let file = from.strip_prefix("torch:").expect("a transcript's file comes from torch:FILE");
                let corpus = common::fetched_dir("corpus/torch_fetch.sh", "the PyTorch export corpus");
                symlink(&corpus.join(file), &dir.path().join(name));
            }
            for shown in commands {
                assert!(shown.command.starts_with("onnx-bcast "), "{shown_page}: `{}`", shown.command);
                let out = run_shown(dir.path(), &shown.command);
                ran += 1;
                let code = out.status.code().unwrap_or(-1);
                let printed = String::from_utf8_lossy(&out.stdout);
                if !exit_as_shown(code, shown.exit) || printed != shown.output {
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    wrong.push(format!(
                        "{shown_page}: `{}` exited {code} (documented {:?}) and printed\n{printed}where the page \
                         shows\n{}{stderr}",
                        shown.command, shown.exit, shown.output
                    ));
                }
            }
        }
    }
    assert!(ran >= 3, "only {ran} transcripts found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_readme_is_short_and_its_first_screen_gets_a_pip_user_to_a_finding() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.lines().count() <= 250, "README.md has {} lines", readme.lines().count());
    let first_screen: Vec<&str> = readme.lines().take(30).collect();
    let first_screen = first_screen.join("\n");
    for needed in ["pip install .", "onnx-bcast check model.onnx", "fixtures/multidirectional_add_bad.onnx"] {
        assert!(first_screen.contains(needed), "the first screen leaves out `{needed}`");
    }
    for page in pages().iter().skip(1) {
        let name = page.file_name().unwrap().to_str().unwrap();
        assert!(name == "README.md" || readme.contains(&format!("(docs/{name})")), "README.md links no docs/{name}");
    }
}

#[test]
fn transcripts_and_their_files_are_read() {
    let page = "<!-- transcript: b.onnx = torch:bert.onnx -->\n```console\n$ onnx-bcast check b.onnx  # exit 1\nb.onnx: x\nchecked\n$ onnx-bcast explain\n```\n";
    let (files, shown) = transcripts(page).pop().unwrap();
    assert_eq!(files, [("b.onnx".to_string(), "torch:bert.onnx".to_string())]);
    assert_eq!(
        shown,
        [
            Shown { command: "onnx-bcast check b.onnx".into(), exit: Some(1), output: "b.onnx: x\nchecked\n".into() },
            Shown { command: "onnx-bcast explain".into(), exit: None, output: String::new() },
        ]
    );
}

#[test]
fn commands_and_their_exit_comments_are_read() {
    let page = "text\n```sh\nonnx-bcast check a.onnx    # exit 1: why\n# a comment\n\ncargo test\n```\n```text\nx\n```";
    assert_eq!(commands(page), [("onnx-bcast check a.onnx".to_string(), Some(1)), ("cargo test".to_string(), None)]);
}

/// A heading's anchor as GitHub makes it: lower case, spaces as `-`, punctuation but `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The relative links of a page (`[text](target)`), outside code blocks and code spans.
fn links(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let outside_spans: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for part in outside_spans.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or_default();
            if !target.contains("://") && !target.is_empty() {
                out.push(target.to_string());
            }
        }
    }
    out
}

/// Every relative link of README.md and docs/ leads to a file of the repository, and a `#anchor` to a heading of it.
#[test]
fn every_link_of_the_readme_and_docs_leads_somewhere() {
    let mut wrong = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() { page.clone() } else { page.parent().unwrap().join(file) };
            let shown = page.strip_prefix(root()).unwrap().display().to_string();
            if !path.exists() {
                wrong.push(format!("{shown}: ({target}) leads to no file"));
                continue;
            }
            if !fragment.is_empty() {
                let linked = std::fs::read_to_string(&path).unwrap_or_default();
                let anchors: Vec<String> = linked
                    .lines()
                    .filter_map(|l| l.strip_prefix('#'))
                    .map(|h| anchor(h.trim_start_matches('#')))
                    .collect();
                if !anchors.iter().any(|a| a == fragment) {
                    wrong.push(format!("{shown}: ({target}) leads to no heading; there are {anchors:?}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn headings_become_githubs_anchors() {
    assert_eq!(anchor(" `--bind`"), "--bind");
    assert_eq!(anchor(" Conformance with ONNX's own shape inference"), "conformance-with-onnxs-own-shape-inference");
    assert_eq!(links("see [a](docs/a.md#b) and `[c](d)`\n```\n[e](f)\n```"), ["docs/a.md#b"]);
}

/// The project basics a user looks for (issue 28): the license the crate declares, in full; a changelog with the
/// crate's version; the versioning note it links.
#[test]
fn the_license_changelog_and_versioning_note_are_there() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(manifest.contains("license = \"Apache-2.0\""));
    let license = std::fs::read_to_string(root().join("LICENSE")).unwrap();
    assert!(license.contains("Apache License") && license.contains("Version 2.0, January 2004"));
    assert!(license.contains("END OF TERMS AND CONDITIONS"), "LICENSE holds the whole text");
    let changelog = std::fs::read_to_string(root().join("CHANGELOG.md")).unwrap();
    assert!(changelog.contains(&format!("## [{}]", env!("CARGO_PKG_VERSION"))), "CHANGELOG.md lacks this version");
    assert!(changelog.contains("## [Unreleased]") && changelog.contains("(docs/versioning.md)"));
}
