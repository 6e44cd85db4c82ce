//! Products and gathers of `com.microsoft`: fused and quantized MatMuls (offline optimization, dynamic
//! quantization, weight-only int4 quantization) and the block-quantized embedding gather. Each follows its
//! section of onnxruntime's `docs/ContribOperators.md`.

use super::Ctx;
use crate::infer::nn::matmul_shape;
use crate::infer::normalize_axis;
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

const FLOAT: i32 = crate::onnx::pb::DataType::Float as i32;
const UINT8: i32 = crate::onnx::pb::DataType::Uint8 as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        // "com.microsoft.FusedMatMul": MatMul of A and B after `transBatchA`/`transA` (and the same for B).
        "FusedMatMul" => {
            let a = operand(ctx.dims(0), ctx.int("transBatchA", 0) != 0, ctx.int("transA", 0) != 0);
            let b = operand(ctx.dims(1), ctx.int("transBatchB", 0) != 0, ctx.int("transB", 0) != 0);
            vec![ValueFacts::tensor(ctx.elem(0), matmul_shape(a.as_deref(), b.as_deref()))]
        }
        // "com.microsoft.MatMulNBits": A (…, K) times the quantized B (N, K) held in blocks: (…, N), A's type.
        "MatMulNBits" => vec![quantized_b_matmul(ctx)],
        // "com.microsoft.MatMulIntegerToFloat": MatMul of A and B, of a_scale's float type.
        "MatMulIntegerToFloat" => vec![ValueFacts::tensor(ctx.elem(2), matmul_shape(ctx.dims(0), ctx.dims(1)))],
        // "com.microsoft.DynamicQuantizeMatMul": float A times int8 B: MatMul's shape, float.
        "DynamicQuantizeMatMul" => vec![ValueFacts::tensor(ctx.elem(0), matmul_shape(ctx.dims(0), ctx.dims(1)))],
        // "com.microsoft.MatMulFpQ4", "com.microsoft.MatMulBnb4": like MatMulNBits, N and K as attributes.
        "MatMulBnb4" | "MatMulFpQ4" => vec![quantized_b_matmul(ctx)],
        "GatherBlockQuantized" => vec![gather_block_quantized(ctx)],
        _ => return None,
    })
}

/// An operand of FusedMatMul as the product sees it: with `batch`, its first dim moved behind the other batch
/// dims (`[d0, d1, …, dn-2, dn-1]` read as `[d1, …, dn-2, d0, dn-1]`); with `trans`, its last two dims swapped.
fn operand(dims: Option<&[Dim]>, batch: bool, trans: bool) -> Option<Vec<Dim>> {
    let mut d = dims?.to_vec();
    let r = d.len();
    if batch && r >= 3 {
        let first = d.remove(0);
        d.insert(r - 2, first);
    }
    if trans && r >= 2 {
        d.swap(r - 2, r - 1);
    }
    Some(d)
}

/// "com.microsoft.GatherBlockQuantized": Gather of `data` along `gather_axis`, of the scales' type. Four-bit
/// data stored as `uint8` holds two elements a byte: its last dim counts half the elements.
fn gather_block_quantized(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(2).or(Some(FLOAT));
    let (Some(data), Some(indices)) = (ctx.dims(0), ctx.dims(1)) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    let mut data = data.to_vec();
    let bits = ctx.int("bits", 4);
    if ctx.elem(0) == Some(UINT8) && (1..8).contains(&bits) && 8 % bits == 0 {
        if let Some(last) = data.last_mut() {
            *last = last.to_poly().and_then(|p| p.mul(&Poly::constant(8 / bits))).map_or(Dim::Unknown, Dim::from_poly);
        }
    }
    let Some(axis) = normalize_axis(ctx.int("gather_axis", 0), data.len()) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    let dims = data[..axis].iter().chain(indices).chain(&data[axis + 1..]).cloned().collect();
    ValueFacts::tensor(elem, Shape::ranked(dims))
}
/// A (…, K) times a quantized B of N rows given by the `N` attribute: (…, N), of A's type.
fn quantized_b_matmul(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let n = ctx.attrs.int("N").and_then(|n| u64::try_from(n).ok()).map_or(Dim::Unknown, Dim::Known);
    let shape = ctx
        .dims(0)
        .filter(|d| !d.is_empty())
        .map_or_else(Shape::unranked, |d| Shape::ranked(d[..d.len() - 1].iter().cloned().chain([n]).collect()));
    ValueFacts::tensor(ctx.elem(0), shape)
}
