//! Unit tests of the nn op family (convolutions and pooling included).

use super::*;
use crate::onnx::pb::AttributeProto;
use crate::onnx::tensor::INT64;
use crate::sizes::shape::parse_shape;

use crate::infer::test_support::{int, ints, run_rule, string};

fn t(shape: &str) -> Option<ValueFacts> {
    Some(ValueFacts::tensor(Some(FLOAT), parse_shape(shape)))
}

fn typed(elem: i32, shape: &str) -> Option<ValueFacts> {
    Some(ValueFacts::tensor(Some(elem), parse_shape(shape)))
}

fn run(
    op: &str,
    opset: i64,
    attrs: Vec<AttributeProto>,
    inputs: &[Option<ValueFacts>],
    outputs: usize,
) -> Vec<ValueFacts> {
    run_rule(crate::infer::infer, op, opset, attrs, inputs, outputs)
}

/// The shape of each output, as text.
fn shapes(
    op: &str,
    opset: i64,
    attrs: Vec<AttributeProto>,
    inputs: &[Option<ValueFacts>],
    outputs: usize,
) -> Vec<String> {
    run(op, opset, attrs, inputs, outputs).iter().map(|f| f.shape.to_string()).collect()
}

fn shape(op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]) -> String {
    shapes(op, opset, attrs, inputs, 1).remove(0)
}

#[test]
fn conv_same_and_unit_stride_keep_symbols() {
    let x = t("N,3,H,W");
    let w = t("16,3,3,3");
    let same = vec![string("auto_pad", "SAME_UPPER")];
    assert_eq!(shape("Conv", 11, same, &[x.clone(), w.clone()]), "[N, 16, H, W]");
    let pads = vec![ints("pads", &[1, 1, 1, 1])];
    assert_eq!(shape("Conv", 11, pads, &[x.clone(), w.clone()]), "[N, 16, H, W]");
    // The kernel attribute wins over nothing; without pads a 3x3 kernel takes 2 off.
    let valid = vec![ints("kernel_shape", &[3, 3])];
    assert_eq!(shape("Conv", 11, valid, &[x.clone(), w.clone()]), "[N, 16, H - 2, W - 2]");
    let dilated = vec![ints("dilations", &[2, 2])];
    assert_eq!(shape("Conv", 11, dilated, &[x.clone(), w]), "[N, 16, H - 4, W - 4]");
    // Unknown weights: the channel count is unknown, the spatial sizes still follow from kernel_shape.
    let k = vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1, 1, 1, 1])];
    assert_eq!(shape("Conv", 11, k, &[x, None]), "[N, ?, H, W]");
}

#[test]
fn strided_conv_is_a_floor_expression() {
    let x = t("N,3,H,W");
    let w = t("8,3,3,3");
    let attrs = vec![ints("strides", &[2, 2]), ints("pads", &[1, 1, 1, 1])];
    assert_eq!(shape("Conv", 11, attrs, &[x.clone(), w.clone()]), "[N, 8, floor((H + 1) / 2), floor((W + 1) / 2)]");
    let same = vec![ints("strides", &[2, 2]), string("auto_pad", "SAME_LOWER")];
    assert_eq!(shape("Conv", 11, same, &[x, w]), "[N, 8, floor((H + 1) / 2), floor((W + 1) / 2)]");
    // ResNet's stem: 224 → 112.
    let stem = vec![ints("strides", &[2, 2]), ints("pads", &[3, 3, 3, 3])];
    assert_eq!(shape("Conv", 11, stem, &[t("1,3,224,224"), t("64,3,7,7")]), "[1, 64, 112, 112]");
    // Malformed strides: the sizes are unknown, the rank is not.
    let bad = vec![ints("strides", &[2])];
    assert_eq!(shape("Conv", 11, bad, &[t("1,3,8,8"), t("4,3,3,3")]), "[1, 4, ?, ?]");
}

#[test]
fn quantized_convs_take_their_types_and_weights() {
    let out = run("ConvInteger", 10, vec![], &[typed(2, "1,3,8,8"), typed(2, "4,3,3,3")], 1);
    assert_eq!((out[0].elem, out[0].shape.to_string()), (Some(INT32), "[1, 4, 6, 6]".to_string()));
    let s = t("");
    let zp = typed(3, "");
    let inputs = [typed(3, "1,3,8,8"), s.clone(), zp.clone(), typed(3, "4,3,3,3"), s.clone(), zp.clone(), s, zp];
    let out = run("QLinearConv", 10, vec![], &inputs, 1);
    assert_eq!((out[0].elem, out[0].shape.to_string()), (Some(3), "[1, 4, 6, 6]".to_string()));
}

#[test]
fn conv_transpose_output_padding_and_output_shape() {
    let x = t("N,16,H,W");
    let w = t("16,8,4,4");
    let attrs = vec![ints("strides", &[2, 2]), ints("pads", &[1, 1, 1, 1])];
    assert_eq!(shape("ConvTranspose", 11, attrs, &[x.clone(), w.clone()]), "[N, 8, 2*H, 2*W]");
    let grouped = vec![int("group", 2)];
    assert_eq!(shape("ConvTranspose", 11, grouped, &[x.clone(), w.clone()]), "[N, 16, H + 3, W + 3]");
    let padded = vec![ints("strides", &[2, 2]), ints("pads", &[1, 1, 1, 1]), ints("output_padding", &[1, 0])];
    assert_eq!(shape("ConvTranspose", 11, padded, &[t("1,16,7,7"), t("16,8,3,3")]), "[1, 8, 14, 13]");
    let out = vec![ints("strides", &[2, 2]), ints("output_shape", &[20, 30])];
    assert_eq!(shape("ConvTranspose", 11, out, &[x.clone(), w.clone()]), "[N, 8, 20, 30]");
    let full = vec![ints("output_shape", &[1, 8, 20, 30])];
    assert_eq!(shape("ConvTranspose", 11, full, &[x.clone(), w.clone()]), "[N, 8, 20, 30]");
    let same = vec![ints("strides", &[2, 2]), string("auto_pad", "SAME_UPPER")];
    assert_eq!(shape("ConvTranspose", 11, same, &[x.clone(), w.clone()]), "[N, 8, 2*H, 2*W]");
    // SAME with output_padding: the ONNX inference and runtimes disagree.
    let disputed = vec![ints("strides", &[2, 2]), string("auto_pad", "SAME_UPPER"), ints("output_padding", &[1, 1])];
    assert_eq!(shape("ConvTranspose", 11, disputed, &[x, w]), "[N, 8, ?, ?]");
}

#[test]
fn pooling_ceil_mode() {
    let x = t("1,3,32,32");
    let k = || vec![ints("kernel_shape", &[3, 3]), ints("strides", &[2, 2])];
    let out = run("MaxPool", 12, k(), std::slice::from_ref(&x), 2);
    assert_eq!(out[0].shape.to_string(), "[1, 3, 15, 15]");
    assert_eq!((out[1].elem, out[1].shape.to_string()), (Some(INT64), "[1, 3, 15, 15]".to_string()));
    let ceil = [k(), vec![int("ceil_mode", 1)]].concat();
    assert_eq!(shape("MaxPool", 12, ceil.clone(), &[x]), "[1, 3, 16, 16]");
    assert_eq!(shape("MaxPool", 12, ceil, &[t("N,C,H,W")]), "[N, C, floor(H / 2), floor(W / 2)]");
    // A last window that would start in the end padding: dropped by newer definitions, kept by older ones.
    let edge = vec![ints("kernel_shape", &[2]), ints("strides", &[2]), ints("pads", &[0, 1]), int("ceil_mode", 1)];
    assert_eq!(shape("AveragePool", 19, edge.clone(), &[t("1,1,4")]), "[1, 1, ?]");
    assert_eq!(shape("AveragePool", 19, edge.clone(), &[t("1,1,5")]), "[1, 1, 3]");
    assert_eq!(shape("AveragePool", 19, edge, &[t("1,1,L")]), "[1, 1, ?]");
    let global = run("GlobalAveragePool", 1, vec![], &[t("N,C,H,W")], 1);
    assert_eq!(global[0].shape.to_string(), "[N, C, 1, 1]");
    let same = vec![ints("kernel_shape", &[3]), ints("strides", &[2]), string("auto_pad", "SAME_UPPER")];
    assert_eq!(shape("LpPool", 18, same, &[t("N,C,L")]), "[N, C, floor((L + 1) / 2)]");
    let unpool = vec![ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])];
    assert_eq!(shape("MaxUnpool", 11, unpool, &[t("N,C,H,W"), typed(INT64, "N,C,H,W")]), "[N, C, 2*H, 2*W]");
}

#[test]
fn matmul_broadcasts_batch_dims() {
    assert_eq!(shape("MatMul", 13, vec![], &[t("N,1,3,4"), t("5,4,6")]), "[N, 5, 3, 6]");
    assert_eq!(shape("MatMul", 13, vec![], &[t("4"), t("4")]), "[]");
    assert_eq!(shape("MatMul", 13, vec![], &[t("4"), t("N,4,6")]), "[N, 6]");
    assert_eq!(shape("MatMul", 13, vec![], &[t("B,S,4"), t("4")]), "[B, S]");
    assert_eq!(shape("MatMul", 13, vec![], &[t("2,3,4"), t("3,4,5")]), "[?, 3, 5]");
    assert_eq!(shape("MatMul", 13, vec![], &[t("*"), t("4,5")]), "[unknown rank]");
    let out = run("MatMulInteger", 10, vec![], &[typed(2, "M,K"), typed(2, "K,N")], 1);
    assert_eq!((out[0].elem, out[0].shape.to_string()), (Some(INT32), "[M, N]".to_string()));
}

#[test]
fn einsum_explicit_implicit_and_ellipsis() {
    let attr = |eq: &str| vec![string("equation", eq)];
    assert_eq!(shape("Einsum", 12, attr("bij,bjk->bik"), &[t("B,I,J"), t("B,J,K")]), "[B, I, K]");
    assert_eq!(shape("Einsum", 12, attr("ij,jk"), &[t("2,3"), t("3,4")]), "[2, 4]");
    // Ellipses broadcast when they stand for one number of dims (onnxruntime refuses other numbers).
    assert_eq!(shape("Einsum", 12, attr("...ij,...jk"), &[t("N,1,3,4"), t("1,5,4,6")]), "[N, 5, 3, 6]");
    assert_eq!(shape("Einsum", 12, attr("... ij, ... jk -> ... ik"), &[t("N,3,4"), t("1,4,6")]), "[N, 3, 6]");
    assert_eq!(shape("Einsum", 12, attr("ij->ji"), &[t("A,B")]), "[B, A]");
    assert_eq!(shape("Einsum", 12, attr("ii"), &[t("3,3")]), "[]");
    assert_eq!(shape("Einsum", 12, attr("i,i->"), &[t("N"), t("N")]), "[]");
    assert_eq!(shape("Einsum", 12, attr("bhqd,bhkd->bhqk"), &[t("B,8,Q,64"), t("B,8,K,64")]), "[B, 8, Q, K]");
    // Implicit labels are sorted: uppercase before lowercase.
    assert_eq!(shape("Einsum", 12, attr("aB"), &[t("2,3")]), "[3, 2]");
    // A label the operands do not have, or a rank that does not fit: nothing is claimed.
    assert_eq!(shape("Einsum", 12, attr("ij->iz"), &[t("2,3")]), "[unknown rank]");
    assert_eq!(shape("Einsum", 12, attr("ijk->i"), &[t("2,3")]), "[unknown rank]");
    assert_eq!(shape("Einsum", 12, attr("...i->i"), &[t("*")]), "[?]");
}

#[test]
fn recurrent_layouts_and_directions() {
    let bi = || vec![string("direction", "bidirectional"), int("hidden_size", 20)];
    let w = t("2,80,10");
    let r = t("2,80,20");
    let out = shapes("LSTM", 14, bi(), &[t("S,B,10"), w.clone(), r.clone()], 3);
    assert_eq!(out, ["[S, 2, B, 20]", "[2, B, 20]", "[2, B, 20]"]);
    let layout1 = [bi(), vec![int("layout", 1)]].concat();
    let out = shapes("LSTM", 14, layout1, &[t("B,S,10"), w, r.clone()], 3);
    assert_eq!(out, ["[B, S, 2, 20]", "[B, 2, 20]", "[B, 2, 20]"]);
    // The hidden size from R, else from W's rows over the gate count.
    let out = shapes("GRU", 7, vec![], &[t("S,B,10"), t("1,60,10"), None], 3);
    assert_eq!(out, ["[S, 1, B, 20]", "[1, B, 20]", "[unknown rank]"]);
    let out = shapes("RNN", 7, vec![string("direction", "reverse")], &[t("S,B,10"), t("1,H,10"), t("1,H,H")], 2);
    assert_eq!(out, ["[S, 1, B, H]", "[1, B, H]"]);
}

#[test]
fn normalizations() {
    let x = t("N,C,H,W");
    let bn = || vec![x.clone(), t("C"), t("C"), t("C"), t("C")];
    let out = shapes("BatchNormalization", 15, vec![int("training_mode", 1)], &bn(), 3);
    assert_eq!(out, ["[N, C, H, W]", "[C]", "[C]"]);
    let out = shapes("BatchNormalization", 7, vec![], &[x.clone(), t("C"), t("C"), None, None], 5);
    assert_eq!(out, ["[N, C, H, W]", "[C]", "[C]", "[C]", "[C]"]);
    let out = run("LayerNormalization", 17, vec![int("axis", -2)], &[typed(10, "B,S,D"), t("S,D"), t("S,D")], 3);
    let got: Vec<_> = out.iter().map(|f| (f.elem, f.shape.to_string())).collect();
    assert_eq!(
        got,
        [
            (Some(10), "[B, S, D]".to_string()),
            (Some(FLOAT), "[B, 1, 1]".to_string()),
            (Some(FLOAT), "[B, 1, 1]".to_string())
        ]
    );
    assert_eq!(shape("InstanceNormalization", 6, vec![], &[x.clone(), t("C"), t("C")]), "[N, C, H, W]");
    let roi = shape("RoiAlign", 16, vec![int("output_height", 7), int("output_width", 7)], &[x, t("R,4"), t("R")]);
    assert_eq!(roi, "[R, C, 7, 7]");
}

#[test]
fn quantization_types() {
    let elem = |op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]| {
        run(op, opset, attrs, inputs, 1)[0].elem
    };
    let x = t("N,4");
    assert_eq!(elem("QuantizeLinear", 13, vec![], &[x.clone(), t("")]), Some(UINT8));
    assert_eq!(elem("QuantizeLinear", 13, vec![], &[x.clone(), t(""), typed(3, "")]), Some(3));
    assert_eq!(elem("QuantizeLinear", 21, vec![int("output_dtype", 17)], &[x.clone(), t("")]), Some(17));
    assert_eq!(elem("DequantizeLinear", 13, vec![], &[typed(2, "N,4"), t(""), typed(2, "")]), Some(FLOAT));
    assert_eq!(elem("DequantizeLinear", 19, vec![], &[typed(2, "N,4"), typed(10, ""), typed(2, "")]), Some(10));
    let out = run("DynamicQuantizeLinear", 11, vec![], &[x], 3);
    let got: Vec<_> = out.iter().map(|f| (f.elem, f.shape.to_string())).collect();
    assert_eq!(
        got,
        [(Some(UINT8), "[N, 4]".to_string()), (Some(FLOAT), "[]".to_string()), (Some(UINT8), "[]".to_string())]
    );
}

#[test]
fn attention_and_losses() {
    let out = shapes("Attention", 23, vec![], &[t("B,8,L,64"), t("B,2,S,64"), t("B,2,S,32")], 4);
    assert_eq!(out, ["[B, 8, L, 32]", "[B, 2, S, 64]", "[B, 2, S, 32]", "[B, 8, L, S]"]);
    let heads = vec![int("q_num_heads", 8), int("kv_num_heads", 2)];
    let inputs = [t("B,L,512"), t("B,S,128"), t("B,S,128"), None, t("B,2,P,64"), t("B,2,P,64")];
    let out = shapes("Attention", 23, heads, &inputs, 3);
    assert_eq!(out, ["[B, L, 512]", "[B, 2, P + S, 64]", "[B, 2, P + S, 64]"]);
    let none = vec![string("reduction", "none")];
    let out = shapes("SoftmaxCrossEntropyLoss", 13, none, &[t("N,C,D"), typed(INT64, "N,D")], 2);
    assert_eq!(out, ["[N, D]", "[N, C, D]"]);
    assert_eq!(shape("NegativeLogLikelihoodLoss", 13, vec![], &[t("N,C"), typed(INT64, "N")]), "[]");
}
