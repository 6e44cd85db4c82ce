//! Exit codes mean one thing everywhere (docs/exit-codes.md, one table): 0 the command did its job and found nothing
//! to report at the chosen level, 1 it found something at that level, 2 it could not do its job. Each cell of the
//! table is a case here, run through the binary; `fold` keeping a broadcast is 0 (issue 28: it was 1, although a
//! valid model was written), `expand` leaving an undecided site as it is is 0, a `--bind` the model contradicts is
//! 1 (it was 2), and `--dry-run` needs no OUT.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use onnx_bcast::onnx::pb::tensor_shape_proto::{dimension::Value, Dimension};
use onnx_bcast::onnx::pb::{
    type_proto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use prost::Message;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn status(args: &[&str]) -> i32 {
    let out = Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .args(args)
        .current_dir(root())
        .env("CI", "true")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run onnx-bcast {args:?}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked") && !stderr.contains("internal error"), "{args:?}:\n{stderr}");
    out.status.code().unwrap_or_else(|| panic!("{args:?} was killed"))
}

fn vi(name: &str, dims: &[i64]) -> ValueInfoProto {
    let dim = dims.iter().map(|&d| Dimension { value: Some(Value::DimValue(d)), denotation: None }).collect();
    let tensor = type_proto::Tensor { elem_type: Some(1), shape: Some(TensorShapeProto { dim }) };
    let r#type = Some(TypeProto { tensor_type: Some(tensor), ..Default::default() });
    ValueInfoProto { name: Some(name.into()), r#type, ..Default::default() }
}

/// `y = Relu(x [2, 3])` with `y` declared `[4, 3]`: a declaration inference contradicts.
fn stale_declaration(dir: &std::path::Path) -> String {
    let relu = NodeProto {
        op_type: Some("Relu".into()),
        name: Some("relu".into()),
        input: smallvec::smallvec!["x".into()],
        output: smallvec::smallvec!["y".into()],
        ..Default::default()
    };
    let graph = GraphProto {
        name: Some("g".into()),
        node: vec![relu],
        input: vec![vi("x", &[2, 3])],
        output: vec![vi("y", &[4, 3])],
        ..Default::default()
    };
    let opset = OperatorSetIdProto { domain: Some(String::new()), version: Some(17) };
    let model = ModelProto { ir_version: Some(8), opset_import: vec![opset], graph: Some(graph), ..Default::default() };
    let path = dir.join("stale.onnx");
    std::fs::write(&path, model.encode_to_vec()).unwrap();
    path.display().to_string()
}

const OK: &str = "fixtures/multidirectional_add_ok.onnx";
const BAD: &str = "fixtures/multidirectional_add_bad.onnx";
const CONDITIONAL: &str = "fixtures/symbolic_batch.onnx";
const BROKEN: &str = "fixtures/malformed/graph_cycle.onnx";
const NOT_A_MODEL: &str = "fixtures/malformed/empty.onnx";
const UNDECIDED: &str = "fixtures/crafted/loop_body_broadcast.pb";
const BIND: [&str; 3] = ["--bind", "N=5", "fixtures/contradiction/bind_declared.onnx"];

fn check_all(cases: &[(i32, Vec<&str>)]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(want, args)| {
            let got = status(args);
            (got != *want).then(|| format!("onnx-bcast {}: exit {got}, documented {want}", args.join(" ")))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn check_exits_0_clean_1_findings_at_the_chosen_level_2_when_it_could_not_check() {
    check_all(&[
        (0, vec!["check", OK]),
        (0, vec!["check", CONDITIONAL]),
        (0, vec!["check", UNDECIDED]),
        (1, vec!["check", BAD]),
        (1, vec!["check", "--strict", OK]),
        (1, vec!["check", "--strict", UNDECIDED]),
        (1, vec!["check", "--deny", "conditional-broadcast", CONDITIONAL]),
        (0, vec!["check", "--allow", "broadcast-violation", BAD]),
        (1, vec!["check", "--bind", BIND[1], BIND[2]]),
        (1, vec!["check", BROKEN]),
        (2, vec!["check", NOT_A_MODEL]),
        (2, vec!["check", OK, NOT_A_MODEL]),
        (2, vec!["check", "--deny", "no-such-code", OK]),
        (2, vec!["check", "--bind", "nobody=3", OK]),
        (2, vec!["check", "--no-such-flag", OK]),
    ]);
}

#[test]
fn shapes_and_explain_exit_0_unless_a_binding_is_contradicted_or_the_input_is_wrong() {
    check_all(&[
        (0, vec!["shapes", OK]),
        (1, vec!["shapes", BIND[0], BIND[1], BIND[2]]),
        (2, vec!["shapes", NOT_A_MODEL]),
        (0, vec!["explain", "broadcast-violation"]),
        (0, vec!["explain"]),
        (0, vec!["explain", "--list"]),
        (2, vec!["explain", "no-such-code"]),
    ]);
}

#[test]
fn expand_exits_1_only_for_a_site_that_still_broadcasts_or_a_model_it_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.onnx").display().to_string();
    check_all(&[
        (0, vec!["expand", OK, &out]),
        (0, vec!["expand", "--dry-run", OK]),
        (0, vec!["expand", "--dry-run", CONDITIONAL]),
        (0, vec!["expand", "--dry-run", UNDECIDED]),
        (1, vec!["expand", "--dry-run", BAD]),
        (1, vec!["expand", "--dry-run", BROKEN]),
        (1, vec!["expand", "--dry-run", BIND[0], BIND[1], BIND[2]]),
        (2, vec!["expand", NOT_A_MODEL, &out]),
        (2, vec!["expand", OK, "no/such/folder/out.onnx"]),
        (2, vec!["expand", OK]),
    ]);
}

#[test]
fn fold_exits_0_when_it_wrote_a_valid_model_whatever_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.onnx").display().to_string();
    check_all(&[
        (0, vec!["fold", "fixtures/fold/tile_folds.pb", &out]),
        (0, vec!["fold", "fixtures/fold/graph_output_kept.pb", &out]),
        (0, vec!["fold", "--dry-run", "fixtures/fold/broadcast_conditional_kept.pb"]),
        (1, vec!["fold", "--dry-run", BROKEN]),
        (2, vec!["fold", NOT_A_MODEL, &out]),
        (2, vec!["fold", "fixtures/fold/tile_folds.pb"]),
    ]);
}

#[test]
fn infer_exits_1_for_a_contradicting_declaration_kept_and_0_once_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.onnx").display().to_string();
    let stale = stale_declaration(dir.path());
    check_all(&[
        (0, vec!["infer", OK, &out]),
        (0, vec!["infer", "--dry-run", OK]),
        (1, vec!["infer", "--dry-run", &stale]),
        (0, vec!["infer", "--dry-run", "--overwrite-declared", &stale]),
        (1, vec!["infer", "--dry-run", BROKEN]),
        (1, vec!["infer", "--dry-run", BIND[0], BIND[1], BIND[2]]),
        (2, vec!["infer", NOT_A_MODEL, &out]),
    ]);
}

/// The table of docs/exit-codes.md names every command, so that no command's exit codes go undocumented.
#[test]
fn the_one_table_covers_every_command() {
    let doc = std::fs::read_to_string(root().join("docs/exit-codes.md")).unwrap();
    for command in ["check", "shapes", "expand", "infer", "fold", "explain"] {
        assert!(doc.contains(&format!("| `{command}` |")), "docs/exit-codes.md has no row for {command}");
    }
    assert!(doc.contains("| code | means |"), "the table of the three codes");
}
