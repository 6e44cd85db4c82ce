//! The expand battery: every broadcasting op, under each of its rules, over static and symbolic shapes and the
//! element types ONNX allows it, made in Rust with the prost types. Each model is rewritten with `expand_model`
//! (and again with `materialize_constants` when an input is an initializer); the rewrite must leave no implicit
//! broadcast (`check --strict` clean) and, run with tract-onnx on the same seeded inputs, compute exactly what the
//! original computes. The comparison is `src/check/verify.rs` itself, the code behind `expand --verify`.
//!
//! What tract-onnx 0.23 cannot run as ONNX means it, and what the battery does instead:
//!
//! | case                                          | tract                                  | instead                          |
//! | --------------------------------------------- | -------------------------------------- | -------------------------------- |
//! | opset 6 `broadcast=1`, `axis` not at A's end  | ignores `broadcast`/`axis`: numpy      | rewrite vs Reshape(B) + op-13    |
//! | PRelu-6 with a per-channel 1-D slope          | numpy alignment                        | rewrite vs Reshape(S) + PRelu-13 |
//! | Equal on bool                                 | "Bool is not a number"                 | both lowered to Not(Xor)         |
//! | Mean, first input of lower rank than output   | rank mismatch in its division          | both lowered to Div(Sum, n)      |
//! | Gemm on double                                | alpha/beta held as f32                 | both lowered to MatMul + Add     |
//! | Gemm on int32/int64                           | same, and MatMul has no integer kernel | rewrite and strict check only    |
//!
//! ("rewrite vs X": the rewritten model must compute what the reference model X computes; "both lowered": that op
//! is replaced by equivalent ones in the original and in the rewritten model alike, the inserted Expand/Tile kept.)
//! Symbolic shapes at opset 7 have no faithful rewrite (Tile needs static repeats): those sites must be left.
//!
//! Size-0 constants abort tract's declutter pass in debug builds (Pow's gelu detection reads a scalar from an
//! empty tensor), which is why `verify` runs tract's typed model without decluttering.
//!
//! Each rewrite is then folded back (`fold_model`, the code behind `onnx-bcast fold`): the folded model must compute
//! exactly what the original computes too, and at opset 8 and later a site that holds without condition must come
//! back to the original's nodes (`fold(expand(m))` is `m` up to names).
//!
//! The number of cases is printed per family (`cargo test --test it -- expand_battery:: --nocapture`).

use crate::common;

use std::rc::Rc;

use bytes::Bytes;
use prost::Message;

use onnx_bcast::analysis::analyze;
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::pb::{
    attribute_proto::AttributeType, tensor_shape_proto, type_proto, AttributeProto, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use onnx_bcast::rewrite::expand::{expand_model, ExpandOptions};
use onnx_bcast::rewrite::fold::{fold_model, FoldOptions};

// `src/check/verify.rs` itself, so the battery runs the very code of `--verify` without needing the `verify`
// feature; `tests/it/main.rs` gives it the crate's `onnx` modules.
#[allow(dead_code)]
#[path = "../../src/check/verify.rs"]
mod verify;

const FLOAT: i32 = 1;
const UINT8: i32 = 2;
const INT32: i32 = 6;
const INT64: i32 = 7;
const STRING: i32 = 8;
const BOOL: i32 = 9;
const DOUBLE: i32 = 11;

// ---------------------------------------------------------------------------------------------------------------
// Model building.

/// A shape written as `2,3,N` (`""` is a scalar); a name is a `dim_param`.
fn shape_proto(spec: &str) -> TensorShapeProto {
    use tensor_shape_proto::{dimension::Value, Dimension};
    TensorShapeProto {
        dim: dims_of(spec)
            .into_iter()
            .map(|d| Dimension {
                value: Some(match d.parse::<i64>() {
                    Ok(v) => Value::DimValue(v),
                    Err(_) => Value::DimParam(d.to_string()),
                }),
                denotation: None,
            })
            .collect(),
    }
}

fn dims_of(spec: &str) -> Vec<&str> {
    if spec.is_empty() {
        Vec::new()
    } else {
        spec.split(',').collect()
    }
}

fn static_dims(spec: &str) -> Option<Vec<i64>> {
    dims_of(spec).into_iter().map(|d| d.parse::<i64>().ok()).collect()
}

fn value(name: &str, elem: i32, shape: Option<&str>) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            tensor_type: Some(type_proto::Tensor { elem_type: Some(elem), shape: shape.map(shape_proto) }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

fn float_attr(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Float as i32),
        f: Some(v),
        ..Default::default()
    }
}

fn string_attr(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::String as i32),
        s: Some(Bytes::copy_from_slice(v.as_bytes())),
        ..Default::default()
    }
}

fn node(op: &str, inputs: &[&str], output: &str, attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(format!("{}_node", output).into()),
        input: inputs.iter().map(|&s| s.into()).collect(),
        output: smallvec::smallvec![output.into()],
        attribute: attrs,
        ..Default::default()
    }
}

/// A model with one node over graph inputs `inputs` (name, elem, shape) and one output `out` of `out_elem`.
fn one_node_model(
    opset: i64,
    ir: i64,
    op: &str,
    inputs: &[(&str, i32, &str)],
    attrs: Vec<AttributeProto>,
    out_elem: i32,
) -> ModelProto {
    let names: Vec<&str> = inputs.iter().map(|i| i.0).collect();
    let graph = GraphProto {
        name: Some("battery".into()),
        node: vec![node(op, &names, "out", attrs)],
        input: inputs.iter().map(|(n, e, s)| value(n, *e, Some(s))).collect(),
        output: vec![value("out", out_elem, None)],
        ..Default::default()
    };
    model_of(opset, ir, graph)
}

fn model_of(opset: i64, ir: i64, graph: GraphProto) -> ModelProto {
    ModelProto {
        ir_version: Some(ir),
        producer_name: Some("expand_battery".into()),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(opset) }],
        graph: Some(graph),
        ..Default::default()
    }
}

fn ir_for(opset: i64) -> i64 {
    common::gen::ir_version_for(opset)
}

/// Deterministic data for a constant, in the value ranges `verify` uses for inputs.
fn constant_tensor(name: &str, elem: i32, dims: &[i64]) -> TensorProto {
    let len: i64 = dims.iter().product();
    let mut state = fnv(name);
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let float = |r: u64| {
        let m = (4 + (r >> 1) % 17) as f64 / 8.0;
        if r & 1 == 1 {
            -m
        } else {
            m
        }
    };
    let mut t =
        TensorProto { name: Some(name.into()), dims: dims.to_vec(), data_type: Some(elem), ..Default::default() };
    let raw: Vec<u8> = match elem {
        FLOAT => (0..len).flat_map(|_| (float(next()) as f32).to_le_bytes()).collect(),
        DOUBLE => (0..len).flat_map(|_| float(next()).to_le_bytes()).collect(),
        INT32 => (0..len).flat_map(|_| (1 + (next() % 5) as i32).to_le_bytes()).collect(),
        INT64 => (0..len).flat_map(|_| (1 + (next() % 5) as i64).to_le_bytes()).collect(),
        UINT8 => (0..len).map(|_| 1 + (next() % 5) as u8).collect(),
        BOOL => (0..len).map(|_| (next() & 1) as u8).collect(),
        STRING => {
            t.string_data = (0..len).map(|_| Bytes::from_static([b"a", b"b", b"c"][(next() % 3) as usize])).collect();
            return t;
        }
        other => panic!("no constant data for element type {other}"),
    };
    t.raw_data = Some(raw.into());
    t
}

/// The model with graph input `name` turned into an initializer (IR >= 4: no longer a graph input).
fn with_initializer(mut model: ModelProto, name: &str) -> ModelProto {
    let g = model.graph.as_mut().unwrap();
    let k = g.input.iter().position(|i| i.name() == name).expect("the input exists");
    let vi = g.input.remove(k);
    let tt = vi.r#type.unwrap().tensor_type.unwrap();
    let dims: Vec<i64> = tt
        .shape
        .unwrap()
        .dim
        .iter()
        .map(|d| match d.value {
            Some(tensor_shape_proto::dimension::Value::DimValue(v)) => v,
            _ => panic!("an initializer needs a static shape"),
        })
        .collect();
    g.initializer.push(constant_tensor(name, tt.elem_type.unwrap(), &dims));
    model
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn type_name(elem: i32) -> &'static str {
    match elem {
        FLOAT => "f32",
        DOUBLE => "f64",
        INT32 => "i32",
        INT64 => "i64",
        UINT8 => "u8",
        BOOL => "bool",
        STRING => "str",
        _ => "?",
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Cases and their runner.

/// Turns a model into another: a case's model (or a variant of it with initializers) into its reference, or any
/// model into one with the ops tract cannot run replaced by equivalent ones.
type Transform = Rc<dyn Fn(&ModelProto) -> ModelProto>;

#[derive(Clone)]
struct Case {
    name: String,
    model: ModelProto,
    /// What the rewritten model must compute, when tract would read the original differently from ONNX.
    reference: Option<Transform>,
    /// Applied to both sides before running them, when an op of the case is one tract cannot run as it is.
    lower: Option<Transform>,
    /// Whether tract can run the case at all (else only the rewrite and its strict check are tested).
    runnable: bool,
    /// The rewrite must leave the site as it is (no faithful rewrite at this opset).
    expect_left: bool,
}

impl Case {
    fn new(name: String, model: ModelProto) -> Case {
        Case { name, model, reference: None, lower: None, runnable: true, expect_left: false }
    }
}

/// Adds `case` and, for each static graph input in `constants`, a variant where that input is an initializer.
fn push_with_constants(cases: &mut Vec<Case>, case: Case, constants: &[&str]) {
    for &c in constants {
        let g = case.model.graph.as_ref().unwrap();
        let Some(vi) = g.input.iter().find(|i| i.name() == c) else { continue };
        let shape = vi.r#type.as_ref().unwrap().tensor_type.as_ref().unwrap().shape.as_ref().unwrap();
        let static_shape =
            shape.dim.iter().all(|d| matches!(d.value, Some(tensor_shape_proto::dimension::Value::DimValue(_))));
        if !static_shape {
            continue;
        }
        cases.push(Case {
            name: format!("{} [{c} const]", case.name),
            model: with_initializer(case.model.clone(), c),
            ..case.clone()
        });
    }
    cases.push(case);
}

#[derive(Default)]
struct Tally {
    cases: usize,
    runs: usize,
    rewritten: usize,
    unchanged: usize,
    left: usize,
    materialized: usize,
    against_reference: usize,
    lowered: usize,
    not_run: usize,
    /// Rewrites folded back to the original's nodes, and those where fold kept some broadcast (with its reason).
    folded_back: usize,
    fold_kept: usize,
    failures: Vec<String>,
}

fn run_family(family: &str, cases: Vec<Case>) {
    let mut tally = Tally::default();
    // BATTERY_FILTER=text runs only the cases whose name contains it; BATTERY_TRACE=1 names each case first.
    let filter = std::env::var("BATTERY_FILTER").unwrap_or_default();
    let trace = std::env::var_os("BATTERY_TRACE").is_some();
    for case in cases.iter().filter(|c| c.name.contains(&filter)) {
        if trace {
            eprintln!("case: {}", case.name);
        }
        tally.cases += 1;
        if let Err(e) = run_case(case, &mut tally) {
            tally.failures.push(format!("{}: {e}", case.name));
        }
    }
    println!(
        "expand battery: {family}: {} cases, {} rewrites checked ({} rewritten, {} needing no rewrite, {} left as \
         expected; {} with constants materialized; {} run against a reference model, {} with ops lowered for \
         tract, {} not run in tract; fold: {} folded back to the original's nodes, {} keeping a broadcast)",
        tally.cases,
        tally.runs,
        tally.rewritten,
        tally.unchanged,
        tally.left,
        tally.materialized,
        tally.against_reference,
        tally.lowered,
        tally.not_run,
        tally.folded_back,
        tally.fold_kept,
    );
    assert!(
        tally.failures.is_empty(),
        "{family}: {} of {} cases failed:\n{}",
        tally.failures.len(),
        tally.cases,
        tally.failures.join("\n")
    );
}

fn run_case(case: &Case, tally: &mut Tally) -> Result<(), String> {
    let bytes = case.model.encode_to_vec();
    let model = Model::from_bytes(format!("{}.onnx", case.name), Bytes::from(bytes.clone()))
        .map_err(|e| format!("cannot load the generated model: {e}"))?;
    let has_initializers = !case.model.graph.as_ref().unwrap().initializer.is_empty();
    let mut option_sets = vec![ExpandOptions::default()];
    if has_initializers {
        option_sets.push(ExpandOptions { materialize_constants: true, ..ExpandOptions::default() });
    }
    for options in option_sets {
        let how = if options.materialize_constants { " (materialize)" } else { "" };
        let materialized = options.materialize_constants;
        let (plan, pieces) = expand_model(&model, options).map_err(|e| format!("expand failed{how}: {e}"))?;
        tally.runs += 1;
        if case.expect_left {
            if plan.summary.left.is_empty() {
                return Err(format!("expected the site to be left as it is{how}, but it was rewritten"));
            }
            tally.left += 1;
            continue;
        }
        if !plan.summary.left.is_empty() {
            return Err(format!("sites left{how}: {:?}", plan.summary.left));
        }
        if plan.edit.is_empty() {
            tally.unchanged += 1;
        } else {
            tally.rewritten += 1;
        }
        if plan.summary.materialized > 0 {
            tally.materialized += 1;
        }
        let rewritten = pieces.to_vec(model.bytes()).unwrap();
        let reparsed = Model::from_bytes("rewritten.onnx", Bytes::from(rewritten.clone()))
            .map_err(|e| format!("the rewritten model does not decode{how}: {e}"))?;
        let report = check(&analyze(reparsed.proto()), CheckOptions { strict: true, ..Default::default() });
        if report.failed() {
            let findings: Vec<String> =
                report.findings.iter().map(|f| format!("{:?}: {}", f.code, f.message)).collect();
            return Err(format!("the rewritten model fails check --strict{how}: {findings:?}"));
        }
        if !case.runnable {
            tally.not_run += 1;
            continue;
        }
        let mut expected = case.model.clone();
        if let Some(r) = &case.reference {
            tally.against_reference += 1;
            expected = r(&expected);
        }
        let mut got = reparsed.proto().clone();
        if let Some(lower) = &case.lower {
            tally.lowered += 1;
            expected = lower(&expected);
            got = lower(&got);
        }
        let seed = fnv(&case.name);
        let verified = verify::verify(&expected.encode_to_vec(), &got.encode_to_vec(), seed)
            .map_err(|e| format!("verify{how}: {e}"))?;
        if verified.differs() {
            return Err(format!("outputs differ{how} ({verified}): {:?}", verified.differences()));
        }
        fold_back(case, &reparsed, &expected, (seed, materialized), tally).map_err(|e| format!("fold{how}: {e}"))?;
    }
    Ok(())
}

/// Folds a rewritten model back: it must compute what `expected` (the original, or its reference) computes, and
/// at opset 8 and later, where every site holds without condition, have the original's nodes again.
/// `run`: the seed of the inputs, and whether the rewrite materialized constants (then folded with
/// `--materialized`).
fn fold_back(
    case: &Case,
    rewritten: &Model,
    expected: &ModelProto,
    run: (u64, bool),
    tally: &mut Tally,
) -> Result<(), String> {
    let (seed, materialized) = run;
    // `--materialized` undoes `--materialize-constants`.
    let (plan, pieces) = fold_model(rewritten, FoldOptions { materialized }).map_err(|e| e.to_string())?;
    let folded = pieces.to_vec(rewritten.bytes()).unwrap();
    let mut got = ModelProto::decode(folded.as_slice()).map_err(|e| format!("does not decode: {e}"))?;
    let ops = |m: &ModelProto| -> Vec<String> {
        m.graph.as_ref().unwrap().node.iter().map(|n| format!("{} {:?} {:?}", n.op_type(), n.input, n.output)).collect()
    };
    if plan.summary.kept.is_empty() {
        let opset = case.model.opset_import.iter().find(|o| o.domain().is_empty()).map_or(0, |o| o.version());
        // A constant materialized at a size-0 shape holds no values to recognise its original by.
        let empty = rewritten.proto().graph.as_ref().unwrap().initializer.iter().any(|t| t.dims.contains(&0));
        if opset >= 8 && !(materialized && empty) && ops(&got) != ops(&case.model) {
            return Err(format!("nothing kept, yet not the original's nodes: {:?}", ops(&got)));
        }
        tally.folded_back += usize::from(!plan.edit.is_empty());
    } else {
        tally.fold_kept += 1;
    }
    if let Some(lower) = &case.lower {
        got = lower(&got);
    }
    let verified = verify::verify(&expected.encode_to_vec(), &got.encode_to_vec(), seed).map_err(|e| e.to_string())?;
    if verified.differs() {
        return Err(format!("outputs differ ({verified}): {:?}", verified.differences()));
    }
    Ok(())
}

/// A transform replacing every main-graph node of `op` by what `f` makes of it (nodes, and initializers they use).
fn lowering(op: &'static str, f: impl Fn(&NodeProto) -> (Vec<NodeProto>, Vec<TensorProto>) + 'static) -> Transform {
    Rc::new(move |m| {
        let mut m = m.clone();
        let g = m.graph.as_mut().unwrap();
        let mut nodes = Vec::new();
        for n in std::mem::take(&mut g.node) {
            if n.op_type() == op {
                let (new, inits) = f(&n);
                nodes.extend(new);
                for t in inits {
                    if !g.initializer.iter().any(|i| i.name() == t.name()) {
                        g.initializer.push(t);
                    }
                }
            } else {
                nodes.push(n);
            }
        }
        g.node = nodes;
        m
    })
}

/// Equal on booleans as Not(Xor): tract compares numbers only.
fn lower_bool_equal() -> Transform {
    lowering("Equal", |n| {
        let out = &n.output[0];
        let x = format!("{out}_lowered_xor");
        let ins: Vec<&str> = n.input.iter().map(|s| s.as_str()).collect();
        (vec![node("Xor", &ins, &x, vec![]), node("Not", &[&x], out, vec![])], vec![])
    })
}

/// Mean as Sum divided by the number of inputs: tract's Mean fails on a first input of lower rank than its output.
fn lower_mean(elem: i32) -> Transform {
    lowering("Mean", move |n| {
        let out = &n.output[0];
        let sum = format!("{out}_lowered_sum");
        let count = format!("{out}_lowered_count");
        let ins: Vec<&str> = n.input.iter().map(|s| s.as_str()).collect();
        (
            vec![node("Sum", &ins, &sum, vec![]), node("Div", &[&sum, &count], out, vec![])],
            vec![scalar(&count, elem, ins.len() as f64)],
        )
    })
}

/// Gemm (alpha = beta = 1) as [Transpose] + MatMul + Add: tract's Gemm runs on f32 only.
fn lower_gemm() -> Transform {
    lowering("Gemm", |n| {
        let out = &n.output[0];
        let flag = |name: &str| n.attribute.iter().any(|a| a.name() == name && a.i == Some(1));
        let mut nodes = Vec::new();
        let (mut a, mut b) = (n.input[0].to_string(), n.input[1].to_string());
        if flag("transA") {
            let t = format!("{out}_lowered_at");
            nodes.push(node("Transpose", &[&a], &t, vec![]));
            a = t;
        }
        if flag("transB") {
            let t = format!("{out}_lowered_bt");
            nodes.push(node("Transpose", &[&b], &t, vec![]));
            b = t;
        }
        let ab = format!("{out}_lowered_ab");
        nodes.push(node("MatMul", &[&a, &b], &ab, vec![]));
        nodes.push(node("Add", &[&ab, &n.input[2]], out, vec![]));
        (nodes, vec![])
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Shapes.

/// Static pairs for binary numpy broadcasting: rank padding, size-1 axes on both sides, scalars, size 0, equal.
const STATIC_PAIRS: &[(&str, &str)] = &[
    ("2,3,4", "4"),
    ("4", "2,3,4"),
    ("2,3,4", "3,1"),
    ("2,1,4", "3,1"),
    ("1,3", "2,1"),
    ("2,1,4", "1,3,1"),
    ("5,1,1", "1,4"),
    ("2,3", ""),
    ("", "2,3"),
    ("2,3", "1"),
    ("1", ""),
    ("1,1,1", "2,3"),
    ("0,3", "3"),
    ("2,0", "1"),
    ("2,3", "2,3"),
];

/// Pairs with symbolic dims: a symbol with a known partner, two symbols, a symbol against itself.
const SYMBOLIC_PAIRS: &[(&str, &str)] = &[
    ("N,3", "3"),
    ("3", "N,3"),
    ("N,3", "1,3"),
    ("N,3", ""),
    ("N,1", "1,4"),
    ("N,3", "N,1"),
    ("N,1", "1,M"),
    ("1,N", "M,1"),
    ("N", "N,1"),
    ("B,N,4", "4"),
    ("N,3", "N,3"),
];

/// Triples for Where and the variadic ops.
const STATIC_TRIPLES: &[(&str, &str, &str)] = &[
    ("2,1,4", "3,1", "4"),
    ("", "2,3", "1,3"),
    ("1", "2,1", "1,3"),
    ("2,3,4", "", "4"),
    ("3,1", "1,1,4", "2,1,1"),
    ("0,3", "1", "3"),
    ("2,3", "2,3", "2,3"),
];

const SYMBOLIC_TRIPLES: &[(&str, &str, &str)] =
    &[("N,1", "1,3", "N,3"), ("N,1", "1,M", ""), ("1", "N,1", "1,4"), ("N,3", "N,3", "3"), ("N,1,1", "1,M,1", "1,1,4")];

fn all_pairs() -> impl Iterator<Item = (&'static str, &'static str)> {
    STATIC_PAIRS.iter().chain(SYMBOLIC_PAIRS).copied()
}

fn all_triples() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    STATIC_TRIPLES.iter().chain(SYMBOLIC_TRIPLES).copied()
}

fn label(spec: &str) -> String {
    format!("[{spec}]")
}

/// Binary multidirectional cases of `op` for each element type, with extra attributes per type.
fn binary_cases(cases: &mut Vec<Case>, op: &str, opset: i64, types: &[(i32, Vec<AttributeProto>)], bool_out: bool) {
    for (elem, attrs) in types {
        let tag: String = attrs
            .iter()
            .map(|a| match (&a.s, a.i) {
                (Some(s), _) => format!(" {}={}", a.name(), String::from_utf8_lossy(s)),
                (None, Some(i)) => format!(" {}={i}", a.name()),
                _ => String::new(),
            })
            .collect();
        for (a, b) in all_pairs() {
            let out = if bool_out { BOOL } else { *elem };
            let model =
                one_node_model(opset, ir_for(opset), op, &[("A", *elem, a), ("B", *elem, b)], attrs.clone(), out);
            let name = format!("{op}{tag} {} opset {opset} {} x {}", type_name(*elem), label(a), label(b));
            let mut case = Case::new(name, model);
            if op == "Equal" && *elem == BOOL {
                case.lower = Some(lower_bool_equal());
            }
            push_with_constants(cases, case, &["B", "A"]);
        }
    }
}

fn plain(types: &[i32]) -> Vec<(i32, Vec<AttributeProto>)> {
    types.iter().map(|&t| (t, Vec::new())).collect()
}

// ---------------------------------------------------------------------------------------------------------------
// Families.

#[test]
fn arithmetic_add_sub_mul_div_pow_mod() {
    let mut cases = Vec::new();
    for op in ["Add", "Sub", "Mul", "Div"] {
        binary_cases(&mut cases, op, 13, &plain(&[FLOAT, DOUBLE, INT32, INT64]), false);
    }
    binary_cases(&mut cases, "Pow", 13, &plain(&[FLOAT, DOUBLE, INT32, INT64]), false);
    // Pow's exponent has its own type from opset 12.
    for (a, b) in all_pairs() {
        let model = one_node_model(13, ir_for(13), "Pow", &[("A", FLOAT, a), ("B", INT64, b)], vec![], FLOAT);
        let name = format!("Pow f32^i64 opset 13 {} x {}", label(a), label(b));
        push_with_constants(&mut cases, Case::new(name, model), &["B"]);
    }
    binary_cases(
        &mut cases,
        "Mod",
        13,
        &[
            (FLOAT, vec![int_attr("fmod", 1)]),
            (DOUBLE, vec![int_attr("fmod", 1)]),
            (INT32, vec![]),
            (INT64, vec![int_attr("fmod", 0)]),
            (INT64, vec![int_attr("fmod", 1)]),
        ],
        false,
    );
    run_family("arithmetic", cases);
}

#[test]
fn bitshift_and_bitwise() {
    let mut cases = Vec::new();
    binary_cases(
        &mut cases,
        "BitShift",
        13,
        &[(UINT8, vec![string_attr("direction", "LEFT")]), (UINT8, vec![string_attr("direction", "RIGHT")])],
        false,
    );
    for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"] {
        binary_cases(&mut cases, op, 18, &plain(&[UINT8, INT32]), false);
    }
    run_family("bitshift and bitwise", cases);
}

#[test]
fn logical_and_or_xor() {
    let mut cases = Vec::new();
    for op in ["And", "Or", "Xor"] {
        binary_cases(&mut cases, op, 13, &plain(&[BOOL]), false);
    }
    run_family("logical", cases);
}

#[test]
fn comparison_equal_greater_less() {
    let mut cases = Vec::new();
    binary_cases(&mut cases, "Equal", 13, &plain(&[FLOAT, DOUBLE, INT32, INT64, BOOL]), true);
    // Strings compare from Equal-19.
    binary_cases(&mut cases, "Equal", 19, &plain(&[STRING]), true);
    for op in ["Greater", "Less", "GreaterOrEqual", "LessOrEqual"] {
        binary_cases(&mut cases, op, 13, &plain(&[FLOAT, DOUBLE, INT32, INT64]), true);
    }
    run_family("comparison", cases);
}

#[test]
fn where_select() {
    let mut cases = Vec::new();
    for elem in [FLOAT, DOUBLE, INT32, INT64, BOOL, STRING] {
        for opset in [13, 16] {
            for (c, x, y) in all_triples() {
                let model = one_node_model(
                    opset,
                    ir_for(opset),
                    "Where",
                    &[("C", BOOL, c), ("X", elem, x), ("Z", elem, y)],
                    vec![],
                    elem,
                );
                let name =
                    format!("Where {} opset {opset} {} ? {} : {}", type_name(elem), label(c), label(x), label(y));
                let case = Case::new(name, model);
                push_with_constants(&mut cases, case, &["C", "Z"]);
            }
        }
    }
    run_family("where", cases);
}

#[test]
fn variadic_sum_max_min_mean() {
    let mut cases = Vec::new();
    for (op, types) in [
        ("Sum", vec![FLOAT, DOUBLE]),
        ("Mean", vec![FLOAT, DOUBLE]),
        ("Max", vec![FLOAT, DOUBLE, INT32, INT64]),
        ("Min", vec![FLOAT, DOUBLE, INT32, INT64]),
    ] {
        for elem in types {
            for (a, b, c) in all_triples() {
                let model =
                    one_node_model(13, ir_for(13), op, &[("A", elem, a), ("B", elem, b), ("C", elem, c)], vec![], elem);
                let name = format!("{op} {} opset 13 {} {} {}", type_name(elem), label(a), label(b), label(c));
                let mut case = Case::new(name, model);
                let rank = |s: &str| dims_of(s).len();
                if op == "Mean" && rank(a) < rank(a).max(rank(b)).max(rank(c)) {
                    case.lower = Some(lower_mean(elem));
                }
                push_with_constants(&mut cases, case, &["C", "A"]);
            }
        }
    }
    run_family("variadic", cases);
}

/// Gemm's C of every unidirectional shape, with every transposition, static and symbolic M and N.
#[test]
fn gemm_c_unidirectional() {
    let mut cases = Vec::new();
    let (m, k, n) = ("2", "3", "4");
    let mut dims: Vec<(&str, &str, Vec<&str>)> = vec![(m, n, vec!["4", "1,4", "2,1", "", "1", "1,1", "2,4"])];
    // Symbolic M (from A) and N (from B), each with C shapes that stay unidirectional.
    dims.push(("M", n, vec!["4", "1,4", "M,1", "", "M,4"]));
    dims.push((m, "N", vec!["N", "1,N", "2,1", "1"]));
    dims.push(("M", "N", vec!["1", "1,N", "M,1", ""]));
    for opset in [13, 11] {
        for elem in [FLOAT, DOUBLE, INT32, INT64] {
            for (mm, nn, cs) in &dims {
                for (ta, tb) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let a = if ta == 1 { format!("{k},{mm}") } else { format!("{mm},{k}") };
                    let b = if tb == 1 { format!("{nn},{k}") } else { format!("{k},{nn}") };
                    for c in cs {
                        let mut attrs = vec![int_attr("transA", ta), int_attr("transB", tb)];
                        let scaled = ta == 1 && tb == 0 && elem == FLOAT;
                        if scaled {
                            attrs.push(float_attr("alpha", 0.5));
                            attrs.push(float_attr("beta", 2.0));
                        }
                        let model = one_node_model(
                            opset,
                            ir_for(opset),
                            "Gemm",
                            &[("A", elem, &a), ("B", elem, &b), ("C", elem, c)],
                            attrs,
                            elem,
                        );
                        let name = format!(
                            "Gemm {} opset {opset} transA={ta} transB={tb}{} A{} B{} C{}",
                            type_name(elem),
                            if scaled { " alpha=0.5 beta=2" } else { "" },
                            label(&a),
                            label(&b),
                            label(c)
                        );
                        let mut case = Case::new(name, model);
                        match elem {
                            FLOAT => {}
                            DOUBLE => case.lower = Some(lower_gemm()),
                            // tract's MatMul has no integer kernels either ("Can't build a WeightType from I64").
                            _ => case.runnable = false,
                        }
                        push_with_constants(&mut cases, case, &["C"]);
                    }
                }
            }
        }
    }
    // Gemm before opset 7: C broadcasts only with broadcast=1; tract broadcasts C either way.
    for c in ["4", "1,4", "", "1"] {
        let model = one_node_model(
            6,
            ir_for(6),
            "Gemm",
            &[("A", FLOAT, "2,3"), ("B", FLOAT, "3,4"), ("C", FLOAT, c)],
            vec![int_attr("broadcast", 1)],
            FLOAT,
        );
        let name = format!("Gemm f32 opset 6 broadcast=1 C{}", label(c));
        push_with_constants(&mut cases, Case::new(name, model), &["C"]);
    }
    run_family("gemm", cases);
}

/// PRelu's slope towards X; before opset 7 the per-channel form, checked against an explicit reference.
#[test]
fn prelu_slope() {
    let mut cases = Vec::new();
    let static_x = "2,3,4,5";
    let slopes = ["5", "4,5", "3,1,1", "1,3,1,1", "1", "", "1,1,5", "2,3,4,5"];
    let symbolic: &[(&str, &str)] = &[("N,3,4,5", "3,1,1"), ("N,3,4,5", "5"), ("N,3", "3"), ("N,M", "1"), ("N,M", "")];
    for opset in [13, 16] {
        for elem in [FLOAT, DOUBLE, INT32, INT64] {
            let pairs = slopes.iter().map(|s| (static_x, *s)).chain(symbolic.iter().copied());
            for (x, s) in pairs {
                let model =
                    one_node_model(opset, ir_for(opset), "PRelu", &[("X", elem, x), ("S", elem, s)], vec![], elem);
                let name = format!("PRelu {} opset {opset} X{} slope{}", type_name(elem), label(x), label(s));
                push_with_constants(&mut cases, Case::new(name, model), &["S"]);
            }
        }
    }
    // PRelu-6: a 1-D slope of C elements applies per channel (axis 1); tract reads it numpy-style, so the rewrite
    // is compared with Reshape(slope, [1, C, 1, 1]) + PRelu-13.
    for (s, mapped) in [("3", Some("1,3,1,1")), ("1", None), ("5", None)] {
        let model = one_node_model(6, ir_for(6), "PRelu", &[("X", FLOAT, static_x), ("S", FLOAT, s)], vec![], FLOAT);
        let mut case = Case::new(format!("PRelu f32 opset 6 X{} slope{}", label(static_x), label(s)), model);
        if let Some(mapped) = mapped {
            case.reference = Some(reshaped("PRelu", "X", "S", mapped));
        }
        push_with_constants(&mut cases, case, &["S"]);
    }
    run_family("prelu", cases);
}

/// Opset 7: numpy broadcasting, but no Expand yet: the rewrite tiles (Reshape + Tile); symbolic shapes are left.
#[test]
fn opset7_reshape_tile() {
    let mut cases = Vec::new();
    for op in ["Add", "Mul", "Sub", "Div"] {
        for elem in [FLOAT, INT64] {
            for (a, b) in all_pairs() {
                let symbolic = static_dims(a).is_none() || static_dims(b).is_none();
                for ir in [3, 4] {
                    let model = one_node_model(7, ir, op, &[("A", elem, a), ("B", elem, b)], vec![], elem);
                    let name = format!("{op} {} opset 7 ir {ir} {} x {}", type_name(elem), label(a), label(b));
                    let mut case = Case::new(name, model);
                    // Equal symbolic shapes need no rewrite; other symbolic ones cannot be tiled.
                    case.expect_left = symbolic && a != b;
                    if ir >= 4 {
                        push_with_constants(&mut cases, case, &["B", "A"]);
                    } else {
                        cases.push(case);
                    }
                }
            }
        }
    }
    for (a, b) in STATIC_PAIRS.iter().copied() {
        let model = one_node_model(7, 3, "Equal", &[("A", INT64, a), ("B", INT64, b)], vec![], BOOL);
        cases.push(Case::new(format!("Equal i64 opset 7 ir 3 {} x {}", label(a), label(b)), model));
    }
    run_family("opset 7 (Reshape + Tile)", cases);
}

/// Opset 6: `broadcast=1` lets B onto A, right-aligned or from `axis`. tract ignores `broadcast` and `axis` and
/// broadcasts numpy-style, so a B that does not sit at A's end is compared with Reshape(B, mapped) + op-13.
#[test]
fn opset6_legacy_broadcast_axis() {
    let mut cases = Vec::new();
    let a = "2,3,4,5";
    // (B, axis, B reshaped to A's rank when it does not line up numpy-style)
    let forms: &[(&str, Option<i64>, Option<&str>)] = &[
        ("5", None, None),
        ("4,5", None, None),
        ("", None, None),
        ("1,1", None, None),
        ("1", None, None),
        ("5", Some(3), None),
        ("4,5", Some(2), None),
        ("3,4", Some(1), Some("1,3,4,1")),
        ("2", Some(0), Some("2,1,1,1")),
        ("3", Some(1), Some("1,3,1,1")),
        ("4", Some(2), Some("1,1,4,1")),
        ("3,1", Some(1), Some("1,3,1,1")),
        ("2,3", Some(0), Some("2,3,1,1")),
        ("2,3,4,5", None, None),
    ];
    for op in ["Add", "Mul", "Sub", "Div"] {
        for elem in [FLOAT, INT32] {
            for &(b, axis, mapped) in forms {
                let mut attrs = vec![int_attr("broadcast", 1)];
                attrs.extend(axis.map(|x| int_attr("axis", x)));
                for ir in [3, 4] {
                    let model = one_node_model(6, ir, op, &[("A", elem, a), ("B", elem, b)], attrs.clone(), elem);
                    let axis_text = axis.map(|x| format!(" axis={x}")).unwrap_or_default();
                    let name = format!(
                        "{op} {} opset 6 ir {ir} broadcast=1{axis_text} {} x {}",
                        type_name(elem),
                        label(a),
                        label(b)
                    );
                    let mut case = Case::new(name, model);
                    if let Some(m) = mapped {
                        case.reference = Some(reshaped(op, "A", "B", m));
                    }
                    if ir >= 4 {
                        push_with_constants(&mut cases, case, &["B"]);
                    } else {
                        cases.push(case);
                    }
                }
            }
        }
    }
    run_family("opset 6 legacy broadcast", cases);
}

/// `model` with its nodes replaced by `nodes` (the last one writes `out`) at opset 13, keeping its inputs,
/// initializers and output: a reference computation over the very same values.
fn with_nodes(model: &ModelProto, nodes: Vec<NodeProto>, initializers: Vec<TensorProto>) -> ModelProto {
    let mut graph = model.graph.clone().unwrap();
    graph.name = Some("reference".into());
    graph.node = nodes;
    graph.initializer.extend(initializers);
    model_of(13, ir_for(13), graph)
}

/// `op(first, Reshape(second, mapped))`: a legacy form's meaning, written out.
fn reshaped(op: &'static str, first: &'static str, second: &'static str, mapped: &str) -> Transform {
    let dims = static_dims(mapped).unwrap();
    Rc::new(move |m| {
        let shape = TensorProto {
            name: Some("reference_shape".into()),
            dims: vec![dims.len() as i64],
            data_type: Some(INT64),
            int64_data: dims.clone(),
            ..Default::default()
        };
        with_nodes(
            m,
            vec![
                node("Reshape", &[second, "reference_shape"], "reference_reshaped", vec![]),
                node(op, &[first, "reference_reshaped"], "out", vec![]),
            ],
            vec![shape],
        )
    })
}

/// A scalar constant of `elem` holding `v`.
fn scalar(name: &str, elem: i32, v: f64) -> TensorProto {
    let raw: Vec<u8> = match elem {
        FLOAT => (v as f32).to_le_bytes().to_vec(),
        DOUBLE => v.to_le_bytes().to_vec(),
        INT32 => (v as i32).to_le_bytes().to_vec(),
        INT64 => (v as i64).to_le_bytes().to_vec(),
        _ => panic!("no scalar of element type {elem}"),
    };
    TensorProto { name: Some(name.into()), data_type: Some(elem), raw_data: Some(raw.into()), ..Default::default() }
}

// ---------------------------------------------------------------------------------------------------------------
// The checker checked: verify must catch a wrong rewrite, and must not pass what tract cannot run.

fn add_model(a: &str, b: &str) -> ModelProto {
    one_node_model(13, ir_for(13), "Add", &[("A", FLOAT, a), ("B", FLOAT, b)], vec![], FLOAT)
}

/// `model` with B replaced by `Expand(Reshape(B, reshape), target)` in front of its single node.
fn with_expanded_b(model: &ModelProto, reshape: &[i64], target: &[i64], declared: Option<&str>) -> ModelProto {
    let mut m = model.clone();
    let g = m.graph.as_mut().unwrap();
    let int64s = |name: &str, v: &[i64]| TensorProto {
        name: Some(name.into()),
        dims: vec![v.len() as i64],
        data_type: Some(INT64),
        int64_data: v.to_vec(),
        ..Default::default()
    };
    g.initializer.push(int64s("b_shape", reshape));
    g.initializer.push(int64s("b_target", target));
    let op = g.node.remove(0);
    let mut op2 = op.clone();
    op2.input[1] = "b_expanded".into();
    g.node = vec![
        node("Reshape", &["B", "b_shape"], "b_reshaped", vec![]),
        node("Expand", &["b_reshaped", "b_target"], "b_expanded", vec![]),
        op2,
    ];
    if let Some(shape) = declared {
        g.value_info.push(value("b_expanded", FLOAT, Some(shape)));
    }
    m
}

#[test]
fn verify_catches_a_misaligned_expand() {
    // B [2,1] broadcast along the wrong axis: reshaped to [1,2] before the Expand, its values land transposed.
    let original = add_model("2,2", "2,1");
    let wrong = with_expanded_b(&original, &[1, 2], &[2, 2], None);
    let report = verify::verify(&original.encode_to_vec(), &wrong.encode_to_vec(), 7).expect("both run");
    assert!(report.differs(), "a transposed broadcast must show: {report}");
    let right = with_expanded_b(&original, &[2, 1], &[2, 2], Some("2,2"));
    let report = verify::verify(&original.encode_to_vec(), &right.encode_to_vec(), 7).expect("both run");
    assert!(!report.differs(), "{report}: {:?}", report.differences());
}

#[test]
fn verify_catches_swapped_operands() {
    let original = one_node_model(13, ir_for(13), "Sub", &[("A", INT64, "2,3"), ("B", INT64, "3")], vec![], INT64);
    let mut swapped = with_expanded_b(&original, &[1, 3], &[2, 3], None);
    let sub = swapped.graph.as_mut().unwrap().node.last_mut().unwrap();
    sub.input = smallvec::smallvec!["b_expanded".into(), "A".into()];
    let report = verify::verify(&original.encode_to_vec(), &swapped.encode_to_vec(), 1).expect("both run");
    assert!(report.differs());
    assert!(report.differences()[0].contains("differ"), "{:?}", report.differences());
}

#[test]
fn verify_rejects_a_rewrite_that_declares_a_wrong_shape() {
    let original = add_model("2,3", "3");
    let lying = with_expanded_b(&original, &[1, 3], &[2, 3], Some("3,2"));
    match verify::verify(&original.encode_to_vec(), &lying.encode_to_vec(), 3) {
        Err(verify::VerifyError::Rewritten { .. }) => {}
        other => panic!("a wrong value_info must fail the rewritten model, got {other:?}"),
    }
}

#[test]
fn verify_refuses_a_model_tract_cannot_run() {
    let unknown = one_node_model(13, ir_for(13), "NoSuchOp", &[("A", FLOAT, "2")], vec![], FLOAT);
    let bytes = unknown.encode_to_vec();
    match verify::verify(&bytes, &bytes, 0) {
        Err(e @ verify::VerifyError::Original { .. }) => assert!(e.to_string().contains("NoSuchOp"), "{e}"),
        other => panic!("an op tract lacks must be an error, never a pass: {other:?}"),
    }
}

#[test]
fn verify_binds_symbols_until_the_model_runs() {
    // N and M must be equal: distinct sizes fail, then all symbols at 3 run.
    let original = add_model("N,3", "M,3");
    let report = verify::verify(&original.encode_to_vec(), &original.encode_to_vec(), 5).expect("some binding runs");
    assert_eq!(report.binding, vec![("N".to_string(), 3), ("M".to_string(), 3)]);
    assert_eq!(report.bindings_tried, 2);
    assert_eq!(report.inputs[0].shape, vec![3, 3]);
}

/// `expand --verify`: runs both models when built with the `verify` feature, and says how to get it otherwise.
#[test]
fn cli_expand_verify() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.onnx");
    let output = dir.path().join("out.onnx");
    std::fs::write(&input, add_model("N,3", "3").encode_to_vec()).unwrap();
    let out = assert_cmd::Command::cargo_bin("onnx-bcast")
        .unwrap()
        .args(["expand", "--verify"])
        .arg(&input)
        .arg(&output)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "verify") {
        assert_eq!(out.status.code(), Some(0), "stdout: {stdout}\nstderr: {stderr}");
        assert!(stdout.contains("1 output(s) match") && stdout.contains("N=2"), "{stdout}");
    } else {
        assert_eq!(out.status.code(), Some(2), "stdout: {stdout}\nstderr: {stderr}");
        assert!(stderr.contains("rebuild with --features verify"), "{stderr}");
        assert!(!output.exists(), "nothing is written when --verify cannot run");
    }
}
