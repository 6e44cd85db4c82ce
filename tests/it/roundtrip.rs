//! Decoding a model and re-encoding it must give back the file byte for byte: the rewriter's output may differ
//! from its input only where it means to. Checked over the whole ONNX backend test suite and over small models
//! generated with `onnx.helper` for schema features that suite does not use.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use onnx_bcast::onnx::model::{encode, Model};

/// Why a model did not round-trip, or `None` if it did.
fn roundtrip_failure(path: &Path) -> Option<String> {
    let model = match Model::open(path) {
        Ok(m) => m,
        Err(e) => return Some(format!("does not load: {e}")),
    };
    let original: &[u8] = model.bytes();
    let reencoded = encode(model.proto());
    if reencoded == original {
        return None;
    }
    let first =
        original.iter().zip(&reencoded).position(|(a, b)| a != b).unwrap_or(original.len().min(reencoded.len()));
    let window = |b: &[u8]| {
        let lo = first.saturating_sub(8);
        let hi = (first + 16).min(b.len());
        b.get(lo..hi).map(hex).unwrap_or_default()
    };
    Some(format!(
        "differs at byte {first} (file {} bytes, re-encoded {} bytes); file [{}], re-encoded [{}] (window starts at byte {})",
        original.len(),
        reencoded.len(),
        window(original),
        window(&reencoded),
        first.saturating_sub(8),
    ))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

fn check_all(models: &[PathBuf], what: &str) {
    let failures: Vec<(String, String)> =
        models.iter().filter_map(|p| roundtrip_failure(p).map(|why| (p.display().to_string(), why))).collect();
    eprintln!("round-trip: {} {what} models tested, {} failed", models.len(), failures.len());
    for (path, why) in &failures {
        eprintln!("  FAIL {path}: {why}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} {what} models do not re-encode byte-identical:\n{}",
        failures.len(),
        models.len(),
        failures.iter().map(|(p, w)| format!("  {p}: {w}")).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn onnx_written_models_reencode_byte_identical() {
    let data = common::backend_data_dir();
    let models = common::backend_models(&data);
    check_all(&models, "ONNX backend");
    println!("round-trip: {} ONNX backend models re-encode byte-identical", models.len());
}

/// Every case the generator is expected to write. Keeping the list here means a case that silently stops
/// being generated fails the test instead of going untested.
const GENERATED_CASES: &[&str] = &[
    "external_data",
    "external_data_default_location_explicit",
    "sparse_initializer",
    "local_functions",
    "training_info",
    "metadata_props_everywhere",
    "types_containers_and_dims",
    "type_denotation_on_optional",
    "type_denotation_on_sparse_tensor",
    "type_opaque",
    "tensor_data_fields",
    "attributes_of_every_kind",
    "quantization_annotation",
    "device_configurations",
    "nested_subgraphs_with_value_info",
    "empty_and_default_fields",
];

#[test]
fn helper_generated_models_reencode_byte_identical() {
    let python = common::venv_python();
    let script = common::repo_root().join("tests").join("data").join("gen_roundtrip_models.py");
    let dir = tempfile::tempdir().expect("cannot create a temporary directory");
    let out = Command::new(&python)
        .arg(&script)
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", python.display(), script.display()));
    assert!(
        out.status.success(),
        "{} failed ({}):\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let generated: Vec<&str> = stdout.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    assert_eq!(generated, GENERATED_CASES, "the generator wrote a different set of cases than this test expects");

    let models: Vec<PathBuf> = generated.iter().map(|c| dir.path().join(format!("{c}.onnx"))).collect();
    for m in &models {
        assert!(m.is_file(), "generator did not write {}", m.display());
    }
    check_all(&models, "helper-generated");
    println!("round-trip: {} helper-generated models re-encode byte-identical", models.len());
}
