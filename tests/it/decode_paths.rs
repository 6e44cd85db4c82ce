//! The loader's fast path for nodes and initializers (`onnx::decode`) against prost's generated decoding, on every
//! model the tests have: the fixtures and malformed inputs, the ONNX backend models, and the real-model, deployment
//! and PyTorch corpora. Each model is decoded by prost from its bytes, by the loader from its file (the `pread`
//! window, initializers on the fast path too) and by the loader from memory: the same model, or the same error.

use crate::common;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use onnx_bcast::onnx::decode::{decode_model, merge_model};
use onnx_bcast::onnx::pb::ModelProto;
use onnx_bcast::onnx::source::DecodeFailure;
use prost::Message;

/// Every `.onnx` file under `dir`, at any depth.
fn onnx_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "onnx") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Why the three decodings of `path` disagree, if they do. Models are compared encoded (a NaN is not equal to
/// itself), errors by their words.
fn disagreement(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).unwrap();
    let show = |r: Result<ModelProto, String>| r.map(|m| m.encode_to_vec());
    let reference = show(ModelProto::decode(bytes.as_slice()).map_err(|e| e.to_string()));
    let file = std::fs::File::open(path).unwrap();
    let map =
        if bytes.is_empty() { Bytes::new() } else { Bytes::from_owner(unsafe { memmap2::Mmap::map(&file) }.unwrap()) };
    let from_file = show(decode_model(&file, &map).map_err(|e| match e {
        DecodeFailure::Decode(e) => e.to_string(),
        DecodeFailure::Io(e) => format!("io: {e}"),
    }));
    let mut in_memory = ModelProto::default();
    let in_memory =
        show(merge_model(&mut in_memory, Bytes::from(bytes), false).map(|_| in_memory).map_err(|e| e.to_string()));
    let differs = |what: &str, r: &Result<Vec<u8>, String>| match (r, &reference) {
        (Ok(a), Ok(b)) if a == b => None,
        (Err(a), Err(b)) if a == b => None,
        (Ok(_), Ok(_)) => Some(format!("{what}: a different model")),
        (a, b) => Some(format!("{what}: {:?} against prost's {:?}", a.as_ref().err(), b.as_ref().err())),
    };
    differs("from the file", &from_file).or_else(|| differs("from memory", &in_memory))
}

fn assert_agree(models: &[PathBuf], what: &str, at_least: usize) {
    assert!(models.len() >= at_least, "{what}: {} models, expected at least {at_least}", models.len());
    let failures: Vec<String> =
        models.iter().filter_map(|m| disagreement(m).map(|why| format!("  {}: {why}", m.display()))).collect();
    assert!(
        failures.is_empty(),
        "{} of {} {what} decode differently:\n{}",
        failures.len(),
        models.len(),
        failures.join("\n")
    );
    println!("{} {what}: the loader decodes what prost decodes", models.len());
}

#[test]
fn fixtures_and_malformed_inputs_decode_as_prost_decodes_them() {
    assert_agree(&onnx_files_under(&common::repo_root().join("fixtures")), "fixtures and malformed inputs", 90);
}

#[test]
fn backend_models_decode_as_prost_decodes_them() {
    assert_agree(&common::backend_models(&common::backend_data_dir()), "ONNX backend models", 1000);
}

#[test]
fn corpus_models_decode_as_prost_decodes_them() {
    assert_agree(&onnx_files_under(&common::corpus_dir()), "real models", 30);
    let deploy = common::fetched_dir("corpus/deploy_fetch.sh", "the deployment corpus");
    assert_agree(&onnx_files_under(&deploy), "deployment models", 60);
    let torch = common::fetched_dir("corpus/torch_fetch.sh", "the PyTorch export corpus");
    assert_agree(&onnx_files_under(&torch), "PyTorch exports", 100);
}
