//! The proof that a consumer broadcasts anyway: with each removed broadcast's output replaced by its source, the
//! consumer's own rule (ONNX `docs/Broadcasting.md`: "Multidirectional Broadcasting" for Add … Xor, Where and the
//! variadic ops, "Unidirectional Broadcasting" for Gemm's C and PRelu's slope; numpy's for Expand's data) still
//! holds without condition and gives provably the same output shape. Elementwise, a broadcast of a broadcast of
//! `x` is the broadcast of `x` to the outer shape, so the consumer then computes the same values.

use super::KeptReason;
use crate::analysis::Site;
use crate::rules::ops::SiteKind;
use crate::rules::{self, ConditionKind, Outcome, Rule, Verdict};
use crate::sizes::shape::{Dim, Shape};

/// One evaluation of a body: a function body is evaluated once per call, and a fact of one call holds for that
/// call only. Empty outside functions.
pub(super) type CallKey = Vec<String>;

/// The evaluation `site` belongs to: the calling node and the chain of functions down to the site's body.
pub(super) fn call_key(site: &Site) -> CallKey {
    if site.functions.is_empty() {
        return Vec::new();
    }
    let mut key = vec![site.graph.to_string(), site.node_index.to_string()];
    let last = site.functions.len() - 1;
    for (i, frame) in site.functions.iter().enumerate() {
        key.push(frame.function.to_string());
        if i < last {
            key.push(frame.node.to_string());
        }
    }
    key
}

/// What a consumer's input becomes once the broadcasts planned so far are removed: the value it then reads, and
/// that value's shape at one evaluation (`None`: no evaluation of the removed node matches this one, so nothing is
/// proved).
pub(super) struct Replaced {
    pub name: String,
    pub shape: Option<Shape>,
}

/// Judges one consumer at every evaluation: `replace` says what an input name becomes at an evaluation, `None`
/// when it stays.
pub(super) fn judge_consumer(
    sites: &[&Site],
    replace: &dyn Fn(&str, &CallKey) -> Option<Replaced>,
) -> Result<(), KeptReason> {
    judge_consumer_under(sites, replace, &[])
}

/// [`judge_consumer`] for a broadcast that itself holds only under `conditions`: the consumer may then hold under
/// those conditions (and its own), since the model fails for exactly the sizes it failed for before. This is what
/// `expand` makes of a conditional site (`pos [1, min(64, seq), 32]` expanded to `[batch, seq, 32]` before an Add
/// holds only if `seq ≤ 64`, as the Add did), so that fold undoes it.
pub(super) fn judge_consumer_under(
    sites: &[&Site],
    replace: &dyn Fn(&str, &CallKey) -> Option<Replaced>,
    conditions: &[&ConditionKind],
) -> Result<(), KeptReason> {
    for site in sites {
        judge_one(site, replace, conditions)?;
    }
    Ok(())
}

fn judge_one(
    site: &Site,
    replace: &dyn Fn(&str, &CallKey) -> Option<Replaced>,
    under: &[&ConditionKind],
) -> Result<(), KeptReason> {
    let key = call_key(site);
    let consumer = || (super::node_label(site), site.op.to_string());
    let allowed = site.rule.broadcasting_inputs(site);
    let mut names = Vec::with_capacity(site.inputs.len());
    let mut shapes = Vec::with_capacity(site.inputs.len());
    for (i, input) in site.inputs.iter().enumerate() {
        match replace(&input.name, &key) {
            None => {
                names.push(input.name.to_string());
                shapes.push(input.shape.clone().into_owned());
            }
            Some(_) if !allowed.contains(&i) => {
                let (node, op) = consumer();
                return Err(KeptReason::NotBroadcastingConsumer { node, op, input: i });
            }
            Some(Replaced { shape: None, .. }) => {
                let (node, op) = consumer();
                return Err(KeptReason::NoEvaluation { node, op });
            }
            Some(Replaced { name, shape: Some(shape) }) => {
                names.push(name);
                shapes.push(shape);
            }
        }
    }
    let outcome = outcome(site, &names, &shapes);
    let (node, op) = consumer();
    match outcome.verdict {
        Verdict::Same | Verdict::Broadcast => {}
        Verdict::Conditional(conditions)
            if !under.is_empty()
                && conditions.iter().all(|c| {
                    under.contains(&&c.kind)
                        || matches!(&site.verdict, Verdict::Conditional(own) if own.iter().any(|o| o.kind == c.kind))
                }) => {}
        Verdict::Conditional(conditions) => return Err(KeptReason::ConsumerConditional { node, op, conditions }),
        Verdict::Unknown => return Err(KeptReason::ConsumerUnknown { node, op }),
        Verdict::Violation(_) => return Err(KeptReason::ConsumerViolation { node, op }),
    }
    if !outcome.output.provably_eq(&site.output_shape) {
        // Where the shapes differ only by sizes nobody knows (`[1, ?, ?]` against `[1, ?1, ?2]`, the sizes a
        // `Shape` named), the output is not known to change: its shapes are not known well enough to prove it.
        if !differs_beyond_unknowns(&outcome.output, &site.output_shape) {
            return Err(KeptReason::ConsumerUnknown { node, op });
        }
        return Err(KeptReason::OutputChanges {
            node,
            op,
            from: site.output_shape.clone().into_owned(),
            to: outcome.output,
        });
    }
    Ok(())
}

/// Whether two shapes differ other than by unknown dims: in rank, or on an axis where neither dim is `?` and the
/// two are not the same size or expression (two symbols count as different there: nothing proves them equal).
fn differs_beyond_unknowns(a: &Shape, b: &Shape) -> bool {
    match (a.dims(), b.dims()) {
        (Some(a), Some(b)) => {
            a.len() != b.len()
                || a.iter().zip(b).any(|(x, y)| !matches!(x, Dim::Unknown) && !matches!(y, Dim::Unknown) && x != y)
        }
        _ => false,
    }
}

/// The consumer's rule on the new inputs, bound as `rules::bind` binds the node.
fn outcome(site: &Site, names: &[String], shapes: &[Shape]) -> Outcome {
    let rule_shape = |k: usize| site.rule_inputs.get(k).copied().flatten().map(|i| &shapes[i]);
    let unranked = Shape::unranked();
    match (site.rule, site.kind) {
        (Rule::Unidirectional, SiteKind::Gemm { .. } | SiteKind::QGemm | SiteKind::AttentionBias(_)) => {
            let target = site.target.clone().unwrap_or_else(Shape::unranked);
            let c = rule_shape(1).unwrap_or(&unranked);
            Outcome { output: target.clone(), ..rules::unidirectional(&target, c) }
        }
        (Rule::Unidirectional, _) => {
            rules::unidirectional(rule_shape(0).unwrap_or(&unranked), rule_shape(1).unwrap_or(&unranked))
        }
        (Rule::Bidirectional, _) => {
            let target = site.target.clone().unwrap_or_else(Shape::unranked);
            rules::bidirectional(rule_shape(0).unwrap_or(&unranked), &target)
        }
        // The rule's inputs only (QLinearAdd's A and B, not its scales). One value in every place is no
        // broadcast, whatever its shape (as `multidirectional::bind` says).
        _ => {
            let chosen: Vec<usize> = site.rule_inputs.iter().flatten().copied().collect();
            if chosen.len() > 1 && chosen.windows(2).all(|w| names[w[0]] == names[w[1]]) {
                return Outcome { output: shapes[chosen[0]].clone(), verdict: Verdict::Same };
            }
            rules::multidirectional(&chosen.iter().map(|&i| &shapes[i]).collect::<Vec<_>>())
        }
    }
}
