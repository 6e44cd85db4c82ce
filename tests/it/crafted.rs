//! Crafted models (`fixtures/crafted/*.pb`, written by `fixtures/crafted/generate.py`) through `check`, every write
//! option of `expand`, `fold --materialized` and `infer`, under a 4 GiB address-space limit and a 30 s timeout per run.
//!
//! Each model is copied alone into a fresh folder with the corpus's data files, a FIFO `fifo.bin` beside it and a
//! symlink `link.bin` to a FIFO outside its folder. Opening either FIFO blocks until a writer comes, which never
//! does: a run that opens a data file it must refuse (a FIFO, or anything outside the model's folder) hangs and is
//! killed at the timeout. Whatever the model, every run:
//!
//! - ends by itself with exit 0, 1 or 2, with nothing on stderr that shows a crash;
//! - leaves the model's folder exactly as it was (a same-folder OUT aside), and no temporary file anywhere;
//! - when `expand` fails (exit 2) or refuses the model (exit 1, "not rewritten") it writes nothing at all;
//!   otherwise it writes OUT (and the data files the option asks for, beside it).
//!
//! The table `EXPECTED` then says, for the models made to break a promise, what `check` and `expand` must answer.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::cli::{run_raw, RawRun};

const ADDRESS_SPACE_KIB: u64 = 4 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/crafted")
}

/// Runs the binary in `dir` under the address-space limit and the timeout.
fn run_limited(dir: &Path, args: &[&str]) -> RawRun {
    run_raw(dir, args, Some(ADDRESS_SPACE_KIB), TIMEOUT)
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

/// Every entry below `dir` (relative paths), with the contents of regular files.
fn snapshot(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                out.insert(format!("{name}/"), None);
                walk(root, &path, out);
            } else {
                out.insert(name, kind.is_file().then(|| std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A case's folder: `model/m.onnx` with the data files, the FIFOs and the symlink; `out/` empty.
fn case_folder(model: &Path) -> tempfile::TempDir {
    let case = tempfile::tempdir().unwrap();
    let dir = case.path().join("model");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir(case.path().join("out")).unwrap();
    for name in ["good.bin", "short.bin", "sub/data.bin"] {
        std::fs::copy(corpus().join("data").join(name), dir.join(name)).unwrap();
    }
    std::fs::copy(model, dir.join("m.onnx")).unwrap();
    mkfifo(&dir.join("fifo.bin"));
    mkfifo(&case.path().join("trap.fifo"));
    std::os::unix::fs::symlink("../trap.fifo", dir.join("link.bin")).unwrap();
    case
}

/// The runs every model gets: (name, arguments, OUT relative to the case folder, files the option may add).
fn runs() -> Vec<(&'static str, Vec<&'static str>, Option<&'static str>)> {
    vec![
        ("check", vec!["check", "model/m.onnx"], None),
        ("check-json", vec!["check", "--format", "json", "--strict", "model/m.onnx"], None),
        ("expand", vec!["expand", "model/m.onnx", "out/o.onnx"], Some("out/o.onnx")),
        ("expand-beside", vec!["expand", "model/m.onnx", "model/o.onnx"], Some("model/o.onnx")),
        ("inline", vec!["expand", "--inline-external-below", "64", "model/m.onnx", "out/i.onnx"], Some("out/i.onnx")),
        ("gather", vec!["expand", "--gather-external-data", "g.bin", "model/m.onnx", "out/g.onnx"], Some("out/g.onnx")),
        ("materialize", vec!["expand", "--materialize-constants", "model/m.onnx", "out/c.onnx"], Some("out/c.onnx")),
        ("fold", vec!["fold", "--materialized", "model/m.onnx", "out/f.onnx"], Some("out/f.onnx")),
        ("infer", vec!["infer", "model/m.onnx", "out/n.onnx"], Some("out/n.onnx")),
    ]
}

/// What one model gave: exit code per run name, and everything printed.
struct Outcome {
    codes: BTreeMap<&'static str, i32>,
    text: BTreeMap<&'static str, String>,
}

/// Runs one model through every run and returns what broke the rules.
fn run_model(model: &Path) -> Result<Outcome, Vec<String>> {
    let name = model.file_name().unwrap().to_string_lossy().into_owned();
    let case = case_folder(model);
    let mut failures = Vec::new();
    let mut outcome = Outcome { codes: BTreeMap::new(), text: BTreeMap::new() };
    for (label, args, out) in runs() {
        let before_model = snapshot(&case.path().join("model"));
        let before_out = snapshot(&case.path().join("out"));
        let r = run_limited(case.path(), &args);
        let what = format!("{name}: {label}: onnx-bcast {}", args.join(" "));
        let Some(code) = r.code else {
            let why = if r.took >= TIMEOUT { "hung (killed at 30 s): it opened a FIFO?" } else { "killed by a signal" };
            failures.push(format!("{what}: {why}\n{}", r.stderr));
            continue;
        };
        if !matches!(code, 0..=2) {
            failures.push(format!("{what}: exit {code}\n{}", r.stderr));
        }
        for sign in ["panicked", "internal error", "RUST_BACKTRACE", "memory allocation", "stack overflow"] {
            if r.stderr.contains(sign) {
                failures.push(format!("{what}: stderr shows a crash ({sign}):\n{}", r.stderr));
            }
        }
        let after_model = snapshot(&case.path().join("model"));
        let after_out = snapshot(&case.path().join("out"));
        let mut changed_model: Vec<&String> = after_model
            .iter()
            .filter(|(k, v)| before_model.get(*k) != Some(v))
            .map(|(k, _)| k)
            .chain(before_model.keys().filter(|k| !after_model.contains_key(*k)))
            .collect();
        // Exit 1 from `expand` is either a refusal (nothing written) or sites left implicit in a model written all
        // the same (the README's contract); exit 2 writes nothing.
        let refused = r.stderr.contains("nothing was written");
        let wrote = !label.starts_with("check") && (code == 0 || code == 1 && !refused);
        changed_model.retain(|k| !(out == Some("model/o.onnx") && k.as_str() == "o.onnx" && wrote));
        if !changed_model.is_empty() {
            failures.push(format!("{what}: exit {code} changed the model's folder: {changed_model:?}"));
        }
        let added: Vec<&String> = after_out.keys().filter(|k| !before_out.contains_key(*k)).collect();
        if !wrote {
            if !added.is_empty() {
                failures.push(format!("{what}: exit {code} left files behind: {added:?}\n{}", r.stderr));
            }
        } else if let Some(out) = out.and_then(|o| o.strip_prefix("out/")) {
            if !after_out.contains_key(out) {
                failures.push(format!("{what}: exit 0 without writing {out}"));
            }
        }
        if after_out.keys().chain(after_model.keys()).any(|k| k.contains(".onnx-bcast-")) {
            failures.push(format!("{what}: a temporary file is left: {:?}", after_out.keys().collect::<Vec<_>>()));
        }
        // Each run starts from an empty OUT folder.
        for k in after_out.keys().rev() {
            let p = case.path().join("out").join(k.trim_end_matches('/'));
            if k.ends_with('/') {
                let _ = std::fs::remove_dir(&p);
            } else {
                let _ = std::fs::remove_file(&p);
            }
        }
        outcome.codes.insert(label, code);
        outcome.text.insert(label, format!("{}{}", r.stdout, r.stderr));
    }
    if failures.is_empty() {
        Ok(outcome)
    } else {
        Err(failures)
    }
}

/// What the models made to break a promise must give: the name's prefix, `check`'s exit code and the code its
/// findings must include, and whether every `expand` must refuse the model (exit 1, the same code, nothing
/// written).
const EXPECTED: &[(&str, i32, &str, bool)] = &[
    ("ring_", 1, "graph-cycle", true),
    ("ring_behind_chain", 1, "graph-cycle", true),
    ("loop_body_cycle", 1, "graph-cycle", true),
    ("duplicate_output", 1, "duplicate-value", true),
    ("duplicate_graph_input", 1, "duplicate-value", true),
    ("duplicate_initializer", 1, "duplicate-value", true),
    ("undefined_read", 1, "undefined-value", true),
    ("if_undefined_outer", 1, "undefined-value", true),
    ("loop_undefined_outer", 1, "undefined-value", true),
    ("recursive_", 1, "recursive-function", true),
    ("missing_default_opset", 1, "missing-opset", true),
    ("ext_shape_fifo", 1, "external-data", true),
    ("ext_weights_fifo", 1, "external-data", true),
    ("ext_constant_fifo", 1, "external-data", true),
    ("ext_in_function_fifo", 1, "external-data", true),
    ("ext_shape_folder_", 1, "external-data", true),
    ("ext_weights_folder_", 1, "external-data", true),
    ("ext_shape_symlink_out", 1, "external-data", true),
    ("ext_shape_dev_", 1, "external-data", true),
    ("ext_shape_len_8g", 1, "tensor-data-mismatch", true),
    ("ext_weights_len_8g", 1, "tensor-data-mismatch", true),
    ("ext_shape_len_short", 1, "tensor-data-mismatch", true),
    ("ext_shape_len_2_64", 1, "tensor-data-mismatch", true),
    ("ext_shape_offset_past_eof", 1, "external-data", true),
    ("ext_weights_offset_past_eof", 1, "external-data", true),
    ("ext_weights_no_length_short", 1, "external-data", true),
    ("ext_weights_missing_file", 1, "external-data", true),
    ("fanout_fresh_26", 1, "nesting-too-deep", false),
    ("expression_", 0, "expression-too-large", false),
    ("sparse_initializer_bad_indices", 1, "tensor-data-mismatch", true),
    ("initializer_data_type_", 1, "tensor-data-mismatch", true),
    ("declared_twice", 0, "declared-shape-mismatch", false),
    ("ir_version_100", 0, "unknown-ir-version", false),
    ("training_info_bad", 1, "broadcast-violation", false),
];

#[test]
fn crafted_models_keep_every_promise() {
    let mut models: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        .collect();
    models.sort();
    assert!(models.len() >= 100, "only {} crafted models", models.len());
    let mut failures = Vec::new();
    let mut codes = BTreeMap::<i32, usize>::new();
    for model in &models {
        let name = model.file_stem().unwrap().to_string_lossy().into_owned();
        let outcome = match run_model(model) {
            Ok(outcome) => outcome,
            Err(f) => {
                failures.extend(f);
                continue;
            }
        };
        for &code in outcome.codes.values() {
            *codes.entry(code).or_default() += 1;
        }
        let Some(&(_, check_code, finding, refused)) = EXPECTED.iter().find(|(p, ..)| name.starts_with(p)) else {
            continue;
        };
        if outcome.codes["check"] != check_code || !outcome.text["check"].contains(&format!("[{finding}]")) {
            failures.push(format!("{name}: check must exit {check_code} with {finding}: {}", outcome.text["check"]));
        }
        if refused {
            for (label, _, _) in runs().iter().filter(|(l, ..)| !l.starts_with("check")) {
                let text = &outcome.text[label];
                if outcome.codes[label] != 1 || !text.contains(&format!("[{finding}]")) {
                    failures.push(format!("{name}: {label} must refuse with {finding}, exit 1: {text}"));
                }
            }
        }
    }
    eprintln!("{} crafted models, exit codes {codes:?}", models.len());
    assert!(failures.is_empty(), "{} failures:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// Odd but meaningful model fields, judged as onnxruntime judges them: a valid `sparse_initializer` defines its
/// value (onnxruntime runs the model; every command accepts it, and `shapes` gives it its dense dims), and a value
/// declared twice with different shapes is one `declared-shape-mismatch` for `check` and for `infer` alike (one
/// rule, `analysis/declared.rs`).
#[test]
fn odd_model_fields_are_judged_alike_by_every_command() {
    let sparse = corpus().join("sparse_initializer.pb");
    let outcome = run_model(&sparse).unwrap_or_else(|f| panic!("{}", f.join("\n")));
    // `check-json` runs --strict, where the broadcast of B is an implicit-broadcast error.
    for (label, code) in outcome.codes.iter().filter(|(l, _)| **l != "check-json") {
        assert_eq!(*code, 0, "sparse_initializer: {label}: {}", outcome.text[label]);
    }
    let shapes = run_limited(&corpus(), &["shapes", sparse.to_str().unwrap()]);
    assert!(shapes.stdout.contains("  B: float [3]\n"), "{}", shapes.stdout);

    let twice = corpus().join("declared_twice.pb");
    let outcome = run_model(&twice).unwrap_or_else(|f| panic!("{}", f.join("\n")));
    let check: Vec<&str> = outcome.text["check"].lines().filter(|l| l.contains("[declared-shape-mismatch]")).collect();
    assert_eq!(check.len(), 1, "{}", outcome.text["check"]);
    assert!(check[0].contains("'V'") && check[0].contains("declared [5, 7], inferred [2, 3]"), "{}", check[0]);
    let infer: Vec<&str> = outcome.text["infer"].lines().filter(|l| l.contains("declared-shape-mismatch")).collect();
    assert_eq!(infer.len(), 1, "{}", outcome.text["infer"]);
    assert!(infer[0].contains("main › value V: declared [5, 7], inferred [2, 3]"), "{}", infer[0]);
}

/// The graphs of `training_info` are checked, reading the main graph's values by name (`W`, an initializer of the
/// main graph, is no undefined value there), and the rewrites leave them exactly as they are.
#[test]
fn training_graphs_are_checked_and_left_alone_by_rewrites() {
    use prost::Message;
    let bad = corpus().join("training_info_bad.pb");
    let check = run_limited(&corpus(), &["check", "--no-config", bad.to_str().unwrap()]);
    assert_eq!(check.code, Some(1), "{}", check.stdout);
    assert!(
        check
            .stdout
            .contains("error[broadcast-violation] training_info[0].algorithm › update (Sub): W [3] and step [4]"),
        "{}",
        check.stdout
    );
    let ok = corpus().join("training_info_ok.pb");
    let check = run_limited(&corpus(), &["check", "--no-config", ok.to_str().unwrap()]);
    assert_eq!(check.code, Some(0), "{}", check.stdout);
    assert!(check.stdout.contains("3 sites"), "the main graph's site and the algorithm's two: {}", check.stdout);
    let out = tempfile::tempdir().unwrap();
    for (command, flag) in [("expand", None), ("fold", None), ("infer", Some("--overwrite-declared"))] {
        let written = out.path().join(format!("{command}.onnx"));
        let mut args = vec![command, bad.to_str().unwrap(), written.to_str().unwrap()];
        args.extend(flag);
        let r = run_limited(&corpus(), &args);
        assert!(matches!(r.code, Some(0 | 1)), "{command}: {}", r.stderr);
        let before = onnx_bcast::onnx::pb::ModelProto::decode(&*std::fs::read(&bad).unwrap()).unwrap();
        let after = onnx_bcast::onnx::pb::ModelProto::decode(&*std::fs::read(&written).unwrap()).unwrap();
        assert_eq!(before.training_info, after.training_info, "{command} changed the training graphs");
    }
}

/// Chains of size arithmetic that double their expression at each step, 10 to 1,000 steps
/// (`expression_{minmax,floor}_STEPS.pb`; bench/expression_chains.sh measures their time and memory): `check`
/// notes the budget once, every size `shapes` reports is within it, and `infer` writes no `dim_param` over its
/// limit, so the model grows by its new declarations only, each a few bytes whatever the chain's length.
#[test]
fn expression_chains_stay_within_the_budget() {
    use onnx_bcast::rewrite::annotate::MAX_DIM_PARAM;
    use prost::Message;
    let out = tempfile::tempdir().unwrap();
    for kind in ["minmax", "floor"] {
        for steps in [10, 30, 100, 300, 1000] {
            let model = corpus().join(format!("expression_{kind}_{steps}.pb"));
            let path = model.to_str().unwrap();
            let check = run_limited(&corpus(), &["check", "--no-config", path]);
            assert_eq!(check.code, Some(0), "{path}: {}{}", check.stdout, check.stderr);
            assert_eq!(check.stdout.matches("[expression-too-large]").count(), 1, "{path}: {}", check.stdout);
            let shapes = run_limited(&corpus(), &["shapes", "--format", "json", path]);
            let json: serde_json::Value = serde_json::from_str(&shapes.stdout).unwrap();
            for value in json["graphs"][0]["values"].as_array().unwrap() {
                for dim in value["shape"].as_array().into_iter().flatten().filter_map(|d| d.as_str()) {
                    let size = onnx_bcast::sizes::sym::parse(dim).map_or(0, |p| p.size_up_to(usize::MAX - 1));
                    assert!(
                        size <= onnx_bcast::sizes::sym::MAX_SIZE,
                        "{path}: {} has a dim of {size} nodes",
                        value["name"]
                    );
                }
            }
            let written = out.path().join("inferred.onnx");
            let infer = run_limited(&corpus(), &["infer", path, written.to_str().unwrap()]);
            assert_eq!(infer.code, Some(0), "{path}: {}", infer.stderr);
            let before = onnx_bcast::onnx::pb::ModelProto::decode(&*std::fs::read(&model).unwrap()).unwrap();
            let after = onnx_bcast::onnx::pb::ModelProto::decode(&*std::fs::read(&written).unwrap()).unwrap();
            let (g0, g1) = (before.graph.unwrap(), after.graph.unwrap());
            let added = g1.value_info.len() - g0.value_info.len();
            assert_eq!(added, g1.node.len() - 1, "{path}: a declaration per node output but the graph output's");
            for vi in g1.value_info.iter().chain(&g1.output) {
                let dims = vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref());
                for d in dims.map(|s| s.dim.as_slice()).unwrap_or_default() {
                    if let Some(onnx_bcast::onnx::pb::tensor_shape_proto::dimension::Value::DimParam(p)) = &d.value {
                        assert!(p.len() <= MAX_DIM_PARAM, "{path}: {} has a dim_param of {} bytes", vi.name(), p.len());
                    }
                }
            }
            let growth = std::fs::metadata(&written).unwrap().len() - std::fs::metadata(&model).unwrap().len();
            assert!(growth <= 24 * added as u64 + 1024, "{path}: {growth} bytes more for {added} declarations");
        }
    }
}

/// The committed corpus is exactly what the generator writes (needs the ONNX venv, as tests/it/malformed.rs does).
#[test]
fn corpus_is_what_the_generator_writes() {
    let python = common::venv_python();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(python)
        .arg(corpus().join("generate.py"))
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fresh = snapshot(dir.path());
    let mut committed = snapshot(&corpus());
    committed.remove("generate.py");
    assert_eq!(fresh.keys().collect::<Vec<_>>(), committed.keys().collect::<Vec<_>>());
    for (name, bytes) in &fresh {
        assert!(committed[name] == *bytes, "{name} differs from what generate.py writes");
    }
}
