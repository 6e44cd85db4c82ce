//! The promises a hostile model or a careless OUT tested one by one (docs/development.md, "Robustness", and the
//! output-path policy): function fan-out, rings, `--gather-external-data`, kills, panics, and what OUT may be. The crafted
//! corpus (tests/it/crafted.rs) covers the external-data and broken-graph models in bulk.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use onnx_bcast::onnx::pb::{GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, ValueInfoProto};
use prost::Message;

use crate::common::float_input;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_onnx-bcast")
}

fn crafted(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/crafted").join(name)
}

/// Runs the binary with a 60 s timeout (a hang fails the test instead of blocking it).
fn run_in(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    let out = assert_cmd::Command::new(bin())
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(dir)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or_else(|| panic!("{args:?} was killed (hung?)"));
    (code, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

fn add(a: &str, b: &str, out: &str) -> NodeProto {
    NodeProto {
        op_type: Some("Add".into()),
        name: Some(out.into()),
        input: smallvec::smallvec![a.into(), b.into()],
        output: smallvec::smallvec![out.into()],
        ..Default::default()
    }
}

fn model_bytes(node: Vec<NodeProto>, initializer: Vec<TensorProto>, input: Vec<ValueInfoProto>) -> Vec<u8> {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(13) }],
        graph: Some(GraphProto {
            name: Some("main".into()),
            node,
            initializer,
            input,
            output: vec![float_input("r0", &[])],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// Function fan-out: F_i calls F_{i+1} twice, 40 levels deep (2^40 calls unmemoised). Every call has the same
/// signature, so the body is walked once per level and the one broadcasting site in F39 is reported once.
#[test]
fn function_fan_out_is_walked_once_per_signature() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run_in(dir.path(), &["check", crafted("fanout_40.pb").to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("1 site: 0 same, 1 broadcast"), "{stdout}");
    let out = dir.path().join("o.onnx");
    let (code, stdout, stderr) =
        run_in(dir.path(), &["expand", crafted("fanout_24.pb").to_str().unwrap(), out.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("1 of 1 site made explicit"), "{stdout}");
}

/// Function fan-out, the budget: calls whose outputs hold fresh sizes cannot be memoised; the walk stops with a
/// finding instead of running for minutes or aborting.
#[test]
fn calls_past_the_budget_stop_with_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = run_in(dir.path(), &["check", crafted("fanout_fresh_26.pb").to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("error[nesting-too-deep]") && stdout.contains("unfold into more than"), "{stdout}");
}

/// Rings: a ring of 200,000 Adds is refused by `expand` with the finding `check` gives, exit 1, no OUT.
#[test]
fn expand_refuses_a_200k_ring_like_check() {
    let n = 200_000;
    let nodes = (0..n).map(|i| add(&format!("r{}", (i + n - 1) % n), "A", &format!("r{i}"))).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.onnx");
    std::fs::write(&path, model_bytes(nodes, Vec::new(), vec![float_input("A", &[2, 3])])).unwrap();
    let (code, stdout, _) = run_in(dir.path(), &["check", "ring.onnx"], &[]);
    assert_eq!(code, 1);
    let finding = stdout.lines().find(|l| l.contains("error[graph-cycle]")).expect("check reports the cycle");
    let finding = finding.split_once("error[").unwrap().1;
    let (code, _, stderr) = run_in(dir.path(), &["expand", "ring.onnx", "out.onnx"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(finding), "expand gives check's finding {finding:?}: {stderr}");
    assert_eq!(names_in(dir.path()), ["ring.onnx"]);
}

fn gather_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("gather")).unwrap();
    std::fs::copy(crafted("data/good.bin"), dir.path().join("gather/good.bin")).unwrap();
    std::fs::copy(crafted("ext_weights_ok.pb"), dir.path().join("gather/m.onnx")).unwrap();
    std::fs::write(dir.path().join("gather/notes.txt"), "keep me").unwrap();
    dir
}

/// `--gather-external-data FILE` never names IN, OUT or another existing file.
#[test]
fn gather_never_overwrites_in_out_or_another_file() {
    for (file, why) in [("m.onnx", "names the input model"), ("out.onnx", "names OUT itself"), ("notes.txt", "exists")]
    {
        let dir = gather_folder();
        let before: Vec<Vec<u8>> = names_in(&dir.path().join("gather"))
            .iter()
            .map(|n| std::fs::read(dir.path().join("gather").join(n)).unwrap())
            .collect();
        let args = ["expand", "--gather-external-data", file, "gather/m.onnx", "gather/out.onnx"];
        let (code, stdout, stderr) = run_in(dir.path(), &args, &[]);
        assert_eq!(code, 2, "{file}: {stdout}{stderr}");
        assert!(stderr.contains(why) && stderr.contains("gather/out.onnx"), "{file}: {stderr}");
        assert_eq!(names_in(&dir.path().join("gather")), ["good.bin", "m.onnx", "notes.txt"], "{file}");
        let after: Vec<Vec<u8>> = names_in(&dir.path().join("gather"))
            .iter()
            .map(|n| std::fs::read(dir.path().join("gather").join(n)).unwrap())
            .collect();
        assert_eq!(before, after, "{file}: a file changed");
    }
    // A new name is fine, and so is the data file the model itself references there (the rewrite owns it).
    for file in ["new.bin", "good.bin"] {
        let dir = gather_folder();
        let args = ["expand", "--gather-external-data", file, "gather/m.onnx", "gather/out.onnx"];
        let (code, stdout, stderr) = run_in(dir.path(), &args, &[]);
        assert_eq!(code, 0, "{file}: {stdout}{stderr}");
        let (code, stdout, _) = run_in(dir.path(), &["check", "gather/out.onnx"], &[]);
        assert_eq!(code, 0, "{file}: the gathered model checks clean: {stdout}");
    }
}

/// Kills: `kill -9` at any moment of a write leaves no file in OUT's folder but, at most, the complete
/// OUT. The model is large enough (64 MiB) that the kills land during the write. Where outputs are not written
/// through an unnamed file (other systems, or the feature `portable-write`), a killed run may also leave its
/// temporary `.onnx-bcast-XXXXXX.tmp`, and never an incomplete OUT.
#[test]
fn a_killed_expand_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let weights = TensorProto {
        name: Some("W".into()),
        dims: vec![16 << 20],
        data_type: Some(1),
        raw_data: Some(vec![7u8; 64 << 20].into()),
        ..Default::default()
    };
    let nodes = vec![add("A", "W", "r0")];
    std::fs::write(dir.path().join("m.onnx"), model_bytes(nodes, vec![weights], vec![float_input("A", &[1])])).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for (i, delay) in [0u64, 2, 5, 10, 20, 40, 80, 120].into_iter().enumerate() {
        let target = out.join(format!("o{i}.onnx"));
        let mut child = Command::new(bin())
            .args(["expand", "m.onnx", target.to_str().unwrap()])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        child.kill().unwrap();
        child.wait().unwrap();
        for name in names_in(&out) {
            let temporary = name.starts_with(".onnx-bcast-") && name.ends_with(".tmp");
            if temporary && !onnx_bcast::sys::platform::UNNAMED_TEMPORARY_FILES {
                std::fs::remove_file(out.join(&name)).unwrap();
                continue;
            }
            assert_eq!(name, format!("o{i}.onnx"), "killed after {delay} ms: {name} is left behind");
            let len = std::fs::metadata(out.join(&name)).unwrap().len();
            assert!(len > 64 << 20, "killed after {delay} ms: OUT is there but incomplete ({len} bytes)");
            std::fs::remove_file(out.join(&name)).unwrap();
        }
    }
}

/// Panics: a panic prints one `internal error` line naming the model and the place, inside the
/// per-model guard (the run goes on) and outside it (exit 2, never 101 with nothing said).
#[test]
fn a_panic_prints_one_internal_error_line_naming_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = crafted("chain_1.pb");
    let model = model.to_str().unwrap();
    // A second model (one path named twice is checked once): the guard catches each model's panic on its own.
    let other = dir.path().join("other.pb");
    std::fs::copy(model, &other).unwrap();
    let other = other.to_str().unwrap().to_string();
    for (place, args) in [
        ("check", vec!["check", model, other.as_str()]),
        ("render", vec!["check", model]),
        ("expand", vec!["expand", model, "o.onnx"]),
    ] {
        let (code, stdout, stderr) = run_in(dir.path(), &args, &[("ONNX_BCAST_TEST_PANIC", place)]);
        assert_eq!(code, 2, "{place}: {stderr}");
        // In text, a model that could not be checked is reported on stdout in its place; elsewhere on stderr.
        let lines: Vec<&str> = stdout.lines().chain(stderr.lines()).filter(|l| l.contains("internal error")).collect();
        let expected = if place == "check" { 2 } else { 1 };
        assert_eq!(lines.len(), expected, "{place}: one line per model: {stdout}{stderr}");
        for line in lines {
            assert!(line.contains(model) || line.contains(&other), "{place}: the line names the model: {line}");
            assert!(line.contains(&format!("test panic at {place} (at src/")), "{place}: and the place: {line}");
        }
        assert_eq!(stderr.lines().filter(|l| !l.contains("internal error")).count(), 0, "{place}: {stderr}");
    }
    std::fs::remove_file(&other).unwrap();
    assert_eq!(names_in(dir.path()), Vec::<String>::new());
}

/// External data paths: `sub/../good.bin` stays inside the folder and is read like `good.bin`.
#[test]
fn a_dotdot_that_stays_inside_the_folder_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(crafted("data/good.bin"), dir.path().join("good.bin")).unwrap();
    for name in ["ext_shape_sub_dotdot.onnx", "ext_shape_ok.onnx"] {
        std::fs::copy(crafted(&name.replace(".onnx", ".pb")), dir.path().join(name)).unwrap();
        let (code, stdout, stderr) = run_in(dir.path(), &["check", name], &[]);
        assert_eq!(code, 0, "{stdout}{stderr}");
        assert!(stdout.contains(" 0 violations, 0 conditional, 0 unknown"), "the shape is read: {stdout}");
    }
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let (code, stdout, stderr) = run_in(dir.path(), &["expand", "ext_shape_sub_dotdot.onnx", "out/o.onnx"], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(names_in(&dir.path().join("out")), ["good.bin", "o.onnx"], "the data is carried to its plain place");
}

/// What OUT may be, and messages that name OUT (never a temporary name).
#[test]
fn out_paths_follow_one_policy_and_name_out() {
    let dir = tempfile::tempdir().unwrap();
    let model = crafted("chain_2.pb");
    let model = model.to_str().unwrap();
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    for (out, phrase) in [
        ("missing/o.onnx", "the folder 'missing' does not exist"),
        ("folder", "it is a folder"),
        ("dangling.onnx", "which does not exist"),
    ] {
        if out == "dangling.onnx" {
            std::os::unix::fs::symlink("nowhere/x.onnx", dir.path().join(out)).unwrap();
        }
        let (code, _, stderr) = run_in(dir.path(), &["expand", model, out], &[]);
        assert_eq!(code, 2, "{out}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{out}: {stderr}");
        assert!(stderr.contains(&format!("error: {out}: cannot write")) && stderr.contains(phrase), "{out}: {stderr}");
        assert!(!stderr.contains(".tmp"), "{out}: {stderr}");
    }
    assert!(!dir.path().join("missing").exists(), "OUT's folder is never created");
    // `-` writes the model to stdout (and the summary to stderr).
    let (code, _, stderr) = run_in(dir.path(), &["expand", model, "-"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("2 of 2 sites made explicit"), "the summary goes to stderr: {stderr}");
    let out = assert_cmd::Command::new(bin()).args(["expand", model, "-"]).output().unwrap();
    std::fs::write(dir.path().join("from_stdout.onnx"), &out.stdout).unwrap();
    let (code, stdout, _) = run_in(dir.path(), &["check", "--strict", "from_stdout.onnx"], &[]);
    assert_eq!(code, 0, "the model on stdout is the rewritten one: {stdout}");
    // A symlink OUT: the file it points to is replaced, the link stays.
    std::fs::write(dir.path().join("target.onnx"), b"old").unwrap();
    std::os::unix::fs::symlink("target.onnx", dir.path().join("link.onnx")).unwrap();
    let (code, _, stderr) = run_in(dir.path(), &["expand", model, "link.onnx"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(std::fs::symlink_metadata(dir.path().join("link.onnx")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(dir.path().join("target.onnx")).unwrap(), out.stdout);
}

/// An OUT that is a FIFO is written through, not replaced by a regular file.
#[test]
fn an_out_that_is_a_fifo_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let (code, _, stderr) = run_in(dir.path(), &["expand", crafted("chain_2.pb").to_str().unwrap(), "pipe"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let through = reader.join().unwrap();
    let direct = assert_cmd::Command::new(bin())
        .args(["expand", crafted("chain_2.pb").to_str().unwrap(), "-"])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(through, direct);
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo_like(), "the FIFO is still a FIFO");
}

trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}

impl FifoLike for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        std::os::unix::fs::FileTypeExt::is_fifo(self)
    }
}

/// Without the `verify` feature, `--verify` is not offered in `--help`.
#[cfg(not(feature = "verify"))]
#[test]
fn verify_is_hidden_without_the_feature() {
    let out = assert_cmd::Command::new(bin()).args(["expand", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let offered = help.lines().any(|l| l.trim_start().starts_with("--verify"));
    assert!(help.contains("--dry-run") && !offered, "{help}");
}
