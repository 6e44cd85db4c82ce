//! Normalizations and activations of `com.microsoft` (and `SimplifiedLayerNormalization`, which onnxruntime
//! registers in the ONNX domain): what the transformers optimizer fuses LayerNorm, RMSNorm, GELU and bias adds
//! into. Each follows its section of onnxruntime's `docs/ContribOperators.md`.

use super::{same, Ctx};
use crate::infer::dim_at;
use crate::onnx::tensor::{ValueFacts, INT32};
use crate::sizes::shape::{Dim, Shape};

const FLOAT: i32 = crate::onnx::pb::DataType::Float as i32;

/// Contrib ops onnxruntime registers in the ONNX domain.
pub fn infer_onnx_domain(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    match ctx.op {
        // "com.microsoft.SimplifiedLayerNormalization" is registered as `SimplifiedLayerNormalization` of the ONNX
        // domain (onnxruntime's `contrib_defs.cc`): Y like X, inv_std_var with the normalized axes reduced to 1.
        "SimplifiedLayerNormalization" => Some(vec![same(ctx, 0), statistic(ctx, ctx.int("axis", -1))]),
        _ => None,
    }
}

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        // "com.microsoft.SkipLayerNormalization" and "com.microsoft.SkipSimplifiedLayerNormalization": output
        // (B, S, H) like input; mean and inv_std_var (B, S, 1), float; input_skip_bias_sum like input. The skip
        // input is a broadcasting site (`ops`), and so is judged there.
        "SkipLayerNormalization" | "SkipSimplifiedLayerNormalization" => {
            let stat = statistic(ctx, -1);
            vec![same(ctx, 0), stat.clone(), stat, same(ctx, 0)]
        }
        // "com.microsoft.EmbedLayerNormalization": output (B, S, H) with H from word_embedding (V, H); mask_index
        // (B) int32; embedding_sum like output.
        // "com.microsoft.QEmbedLayerNormalization" (dynamic quantization of the above): the same shapes, float.
        "EmbedLayerNormalization" | "QEmbedLayerNormalization" => {
            let hidden = dim_at(ctx.dims(2), 1);
            let shape = match ctx.dims(0) {
                Some([b, s]) => Shape::ranked(vec![b.clone(), s.clone(), hidden]),
                _ => Shape::unranked(),
            };
            let elem = if ctx.op == "EmbedLayerNormalization" { ctx.elem(2) } else { Some(FLOAT) };
            let out = ValueFacts::tensor(elem, shape);
            let mask_index = ValueFacts::tensor(Some(INT32), Shape::ranked(vec![dim_at(ctx.dims(0), 0)]));
            vec![out.clone(), mask_index, out]
        }
        // "com.microsoft.LayerNormalization" (the pre-opset-17 registration) and "com.microsoft.
        // SimplifiedLayerNormalization" as some converters write them: as the ONNX-domain ones.
        "LayerNormalization" => {
            let stat = statistic(ctx, ctx.int("axis", -1));
            vec![same(ctx, 0), stat.clone(), stat]
        }
        "SimplifiedLayerNormalization" => vec![same(ctx, 0), statistic(ctx, ctx.int("axis", -1))],
        // "com.microsoft.Gelu", "com.microsoft.FastGelu" (X and an optional bias of X's last dim),
        // "com.microsoft.BiasGelu" (A and bias), "com.microsoft.QuickGelu": element-wise, Y like X.
        "Gelu" | "FastGelu" | "BiasGelu" | "QuickGelu" => vec![same(ctx, 0)],
        // "com.microsoft.BiasDropout": output like data, mask bool like data.
        "BiasDropout" => vec![same(ctx, 0), ValueFacts::tensor(Some(crate::onnx::tensor::BOOL), ctx.shape(0))],
        // "com.microsoft.BiasSplitGelu": X (N, S, D) plus bias (D) gives (N, S, D / 2).
        "BiasSplitGelu" => {
            let shape = ctx.dims(0).map_or_else(Shape::unranked, |d| {
                let mut d = d.to_vec();
                if let Some(last) = d.last_mut() {
                    *last = last
                        .to_poly()
                        .and_then(|p| p.div_poly(&crate::sizes::sym::Poly::constant(2)))
                        .map_or(Dim::Unknown, Dim::from_poly);
                }
                Shape::ranked(d)
            });
            vec![ValueFacts::tensor(ctx.elem(0), shape)]
        }
        // "com.microsoft.FusedConv": Conv (X, W, B) with an activation, plus an optional Z added to the result:
        // the output is Conv's.
        "FusedConv" => crate::infer::infer(&mut Ctx { op: "Conv", ..reborrow(ctx) })?,
        _ => return None,
    })
}

/// The same context, to run a standard op's rule under another op name. What that rule finds broken is not kept:
/// the contrib op's operands and layout (blocked channels, interleaved scales) are not the standard op's, so its
/// requirements are not claimed for them.
pub(super) fn reborrow<'c, 'a, 'm>(ctx: &'c mut Ctx<'a, 'm>) -> Ctx<'c, 'm> {
    Ctx {
        op: ctx.op,
        opset: ctx.opset,
        attrs: ctx.attrs,
        inputs: ctx.inputs,
        outputs: ctx.outputs,
        subgraphs: ctx.subgraphs,
        fresh: &mut *ctx.fresh,
        contradictions: Default::default(),
    }
}

/// A normalization's per-row statistic: X's shape with the axes from `axis` on reduced to 1, float.
fn statistic(ctx: &Ctx<'_, '_>, axis: i64) -> ValueFacts {
    ValueFacts::tensor(Some(FLOAT), crate::infer::norm::statistic_shape(ctx, axis))
}
