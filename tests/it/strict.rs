//! `--strict` means proof: every conditional or undecided site fails it, an explicit `Expand`
//! included, so a model `expand` rewrote passes it only when nothing about its broadcasts is left to a condition.

use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
}

fn fixture(name: &str) -> String {
    format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> (i32, String) {
    let out = cmd.output().expect("the binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn expanded(input: &str, dir: &Path) -> String {
    let out = dir.join("x.onnx");
    let (code, stdout) = run(bin().args(["expand", input]).arg(&out));
    assert_eq!(code, 0, "expand {input}: {stdout}");
    out.to_string_lossy().into_owned()
}

#[test]
fn strict_fails_a_conditional_site_that_expand_made_explicit() {
    let dir = tempfile::tempdir().unwrap();
    let x = expanded(&fixture("symbolic_batch.onnx"), dir.path());
    let (code, stdout) = run(bin().args(["check", "--strict", &x]));
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("error[conditional-broadcast]") && stdout.contains("(Expand)"), "{stdout}");
    // Without --strict the condition stays a warning.
    let (code, stdout) = run(bin().args(["check", &x]));
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("warning[conditional-broadcast]"), "{stdout}");
}

#[test]
fn strict_fails_an_expand_whose_shapes_are_not_known() {
    // fixtures/malformed: an Expand whose target is a run-time graph input.
    let path = fixture("malformed/missing_initializer_read.onnx");
    let (code, stdout) = run(bin().args(["check", "--strict", &path]));
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("error[conditional-broadcast]") || stdout.contains("error[undecided-broadcast]"),
        "{stdout}"
    );
}

#[test]
fn strict_passes_what_expand_rewrote_when_every_site_is_proven() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["multidirectional_add_ok.onnx", "symbolic_same.onnx", "unidirectional_gemm_trans_ok.onnx"] {
        let x = expanded(&fixture(name), dir.path());
        let (code, stdout) = run(bin().args(["check", "--strict", &x]));
        assert_eq!(code, 0, "{name}: {stdout}");
    }
}

/// `explain --list` says which codes only `--strict` (or `--warn`/`--deny`) reports, with the severity they
/// have there.
#[test]
fn explain_list_marks_the_strict_only_codes_with_their_severity() {
    let (code, stdout) = run(bin().args(["explain", "--list"]));
    assert_eq!(code, 0, "{stdout}");
    for strict_only in ["implicit-broadcast", "undecided-broadcast"] {
        let line = stdout.lines().find(|l| l.starts_with(strict_only)).expect("listed");
        assert!(line.contains("error") && line.contains("(only under --strict)"), "{line}");
    }
    let line = stdout.lines().find(|l| l.starts_with("conditional-broadcast")).expect("listed");
    assert!(line.contains("warning") && !line.contains("only under"), "{line}");
}

/// Counts agree with their nouns: "1 site", "1 node added", "1 Expand".
#[test]
fn expand_summary_counts_agree_with_their_nouns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.onnx");
    let (code, stdout) = run(bin().args(["expand", &fixture("multidirectional_add_ok.onnx")]).arg(&out));
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("1 of 1 site made explicit, 1 Expand inserted") && stdout.contains("1 node added"),
        "{stdout}"
    );
    assert!(!stdout.contains("node(s)") && !stdout.contains("1 nodes"), "{stdout}");
}
