//! The Python package (`pyproject.toml`, `python/`): `scripts/python_wheel.sh` builds the wheel with maturin,
//! installs it into a fresh venv from binary wheels only, and runs the pytest suite (`python/tests`) against the
//! installed package, comparing it with this build's `onnx-bcast` binary. One test, so that `cargo test` (the
//! README's test command, and CI's) covers the wheel too.

use std::process::Command;

#[test]
fn python_package_suite_passes_against_the_installed_wheel() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/python_wheel.sh");
    let run = Command::new("bash")
        .arg(script)
        .env("ONNX_BCAST_BINARY", env!("CARGO_BIN_EXE_onnx-bcast"))
        .output()
        .expect("bash runs scripts/python_wheel.sh");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "scripts/python_wheel.sh failed ({}):\n{stdout}\n{stderr}", run.status);
    // pytest's last line: `N passed in …`, with no failure, error or skip beside it.
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    assert!(last.contains(" passed") && !last.contains("skipped") && !last.contains("failed"), "{last}");
    eprintln!("{stderr}{last}");
}
