//! External data: small integer tensors kept outside the file are read for shape inference, locations that leave
//! the model's folder are refused without being opened, and `expand` keeps references valid beside OUT.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use onnx_bcast::onnx::pb::{
    tensor_proto::DataLocation, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto,
    TensorProto,
};
use prost::Message;

use crate::common::float_input;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_onnx-bcast")
}

fn external(name: &str, dims: &[i64], data_type: i32, location: &str, offset: u64, length: u64) -> TensorProto {
    let entry = |k: &str, v: String| StringStringEntryProto { key: Some(k.into()), value: Some(v) };
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(data_type),
        data_location: Some(DataLocation::External as i32),
        external_data: vec![
            entry("location", location.into()),
            entry("offset", offset.to_string()),
            entry("length", length.to_string()),
        ],
        ..Default::default()
    }
}

/// `Y = Expand(X, S) + W`: S (int64 [2] = [4, 3]) and W (float [4, 3]) live in `location`.
fn model(location: &str) -> Vec<u8> {
    let node = |op: &str, inputs: &[&str], out: &str| NodeProto {
        op_type: Some(op.into()),
        name: Some(out.into()),
        input: inputs.iter().map(|&s| s.into()).collect(),
        output: smallvec::smallvec![out.into()],
        ..Default::default()
    };
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(13) }],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: vec![node("Expand", &["X", "S"], "E"), node("Add", &["E", "W"], "Y")],
            initializer: vec![external("S", &[2], 7, location, 0, 16), external("W", &[4, 3], 1, location, 16, 48)],
            input: vec![float_input("X", &[1, 3])],
            output: vec![float_input("Y", &[4, 3])],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

fn side_file() -> Vec<u8> {
    let mut bytes: Vec<u8> = [4i64, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    bytes.extend((0..12).flat_map(|i| (i as f32).to_le_bytes()));
    bytes
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin()).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn json(path: &Path) -> serde_json::Value {
    let (_, stdout, _) = run(&["check", "--format", "json", path.to_str().unwrap()]);
    serde_json::from_str(stdout.lines().next().unwrap()).unwrap()
}

#[test]
fn small_external_integer_tensors_feed_shape_inference() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("weights.bin"), side_file()).unwrap();
    let path = dir.path().join("m.onnx");
    std::fs::write(&path, model("weights.bin")).unwrap();
    let report = json(&path);
    let expand = report["sites"].as_array().unwrap().iter().find(|s| s["op"] == "Expand").unwrap().clone();
    assert_eq!(expand["output_shape"], serde_json::json!([4, 3]), "{report}");
    let add = report["sites"].as_array().unwrap().iter().find(|s| s["op"] == "Add").unwrap().clone();
    assert_eq!(add["verdict"], "same", "{report}");
}

#[test]
fn a_missing_external_file_is_reported_when_its_values_are_needed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.onnx");
    std::fs::write(&path, model("absent.bin")).unwrap();
    let (code, stdout, _) = run(&["check", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("error[external-data]") && stdout.contains("absent.bin") && stdout.contains("missing"),
        "{stdout}"
    );
}

#[test]
fn offsets_beyond_the_file_end_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("short.bin"), [0u8; 8]).unwrap();
    let path = dir.path().join("m.onnx");
    std::fs::write(&path, model("short.bin")).unwrap();
    let (code, stdout, _) = run(&["check", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("runs past the end"), "{stdout}");
}

/// The escaping location names a FIFO: opening it for reading would block forever, so a run that finishes
/// proves it was never opened.
#[test]
fn locations_outside_the_model_folder_are_never_opened() {
    let root = tempfile::tempdir().unwrap();
    let models = root.path().join("models");
    std::fs::create_dir(&models).unwrap();
    let fifo = root.path().join("trap.bin");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink(&fifo, models.join("link.bin")).unwrap();
    std::fs::create_dir(root.path().join("out")).unwrap();
    for location in ["../trap.bin", fifo.to_str().unwrap(), "link.bin"] {
        let path = models.join("m.onnx");
        std::fs::write(&path, model(location)).unwrap();
        for args in [
            vec!["check", path.to_str().unwrap()],
            vec!["expand", path.to_str().unwrap(), root.path().join("out/o.onnx").to_str().unwrap()],
        ] {
            let mut child =
                Command::new(bin()).args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
            let start = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if start.elapsed() > Duration::from_secs(20) {
                    child.kill().unwrap();
                    panic!("{args:?} with location {location} hung: it opened the FIFO");
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let out = child.wait_with_output().unwrap();
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(text.contains("refused"), "{location}: {args:?}: {text}");
            assert_ne!(status.code(), Some(0), "{location}: {args:?}");
        }
        assert!(!root.path().join("out/o.onnx").exists(), "a refused model is not written");
    }
}

#[test]
fn expand_into_another_folder_carries_the_external_files_along() {
    let root = tempfile::tempdir().unwrap();
    let (src, dst) = (root.path().join("src"), root.path().join("dst"));
    std::fs::create_dir_all(src.join("data")).unwrap();
    // OUT's folder must exist; the folder the location names inside it is made.
    std::fs::create_dir(&dst).unwrap();
    std::fs::write(src.join("data/weights.bin"), side_file()).unwrap();
    // X [1, 3] + W [4, 3] broadcasts: expand has something to do.
    let path = src.join("m.onnx");
    std::fs::write(&path, model("data/weights.bin")).unwrap();
    let out = dst.join("m.onnx");
    let (code, stdout, stderr) = run(&["expand", path.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(std::fs::read(dst.join("data/weights.bin")).unwrap(), side_file());
    // The rewritten model reads its shape tensor from the copy.
    let report = json(&out);
    assert_eq!(report["summary"]["errors"], 0, "{report}");
    // In the same folder, nothing is copied and the references stay as they are.
    let beside = src.join("m2.onnx");
    let (code, _, _) = run(&["expand", path.to_str().unwrap(), beside.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_dir(&src).unwrap().count(), 3, "m.onnx, m2.onnx and data/");
}

fn expand_with(path: &Path, out: &Path, options: onnx_bcast::rewrite::expand::ExpandOptions) -> Vec<String> {
    let model = onnx_bcast::onnx::model::Model::open(path).unwrap();
    let (plan, pieces) = onnx_bcast::rewrite::expand::expand_model(&model, options).unwrap();
    onnx_bcast::rewrite::expand::write_expanded(&model, &plan, &pieces, out).unwrap()
}

#[test]
fn small_external_tensors_can_be_inlined() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("weights.bin"), side_file()).unwrap();
    let path = dir.path().join("m.onnx");
    std::fs::write(&path, model("weights.bin")).unwrap();
    let out = dir.path().join("inlined.onnx");
    let options = onnx_bcast::rewrite::expand::ExpandOptions { inline_external_below: Some(16), ..Default::default() };
    expand_with(&path, &out, options);
    let rewritten = onnx_bcast::onnx::model::Model::open(&out).unwrap();
    let inits = &rewritten.proto().graph.as_ref().unwrap().initializer;
    let s = inits.iter().find(|t| t.name() == "S").unwrap();
    let w = inits.iter().find(|t| t.name() == "W").unwrap();
    assert_eq!(s.raw_data.as_deref(), Some(&side_file()[..16]), "S (16 bytes) is inlined");
    assert!(s.external_data.is_empty() && s.data_location.is_none());
    assert_eq!(w.data_location, Some(DataLocation::External as i32), "W (48 bytes) stays external");
}

#[test]
fn external_tensors_can_be_gathered_into_one_new_file() {
    let root = tempfile::tempdir().unwrap();
    let (src, dst) = (root.path().join("src"), root.path().join("dst"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&dst).unwrap();
    // The two tensors come from two files; the gathered file holds both, each on a 64-byte boundary.
    let bytes = side_file();
    std::fs::write(src.join("s.bin"), &bytes[..16]).unwrap();
    std::fs::write(src.join("w.bin"), &bytes[16..]).unwrap();
    let mut m = ModelProto::decode(model("unused").as_slice()).unwrap();
    let inits = &mut m.graph.as_mut().unwrap().initializer;
    inits[0] = external("S", &[2], 7, "s.bin", 0, 16);
    inits[1] = external("W", &[4, 3], 1, "w.bin", 0, 48);
    let path = src.join("m.onnx");
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let out = dst.join("m.onnx");
    let options =
        onnx_bcast::rewrite::expand::ExpandOptions { gather_external: Some("all.bin".into()), ..Default::default() };
    let carried = expand_with(&path, &out, options);
    assert_eq!(carried, vec!["all.bin".to_string()], "only the gathered file is written beside OUT");
    let gathered = std::fs::read(dst.join("all.bin")).unwrap();
    assert_eq!(&gathered[..16], &bytes[..16]);
    assert_eq!(&gathered[64..112], &bytes[16..]);
    let report = json(&out);
    assert_eq!(report["summary"]["errors"], 0, "{report}");
    let expand = report["sites"].as_array().unwrap().iter().find(|s| s["op"] == "Expand").unwrap().clone();
    assert_eq!(expand["output_shape"], serde_json::json!([4, 3]), "S is read from the gathered file");
}
