//! `check` on a model with 1 GB of weights must not copy them: tensor data is never read, and the process stays
//! far smaller than the file.
//!
//! It is measured twice: right after the model is written, and after its pages were dropped from the page cache and
//! the file read once with `read()`, as `cp`, a download or `onnx.load` leave it. On Linux 6.x that second state
//! holds the file in large folios, and a reader that so much as touches each tensor's header through a memory map
//! gets every folio around a header mapped into its RSS (a build that did peaked at 43% of this file).
//!
//! The child's peak resident set size comes from `wait4`. On Linux it includes what the spawning process had
//! resident when the child was started (exec records the old address space's peak), so the test streams the
//! model to disk rather than building it, keeping its own memory to a few MiB.

#![cfg(target_os = "linux")]

// A test binary of its own: a child's peak RSS (`ru_maxrss`) counts the memory of the process that spawned it, as
// Linux keeps the high-water mark across `exec`, so the child is spawned from a small test process, not from the
// one binary of tests/it/, whose other tests hold models of their own at the same time.
#[path = "it/common/mod.rs"]
mod common;

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::gen::{write_synthetic, SyntheticSpec};

/// The child's peak RSS must stay under this fraction of the file size.
const MAX_RSS_FRACTION: f64 = 0.10;

struct ChildRun {
    exit_code: Option<i32>,
    stdout: String,
    peak_rss_bytes: u64,
    wall: Duration,
}

/// Runs `command` to completion and reads its peak RSS from `wait4`.
#[allow(clippy::zombie_processes)] // Reaped by wait4, which std's `Child::wait` cannot replace.
fn run_measured(command: &mut Command) -> ChildRun {
    let start = Instant::now();
    let mut child = command.stdout(Stdio::piped()).spawn().expect("spawn the child");
    let mut stdout = String::new();
    // Read to the end before waiting, so that a chatty child cannot block on a full pipe.
    child.stdout.take().expect("piped").read_to_string(&mut stdout).expect("read the child's output");
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own unwaited child; status and usage point to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let wall = start.elapsed();
    let exit_code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    // ru_maxrss is in KiB on Linux.
    ChildRun { exit_code, stdout, peak_rss_bytes: usage.ru_maxrss as u64 * 1024, wall }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

fn write_model(spec: &SyntheticSpec, path: &Path) -> u64 {
    let mut file = File::create(path).expect("create the model file");
    let written = write_synthetic(spec, &mut file).expect("write the model");
    drop(file);
    assert_eq!(std::fs::metadata(path).unwrap().len(), written);
    written
}

#[test]
fn check_does_not_copy_tensor_data() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("gigabyte.onnx");
    // 200 × [1280, 1024] float32 = 1000 MiB (1.05 GB) of initializers, 20,000 broadcasting nodes; clean by construction.
    let spec = SyntheticSpec::gigabyte(1);
    assert_eq!(spec.large_bytes(), 1_048_576_000);

    let start = Instant::now();
    let size = write_model(&spec, &path);
    let generated = start.elapsed();

    println!(
        "model: {} ({} bytes, {:.1} MiB), written in {:.2} s",
        path.display(),
        size,
        mib(size),
        generated.as_secs_f64()
    );
    let just_written = run_measured(Command::new(env!("CARGO_BIN_EXE_onnx-bcast")).arg("check").arg(&path));
    evict_and_read(&path);
    let read_back = run_measured(Command::new(env!("CARGO_BIN_EXE_onnx-bcast")).arg("check").arg(&path));
    std::fs::remove_file(&path).expect("delete the model");

    for (state, run) in [("just written", just_written), ("read back with read()", read_back)] {
        let ratio = run.peak_rss_bytes as f64 / size as f64;
        println!(
            "check, {state}: exit {:?} in {:.2} s, peak RSS {} bytes ({:.1} MiB), {:.2}% of the file (bound {:.0}%)",
            run.exit_code,
            run.wall.as_secs_f64(),
            run.peak_rss_bytes,
            mib(run.peak_rss_bytes),
            ratio * 100.0,
            MAX_RSS_FRACTION * 100.0
        );
        print!("check output: {}", run.stdout);
        assert_eq!(run.exit_code, Some(0), "check should find the synthetic model clean:\n{}", run.stdout);
        assert!(run.stdout.contains("20000 sites"), "every node is a site:\n{}", run.stdout);
        assert!(
            ratio < MAX_RSS_FRACTION,
            "{state}: check's peak RSS is {:.1} MiB, {:.1}% of the {:.1} MiB model: tensor data was copied, read or mapped",
            mib(run.peak_rss_bytes),
            ratio * 100.0,
            mib(size)
        );
    }
}

/// Drops the file's pages from the page cache (they are clean once synced) and reads it through once, so that the
/// cache holds it the way `read()` leaves it. Needs no privileges, unlike dropping the whole cache.
fn evict_and_read(path: &Path) {
    use std::os::fd::AsRawFd;
    let mut file = File::open(path).expect("open the model");
    file.sync_all().expect("sync the model");
    // SAFETY: a valid open descriptor; the advice only concerns the page cache.
    let advised = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(advised, 0, "posix_fadvise: {}", std::io::Error::from_raw_os_error(advised));
    let mut buffer = vec![0u8; 1 << 20];
    while file.read(&mut buffer).expect("read the model") > 0 {}
}

/// `expand` plans each node as the analysis walks it and splices the plan into the original bytes: what it holds
/// beyond what `check` holds is what it adds (the new inputs of each rewritten node, the nodes inserted, its
/// summary), never a second copy of the model or of the analysis. Issue 29 bounds it at twice `check`'s peak, on
/// the 100,000-node model of the benchmarks (`bench/run.sh`'s `nodes_100000`: every node rewritten, 10,000
/// Expands inserted). Before the plan was made during the walk, expand peaked at 2.8 times check's.
#[test]
fn expand_of_a_large_graph_peaks_within_twice_check() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("nodes_100000.onnx");
    let spec = SyntheticSpec {
        large_initializers: 0,
        large_dims: vec![8, 64],
        nodes: 100_000,
        small_initializers: 10_000,
        seed: 1,
        opset: 17,
    };
    write_model(&spec, &path);
    let bin = env!("CARGO_BIN_EXE_onnx-bcast");
    let check = run_measured(Command::new(bin).arg("check").arg(&path));
    assert_eq!(check.exit_code, Some(0), "check should find the model clean:\n{}", check.stdout);
    let out = dir.path().join("expanded.onnx");
    let expand = run_measured(Command::new(bin).args(["expand", "--quiet"]).arg(&path).arg(&out));
    assert_eq!(expand.exit_code, Some(0), "expand:\n{}", expand.stdout);
    assert!(
        expand.stdout.contains("100000 of 100000 sites made explicit"),
        "every node is rewritten:\n{}",
        expand.stdout
    );
    let ratio = expand.peak_rss_bytes as f64 / check.peak_rss_bytes as f64;
    println!(
        "check {:.1} MiB in {:.2} s, expand {:.1} MiB in {:.2} s: {ratio:.2}x",
        mib(check.peak_rss_bytes),
        check.wall.as_secs_f64(),
        mib(expand.peak_rss_bytes),
        expand.wall.as_secs_f64()
    );
    assert!(ratio <= 2.0, "expand's peak RSS is {ratio:.2} times check's (bound 2)");
}
