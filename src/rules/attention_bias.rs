//! The attention bias of onnxruntime's attention ops, a one-way broadcast.
//!
//! onnxruntime `docs/ContribOperators.md`, "com.microsoft.MultiHeadAttention" (and "com.microsoft.Attention",
//! "com.microsoft.GroupQueryAttention"): "attention_bias: additional add to QxK' with shape (batch_size or 1,
//! num_heads or 1, sequence_length, total_sequence_length)". The bias is added to the attention scores of shape
//! (B, N, S, T), so it broadcasts towards them as ONNX `docs/Broadcasting.md` "Unidirectional Broadcasting" says
//! (the maths of [`unidirectional`](super::unidirectional)): only its batch and head axes may be 1. The target
//! is not an input: B and S come from the query, N from `num_heads`, T from the keys and the past (or the
//! `total_sequence_length` input).

use super::{unidirectional, Binding, NodeView, Outcome, Rule, Verdict};
use crate::rules::ops::Attn;
use crate::sizes::shape::{Dim, Shape};

fn add(a: &Dim, b: &Dim) -> Dim {
    a.to_poly().zip(b.to_poly()).and_then(|(a, b)| a.add(&b)).map_or(Dim::Unknown, Dim::from_poly)
}

fn dim(shape: &Shape, i: usize) -> Dim {
    shape.dims().and_then(|d| d.get(i).cloned()).unwrap_or(Dim::Unknown)
}

/// (B, N, S, T) of the attention scores.
pub fn target(node: &NodeView, attn: Attn) -> Shape {
    let query = node.shape(0);
    let heads = node.attrs.int("num_heads").and_then(|n| u64::try_from(n).ok()).map_or(Dim::Unknown, Dim::Known);
    let (b, s) = (dim(query, 0), dim(query, 1));
    let rank = |p: usize| node.shape(p).rank();
    let total = match attn {
        Attn::Attention => match rank(4) {
            Some(5) => add(&dim(node.shape(4), 3), &s),
            _ if node.inputs.get(4).is_some_and(|n| !n.is_empty()) => Dim::Unknown,
            _ => s.clone(),
        },
        Attn::MultiHead => {
            let key = node.shape(1);
            let length = match (query.rank(), key.rank()) {
                (Some(5), _) => s.clone(),
                (_, Some(3) | Some(5)) => dim(key, 1),
                (_, Some(4)) => dim(key, 2),
                _ => Dim::Unknown,
            };
            // A key given as (B, N, L, H) is the cache itself: no past is added to it.
            match (rank(6), key.rank()) {
                (Some(4), Some(3) | Some(5)) => add(&dim(node.shape(6), 2), &length),
                _ => length,
            }
        }
        Attn::GroupQuery => node
            .facts
            .get(6)
            .copied()
            .flatten()
            .and_then(|f| f.value.as_ref()?.first().cloned().flatten())
            .map_or(Dim::Unknown, Dim::from_poly),
    };
    Shape::ranked(vec![b, heads, s, total])
}

/// The bias (when the node has one) towards the scores' shape; a node without one has nothing to broadcast.
pub fn bind(node: &NodeView, attn: Attn) -> Binding {
    let target = target(node, attn);
    let bias = attn.bias_input();
    let outcome = match node.inputs.get(bias).filter(|b| !b.is_empty()) {
        None => Outcome { output: target.clone(), verdict: Verdict::Same },
        Some(_) => Outcome { output: target.clone(), ..unidirectional(&target, node.shape(bias)) },
    };
    Binding {
        rule: Rule::Unidirectional,
        outcome,
        rule_inputs: smallvec::smallvec![None, node.site_pos(bias)],
        target: Some(target),
    }
}
/// Where the scores' shape (B, N, S, T) is read in the graph: B and S are axes 0 and 1 of the query (node input
/// 0), N is `heads`, T is axis `total.1` of node input `total.0` (the key's length, or the query's for
/// `Attention`). `None` when T depends on a past or a packed layout, which the op adds up inside itself: no value
/// of the graph holds it.
pub struct ScoresDims {
    pub heads: u64,
    pub total: (usize, i64),
}

/// The [`ScoresDims`] of an attention node whose bias is `site`'s one-way input.
pub fn scores_dims(site: &super::Site, node: &crate::onnx::pb::NodeProto, attn: Attn) -> Option<ScoresDims> {
    let heads = u64::try_from(crate::onnx::attr::Attrs::new(node, None).int("num_heads")?).ok()?;
    let present = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    let rank = |i: usize| {
        site.inputs
            .iter()
            .find(|x| Some(x.name.as_ref()) == node.input.get(i).map(|n| n.as_str()))
            .and_then(|x| x.shape.rank())
    };
    let total = match attn {
        Attn::Attention if !present(4) => (0, 1),
        Attn::MultiHead if rank(0) == Some(3) && rank(1) == Some(3) && !present(6) => (1, 1),
        _ => return None,
    };
    Some(ScoresDims { heads, total })
}
