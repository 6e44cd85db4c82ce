//! What the image and sampling ops require of their inputs (ONNX `docs/Operators.md`: GridSample-16/20/22,
//! AffineGrid-20, CenterCropPad-18) and Det's square matrices, checked against onnxruntime 1.31 where it runs them
//! (scripts/contradictions.py).

use super::require::{At, Contradiction, Detail, Malformed, RankNeed, Requirement, Whence};
use super::Ctx;
use crate::onnx::tensor;
use crate::sizes::shape::Dim;

fn at(ctx: &Ctx<'_, '_>, input: usize, axis: usize) -> Option<At> {
    ctx.dims(input).and_then(|d| d.get(axis)).map(|d| At::new(input, axis, d.clone()))
}

/// GridSample: X `(N, C, D1 … Dr)` (4-D before opset 20), a grid `(N, D1_out … Dr_out, r)` of X's rank.
pub(super) fn grid_sample(ctx: &Ctx<'_, '_>) {
    let need = if ctx.opset < 20 { RankNeed::Exactly(4) } else { RankNeed::AtLeast(3) };
    if !ctx.require_rank(0, need) || !ctx.require_rank(1, RankNeed::Of(0)) {
        return;
    }
    if let (Some(x), Some(g)) = (at(ctx, 0, 0), at(ctx, 1, 0)) {
        ctx.require_equal(Requirement::OperandSizes, x, g);
    }
    // X's rank may be unknown: the grid's own rank must still leave spatial axes.
    if let Some(rank) = ctx.rank(1).filter(|&r| r >= 3) {
        if let Some(last) = at(ctx, 1, rank - 1) {
            let spatial = Dim::Known(rank as u64 - 2);
            ctx.require_size(Requirement::OperandSizes, vec![1], last, spatial, Whence::Required);
        }
    }
}

/// AffineGrid: theta `(N, 2, 3)` for a `size` of `(N, C, H, W)`, `(N, 3, 4)` for `(N, C, D, H, W)`.
pub(super) fn affine_grid(ctx: &Ctx<'_, '_>) {
    if !ctx.require_rank(0, RankNeed::Exactly(3)) || !ctx.require_rank(1, RankNeed::Exactly(1)) {
        return;
    }
    let Some(size) = ctx.value(1) else { return };
    if !matches!(size.len(), 4 | 5) {
        let m = Malformed::Length { list: "size", len: size.len(), expected: 4 };
        return ctx.report(Contradiction::violated(Requirement::ListLength, vec![1], Detail::Malformed(m)));
    }
    let spatial = size.len() as u64 - 2;
    for (axis, expected) in [(0, tensor::value_dim(&size[0])), (1, Dim::Known(spatial)), (2, Dim::Known(spatial + 1))] {
        if let Some(theta) = at(ctx, 0, axis) {
            ctx.require_size(Requirement::OperandSizes, vec![0, 1], theta, expected, Whence::Required);
        }
    }
}

/// CenterCropPad: one size in `shape` per axis cropped or padded (`axes`, all by default).
pub(super) fn center_crop_pad(ctx: &Ctx<'_, '_>) {
    let axes = match ctx.attrs.ints("axes") {
        Some(a) => a.len(),
        None => match ctx.rank(0) {
            Some(r) => r,
            None => return,
        },
    };
    if let Some(sizes) = at(ctx, 1, 0).filter(|_| ctx.rank(1) == Some(1)) {
        ctx.require_size(Requirement::ListLength, vec![0, 1], sizes, Dim::Known(axes as u64), Whence::Required);
    }
}

/// Det: square matrices in the last two dims.
pub(super) fn det(ctx: &Ctx<'_, '_>) {
    if !ctx.require_rank(0, RankNeed::AtLeast(2)) {
        return;
    }
    let Some(rank) = ctx.rank(0) else { return };
    if let (Some(rows), Some(cols)) = (at(ctx, 0, rank - 2), at(ctx, 0, rank - 1)) {
        ctx.require_equal(Requirement::OperandSizes, rows, cols);
    }
}
