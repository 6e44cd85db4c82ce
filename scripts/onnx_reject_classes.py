"""Why each of ONNX's shape-inference tests expects inference to reject its model (scripts/onnx_shape_tests.py).

Issue 26 asks that `check` find something in every such model that fails on a broadcasting op or on a shape
contradiction. This table says, for every test function that captures a model inference must reject, which kind of
error the test is about, so the harness can hold the in-scope classes to that and report the others apart. A test
the table does not know, or an entry no test uses any more, is a problem the harness reports: the table stays whole
when the pinned onnx changes.

Keys are test function names (pytest's parameters stripped: every parametrization of a test is about one error).
"""

from __future__ import annotations

import enum


class Reason(enum.Enum):
    # Input shapes that break a broadcasting op's rule.
    BROADCAST = "broadcast"
    # Sizes that contradict each other: between an op's inputs, against its attributes, against a declared shape,
    # an axis out of range, a size that must divide and does not.
    SHAPE = "shape"
    # An input of a rank the op does not take.
    RANK = "rank"
    # Element types that contradict each other or the op's type constraints.
    TYPE = "type"
    # Attributes missing, of a bad value, or that contradict each other (negative strides, an unknown mode).
    ATTRIBUTE = "attribute"
    # Constant input contents the op refuses (a negative depth, a zero split).
    CONTENTS = "contents"
    # A size past the int64 range (inference's overflow guards; no such tensor can exist).
    OVERFLOW = "overflow"
    # The model itself is malformed: schema arity, untyped inputs, functions, tensor data.
    MODEL = "model"


# The classes `check` must have a finding for on every model (issue 26's acceptance). Out of scope, and why:
# TYPE errors are about element types, not sizes (most are found anyway: declared-shape-mismatch, initializer-mismatch,
# type-mismatch); ATTRIBUTE errors are values the op refuses rather than shapes that contradict (the window
# attributes, a Transpose perm and an axis are found; schema-level attribute rules of the ml and attention ops are
# not); CONTENTS are in initializers the tests also list as graph inputs, which from IR 4 a caller may override, so
# the values are not the model's to judge (a constant OneHot depth or Range step is judged); OVERFLOW needs a size
# past 2**63, which no tensor can have, and sizes are kept exact rather than checked for overflow; MODEL errors are the
# loader's and the checker's, found where the tool has a code for them (duplicate-value, recursive-function,
# tensor-data-mismatch).
IN_SCOPE = {Reason.BROADCAST, Reason.SHAPE, Reason.RANK}

# The codes that say a model's shapes contradict each other (or a broadcasting op's rule): an in-scope model needs a
# finding with one of them, unless OTHER_CODE_ONLY says why another finding is the one it gets.
SHAPE_CODES = {
    "shape-contradiction", "conditional-shape", "inexact-division", "initializer-mismatch", "declared-shape-mismatch",
    "broadcast-violation", "conditional-broadcast",
}
OTHER_CODE_ONLY = {
    # The weights' size (C + 1 for C classes) is not checked: onnxruntime reads the weights only at the labels and
    # runs such a model. The test's graph also defines `loss` twice, which `check` reports (duplicate-value).
    "test_negative_log_likelihood_input_weight_shape_mismatch": "duplicate-value",
}

R = Reason
CLASSES: dict[str, Reason] = {
    # -- shape contradictions
    "test_transpose_preexisting_incorrect_shape": R.SHAPE,  # inferred [3, ...] where the output declares 5
    "test_conv_weight_more_spatial_dims_than_input_raises": R.SHAPE,  # W's spatial rank against X's
    "test_conv_weight_fewer_spatial_dims_than_input_raises": R.SHAPE,
    "test_conv_transpose_weight_spatial_rank_mismatch": R.SHAPE,
    "test_linear_attention_gqa_indivisible": R.SHAPE,  # q_num_heads 6 not a multiple of kv_num_heads 4
    "test_linear_attention_qpack_indivisible": R.SHAPE,  # packed query 15 not divisible by 2 heads
    "test_linear_attention_decay_last_dim_wrong": R.SHAPE,
    "test_linear_attention_beta_last_dim_wrong": R.SHAPE,
    "test_flex_attention_gqa_not_divisible_fails": R.SHAPE,
    "test_flex_attention_mismatched_kv_seq_len_fails": R.SHAPE,
    "test_flex_attention_mismatched_kv_heads_fails": R.SHAPE,
    "test_flex_attention_mismatched_qk_head_size_fails": R.SHAPE,
    "test_einsum_ellipsis_mismatched_rank_raises": R.SHAPE,  # the ellipses of two operands stand for different dims
    "test_einsum_incorrect_num_inputs": R.SHAPE,  # a term of 1 label for an input of rank 2
    "test_negative_log_likelihood_input_weight_shape_mismatch": R.SHAPE,  # weight of C + 1 (the graph also defines
    # `loss` twice: duplicate-value)
    "test_causal_conv_with_state_kernel_zero_fails": R.SHAPE,  # a weight of shape [4, 1, 0]: a kernel of no taps
    "test_swiglu_rank_mismatch_fails": R.SHAPE,  # A and B must have one shape (the op never broadcasts)
    "test_swiglu_static_dim_mismatch_fails": R.SHAPE,
    "test_swiglu_broadcast_size1_fails": R.SHAPE,
    "test_infer_initializer_input_mismatch": R.SHAPE,  # initializer [8] against a declared [4]
    "test_infer_initializer_input_consistency_different_rank": R.SHAPE,
    "test_issue_layer_normalization_6187": R.SHAPE,  # axis -1 of a scalar (caught by check_model(full_check=True))
    "test_dft_invalid_axis_opset17": R.SHAPE,  # a onesided DFT of a last dim of 2 (complex input)
    "test_dft_invalid_axis_opset20": R.SHAPE,  # axis out of range (or the last, complex, axis)
    "test_dft_rfft_invalid_complex_input_opset17": R.SHAPE,  # onesided needs a real input: last dim 1
    "test_dft_rfft_invalid_complex_input_opset20": R.SHAPE,
    "test_dft_irfft_invalid_real_input_opset17": R.SHAPE,  # inverse onesided needs a complex input: last dim 2
    "test_dft_irfft_invalid_real_input_opset20": R.SHAPE,
    # -- ranks
    "test_conv_input_too_few_dims": R.RANK,
    "test_conv_transpose_rank0_weight_raises": R.RANK,
    "test_conv_transpose_rank1_weight_raises": R.RANK,
    "test_conv_transpose_rank2_weight_raises": R.RANK,
    "test_conv_transpose_rank2_input_raises": R.RANK,
    "test_conv_transpose_rank0_weight_raises_opset11": R.RANK,
    "test_conv_transpose_undersized_weight_raises": R.RANK,
    "test_linear_attention_query_rank_not_3": R.RANK,
    "test_linear_attention_past_state_rank_not_4": R.RANK,
    "test_linear_attention_decay_rank_not_3": R.RANK,
    "test_causal_conv_with_state_input_rank2_fails": R.RANK,
    "test_causal_conv_with_state_weight_rank2_fails": R.RANK,
    "test_flex_attention_rank_not_4_fails": R.RANK,
    "test_rnn_opset1_to_6_invalid_input_rank": R.RANK,
    "test_batch_norm_invalid": R.RANK,  # scale of rank 2
    "test_softmax_scalar_invalid": R.RANK,
    "test_hardmax_scalar_invalid": R.RANK,
    "test_logsoftmax_scalar_invalid": R.RANK,
    "test_maxunpool_rank0_indices_raises": R.RANK,
    "test_maxunpool_rank0_indices_raises_opset9": R.RANK,
    "test_maxunpool_rank0_indices_raises_opset11": R.RANK,
    "test_einsum_scalar_invalid_equation": R.RANK,  # a term of 1 label for a scalar
    "test_negative_log_likelihood_input_target_shape_mismatch": R.RANK,  # target of rank 3 for an input of rank 3
    "test_issue_conv_6180": R.RANK,  # a scalar weight (caught by check_model(full_check=True))
    "test_issue_gemm_6185": R.RANK,  # a scalar B
    "test_issue_stft_6186": R.RANK,  # signal of rank 1; frame_step of rank 1
    # -- element types
    "test_transpose_preexisting_incorrect_type": R.TYPE,
    "test_flex_attention_mismatched_elem_type_fails": R.TYPE,
    "test_quantizelinear_zp_output_dtype_conflicted": R.TYPE,
    "test_parse_data_with_unsupported_tensor_type": R.TYPE,  # an int32 shape for ConstantOfShape
    "test_issue_constantofshape_6135": R.TYPE,  # a float initializer for a declared int64 input
    # -- attributes
    "test_transpose_incorrect_repeated_perm": R.ATTRIBUTE,
    "test_conv_zero_strides": R.ATTRIBUTE,
    "test_conv_negative_strides": R.ATTRIBUTE,
    "test_conv_zero_dilations": R.ATTRIBUTE,
    "test_conv_negative_dilations": R.ATTRIBUTE,
    "test_conv_negative_pads": R.ATTRIBUTE,
    "test_conv_zero_kernel_shape": R.ATTRIBUTE,
    "test_conv_negative_kernel_shape": R.ATTRIBUTE,
    "test_maxpool_zero_kernel_shape": R.ATTRIBUTE,
    "test_maxpool_negative_dilations": R.ATTRIBUTE,
    "test_maxpool_negative_pads": R.ATTRIBUTE,
    "test_maxpool_zero_strides": R.ATTRIBUTE,
    "test_maxpool_negative_strides": R.ATTRIBUTE,
    "test_averagepool_zero_strides": R.ATTRIBUTE,
    "test_averagepool_negative_strides": R.ATTRIBUTE,
    "test_conv_transpose_negative_dilations": R.ATTRIBUTE,
    "test_conv_transpose_zero_strides": R.ATTRIBUTE,
    "test_conv_transpose_negative_pads": R.ATTRIBUTE,
    "test_conv_transpose_negative_output_padding": R.ATTRIBUTE,
    "test_conv_transpose_negative_output_shape": R.ATTRIBUTE,
    "test_conv_transpose_zero_kernel_shape": R.ATTRIBUTE,
    "test_conv_transpose_with_pads_and_auto_pads": R.ATTRIBUTE,
    "test_roipool_negative_pooled_shape": R.ATTRIBUTE,
    "test_attention_25_rejects_invalid_attribute_and_cache_combinations": R.ATTRIBUTE,  # windows, cache pairs
    "test_linear_attention_gated_delta_missing_decay": R.ATTRIBUTE,  # update_rule against the inputs given
    "test_linear_attention_gated_delta_missing_beta": R.ATTRIBUTE,
    "test_linear_attention_linear_with_decay": R.ATTRIBUTE,
    "test_linear_attention_linear_with_beta": R.ATTRIBUTE,
    "test_linear_attention_unknown_update_rule": R.ATTRIBUTE,
    "test_linear_attention_q_num_heads_zero": R.ATTRIBUTE,
    "test_causal_conv_with_state_unknown_activation_fails": R.ATTRIBUTE,
    "test_scan_num_scan_inputs_out_of_range": R.ATTRIBUTE,
    "test_scan_loop_state_vars_exceed_outputs": R.ATTRIBUTE,
    "test_scan_invalid_num_scan_inputs_does_not_crash": R.ATTRIBUTE,
    "test_label_encoder_tensor_attributes_invalid_configurations": R.ATTRIBUTE,
    "test_category_mapper_fails_if_invalid_attributes": R.ATTRIBUTE,
    "test_tree_ensemble_fails_if_invalid_attributes": R.ATTRIBUTE,
    "test_one_hot_encoder_fails_if_invalid_attributes": R.ATTRIBUTE,
    # -- constant input contents
    "test_onehot_negative_depth": R.CONTENTS,
    "test_onehot_negative_indices": R.CONTENTS,
    "test_split_to_sequence_zero_scalar": R.CONTENTS,
    # -- sizes past int64
    "test_concat_axis_overflow": R.OVERFLOW,
    "test_pad_legacy_total_padding_overflow": R.OVERFLOW,
    "test_space_depth_block_area_overflow": R.OVERFLOW,
    "test_tile_dimension_overflow": R.OVERFLOW,
    "test_conv_effective_kernel_overflow": R.OVERFLOW,
    "test_conv_transpose_output_channels_overflow": R.OVERFLOW,
    "test_col2im_block_shape_overflow": R.OVERFLOW,
    "test_add_overflow": R.OVERFLOW,
    "test_sub_overflow": R.OVERFLOW,
    "test_mul_overflow": R.OVERFLOW,
    # -- malformed models
    "test_empty_graph": R.MODEL,  # an untyped graph input
    "test_concat_missing_shape": R.MODEL,  # an untyped graph input
    "test_parse_data_with_undefined_tensor_type": R.MODEL,  # an initializer of type UNDEFINED
    "test_range_initializer_invalid": R.MODEL,  # an initializer whose data holds no element
    "test_range_initializer_invalid_rawdata": R.MODEL,
    "test_check_type_when_schema_has_empty_io": R.MODEL,  # a custom schema the test registers
    "test_infer_shapes_rejects_cyclic_function": R.MODEL,
    "test_function_output_count_mismatch_does_not_crash": R.MODEL,
    "test_conv_transpose_rank0_weight_raises_opset1": R.MODEL,  # Reshape-1 given two inputs
}


def function_name(test_id: str) -> str:
    """`file::Class::test_x[params]` -> `test_x`."""
    return test_id.split("::")[-1].split("[")[0]


def classify(test_id: str) -> Reason | None:
    return CLASSES.get(function_name(test_id))
