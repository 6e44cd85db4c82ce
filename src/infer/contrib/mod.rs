//! Shape inference for onnxruntime's contrib ops: what its transformers optimizer, quantization tools, offline
//! optimization (the `com.microsoft.nchwc` layout included), fp16 converter and onnxruntime-genai's model builder
//! put into the models people deploy. Each op follows its section of onnxruntime's `docs/ContribOperators.md`
//! (cited at the op), cross-checked against onnxruntime's own `symbolic_shape_infer.py`; one file per op family.
//!
//! The broadcasting contrib ops (`QLinearAdd`, `QLinearMul`, `QGemm`, `FusedGemm`, `BiasAdd`, the skip inputs of
//! the skip normalizations, the attention biases) are sites: their rows are in [`crate::rules::ops`]
//! (`contrib_broadcast_op`), and the analysis takes their main output from the rule (as for `Add`) and the rest of
//! their outputs from the rules here (an attention op's outputs all from here: its rule's target is the scores).

mod attention;
mod gqa_require;
mod matmul;
mod nchwc;
mod norm;
mod quant;

use super::Ctx;
use crate::onnx::tensor::ValueFacts;

/// The domains of onnxruntime's contrib ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// Contrib ops onnxruntime registers in the ONNX domain itself (`SimplifiedLayerNormalization`).
    Onnx,
    /// `com.microsoft`.
    Microsoft,
    /// `com.microsoft.nchwc`: the blocked-channel layout of offline optimization at `ORT_ENABLE_ALL`.
    Nchwc,
}

impl Domain {
    pub fn of(domain: &str) -> Option<Domain> {
        match domain {
            "com.microsoft" => Some(Domain::Microsoft),
            "com.microsoft.nchwc" => Some(Domain::Nchwc),
            _ => None,
        }
    }
}

/// The outputs of a contrib op node; `None` when no rule knows the op.
pub fn infer(domain: Domain, ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    match domain {
        Domain::Onnx => norm::infer_onnx_domain(ctx),
        Domain::Nchwc => nchwc::infer(ctx),
        Domain::Microsoft => norm::infer(ctx)
            .or_else(|| matmul::infer(ctx))
            .or_else(|| attention::infer(ctx))
            .or_else(|| quant::infer(ctx)),
    }
}

/// X's type and shape: the element-wise contrib ops (activations, the normalizations' main output).
fn same(ctx: &Ctx<'_, '_>, input: usize) -> ValueFacts {
    ValueFacts::tensor(ctx.elem(input), ctx.shape(input))
}

#[cfg(test)]
pub(crate) mod tests;
