//! Attributes read as onnxruntime and ONNX's inference read them: an attribute present with its field unset has the
//! protobuf default (0, 0.0, empty), not the operator's documented default. Each test is one op where the two
//! readings give different facts; the expected ones were confirmed in onnxruntime 1.31 and onnx 1.22.

use super::infer;
use super::test_support::{int, run_rule, unset};
use crate::onnx::pb::attribute_proto::AttributeType;
use crate::onnx::pb::AttributeProto;
use crate::onnx::tensor::{ValueFacts, BOOL, INT64};
use crate::sizes::shape::parse_shape;

const FLOAT: i32 = 1;

fn t(shape: &str) -> Option<ValueFacts> {
    Some(ValueFacts::tensor(Some(FLOAT), parse_shape(shape)))
}

fn out(op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>], n: usize) -> Vec<ValueFacts> {
    run_rule(infer, op, opset, attrs, inputs, n)
}

fn shape(op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]) -> String {
    out(op, opset, attrs, inputs, 1)[0].shape.to_string()
}

fn unset_int(name: &str) -> AttributeProto {
    unset(name, AttributeType::Int)
}

#[test]
fn flatten_axis_present_but_unset_is_zero_not_the_documented_one() {
    assert_eq!(shape("Flatten", 13, vec![unset_int("axis")], &[t("2,3")]), "[1, 6]");
    assert_eq!(shape("Flatten", 13, vec![], &[t("2,3")]), "[2, 3]");
}

#[test]
fn reduce_and_arg_keepdims_present_but_unset_drop_the_axes() {
    assert_eq!(shape("ReduceSum", 13, vec![unset_int("keepdims")], &[t("2,3")]), "[]");
    assert_eq!(shape("ReduceSum", 13, vec![], &[t("2,3")]), "[1, 1]");
    assert_eq!(shape("ArgMax", 13, vec![unset_int("keepdims")], &[t("2,3")]), "[3]");
    assert_eq!(shape("ArgMax", 13, vec![], &[t("2,3")]), "[1, 3]");
}

#[test]
fn shape_end_present_but_unset_is_zero_elements() {
    let end = out("Shape", 18, vec![unset_int("end")], &[t("2,3")], 1);
    assert_eq!(end[0].shape.to_string(), "[0]");
    assert_eq!(shape("Shape", 18, vec![], &[t("2,3")]), "[2]");
}

#[test]
fn compress_and_unique_axis_present_but_unset_keep_the_rank() {
    let cond = Some(ValueFacts::tensor(Some(BOOL), parse_shape("2")));
    // Axis 0 keeps the rank: `[2, 3]` → `[?, 3]`; without `axis` the input is flattened.
    assert_eq!(shape("Compress", 13, vec![unset_int("axis")], &[t("2,3"), cond.clone()]), "[?1, 3]");
    assert_eq!(shape("Compress", 13, vec![], &[t("2,3"), cond]), "[?1]");
    let unique = out("Unique", 11, vec![unset_int("axis")], &[t("2,3")], 4);
    assert_eq!(unique[0].shape.to_string(), "[?1, 3]");
    assert_eq!(unique[2].shape.to_string(), "[2]");
}

#[test]
fn axis_attributes_with_a_documented_minus_one_read_zero_when_unset() {
    let ln = out("LayerNormalization", 17, vec![unset_int("axis")], &[t("2,3,4"), t("2,3,4")], 3);
    assert_eq!(ln[1].shape.to_string(), "[1, 1, 1]");
    let depth = Some(ValueFacts { value: Some(vec![Some(crate::sizes::sym::Poly::constant(5))]), ..t("1").unwrap() });
    assert_eq!(shape("OneHot", 11, vec![unset_int("axis")], &[t("2,3"), depth.clone(), t("2")]), "[5, 2, 3]");
    assert_eq!(shape("OneHot", 11, vec![], &[t("2,3"), depth, t("2")]), "[2, 3, 5]");
    let k = Some(ValueFacts { value: Some(vec![Some(crate::sizes::sym::Poly::constant(1))]), ..t("1").unwrap() });
    assert_eq!(shape("TopK", 11, vec![unset_int("axis")], &[t("4,5"), k]), "[1, 5]");
}

#[test]
fn roi_align_output_size_present_but_unset_is_zero() {
    let rois = t("7,4");
    let batch = Some(ValueFacts::tensor(Some(INT64), parse_shape("7")));
    let attrs = vec![unset_int("output_height"), int("output_width", 2)];
    assert_eq!(shape("RoiAlign", 16, attrs, &[t("1,3,8,8"), rois, batch]), "[7, 3, 0, 2]");
}

#[test]
fn type_attributes_present_but_unset_name_no_type() {
    // `to` of 0 is UNDEFINED: no element type, never type 0.
    assert_eq!(out("Cast", 13, vec![unset_int("to")], &[t("2")], 1)[0].elem, None);
    assert_eq!(out("Cast", 13, vec![int("to", 7)], &[t("2")], 1)[0].elem, Some(INT64));
    assert_eq!(out("RandomNormalLike", 13, vec![unset_int("dtype")], &[t("2")], 1)[0].elem, Some(FLOAT));
    let ln = out("LayerNormalization", 17, vec![unset_int("stash_type")], &[t("2,3"), t("3")], 3);
    assert_eq!((ln[1].elem, ln[0].elem), (None, Some(FLOAT)));
}

#[test]
fn constant_value_int_present_but_unset_is_zero() {
    let c = out("Constant", 13, vec![unset_int("value_int")], &[], 1);
    assert_eq!(c[0].value, Some(vec![Some(crate::sizes::sym::Poly::constant(0))]));
    let f = out("Constant", 13, vec![unset("value_float", AttributeType::Float)], &[], 1);
    assert_eq!(f[0].floats, Some(vec![0.0]));
}

#[test]
fn attrs_read_the_protobuf_default_only_when_present() {
    use crate::onnx::attr::Attrs;
    use crate::onnx::pb::NodeProto;
    let node = NodeProto {
        attribute: vec![unset_int("i"), unset("f", AttributeType::Float), unset("s", AttributeType::String)],
        ..Default::default()
    };
    let attrs = Attrs::new(&node, None);
    assert_eq!((attrs.int("i"), attrs.float("f"), attrs.string("s")), (Some(0), Some(0.0), Some(&b""[..])));
    assert_eq!((attrs.int("absent"), attrs.float("absent"), attrs.string("absent")), (None, None, None));
    assert_eq!(attrs.ints("i"), Some(&[][..]));
}

#[test]
fn legacy_broadcast_axis_present_but_unset_places_b_at_axis_zero() {
    use crate::onnx::attr::Attrs;
    use crate::onnx::pb::NodeProto;
    use crate::rules::{bind, NodeView, VerdictKind};
    let (a, b) = (t("2,3,4").unwrap(), t("2").unwrap());
    let judge = |attrs: Vec<AttributeProto>| {
        let node =
            NodeProto { input: smallvec::smallvec!["A".into(), "B".into()], attribute: attrs, ..Default::default() };
        let facts = [Some(&a), Some(&b)];
        let view = NodeView::new(&node.input, &facts, Attrs::new(&node, None));
        bind(crate::rules::ops::SiteKind::LegacyBinary, &view).outcome.verdict.kind()
    };
    // `axis` unset is 0: B's 2 meets A's axis 0. Absent, B lines up with A's last axis (4).
    assert_eq!(judge(vec![int("broadcast", 1), unset_int("axis")]), VerdictKind::Broadcast);
    assert_eq!(judge(vec![int("broadcast", 1)]), VerdictKind::Violation);
    // `broadcast` unset is 0: no broadcast at all, the shapes must be equal.
    assert_eq!(judge(vec![unset_int("broadcast")]), VerdictKind::Violation);
}

#[test]
fn string_attributes_present_but_unset_are_empty() {
    use super::test_support::string;
    let sizes = Some(ValueFacts {
        value: Some(vec![Some(crate::sizes::sym::Poly::constant(6)), Some(crate::sizes::sym::Poly::constant(6))]),
        ..ValueFacts::tensor(Some(INT64), parse_shape("2"))
    });
    let inputs = [t("3,5"), None, None, sizes];
    // An empty keep_aspect_ratio_policy is none of the three (onnxruntime refuses it): nothing is claimed.
    let policy = vec![unset("keep_aspect_ratio_policy", AttributeType::String)];
    assert_eq!(shape("Resize", 18, policy, &inputs), "[?, ?]");
    assert_eq!(shape("Resize", 18, vec![string("keep_aspect_ratio_policy", "stretch")], &inputs), "[6, 6]");
    // An empty auto_pad is NOTSET, as when absent.
    let conv = |attrs| shape("Conv", 13, attrs, &[t("1,1,5,5"), t("1,1,3,3")]);
    assert_eq!(conv(vec![unset("auto_pad", AttributeType::String)]), conv(vec![]));
}

#[test]
fn int_attributes_present_but_unset_in_other_ops() {
    // TopK-1's k unset is 0 elements.
    assert_eq!(shape("TopK", 1, vec![unset_int("k")], &[t("4,5")]), "[4, 0]");
    // Split-18's num_outputs unset is 0 parts, not the node's outputs: nothing is claimed.
    assert_eq!(out("Split", 18, vec![unset_int("num_outputs")], &[t("6")], 2)[0].shape.to_string(), "[?]");
    // An RNN's hidden_size unset is 0, no size: the weights say it.
    let rnn = out("RNN", 14, vec![unset_int("hidden_size")], &[t("S,B,10"), t("1,7,10"), t("1,7,7")], 2);
    assert_eq!(rnn[1].shape.to_string(), "[1, B, 7]");
}

#[test]
fn transpose_perm_present_but_empty_is_no_permutation() {
    let empty = unset("perm", AttributeType::Ints);
    let (outs, found) = super::test_support::run_rule_checked(infer, "Transpose", 13, vec![empty], &[t("2,3")], 1);
    assert!(found.iter().any(super::Contradiction::is_certain), "onnxruntime refuses it");
    assert_eq!(outs[0].shape.to_string(), "[unknown rank]");
    assert_eq!(shape("Transpose", 13, vec![], &[t("2,3")]), "[3, 2]");
}

#[test]
fn documented_string_and_flag_defaults_do_not_apply_to_an_unset_attribute() {
    // BatchNormalization-7's `spatial` unset is 0 (per-activation statistics), not 1: nothing says their shape.
    let bn = out("BatchNormalization", 7, vec![unset_int("spatial")], &[t("N,C,H,W"), t("C"), t("C"), None, None], 5);
    assert_eq!(bn[1].shape.to_string(), "[unknown rank]");
    let bn = out("BatchNormalization", 7, vec![], &[t("N,C,H,W"), t("C"), t("C"), None, None], 5);
    assert_eq!(bn[1].shape.to_string(), "[C]");
    // An RNN's `direction` unset is empty, not "forward": the directions come from W.
    let rnn = |attrs| out("RNN", 14, attrs, &[t("S,B,10"), t("D,7,10"), t("D,7,7")], 2)[1].shape.to_string();
    assert_eq!(rnn(vec![unset("direction", AttributeType::String)]), "[D, B, 7]");
    assert_eq!(rnn(vec![]), "[1, B, 7]");
    // A loss's `reduction` unset is empty, not "mean": no shape is claimed.
    let labels = Some(ValueFacts::tensor(Some(INT64), parse_shape("N")));
    let loss = |attrs| shape("NegativeLogLikelihoodLoss", 13, attrs, &[t("N,C"), labels.clone()]);
    assert_eq!(loss(vec![unset("reduction", AttributeType::String)]), "[unknown rank]");
    assert_eq!(loss(vec![]), "[]");
    // RandomUniform's `dtype` unset is 0, no type, not float.
    let shape_attr = super::test_support::ints("shape", &[2]);
    assert_eq!(out("RandomUniform", 13, vec![shape_attr.clone(), unset_int("dtype")], &[], 1)[0].elem, None);
    assert_eq!(out("RandomUniform", 13, vec![shape_attr], &[], 1)[0].elem, Some(FLOAT));
}
