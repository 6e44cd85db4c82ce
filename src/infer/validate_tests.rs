//! The requirements issue 26 added after the first validator (SwiGLU, the opset 27 attention ops, FlexAttention,
//! softmax ranks, normalization parameters, losses, DFT/STFT, Einsum's ellipses, and the indexing ops), each test
//! named after the rule: the inputs that break it give a certain contradiction, those that meet it none.

use super::test_support::{int, ints, run_rule_checked, string};
use super::{attention, infer, Contradiction, Verdict};
use crate::onnx::pb::AttributeProto;
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::parse_shape;
use crate::sizes::sym::Poly;

fn t(shape: &str) -> Option<ValueFacts> {
    Some(ValueFacts::tensor(Some(1), parse_shape(shape)))
}

fn typed(elem: i32, shape: &str) -> Option<ValueFacts> {
    Some(ValueFacts::tensor(Some(elem), parse_shape(shape)))
}

/// An int64 constant of shape `shape` holding `v`.
fn consts(shape: &str, v: &[i64]) -> Option<ValueFacts> {
    let value = Some(v.iter().map(|&x| Some(Poly::constant(x))).collect());
    Some(ValueFacts { value, ..ValueFacts::tensor(Some(7), parse_shape(shape)) })
}

fn found(op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]) -> Vec<Contradiction> {
    run_rule_checked(infer, op, opset, attrs, inputs, 2).1
}

fn certain(c: &[Contradiction]) -> bool {
    c.iter().any(Contradiction::is_certain)
}

fn conditional(c: &[Contradiction]) -> Vec<String> {
    c.iter()
        .filter_map(|c| match &c.verdict {
            Verdict::Conditional(conds) => Some(conds.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")),
            Verdict::Violated(_) => None,
        })
        .collect()
}

#[test]
fn swiglu_takes_two_inputs_of_one_shape_and_never_broadcasts() {
    assert!(found("SwiGLU", 28, vec![], &[t("2,4"), t("2,4")]).is_empty());
    assert!(certain(&found("SwiGLU", 28, vec![], &[t("2,4"), t("2,3")])));
    assert!(certain(&found("SwiGLU", 28, vec![], &[t("2,1,8"), t("2,3,8")])), "a 1 is not stretched");
    assert!(certain(&found("SwiGLU", 28, vec![], &[t("2,4"), t("1,2,4")])), "nor a rank added");
    assert_eq!(conditional(&found("SwiGLU", 28, vec![], &[t("2,D"), t("2,4")])), ["D = 4"]);
}

#[test]
fn causal_conv_with_state_takes_rank_3_inputs_whose_channels_and_state_length_agree() {
    let ok = [t("2,8,16"), t("8,1,4"), t("8"), t("2,8,3")];
    assert!(found("CausalConvWithState", 27, vec![], &ok).is_empty());
    assert!(certain(&found("CausalConvWithState", 27, vec![], &[t("2,8"), t("8,1,4")])));
    assert!(certain(&found("CausalConvWithState", 27, vec![], &[t("2,8,16"), t("8,4")])));
    assert!(certain(&found("CausalConvWithState", 27, vec![], &[t("2,8,16"), t("6,1,4")])));
    assert!(certain(&found("CausalConvWithState", 27, vec![], &[t("2,8,16"), t("8,1,4"), t("8"), t("2,8,2")])));
    assert!(certain(&found("CausalConvWithState", 27, vec![], &[t("2,4,8"), t("4,1,0")])), "a kernel of no taps");
}

fn heads(q: i64, kv: i64) -> Vec<AttributeProto> {
    vec![int("q_num_heads", q), int("kv_num_heads", kv), string("update_rule", "gated")]
}

#[test]
fn linear_attention_heads_divide_the_packed_sizes_and_each_other() {
    let qkv = |q: &str| [t(q), t("2,4,64"), t("2,4,64")];
    assert!(found("LinearAttention", 27, heads(8, 4), &qkv("2,4,128")).is_empty());
    // q_num_heads 6 is no multiple of kv_num_heads 4.
    assert!(certain(&found("LinearAttention", 27, heads(6, 4), &qkv("2,4,96"))));
    // A packed query of 15 for 2 heads.
    assert!(certain(&found("LinearAttention", 27, heads(2, 2), &[t("2,3,15"), t("2,3,16"), t("2,3,16")])));
    assert!(certain(&found("LinearAttention", 27, heads(4, 4), &[t("2,4,4,16"), t("2,4,64"), t("2,4,64")])));
    let symbolic = [t("B,T,D"), t("B,T,64"), t("B,T,64")];
    assert_eq!(conditional(&found("LinearAttention", 27, heads(4, 4), &symbolic)), ["4 divides D"]);
}

#[test]
fn linear_attention_decay_is_per_head_or_per_key_dim_and_beta_per_head_or_one() {
    let with = |decay: &str, beta: &str| [t("2,3,64"), t("2,3,64"), t("2,3,64"), None, t(decay), t(beta)];
    assert!(found("LinearAttention", 27, heads(4, 4), &with("2,3,4", "2,3,1")).is_empty());
    assert!(found("LinearAttention", 27, heads(4, 4), &with("2,3,64", "2,3,4")).is_empty());
    assert!(certain(&found("LinearAttention", 27, heads(4, 4), &with("2,3,7", "2,3,4"))));
    assert!(certain(&found("LinearAttention", 27, heads(4, 4), &with("2,3,4", "2,3,3"))));
    assert!(certain(&found("LinearAttention", 27, heads(4, 4), &with("2,3", "2,3,4"))));
}

#[test]
fn flex_attention_query_key_and_value_agree_on_batch_heads_lengths_and_head_size() {
    let flex = |inputs: &[Option<ValueFacts>]| {
        run_rule_checked(attention::infer_preview, "FlexAttention", 1, vec![], inputs, 1).1
    };
    assert!(flex(&[t("2,8,5,16"), t("2,4,7,16"), t("2,4,7,32")]).is_empty());
    assert!(certain(&flex(&[t("2,6,5,16"), t("2,4,7,16"), t("2,4,7,32")])), "6 query heads for 4");
    assert!(certain(&flex(&[t("2,8,5,16"), t("2,4,7,16"), t("2,4,6,32")])), "key and value lengths");
    assert!(certain(&flex(&[t("2,8,5,16"), t("2,4,7,16"), t("2,2,7,32")])), "key and value heads");
    assert!(certain(&flex(&[t("2,8,5,16"), t("2,4,7,8"), t("2,4,7,32")])), "query and key head sizes");
    assert!(certain(&flex(&[t("2,8,5"), t("2,4,7,8"), t("2,4,7,32")])), "rank 4");
    assert!(certain(&flex(&[t("2,8,5,16"), typed(10, "2,4,7,16"), t("2,4,7,32")])), "one element type");
}

#[test]
fn softmax_hardmax_and_log_softmax_need_an_axis_to_normalize_over() {
    for op in ["Softmax", "LogSoftmax", "Hardmax"] {
        assert!(certain(&found(op, 13, vec![], &[t("")])), "{op} of a scalar");
        assert!(found(op, 13, vec![], &[t("3")]).is_empty());
    }
}

#[test]
fn batch_norm_parameters_are_vectors_even_when_the_channels_are_unknown() {
    let params = |scale: &str| [t("128"), t(scale), t("1"), t("1"), t("1")];
    assert!(certain(&found("BatchNormalization", 15, vec![], &params("1,2"))));
    assert!(found("BatchNormalization", 15, vec![], &params("1")).is_empty());
}

#[test]
fn max_unpool_indices_have_the_inputs_rank_of_two_at_least() {
    let attrs = || vec![ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])];
    assert!(certain(&found("MaxUnpool", 11, attrs(), &[t("1,1,2,2"), typed(7, "")])));
    assert!(found("MaxUnpool", 11, attrs(), &[t("1,1,2,2"), typed(7, "1,1,2,2")]).is_empty());
}

#[test]
fn loss_labels_follow_the_scores() {
    let none = || vec![string("reduction", "none")];
    let nll = |x: &str, target: &str, w: &str| {
        found("NegativeLogLikelihoodLoss", 13, none(), &[t(x), typed(7, target), t(w)])
    };
    assert!(nll("3,4,5,6", "3,5,6", "4").is_empty());
    assert!(nll("3,4,5,6", "3,5,6", "5").is_empty(), "onnxruntime runs longer weights");
    assert!(certain(&nll("3,4,5", "3,5,6", "4")), "labels of rank 3 for scores of rank 3");
    assert!(certain(&nll("3,4,5,6", "3,5,7", "4")), "labels of other spatial sizes");
    let sce = found("SoftmaxCrossEntropyLoss", 13, none(), &[t("3,4,5"), typed(7, "2,5")]);
    assert!(certain(&sce), "labels of another batch");
}

#[test]
fn dft_input_is_real_or_complex_one_sided_real_its_inverse_complex() {
    let dft = |opset, attrs, x: &str| found("DFT", opset, attrs, &[t(x)]);
    assert!(dft(17, vec![], "2,5,1").is_empty() && dft(17, vec![], "2,5,2").is_empty());
    assert!(certain(&dft(17, vec![], "2,5,3")));
    assert!(certain(&dft(17, vec![int("onesided", 1)], "2,5,5,2")), "one-sided of a complex input");
    assert!(certain(&dft(20, vec![int("onesided", 1), int("inverse", 1)], "2,5,1")), "its inverse of a real one");
    assert!(dft(20, vec![int("onesided", 1), int("inverse", 1)], "2,5,2").is_empty());
}

#[test]
fn dft_axis_is_a_signal_axis_never_the_complex_one() {
    let at = |axis: i64| found("DFT", 20, vec![], &[t("2,5,5,1"), None, consts("", &[axis])]);
    for bad in [3, -1, 4, -5] {
        assert!(certain(&at(bad)), "axis {bad}");
    }
    assert!(at(2).is_empty() && at(-2).is_empty() && at(-4).is_empty());
    assert!(certain(&found("DFT", 17, vec![int("axis", 3)], &[t("2,5,5,1")])));
}

#[test]
fn stft_signal_has_two_dims_at_least() {
    assert!(certain(&found("STFT", 17, vec![], &[t("3"), consts("", &[2])])));
    assert!(found("STFT", 17, vec![], &[t("1,16,1"), consts("", &[4]), None, consts("", &[8])]).is_empty());
}

#[test]
fn einsum_ellipses_stand_for_one_number_of_dims() {
    let einsum = |eq: &str, a: &str, b: &str| found("Einsum", 12, vec![string("equation", eq)], &[t(a), t(b)]);
    assert!(certain(&einsum("...,...->...", "", "2,3")));
    assert!(certain(&einsum("...ij,...ij->...ij", "3,4", "2,3,4")));
    assert!(einsum("...,...->...", "1,3", "2,3").is_empty(), "equal counts broadcast");
}

#[test]
fn scatter_elements_updates_have_the_indices_shape_no_longer_than_the_data_off_the_axis() {
    let scatter =
        |d: &str, i: &str, u: &str| found("ScatterElements", 13, vec![int("axis", 0)], &[t(d), typed(7, i), t(u)]);
    assert!(scatter("2,3", "3,2", "3,2").is_empty(), "longer on the scatter axis runs");
    assert!(certain(&scatter("2,3", "2,4", "2,4")), "longer off the axis");
    assert!(certain(&scatter("2,3", "2,2", "2,3")), "updates of another shape");
    assert!(certain(&scatter("2,3", "2", "2")), "indices of another rank");
}

#[test]
fn scatter_nd_updates_are_the_indices_batch_then_the_data_tail() {
    let scatter = |d: &str, i: &str, u: &str| found("ScatterND", 13, vec![], &[t(d), typed(7, i), t(u)]);
    assert!(scatter("4,3", "2,1", "2,3").is_empty());
    assert!(scatter("4,3", "2,2", "2").is_empty());
    assert!(certain(&scatter("4,3", "2,1", "2,4")));
    assert!(certain(&scatter("4,3", "2,3", "2")), "an index deeper than the data");
    assert!(certain(&scatter("4,3", "2,1", "2")), "updates of the wrong rank");
}

#[test]
fn gather_nd_index_depth_is_at_most_the_data_rank_after_batch_dims() {
    assert!(found("GatherND", 13, vec![], &[t("4,3"), typed(7, "2,2")]).is_empty());
    assert!(certain(&found("GatherND", 13, vec![], &[t("4,3"), typed(7, "2,3")])));
    assert!(certain(&found("GatherND", 13, vec![int("batch_dims", 1)], &[t("4,3"), typed(7, "4,2")])));
    assert!(certain(&found("GatherND", 13, vec![], &[t("4,3"), typed(7, "")])), "scalar indices");
}

#[test]
fn one_hot_depth_is_one_at_least_and_values_are_two() {
    let one_hot =
        |depth: i64, values: &str| found("OneHot", 11, vec![], &[typed(7, "2,2"), consts("", &[depth]), t(values)]);
    assert!(one_hot(3, "2").is_empty());
    assert!(certain(&one_hot(-3, "2")) && certain(&one_hot(0, "2")));
    assert!(certain(&one_hot(3, "3")));
}

#[test]
fn range_takes_three_single_elements_and_a_step_other_than_zero() {
    let range = |s: Option<ValueFacts>, d: Option<ValueFacts>| found("Range", 11, vec![], &[s, consts("", &[5]), d]);
    assert!(range(consts("", &[0]), consts("", &[1])).is_empty());
    assert!(range(consts("1", &[0]), consts("", &[1])).is_empty(), "onnxruntime runs a one-element vector");
    assert!(certain(&range(consts("2", &[0, 1]), consts("", &[1]))), "but not two elements");
    assert!(certain(&range(consts("", &[0]), consts("", &[0]))), "step 0");
}

#[test]
fn col2im_columns_are_channels_times_the_block_by_the_number_of_blocks() {
    let col2im = |x: &str, image: &[i64], block: &[i64]| {
        let n = image.len().to_string();
        found("Col2Im", 18, vec![], &[t(x), consts(&n, image), consts(&block.len().to_string(), block)])
    };
    assert!(col2im("1,10,5", &[5, 5], &[1, 5]).is_empty());
    assert!(certain(&col2im("1,11,5", &[5, 5], &[1, 5])), "11 channels for a block of 5");
    assert!(certain(&col2im("1,10,12", &[5, 5], &[1, 5])), "12 columns for 5 blocks");
    assert!(certain(&col2im("1,10,5", &[5, 5, 1], &[1, 5])), "image and block of two lengths");
    // A block past any size overflows nothing (ONNX's test_col2im_block_shape_overflow): 10 is no multiple of it.
    assert!(certain(&col2im("1,10,5", &[5, 5], &[2, i64::MAX])));
}

#[test]
fn compress_axis_is_within_the_rank() {
    let cond = || typed(9, "2");
    assert!(found("Compress", 11, vec![int("axis", 1)], &[t("2,3"), cond()]).is_empty());
    assert!(certain(&found("Compress", 11, vec![int("axis", 2)], &[t("2,3"), cond()])));
}

#[test]
fn window_attributes_have_positive_kernels_strides_and_dilations_and_no_negative_padding() {
    let conv = |attrs| found("Conv", 11, attrs, &[t("1,1,5,5"), t("1,1,3,3")]);
    assert!(conv(vec![ints("strides", &[2, 1]), ints("pads", &[0, 1, 0, 1])]).is_empty());
    for bad in [ints("strides", &[0, 1]), ints("dilations", &[1, -1]), ints("pads", &[0, -1, 0, 0])] {
        assert!(certain(&conv(vec![bad])));
    }
    let pool = |attrs: Vec<AttributeProto>| found("MaxPool", 12, attrs, &[t("1,1,5,5")]);
    assert!(certain(&pool(vec![ints("kernel_shape", &[0, 2])])));
    assert!(certain(&pool(vec![ints("kernel_shape", &[2, 2]), ints("strides", &[-1, 1])])));
    let transpose = |attrs| found("ConvTranspose", 11, attrs, &[t("1,1,5,5"), t("1,1,3,3")]);
    assert!(certain(&transpose(vec![ints("output_padding", &[-1, 0])])));
    assert!(certain(&transpose(vec![ints("output_shape", &[-1, 5])])));
    // Explicit pads and auto_pad together: refused for convolutions (zero pads too), run for pools.
    let both = || vec![ints("pads", &[0, 0, 0, 0]), string("auto_pad", "VALID")];
    assert!(certain(&conv(both())) && certain(&transpose(both())));
    assert!(conv(vec![ints("pads", &[0, 0, 0, 0]), string("auto_pad", "NOTSET")]).is_empty());
    assert!(
        pool(vec![ints("kernel_shape", &[2, 2]), ints("pads", &[0, 0, 0, 0]), string("auto_pad", "VALID")]).is_empty()
    );
}

#[test]
fn grid_sample_grid_has_the_batch_and_one_coordinate_per_spatial_axis() {
    let grid = |opset, x: &str, g: &str| found("GridSample", opset, vec![], &[t(x), t(g)]);
    assert!(grid(16, "1,1,4,4", "1,3,3,2").is_empty() && grid(20, "1,1,4,4,4", "1,2,2,2,3").is_empty());
    assert!(certain(&grid(16, "1,1,4,4", "2,3,3,2")), "batch");
    assert!(certain(&grid(16, "1,1,4,4", "1,3,3,3")), "coordinates");
    assert!(certain(&grid(20, "1,1,4,4", "1,3,2")), "rank");
    assert!(certain(&grid(16, "1,1,4,4,4", "1,2,2,2,3")), "5-D before opset 20");
    // A grid of rank 1 or 0 beside an input of unknown rank: nothing to compare, and no panic.
    for g in ["2", ""] {
        let _ = found(
            "GridSample",
            20,
            vec![],
            &[Some(ValueFacts::tensor(Some(1), crate::sizes::shape::Shape::unranked())), t(g)],
        );
    }
}

#[test]
fn affine_grid_theta_is_n_by_2_by_3_or_n_by_3_by_4() {
    let affine =
        |theta: &str, size: &[i64]| found("AffineGrid", 20, vec![], &[t(theta), consts(&size.len().to_string(), size)]);
    assert!(affine("1,2,3", &[1, 1, 4, 4]).is_empty() && affine("1,3,4", &[1, 1, 2, 4, 4]).is_empty());
    assert!(certain(&affine("2,2,3", &[1, 1, 4, 4])));
    assert!(certain(&affine("1,3,4", &[1, 1, 4, 4])));
    assert!(certain(&affine("1,2,3", &[1, 4, 4])));
}

#[test]
fn center_crop_pad_has_one_size_per_axis() {
    let crop =
        |attrs, sizes: &[i64]| found("CenterCropPad", 18, attrs, &[t("4,5"), consts(&sizes.len().to_string(), sizes)]);
    assert!(crop(vec![], &[3, 3]).is_empty() && crop(vec![ints("axes", &[1])], &[3]).is_empty());
    assert!(certain(&crop(vec![], &[3])));
}

#[test]
fn det_takes_square_matrices() {
    assert!(found("Det", 11, vec![], &[t("2,3,3")]).is_empty());
    assert!(certain(&found("Det", 11, vec![], &[t("3,4")])) && certain(&found("Det", 11, vec![], &[t("5")])));
    assert_eq!(conditional(&found("Det", 11, vec![], &[t("N,3")])), ["N = 3"]);
}

#[test]
fn tensor_scatter_update_is_the_cache_but_on_the_sequence_axis_and_rotary_caches_are_one_shape() {
    let scatter = |past: &str, update: &str| found("TensorScatter", 24, vec![], &[t(past), t(update)]);
    assert!(scatter("2,3,5,4", "2,3,1,4").is_empty());
    assert!(certain(&scatter("2,3,5,4", "2,2,1,4")) && certain(&scatter("2,3,5,4", "2,3,4")));
    let rotary =
        |cos: &str, sin: &str| found("RotaryEmbedding", 23, vec![], &[t("1,2,3,8"), t(cos), t(sin), typed(7, "1,3")]);
    assert!(rotary("8,4", "8,4").is_empty());
    assert!(certain(&rotary("8,3", "8,4")));
}

#[test]
fn split_to_sequence_sizes_fill_the_axis_and_a_scalar_split_is_positive() {
    let split = |s: Option<ValueFacts>| found("SplitToSequence", 11, vec![], &[t("6,4"), s]);
    assert!(split(consts("2", &[2, 4])).is_empty() && split(consts("", &[4])).is_empty());
    assert!(certain(&split(consts("2", &[2, 3]))));
    assert!(certain(&split(consts("", &[0]))));
    assert!(certain(&found("SplitToSequence", 11, vec![int("axis", 2)], &[t("6,4"), None])));
}

/// Every rule above on every combination of small shapes, unknown ranks and awkward constants (negative, 0,
/// i64::MAX) for its first three inputs: no panic (an index past a rank, an overflow) whatever the model says.
#[test]
fn the_new_rules_never_panic_on_small_odd_inputs() {
    let mut inputs: Vec<Option<ValueFacts>> =
        ["", "0", "1", "3", "2,0", "1,3", "2,3,4", "1,1,2,2", "2,1,3,4,5"].iter().map(|s| t(s)).collect();
    inputs.push(Some(ValueFacts::tensor(Some(1), crate::sizes::shape::Shape::unranked())));
    inputs.push(None);
    for v in [&[-1][..], &[0], &[i64::MAX, 2], &[3, -5, 1]] {
        inputs.push(consts(if v.len() == 1 { "" } else { ["2", "3"][v.len() - 2] }, v));
    }
    let ops: [(&str, i64, Vec<AttributeProto>); 21] = [
        ("Einsum", 12, vec![string("equation", "...i,...->...")]),
        ("ScatterElements", 13, vec![int("axis", -1)]),
        ("ScatterND", 13, vec![]),
        ("GatherND", 13, vec![int("batch_dims", 2)]),
        ("OneHot", 11, vec![]),
        ("Range", 11, vec![]),
        ("Col2Im", 18, vec![ints("pads", &[-1, 0, 0, 0])]),
        ("SwiGLU", 28, vec![]),
        ("CausalConvWithState", 27, vec![]),
        ("LinearAttention", 27, heads(4, 2)),
        ("TensorScatter", 24, vec![int("axis", 7)]),
        ("SplitToSequence", 11, vec![int("axis", -1)]),
        ("NegativeLogLikelihoodLoss", 13, vec![]),
        ("DFT", 20, vec![int("onesided", 1)]),
        ("STFT", 17, vec![]),
        ("GridSample", 20, vec![]),
        ("AffineGrid", 20, vec![]),
        ("CenterCropPad", 18, vec![ints("axes", &[5])]),
        ("Det", 11, vec![]),
        ("MaxUnpool", 11, vec![ints("kernel_shape", &[2, 2])]),
        ("Conv", 11, vec![ints("strides", &[0])]),
    ];
    for (op, opset, attrs) in ops {
        for a in &inputs {
            for b in &inputs {
                for c in &inputs {
                    let _ = found(op, opset, attrs.clone(), &[a.clone(), b.clone(), c.clone()]);
                    if op == "Einsum" {
                        let inputs = [a.clone(), b.clone(), c.clone()];
                        let _ = run_rule_checked(attention::infer_preview, "FlexAttention", 1, vec![], &inputs, 1);
                    }
                }
            }
        }
    }
}
