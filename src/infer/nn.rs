//! Shape inference for the nn op family: convolutions and pooling, matrix products, normalizations, recurrent
//! layers, Einsum, quantization, attention and losses.
//!
//! Sizes are computed as polynomials, so a stride-1 'same' convolution keeps `H` and a stride-2 one gives
//! `floor((H + pads - dilation*(k-1) - 1) / 2) + 1`. Wherever runtimes (or the specification's own texts) disagree on
//! a size, the size is left unknown.

use super::{c, dim_at, dim_of, output_dtype, At, Contradiction, Ctx, Detail, RankNeed, Requirement, Whence};
use crate::onnx::tensor::{ValueFacts, INT32};
use crate::rules;
use crate::sizes::shape::{Dim, Shape};

const FLOAT: i32 = crate::onnx::pb::DataType::Float as i32;
const UINT8: i32 = crate::onnx::pb::DataType::Uint8 as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        "MatMul" => {
            ctx.require_same_type(&[0, 1]);
            vec![ValueFacts::tensor(ctx.elem(0), matmul(ctx, 0, 1))]
        }
        "MatMulInteger" => vec![ValueFacts::tensor(Some(INT32), matmul(ctx, 0, 1))],
        "QLinearMatMul" => vec![ValueFacts::tensor(ctx.elem(7), matmul(ctx, 0, 3))],
        "RNN" => recurrent(ctx, 1, false),
        "GRU" => recurrent(ctx, 3, false),
        "LSTM" => recurrent(ctx, 4, true),
        "Einsum" => vec![ValueFacts::tensor(ctx.elem(0), super::einsum::einsum_shape(ctx).unwrap_or_default())],
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

/// A matrix product of inputs `a` and `b`, with what numpy's matmul requires of them (ONNX `MatMul`: "Matrix
/// product that behaves like numpy.matmul"): operands of rank 1 or more, equal inner sizes, batch dims that
/// broadcast.
fn matmul(ctx: &Ctx<'_, '_>, a: usize, b: usize) -> Shape {
    let shape = matmul_shape(ctx.dims(a), ctx.dims(b));
    let (Some(ad), Some(bd)) = (ctx.dims(a), ctx.dims(b)) else { return shape };
    if !ctx.require_rank(a, RankNeed::AtLeast(1)) || !ctx.require_rank(b, RankNeed::AtLeast(1)) {
        return shape;
    }
    let (ka, kb) = (ad.len() - 1, bd.len().saturating_sub(2));
    ctx.require_equal(Requirement::InnerSizes, At::new(a, ka, ad[ka].clone()), At::new(b, kb, bd[kb].clone()));
    let (a_batch, b_batch) = (&ad[..ad.len().saturating_sub(2)], &bd[..bd.len().saturating_sub(2)]);
    let outcome = rules::multidirectional(&[&Shape::ranked(a_batch.to_vec()), &Shape::ranked(b_batch.to_vec())]);
    if let rules::Verdict::Violation(rules::Violation {
        axis: Some(axis),
        kind: rules::ViolationKind::Mismatch { found, expected, against },
        input,
    }) = outcome.verdict
    {
        // The batch axis in each operand's own coordinates.
        let rank = a_batch.len().max(b_batch.len());
        let own = |i: usize| axis + if i == 0 { a_batch.len() } else { b_batch.len() } - rank;
        let (pos, other) = if input == 0 { (a, b) } else { (b, a) };
        let detail = Detail::Differ { a: At::new(pos, own(input), found), b: At::new(other, own(against), expected) };
        ctx.report(Contradiction::violated(Requirement::BatchDims, vec![a, b], detail));
    }
    shape
}

/// Gemm's requirements beyond the broadcast of C (which its rule judges): A and B matrices, and after `transA` and
/// `transB` the inner sizes equal (ONNX `Gemm`: "A' = transpose(A) if transA else A … A': (M, K), B': (K, N)").
pub fn gemm_requirements(ctx: &Ctx<'_, '_>) {
    if !ctx.require_rank(0, RankNeed::Exactly(2)) || !ctx.require_rank(1, RankNeed::Exactly(2)) {
        return;
    }
    let (Some(a), Some(b)) = (ctx.dims(0), ctx.dims(1)) else { return };
    let ka = if ctx.int("transA", 0) != 0 { 0 } else { 1 };
    let kb = if ctx.int("transB", 0) != 0 { 1 } else { 0 };
    ctx.require_equal(Requirement::InnerSizes, At::new(0, ka, a[ka].clone()), At::new(1, kb, b[kb].clone()));
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

/// RNN, GRU, LSTM: `Y` `[seq, dirs, batch, hidden]` (layout 0) or `[batch, seq, dirs, hidden]` (layout 1), `Y_h`
/// (and LSTM's `Y_c`) `[dirs, batch, hidden]` or `[batch, dirs, hidden]`.
/// ONNX `RNN`: "X … [seq_length, batch_size, input_size]", "W … [num_directions, hidden_size, input_size]" (GRU
/// `3*hidden_size`, LSTM `4*hidden_size`): W's input size is X's, its first dim the number of directions, its
/// second `gates` times the hidden size.
fn recurrent(ctx: &mut Ctx<'_, '_>, gates: i64, cell: bool) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let layout = ctx.int("layout", 0);
    recurrent_requirements(ctx, gates);
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
            (_, Some([_, gh, _])) => {
                let gh = gh.clone();
                ctx.divide(Requirement::ExactDivision, vec![1], 1, &gh, &Dim::Known(gates as u64))
            }
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

fn recurrent_requirements(ctx: &Ctx<'_, '_>, gates: i64) {
    if !ctx.require_rank(0, RankNeed::Exactly(3)) || !ctx.require_rank(1, RankNeed::Exactly(3)) {
        return;
    }
    let (Some(x), Some(w)) = (ctx.dims(0), ctx.dims(1)) else { return };
    ctx.require_equal(Requirement::Channels, At::new(1, 2, w[2].clone()), At::new(0, 2, x[2].clone()));
    let dirs = match ctx.attrs.string("direction") {
        None | Some(b"forward" | b"reverse") => Some(1),
        Some(b"bidirectional") => Some(2),
        Some(_) => None,
    };
    if let Some(dirs) = dirs {
        ctx.require_size(
            Requirement::Channels,
            vec![1],
            At::new(1, 0, w[0].clone()),
            Dim::Known(dirs),
            Whence::Required,
        );
    }
    if let Some(h) = ctx.attrs.int("hidden_size").filter(|&h| h > 0) {
        let gh = Dim::Known((h * gates) as u64);
        ctx.require_size(Requirement::Channels, vec![1], At::new(1, 1, w[1].clone()), gh, Whence::Required);
    }
}

/// Attention (opset 23): 4-D `[B, heads, seq, head_size]` or 3-D `[B, seq, heads * head_size]` inputs. Outputs
/// Y, present_key, present_value, qk_matmul_output.
fn attention(ctx: &mut Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let heads = |name: &str| ctx.attrs.int(name).filter(|&h| h > 0);
    let (q_heads, kv_heads) = (heads("q_num_heads"), heads("kv_num_heads"));
    // 3-D inputs hold the heads side by side: their hidden sizes divide into them exactly.
    let mut per_head = |input: usize, h: Option<i64>| match (ctx.dims(input).map(<[Dim]>::to_vec), h) {
        (Some(d), Some(h)) if d.len() == 3 => {
            ctx.divide(Requirement::ExactDivision, vec![input], 2, &d[2], &Dim::Known(h as u64))
        }
        _ => Dim::Unknown,
    };
    let (q_head, v_head) = (per_head(0, q_heads), per_head(2, kv_heads));
    // The key's heads have the value's number: only whether its size divides into them matters.
    per_head(1, kv_heads);
    let (q, k, v) = (ctx.dims(0), ctx.dims(1), ctx.dims(2));
    let batch = dim_at(q, 0);
    // Layout-independent sizes.
    let (q_heads_dim, q_seq, kv_seq, head, v_head, rank) = match q.map(<[Dim]>::len) {
        Some(4) => (dim_at(q, 1), dim_at(q, 2), dim_at(k, 2), dim_at(q, 3), dim_at(v, 3), 4),
        Some(3) => {
            (q_heads.map_or(Dim::Unknown, |h| Dim::Known(h as u64)), dim_at(q, 1), dim_at(k, 1), q_head, v_head, 3)
        }
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
    check_loss(ctx);
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

/// The loss ops' inputs: scores `(N, C, d1 … dk)` and labels `(N, d1 … dk)` (ONNX `NegativeLogLikelihoodLoss`,
/// `SoftmaxCrossEntropyLoss`). The weights' `(C)` is not checked: onnxruntime reads them only at the labels and runs
/// a model whose weights are longer.
fn check_loss(ctx: &Ctx<'_, '_>) {
    let at = |i: usize, axis: usize| ctx.dims(i).and_then(|d| d.get(axis)).map(|d| At::new(i, axis, d.clone()));
    let Some(rank) = ctx.rank(0) else { return };
    if !ctx.require_rank(0, RankNeed::AtLeast(2)) || !ctx.require_rank(1, RankNeed::Exactly(rank - 1)) {
        return;
    }
    for axis in 0..rank - 1 {
        let scores_axis = if axis == 0 { 0 } else { axis + 1 };
        if let (Some(a), Some(b)) = (at(0, scores_axis), at(1, axis)) {
            ctx.require_equal(Requirement::OperandSizes, a, b);
        }
    }
}

#[cfg(test)]
#[path = "nn_tests.rs"]
mod tests;
