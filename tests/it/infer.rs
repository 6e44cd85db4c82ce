//! `onnx-bcast infer` and `--bind`: the command line's contracts (exit codes, errors, what is written where), each
//! test named after the behaviour it pins. Models are small, built here or taken from `fixtures/`; the corpus-wide
//! acceptance (checker, onnxruntime) is tests/it/infer_corpus.rs.

use crate::common::cli::{run, Run};
use std::path::{Path, PathBuf};

use onnx_bcast::onnx::pb::tensor_shape_proto::{dimension::Value, Dimension};
use onnx_bcast::onnx::pb::{
    type_proto, FunctionProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};
use prost::Message;
use serde_json::Value as Json;

const FLOAT: i32 = 1;
const POSITION_TABLE: &str = "fixtures/inference/slice_buffer_to_sequence.onnx";

fn scratch(name: &str) -> PathBuf {
    crate::common::cli::scratch("infer-cli", name)
}

fn json(r: &Run) -> Json {
    serde_json::from_str(r.stdout.lines().next().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// A dim: a number is a `dim_value`, `""` an empty dim, anything else a `dim_param`.
fn vi(name: &str, dims: &[&str]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: match d.parse::<i64>() {
                Ok(n) => Some(Value::DimValue(n)),
                Err(_) if d.is_empty() => None,
                Err(_) => Some(Value::DimParam(d.to_string())),
            },
            denotation: None,
        })
        .collect();
    let tensor = type_proto::Tensor { elem_type: Some(FLOAT), shape: Some(TensorShapeProto { dim }) };
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto { tensor_type: Some(tensor), ..Default::default() }),
        ..Default::default()
    }
}

fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(output.into()),
        input: inputs.iter().map(|&s| s.into()).collect(),
        output: smallvec::smallvec![output.into()],
        ..Default::default()
    }
}

fn model(ir: i64, graph: GraphProto, functions: Vec<FunctionProto>) -> ModelProto {
    let mut opset_import = vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }];
    if !functions.is_empty() {
        opset_import.push(OperatorSetIdProto { domain: Some("local".into()), version: Some(1) });
    }
    ModelProto { ir_version: Some(ir), opset_import, graph: Some(graph), functions, ..Default::default() }
}

fn save(dir: &Path, name: &str, m: &ModelProto) -> String {
    let path = dir.join(name);
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    path.display().to_string()
}

fn load(path: &str) -> ModelProto {
    ModelProto::decode(std::fs::read(path).unwrap().as_slice()).unwrap()
}

fn dims(v: &ValueInfoProto) -> Vec<String> {
    let t = v.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).expect("a tensor type");
    let shape = t.shape.as_ref().expect("a shape");
    shape
        .dim
        .iter()
        .map(|d| match &d.value {
            Some(Value::DimValue(n)) => n.to_string(),
            Some(Value::DimParam(p)) => p.clone(),
            None => "?".into(),
        })
        .collect()
}

fn declared<'a>(g: &'a GraphProto, name: &str) -> &'a ValueInfoProto {
    g.value_info
        .iter()
        .chain(&g.output)
        .find(|v| v.name() == name)
        .unwrap_or_else(|| panic!("no declaration of {name}"))
}

/// y = Relu(x) with x [N, 3], declared as y [2, 4] or as given.
fn relu_model(y_dims: &[&str]) -> ModelProto {
    let graph = GraphProto {
        name: Some("g".into()),
        node: vec![node("Relu", &["x"], "r"), node("Identity", &["r"], "y")],
        input: vec![vi("x", &["N", "3"])],
        output: vec![vi("y", y_dims)],
        ..Default::default()
    };
    model(8, graph, vec![])
}

#[test]
fn check_bind_turns_a_condition_on_the_sequence_into_a_violation_with_its_node_and_axis() {
    let unbound = run(&["check", "--format", "json", POSITION_TABLE]);
    assert_eq!(unbound.code, 0);
    assert_eq!(json(&unbound)["sites"][0]["verdict"], "conditional");
    let past = run(&["check", "--format", "json", "--bind", "seq=128", POSITION_TABLE]);
    assert_eq!(past.code, 1, "{}", past.stderr);
    let site = &json(&past)["sites"][0];
    assert_eq!(
        (site["verdict"].as_str(), site["node"].as_str(), site["axis"].as_i64()),
        (Some("violation"), Some("#7 (Add)"), Some(1))
    );
    assert!(site["message"].as_str().unwrap().contains("pos_emb has 64 where tok_emb has 128"), "{site}");
    let within = run(&["check", "--format", "json", "--bind", "seq=32", POSITION_TABLE]);
    assert_eq!((within.code, json(&within)["sites"][0]["verdict"].as_str()), (0, Some("broadcast")));
}

#[test]
fn a_binding_of_a_name_no_input_declares_is_an_error_naming_the_file_and_the_inputs_names() {
    for command in ["check", "shapes", "expand", "infer"] {
        let out = scratch(&format!("unknown-{command}")).join("out.onnx").display().to_string();
        let mut args = vec![command, "--bind", "sq=3", POSITION_TABLE];
        if matches!(command, "expand" | "infer") {
            args.push(&out);
        }
        let r = run(&args);
        assert_eq!(r.code, 2, "{command}: {}", r.stderr);
        // (`check` reports a model it could not check in its report, on stdout, as it does any unreadable model.)
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(
            said.contains(POSITION_TABLE) && said.contains("'sq'") && said.contains("batch, seq"),
            "{command}: {said}"
        );
        assert!(!Path::new(&out).exists(), "{command} wrote {out}");
    }
}

#[test]
fn one_symbol_bound_to_two_sizes_is_an_error() {
    let r = run(&["check", "--bind", "seq=3", "--bind", "seq=4", POSITION_TABLE]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("seq is already bound to 3"), "{}", r.stderr);
}

/// Issue 28: a binding the model contradicts is a finding of its own (`bind-contradiction`, exit 1) at the node
/// whose declaration it contradicts, not a failure to check the model; `expand` and `infer` refuse (exit 1, nothing
/// written) and `shapes` prints the shapes with the contradiction on stderr (exit 1).
#[test]
fn a_binding_that_contradicts_a_size_the_model_declares_is_a_finding() {
    let dir = scratch("contradiction");
    let path = save(&dir, "m.onnx", &relu_model(&["4", "3"]));
    assert_eq!(run(&["check", &path]).code, 0, "N is free: declaring y as [4, 3] only says N = 4");
    assert_eq!(run(&["check", "--bind", "N=4", &path]).code, 0);
    let r = run(&["check", "--bind", "N=5", &path]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("error[bind-contradiction] "), "{}", r.stdout);
    assert!(r.stdout.contains("'y'") && r.stdout.contains("axis 0") && r.stdout.contains("1 error"), "{}", r.stdout);
    assert!(!r.stdout.contains("could not be checked"), "{}", r.stdout);
    let out = format!("{}/out.onnx", dir.display());
    for command in ["expand", "infer"] {
        let r = run(&[command, "--bind", "N=5", &path, &out]);
        assert_eq!(r.code, 1, "{command}: {}", r.stderr);
        assert!(r.stderr.contains("error[bind-contradiction]") && r.stderr.contains("nothing was written"));
        assert!(!std::path::Path::new(&out).exists(), "{command} wrote nothing");
    }
    let r = run(&["shapes", "--bind", "N=5", &path]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("y: float [5, 3]") && r.stderr.contains("error[bind-contradiction]"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn shapes_bind_recomputes_every_derived_size() {
    let r = run(&["shapes", "--bind", "seq=128", "--bind", "batch=2", POSITION_TABLE]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("pos_emb: float [1, 64, 8]"), "{}", r.stdout);
    assert!(r.stdout.contains("tok_emb: float [2, 128, 8]"), "{}", r.stdout);
}

#[test]
fn expand_bind_needs_no_shape_node_and_says_so_in_the_inputs() {
    let dir = scratch("expand-bind");
    let graph = GraphProto {
        name: Some("g".into()),
        node: vec![node("Add", &["A", "B"], "C")],
        input: vec![vi("A", &["N", "3"]), vi("B", &["3"])],
        output: vec![vi("C", &["N", "3"])],
        ..Default::default()
    };
    let path = save(&dir, "m.onnx", &model(8, graph, vec![]));
    let ops = |p: &str| load(p).graph.unwrap().node.iter().map(|n| n.op_type().to_string()).collect::<Vec<_>>();
    let free = dir.join("free.onnx").display().to_string();
    assert_eq!(run(&["expand", &path, &free]).code, 0);
    assert!(ops(&free).contains(&"Shape".to_string()), "{:?}", ops(&free));
    let bound = dir.join("bound.onnx").display().to_string();
    let r = run(&["expand", "--bind", "N=4", &path, &bound]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!ops(&bound).contains(&"Shape".to_string()), "{:?}", ops(&bound));
    assert_eq!(dims(&load(&bound).graph.unwrap().input[0]), ["4", "3"]);
}

#[test]
fn infer_writes_derived_sizes_as_readable_expressions_and_leaves_everything_else_as_it_was() {
    let dir = scratch("derived");
    let out = dir.join("out.onnx").display().to_string();
    let r = run(&["infer", POSITION_TABLE, &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (before, after) = (load(POSITION_TABLE), load(&out));
    let g = after.graph.as_ref().unwrap();
    assert_eq!(dims(declared(g, "pos_emb")), ["1", "min(64, seq)", "8"]);
    assert_eq!(dims(declared(g, "tok_emb")), ["batch", "seq", "8"]);
    assert_eq!(dims(declared(g, "ids_shape")), ["2"]);
    // Apart from the declarations, the model is the original.
    let mut restored = after.clone();
    let rg = restored.graph.as_mut().unwrap();
    rg.value_info = before.graph.as_ref().unwrap().value_info.clone();
    rg.output = before.graph.as_ref().unwrap().output.clone();
    assert_eq!(restored, before);
    // A model that already declares everything is written back byte for byte.
    let again = dir.join("again.onnx").display().to_string();
    assert_eq!(run(&["infer", &out, &again]).code, 0);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn infer_keeps_an_agreeing_declaration_and_fills_its_empty_dims() {
    let dir = scratch("agreeing");
    let path = save(&dir, "m.onnx", &relu_model(&["batch", ""]));
    let out = dir.join("out.onnx").display().to_string();
    assert_eq!(run(&["infer", &path, &out]).code, 0);
    let g = load(&out).graph.unwrap();
    assert_eq!(dims(declared(&g, "y")), ["batch", "3"], "the declared name stays, the empty dim is filled");
    assert_eq!(dims(declared(&g, "r")), ["N", "3"]);
}

#[test]
fn infer_reports_a_contradicting_declaration_and_replaces_it_only_when_asked() {
    let dir = scratch("mismatch");
    let graph = GraphProto {
        name: Some("g".into()),
        node: vec![node("Relu", &["x"], "y")],
        input: vec![vi("x", &["2", "3"])],
        output: vec![vi("y", &["2", "4"])],
        ..Default::default()
    };
    let path = save(&dir, "m.onnx", &model(8, graph, vec![]));
    let out = dir.join("out.onnx").display().to_string();
    let kept = run(&["infer", "--format", "json", &path, &out]);
    assert_eq!(kept.code, 1, "{}", kept.stderr);
    let m = &json(&kept)["mismatches"][0];
    assert_eq!(
        (m["code"].as_str(), m["value"].as_str(), m["replaced"].as_bool()),
        (Some("declared-shape-mismatch"), Some("y"), Some(false))
    );
    assert_eq!(dims(&load(&out).graph.unwrap().output[0]), ["2", "4"]);
    let replaced = run(&["infer", "--overwrite-declared", &path, &out]);
    assert_eq!(replaced.code, 0, "{}", replaced.stderr);
    assert!(
        replaced.stdout.contains("declared-shape-mismatch main › value y") && replaced.stdout.contains("(replaced)")
    );
    assert_eq!(dims(&load(&out).graph.unwrap().output[0]), ["2", "3"]);
}

#[test]
fn infer_bind_writes_a_static_model_inputs_included() {
    let dir = scratch("static");
    let out = dir.join("out.onnx").display().to_string();
    let r = run(&["infer", "--bind", "batch=2", "--bind", "seq=32", POSITION_TABLE, &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = load(&out).graph.unwrap();
    assert_eq!(dims(&g.input[0]), ["2", "32"]);
    assert_eq!(dims(declared(&g, "pos_emb")), ["1", "32", "8"]);
    let params =
        g.input.iter().chain(&g.value_info).chain(&g.output).flat_map(dims).filter(|d| d.parse::<u64>().is_err());
    assert_eq!(params.collect::<Vec<_>>(), Vec::<String>::new());
}

#[test]
fn infer_declares_values_inside_subgraphs_and_function_bodies() {
    let dir = scratch("nested");
    let out = dir.join("if.onnx").display().to_string();
    assert_eq!(run(&["infer", "fixtures/multidirectional_if_then_ok.onnx", &out]).code, 0);
    let g = load(&out).graph.unwrap();
    let then = g.node[0].attribute.iter().find(|a| a.name() == "then_branch").and_then(|a| a.g.as_ref()).unwrap();
    let inner = then.node[0].output[0].as_str();
    assert_eq!(dims(declared(then, inner)), ["2", "3"]);

    let body = FunctionProto {
        name: Some("Bias".into()),
        domain: Some("local".into()),
        input: vec!["a".into(), "b".into()],
        output: vec!["d".into()],
        node: vec![node("Add", &["a", "b"], "c"), node("Relu", &["c"], "d")],
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        ..Default::default()
    };
    let mut call = node("Bias", &["x", "b"], "y");
    call.domain = Some("local".into());
    let graph = GraphProto {
        name: Some("g".into()),
        node: vec![call],
        input: vec![vi("x", &["N", "3"]), vi("b", &["3"])],
        output: vec![vi("y", &["N", "3"])],
        ..Default::default()
    };
    let path = save(&dir, "f.onnx", &model(10, graph.clone(), vec![body.clone()]));
    let out = dir.join("f.out.onnx").display().to_string();
    assert_eq!(run(&["infer", &path, &out]).code, 0);
    let f = &load(&out).functions[0];
    let written: Vec<(&str, Vec<String>)> = f.value_info.iter().map(|v| (v.name(), dims(v))).collect();
    assert_eq!(written, [("c", dims(&vi("c", &["N", "3"]))), ("d", dims(&vi("d", &["N", "3"])))]);
    // Before IR version 10 a function has no value_info: its body is left as it was, and the summary says so.
    let old = save(&dir, "f8.onnx", &model(8, graph, vec![body]));
    let r = run(&["infer", "--format", "json", &old, &out]);
    assert_eq!((r.code, json(&r)["functions_skipped"].as_u64()), (0, Some(1)));
    assert!(load(&out).functions[0].value_info.is_empty());
}

#[test]
fn infer_dry_run_writes_nothing_and_json_counts_the_declarations() {
    let dir = scratch("dry");
    let out = dir.join("out.onnx").display().to_string();
    let r = run(&["infer", "--dry-run", "--format", "json", POSITION_TABLE, &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = json(&r);
    assert_eq!((j["written"].as_bool(), j["values"].as_u64(), j["declared"].as_u64()), (Some(false), Some(8), Some(7)));
    assert_eq!(j["resolved"].as_u64(), Some(8));
    assert!(!Path::new(&out).exists());
}

#[test]
fn infer_refuses_a_model_that_cannot_be_read_with_one_error_naming_it() {
    let dir = scratch("bad");
    let path = dir.join("garbage.onnx");
    std::fs::write(&path, b"\xff\xff\xff not a model").unwrap();
    let out = dir.join("out.onnx").display().to_string();
    let r = run(&["infer", &path.display().to_string(), &out]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("garbage.onnx"), "{}", r.stderr);
    assert!(!Path::new(&out).exists());
}

#[test]
fn infer_into_another_folder_carries_the_external_data_and_reads_small_external_shapes() {
    use onnx_bcast::onnx::pb::{tensor_proto::DataLocation, StringStringEntryProto, TensorProto};
    let entry = |k: &str, v: String| StringStringEntryProto { key: Some(k.into()), value: Some(v) };
    let external = |name: &str, dims: &[i64], data_type: i32, offset: u64, length: u64| TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(data_type),
        data_location: Some(DataLocation::External as i32),
        external_data: vec![
            entry("location", "data/w.bin".into()),
            entry("offset", offset.to_string()),
            entry("length", length.to_string()),
        ],
        ..Default::default()
    };
    let root = scratch("external");
    let (src, dst) = (root.join("src"), root.join("dst"));
    std::fs::create_dir_all(src.join("data")).unwrap();
    std::fs::create_dir_all(&dst).unwrap();
    let mut data: Vec<u8> = [4i64, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    data.extend((0..12).flat_map(|i| (i as f32).to_le_bytes()));
    std::fs::write(src.join("data/w.bin"), &data).unwrap();
    let graph = GraphProto {
        name: Some("g".into()),
        node: vec![node("Expand", &["X", "S"], "E"), node("Add", &["E", "W"], "Y")],
        initializer: vec![external("S", &[2], 7, 0, 16), external("W", &[4, 3], FLOAT, 16, 48)],
        input: vec![vi("X", &["1", "3"])],
        output: vec![vi("Y", &["", ""])],
        ..Default::default()
    };
    let path = save(&src, "m.onnx", &model(8, graph, vec![]));
    let out = dst.join("m.onnx").display().to_string();
    let r = run(&["infer", &path, &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read(dst.join("data/w.bin")).unwrap(), data, "the data file is carried beside OUT");
    let g = load(&out).graph.unwrap();
    assert_eq!(dims(declared(&g, "E")), ["4", "3"], "S's values are read from the external file");
    assert_eq!(dims(declared(&g, "Y")), ["4", "3"]);
    assert_eq!(std::fs::read(src.join("data/w.bin")).unwrap(), data, "the input is never modified");
}

#[test]
fn infer_bind_rewrites_every_declaration_that_names_a_bound_symbol() {
    let dir = scratch("bind-everywhere");
    let mut m = relu_model(&["N", "3"]);
    let g = m.graph.as_mut().unwrap();
    g.value_info.push(vi("x", &["N", "3"]));
    g.value_info.push(vi("r", &["N", ""]));
    let path = save(&dir, "m.onnx", &m);
    let out = dir.join("out.onnx").display().to_string();
    let r = run(&["infer", "--bind", "N=2", &path, &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = load(&out).graph.unwrap();
    let all: Vec<(String, Vec<String>)> =
        g.input.iter().chain(&g.value_info).chain(&g.output).map(|v| (v.name().to_string(), dims(v))).collect();
    let expected = [("x", ["2", "3"]), ("x", ["2", "3"]), ("r", ["2", "3"]), ("y", ["2", "3"])];
    assert_eq!(all, expected.map(|(n, d)| (n.to_string(), d.map(String::from).to_vec())));
}
