//! The contrib ops' shapes as onnxruntime's `docs/ContribOperators.md` states them, one test per op family.

use super::{infer, Domain};
use crate::infer::test_support::{int, ints, run_rule};
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{parse_shape, Shape};
use crate::sizes::sym::Poly;

fn t(shape: &str) -> Option<ValueFacts> {
    Some(ValueFacts::tensor(Some(1), parse_shape(shape)))
}

fn microsoft(ctx: &mut crate::infer::Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    infer(Domain::Microsoft, ctx)
}

fn nchwc(ctx: &mut crate::infer::Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    infer(Domain::Nchwc, ctx)
}

fn shapes(out: &[ValueFacts]) -> Vec<String> {
    out.iter().map(|f| f.shape.to_string()).collect()
}

#[test]
fn skip_layer_normalization_keeps_the_input_shape_and_reduces_its_statistics() {
    let out = run_rule(microsoft, "SkipLayerNormalization", 17, vec![], &[t("B,S,32"), t("1,S,32"), t("32")], 4);
    assert_eq!(shapes(&out), ["[B, S, 32]", "[B, S, 1]", "[B, S, 1]", "[B, S, 32]"]);
}

#[test]
fn simplified_layer_normalization_is_known_in_the_onnx_domain() {
    let out = run_rule(|c| infer(Domain::Onnx, c), "SimplifiedLayerNormalization", 17, vec![], &[t("B,S,32")], 2);
    assert_eq!(shapes(&out), ["[B, S, 32]", "[B, S, 1]"]);
}

#[test]
fn matmul_nbits_replaces_the_last_dim_by_n() {
    let out = run_rule(microsoft, "MatMulNBits", 17, vec![int("K", 32), int("N", 37)], &[t("B,S,32")], 1);
    assert_eq!(shapes(&out), ["[B, S, 37]"]);
}

#[test]
fn fused_matmul_transposes_before_the_product() {
    let out = run_rule(microsoft, "FusedMatMul", 17, vec![int("transB", 1)], &[t("B,N,S,16"), t("B,N,T,16")], 1);
    assert_eq!(shapes(&out), ["[B, N, S, T]"]);
}

#[test]
fn gather_block_quantized_unpacks_four_bit_bytes() {
    let data = Some(ValueFacts::tensor(Some(2), parse_shape("100,16")));
    let out = run_rule(microsoft, "GatherBlockQuantized", 17, vec![int("bits", 4)], &[data, t("B,S"), t("100,1")], 1);
    assert_eq!(shapes(&out), ["[B, S, 32]"]);
}

#[test]
fn attention_outputs_a_third_of_the_weights_and_a_present_over_past_plus_sequence() {
    let inputs = [t("B,S,32"), t("32,96"), t("96"), None, t("2,B,2,P,16")];
    let out = run_rule(microsoft, "Attention", 17, vec![int("num_heads", 2)], &inputs, 2);
    assert_eq!(shapes(&out), ["[B, S, 32]", "[2, B, 2, P + S, 16]"]);
}

#[test]
fn multi_head_attention_adds_the_past_to_the_key_length() {
    let inputs = [t("B,S,32"), t("B,L,32"), t("B,L,32"), None, None, None, t("B,2,P,16"), t("B,2,P,16")];
    let out = run_rule(microsoft, "MultiHeadAttention", 17, vec![int("num_heads", 2)], &inputs, 3);
    assert_eq!(shapes(&out), ["[B, S, 32]", "[B, 2, L + P, 16]", "[B, 2, L + P, 16]"]);
}

#[test]
fn group_query_attention_grows_the_cache_to_the_total_sequence_length() {
    let total = Some(ValueFacts {
        value: Some(vec![Some(Poly::symbol("T".into()))]),
        ..ValueFacts::tensor(Some(6), Shape::scalar())
    });
    let inputs = [t("B,S,64"), None, None, t("B,1,P,16"), t("B,1,P,16"), t("B"), total];
    let attrs = vec![int("num_heads", 2), int("kv_num_heads", 1)];
    let out = run_rule(microsoft, "GroupQueryAttention", 17, attrs, &inputs, 3);
    assert_eq!(shapes(&out), ["[B, S, 32]", "[B, 1, max(P, T), 16]", "[B, 1, max(P, T), 16]"]);
}

#[test]
fn qlinear_concat_concatenates_every_third_input_from_the_third() {
    let s = t("");
    let inputs = [s.clone(), s.clone(), t("N,8,H,W"), s.clone(), s.clone(), t("N,4,H,W"), s.clone(), s];
    let out = run_rule(microsoft, "QLinearConcat", 17, vec![int("axis", 1)], &inputs, 1);
    assert_eq!(shapes(&out), ["[N, 12, H, W]"]);
}

#[test]
fn nchwc_reorders_pad_channels_only_when_the_block_can_differ() {
    let out = run_rule(nchwc, "ReorderInput", 17, vec![], &[t("N,32,H,W")], 1);
    assert_eq!(shapes(&out), ["[N, 32, H, W]"]);
    let out = run_rule(nchwc, "ReorderInput", 17, vec![], &[t("N,3,H,W")], 1);
    assert_eq!(shapes(&out), ["[N, ?1, H, W]"]);
    let out = run_rule(nchwc, "ReorderOutput", 17, vec![int("channels", 10)], &[t("N,16,H,W")], 1);
    assert_eq!(shapes(&out), ["[N, 10, H, W]"]);
    let conv = [t("N,3,64,64"), t("16,3,3,3"), t("16")];
    let attrs = vec![ints("pads", &[1, 1, 1, 1]), ints("strides", &[2, 2]), ints("kernel_shape", &[3, 3])];
    let out = run_rule(nchwc, "Conv", 17, attrs, &conv, 1);
    assert_eq!(shapes(&out), ["[N, 16, 32, 32]"]);
}
