//! Shape inference for the nn op family: convolutions and pooling, matrix products, normalizations, recurrent
//! layers, Einsum, quantization, attention and losses.
//!
//! Sizes are computed as polynomials, so a stride-1 'same' convolution keeps `H` and a stride-2 one gives
//! `floor((H + pads - dilation*(k-1) - 1) / 2) + 1`. Wherever runtimes (or the specification's own texts) disagree on
//! a size, the size is left unknown.

use std::collections::BTreeMap;

use super::window::{conv, conv_transpose_shape, max_unpool_shape, pool_shape, roi_shape};
use super::{c, dim_at, dim_of, normalize_axis, output_dtype, Ctx};
use crate::rules;
use crate::shape::{Dim, Shape};
use crate::tensor::{ValueFacts, INT32, INT64};

const FLOAT: i32 = crate::pb::DataType::Float as i32;
const UINT8: i32 = crate::pb::DataType::Uint8 as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let same = |ctx: &Ctx<'_, '_>| ValueFacts::tensor(ctx.elem(0), ctx.shape(0));
    Some(match ctx.op {
        "Conv" | "DeformConv" => vec![conv(ctx, 0, 1, ctx.elem(0))],
        "ConvInteger" => vec![conv(ctx, 0, 1, Some(INT32))],
        "QLinearConv" => vec![conv(ctx, 0, 3, ctx.elem(7))],
        "ConvTranspose" => {
            vec![ValueFacts::tensor(ctx.elem(0), conv_transpose_shape(ctx).unwrap_or_default())]
        }
        "MaxPool" => {
            let y = ValueFacts::tensor(ctx.elem(0), pool_shape(ctx).unwrap_or_default());
            let indices = ValueFacts::tensor(Some(INT64), y.shape.clone());
            vec![y, indices]
        }
        "AveragePool" | "LpPool" => vec![ValueFacts::tensor(ctx.elem(0), pool_shape(ctx).unwrap_or_default())],
        "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool" => {
            let shape = ctx.dims(0).map_or_else(Shape::unranked, |d| {
                Shape::ranked(
                    d.iter().enumerate().map(|(i, d)| if i < 2 { d.clone() } else { Dim::Known(1) }).collect(),
                )
            });
            vec![ValueFacts::tensor(ctx.elem(0), shape)]
        }
        "MaxUnpool" => vec![ValueFacts::tensor(ctx.elem(0), max_unpool_shape(ctx).unwrap_or_default())],
        "MaxRoiPool" | "RoiAlign" => vec![ValueFacts::tensor(ctx.elem(0), roi_shape(ctx))],
        "MatMul" => vec![ValueFacts::tensor(ctx.elem(0), matmul_shape(ctx.dims(0), ctx.dims(1)))],
        "MatMulInteger" => vec![ValueFacts::tensor(Some(INT32), matmul_shape(ctx.dims(0), ctx.dims(1)))],
        "QLinearMatMul" => vec![ValueFacts::tensor(ctx.elem(7), matmul_shape(ctx.dims(0), ctx.dims(3)))],
        "BatchNormalization" => batch_norm(ctx),
        "InstanceNormalization" | "GroupNormalization" | "RMSNormalization" => vec![same(ctx)],
        "LayerNormalization" => layer_norm(ctx),
        "RNN" => recurrent(ctx, 1, false),
        "GRU" => recurrent(ctx, 3, false),
        "LSTM" => recurrent(ctx, 4, true),
        "Einsum" => vec![ValueFacts::tensor(ctx.elem(0), einsum_shape(ctx).unwrap_or_default())],
        "QuantizeLinear" => {
            let elem = match output_dtype(ctx) {
                Some(t) => Some(t),
                // The zero point's type; uint8 without one (an empty name is none). One that is named but unresolved
                // says nothing.
                None if ctx.has_input(2) => ctx.elem(2),
                None => Some(UINT8),
            };
            vec![ValueFacts::tensor(elem, ctx.shape(0))]
        }
        "DequantizeLinear" => {
            let elem = match output_dtype(ctx) {
                Some(t) => Some(t),
                None if ctx.opset >= 19 => ctx.elem(1),
                None => Some(FLOAT),
            };
            vec![ValueFacts::tensor(elem, ctx.shape(0))]
        }
        "DynamicQuantizeLinear" => vec![
            ValueFacts::tensor(Some(UINT8), ctx.shape(0)),
            ValueFacts::tensor(Some(FLOAT), Shape::scalar()),
            ValueFacts::tensor(Some(UINT8), Shape::scalar()),
        ],
        "Attention" => attention(ctx),
        "NegativeLogLikelihoodLoss" | "SoftmaxCrossEntropyLoss" => loss(ctx),
        _ => return None,
    })
}

/// numpy matmul: batch dims broadcast, `[…, n, k] × […, k, m] → […, n, m]`; a 1-D operand gains a dim (prepended
/// for A, appended for B) that the result then drops.
pub fn matmul_shape(a: Option<&[Dim]>, b: Option<&[Dim]>) -> Shape {
    let (Some(a), Some(b)) = (a, b) else { return Shape::unranked() };
    if a.is_empty() || b.is_empty() {
        return Shape::unranked();
    }
    let (a_batch, n) = match a.len() {
        1 => (&a[..0], None),
        l => (&a[..l - 2], Some(a[l - 2].clone())),
    };
    let (b_batch, m) = match b.len() {
        1 => (&b[..0], None),
        l => (&b[..l - 2], Some(b[l - 1].clone())),
    };
    let batch = rules::multidirectional(&[&Shape::ranked(a_batch.to_vec()), &Shape::ranked(b_batch.to_vec())]);
    let mut dims = match batch.output.0 {
        Some(d) => d,
        // Batch dims that cannot broadcast: the model fails there; the rank is still known.
        None => vec![Dim::Unknown; a_batch.len().max(b_batch.len())],
    };
    dims.extend(n);
    dims.extend(m);
    Shape::ranked(dims)
}

/// Y, then the statistics: `running_mean, running_var` from opset 14 (training mode), `mean, var, saved_mean,
/// saved_var` before. Each has the shape of the `mean` input: `[C]`, or per activation with `spatial=0`.
fn batch_norm(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
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

/// Y, then Mean and InvStdDev: X's shape with every axis from `axis` on reduced to 1, of the `stash_type` type.
fn layer_norm(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let y = ValueFacts::tensor(ctx.elem(0), ctx.shape(0));
    let axis = ctx.int("axis", -1);
    let stat_shape = ctx
        .dims(0)
        .and_then(|d| {
            let a = normalize_axis(axis, d.len())?;
            Some(Shape::ranked(
                d.iter().enumerate().map(|(i, d)| if i < a { d.clone() } else { Dim::Known(1) }).collect(),
            ))
        })
        .unwrap_or_default();
    let elem = i32::try_from(ctx.int("stash_type", 1)).ok();
    let stat = ValueFacts::tensor(elem, stat_shape);
    vec![y, stat.clone(), stat]
}

/// RNN, GRU, LSTM: `Y` `[seq, dirs, batch, hidden]` (layout 0) or `[batch, seq, dirs, hidden]` (layout 1), `Y_h`
/// (and LSTM's `Y_c`) `[dirs, batch, hidden]` or `[batch, dirs, hidden]`.
fn recurrent(ctx: &Ctx<'_, '_>, gates: i64, cell: bool) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let layout = ctx.int("layout", 0);
    let (seq, batch) = match ctx.dims(0) {
        Some([a, b, _]) if layout == 0 => (a.clone(), b.clone()),
        Some([a, b, _]) if layout == 1 => (b.clone(), a.clone()),
        _ => (Dim::Unknown, Dim::Unknown),
    };
    let dirs = match ctx.attrs.string("direction") {
        None | Some(b"forward" | b"reverse") => Dim::Known(1),
        Some(b"bidirectional") => Dim::Known(2),
        Some(_) => dim_at(ctx.dims(1), 0),
    };
    let hidden = match ctx.attrs.int("hidden_size") {
        Some(h) if h > 0 => Dim::Known(h as u64),
        _ => match (ctx.dims(2), ctx.dims(1)) {
            (Some([_, _, h]), _) => h.clone(),
            (_, Some([_, gh, _])) => dim_of(gh.to_poly().and_then(|p| p.div_floor(gates))),
            _ => Dim::Unknown,
        },
    };
    let (y, state) = match layout {
        0 => (
            Shape::ranked(vec![seq, dirs.clone(), batch.clone(), hidden.clone()]),
            Shape::ranked(vec![dirs, batch, hidden]),
        ),
        1 => (
            Shape::ranked(vec![batch.clone(), seq, dirs.clone(), hidden.clone()]),
            Shape::ranked(vec![batch, dirs, hidden]),
        ),
        _ => (Shape::unranked(), Shape::unranked()),
    };
    let state = ValueFacts::tensor(elem, state);
    let mut out = vec![ValueFacts::tensor(elem, y), state.clone()];
    if cell {
        out.push(state);
    }
    out
}

/// One operand (or the result) of an Einsum equation: labels before and after an optional ellipsis.
struct Term {
    before: Vec<u8>,
    ellipsis: bool,
    after: Vec<u8>,
}

impl Term {
    fn parse(text: &[u8]) -> Option<Term> {
        let (before, ellipsis, after) = match text.windows(3).position(|w| w == b"...") {
            Some(p) => (&text[..p], true, &text[p + 3..]),
            None => (text, false, &text[..0]),
        };
        let labels = |t: &[u8]| t.iter().all(u8::is_ascii_alphabetic).then(|| t.to_vec());
        Some(Term { before: labels(before)?, ellipsis, after: labels(after)? })
    }

    fn labels(&self) -> impl Iterator<Item = &u8> {
        self.before.iter().chain(&self.after)
    }
}

/// The size a label takes: every occurrence must agree (or, where a runtime broadcasts labels, be 1).
fn label_dim(dims: &[Dim]) -> Dim {
    let big: Vec<&Dim> = dims.iter().filter(|d| !d.is_one()).collect();
    if big.is_empty() {
        return if dims.is_empty() { Dim::Unknown } else { Dim::Known(1) };
    }
    let known: Vec<u64> = big.iter().filter_map(|d| d.known()).collect();
    if let Some(&k) = known.first() {
        return if known.iter().all(|&x| x == k) { Dim::Known(k) } else { Dim::Unknown };
    }
    if big.iter().all(|d| d.provably_eq(big[0])) {
        big[0].clone()
    } else {
        Dim::Unknown
    }
}

fn einsum_shape(ctx: &Ctx<'_, '_>) -> Option<Shape> {
    let equation: Vec<u8> =
        ctx.attrs.string("equation")?.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    let (lhs, rhs) = match equation.windows(2).position(|w| w == b"->") {
        Some(p) => (&equation[..p], Some(&equation[p + 2..])),
        None => (&equation[..], None),
    };
    let terms: Vec<Term> = lhs.split(|&b| b == b',').map(Term::parse).collect::<Option<_>>()?;
    if terms.len() != ctx.inputs.len() {
        return None;
    }
    let mut labels: BTreeMap<u8, Vec<Dim>> = BTreeMap::new();
    let mut counts: BTreeMap<u8, usize> = BTreeMap::new();
    // The ellipsis dims of each operand that has one; `None` when some operand's rank is unknown.
    let mut ellipses: Option<Vec<Shape>> = Some(Vec::new());
    let mut any_ellipsis = false;
    for (i, term) in terms.iter().enumerate() {
        for &l in term.labels() {
            *counts.entry(l).or_default() += 1;
            labels.entry(l).or_default();
        }
        any_ellipsis |= term.ellipsis;
        let Some(dims) = ctx.dims(i) else {
            if term.ellipsis {
                ellipses = None;
            }
            continue;
        };
        let named = term.before.len() + term.after.len();
        let covered = if term.ellipsis { dims.len().checked_sub(named)? } else { 0 };
        if !term.ellipsis && dims.len() != named {
            return None;
        }
        let tail = term.before.len() + covered;
        for (k, &l) in term.before.iter().enumerate() {
            labels.entry(l).or_default().push(dims[k].clone());
        }
        for (k, &l) in term.after.iter().enumerate() {
            labels.entry(l).or_default().push(dims[tail + k].clone());
        }
        if term.ellipsis {
            if let Some(e) = ellipses.as_mut() {
                e.push(Shape::ranked(dims[term.before.len()..tail].to_vec()));
            }
        }
    }
    let ellipsis_dims = ellipses.map(|shapes| {
        let refs: Vec<&Shape> = shapes.iter().collect();
        let rank = shapes.iter().filter_map(Shape::rank).max().unwrap_or(0);
        rules::multidirectional(&refs).output.0.unwrap_or_else(|| vec![Dim::Unknown; rank])
    });
    let output = match rhs {
        Some(rhs) => Term::parse(rhs)?,
        // Implicit output: the ellipsis dims, then the labels used once, in alphabetical (byte) order.
        None => Term {
            before: Vec::new(),
            ellipsis: any_ellipsis,
            after: counts.iter().filter(|(_, &n)| n == 1).map(|(&l, _)| l).collect(),
        },
    };
    // An output label must appear among the operands.
    let resolve = |ls: &[u8]| ls.iter().map(|l| labels.get(l).map(|d| label_dim(d))).collect::<Option<Vec<Dim>>>();
    let mut dims = resolve(&output.before)?;
    if output.ellipsis {
        dims.extend(ellipsis_dims?);
    }
    dims.extend(resolve(&output.after)?);
    Some(Shape::ranked(dims))
}

/// Attention (opset 23): 4-D `[B, heads, seq, head_size]` or 3-D `[B, seq, heads * head_size]` inputs. Outputs
/// Y, present_key, present_value, qk_matmul_output.
fn attention(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let (q, k, v) = (ctx.dims(0), ctx.dims(1), ctx.dims(2));
    let heads = |name: &str| ctx.attrs.int(name).filter(|&h| h > 0);
    let (q_heads, kv_heads) = (heads("q_num_heads"), heads("kv_num_heads"));
    let per_head = |d: Dim, h: Option<i64>| dim_of(d.to_poly().zip(h).and_then(|(p, h)| p.div_floor(h)));
    let batch = dim_at(q, 0);
    // Layout-independent sizes.
    let (q_heads_dim, q_seq, kv_seq, head, v_head, rank) = match q.map(<[Dim]>::len) {
        Some(4) => (dim_at(q, 1), dim_at(q, 2), dim_at(k, 2), dim_at(q, 3), dim_at(v, 3), 4),
        Some(3) => (
            q_heads.map_or(Dim::Unknown, |h| Dim::Known(h as u64)),
            dim_at(q, 1),
            dim_at(k, 1),
            per_head(dim_at(q, 2), q_heads),
            per_head(dim_at(v, 2), kv_heads),
            3,
        ),
        _ => return vec![ValueFacts::tensor(elem, Shape::unranked())],
    };
    let kv_heads_dim = match rank {
        4 => dim_at(k, 1),
        _ => kv_heads.map_or(Dim::Unknown, |h| Dim::Known(h as u64)),
    };
    // Total key length: past + new keys.
    let total = if ctx.inputs.len() > 4 {
        match ctx.dims(4) {
            Some([_, _, past, _]) => dim_of(past.to_poly().zip(kv_seq.to_poly()).and_then(|(p, s)| p.add(&s))),
            _ => Dim::Unknown,
        }
    } else {
        kv_seq.clone()
    };
    let y = if rank == 4 {
        Shape::ranked(vec![batch.clone(), q_heads_dim.clone(), q_seq.clone(), v_head.clone()])
    } else {
        let hidden = v_head.to_poly().zip(q_heads).and_then(|(p, h)| p.mul(&c(h)));
        Shape::ranked(vec![batch.clone(), q_seq.clone(), dim_of(hidden)])
    };
    let present = |size: Dim| {
        ValueFacts::tensor(elem, Shape::ranked(vec![batch.clone(), kv_heads_dim.clone(), total.clone(), size]))
    };
    vec![
        ValueFacts::tensor(elem, y),
        present(head),
        present(v_head),
        ValueFacts::tensor(elem, Shape::ranked(vec![batch.clone(), q_heads_dim, q_seq, total.clone()])),
    ]
}

/// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: `[N, d…]` without reduction, else a scalar; the
/// latter's log_prob has the scores' shape.
fn loss(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let shape = match ctx.attrs.string("reduction") {
        None | Some(b"mean" | b"sum") => Shape::scalar(),
        Some(b"none") => match (ctx.dims(0), ctx.dims(1)) {
            (_, Some(t)) => Shape::ranked(t.to_vec()),
            (Some(x), None) if x.len() >= 2 => {
                Shape::ranked(x.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, d)| d.clone()).collect())
            }
            _ => Shape::unranked(),
        },
        Some(_) => Shape::unranked(),
    };
    vec![ValueFacts::tensor(elem, shape), ValueFacts::tensor(elem, ctx.shape(0))]
}

#[cfg(test)]
#[path = "nn_tests.rs"]
mod tests;
