//! What onnxruntime's GroupQueryAttention requires of its inputs' sizes, as its CPU kernel checks them before it runs
//! (`group_query_attention_helper.h`, `CheckInputs`; the op's section of `docs/ContribOperators.md` gives the
//! shapes): the caches' batch, heads and head size; key and value against the query; the head size a multiple of 8
//! (of 16 with a rotary cache, whose rows cover the total length and whose half-width fits the head); and the
//! lengths: a total of at least 1 that is the past plus the new tokens (a growing cache) or at most the past (a
//! shared buffer), and new tokens that are one, the whole prompt, or a prompt of batch 1. onnxruntime 1.31's kernel
//! refuses each of these where it is broken (checked one by one on a small model). Each becomes a contradiction or
//! a condition (`kv_cache_dim = 16`); the conditions of one node are one finding.

use super::Ctx;
use crate::infer::require::{At, RankNeed, Requirement, Whence};
use crate::rules::ConditionKind;
use crate::sizes::shape::Dim;
use crate::sizes::sym::Poly;

const SIZES: Requirement = Requirement::OperandSizes;
const QUERY: usize = 0;
const KEY: usize = 1;
const VALUE: usize = 2;
const PAST_KEY: usize = 3;
const PAST_VALUE: usize = 4;
const TOTAL: usize = 6;
const COS: usize = 7;
const SIN: usize = 8;

/// States GroupQueryAttention's requirements on a query of dims `q` (rank 3) with `n` query and `kv_n` key/value
/// heads.
pub(super) fn require(ctx: &Ctx<'_, '_>, q: &[Dim], n: i64, kv_n: i64) {
    let start = ctx.contradictions.borrow().len();
    let known = |k: i64| Dim::Known(k.unsigned_abs());
    ctx.require_condition(SIZES, vec![], 0, ConditionKind::Divides { divisor: known(kv_n), dim: known(n) });
    let packed = !ctx.has_input(KEY);
    let head = head_size(&q[2], if packed { n + 2 * kv_n } else { n });
    let rotary = ctx.has_input(COS) && ctx.has_input(SIN);
    let multiple = if rotary { 16 } else { 8 };
    ctx.require_condition(
        SIZES,
        vec![QUERY],
        2,
        ConditionKind::Divides { divisor: known(multiple), dim: head.clone() },
    );
    if !packed {
        key_and_value(ctx, q);
    }
    let past = caches(ctx, q, &head, kv_n);
    if let Some(total) = ctx.value(TOTAL).and_then(|v| v.first().cloned().flatten()).map(Dim::from_poly) {
        lengths(ctx, q, past.as_ref(), &total);
        if rotary {
            rotary_cache(ctx, &head, &total);
        }
    }
    ctx.merge_conditions_since(start, SIZES);
}

/// onnxruntime's head size: the query's hidden size over the heads, rounded down (an integer division).
fn head_size(hidden: &Dim, heads: i64) -> Dim {
    match hidden.known() {
        Some(d) => Dim::Known(d / heads.unsigned_abs().max(1)),
        None => hidden.to_poly().and_then(|p| p.div_poly(&Poly::constant(heads))).map_or(Dim::Unknown, Dim::from_poly),
    }
}

/// Unpacked key and value (B, S, kv_hidden): the query's batch and length, one hidden size.
fn key_and_value(ctx: &Ctx<'_, '_>, q: &[Dim]) {
    for input in [KEY, VALUE] {
        if !ctx.require_rank(input, RankNeed::Exactly(3)) {
            return;
        }
    }
    let (Some(k), Some(v)) = (ctx.dims(KEY), ctx.dims(VALUE)) else { return };
    for (input, dims) in [(KEY, k), (VALUE, v)] {
        for axis in [0, 1] {
            ctx.require_equal(SIZES, At::new(input, axis, dims[axis].clone()), At::new(QUERY, axis, q[axis].clone()));
        }
    }
    ctx.require_equal(SIZES, At::new(VALUE, 2, v[2].clone()), At::new(KEY, 2, k[2].clone()));
}

/// past_key and past_value (B, kv_N, P, H): the query's batch, the key/value heads, one length, the head size.
/// The past length, when there is a past.
fn caches(ctx: &Ctx<'_, '_>, q: &[Dim], head: &Dim, kv_n: i64) -> Option<Dim> {
    if !ctx.has_input(PAST_KEY) || !ctx.has_input(PAST_VALUE) {
        return None;
    }
    if !ctx.require_rank(PAST_KEY, RankNeed::Exactly(4)) || !ctx.require_rank(PAST_VALUE, RankNeed::Exactly(4)) {
        return None;
    }
    let (pk, pv) = (ctx.dims(PAST_KEY)?, ctx.dims(PAST_VALUE)?);
    for (input, dims) in [(PAST_KEY, pk), (PAST_VALUE, pv)] {
        ctx.require_equal(SIZES, At::new(input, 0, dims[0].clone()), At::new(QUERY, 0, q[0].clone()));
        let heads = Dim::Known(kv_n.unsigned_abs());
        ctx.require_size(SIZES, vec![input], At::new(input, 1, dims[1].clone()), heads, Whence::Required);
        ctx.require_size(SIZES, vec![input, QUERY], At::new(input, 3, dims[3].clone()), head.clone(), Whence::Required);
    }
    ctx.require_equal(SIZES, At::new(PAST_VALUE, 2, pv[2].clone()), At::new(PAST_KEY, 2, pk[2].clone()));
    Some(pk[2].clone())
}

/// The lengths: the query's S new tokens, the past P (0 without a past) and the `total_sequence_length` input T.
fn lengths(ctx: &Ctx<'_, '_>, q: &[Dim], past: Option<&Dim>, total: &Dim) {
    let (batch, s) = (&q[0], &q[1]);
    let one = Dim::Known(1);
    let at_most = |dim: &Dim, bound: &Dim| ConditionKind::AtMost { dim: dim.clone(), bound: bound.clone() };
    let equal = |dim: &Dim, options: Vec<Dim>| ConditionKind::OneOf { dim: dim.clone(), options };
    ctx.require_condition(SIZES, vec![TOTAL], 0, at_most(&one, total));
    ctx.require_condition(SIZES, vec![QUERY], 1, at_most(&one, s));
    // A prompt after a past (S > 1, S ≠ T) is allowed for one sequence only.
    let prompt = ConditionKind::AnyOf(vec![equal(s, vec![one.clone(), total.clone()]), equal(batch, vec![one])]);
    ctx.require_condition(SIZES, vec![QUERY, TOTAL], 1, prompt);
    // A growing cache holds the past and the new tokens; a shared buffer holds at least the total.
    let zero = Dim::Known(0);
    let past = past.unwrap_or(&zero);
    let Some(grown) = past.to_poly().zip(s.to_poly()).and_then(|(p, s)| p.add(&s)).map(Dim::from_poly) else {
        return;
    };
    let cache = ConditionKind::AnyOf(vec![equal(total, vec![grown]), at_most(total, past)]);
    ctx.require_condition(SIZES, vec![QUERY, PAST_KEY, TOTAL], 1, cache);
}

/// cos_cache and sin_cache (max length, rotary half-width): rows for the total length, one width, a multiple of 8
/// and at most half the head size rounded down to a multiple of 8.
fn rotary_cache(ctx: &Ctx<'_, '_>, head: &Dim, total: &Dim) {
    let (Some([cos_rows, cos_width]), Some([sin_rows, sin_width])) = (ctx.dims(COS), ctx.dims(SIN)) else {
        return;
    };
    for (input, rows) in [(COS, cos_rows), (SIN, sin_rows)] {
        ctx.require_condition(
            SIZES,
            vec![input, TOTAL],
            0,
            ConditionKind::AtMost { dim: total.clone(), bound: rows.clone() },
        );
    }
    ctx.require_equal(SIZES, At::new(SIN, 1, sin_width.clone()), At::new(COS, 1, cos_width.clone()));
    let eight = Dim::Known(8);
    ctx.require_condition(SIZES, vec![COS], 1, ConditionKind::Divides { divisor: eight, dim: cos_width.clone() });
    if let Some(h) = head.known() {
        let widest = Dim::Known(h / 16 * 8);
        ctx.require_condition(
            SIZES,
            vec![COS, QUERY],
            1,
            ConditionKind::AtMost { dim: cos_width.clone(), bound: widest },
        );
    }
}
