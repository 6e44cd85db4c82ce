//! The attention family of `com.microsoft`: what the transformers optimizer fuses self- and cross-attention into
//! (`Attention`, `MultiHeadAttention`, `PackedAttention`), its quantized form (`QAttention`), the decoders' cached
//! forms (`DecoderMaskedMultiHeadAttention`, `GroupQueryAttention` of onnxruntime-genai's builder) and
//! `RotaryEmbedding`, with their present key/value outputs over a symbolic total sequence length. Each follows its
//! section of onnxruntime's `docs/ContribOperators.md`.

use super::Ctx;
use crate::infer::dim_at;
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        "Attention" | "QAttention" => attention(ctx),
        "MultiHeadAttention" => multi_head(ctx),
        "GroupQueryAttention" => group_query(ctx),
        // "com.microsoft.PackedAttention": input (token_count, input_hidden) gives (token_count, v_hidden).
        "PackedAttention" => {
            let v = v_hidden(ctx, 1, 2, 3);
            vec![ValueFacts::tensor(ctx.elem(0), Shape::ranked(vec![dim_at(ctx.dims(0), 0), v]))]
        }
        "DecoderMaskedMultiHeadAttention" => decoder_masked(ctx),
        // "com.microsoft.RotaryEmbedding": the output is like the input, (B, S, D) or (B, N, S, H).
        "RotaryEmbedding" => vec![ValueFacts::tensor(ctx.elem(0), ctx.shape(0))],
        _ => return None,
    })
}

fn div(d: &Dim, n: i64) -> Dim {
    d.to_poly().and_then(|p| p.div_poly(&Poly::constant(n))).map_or(Dim::Unknown, Dim::from_poly)
}

fn mul(a: &Dim, b: &Dim) -> Dim {
    a.to_poly().zip(b.to_poly()).and_then(|(a, b)| a.mul(&b)).map_or(Dim::Unknown, Dim::from_poly)
}

fn add(a: &Dim, b: &Dim) -> Dim {
    a.to_poly().zip(b.to_poly()).and_then(|(a, b)| a.add(&b)).map_or(Dim::Unknown, Dim::from_poly)
}

fn heads(ctx: &Ctx<'_, '_>, name: &str) -> Option<i64> {
    ctx.attrs.int(name).filter(|&n| n > 0)
}

/// The hidden size of V from `qkv_hidden_sizes`, else a third of the weights' columns (or of the bias).
fn v_hidden(ctx: &Ctx<'_, '_>, weights: usize, bias: usize, _: usize) -> Dim {
    if let Some(&[_, _, v]) = ctx.attrs.ints("qkv_hidden_sizes") {
        return u64::try_from(v).map_or(Dim::Unknown, Dim::Known);
    }
    let tripled = match ctx.dims(bias) {
        Some([b]) => b.clone(),
        _ => dim_at(ctx.dims(weights), 1),
    };
    div(&tripled, 3)
}

/// "com.microsoft.Attention" and "com.microsoft.QAttention": input (B, S, input_hidden) gives output (B, S,
/// v_hidden) and present (2, B, N, past + S, head_size) after a past (2, B, N, past, head_size); with
/// `past_present_share_buffer` the present is the past buffer itself. QAttention's output is float.
fn attention(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let quantized = ctx.op == "QAttention";
    let (bias, past) = if quantized { (2, 8) } else { (2, 4) };
    let elem = if quantized { ctx.elem(3) } else { ctx.elem(0) };
    let out = ctx
        .dims(0)
        .filter(|d| d.len() == 3)
        .map_or_else(Shape::unranked, |d| Shape::ranked(vec![d[0].clone(), d[1].clone(), v_hidden(ctx, 1, bias, 0)]));
    let present = match ctx.dims(past) {
        Some(p) if p.len() == 5 && ctx.int("past_present_share_buffer", 0) != 0 => Shape::ranked(p.to_vec()),
        Some(p) if p.len() == 5 => {
            let mut d = p.to_vec();
            d[3] = add(&p[3], &dim_at(ctx.dims(0), 1));
            Shape::ranked(d)
        }
        _ if ctx.has_input(past) => Shape::unranked(),
        _ => {
            let hidden = match ctx.attrs.ints("qkv_hidden_sizes") {
                Some(&[q, _, _]) => u64::try_from(q).map_or(Dim::Unknown, Dim::Known),
                _ => div(&dim_at(ctx.dims(1), 1), 3),
            };
            match (ctx.dims(0), heads(ctx, "num_heads")) {
                (Some([b, s, _]), Some(n)) => {
                    Shape::ranked(vec![Dim::Known(2), b.clone(), Dim::Known(n as u64), s.clone(), div(&hidden, n)])
                }
                _ => Shape::unranked(),
            }
        }
    };
    vec![ValueFacts::tensor(elem, out), ValueFacts::tensor(elem, present)]
}

/// "com.microsoft.MultiHeadAttention": query (B, S, D), or packed QKV (B, S, N, 3, H); key (B, L, D), (B, N, L, H)
/// or packed KV (B, L, N, 2, H); value (B, L, D_v) or (B, N, L, H_v). Output (B, S, D_v); present_key and
/// present_value (B, N, past + L, H) after past_key and past_value (B, N, past, H).
fn multi_head(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let n = heads(ctx, "num_heads").map_or(Dim::Unknown, |n| Dim::Known(n as u64));
    let unknown = || vec![ValueFacts::tensor(elem, Shape::unranked()); 3];
    let Some(q) = ctx.dims(0) else { return unknown() };
    let (b, s) = (dim_at(Some(q), 0), dim_at(Some(q), 1));
    let (kv_len, head, head_v, out_hidden) = match (q.len(), ctx.dims(1), ctx.dims(2)) {
        (5, _, _) => (s.clone(), q[4].clone(), q[4].clone(), mul(&q[2], &q[4])),
        (3, Some(k), _) if k.len() == 5 => (k[1].clone(), k[4].clone(), k[4].clone(), q[2].clone()),
        (3, Some(k), Some(v)) if k.len() == 3 && v.len() == 3 => {
            (k[1].clone(), div(&q[2], n_of(&n)), div(&v[2], n_of(&n)), v[2].clone())
        }
        (3, Some(k), Some(v)) if k.len() == 4 && v.len() == 4 => {
            (k[2].clone(), k[3].clone(), v[3].clone(), mul(&v[1], &v[3]))
        }
        _ => return unknown(),
    };
    // A key given as (B, N, L, H) is the cache itself (cross-attention): no past is added to it.
    let total = match ctx.dims(6) {
        Some(p) if p.len() == 4 && ctx.dims(1).is_some_and(|k| k.len() != 4) => add(&p[2], &kv_len),
        _ => kv_len,
    };
    let out = ValueFacts::tensor(elem, Shape::ranked(vec![b.clone(), s, out_hidden]));
    let pk = ValueFacts::tensor(elem, Shape::ranked(vec![b.clone(), n.clone(), total.clone(), head]));
    let pv = ValueFacts::tensor(elem, Shape::ranked(vec![b, n, total, head_v]));
    vec![out, pk, pv]
}

fn n_of(n: &Dim) -> i64 {
    n.known().and_then(|k| i64::try_from(k).ok()).unwrap_or(0)
}

/// "com.microsoft.GroupQueryAttention": query (B, S, D), or packed (B, S, (N + 2 kv_N) H) without key and value;
/// output (B, S, N H); present_key and present_value (B, kv_N, T, H) with T the larger of past_key's length and
/// the `total_sequence_length` input (the cache grows to the total length; a shared buffer keeps its length).
fn group_query(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let (n, kv_n) = (heads(ctx, "num_heads"), heads(ctx, "kv_num_heads"));
    let unknown = || vec![ValueFacts::tensor(elem, Shape::unranked()); 3];
    ctx.require_rank(0, crate::infer::RankNeed::Exactly(3));
    let (Some([b, s, d]), Some(n), Some(kv_n)) = (ctx.dims(0), n, kv_n) else { return unknown() };
    super::gqa_require::require(ctx, &[b.clone(), s.clone(), d.clone()], n, kv_n);
    let head = if ctx.has_input(1) { div(d, n) } else { div(d, n + 2 * kv_n) };
    let out = ValueFacts::tensor(elem, Shape::ranked(vec![b.clone(), s.clone(), mul(&head, &Dim::Known(n as u64))]));
    let total = ctx.value(6).and_then(|v| v.first().cloned().flatten());
    let past = ctx.dims(3).filter(|p| p.len() == 4).map(|p| p[2].clone());
    let length = match (past.as_ref().and_then(Dim::to_poly), total) {
        (Some(p), Some(t)) if p == t => Dim::from_poly(p),
        (Some(p), Some(t)) => Dim::from_poly(p.max_of(&t)),
        (None, Some(t)) if !ctx.has_input(3) => Dim::from_poly(t),
        _ => Dim::Unknown,
    };
    let present = ValueFacts::tensor(elem, Shape::ranked(vec![b.clone(), Dim::Known(kv_n as u64), length, head]));
    vec![out, present.clone(), present]
}

/// "com.microsoft.DecoderMaskedMultiHeadAttention": query (B, 1, D); output (B, 1, D_v); present_key and
/// present_value share the past buffers (B, N, max_sequence_length, H), so they have their shapes.
fn decoder_masked(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let hidden = match ctx.dims(2) {
        Some([_, _, v]) => v.clone(),
        _ => dim_at(ctx.dims(0), 2),
    };
    let out = match ctx.dims(0) {
        Some([b, s, _]) => Shape::ranked(vec![b.clone(), s.clone(), hidden]),
        _ => Shape::unranked(),
    };
    vec![ValueFacts::tensor(elem, out), ValueFacts::tensor(elem, ctx.shape(6)), ValueFacts::tensor(elem, ctx.shape(7))]
}
