//! The broadcast rules of every system in the specification, as pure functions on shapes, one file per rule:
//!
//! | rule | file | ops | source |
//! | --- | --- | --- | --- |
//! | multidirectional (numpy) | [`multidirectional`](mod@multidirectional) | Add … Xor, Where, Sum/Max/Min/Mean from opset 8 | ONNX `docs/Broadcasting.md`, "Multidirectional Broadcasting"; SONNX `Broadcast`, constraint C1 |
//! | unidirectional | [`unidirectional`](mod@unidirectional), [`attention_bias`] | Gemm's C (and QGemm's, FusedGemm's), PRelu's slope, attention biases | ONNX `docs/Broadcasting.md`, "Unidirectional Broadcasting"; onnxruntime `docs/ContribOperators.md` |
//! | legacy `broadcast`/`axis` | [`legacy`] | binary ops and Gemm before opset 7 | OpenVINO broadcast rules, "PDPD broadcast" |
//! | bidirectional | [`bidirectional`](mod@bidirectional) | Expand | OpenVINO broadcast rules, "Bidirectional Broadcast" |
//! | equal shapes | [`equal_shapes`](mod@equal_shapes) | variadic ops before opset 8, `broadcast=0` | OpenVINO broadcast rules, "None broadcast" |
//!
//! Each rule answers with an [`Outcome`]: the result shape and one of three verdicts (holds, violated for a named
//! input and axis, or holds only under conditions on symbols), plus "unknown" where dims are missing. A known size
//! never silently wins over a symbol, and two different symbols are never taken to be equal.

pub mod attention_bias;
pub mod bidirectional;
pub mod equal_shapes;
pub mod legacy;
pub mod multidirectional;
pub mod ops;
pub mod ranges;
pub mod site;
pub mod unidirectional;

pub use bidirectional::bidirectional;
pub use equal_shapes::equal_shapes;
pub use legacy::legacy_axis;
pub use multidirectional::{broadcast_index, multidirectional, symbolic_broadcast};
pub use site::Site;
pub use unidirectional::unidirectional;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use compact_str::CompactString;
use smallvec::SmallVec;

use crate::onnx::attr::Attrs;
use crate::onnx::tensor::ValueFacts;
use crate::rules::ops::SiteKind;
use crate::sizes::shape::{Dim, Shape};

/// Which broadcasting system a site follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// numpy broadcasting of any number of inputs (ONNX `Add` … `Xor`, `Where`, variadic ops from opset 8).
    Multidirectional,
    /// One input broadcast towards a fixed target (Gemm's C, PRelu's slope).
    Unidirectional,
    /// The opset 1–6 `broadcast=1`/`axis` form: B is a contiguous run of A's dims starting at `axis`.
    LegacyAxis,
    /// `Expand`: numpy broadcasting of a tensor and a target shape; the result may exceed the target.
    Bidirectional,
    /// No implicit broadcast allowed: the shapes must be equal.
    None,
}

impl Rule {
    /// How a violation of this rule at `site` begins, for rule input `input`; the detail (axis, sizes) follows.
    pub fn violation_lead(self, site: &Site, input: usize) -> String {
        match self {
            Rule::Multidirectional => multidirectional::violation_lead(site),
            Rule::Unidirectional => unidirectional::violation_lead(site, input),
            Rule::LegacyAxis => legacy::violation_lead(site, input),
            Rule::Bidirectional => bidirectional::violation_lead(site),
            Rule::None => equal_shapes::violation_lead(site),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Multidirectional => "multidirectional",
            Rule::Unidirectional => "unidirectional",
            Rule::LegacyAxis => "legacy-axis",
            Rule::Bidirectional => "bidirectional",
            Rule::None => "none",
        }
    }
}

/// What a rule concluded about a set of shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub output: Shape,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every input already has the output shape.
    Same,
    /// The rule holds and at least one input is broadcast.
    Broadcast,
    /// The rule is false for one input on one axis (constraint C1 of the SONNX spec).
    Violation(Violation),
    /// The rule holds exactly when every condition holds.
    Conditional(Vec<Condition>),
    /// Missing dims keep the rule from being decided.
    Unknown,
}

impl Verdict {
    /// Which verdict this is, without its details.
    pub fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Same => VerdictKind::Same,
            Verdict::Broadcast => VerdictKind::Broadcast,
            Verdict::Violation(_) => VerdictKind::Violation,
            Verdict::Conditional(_) => VerdictKind::Conditional,
            Verdict::Unknown => VerdictKind::Unknown,
        }
    }

    pub fn as_str(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// A [`Verdict`] without its details: what summaries count and JSON reports as `verdict`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VerdictKind {
    Same,
    Broadcast,
    Violation,
    Conditional,
    Unknown,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Same => "same",
            VerdictKind::Broadcast => "broadcast",
            VerdictKind::Violation => "violation",
            VerdictKind::Conditional => "conditional",
            VerdictKind::Unknown => "unknown",
        }
    }
}

/// The input and axis for which a rule fails.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Index of the offending input among the shapes given to the rule.
    pub input: usize,
    /// The offending axis in output coordinates (in A's coordinates for the legacy rule); `None` when the problem
    /// is the rank itself.
    pub axis: Option<usize>,
    pub kind: ViolationKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ViolationKind {
    /// `found` on the offending input, where input `against` has `expected`; neither is 1 (or, for one-way rules,
    /// the broadcast input's size is not 1).
    Mismatch { found: Dim, expected: Dim, against: usize },
    /// A one-way input has more dims than its target.
    RankTooLarge { rank: usize, target_rank: usize },
    /// Equal shapes are required and the ranks differ.
    RankDiffers { rank: usize, expected: usize },
    /// The legacy `axis` is negative (other than the default -1) or B does not fit in A from it.
    AxisOutOfRange { axis: i64, len: usize, target_rank: usize },
    /// Conditions on the same symbol, from different axes, that no value satisfies.
    Unsatisfiable { symbol: Arc<str>, first: Vec<u64>, second: Vec<u64> },
}

/// A condition on symbols under which a site holds, tied to the output axis it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub axis: usize,
    pub kind: ConditionKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ConditionKind {
    /// `dim` must take one of `options` (sorted, distinct): "N ∈ {1, 3}", or "N = 3" for one option.
    OneOf { dim: Dim, options: Vec<Dim> },
    /// Every pair of these dims is equal unless one of them is 1: "M, N equal or 1".
    EqualOrOne { dims: Vec<Dim> },
    /// The dim of rule input `input` on the condition's axis is unknown (its rank is known) and must take one of
    /// `options`: an unnamed size against a fixed one is a condition like a named symbol.
    UnknownOneOf { input: usize, options: Vec<Dim> },
    /// `dim` must not exceed `bound`: a size capped as `min(c, N)` (a slice of a fixed-size buffer up to a
    /// symbolic length) meets `N` itself, and they agree exactly when `N ≤ c`.
    AtMost { dim: Dim, bound: Dim },
    /// `divisor` must divide `dim`: a size divided where the division must be exact (Reshape's -1 over `6*N`
    /// elements in rows of 4 needs "4 divides 6·N").
    Divides { divisor: Dim, dim: Dim },
    /// At least one of these holds: what an op's specification allows in several ways (onnxruntime's
    /// GroupQueryAttention: "total = past + S or total ≤ past", a dynamic or a static cache).
    AnyOf(Vec<ConditionKind>),
}

/// Conditions that must all hold, in words, grouped where a reader could group them two ways: `(h₁ = h₂ or one of
/// them is 1) and (h₃ = h₄ or one of them is 1)`, not `h₁ = h₂ or one of them is 1 and h₃ = h₄ or …`.
pub fn all_of<S: AsRef<str>>(conditions: &[S]) -> String {
    let several = conditions.len() > 1;
    let parts: Vec<String> = conditions
        .iter()
        .map(|c| c.as_ref())
        .map(|c| if several && c.contains(" or ") { format!("({c})") } else { c.to_string() })
        .collect();
    parts.join(" and ")
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ConditionKind::OneOf { dim, options } if options.len() == 1 => {
                write!(f, "{dim} = {}", options[0])
            }
            ConditionKind::OneOf { dim, options } => {
                let opts: Vec<String> = options.iter().map(Dim::to_string).collect();
                write!(f, "{dim} ∈ {{{}}}", opts.join(", "))
            }
            ConditionKind::AtMost { dim, bound } => write!(f, "{dim} ≤ {bound}"),
            // A product reads as one: `6·N`, not `6*N`.
            ConditionKind::Divides { divisor, dim } => {
                write!(f, "{} divides {}", divisor.to_string().replace('*', "·"), dim.to_string().replace('*', "·"))
            }
            ConditionKind::UnknownOneOf { input, options } => {
                let opts: Vec<String> = options.iter().map(Dim::to_string).collect();
                write!(f, "input {input}'s unknown dim on axis {} ∈ {{{}}}", self.axis, opts.join(", "))
            }
            ConditionKind::EqualOrOne { dims } => {
                let names: Vec<String> = dims.iter().map(Dim::to_string).collect();
                match names.as_slice() {
                    [a, b] => write!(f, "{a} = {b} or one of them is 1"),
                    _ => write!(f, "{} are equal wherever they are not 1", names.join(", ")),
                }
            }
            ConditionKind::AnyOf(parts) => {
                let parts: Vec<String> =
                    parts.iter().map(|kind| Condition { axis: self.axis, kind: kind.clone() }.to_string()).collect();
                f.write_str(&parts.join(" or "))
            }
        }
    }
}

/// What one axis contributes while a rule is evaluated.
pub(crate) enum AxisStatus {
    Holds,
    Unknown,
    Conditions(Vec<ConditionKind>),
}

/// Collects per-axis results into a verdict; the first violation ends evaluation.
#[derive(Default)]
pub(crate) struct Tally {
    unknown: bool,
    conditions: Vec<Condition>,
}

impl Tally {
    pub(crate) fn add(&mut self, axis: usize, status: AxisStatus) {
        match status {
            AxisStatus::Holds => {}
            AxisStatus::Unknown => self.unknown = true,
            AxisStatus::Conditions(kinds) => {
                self.conditions.extend(kinds.into_iter().map(|kind| Condition { axis, kind }))
            }
        }
    }

    /// Conditional outranks unknown: the conditions known so far are worth stating even if some axis is open.
    pub(crate) fn verdict(self, same: bool) -> Verdict {
        if !self.conditions.is_empty() {
            if let Some(v) = contradiction(&self.conditions) {
                return Verdict::Violation(v);
            }
            Verdict::Conditional(self.conditions)
        } else if self.unknown {
            Verdict::Unknown
        } else if same {
            Verdict::Same
        } else {
            Verdict::Broadcast
        }
    }
}

/// Two axes that pin the same symbol to disjoint sets of sizes make the site unsatisfiable.
fn contradiction(conditions: &[Condition]) -> Option<Violation> {
    let mut seen: BTreeMap<&Dim, (usize, Vec<u64>)> = BTreeMap::new();
    for cond in conditions {
        let ConditionKind::OneOf { dim: name, options } = &cond.kind else {
            continue;
        };
        let Some(sizes) = options.iter().map(Dim::known).collect::<Option<Vec<u64>>>() else {
            continue;
        };
        match seen.get_mut(name) {
            None => {
                seen.insert(name, (cond.axis, sizes));
            }
            Some((_, allowed)) => {
                let both: Vec<u64> = allowed.iter().copied().filter(|s| sizes.contains(s)).collect();
                if both.is_empty() {
                    return Some(Violation {
                        input: 0,
                        axis: Some(cond.axis),
                        kind: ViolationKind::Unsatisfiable {
                            symbol: Arc::from(name.to_string()),
                            first: allowed.clone(),
                            second: sizes,
                        },
                    });
                }
                *allowed = both;
            }
        }
    }
    None
}

pub(crate) fn sorted_dims(mut dims: Vec<Dim>) -> Vec<Dim> {
    dims.sort();
    dims.dedup();
    dims
}

/// A broadcasting node as its rule sees it: its input names, what is known of each input (by position in the
/// node's input list), and its attributes (resolved through a function's call site).
pub struct NodeView<'a, 'm> {
    pub inputs: &'m [CompactString],
    pub facts: &'a [Option<&'a ValueFacts>],
    pub attrs: Attrs<'m>,
    /// Positions in the node's input list of the inputs that are present (not empty names).
    present: SmallVec<[usize; 4]>,
}

/// A site's rule inputs as positions among its present inputs (`None`: the target, not an input); inline for the
/// few inputs a rule has.
pub type RuleInputs = SmallVec<[Option<usize>; 4]>;

static UNRANKED: Shape = Shape(None);

impl<'a, 'm> NodeView<'a, 'm> {
    pub fn new(inputs: &'m [CompactString], facts: &'a [Option<&'a ValueFacts>], attrs: Attrs<'m>) -> Self {
        // Most nodes have every input, and at most four: their positions are then a prefix of 0, 1, 2, 3.
        if inputs.len() <= 4 && inputs.iter().all(|name| !name.is_empty()) {
            let present = SmallVec::from_buf_and_len([0, 1, 2, 3], inputs.len());
            return NodeView { inputs, facts, attrs, present };
        }
        // Pushed one by one: collecting a filter into a SmallVec costs several times as much.
        let mut present = SmallVec::new();
        for (i, name) in inputs.iter().enumerate() {
            if !name.is_empty() {
                present.push(i);
            }
        }
        NodeView { inputs, facts, attrs, present }
    }

    /// Positions in the node's input list of the inputs that are present (not empty names).
    pub fn present(&self) -> &[usize] {
        &self.present
    }

    /// The shape of the input at `pos`: unranked when absent or unknown.
    pub fn shape(&self, pos: usize) -> &Shape {
        self.facts.get(pos).copied().flatten().map_or(&UNRANKED, |f| &f.shape)
    }

    /// The position among the present inputs of the input at `pos`.
    pub fn site_pos(&self, pos: usize) -> Option<usize> {
        self.present.iter().position(|&p| p == pos)
    }

    /// The present inputs whose positions are in `mask` (a bit per position).
    pub fn present_in(&self, mask: u64) -> SmallVec<[usize; 4]> {
        self.present.iter().copied().filter(|&p| p < 64 && mask & (1 << p) != 0).collect()
    }

    fn present_shapes(&self) -> SmallVec<[&Shape; 4]> {
        // Filled in place for the few inputs of most nodes: a push checks the capacity each time.
        if let [a, b] = self.present[..] {
            return SmallVec::from_buf_and_len([self.shape(a), self.shape(b), &UNRANKED, &UNRANKED], 2);
        }
        let mut shapes = SmallVec::new();
        for &p in &self.present {
            shapes.push(self.shape(p));
        }
        shapes
    }

    fn all_present(&self) -> RuleInputs {
        if self.present.len() <= 4 {
            return RuleInputs::from_buf_and_len([Some(0), Some(1), Some(2), Some(3)], self.present.len());
        }
        let mut all = RuleInputs::new();
        for i in 0..self.present.len() {
            all.push(Some(i));
        }
        all
    }
}

/// A node bound to its rule: the rule, its outcome, the rule's inputs as positions among the node's present inputs
/// (`None`: the target, not an input), and the target when it is not an input (Gemm's (M, N), Expand's shape).
pub struct Binding {
    pub rule: Rule,
    pub outcome: Outcome,
    pub rule_inputs: RuleInputs,
    pub target: Option<Shape>,
}

/// Binds a node of `kind` (from the op table) to its rule and judges it; each rule's file says how.
pub fn bind(kind: SiteKind, node: &NodeView) -> Binding {
    match kind {
        SiteKind::Multi => multidirectional::bind(node),
        SiteKind::EqualShapes => equal_shapes::bind(node),
        SiteKind::LegacyBinary => legacy::bind(node),
        SiteKind::Gemm { legacy } => unidirectional::bind_gemm(node, legacy),
        SiteKind::PRelu { legacy } => unidirectional::bind_prelu(node, legacy),
        SiteKind::Expand => bidirectional::bind(node),
        SiteKind::NumpyOf(mask) => multidirectional::bind_subset(node, mask),
        SiteKind::QGemm => unidirectional::bind_gemm_at(node, false, [0, 3, 6]),
        SiteKind::AttentionBias(attn) => attention_bias::bind(node, attn),
        SiteKind::BiasAdd => multidirectional::bind_subset(node, 0b111),
    }
}

/// How an input's dims line up with the output's when a rewrite makes its broadcast explicit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Alignment {
    /// numpy: right-aligned.
    Numpy,
    /// Reshape to these dims first (legacy `axis` forms, per-channel PRelu), then broadcast numpy-style.
    Mapped(Vec<u64>),
}

/// An input a rewrite of the site makes explicit: its position in [`Site::inputs`] and its alignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RewriteOperand {
    pub input: usize,
    pub alignment: Alignment,
}

/// A broadcast a rule could make explicit but whose op would then refuse its inputs: the rewrite is left undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteRefusal {
    /// onnxruntime's BiasAdd kernel takes its bias only as (C) and its skip as (N, S, C).
    BiasAddKernel,
}

impl fmt::Display for RewriteRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteRefusal::BiasAddKernel => f.write_str(
                "onnxruntime's BiasAdd takes its bias only as (C) and its skip as (N, S, C) (docs/ContribOperators.md, \
                 \"com.microsoft.BiasAdd\"): the bias's broadcast is the op's own, and a bias made explicit would be \
                 refused by its kernel",
            ),
        }
    }
}

/// The node that makes a value, when it is a default-domain node of this op (`made_by(value, "Expand")`).
pub type MadeBy<'a, 'm> = &'a dyn Fn(&str, &str) -> Option<&'m crate::onnx::pb::NodeProto>;

impl Rule {
    /// Whether a rewrite can make this rule's broadcast explicit: not Expand's (explicit already) nor that of the
    /// equal-shapes rule (which allows none).
    pub fn rewritable(self) -> bool {
        matches!(self, Rule::Multidirectional | Rule::Unidirectional | Rule::LegacyAxis)
    }

    /// Why a rewrite of `site` is refused though its rule is rewritable, if it is.
    pub fn rewrite_refusal(self, site: &Site) -> Option<RewriteRefusal> {
        (site.kind == SiteKind::BiasAdd).then_some(RewriteRefusal::BiasAddKernel)
    }

    /// Whether `site`, its shapes undecided, already has the form a rewrite gives it, so that a second `expand`
    /// does not wrap the explicit broadcasts of the first again.
    pub fn already_explicit(self, site: &Site, made_by: MadeBy<'_, '_>) -> bool {
        match self {
            Rule::Multidirectional => multidirectional::already_explicit(site, made_by),
            Rule::Unidirectional => unidirectional::already_explicit(site, made_by),
            _ => false,
        }
    }

    /// The positions among `site`'s inputs that its rule broadcasts by itself: the inverse of
    /// [`Rule::rewrite_operands`], which `fold` uses (an explicit broadcast removed may feed only these).
    pub fn broadcasting_inputs(self, site: &Site) -> Vec<usize> {
        match self {
            Rule::Multidirectional => multidirectional::broadcasting_inputs(site),
            Rule::Unidirectional => unidirectional::broadcasting_inputs(site),
            Rule::Bidirectional => bidirectional::broadcasting_inputs(site),
            Rule::LegacyAxis | Rule::None => Vec::new(),
        }
    }
}

impl Rule {
    /// The inputs a rewrite of `site` broadcasts explicitly (those not provably of the output's shape already);
    /// none for the rules whose broadcast is explicit (Expand) or not allowed (equal shapes).
    pub fn rewrite_operands(self, site: &Site) -> RewriteOperands {
        match self {
            Rule::Multidirectional => multidirectional::rewrite_operands(site),
            Rule::Unidirectional => unidirectional::rewrite_operands(site),
            Rule::LegacyAxis => legacy::rewrite_operands(site),
            Rule::Bidirectional | Rule::None => RewriteOperands::new(),
        }
    }
}

/// The inputs a rewrite broadcasts explicitly: one or two for nearly every site, held inline (`expand` asks for them
/// at every site it plans).
pub type RewriteOperands = SmallVec<[RewriteOperand; 2]>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28: two conditions that each hold one way or another read with explicit grouping.
    #[test]
    fn conditions_with_an_or_are_grouped_when_there_are_several() {
        let a = "h₁ = h₂ or one of them is 1";
        let b = "h₃ = h₄ or one of them is 1";
        assert_eq!(all_of(&[a, b]), format!("({a}) and ({b})"));
        assert_eq!(all_of(&[a]), a);
        assert_eq!(all_of(&["N ∈ {1, 3}", a]), format!("N ∈ {{1, 3}} and ({a})"));
        assert_eq!(all_of(&["N ∈ {1, 3}", "seq ≤ 64"]), "N ∈ {1, 3} and seq ≤ 64");
    }
}
