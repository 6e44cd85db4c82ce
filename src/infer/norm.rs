//! Normalizations: BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization and
//! RMSNormalization, each with what its specification requires of its parameters' shapes (one per channel, or
//! broadcastable to the normalized shape) and types.

use super::{dim_at, normalize_axis, At, Ctx, RankNeed, Requirement, Whence};
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};

const FLOAT: i32 = crate::onnx::pb::DataType::Float as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let same = |ctx: &Ctx<'_, '_>| ValueFacts::tensor(ctx.elem(0), ctx.shape(0));
    Some(match ctx.op {
        "BatchNormalization" => batch_norm(ctx),
        "InstanceNormalization" => {
            ctx.require_same_type(&[0, 1, 2]);
            per_channel(ctx, &[1, 2]);
            vec![same(ctx)]
        }
        "GroupNormalization" => {
            ctx.require_same_type(&[0, 1, 2]);
            group_norm(ctx);
            vec![same(ctx)]
        }
        "RMSNormalization" => {
            broadcastable(ctx, &[1]);
            vec![same(ctx)]
        }
        "LayerNormalization" => layer_norm(ctx),
        _ => return None,
    })
}

/// Inputs of one size each, X's channels (its axis 1).
fn per_channel(ctx: &Ctx<'_, '_>, inputs: &[usize]) {
    // The parameters' rank is checked even where the input's channels are unknown.
    let channels = ctx.dims(0).and_then(|d| d.get(1).cloned());
    for &i in inputs.iter().filter(|&&i| ctx.has_input(i)) {
        if !ctx.require_rank(i, RankNeed::Exactly(1)) {
            return;
        }
        if let (Some(d), Some(channels)) = (ctx.dims(i), &channels) {
            ctx.require_equal(
                Requirement::ParameterShape,
                At::new(i, 0, d[0].clone()),
                At::new(0, 1, channels.clone()),
            );
        }
        if ctx.contradicted() {
            return;
        }
    }
}

/// Y, then the statistics: `running_mean, running_var` from opset 14 (training mode), `mean, var, saved_mean,
/// saved_var` before. Each has the shape of the `mean` input: `[C]`, or per activation with `spatial=0`.
/// ONNX `BatchNormalization`: "scale … of shape (C)", and so B, mean and var (from opset 9; before, `spatial=0`
/// gives them other shapes).
fn batch_norm(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    // One type for all before opset 15; from it scale and B share one, mean and var another.
    if ctx.opset < 15 {
        ctx.require_same_type(&[0, 1, 2, 3, 4]);
    } else {
        ctx.require_same_type(&[1, 2]);
        ctx.require_same_type(&[3, 4]);
    }
    if ctx.opset >= 9 {
        per_channel(ctx, &[1, 2, 3, 4]);
    }
    let y = ValueFacts::tensor(ctx.elem(0), ctx.shape(0));
    let mean = ctx.shape(3);
    let stat_shape = if mean.rank().is_some() {
        mean
    } else if ctx.opset >= 9 || ctx.int("spatial", 1) != 0 {
        Shape::ranked(vec![dim_at(ctx.dims(0), 1)])
    } else {
        Shape::unranked()
    };
    let elem = if ctx.opset >= 15 { ctx.elem(3) } else { ctx.elem(0) };
    let stat = ValueFacts::tensor(elem, stat_shape);
    vec![y, stat.clone(), stat.clone(), stat.clone(), stat]
}

/// Scale and bias broadcast to X (onnxruntime: "Scale and (optional) bias must match X.shape[axis:] or be
/// NumPy-broadcastable to it"): right-aligned, each of their dims 1 or X's, and no more dims than X.
fn broadcastable(ctx: &Ctx<'_, '_>, inputs: &[usize]) {
    let Some(x) = ctx.dims(0) else { return };
    for &i in inputs.iter().filter(|&&i| ctx.has_input(i)) {
        let Some(p) = ctx.dims(i) else { continue };
        if p.len() > x.len() {
            ctx.require_rank(i, RankNeed::Of(0));
            return;
        }
        for (k, d) in p.iter().enumerate().filter(|(_, d)| !d.is_one()) {
            let xa = x.len() - p.len() + k;
            ctx.require_equal(Requirement::ParameterShape, At::new(i, k, d.clone()), At::new(0, xa, x[xa].clone()));
            if ctx.contradicted() {
                return;
            }
        }
    }
}

/// Y, then Mean and InvStdDev: X's shape with every axis from `axis` on reduced to 1, of the `stash_type` type.
fn layer_norm(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    ctx.require_same_type(&[0, 1, 2]);
    let y = ValueFacts::tensor(ctx.elem(0), ctx.shape(0));
    let axis = ctx.int("axis", -1);
    if let Some(r) = ctx.rank(0) {
        if ctx.require_axis(vec![0], axis, r).is_some() {
            broadcastable(ctx, &[1, 2]);
        }
    }
    let stat_shape = statistic_shape(ctx, axis);
    let elem = match ctx.attrs.int("stash_type") {
        None => Some(FLOAT),
        Some(_) => super::elem_attr(ctx, "stash_type"),
    };
    let stat = ValueFacts::tensor(elem, stat_shape);
    vec![y, stat.clone(), stat]
}

/// GroupNormalization: the channels divide into `num_groups`; scale and bias have one entry per group (opset 18)
/// or per channel (opset 21).
fn group_norm(ctx: &mut Ctx<'_, '_>) {
    let (Some(channels), Some(groups)) = (ctx.dims(0).and_then(|d| d.get(1).cloned()), ctx.attrs.int("num_groups"))
    else {
        return;
    };
    let Ok(groups) = u64::try_from(groups) else { return };
    if groups == 0 {
        return;
    }
    ctx.divide(Requirement::ParameterShape, vec![0], 1, &channels, &Dim::Known(groups));
    let each = if ctx.opset >= 21 { channels } else { Dim::Known(groups) };
    for i in [1, 2].into_iter().filter(|&i| ctx.has_input(i)) {
        if !ctx.require_rank(i, RankNeed::Exactly(1)) {
            return;
        }
        if let Some(d) = ctx.dims(i) {
            let at = At::new(i, 0, d[0].clone());
            ctx.require_size(Requirement::ParameterShape, vec![0, i], at, each.clone(), Whence::Required);
        }
    }
}
/// A normalization's per-row statistic's shape (mean, inverse standard deviation): X's shape with the axes from
/// `axis` on reduced to 1.
pub(crate) fn statistic_shape(ctx: &Ctx<'_, '_>, axis: i64) -> Shape {
    ctx.dims(0)
        .and_then(|d| {
            let a = normalize_axis(axis, d.len())?;
            Some(Shape::ranked(
                d.iter().enumerate().map(|(i, d)| if i < a { d.clone() } else { Dim::Known(1) }).collect(),
            ))
        })
        .unwrap_or_default()
}
