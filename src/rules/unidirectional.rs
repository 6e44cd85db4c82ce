//! Unidirectional broadcasting: one input broadcast towards a fixed target (Gemm's C towards (M, N), PRelu's
//! slope towards X).
//!
//! ONNX `docs/Broadcasting.md`, "Unidirectional Broadcasting": "tensor B is unidirectional broadcastable to tensor
//! A if one of the following is true: Tensor A and B both have exactly the same shape. Tensor A and B all have the
//! same number of dimensions and the length of each dimensions is either a common length or B's length is 1.
//! Tensor B has too few dimensions, and B can have its shapes prepended with a dimension of length 1 to satisfy
//! property 2."

use super::Site;
use super::{sorted_dims, AxisStatus, ConditionKind, Outcome, Tally, Verdict, Violation, ViolationKind};
use super::{Alignment, RewriteOperand};
use super::{Binding, NodeView, Rule};
use crate::onnx::attr::Attrs;
use crate::rules::ops::SiteKind;
use crate::sizes::shape::{Dim, Shape};

/// One axis where input `b` is broadcast one way onto the target size `a`.
pub(super) fn one_way_axis(a: &Dim, b: &Dim) -> Result<AxisStatus, (Dim, Dim)> {
    if b.is_one() || b.provably_eq(a) {
        return Ok(AxisStatus::Holds);
    }
    Ok(match (a, b) {
        (Dim::Known(_), Dim::Known(_)) => return Err((b.clone(), a.clone())),
        (Dim::Unknown, _) | (_, Dim::Unknown) => AxisStatus::Unknown,
        // The target is symbolic and b is a fixed size other than 1: the target must be exactly that size.
        (_, Dim::Known(_)) => {
            AxisStatus::Conditions(vec![ConditionKind::OneOf { dim: a.clone(), options: vec![b.clone()] }])
        }
        _ => AxisStatus::Conditions(vec![ConditionKind::OneOf {
            dim: b.clone(),
            options: sorted_dims(vec![Dim::Known(1), a.clone()]),
        }]),
    })
}

/// Unidirectional broadcasting of `b` (input index 1) towards the fixed shape `a` (input index 0).
pub fn unidirectional(a: &Shape, b: &Shape) -> Outcome {
    let (Some(ad), Some(bd)) = (a.dims(), b.dims()) else {
        return Outcome { output: a.clone(), verdict: Verdict::Unknown };
    };
    if bd.len() > ad.len() {
        let kind = ViolationKind::RankTooLarge { rank: bd.len(), target_rank: ad.len() };
        return Outcome { output: a.clone(), verdict: Verdict::Violation(Violation { input: 1, axis: None, kind }) };
    }
    let offset = ad.len() - bd.len();
    let mut tally = Tally::default();
    for (j, bdim) in bd.iter().enumerate() {
        let axis = offset + j;
        match one_way_axis(&ad[axis], bdim) {
            Ok(status) => tally.add(axis, status),
            Err((found, expected)) => {
                let kind = ViolationKind::Mismatch { found, expected, against: 0 };
                let verdict = Verdict::Violation(Violation { input: 1, axis: Some(axis), kind });
                return Outcome { output: a.clone(), verdict };
            }
        }
    }
    Outcome { verdict: tally.verdict(a.provably_eq(b)), output: a.clone() }
}

/// How the target of a one-way rule is named in messages: Gemm's (M, N), Expand's target shape, or PRelu's X.
pub fn target_label(site: &Site) -> String {
    match (site.kind, &site.target) {
        (SiteKind::Gemm { .. } | SiteKind::QGemm, Some(t)) => format!("(M, N) {t}"),
        (SiteKind::AttentionBias(_), Some(t)) => format!("(B, N, S, T) {t}"),
        (_, Some(t)) => format!("the target shape {t}"),
        (_, None) => site
            .inputs
            .first()
            .map_or_else(|| "the target".into(), |i| format!("{} {}", crate::sys::escape::name(&i.name), i.shape)),
    }
}

/// The target, when it is not one of the node's inputs: Gemm's (M, N) from A and B.
pub fn target_name(site: &Site) -> &'static str {
    match site.kind {
        SiteKind::Gemm { .. } | SiteKind::QGemm => "(M, N)",
        SiteKind::AttentionBias(_) => "(B, N, S, T)",
        _ => "the target",
    }
}

/// How a violation begins: `C [3] does not broadcast to (M, N) [2, 4]`.
pub fn violation_lead(site: &Site, input: usize) -> String {
    let (name, shape) = site.offender(input);
    format!("{name} {shape} does not broadcast to {}", target_label(site))
}

/// Gemm's C (input 2) towards (M, N) from A and B after `transA`/`transB`; before opset 7 only with
/// `broadcast=1`, else C must have the shape (M, N). Without C there is nothing to broadcast.
pub fn bind_gemm(node: &NodeView, legacy: bool) -> Binding {
    bind_gemm_at(node, legacy, [0, 1, 2])
}

/// [`bind_gemm`] with A, B and C at other positions of the node's inputs (`com.microsoft.QGemm`: 0, 3 and 6).
pub fn bind_gemm_at(node: &NodeView, legacy: bool, [a, b, c]: [usize; 3]) -> Binding {
    let target = gemm_target(node.shape(a), node.shape(b), node.attrs);
    let equal = legacy && node.attrs.int("broadcast") != Some(1);
    let outcome = match node.inputs.get(c).filter(|c| !c.is_empty()) {
        None => Outcome { output: target.clone(), verdict: Verdict::Same },
        Some(_) if equal => super::equal_shapes(&[&target, node.shape(c)]),
        Some(_) => unidirectional(&target, node.shape(c)),
    };
    let rule = if equal { Rule::None } else { Rule::Unidirectional };
    let outcome = Outcome { output: target.clone(), ..outcome };
    Binding { rule, outcome, rule_inputs: smallvec::smallvec![None, node.site_pos(c)], target: Some(target) }
}

/// (M, N) of a Gemm from A and B after transA/transB; unknown dims where A or B is not known to be 2-D.
fn gemm_target(a: &Shape, b: &Shape, attrs: Attrs<'_>) -> Shape {
    let pick = |s: &Shape, i: usize| match s.dims() {
        Some(d) if d.len() == 2 => d[i].clone(),
        _ => Dim::Unknown,
    };
    let m = pick(a, usize::from(attrs.int("transA").unwrap_or(0) != 0));
    let n = pick(b, usize::from(attrs.int("transB").unwrap_or(0) == 0));
    Shape::ranked(vec![m, n])
}

/// PRelu's slope (input 1) towards X (input 0); before opset 7 by the old per-channel definition where it
/// applies.
pub fn bind_prelu(node: &NodeView, legacy: bool) -> Binding {
    let (x, slope) = (node.shape(0), node.shape(1));
    let outcome = match legacy_prelu(x, slope) {
        Some(outcome) if legacy => outcome,
        _ => unidirectional(x, slope),
    };
    Binding {
        rule: Rule::Unidirectional,
        outcome,
        rule_inputs: smallvec::smallvec![node.site_pos(0), node.site_pos(1)],
        target: None,
    }
}

/// PRelu before opset 7: a slope of one element is shared by every channel, and a 1-D slope of C elements
/// applies per channel (axis 1). Other slopes are judged by unidirectional broadcasting.
fn legacy_prelu(x: &Shape, slope: &Shape) -> Option<Outcome> {
    if slope.element_count() == Some(1) {
        let verdict = if x.provably_eq(slope) { Verdict::Same } else { Verdict::Broadcast };
        return Some(Outcome { output: x.clone(), verdict });
    }
    match (x.dims(), slope.dims()) {
        (Some(xd), Some([c])) if xd.len() >= 2 && xd[1].provably_eq(c) => {
            Some(Outcome { output: x.clone(), verdict: Verdict::Broadcast })
        }
        _ => None,
    }
}

/// The one-way input (Gemm's C, PRelu's slope) unless it already has the target's shape; PRelu's slope before
/// opset 7 per channel.
pub fn rewrite_operands(site: &Site) -> super::RewriteOperands {
    let target = site.target.as_ref().unwrap_or(&site.output_shape);
    let Some(b) = site.rule_inputs.get(1).copied().flatten() else { return super::RewriteOperands::new() };
    if site.inputs[b].shape.provably_eq(target) {
        return super::RewriteOperands::new();
    }
    let alignment = if site.kind == (SiteKind::PRelu { legacy: true }) {
        legacy_prelu_alignment(&site.inputs[b].shape, target)
    } else {
        Alignment::Numpy
    };
    smallvec::smallvec![RewriteOperand { input: b, alignment }]
}

/// PRelu before opset 7 applies a 1-D slope of C elements per channel (axis 1).
fn legacy_prelu_alignment(slope: &Shape, x: &Shape) -> Alignment {
    match (slope.known_dims().as_deref(), x.dims()) {
        (Some(&[c]), Some(xd))
            if c != 1 && xd.len() >= 2 && xd[1] == Dim::Known(c) && xd.last() != Some(&Dim::Known(c)) =>
        {
            let mut mapped = vec![1u64; xd.len()];
            mapped[1] = c;
            Alignment::Mapped(mapped)
        }
        _ => Alignment::Numpy,
    }
}

/// The form `expand` gives a one-way site whose shapes are undecided: its broadcast input an `Expand` to a shape
/// computed in the graph (a `Shape`, or a `Concat` of gathered dims).
pub fn already_explicit(site: &Site, made_by: super::MadeBy<'_, '_>) -> bool {
    site.rule_inputs.get(1).copied().flatten().is_some_and(|b| {
        made_by(&site.inputs[b].name, "Expand")
            .and_then(|e| e.input.get(1))
            .is_some_and(|t| made_by(t, "Shape").is_some() || made_by(t, "Concat").is_some())
    })
}

/// The one-way input alone broadcasts (Gemm's and QGemm's C, an attention bias, PRelu's slope from opset 7).
pub fn broadcasting_inputs(site: &Site) -> Vec<usize> {
    match site.kind {
        SiteKind::Gemm { legacy: false }
        | SiteKind::QGemm
        | SiteKind::AttentionBias(_)
        | SiteKind::PRelu { legacy: false } => site.rule_inputs.get(1).copied().flatten().into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Where Gemm's and QGemm's target (M, N) is read in the graph, as evaluated (transA/transB of the call inside a
/// function): M is axis `transA` of A (node input 0), N axis `1 - transB` of B (node input 1; QGemm's B is input 3).
/// `None` for the other one-way sites.
pub fn gemm_target_dims(site: &Site) -> Option<[(usize, i64); 2]> {
    let b = match site.kind {
        SiteKind::Gemm { .. } => 1,
        SiteKind::QGemm => 3,
        _ => return None,
    };
    Some([(0, i64::from(site.attrs.trans_a)), (b, i64::from(!site.attrs.trans_b))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::{AttributeProto, NodeProto};
    use crate::onnx::tensor::ValueFacts;

    fn int(name: &str, v: i64) -> AttributeProto {
        AttributeProto { name: Some(name.into()), i: Some(v), ..Default::default() }
    }

    /// Binds a node with these inputs (shapes of known sizes; `None`: absent) and attributes.
    fn bind_with(
        bind: impl Fn(&NodeView) -> Binding,
        shapes: &[Option<&[u64]>],
        attrs: Vec<AttributeProto>,
    ) -> Binding {
        let node = NodeProto {
            input: shapes
                .iter()
                .enumerate()
                .map(|(i, s)| s.map_or(Default::default(), |_| compact_str::format_compact!("x{i}")))
                .collect(),
            attribute: attrs,
            ..Default::default()
        };
        let facts: Vec<Option<ValueFacts>> =
            shapes.iter().map(|s| s.map(|d| ValueFacts::tensor(Some(1), Shape::known(d)))).collect();
        let refs: Vec<Option<&ValueFacts>> = facts.iter().map(Option::as_ref).collect();
        bind(&NodeView::new(&node.input, &refs, Attrs::new(&node, None)))
    }

    #[test]
    fn gemm_c_broadcasts_towards_m_n_after_the_transposes() {
        // A is [K, M] read transposed, B is [N, K] read transposed: (M, N) = (2, 5).
        let trans = || vec![int("transA", 1), int("transB", 1)];
        let gemm = |node: &NodeView| bind_gemm(node, false);
        let ok = bind_with(gemm, &[Some(&[3, 2]), Some(&[5, 3]), Some(&[5])], trans());
        assert_eq!((ok.rule, ok.outcome.verdict), (Rule::Unidirectional, Verdict::Broadcast));
        assert_eq!(ok.target, Some(Shape::known(&[2, 5])));
        assert_eq!(ok.rule_inputs[..], [None, Some(2)]);
        let bad = bind_with(gemm, &[Some(&[3, 2]), Some(&[5, 3]), Some(&[2])], trans());
        assert!(matches!(bad.outcome.verdict, Verdict::Violation(_)), "C [2] against (M, N) [2, 5]");
        let no_c = bind_with(gemm, &[Some(&[3, 2]), Some(&[5, 3]), None], trans());
        assert_eq!(no_c.outcome.verdict, Verdict::Same);
    }

    #[test]
    fn gemm_before_opset_7_broadcasts_only_with_broadcast_1() {
        let legacy = |node: &NodeView| bind_gemm(node, true);
        let equal = bind_with(legacy, &[Some(&[2, 3]), Some(&[3, 4]), Some(&[4])], vec![]);
        assert_eq!(equal.rule, Rule::None);
        assert!(matches!(equal.outcome.verdict, Verdict::Violation(_)));
        let allowed = bind_with(legacy, &[Some(&[2, 3]), Some(&[3, 4]), Some(&[4])], vec![int("broadcast", 1)]);
        assert_eq!((allowed.rule, allowed.outcome.verdict), (Rule::Unidirectional, Verdict::Broadcast));
    }

    #[test]
    fn prelu_6_applies_a_1d_slope_per_channel() {
        let shapes: &[Option<&[u64]>] = &[Some(&[1, 3, 4, 5]), Some(&[3])];
        let old = bind_with(|n: &NodeView| bind_prelu(n, true), shapes, vec![]);
        assert_eq!(old.outcome.verdict, Verdict::Broadcast);
        // From opset 7 the slope is right-aligned: [3] meets W = 5.
        let new = bind_with(|n: &NodeView| bind_prelu(n, false), shapes, vec![]);
        assert!(matches!(new.outcome.verdict, Verdict::Violation(_)));
        assert_eq!(
            legacy_prelu_alignment(&Shape::known(&[3]), &Shape::known(&[1, 3, 4, 5])),
            Alignment::Mapped(vec![1, 3, 1, 1])
        );
    }
}
