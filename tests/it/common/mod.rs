//! Helpers shared by the integration tests: the ONNX backend test data and the reference Python environment, which
//! both come from `scripts/testdata.sh` (installed on first use; nothing here skips: if the data cannot be
//! fetched, the calling test panics with the script's own message).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The folders of the backend test data whose models the tests run over.
pub const BACKEND_FOLDERS: [&str; 4] = ["node", "simple", "pytorch-converted", "pytorch-operator"];

/// The codes of inference as a validator (issue 26): on models that run, none of them may fire (but for
/// conditions a test documents as true of its model).
pub const VALIDATION_CODES: [&str; 4] =
    ["shape-contradiction", "conditional-shape", "inexact-division", "initializer-mismatch"];

/// Root of the repository (the crate directory).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `onnx/backend/test/data` directory of the pinned `onnx` wheel, installing it on first call.
/// Runs `scripts/testdata.sh` at most once per process; panics with its stderr if it fails.
pub fn backend_data_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = repo_root().join("scripts").join("testdata.sh");
        let out = Command::new("bash")
            .arg(&script)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            panic!(
                "{} failed ({}); the ONNX backend test data could not be fetched, so this test cannot run.\n\
                 --- stderr ---\n{stderr}",
                script.display(),
                out.status
            );
        }
        let stdout = String::from_utf8(out.stdout).expect("scripts/testdata.sh printed non-UTF-8 output");
        let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(
            lines.len() == 1,
            "scripts/testdata.sh must print exactly one line (the data directory), got {lines:?}\n--- stderr ---\n{stderr}"
        );
        let dir = PathBuf::from(lines[0].trim());
        assert!(dir.is_absolute() && dir.join("node").is_dir(), "scripts/testdata.sh printed {}, which is not the backend test data", dir.display());
        dir
    })
    .clone()
}

/// The venv directory `scripts/testdata.sh` manages.
pub fn venv_dir() -> PathBuf {
    let cache = match std::env::var_os("ONNX_BCAST_CACHE") {
        Some(c) if !c.is_empty() => {
            let c = PathBuf::from(c);
            if c.is_absolute() {
                c
            } else {
                repo_root().join(c)
            }
        }
        _ => repo_root().join(".cache"),
    };
    cache.join("venv")
}

/// The venv's Python (with the pinned onnx, onnxruntime and numpy), installing it on first call.
pub fn venv_python() -> PathBuf {
    backend_data_dir(); // makes sure the venv exists and is complete
                        // The data directory is <venv>/lib/pythonX.Y/site-packages/onnx/backend/test/data; prefer deriving the
                        // venv from it so a relative ONNX_BCAST_CACHE resolved by the script agrees with ours.
    let data = backend_data_dir();
    let from_data = data.ancestors().nth(7).map(|v| v.join("bin").join("python"));
    let python = match from_data {
        Some(p) if p.exists() => p,
        _ => venv_dir().join("bin").join("python"),
    };
    assert!(python.exists(), "venv python {} does not exist", python.display());
    python
}

/// Every `model.onnx` under the node/, simple/, pytorch-converted/ and pytorch-operator/ folders of `dir`,
/// sorted. Panics if a folder is missing or the whole set is implausibly small.
pub fn backend_models(dir: &Path) -> Vec<PathBuf> {
    let mut models = Vec::new();
    for folder in BACKEND_FOLDERS {
        let root = dir.join(folder);
        assert!(root.is_dir(), "backend test data folder {} is missing", root.display());
        collect_models(&root, &mut models);
    }
    models.sort();
    assert!(models.len() > 1000, "only {} backend models found under {}", models.len(), dir.display());
    models
}

fn collect_models(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        let path = entry.path();
        let ty = entry.file_type().unwrap_or_else(|e| panic!("cannot stat {}: {e}", path.display()));
        if ty.is_dir() {
            collect_models(&path, out);
        } else if entry.file_name() == "model.onnx" {
            out.push(path);
        }
    }
}

/// The backend folder (`node`, `simple`, ...) a model path lies in, relative to the data directory.
pub fn backend_folder(data_dir: &Path, model: &Path) -> String {
    model
        .strip_prefix(data_dir)
        .ok()
        .and_then(|rel| rel.components().next())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_else(|| "?".to_string())
}

/// The real-model corpus: runs `corpus/fetch.sh` (idempotent) and returns the models folder it prints. Panics
/// when the corpus cannot be had: the tests that need it fail rather than skip.
pub fn corpus_dir() -> PathBuf {
    fetched_dir("corpus/fetch.sh", "the real-model corpus")
}

/// Runs a fetch script of the repository (`corpus/fetch.sh`, `corpus/torch_fetch.sh`) and returns the one absolute
/// directory it prints; panics (never skips) with the script's stderr when it fails or prints anything else.
pub fn fetched_dir(script: &str, what: &str) -> PathBuf {
    let path = repo_root().join(script);
    let out = Command::new("bash").arg(&path).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        panic!(
            "{} failed ({}); {what} could not be fetched, so this test cannot run.\n--- stderr ---\n{stderr}",
            path.display(),
            out.status
        );
    }
    let stdout = String::from_utf8(out.stdout).unwrap_or_else(|_| panic!("{script} printed non-UTF-8 output"));
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() == 1, "{script} must print exactly one line (the models dir), got {lines:?}\n{stderr}");
    let dir = PathBuf::from(lines[0].trim());
    assert!(dir.is_absolute() && dir.is_dir(), "{script} printed {}, which is not a directory", dir.display());
    dir
}

/// Runs a corpus study script (`scripts/NAME.py BIN MODELS OUT_JSON --figures corpus/FIGURES`) with `python` and
/// returns its JSON report and its standard output; panics with the script's stderr when it fails.
pub fn run_corpus_script(python: &Path, name: &str, models: &Path, figures: &str) -> (serde_json::Value, String) {
    let out_json = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.json"));
    let script = repo_root().join("scripts").join(format!("{name}.py"));
    let out = Command::new(python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_onnx-bcast"))
        .arg(models)
        .arg(&out_json)
        .arg("--figures")
        .arg(repo_root().join("corpus").join(figures))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scripts/{name}.py failed ({}):\n{stderr}", out.status);
    let text = std::fs::read_to_string(&out_json).unwrap_or_else(|e| panic!("cannot read {}: {e}", out_json.display()));
    let report = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", out_json.display()));
    (report, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every model in `fixtures/` (the fixtures of every rule's sites), opened, in the order of their paths.
pub fn fixture_models() -> Vec<(PathBuf, onnx_bcast::onnx::model::Model)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(repo_root().join("fixtures"))
        .expect("the fixtures folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    paths.sort();
    assert!(paths.len() > 20, "the fixtures are there");
    paths.into_iter().map(|p| (p.clone(), onnx_bcast::onnx::model::Model::open(&p).expect("a fixture loads"))).collect()
}

/// A node of the ONNX domain with one output: `op` named `name`, reading `inputs`.
pub fn named_node(op: &str, name: &str, inputs: &[&str], output: &str) -> onnx_bcast::onnx::pb::NodeProto {
    onnx_bcast::onnx::pb::NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|&s| s.into()).collect(),
        output: smallvec::smallvec![output.into()],
        ..Default::default()
    }
}

/// A float tensor's declaration (a graph input or output) of these sizes.
pub fn float_input(name: &str, dims: &[i64]) -> onnx_bcast::onnx::pb::ValueInfoProto {
    use onnx_bcast::onnx::pb::tensor_shape_proto::{dimension::Value, Dimension};
    use onnx_bcast::onnx::pb::{type_proto, TensorShapeProto, TypeProto, ValueInfoProto};
    let dim = dims.iter().map(|&d| Dimension { value: Some(Value::DimValue(d)), denotation: None }).collect();
    let tensor = type_proto::Tensor { elem_type: Some(1), shape: Some(TensorShapeProto { dim }) };
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto { tensor_type: Some(tensor), ..Default::default() }),
        ..Default::default()
    }
}

/// `graph` as a model of IR version 8 importing the ONNX domain at opset 17, encoded and decoded as `file` is.
pub fn opset17_model(file: &str, graph: onnx_bcast::onnx::pb::GraphProto) -> onnx_bcast::onnx::model::Model {
    use onnx_bcast::onnx::pb::{ModelProto, OperatorSetIdProto};
    use prost::Message;
    let m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        graph: Some(graph),
        ..Default::default()
    };
    onnx_bcast::onnx::model::Model::from_bytes(file, m.encode_to_vec().into()).expect("decodes")
}

/// The python a corpus's export used, as its `manifest.json` records it (the PyTorch and deployment corpora).
pub fn corpus_python(models: &Path) -> PathBuf {
    let path = models.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let manifest: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let python = PathBuf::from(manifest["python"].as_str().unwrap_or(""));
    assert!(python.is_file(), "{} names python {}, which does not exist", path.display(), python.display());
    python
}

pub mod cli;
pub mod gen;
