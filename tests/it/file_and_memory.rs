//! A model opened from its file (read through a `pread` window, large fields as views of the memory map) must be
//! the model decoded from the same bytes in memory, and its expansion read through the file must be the one read
//! from memory, byte for byte, also when written file to file. Run on every fixture, every malformed input, the
//! ONNX backend models, and generated models whose tensors straddle the window's and the copy's boundaries.

use crate::common;
use crate::oracle;

use std::io::Write;
use std::path::{Path, PathBuf};

use onnx_bcast::onnx::model::Model;
use prost::Message;

fn onnx_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx") && p.is_file())
        .collect();
    files.sort();
    files
}

fn assert_agree(models: &[PathBuf], what: &str) {
    let failures: Vec<String> = models
        .iter()
        .filter_map(|m| oracle::models::file_and_memory_disagree(m).map(|why| format!("  {}: {why}", m.display())))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} {what} read differently:\n{}",
        failures.len(),
        models.len(),
        failures.join("\n")
    );
    println!("{} {what}: file and memory agree", models.len());
}

#[test]
fn fixtures_and_malformed_inputs_read_the_same_from_file_and_memory() {
    let root = common::repo_root().join("fixtures");
    let mut models = onnx_files(&root);
    models.extend(onnx_files(&root.join("malformed")));
    assert!(models.len() > 90, "fixtures are missing: {}", models.len());
    assert_agree(&models, "fixtures and malformed inputs");
}

#[test]
fn backend_models_read_the_same_from_file_and_memory() {
    let models = common::backend_models(&common::backend_data_dir());
    assert_agree(&models, "ONNX backend models");
}

/// Tensors of every size around the thresholds (16 KiB views, 4 KiB first read, 1 MiB read-ahead and copy
/// chunk, 16 MiB map window), and a model cut short inside one of them.
#[test]
fn tensors_around_every_boundary_read_the_same() {
    use onnx_bcast::onnx::pb::{GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto};
    let sizes = [0, 1, 4095, 4096, 4097, 16383, 16384, 16385, 1 << 20, (1 << 20) + 3, (16 << 20) + 5, 7];
    let initializer: Vec<TensorProto> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| TensorProto {
            name: Some(format!("t{i}")),
            dims: vec![n as i64],
            data_type: Some(2),
            raw_data: Some(bytes::Bytes::from((0..n).map(|b| (b * 7 + i) as u8).collect::<Vec<u8>>())),
            ..Default::default()
        })
        .collect();
    // One broadcasting Add, so that expand has something to rewrite ahead of the tensors.
    let add = NodeProto {
        op_type: Some("Add".into()),
        input: smallvec::smallvec!["t1".into(), "x".into()],
        output: smallvec::smallvec!["y".into()],
        ..Default::default()
    };
    let x = ValueInfoProto { name: Some("x".into()), ..Default::default() };
    let graph = GraphProto { node: vec![add], initializer, input: vec![x], ..Default::default() };
    let opset = onnx_bcast::onnx::pb::OperatorSetIdProto { domain: Some(String::new()), version: Some(17) };
    let model = ModelProto { ir_version: Some(8), graph: Some(graph), opset_import: vec![opset], ..Default::default() };
    let bytes = model.encode_to_vec();
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.onnx");
    std::fs::File::create(&whole).unwrap().write_all(&bytes).unwrap();
    let cut = dir.path().join("cut.onnx");
    std::fs::File::create(&cut).unwrap().write_all(&bytes[..bytes.len() - (1 << 19)]).unwrap();
    assert!(Model::open(&whole).is_ok() && Model::open(&cut).is_err());
    assert_agree(&[whole, cut], "generated models");
}
