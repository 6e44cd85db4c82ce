//! The transformer ops added from opset 23 on (ONNX `docs/Operators.md`: RotaryEmbedding-23, TensorScatter-24,
//! CausalConvWithState-27, LinearAttention-27, SwiGLU-28; `ai.onnx.preview` FlexAttention-1). Attention-23 itself
//! is in `nn`.
//!
//! Where the specification requires several inputs to share a size, any one of them says it: the most specific
//! (a known size, else a symbol) is taken, as in [`unify`].

use super::require::{At, Contradiction, Detail, Malformed, RankNeed, Requirement, Whence};
use super::{dim_at, dim_of, Ctx};
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let elem = ctx.elem(0);
    Some(match ctx.op {
        // RotaryEmbedding-23: the input's shape; TensorScatter-24: the past cache's.
        "RotaryEmbedding" | "TensorScatter" => {
            check_caches(ctx);
            vec![ValueFacts::tensor(elem, ctx.shape(0))]
        }
        // SwiGLU-28: A and B have one shape, no broadcasting.
        "SwiGLU" => {
            check_swiglu(ctx);
            let shape = match (ctx.dims(0), ctx.dims(1)) {
                (Some(a), Some(b)) if a.len() == b.len() => {
                    Shape::ranked(a.iter().zip(b).map(|(x, y)| unify(&[x.clone(), y.clone()])).collect())
                }
                (Some(_), _) => ctx.shape(0),
                (None, _) => ctx.shape(1),
            };
            vec![ValueFacts::tensor(elem.or(ctx.elem(1)), shape)]
        }
        "CausalConvWithState" => {
            check_causal_conv(ctx);
            causal_conv(ctx)
        }
        "LinearAttention" => {
            check_linear_attention(ctx);
            linear_attention(ctx)
        }
        _ => return None,
    })
}

/// The `ai.onnx.preview` domain.
pub fn infer_preview(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    match ctx.op {
        // FlexAttention-1: `(B, Hq, L, Dv)` from Q `(B, Hq, L, Dqk)` and V `(B, Hkv, S, Dv)`.
        "FlexAttention" => {
            check_flex_attention(ctx);
            let (q, k, v) = (ctx.dims(0), ctx.dims(1), ctx.dims(2));
            let shape = match q {
                Some(q) if q.len() == 4 => Shape::ranked(vec![
                    unify(&[q[0].clone(), dim_at(k, 0), dim_at(v, 0)]),
                    q[1].clone(),
                    q[2].clone(),
                    dim_at(v, 3),
                ]),
                _ => Shape::unranked(),
            };
            Some(vec![ValueFacts::tensor(ctx.elem(0), shape)])
        }
        _ => None,
    }
}

/// Requires the size of input `a` on `axis_a` to equal that of input `b` on `axis_b` (when both ranks reach them).
fn require_same(ctx: &Ctx<'_, '_>, (a, axis_a): (usize, usize), (b, axis_b): (usize, usize)) {
    let at = |i: usize, axis: usize| ctx.dims(i).and_then(|d| d.get(axis)).map(|d| At::new(i, axis, d.clone()));
    if let (Some(x), Some(y)) = (at(a, axis_a), at(b, axis_b)) {
        ctx.require_equal(Requirement::OperandSizes, x, y);
    }
}

/// Requires each present input of `ranks` (position, rank) to have that rank; whether all have.
fn require_ranks(ctx: &Ctx<'_, '_>, ranks: &[(usize, usize)]) -> bool {
    ranks.iter().filter(|(i, _)| ctx.has_input(*i)).all(|&(i, r)| ctx.require_rank(i, RankNeed::Exactly(r)))
}

/// RotaryEmbedding-23: `cos_cache` and `sin_cache` of one shape. TensorScatter-24: the update of the past cache's
/// shape but on the sequence axis (`axis`, -2 by default).
fn check_caches(ctx: &Ctx<'_, '_>) {
    let (a, b, skip) = match ctx.op {
        "RotaryEmbedding" => (1, 2, None),
        _ => (0, 1, ctx.rank(0).and_then(|r| super::normalize_axis(ctx.int("axis", -2), r))),
    };
    if !ctx.require_rank(b, RankNeed::Of(a)) {
        return;
    }
    for axis in (0..ctx.rank(a).unwrap_or(0)).filter(|&x| Some(x) != skip) {
        require_same(ctx, (a, axis), (b, axis));
    }
}

/// SwiGLU-28: "Inputs A and B must have identical shapes; broadcasting is not applied".
fn check_swiglu(ctx: &Ctx<'_, '_>) {
    if ctx.require_rank(1, RankNeed::Of(0)) {
        for axis in 0..ctx.rank(0).unwrap_or(0) {
            require_same(ctx, (0, axis), (1, axis));
        }
    }
}

/// CausalConvWithState-27: input `(B, C, L)`, weight `(C, 1, K)`, bias `(C)`, past state `(B, C, K - 1)`.
fn check_causal_conv(ctx: &Ctx<'_, '_>) {
    if !require_ranks(ctx, &[(0, 3), (1, 3), (2, 1), (3, 3)]) {
        return;
    }
    for (i, axis) in [(1, 0), (2, 0), (3, 1)] {
        require_same(ctx, (0, 1), (i, axis));
    }
    require_same(ctx, (0, 0), (3, 0));
    if let Some(d) = ctx.dims(1) {
        // A kernel of no taps: there is no convolution (and no `k - 1` steps of state).
        if d[2].known() == Some(0) {
            let m = Malformed::Below { list: "the kernel size (weight's axis 2)", value: 0, least: 1 };
            return ctx.report(Contradiction::violated(Requirement::OperandSizes, vec![1], Detail::Malformed(m)));
        }
        ctx.require_size(
            Requirement::OperandSizes,
            vec![1],
            At::new(1, 1, d[1].clone()),
            Dim::Known(1),
            Whence::Required,
        );
        let k_minus_1 = dim_of(d[2].to_poly().and_then(|k| k.sub(&Poly::constant(1))));
        if let Some(state) = ctx.dims(3) {
            ctx.require_size(
                Requirement::OperandSizes,
                vec![1, 3],
                At::new(3, 2, state[2].clone()),
                k_minus_1,
                Whence::Required,
            );
        }
    }
}

/// LinearAttention-27: packed 3-D query, key, value, decay and beta, a 4-D past state; `q_num_heads` a multiple of
/// `kv_num_heads`, which divide the packed sizes; decay's last size `H_kv` or `H_kv * d_k`, beta's 1 or `H_kv`.
fn check_linear_attention(ctx: &mut Ctx<'_, '_>) {
    if !require_ranks(ctx, &[(0, 3), (1, 3), (2, 3), (3, 4), (4, 3), (5, 3)]) {
        return;
    }
    for i in 1..6 {
        require_same(ctx, (0, 0), (i, 0));
        if i != 3 {
            require_same(ctx, (0, 1), (i, 1));
        }
    }
    let heads = |name: &str| ctx.attrs.int(name).filter(|&h| h > 0).and_then(|h| u64::try_from(h).ok());
    let (Some(hq), Some(hkv)) = (heads("q_num_heads"), heads("kv_num_heads")) else { return };
    let (hq, hkv) = (Dim::Known(hq), Dim::Known(hkv));
    ctx.divide(Requirement::ExactDivision, vec![0, 1], 2, &hq, &hkv);
    for (i, h) in [(0, &hq), (1, &hkv), (2, &hkv)] {
        let packed = dim_at(ctx.dims(i), 2);
        ctx.divide(Requirement::ExactDivision, vec![i], 2, &packed, h);
    }
    let last = |i: usize| ctx.dims(i).map(|d| At::new(i, 2, d[2].clone()));
    if let Some(at) = last(4) {
        // `H_kv * d_k` is the key's packed size.
        ctx.require_one_of(Requirement::OperandSizes, vec![1, 4], at, vec![hkv.clone(), dim_at(ctx.dims(1), 2)]);
    }
    if let Some(at) = last(5) {
        ctx.require_one_of(Requirement::OperandSizes, vec![5], at, vec![Dim::Known(1), hkv]);
    }
}

/// FlexAttention-1: rank-4 Q `(B, Hq, L, D)`, K `(B, Hkv, S, D)`, V `(B, Hkv, S, Dv)` of one element type, `Hq` a
/// multiple of `Hkv`.
fn check_flex_attention(ctx: &mut Ctx<'_, '_>) {
    ctx.require_same_type(&[0, 1, 2]);
    if !require_ranks(ctx, &[(0, 4), (1, 4), (2, 4)]) {
        return;
    }
    for (a, b) in [((0, 0), (1, 0)), ((0, 0), (2, 0)), ((1, 1), (2, 1)), ((1, 2), (2, 2)), ((0, 3), (1, 3))] {
        require_same(ctx, a, b);
    }
    let (hq, hkv) = (dim_at(ctx.dims(0), 1), dim_at(ctx.dims(1), 1));
    ctx.divide(Requirement::ExactDivision, vec![0, 1], 1, &hq, &hkv);
}

/// One size that several inputs must share: the first known one, else the first symbol, else unknown.
pub(crate) fn unify(dims: &[Dim]) -> Dim {
    dims.iter()
        .find(|d| d.known().is_some())
        .or_else(|| dims.iter().find(|d| !matches!(d, Dim::Unknown)))
        .cloned()
        .unwrap_or(Dim::Unknown)
}

/// CausalConvWithState-27: input `(B, C, L)`, weight `(C, 1, K)`, bias `(C)`, past state `(B, C, K - 1)`. The
/// output has the input's shape; the present state is `(B, C, K - 1)`.
fn causal_conv(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let (x, w, bias, state) = (ctx.dims(0), ctx.dims(1), ctx.dims(2), ctx.dims(3));
    let b = unify(&[dim_at(x, 0), dim_at(state, 0)]);
    let c = unify(&[dim_at(x, 1), dim_at(w, 0), dim_at(bias, 0), dim_at(state, 1)]);
    let k_minus_1 = dim_of(dim_at(w, 2).to_poly().and_then(|k| k.sub(&Poly::constant(1))));
    let k_minus_1 = unify(&[k_minus_1, dim_at(state, 2)]);
    let y = match x {
        Some(x) if x.len() == 3 => Shape::ranked(vec![b.clone(), c.clone(), x[2].clone()]),
        _ => ctx.shape(0),
    };
    vec![ValueFacts::tensor(ctx.elem(0), y), ValueFacts::tensor(ctx.elem(0), Shape::ranked(vec![b, c, k_minus_1]))]
}

/// LinearAttention-27: packed 3-D query, key and value `(B, T, H * d)`; the output `(B, T, Hq * dv)`, the present
/// state `(B, Hkv, dk, dv)` (of the past state's type when one is given).
fn linear_attention(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let heads = |name: &str| ctx.attrs.int(name).filter(|&h| h > 0);
    let (q_heads, kv_heads) = (heads("q_num_heads"), heads("kv_num_heads"));
    let (q, k, v, past) = (ctx.dims(0), ctx.dims(1), ctx.dims(2), ctx.dims(3));
    let at = |i: usize, a: usize| dim_at(ctx.dims(i), a);
    let b = unify(&[at(0, 0), at(1, 0), at(2, 0), at(3, 0), at(4, 0), at(5, 0)]);
    let t = unify(&[at(0, 1), at(1, 1), at(2, 1), at(4, 1), at(5, 1)]);
    // An exact division only: a packed size that the heads do not divide is the model's error.
    let per_head = |packed: Dim, h: Option<i64>| {
        dim_of(packed.to_poly().zip(h).and_then(|(p, h)| {
            let d = p.div_floor(h)?;
            (d.scale(h)? == p).then_some(d)
        }))
    };
    let dk = unify(&[per_head(dim_at(q, 2), q_heads), per_head(dim_at(k, 2), kv_heads), dim_at(past, 2)]);
    let dv = unify(&[per_head(dim_at(v, 2), kv_heads), dim_at(past, 3)]);
    let out_last = dim_of(dv.to_poly().zip(q_heads).and_then(|(d, h)| d.scale(h)));
    let hkv = unify(&[kv_heads.map_or(Dim::Unknown, |h| Dim::Known(h as u64)), dim_at(past, 1)]);
    let state_elem = if ctx.has_input(3) { ctx.elem(3) } else { ctx.elem(0) };
    vec![
        ValueFacts::tensor(ctx.elem(0), Shape::ranked(vec![b.clone(), t, out_last])),
        ValueFacts::tensor(state_elem, Shape::ranked(vec![b, hkv, dk, dv])),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::{int, run_rule};

    fn t(dims: &[u64]) -> Option<ValueFacts> {
        Some(ValueFacts::tensor(Some(1), Shape::known(dims)))
    }

    #[test]
    fn causal_conv_state_keeps_kernel_minus_one_steps() {
        let out = run_rule(infer, "CausalConvWithState", 27, vec![], &[t(&[2, 8, 16]), t(&[8, 1, 4])], 2);
        assert_eq!(out[0].shape, Shape::known(&[2, 8, 16]));
        assert_eq!(out[1].shape, Shape::known(&[2, 8, 3]));
    }

    #[test]
    fn linear_attention_unpacks_heads_for_the_state_and_packs_the_output() {
        let attrs = vec![int("q_num_heads", 4), int("kv_num_heads", 2)];
        let out = run_rule(infer, "LinearAttention", 27, attrs, &[t(&[1, 5, 32]), t(&[1, 5, 16]), t(&[1, 5, 24])], 2);
        assert_eq!(out[0].shape, Shape::known(&[1, 5, 48]), "4 query heads of value size 12");
        assert_eq!(out[1].shape, Shape::known(&[1, 2, 8, 12]));
    }

    #[test]
    fn swiglu_takes_the_more_specific_of_its_two_equal_shapes() {
        let a = Some(ValueFacts::tensor(Some(1), Shape::ranked(vec![Dim::sym("N"), Dim::Unknown])));
        let out = run_rule(infer, "SwiGLU", 28, vec![], &[a, t(&[3, 7])], 1);
        assert_eq!(out[0].shape, Shape::known(&[3, 7]));
    }

    #[test]
    fn flex_attention_has_the_query_heads_and_the_value_size() {
        let out = run_rule(
            infer_preview,
            "FlexAttention",
            1,
            vec![],
            &[t(&[2, 8, 5, 16]), t(&[2, 2, 9, 16]), t(&[2, 2, 9, 32])],
            1,
        );
        assert_eq!(out[0].shape, Shape::known(&[2, 8, 5, 32]));
    }
}
