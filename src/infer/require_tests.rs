//! What an op's rule reports through [`super::require`]: certain contradictions for known sizes, conditions for
//! named symbols (readable, and typed so that they can be decided), nothing for sizes no one named.

use super::test_support::{int, ints, run_rule_checked};
use super::{infer, Contradiction, Verdict};
use crate::onnx::pb::AttributeProto;
use crate::onnx::tensor::ValueFacts;
use crate::rules::{Condition, ConditionKind};
use crate::sizes::shape::{parse_shape, Dim, Shape};
use crate::sizes::sym::Poly;

fn t(shape: &str) -> Option<ValueFacts> {
    Some(ValueFacts::tensor(Some(1), parse_shape(shape)))
}

fn consts(v: &[i64]) -> Option<ValueFacts> {
    let shape = Shape::known(&[v.len() as u64]);
    Some(ValueFacts { value: Some(v.iter().map(|&x| Some(Poly::constant(x))).collect()), ..t("1").unwrap() })
        .map(|f| ValueFacts { shape, elem: Some(7), ..f })
}

fn found(op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]) -> Vec<Contradiction> {
    run_rule_checked(infer, op, opset, attrs, inputs, 3).1
}

fn conditions(c: &[Contradiction]) -> Vec<String> {
    c.iter()
        .flat_map(|c| match &c.verdict {
            Verdict::Conditional(conds) => conds.iter().map(Condition::to_string).collect(),
            Verdict::Violated(_) => vec!["violated".to_string()],
        })
        .collect()
}

#[test]
fn known_inner_sizes_that_differ_are_certain_and_a_named_one_is_a_condition() {
    let c = found("MatMul", 13, vec![], &[t("2,3"), t("4,5")]);
    assert_eq!(c.len(), 1);
    assert!(c[0].is_certain());
    assert_eq!(conditions(&found("MatMul", 13, vec![], &[t("N,K"), t("768,64")])), ["K = 768"]);
    assert_eq!(conditions(&found("MatMul", 13, vec![], &[t("N,K"), t("M,64")])), ["K = M"]);
    assert!(found("MatMul", 13, vec![], &[t("N,K"), t("K,64")]).is_empty());
}

#[test]
fn a_size_nobody_named_says_nothing() {
    // `?1` is a size inference made up, `?` one it knows nothing of: no condition can be stated on either.
    assert!(found("MatMul", 13, vec![], &[t("2,?1"), t("4,5")]).is_empty());
    assert!(found("MatMul", 13, vec![], &[t("2,?"), t("4,5")]).is_empty());
    assert!(found("Concat", 13, vec![int("axis", 0)], &[t("2,?3"), t("2,5")]).is_empty());
}

#[test]
fn concat_sizes_off_the_axis_are_conditions_on_symbols() {
    let c = found("Concat", 13, vec![int("axis", 0)], &[t("2,N"), t("3,5")]);
    assert_eq!(conditions(&c), ["N = 5"]);
    let c = found("Concat", 13, vec![int("axis", 1)], &[t("2,3"), t("2,3,4")]);
    assert!(c[0].is_certain(), "ranks differ");
}

#[test]
fn a_division_that_must_be_exact_is_exact_conditional_or_inexact() {
    // [N, 6] into rows of 4: 4 must divide 6·N, and the -1 is a size nothing names.
    let (out, c) = run_rule_checked(infer, "Reshape", 13, vec![], &[t("N,6"), consts(&[4, -1])], 1);
    assert_eq!(conditions(&c), ["4 divides 6·N"]);
    assert!(out[0].shape.dims().unwrap()[1].is_fresh());
    let ConditionKind::Divides { divisor, dim } = &match &c[0].verdict {
        Verdict::Conditional(conds) => conds[0].clone(),
        Verdict::Violated(_) => unreachable!(),
    }
    .kind
    else {
        panic!("a divisibility condition")
    };
    assert_eq!((divisor, dim.to_string().as_str()), (&Dim::Known(4), "6*N"));
    // [N, 8] into rows of 4 is exact: 2·N.
    let (out, c) = run_rule_checked(infer, "Reshape", 13, vec![], &[t("N,8"), consts(&[4, -1])], 1);
    assert!(c.is_empty());
    assert_eq!(out[0].shape.to_string(), "[4, 2*N]");
    // Known and inexact: certain.
    let c = found("Reshape", 13, vec![], &[t("5,6"), consts(&[4, -1])]);
    assert!(c[0].is_certain() && c[0].code() == crate::diagnostic::Code::InexactDivision);
}

#[test]
fn equal_splits_and_blocks_divide_exactly() {
    assert_eq!(conditions(&found("Split", 13, vec![], &[t("N")])), ["3 divides N"]);
    let c = found("DepthToSpace", 13, vec![int("blocksize", 2)], &[t("1,C,4,4")]);
    assert_eq!(conditions(&c), ["4 divides C"]);
    assert!(found("DepthToSpace", 13, vec![int("blocksize", 2)], &[t("1,8,4,4")]).is_empty());
}

#[test]
fn an_element_count_condition_cancels_common_factors_and_reads_a_cap_as_a_bound() {
    // [seq, batch, 576] into [seq, 1, 3, 192]: holds only if batch·seq = seq (not cancelled to batch = 1: seq
    // may be 0).
    let target = Some(ValueFacts {
        value: Some(vec![
            Some(Poly::atom("seq")),
            Some(Poly::constant(1)),
            Some(Poly::constant(3)),
            Some(Poly::constant(192)),
        ]),
        ..consts(&[0, 0, 0, 0]).unwrap()
    });
    let c = found("Reshape", 13, vec![], &[t("seq,batch,576"), target]);
    assert_eq!(conditions(&c), ["batch*seq = seq"]);
    let capped = Dim::from_poly(Poly::constant(512).min_of(&Poly::atom("N")));
    let kind = super::require::equal_condition(&capped, &Dim::sym("N"));
    assert_eq!(Condition { axis: 0, kind }.to_string(), "N ≤ 512");
}

#[test]
fn squeeze_of_a_named_size_holds_only_if_it_is_one() {
    assert_eq!(conditions(&found("Squeeze", 11, vec![ints("axes", &[0])], &[t("N,3")])), ["N = 1"]);
    assert!(found("Squeeze", 11, vec![ints("axes", &[0])], &[t("3,3")])[0].is_certain());
}

#[test]
fn a_certain_contradiction_keeps_the_rule_from_claiming_more_than_it_knows() {
    // The walk replaces the outputs of a contradicted node; the rule itself may still compute them.
    let (_, c) = run_rule_checked(infer, "Transpose", 13, vec![ints("perm", &[0, 0])], &[t("2,3")], 1);
    assert!(c[0].is_certain());
    let text = c[0].message(&[super::Operand { name: "x".into(), shape: parse_shape("2,3"), value: None }]);
    let text = crate::sys::escape::plain(&text);
    assert_eq!(text, "x [2, 3]: perm is not a permutation of the axes: perm [0, 0] for rank 2");
}
