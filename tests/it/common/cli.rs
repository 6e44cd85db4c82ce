//! Running the `onnx-bcast` binary from a test: one runner, so that every test judges a run the same way (a panic
//! or an `internal error` line fails the test whatever the test itself checks; a hang is a failure after the
//! timeout, not a stuck run).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// One run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}\n--- stdout ---\n{}--- stderr ---\n{}", self.code, self.stdout, self.stderr)
    }
}

/// Runs the binary from the repository's root.
pub fn run(args: &[&str]) -> Run {
    run_with(&super::repo_root(), args, &[], None)
}

/// Runs the binary in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Run {
    run_with(dir, args, &[], None)
}

/// Runs the binary in `dir` with these environment variables set and, if given, these bytes on its standard input.
/// `ONNX_BCAST_CHARSET` of the test's own environment is left out, so that output does not depend on the terminal
/// the tests were started from.
pub fn run_with(dir: &Path, args: &[&str], env: &[(&str, &str)], stdin: Option<&[u8]>) -> Run {
    let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_onnx-bcast"));
    command.args(args).current_dir(dir).env_remove("ONNX_BCAST_CHARSET").timeout(Duration::from_secs(120));
    for (k, v) in env {
        command.env(k, v);
    }
    if let Some(bytes) = stdin {
        command.write_stdin(bytes.to_vec());
    }
    let out = command.output().unwrap_or_else(|e| panic!("cannot run onnx-bcast {args:?}: {e}"));
    let stderr = String::from_utf8(out.stderr).expect("stderr is UTF-8");
    let code = out.status.code().unwrap_or_else(|| panic!("onnx-bcast {args:?} was killed by a signal\n{stderr}"));
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "onnx-bcast {args:?} panicked:\n{stderr}"
    );
    Run { code, stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"), stderr }
}

/// An empty folder of its own for one test's files, under the target folder's test scratch space.
pub fn scratch(group: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(group).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A run judged by the test itself: the exit status may be a signal's (a timeout kills), the output need not be
/// UTF-8 (shown lossily).
pub struct RawRun {
    pub status: std::process::ExitStatus,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Runs the binary in `dir`, killed after `timeout`; with `address_space_kib`, under that `ulimit -v`, through
/// `sh -c 'ulimit -v ...; exec ...'` (the shell replaces itself with the binary, so the limit, the timeout's kill and
/// the exit status are the binary's own; 125 if the shell could not set the limit).
pub fn run_raw(dir: &Path, args: &[&str], address_space_kib: Option<u64>, timeout: Duration) -> RawRun {
    let start = std::time::Instant::now();
    let mut command = match address_space_kib {
        Some(kib) => {
            let mut sh = assert_cmd::Command::new("sh");
            sh.arg("-c").arg(format!("ulimit -v {kib} || exit 125; exec \"$0\" \"$@\""));
            sh.arg(env!("CARGO_BIN_EXE_onnx-bcast"));
            sh
        }
        None => assert_cmd::Command::new(env!("CARGO_BIN_EXE_onnx-bcast")),
    };
    let out = command
        .args(args)
        .current_dir(dir)
        .timeout(timeout)
        .output()
        .unwrap_or_else(|e| panic!("cannot run onnx-bcast {args:?}: {e}"));
    RawRun {
        status: out.status,
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: start.elapsed(),
    }
}
