//! The quantized ops of `com.microsoft` that static quantization in the QOperator format writes (besides the
//! broadcasting `QLinearAdd`, `QLinearMul` and `QGemm`, which are sites), and its QuantizeLinear/DequantizeLinear.
//! Each follows its section of onnxruntime's `docs/ContribOperators.md`.

use super::{same, Ctx};
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};

const FLOAT: i32 = crate::onnx::pb::DataType::Float as i32;
const UINT8: i32 = crate::onnx::pb::DataType::Uint8 as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        // "com.microsoft.QLinearSigmoid", "com.microsoft.QLinearLeakyRelu", "com.microsoft.QLinearSoftmax":
        // element-wise (Softmax along an axis), Y like X.
        "QLinearSigmoid" | "QLinearLeakyRelu" | "QLinearSoftmax" => vec![same(ctx, 0)],
        // "com.microsoft.QLinearGlobalAveragePool": (N, C, H, W) gives (N, C, 1, 1); with `channels_last`,
        // (N, H, W, C) gives (N, 1, 1, C).
        "QLinearGlobalAveragePool" => {
            let last = ctx.int("channels_last", 0) != 0;
            let shape = ctx.dims(0).filter(|d| d.len() >= 2).map_or_else(Shape::unranked, |d| {
                let keep = |i: usize| if last { i == 0 || i == d.len() - 1 } else { i < 2 };
                Shape::ranked(
                    d.iter().enumerate().map(|(i, x)| if keep(i) { x.clone() } else { Dim::Known(1) }).collect(),
                )
            });
            vec![ValueFacts::tensor(ctx.elem(0), shape)]
        }
        // "com.microsoft.QLinearAveragePool": AveragePool's arithmetic on X (NCHW; `channels_last` is not read
        // here, and leaves the shape unknown).
        "QLinearAveragePool" if ctx.int("channels_last", 0) == 0 => {
            let mut pool = super::norm::reborrow(ctx);
            pool.op = "AveragePool";
            let out = crate::infer::infer(&mut pool)?;
            vec![ValueFacts::tensor(ctx.elem(0), out.into_iter().next()?.shape)]
        }
        // "com.microsoft.QLinearConcat": inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per
        // tensor: Concat of the X's along `axis`.
        "QLinearConcat" => {
            let xs: Vec<Option<&ValueFacts>> = (2..ctx.inputs.len()).step_by(3).map(|i| ctx.input(i)).collect();
            let mut concat = super::norm::reborrow(ctx);
            concat.op = "Concat";
            concat.inputs = &xs;
            crate::infer::infer(&mut concat)?.into_iter().take(1).collect()
        }
        // "com.microsoft.QuantizeLinear": Y like X, of the zero point's type (uint8 without one).
        "QuantizeLinear" => vec![ValueFacts::tensor(ctx.elem(2).or(Some(UINT8)), ctx.shape(0))],
        // "com.microsoft.DequantizeLinear": Y like X, of the scale's type.
        "DequantizeLinear" => vec![ValueFacts::tensor(ctx.elem(1).or(Some(FLOAT)), ctx.shape(0))],
        _ => return None,
    })
}
