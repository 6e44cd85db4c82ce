//! The binary against hostile inputs, under the limits a careful user would run an untrusted model with: a 4 GiB
//! address-space limit (`ulimit -v`) and a 30 s timeout.
//!
//! Every file of `fixtures/malformed/` (the corpus and its generator script, which is no model either) and every
//! fuzz regression input in `tests/fuzz_regressions/` goes through `check`, `shapes` and `expand`. Whatever the
//! input, the process ends by itself with exit 0, 1 or 2: never a signal (an allocation refused under the limit
//! aborts, a stack overflow is SIGSEGV), never 101 (an uncaught panic), never a caught panic ("internal error").
//! An exit 2 writes at most one line to stderr, and that line names the file.
//!
//! tests/it/malformed.rs says what each corpus file must give; this test only says that nothing brings the tool down.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::cli::{run_raw, RawRun};

/// 4 GiB, in the KiB that `ulimit -v` counts.
const ADDRESS_SPACE_KIB: u64 = 4 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file (not folder) directly in `dir`, sorted, as paths relative to the crate root.
fn files_in(dir: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("cannot list {dir}: {e}"))
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| format!("{dir}/{}", e.file_name().into_string().unwrap()))
        .collect();
    out.sort();
    out
}

/// Runs the binary from the crate root under the address-space limit and the timeout.
fn run_limited(args: &[&str]) -> RawRun {
    run_raw(&root(), args, Some(ADDRESS_SPACE_KIB), TIMEOUT)
}

/// The rules every run must keep; `Err` says which one it broke.
/// `paths`: the files the run is about; an exit-2 error line must name one of them.
fn judge(args: &[&str], paths: &[&str], r: &RawRun) -> Result<i32, String> {
    let what = format!("onnx-bcast {}", args.join(" "));
    use std::os::unix::process::ExitStatusExt;
    let Some(code) = r.status.code() else {
        let signal = r.status.signal().unwrap_or(0);
        let why =
            if r.took >= TIMEOUT { "timed out (killed after 30 s)".to_string() } else { format!("signal {signal}") };
        return Err(format!("{what}: {why}\nstderr:\n{}", r.stderr));
    };
    if code == 125 {
        return Err(format!("{what}: the shell could not set `ulimit -v {ADDRESS_SPACE_KIB}`"));
    }
    if !matches!(code, 0..=2) {
        return Err(format!("{what}: exit {code} (101 is an uncaught panic)\nstderr:\n{}", r.stderr));
    }
    for sign in ["panicked", "internal error", "RUST_BACKTRACE", "stack overflow", "memory allocation"] {
        if r.stderr.contains(sign) {
            return Err(format!("{what}: stderr shows a crash ({sign:?}):\n{}", r.stderr));
        }
    }
    if code == 2 {
        let lines: Vec<&str> = r.stderr.lines().collect();
        if lines.len() > 1 {
            return Err(format!("{what}: exit 2 with {} stderr lines:\n{}", lines.len(), r.stderr));
        }
        if let Some(line) = lines.first() {
            if !paths.iter().any(|p| line.contains(p)) {
                return Err(format!("{what}: the error line names none of {paths:?}: {line}"));
            }
        }
    }
    Ok(code)
}

fn hostile_inputs() -> Vec<String> {
    let mut inputs = files_in("fixtures/malformed");
    let regressions = root().join("tests/fuzz_regressions");
    if regressions.is_dir() {
        inputs.extend(files_in("tests/fuzz_regressions").into_iter().filter(|f| !f.ends_with("README.md")));
    }
    inputs
}

/// Every hostile input through check (text and JSON), shapes and expand; all failures are collected.
#[test]
fn hostile_inputs_never_bring_the_tool_down() {
    let out = tempfile::tempdir().unwrap();
    let inputs = hostile_inputs();
    assert!(inputs.len() >= 40, "only {} hostile inputs", inputs.len());
    let mut failures = Vec::new();
    let mut codes = std::collections::BTreeMap::<i32, usize>::new();
    for (i, path) in inputs.iter().enumerate() {
        let written = out.path().join(format!("{i}.onnx"));
        let written = written.to_str().unwrap();
        let commands: [Vec<&str>; 5] = [
            vec!["check", path],
            vec!["check", "--format", "json", "--strict", path],
            vec!["shapes", path],
            vec!["expand", "--materialize-constants", "--dry-run", path, written],
            vec!["expand", path, written],
        ];
        for args in &commands {
            // expand's error may be about the model read or the one written (it names the output when the
            // rewritten model cannot be written there, e.g. external data that cannot be carried along).
            let paths: &[&str] = if args[0] == "expand" { &[path, written] } else { &[path] };
            match judge(args, paths, &run_limited(args)) {
                Ok(code) => *codes.entry(code).or_default() += 1,
                Err(e) => failures.push(e),
            }
        }
        // What expand wrote is a model the tool can read back.
        if Path::new(written).exists() {
            let args = ["check", written];
            match judge(&args, &[written], &run_limited(&args)) {
                Ok(code) => *codes.entry(code).or_default() += 1,
                Err(e) => failures.push(format!("{path}, expanded: {e}")),
            }
        }
    }
    eprintln!("{} hostile inputs, {} runs, exit codes {codes:?}", inputs.len(), codes.values().sum::<usize>());
    assert!(failures.is_empty(), "{} runs broke the rules:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// The limit is real: a process that asks for more than 4 GiB under it is refused, so the test above would see a
/// tool that tried.
#[test]
fn the_address_space_limit_applies() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KIB} && ulimit -v"))
        .output()
        .expect("sh runs");
    assert!(out.status.success(), "ulimit -v is not available: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), ADDRESS_SPACE_KIB.to_string());
}
