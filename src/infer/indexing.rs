//! What the indexing and index-like ops require of their inputs' shapes beyond what their inference reads: the
//! scatters' indices and updates, GatherND's index depth, OneHot's depth and values, Range's scalars and step, and
//! Col2Im's columns (ONNX `docs/Operators.md` for each). Each requirement is one onnxruntime enforces too (checked
//! with onnxruntime 1.31): where the two differ, only what both refuse is reported (GatherND's batch dims, which
//! onnxruntime lets divide rather than equal; a Compress condition longer than its axis, which it runs).

use super::require::{At, Contradiction, Detail, Malformed, RankNeed, Requirement, Whence};
use super::Ctx;
use crate::sizes::shape::Dim;

fn at(ctx: &Ctx<'_, '_>, input: usize, axis: usize) -> Option<At> {
    ctx.dims(input).and_then(|d| d.get(axis)).map(|d| At::new(input, axis, d.clone()))
}

fn same(ctx: &Ctx<'_, '_>, a: (usize, usize), b: (usize, usize)) {
    if let (Some(x), Some(y)) = (at(ctx, a.0, a.1), at(ctx, b.0, b.1)) {
        ctx.require_equal(Requirement::OperandSizes, x, y);
    }
}

/// Input `input` asks for `count` of something there are `size` of (an axis of that size, or that many dims).
fn too_many(ctx: &Ctx<'_, '_>, inputs: Vec<usize>, input: usize, count: u64, size: Dim) {
    let detail = Detail::TooMany { input, count: i64::try_from(count).unwrap_or(i64::MAX), size };
    ctx.report(Contradiction::violated(Requirement::IndexInRange, inputs, detail));
}

/// ScatterElements (and Scatter-9/11): data, indices and updates of one rank; updates of the indices' shape; off
/// the scatter axis, no indices axis longer than the data's.
pub(super) fn scatter_elements(ctx: &Ctx<'_, '_>) {
    let Some(rank) = ctx.rank(0) else { return };
    if !ctx.require_rank(1, RankNeed::Of(0)) || !ctx.require_rank(2, RankNeed::Of(1)) {
        return;
    }
    let Some(axis) = ctx.require_axis(vec![0], ctx.int("axis", 0), rank.max(1)) else { return };
    for a in 0..rank {
        same(ctx, (1, a), (2, a));
        if let (Some(i), Some(d)) = (at(ctx, 1, a), at(ctx, 0, a)) {
            if let (Some(n), Some(m)) = (i.dim.known(), d.dim.known()) {
                if a != axis && n > m {
                    too_many(ctx, vec![0, 1], 1, n, d.dim);
                }
            }
        }
    }
}

/// ScatterND: indices of rank q ≥ 1 whose last size k is at most the data's rank r; updates of shape
/// `indices.shape[:-1] + data.shape[k:]`.
pub(super) fn scatter_nd(ctx: &Ctx<'_, '_>) {
    let (Some(r), Some(q)) = (ctx.rank(0), ctx.rank(1)) else { return };
    if !ctx.require_rank(1, RankNeed::AtLeast(1)) {
        return;
    }
    let Some(k) = at(ctx, 1, q - 1).and_then(|a| a.dim.known()) else { return };
    if k > r as u64 {
        return too_many(ctx, vec![0, 1], 1, k, Dim::Known(r as u64));
    }
    let k = k as usize;
    if !ctx.require_rank(2, RankNeed::Exactly(q - 1 + r - k)) {
        return;
    }
    for a in 0..q - 1 {
        same(ctx, (1, a), (2, a));
    }
    for a in k..r {
        same(ctx, (0, a), (2, q - 1 + a - k));
    }
}

/// GatherND: data and indices of rank 1 at least; the indices' last size at most `rank - batch_dims`.
pub(super) fn gather_nd(ctx: &Ctx<'_, '_>) {
    if !ctx.require_rank(0, RankNeed::AtLeast(1)) || !ctx.require_rank(1, RankNeed::AtLeast(1)) {
        return;
    }
    let (Some(r), Some(q)) = (ctx.rank(0), ctx.rank(1)) else { return };
    let batch = usize::try_from(ctx.int("batch_dims", 0)).unwrap_or(0);
    if let Some(k) = at(ctx, 1, q - 1).and_then(|a| a.dim.known()) {
        if r >= batch && k > (r - batch) as u64 {
            too_many(ctx, vec![0, 1], 1, k, Dim::Known((r - batch) as u64));
        }
    }
}

/// OneHot: a depth of 1 at least (onnxruntime refuses 0 too), `values` of two elements.
pub(super) fn one_hot(ctx: &Ctx<'_, '_>) {
    if let Some([depth]) = ctx.ints(1).as_deref() {
        if *depth < 1 {
            let m = Malformed::Below { list: "depth", value: *depth, least: 1 };
            ctx.report(Contradiction::violated(Requirement::OperandSizes, vec![1], Detail::Malformed(m)));
        }
    }
    if ctx.rank(2) == Some(1) {
        if let Some(values) = at(ctx, 2, 0) {
            ctx.require_size(Requirement::OperandSizes, vec![2], values, Dim::Known(2), Whence::Required);
        }
    }
}

/// Range: start, limit and delta hold one element each (scalars by the specification; onnxruntime runs a
/// one-element vector, so only a known size other than 1 is reported); delta is not 0.
pub(super) fn range(ctx: &Ctx<'_, '_>) {
    for i in 0..3 {
        let dims = ctx.dims(i).unwrap_or_default();
        if let Some(axis) = dims.iter().position(|d| d.known().is_some_and(|n| n != 1)) {
            let at = At::new(i, axis, dims[axis].clone());
            ctx.require_size(Requirement::OperandSizes, vec![i], at, Dim::Known(1), Whence::Required);
        }
    }
    let zero = ctx.ints(2).is_some_and(|d| d == [0]) || ctx.floats(2).is_some_and(|d| d == [0.0]);
    if zero {
        ctx.report(Contradiction::violated(Requirement::OperandSizes, vec![2], Detail::Malformed(Malformed::ZeroStep)));
    }
}

/// Col2Im-18: columns `(N, C * prod(block_shape), L)`, `image_shape` and `block_shape` of one length, and `L` the
/// number of sliding blocks the image, pads, dilations and strides give.
pub(super) fn col2im(ctx: &mut Ctx<'_, '_>) {
    if !ctx.require_rank(0, RankNeed::Exactly(3)) {
        return;
    }
    let (Some(image), Some(block)) = (ctx.ints(1), ctx.ints(2)) else { return };
    if image.len() != block.len() {
        let m = Malformed::Length { list: "block_shape", len: block.len(), expected: image.len() };
        return ctx.report(Contradiction::violated(Requirement::ListLength, vec![1, 2], Detail::Malformed(m)));
    }
    let n = image.len();
    let list = |name: &str, default: i64, len: usize| {
        ctx.attrs.ints(name).filter(|v| v.len() == len).map_or(vec![default; len], <[i64]>::to_vec)
    };
    let (dilations, pads, strides) = (list("dilations", 1, n), list("pads", 0, 2 * n), list("strides", 1, n));
    if block.iter().chain(&dilations).chain(&strides).any(|&v| v < 1) || image.iter().chain(&pads).any(|&v| v < 0) {
        return;
    }
    // In i128 with checks: the attributes are the model's, any i64 (ONNX's own tests overflow them).
    let Some(product) = block.iter().try_fold(1i128, |p, &b| p.checked_mul(i128::from(b))) else { return };
    let Ok(product) = u64::try_from(product) else { return };
    let channels = super::dim_at(ctx.dims(0), 1);
    ctx.divide(Requirement::ExactDivision, vec![0, 2], 1, &channels, &Dim::Known(product));
    let mut blocks: i128 = 1;
    for i in 0..n {
        let (d, k, s) = (i128::from(dilations[i]), i128::from(block[i]), i128::from(strides[i]));
        let room = i128::from(image[i]) + i128::from(pads[i]) + i128::from(pads[i + n]) - (d * (k - 1) + 1);
        blocks = blocks.saturating_mul(if room < 0 { 0 } else { room / s + 1 });
    }
    let Ok(blocks) = u64::try_from(blocks) else { return };
    if let Some(l) = at(ctx, 0, 2) {
        ctx.require_size(Requirement::OperandSizes, vec![0, 1, 2], l, Dim::Known(blocks), Whence::Required);
    }
}

/// SplitToSequence: the axis within the rank; a scalar `split` of 1 at least, a 1-D one whose sizes fill the axis.
pub(super) fn split_to_sequence(ctx: &Ctx<'_, '_>) {
    let Some(rank) = ctx.rank(0) else { return };
    let Some(axis) = ctx.require_axis(vec![0], ctx.int("axis", 0), rank) else { return };
    let Some(split) = ctx.ints(1) else { return };
    match ctx.rank(1) {
        Some(0) if split.first().is_some_and(|&s| s < 1) => {
            let m = Malformed::Below { list: "split", value: split[0], least: 1 };
            ctx.report(Contradiction::violated(Requirement::SplitSizes, vec![1], Detail::Malformed(m)));
        }
        Some(1) if split.iter().all(|&s| s >= 0) => {
            let Some(total) = split.iter().try_fold(0u64, |t, &s| t.checked_add(s as u64)) else { return };
            if let Some(size) = at(ctx, 0, axis) {
                ctx.require_size(Requirement::SplitSizes, vec![0, 1], size, Dim::Known(total), Whence::SplitSizes);
            }
        }
        _ => {}
    }
}
