//! One test per example and per rule statement of the five specification documents: ONNX `docs/Broadcasting.md`, the
//! SONNX profile's Broadcast spec (and its earlier draft), the OpenVINO broadcast rules and OpenVINO `Broadcast-1`.
//!
//! Each group names the document and section it comes from, and each test quotes the sentence it proves. Where a
//! document disagrees with numpy on a dimension of size 0, numpy and ONNX win: 0 with 1 gives 0, 0 with 3 is a
//! violation.

use onnx_bcast::rules::{
    bidirectional, equal_shapes, legacy_axis, multidirectional, unidirectional, ConditionKind, Outcome, Verdict,
    ViolationKind,
};
use onnx_bcast::sizes::shape::{parse_shape, Dim, Shape};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

fn s(text: &str) -> Shape {
    parse_shape(text)
}

fn multi(shapes: &[&str]) -> Outcome {
    let owned: Vec<Shape> = shapes.iter().map(|t| s(t)).collect();
    let refs: Vec<&Shape> = owned.iter().collect();
    multidirectional(&refs)
}

fn uni(a: &str, b: &str) -> Outcome {
    unidirectional(&s(a), &s(b))
}

fn legacy(a: &str, b: &str, axis: Option<i64>) -> Outcome {
    legacy_axis(&s(a), &s(b), axis)
}

fn equal(shapes: &[&str]) -> Outcome {
    let owned: Vec<Shape> = shapes.iter().map(|t| s(t)).collect();
    let refs: Vec<&Shape> = owned.iter().collect();
    equal_shapes(&refs)
}

fn bidi(data: &str, target: &str) -> Outcome {
    bidirectional(&s(data), &s(target))
}

#[track_caller]
fn assert_broadcast(o: &Outcome, expected: &str) {
    assert_eq!(o.verdict, Verdict::Broadcast, "verdict of {o:?}");
    assert_eq!(o.output, s(expected), "output of {o:?}");
}

#[track_caller]
fn assert_same(o: &Outcome, expected: &str) {
    assert_eq!(o.verdict, Verdict::Same, "verdict of {o:?}");
    assert_eq!(o.output, s(expected), "output of {o:?}");
}

/// Asserts a violation for `input` on `axis` and returns its kind.
#[track_caller]
fn assert_violation(o: &Outcome, input: usize, axis: Option<usize>) -> ViolationKind {
    match &o.verdict {
        Verdict::Violation(v) => {
            assert_eq!(v.input, input, "offending input of {o:?}");
            assert_eq!(v.axis, axis, "offending axis of {o:?}");
            v.kind.clone()
        }
        other => panic!("expected a violation of input {input} on axis {axis:?}, got {other:?} in {o:?}"),
    }
}

#[track_caller]
fn assert_mismatch(o: &Outcome, input: usize, axis: usize, found: u64, expected: u64, against: usize) {
    let kind = assert_violation(o, input, Some(axis));
    assert_eq!(kind, ViolationKind::Mismatch { found: Dim::Known(found), expected: Dim::Known(expected), against });
}

/// The conditions of a conditional outcome, displayed, with their axes.
#[track_caller]
fn conditions(o: &Outcome) -> Vec<(usize, String)> {
    match &o.verdict {
        Verdict::Conditional(cs) => cs.iter().map(|c| (c.axis, c.to_string())).collect(),
        other => panic!("expected a conditional verdict, got {other:?} in {o:?}"),
    }
}

fn broadcast_dim(names: &[&str]) -> Dim {
    let v: Vec<Arc<str>> = names.iter().map(|n| Arc::from(*n)).collect();
    Dim::Broadcast(v.into())
}

// ---------------------------------------------------------------------------------------------------------------
// ONNX `docs/Broadcasting.md`, "Multidirectional Broadcasting": the examples
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn onnx_multidirectional_a_2345_b_scalar() {
    assert_broadcast(&multi(&["2,3,4,5", ""]), "2,3,4,5");
}

#[test]
fn onnx_multidirectional_a_2345_b_5() {
    assert_broadcast(&multi(&["2,3,4,5", "5"]), "2,3,4,5");
}

#[test]
fn onnx_multidirectional_a_45_b_2345() {
    assert_broadcast(&multi(&["4,5", "2,3,4,5"]), "2,3,4,5");
}

#[test]
fn onnx_multidirectional_a_145_b_2311() {
    assert_broadcast(&multi(&["1,4,5", "2,3,1,1"]), "2,3,4,5");
}

#[test]
fn onnx_multidirectional_a_345_b_2111() {
    assert_broadcast(&multi(&["3,4,5", "2,1,1,1"]), "2,3,4,5");
}

// ONNX `docs/Broadcasting.md`, "Multidirectional Broadcasting": the rule statements

/// "The tensors all have exactly the same shape."
#[test]
fn onnx_multidirectional_rule1_same_shape_is_same() {
    assert_same(&multi(&["2,3,4,5", "2,3,4,5"]), "2,3,4,5");
    assert_same(&multi(&["2,3", "2,3", "2,3"]), "2,3");
}

/// "The tensors all have the same number of dimensions and the length of each dimensions is either a common
/// length or 1."
#[test]
fn onnx_multidirectional_rule2_common_length_or_one() {
    assert_broadcast(&multi(&["2,1,4", "1,3,4"]), "2,3,4");
    assert_broadcast(&multi(&["1,1", "5,7"]), "5,7");
}

/// The converse of rule 2: a length that is neither the common length nor 1 is not broadcastable.
#[test]
fn onnx_multidirectional_rule2_other_length_is_violation() {
    assert_mismatch(&multi(&["2,3", "2,4"]), 1, 1, 4, 3, 0);
}

/// "The tensors that have too few dimensions can have their shapes prepended with a dimension of length 1."
#[test]
fn onnx_multidirectional_rule3_prepend_ones() {
    assert_broadcast(&multi(&["3", "2,1"]), "2,3");
    assert_broadcast(&multi(&["", "1,1,1"]), "1,1,1");
}

/// "Multidirectional broadcasting is the same as Numpy's broadcasting", for any number of inputs (Sum, Max,
/// Mean, Min, Where take more than two).
#[test]
fn onnx_multidirectional_variadic_three_inputs() {
    assert_broadcast(&multi(&["3,1,5", "4,1", "1"]), "3,4,5");
    assert_broadcast(&multi(&["1", "2,1,1", "6,1"]), "2,6,1");
}

// ---------------------------------------------------------------------------------------------------------------
// ONNX `docs/Broadcasting.md`, "Unidirectional Broadcasting": the examples (B towards A)
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn onnx_unidirectional_b_scalar() {
    assert_broadcast(&uni("2,3,4,5", ""), "2,3,4,5");
}

#[test]
fn onnx_unidirectional_b_5() {
    assert_broadcast(&uni("2,3,4,5", "5"), "2,3,4,5");
}

#[test]
fn onnx_unidirectional_b_2115() {
    assert_broadcast(&uni("2,3,4,5", "2,1,1,5"), "2,3,4,5");
}

#[test]
fn onnx_unidirectional_b_1315() {
    assert_broadcast(&uni("2,3,4,5", "1,3,1,5"), "2,3,4,5");
}

// ONNX `docs/Broadcasting.md`, "Unidirectional Broadcasting": the rule statements

/// "Tensor A and B both have exactly the same shape."
#[test]
fn onnx_unidirectional_rule1_same_shape_is_same() {
    assert_same(&uni("2,3,4,5", "2,3,4,5"), "2,3,4,5");
    assert_same(&uni("", ""), "");
}

/// "... the length of each dimensions is either a common length or B's length is 1."
#[test]
fn onnx_unidirectional_rule2_b_common_length_or_one() {
    assert_broadcast(&uni("2,3", "1,3"), "2,3");
    assert_broadcast(&uni("2,3", "1,1"), "2,3");
}

/// "Tensor B has too few dimensions, and B can have its shapes prepended with a dimension of length 1."
#[test]
fn onnx_unidirectional_rule3_b_prepended_with_ones() {
    assert_broadcast(&uni("2,3,4", "3,1"), "2,3,4");
}

/// "the output's shape is the same as the shape of A (i.e., the larger shape of two input tensors)", also when
/// B is all 1s and when A is symbolic.
#[test]
fn onnx_unidirectional_output_is_a_shape() {
    assert_eq!(uni("2,3,4,5", "1,1").output, s("2,3,4,5"));
    assert_eq!(uni("N,3", "3").output, s("N,3"));
    assert_eq!(uni("N,3", "1").output, s("N,3"));
    // Even when B does not fit, the reported output is A's shape.
    assert_eq!(uni("2,3", "4").output, s("2,3"));
}

/// B may never have more dims than A (unidirectional is one way only).
#[test]
fn onnx_unidirectional_b_larger_rank_rejected() {
    let o = uni("4,5", "2,4,5");
    assert_eq!(assert_violation(&o, 1, None), ViolationKind::RankTooLarge { rank: 3, target_rank: 2 });
    // Even if it would be a numpy broadcast with A as the smaller side.
    let o = uni("", "1");
    assert_eq!(assert_violation(&o, 1, None), ViolationKind::RankTooLarge { rank: 1, target_rank: 0 });
}

/// B may never be larger than A on any axis: A's 1 is not broadcast towards B.
#[test]
fn onnx_unidirectional_b_larger_size_rejected() {
    assert_mismatch(&uni("2,1,5", "2,3,5"), 1, 1, 3, 1, 0);
    assert_mismatch(&uni("2,1,5", "3,5"), 1, 1, 3, 1, 0);
}

/// A length of B that is neither A's nor 1 is rejected, reported in A's (output) coordinates.
#[test]
fn onnx_unidirectional_b_mismatch_rejected() {
    assert_mismatch(&uni("2,3,4,5", "3,5"), 1, 2, 3, 4, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// The SONNX profile's Broadcast spec: "Signature", "Description of step 1", "Description of step 2",
// "Constraints" (C1)
// ---------------------------------------------------------------------------------------------------------------

/// Signature: "L ∈ [0, 2^31-1[: number of tensors to be broadcasted minus one" — one tensor alone is its own
/// broadcast.
#[test]
fn sonnx_signature_single_tensor_is_same() {
    assert_same(&multi(&["2,3,4"]), "2,3,4");
    assert_same(&multi(&[""]), "");
}

/// Step 1: "The common number of dimensions is the largest number of dimensions among the input tensors."
#[test]
fn sonnx_step1_rank_is_max_rank() {
    let o = multi(&["5", "2,1,5", "7,1,1,1"]);
    assert_eq!(o.output.rank(), Some(4));
    assert_broadcast(&o, "7,2,1,5");
}

/// Step 1: "the dimensions to be completed are those of lower indexes, those dimensions are set to a size equal
/// to 1".
#[test]
fn sonnx_step1_pads_lower_indexes_with_ones() {
    // 3 lands on the last axis, not the first.
    assert_broadcast(&multi(&["3", "2,1"]), "2,3");
    // The padded axes are 1 (they do not change a rank-3 all-1 partner).
    assert_broadcast(&multi(&["3,4", "1,1,1"]), "1,3,4");
}

/// Step 2: "the size for a dimension is equal to the maximum of the sizes of all the input tensors for that
/// dimension after expansion" (for sizes other than 0, see the numpy_zero_* tests).
#[test]
fn sonnx_step2_size_is_max_size() {
    assert_broadcast(&multi(&["2,1,7", "1,3,1", "1,1,7"]), "2,3,7");
}

/// Constraint C1 holds: every input's dim (after step 1) is the output's dim or 1.
#[test]
fn sonnx_c1_holds_when_each_dim_is_output_or_one() {
    let o = multi(&["1,3,1", "2,1,1", "4"]);
    assert_broadcast(&o, "2,3,4");
}

/// C1 is violated: the verdict names the offending input (0-based, in argument order) and the offending axis in
/// output coordinates, and the input it conflicts with.
#[test]
fn sonnx_c1_violation_names_input_and_axis() {
    // Input 2 has 5 on axis 1 where input 0 has 3.
    assert_mismatch(&multi(&["2,3,4", "1,3,4", "2,5,4"]), 2, 1, 5, 3, 0);
    // Ranks differ: the axis is counted after step 1 padding.
    assert_mismatch(&multi(&["2,3,4", "5,4"]), 1, 1, 5, 3, 0);
    // The first non-1 size on an axis is the reference; input 0 being 1 does not make it the reference.
    assert_mismatch(&multi(&["1,1", "1,6", "2,7"]), 2, 1, 7, 6, 1);
}

/// C1 violated gives no output shape.
#[test]
fn sonnx_c1_violation_has_no_output() {
    let o = multi(&["2", "3"]);
    assert_mismatch(&o, 1, 0, 3, 2, 0);
    assert_eq!(o.output, Shape::unranked());
}

// The SONNX profile's Broadcast spec: "Alternate functionality description"

/// "The Broadcast operator is commutative, i.e. given any permutation of tensors σ(.)".
#[test]
fn sonnx_alternate_commutative() {
    let shapes = ["3,1,5", "4,1", "1", "2,1,1,1"];
    let expected = multi(&shapes);
    assert_broadcast(&expected, "2,3,4,5");
    let perms = [[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2], [2, 3, 0, 1], [1, 3, 0, 2], [3, 0, 2, 1]];
    for p in perms {
        let permuted: Vec<&str> = p.iter().map(|&i| shapes[i]).collect();
        assert_eq!(multi(&permuted), expected, "permutation {p:?}");
    }
    // A violation stays a violation under any permutation.
    for p in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
        let shapes = ["2,3", "3", "4,3"];
        let permuted: Vec<&str> = p.iter().map(|&i| shapes[i]).collect();
        assert!(matches!(multi(&permuted).verdict, Verdict::Violation(_)), "permutation {p:?}");
    }
}

/// "the relations above can be described without loss of generality assuming that the input tensors are ordered
/// by increasing number of dimensions."
#[test]
fn sonnx_alternate_order_by_increasing_rank() {
    assert_eq!(multi(&["", "5", "4,1", "3,1,1"]), multi(&["3,1,1", "", "4,1", "5"]));
    assert_broadcast(&multi(&["", "5", "4,1", "3,1,1"]), "3,4,5");
}

/// "Broadcast(X1, X2, X3) = Broadcast(Broadcast(X1, X2), X3)".
#[test]
fn sonnx_alternate_recursive_binary() {
    let cases = [("3,1,5", "4,1", "1"), ("1", "2,1", "1,3"), ("6", "6", "6"), ("", "", "2")];
    for (x1, x2, x3) in cases {
        let all = multi(&[x1, x2, x3]);
        let inner = multi(&[x1, x2]);
        let outer = multidirectional(&[&inner.output, &s(x3)]);
        assert_eq!(all.output, outer.output, "{x1} {x2} {x3}");
    }
    // A violation in the inner pair or in the outer step is a violation of the whole.
    for (x1, x2, x3) in [("2", "3", "1"), ("2", "1", "3"), ("1", "2,1", "3,3,5")] {
        let all = multi(&[x1, x2, x3]);
        let inner = multi(&[x1, x2]);
        let recursive_fails = matches!(inner.verdict, Verdict::Violation(_))
            || matches!(multidirectional(&[&inner.output, &s(x3)]).verdict, Verdict::Violation(_));
        assert!(recursive_fails, "{x1} {x2} {x3}");
        assert!(matches!(all.verdict, Verdict::Violation(_)), "{x1} {x2} {x3}");
    }
}

/// Binary form: "Because of commutativity, we can assume that the tensor with the lowest number of dimensions is
/// X1" — the binary broadcast of X1, X2 equals that of X2, X1.
#[test]
fn sonnx_alternate_binary_commutative() {
    for (x1, x2) in [("5", "2,3,5"), ("1,4", "3,1"), ("", "7"), ("2,1", "2,1")] {
        assert_eq!(multi(&[x1, x2]).output, multi(&[x2, x1]).output, "{x1} {x2}");
        assert_eq!(multi(&[x1, x2]).verdict, multi(&[x2, x1]).verdict, "{x1} {x2}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The earlier draft of the SONNX profile's Broadcast spec: "Purpose" and "Constraints" (C1)
// ---------------------------------------------------------------------------------------------------------------

/// "to provide to all tensors a number of dimensions equal to the largest number of dimensions among the input
/// tensors".
#[test]
fn sonnx_draft_purpose_rank_is_largest() {
    assert_eq!(multi(&["1", "1,1,1", "1,1"]).output.rank(), Some(3));
}

/// "for each dimension to provide to all tensors a dimension size equal to the maximum of the dimension sizes".
#[test]
fn sonnx_draft_purpose_size_is_maximum() {
    assert_broadcast(&multi(&["1,8", "9,1"]), "9,8");
}

/// "the dimensions to be completed are those of lower indexes, those dimensions are set to a dimension size equal
/// to 1".
#[test]
fn sonnx_draft_completes_lower_indexes_with_one() {
    assert_broadcast(&multi(&["2", "3,1"]), "3,2");
}

/// Draft constraint C1: either dYm_i = dY_i or dYm_i = 1.
#[test]
fn sonnx_draft_c1_violation() {
    assert_mismatch(&multi(&["2,4", "2,2"]), 1, 1, 2, 4, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Dimension 0: numpy (and so ONNX, whose multidirectional broadcasting "is the same as Numpy's") wins over the
// SONNX "maximum" wording
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn numpy_zero_with_one_is_zero() {
    assert_broadcast(&multi(&["0", "1"]), "0");
    assert_broadcast(&multi(&["1", "0"]), "0");
    assert_broadcast(&multi(&["0,3", "1,1"]), "0,3");
}

#[test]
fn numpy_zero_with_three_is_violation() {
    assert_mismatch(&multi(&["0", "3"]), 1, 0, 3, 0, 0);
    assert_mismatch(&multi(&["3", "0"]), 1, 0, 0, 3, 0);
}

#[test]
fn numpy_zero_with_zero_is_same() {
    assert_same(&multi(&["0,2", "0,2"]), "0,2");
}

#[test]
fn numpy_zero_with_scalar_is_zero() {
    assert_broadcast(&multi(&["", "2,0"]), "2,0");
}

/// Unidirectional: 1 onto 0 holds (numpy gives 0 = A), 0 onto 1 does not (numpy gives 0 ≠ A).
#[test]
fn numpy_zero_unidirectional() {
    assert_broadcast(&uni("0,3", "1,3"), "0,3");
    assert_mismatch(&uni("1,3", "0,3"), 1, 0, 0, 1, 0);
}

/// Bidirectional (Expand) follows numpy too.
#[test]
fn numpy_zero_bidirectional() {
    assert_broadcast(&bidi("1,3", "0,1"), "0,3");
    assert_mismatch(&bidi("2", "0"), 1, 0, 0, 2, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// OpenVINO "Broadcast Rules For Elementwise Operations", "Rules": None broadcast
// ---------------------------------------------------------------------------------------------------------------

/// "1. Input tensors dimensions must match."
#[test]
fn openvino_none_equal_shapes_hold() {
    assert_same(&equal(&["2,3", "2,3"]), "2,3");
    assert_same(&equal(&["", ""]), "");
}

#[test]
fn openvino_none_dims_must_match() {
    assert_mismatch(&equal(&["2,3", "2,4"]), 1, 1, 4, 3, 0);
    assert_mismatch(&equal(&["2,3", "2,3", "5,3"]), 2, 0, 5, 2, 0);
}

/// "2. No implicit broadcast rule is applied." — neither 1s nor missing leading dims broadcast.
#[test]
fn openvino_none_no_implicit_broadcast() {
    assert_mismatch(&equal(&["2,3", "1,3"]), 1, 0, 1, 2, 0);
    let o = equal(&["2,3", "3"]);
    assert_eq!(assert_violation(&o, 1, None), ViolationKind::RankDiffers { rank: 1, expected: 2 });
}

// ---------------------------------------------------------------------------------------------------------------
// OpenVINO "Broadcast Rules For Elementwise Operations", "Numpy examples"
// ---------------------------------------------------------------------------------------------------------------

/// Also rule 5: "When both inputs are of rank = 0 the result is a scalar."
#[test]
fn openvino_numpy_scalar_vs_scalar() {
    assert_same(&multi(&["", ""]), "");
    assert_same(&multi(&["", "", ""]), "");
}

#[test]
fn openvino_numpy_23_vs_1() {
    assert_broadcast(&multi(&["2,3", "1"]), "2,3");
}

#[test]
fn openvino_numpy_3_vs_23() {
    assert_broadcast(&multi(&["3", "2,3"]), "2,3");
}

#[test]
fn openvino_numpy_235_vs_scalar() {
    assert_broadcast(&multi(&["2,3,5", ""]), "2,3,5");
}

#[test]
fn openvino_numpy_215_vs_145() {
    assert_broadcast(&multi(&["2,1,5", "1,4,5"]), "2,4,5");
}

#[test]
fn openvino_numpy_65_vs_215() {
    assert_broadcast(&multi(&["6,5", "2,1,5"]), "2,6,5");
}

#[test]
fn openvino_numpy_215_vs_41() {
    assert_broadcast(&multi(&["2,1,5", "4,1"]), "2,4,5");
}

#[test]
fn openvino_numpy_3214_vs_54() {
    assert_broadcast(&multi(&["3,2,1,4", "5,4"]), "3,2,5,4");
}

#[test]
fn openvino_numpy_153_vs_5213() {
    assert_broadcast(&multi(&["1,5,3", "5,2,1,3"]), "5,2,5,3");
}

#[test]
fn openvino_numpy_3_vs_2_mismatch() {
    assert_mismatch(&multi(&["3", "2"]), 1, 0, 2, 3, 0);
}

/// "broadcast won't happen due to dimensions mismatch on the leftmost axis".
#[test]
fn openvino_numpy_315_vs_445_leftmost_mismatch() {
    assert_mismatch(&multi(&["3,1,5", "4,4,5"]), 1, 0, 4, 3, 0);
}

// OpenVINO "Broadcast Rules For Elementwise Operations", "Rules": Numpy broadcast

/// "1. Right aligned dimensions of the two tensors are compared elementwise."
#[test]
fn openvino_numpy_rule1_right_aligned() {
    // Left alignment would compare 4 with 4 and accept; right alignment compares 4 with 5.
    assert_mismatch(&multi(&["4,5", "4"]), 1, 1, 4, 5, 0);
}

/// "4. Tensor with dimension of size 1 will be implicitly broadcasted to match the size of the second tensor."
#[test]
fn openvino_numpy_rule4_one_matches_other() {
    assert_broadcast(&multi(&["1,7", "7,1"]), "7,7");
}

// ---------------------------------------------------------------------------------------------------------------
// OpenVINO "Broadcast Rules For Elementwise Operations", "PDPD examples" (legacy_axis, B onto A from `axis`)
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn openvino_pdpd_b_34_axis1() {
    assert_broadcast(&legacy("2,3,4,5", "3,4", Some(1)), "2,3,4,5");
}

#[test]
fn openvino_pdpd_b_31_axis1_trailing_one_ignored() {
    assert_broadcast(&legacy("2,3,4,5", "3,1", Some(1)), "2,3,4,5");
}

#[test]
fn openvino_pdpd_b_45_default_axis() {
    assert_broadcast(&legacy("2,3,4,5", "4,5", None), "2,3,4,5");
    assert_broadcast(&legacy("2,3,4,5", "4,5", Some(-1)), "2,3,4,5");
}

#[test]
fn openvino_pdpd_b_45_axis2() {
    assert_broadcast(&legacy("2,3,4,5", "4,5", Some(2)), "2,3,4,5");
}

#[test]
fn openvino_pdpd_b_13_axis0() {
    assert_broadcast(&legacy("2,3,4,5", "1,3", Some(0)), "2,3,4,5");
}

#[test]
fn openvino_pdpd_b_scalar() {
    assert_broadcast(&legacy("2,3,4,5", "", None), "2,3,4,5");
}

#[test]
fn openvino_pdpd_b_5_default_axis() {
    assert_broadcast(&legacy("2,3,4,5", "5", None), "2,3,4,5");
    assert_broadcast(&legacy("2,3,4,5", "5", Some(-1)), "2,3,4,5");
}

#[test]
fn openvino_pdpd_b_5_axis3() {
    assert_broadcast(&legacy("2,3,4,5", "5", Some(3)), "2,3,4,5");
}

/// "broadcast won't happen due to dimensions mismatch, only B to A broadcast is supported for PDPD": B's 7 meets
/// A's 1 on axis 1.
#[test]
fn openvino_pdpd_8161_vs_715_axis1_rejected() {
    assert_mismatch(&legacy("8,1,6,1", "7,1,5", Some(1)), 1, 1, 7, 1, 0);
}

// OpenVINO "Broadcast Rules For Elementwise Operations", "Rules": PDPD broadcast

/// "1. First input tensor A is of any rank, second input B has rank smaller or equal to the first input."
#[test]
fn openvino_pdpd_rule1_b_rank_at_most_a_rank() {
    let o = legacy("3,4", "2,3,4", None);
    assert_eq!(assert_violation(&o, 1, None), ViolationKind::RankTooLarge { rank: 3, target_rank: 2 });
    assert_same(&legacy("3,4", "3,4", None), "3,4");
}

/// "2. Input tensor B is a continuous subsequence of input A." — B = (3, 5) is not contiguous in (2, 3, 4, 5).
#[test]
fn openvino_pdpd_rule2_b_contiguous_subsequence() {
    assert_mismatch(&legacy("2,3,4,5", "3,5", Some(1)), 1, 2, 5, 4, 0);
}

/// "3. ... provided axis is the start dimension index for broadcasting B onto A." — the same B fits at one axis
/// and not at another.
#[test]
fn openvino_pdpd_rule3_axis_is_start_index() {
    assert_broadcast(&legacy("2,3,3,5", "3", Some(1)), "2,3,3,5");
    assert_broadcast(&legacy("2,3,3,5", "3", Some(2)), "2,3,3,5");
    assert_mismatch(&legacy("2,3,3,5", "3", Some(0)), 1, 0, 3, 2, 0);
}

/// "4. If axis is set to default (-1) calculate new value: axis = rank(A) - rank(B)."
#[test]
fn openvino_pdpd_rule4_default_axis_is_rank_difference() {
    // rank(A) - rank(B) = 2: B = (3, 4) is compared with A's (4, 5), not with (3, 4) at axis 1.
    assert_mismatch(&legacy("2,3,4,5", "3,4", None), 1, 2, 3, 4, 0);
    assert_eq!(legacy("2,3,4,5", "3,4", None), legacy("2,3,4,5", "3,4", Some(-1)));
    assert_eq!(legacy("2,3,4,5", "4,5", None), legacy("2,3,4,5", "4,5", Some(2)));
}

/// "Except (-1) for default value, no other negative values are allowed for axis."
#[test]
fn openvino_pdpd_rule4_negative_axis_rejected() {
    for axis in [-2i64, -3, -4] {
        let o = legacy("2,3,4,5", "4,5", Some(axis));
        let kind = assert_violation(&o, 1, None);
        assert!(matches!(kind, ViolationKind::AxisOutOfRange { axis: a, .. } if a == axis), "axis {axis}: {kind:?}");
    }
}

/// B must fit in A from `axis`: an axis that runs B past A's last dim is rejected.
#[test]
fn openvino_pdpd_axis_past_end_rejected() {
    let o = legacy("2,3,4,5", "4,5", Some(3));
    assert_eq!(assert_violation(&o, 1, None), ViolationKind::AxisOutOfRange { axis: 3, len: 2, target_rank: 4 });
}

/// "5. The trailing dimensions of size 1 for input B will be ignored for the consideration of subsequence, such
/// as shape(B) = (3, 1) => (3)." — they do not need to fit in A.
#[test]
fn openvino_pdpd_rule5_trailing_ones_ignored() {
    assert_broadcast(&legacy("2,3,4,5", "5,1,1", Some(3)), "2,3,4,5");
    assert_broadcast(&legacy("2,3,4,5", "3,1,1", Some(1)), "2,3,4,5");
    // Only trailing 1s are ignored: a leading 1 still takes an axis (and broadcasts on it).
    assert_mismatch(&legacy("2,3,4,5", "1,4", Some(2)), 1, 3, 4, 5, 0);
}

/// Rule 5 with a symbol: a trailing symbol of B that runs past A's end fits only if it is a trailing 1, so the
/// site holds exactly when the symbol is 1 (not a violation: with N = 1 the rule holds).
#[test]
fn openvino_pdpd_rule5_trailing_symbol_past_end_must_be_one() {
    let o = legacy("2,3", "3,N", Some(1));
    assert_eq!(o.output, s("2,3"));
    assert_eq!(conditions(&o), vec![(1, "N = 1".to_string())]);
    // A known size other than 1 there is out of range, and an unknown dim leaves it undecided.
    let o = legacy("2,3", "3,4", Some(1));
    assert!(matches!(assert_violation(&o, 1, None), ViolationKind::AxisOutOfRange { axis: 1, len: 2, target_rank: 2 }));
    assert_eq!(legacy("2,3", "3,?", Some(1)).verdict, Verdict::Unknown);
    // Inside A the symbol is compared as usual.
    assert_eq!(
        conditions(&legacy("2,3", "N,M", Some(0))),
        vec![(0, "N ∈ {1, 2}".to_string()), (1, "M ∈ {1, 3}".to_string())]
    );
}

/// "only B to A broadcast is supported for PDPD": A's 1 is never broadcast towards B.
#[test]
fn openvino_pdpd_only_b_to_a() {
    assert_mismatch(&legacy("2,1", "2,3", Some(0)), 1, 1, 3, 1, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// OpenVINO "Broadcast Rules For Elementwise Operations", "Bidirectional examples" (data A expanded to target B)
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn openvino_bidirectional_5_vs_1() {
    // The target has a 1: the output (5) is larger than the target, and the data is unchanged.
    assert_same(&bidi("5", "1"), "5");
}

#[test]
fn openvino_bidirectional_23_vs_3() {
    // The target rank is smaller than the data's: the output keeps the data's rank.
    assert_same(&bidi("2,3", "3"), "2,3");
}

#[test]
fn openvino_bidirectional_31_vs_34() {
    assert_broadcast(&bidi("3,1", "3,4"), "3,4");
}

#[test]
fn openvino_bidirectional_34_vs_scalar() {
    assert_same(&bidi("3,4", ""), "3,4");
}

#[test]
fn openvino_bidirectional_31_vs_216() {
    assert_broadcast(&bidi("3,1", "2,1,6"), "2,3,6");
}

// OpenVINO "Broadcast Rules For Elementwise Operations", Bidirectional broadcast "Rules"

/// "3. Two corresponding dimension must have the same value, or one of them is equal to 1."
#[test]
fn openvino_bidirectional_rule3_mismatch() {
    assert_mismatch(&bidi("3", "4"), 1, 0, 4, 3, 0);
    assert_mismatch(&bidi("2,3", "3,3"), 1, 0, 3, 2, 0);
}

/// "2. numpy.array(input) * numpy.ones(target_shape)" — the output is the numpy broadcast of data and target.
#[test]
fn openvino_bidirectional_rule2_is_numpy() {
    for (d, t) in [("3,1", "2,1,6"), ("1", "4,4"), ("2,1,3", "5,1")] {
        assert_eq!(bidi(d, t).output, multi(&[d, t]).output, "{d} {t}");
    }
}

/// "4. Output shape may not be equal to target_shape if target_shape contains dimensions of size 1 [or]
/// target_shape rank is smaller than the rank of input tensor."
#[test]
fn openvino_bidirectional_rule4_output_may_exceed_target() {
    let o = bidi("4,1", "1,1");
    assert_same(&o, "4,1");
    assert_ne!(o.output, s("1,1"));
    let o = bidi("2,3,4", "1,4");
    assert_same(&o, "2,3,4");
    assert_ne!(o.output, s("1,4"));
}

// ---------------------------------------------------------------------------------------------------------------
// OpenVINO operation spec `Broadcast-1`, "Detailed description": numpy mode (one-directional, data onto
// target_shape)
// ---------------------------------------------------------------------------------------------------------------

/// The XML example: data [16, 1, 1], target_shape [1, 16, 50, 50], mode numpy → [1, 16, 50, 50].
#[test]
fn openvino_broadcast1_numpy_16_1_1_onto_1_16_50_50() {
    assert_broadcast(&uni("1,16,50,50", "16,1,1"), "1,16,50,50");
}

/// "only one-directional broadcasting is applied: input tensor data is broadcasted to target_shape but not
/// vice-versa."
#[test]
fn openvino_broadcast1_numpy_one_directional_only() {
    assert_mismatch(&uni("1,3", "2,3"), 1, 0, 2, 1, 0);
    let o = uni("16,50", "1,16,50");
    assert!(matches!(assert_violation(&o, 1, None), ViolationKind::RankTooLarge { .. }));
}

// OpenVINO operation spec `Broadcast-1`, "Detailed description": explicit mode, axes_mapping maps data's axes to
// output axes (axis = axes_mapping[0])

/// The XML example: data [16], target_shape [1, 16, 50, 50], axes_mapping [1].
#[test]
fn openvino_broadcast1_explicit_16_onto_1_16_50_50_axes_1() {
    assert_broadcast(&legacy("1,16,50,50", "16", Some(1)), "1,16,50,50");
}

/// The XML example: data [50, 50], target_shape [1, 50, 50, 16], axes_mapping [1, 2].
#[test]
fn openvino_broadcast1_explicit_50_50_onto_1_50_50_16_axes_1_2() {
    assert_broadcast(&legacy("1,50,50,16", "50,50", Some(1)), "1,50,50,16");
}

/// "axes_mapping = [1] enables broadcasting of a tensor with shape [C] to shape [N,C,H,W]".
#[test]
fn openvino_broadcast1_explicit_c_onto_nchw_axes_1() {
    assert_broadcast(&legacy("N,C,H,W", "C", Some(1)), "N,C,H,W");
}

/// "broadcasting of tensor with shape [H,W] to shape [N,H,W,C] with axes_mapping = [1, 2]".
#[test]
fn openvino_broadcast1_explicit_hw_onto_nhwc_axes_1_2() {
    assert_broadcast(&legacy("N,H,W,C", "H,W", Some(1)), "N,H,W,C");
}

/// "such operations cannot be expressed with ... numpy": [16] onto [1, 16, 50, 50] the numpy way compares 16
/// with the last 50.
#[test]
fn openvino_broadcast1_explicit_needed_numpy_rejects() {
    assert_mismatch(&uni("1,16,50,50", "16"), 1, 3, 16, 50, 0);
    assert_mismatch(&uni("1,50,50,16", "50,50"), 1, 3, 50, 16, 0);
}

/// A wrong axes_mapping is a violation on the mapped axis.
#[test]
fn openvino_broadcast1_explicit_wrong_mapping_rejected() {
    assert_mismatch(&legacy("1,16,50,50", "16", Some(2)), 1, 2, 16, 50, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Symbols and unknown dims: the rules above applied to `dim_param` sizes (ONNX `docs/Broadcasting.md` and the
// SONNX profile's constraint C1, read with a size that is only known by name). A known size never silently wins
// over a symbol, and two different symbols are never taken to be equal.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn symbols_n_vs_3_is_conditional_n_in_1_3() {
    let o = multi(&["N", "3"]);
    assert_eq!(o.output, s("3"));
    assert_eq!(conditions(&o), vec![(0, "N ∈ {1, 3}".to_string())]);
    match &o.verdict {
        Verdict::Conditional(cs) => assert_eq!(
            cs[0].kind,
            ConditionKind::OneOf { dim: Dim::sym("N"), options: vec![Dim::Known(1), Dim::Known(3)] }
        ),
        _ => unreachable!(),
    }
}

#[test]
fn symbols_3_vs_n_is_conditional_n_in_1_3() {
    let o = multi(&["2,3", "N"]);
    assert_eq!(o.output, s("2,3"));
    assert_eq!(conditions(&o), vec![(1, "N ∈ {1, 3}".to_string())]);
}

#[test]
fn symbols_n_vs_n_is_same() {
    assert_same(&multi(&["N", "N"]), "N");
    assert_same(&multi(&["2,N", "2,N", "2,N"]), "2,N");
}

#[test]
fn symbols_n_vs_1_is_broadcast_output_n() {
    assert_broadcast(&multi(&["N", "1"]), "N");
    assert_broadcast(&multi(&["1", "N"]), "N");
    assert_broadcast(&multi(&["N,1", "4"]), "N,4");
}

#[test]
fn symbols_n_vs_m_is_conditional_output_broadcast_dim() {
    let o = multi(&["N", "M"]);
    let dim = &o.output.dims().expect("ranked")[0];
    assert_eq!(*dim, broadcast_dim(&["M", "N"]));
    assert_ne!(*dim, Dim::sym("N"));
    assert_ne!(*dim, Dim::sym("M"));
    assert_eq!(conditions(&o), vec![(0, "M = N or one of them is 1".to_string())]);
    // The same dim whatever the order.
    assert_eq!(multi(&["M", "N"]).output, o.output);
}

/// A symbol and a known size on one axis, the known size from a different input on each axis.
#[test]
fn symbols_conditions_on_several_axes() {
    let o = multi(&["N,4,M", "3,K,1"]);
    assert_eq!(o.output, s("3,4,M"));
    assert_eq!(conditions(&o), vec![(0, "N ∈ {1, 3}".to_string()), (1, "K ∈ {1, 4}".to_string())]);
}

/// numpy with 0: N vs 0 requires N ∈ {0, 1} and gives 0.
#[test]
fn symbols_n_vs_0_is_conditional_n_in_0_1() {
    let o = multi(&["N", "0"]);
    assert_eq!(o.output, s("0"));
    assert_eq!(conditions(&o), vec![(0, "N ∈ {0, 1}".to_string())]);
}

#[test]
fn symbols_known_mismatch_still_violation() {
    assert_mismatch(&multi(&["N,3", "N,4"]), 1, 1, 4, 3, 0);
}

/// An unnamed dim of a known rank against a fixed size is a condition like a named symbol's, naming the input
/// (as in PyTorch exports: `[?, 129, ?]` against `[2]` holds only if that dim is 1 or 2).
#[test]
fn unknown_dim_of_known_rank_against_a_fixed_size_is_conditional() {
    let o = multi(&["?", "3"]);
    assert_eq!(conditions(&o), vec![(0, "input 0's unknown dim on axis 0 ∈ {1, 3}".to_string())]);
    assert_eq!(o.output, s("3"));
    let o = multi(&["?,129,?", "2"]);
    assert_eq!(conditions(&o), vec![(2, "input 0's unknown dim on axis 2 ∈ {1, 2}".to_string())]);
}

#[test]
fn symbols_unknown_vs_one_holds() {
    let o = multi(&["?", "1"]);
    assert!(matches!(o.verdict, Verdict::Same | Verdict::Broadcast), "{o:?}");
    assert_eq!(o.output, s("?"));
    let o = multi(&["2,?", "2,1"]);
    assert!(matches!(o.verdict, Verdict::Same | Verdict::Broadcast), "{o:?}");
}

#[test]
fn symbols_unknown_vs_unknown_or_symbol_is_unknown() {
    assert_eq!(multi(&["?", "?"]).verdict, Verdict::Unknown);
    assert_eq!(multi(&["?", "N"]).verdict, Verdict::Unknown);
}

#[test]
fn symbols_unknown_rank_is_unknown() {
    let o = multi(&["*", "2,3"]);
    assert_eq!(o.verdict, Verdict::Unknown);
    assert_eq!(o.output, Shape::unranked());
    assert_eq!(uni("*", "3").verdict, Verdict::Unknown);
    assert_eq!(uni("2,3", "*").verdict, Verdict::Unknown);
    assert_eq!(legacy("2,3", "*", None).verdict, Verdict::Unknown);
    assert_eq!(equal(&["*", "2,3"]).verdict, Verdict::Unknown);
    assert_eq!(bidi("*", "2,3").verdict, Verdict::Unknown);
}

/// A condition outranks an unknown axis: what is known is worth stating.
#[test]
fn symbols_conditional_outranks_unknown() {
    let o = multi(&["N,?", "3,?"]);
    assert!(matches!(multi(&["?", "?"]).verdict, Verdict::Unknown));
    assert_eq!(conditions(&o), vec![(0, "N ∈ {1, 3}".to_string())]);
}

/// Unidirectional: B's symbol meeting A's known size must be 1 or that size.
#[test]
fn symbols_unidirectional_b_symbol_onto_known() {
    let o = uni("2,3", "N");
    assert_eq!(o.output, s("2,3"));
    assert_eq!(conditions(&o), vec![(1, "N ∈ {1, 3}".to_string())]);
}

/// Unidirectional: A's symbol meeting B's known non-1 size must be exactly that size.
#[test]
fn symbols_unidirectional_known_onto_a_symbol() {
    let o = uni("2,N", "3");
    assert_eq!(o.output, s("2,N"));
    assert_eq!(conditions(&o), vec![(1, "N = 3".to_string())]);
    assert_broadcast(&uni("2,N", "1"), "2,N");
    assert_broadcast(&uni("2,N", "N"), "2,N");
}

/// Unidirectional: B's symbol M onto A's symbol N holds when M is 1 or N.
#[test]
fn symbols_unidirectional_symbol_onto_other_symbol() {
    let o = uni("N", "M");
    assert_eq!(o.output, s("N"));
    assert_eq!(conditions(&o), vec![(0, "M ∈ {1, N}".to_string())]);
}

/// Two axes pinning one symbol to sizes with nothing in common make the site a violation.
#[test]
fn symbols_unsatisfiable_conditions_are_violation() {
    let o = uni("N,N", "3,4");
    match &o.verdict {
        Verdict::Violation(v) => {
            assert_eq!(v.axis, Some(1));
            assert!(matches!(&v.kind, ViolationKind::Unsatisfiable { symbol, .. } if &**symbol == "N"));
        }
        other => panic!("expected an unsatisfiable violation, got {other:?}"),
    }
    // N ∈ {1, 3} and N ∈ {1, 4} leave N = 1: conditional, not a violation.
    assert_eq!(conditions(&multi(&["N,N", "3,4"])).len(), 2);
}

#[test]
fn symbols_legacy_axis() {
    let o = legacy("2,N,5", "3", Some(1));
    assert_eq!(conditions(&o), vec![(1, "N = 3".to_string())]);
    let o = legacy("2,3,5", "N,1", Some(1));
    assert_eq!(conditions(&o), vec![(1, "N ∈ {1, 3}".to_string())]);
}

#[test]
fn symbols_equal_shapes() {
    let o = equal(&["2,N", "2,3"]);
    assert_eq!(o.output, s("2,3"));
    assert_eq!(conditions(&o), vec![(1, "N = 3".to_string())]);
    assert_same(&equal(&["2,N", "2,N"]), "2,N");
    assert_eq!(equal(&["2,?", "2,3"]).verdict, Verdict::Unknown);
}

#[test]
fn symbols_bidirectional() {
    let o = bidi("N,1", "3,4");
    assert_eq!(o.output, s("3,4"));
    assert_eq!(conditions(&o), vec![(0, "N ∈ {1, 3}".to_string())]);
    assert_same(&bidi("N,4", "1"), "N,4");
}
