//! What an op's specification requires of its inputs, as inference finds it: broken (a contradiction: no input of
//! these shapes and types lets the op run), or holding only if some symbols take certain sizes (`K = 768`,
//! `4 divides 6*N`).
//!
//! How an op's rule reports one (every op family uses the same few calls on its [`Ctx`]):
//! - [`Ctx::require_equal`] for two sizes the specification says are equal (MatMul's inner sizes, Concat's other
//!   axes): two different known sizes are a contradiction, a named symbol against another size a condition, and an
//!   unknown size or one inference made up (`?3`) says nothing;
//! - [`Ctx::divide`] wherever a size is divided (Reshape's `-1`, equal Split parts, DepthToSpace's channels): it
//!   gives the quotient only where the division is exact, else reports it and gives a size nothing names;
//! - [`Ctx::report`] for anything else, with a [`Detail`] that says what is wrong.
//!
//! A rule goes on computing its outputs as best it can after a report: when a contradiction is certain, the analysis
//! replaces them by facts that say only that they follow a contradiction
//! ([`crate::onnx::tensor::ValueFacts::contradicted`]), so nothing is derived through it, and `check` reports it
//! (`shape-contradiction`, `inexact-division`, `type-mismatch`, or `conditional-shape` for the conditional ones).

use super::Ctx;
use crate::diagnostic::Code;
use crate::onnx::tensor::IntValue;
use crate::rules::{Condition, ConditionKind};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::{memo, Poly};

/// An input of the node as a finding names it: its name, shape, and contents when it is a small integer tensor (a
/// Reshape target reads better as `target = [4, -1]` than as its shape `[2]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Operand {
    pub name: String,
    pub shape: Shape,
    pub value: Option<Vec<IntValue>>,
}

/// What an op's specification requires that a [`Contradiction`] breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// MatMul, Gemm: the inner sizes of the product are equal.
    InnerSizes,
    /// MatMul: the batch dims broadcast.
    BatchDims,
    /// Concat: one rank, and equal sizes off the axis.
    ConcatSizes,
    /// Reshape: the element count is kept; the target has at most one -1, no other negative entry.
    ElementCount,
    /// Split: the sizes add up to the axis, one per output.
    SplitSizes,
    /// Conv and its kin: input channels are the weights' channels times `group`, bias one per output channel.
    Channels,
    /// Conv, pooling: the dilated kernel fits in the padded input.
    KernelFits,
    /// An input of the rank the op works on.
    Rank,
    /// An axis (attribute or constant input) within the rank.
    AxisInRange,
    /// Constant indices within the axis they index (Gather, GatherElements).
    IndexInRange,
    /// Normalizations: scale, bias, mean and variance of the normalized shape or channel count.
    ParameterShape,
    /// Einsum: an equation that fits the operands, one size per label.
    EinsumEquation,
    /// A size divided where the division must be exact.
    ExactDivision,
    /// Inputs that share a type variable have one element type.
    SameType,
    /// Transpose: `perm` is a permutation of the axes.
    Permutation,
    /// Squeeze: a squeezed dim is 1.
    SqueezeOne,
    /// A per-axis list (pads, repeats, starts and ends, kernel attributes) has the length the rank calls for.
    ListLength,
    /// Sizes the op's other inputs or attributes call for: SwiGLU's one shape, attention's heads and lengths, a
    /// loss's classes, DFT's real or complex last axis, indices that fit the data they index.
    OperandSizes,
    /// Window attributes: strides, dilations and kernel sizes positive, pads and output padding not negative.
    WindowAttributes,
}

impl Requirement {
    /// The requirement in words, as a conditional finding states it.
    pub fn what(self) -> &'static str {
        match self {
            Requirement::InnerSizes => "the inner sizes of the product are equal",
            Requirement::BatchDims => "the batch dims broadcast",
            Requirement::ConcatSizes => "the inputs agree off the concatenation axis",
            Requirement::ElementCount => "the element count is kept",
            Requirement::SplitSizes => "the parts fill the axis",
            Requirement::Channels => "the channels match",
            Requirement::KernelFits => "the kernel fits in the padded input",
            Requirement::Rank => "the ranks are as the op requires",
            Requirement::AxisInRange => "the axes are within the rank",
            Requirement::IndexInRange => "the indices are within their axis",
            Requirement::ParameterShape => "the parameters fit the normalized shape",
            Requirement::EinsumEquation => "the equation fits the operands",
            Requirement::ExactDivision => "the division is exact",
            Requirement::SameType => "the inputs share one element type",
            Requirement::Permutation => "perm is a permutation of the axes",
            Requirement::SqueezeOne => "the squeezed dims are 1",
            Requirement::ListLength => "the per-axis lists fit the rank",
            Requirement::OperandSizes => "the inputs have the sizes the op requires",
            Requirement::WindowAttributes => "the window attributes are in range",
        }
    }

    /// The requirement broken, as a violation states it.
    pub fn broken(self) -> &'static str {
        match self {
            Requirement::InnerSizes => "the inner sizes of the product differ",
            Requirement::BatchDims => "the batch dims do not broadcast",
            Requirement::ConcatSizes => "the inputs differ off the concatenation axis",
            Requirement::ElementCount => "the element count changes",
            Requirement::SplitSizes => "the parts do not fill the axis",
            Requirement::Channels => "the channels do not match",
            Requirement::KernelFits => "the kernel is larger than the padded input",
            Requirement::Rank => "a rank is not the one the op requires",
            Requirement::AxisInRange => "an axis is out of range",
            Requirement::IndexInRange => "an index is out of range",
            Requirement::ParameterShape => "a parameter does not fit the normalized shape",
            Requirement::EinsumEquation => "the equation does not fit the operands",
            Requirement::ExactDivision => "a size does not divide exactly",
            Requirement::SameType => "the element types differ",
            Requirement::Permutation => "perm is not a permutation of the axes",
            Requirement::SqueezeOne => "a squeezed dim is not 1",
            Requirement::ListLength => "a per-axis list does not fit the rank",
            Requirement::OperandSizes => "an input's size is not one the op allows",
            Requirement::WindowAttributes => "a window attribute is out of range",
        }
    }
}

/// One size of one input: its position in the node's input list, its axis, and the size.
#[derive(Clone, Debug, PartialEq)]
pub struct At {
    pub input: usize,
    pub axis: usize,
    pub dim: Dim,
}

impl At {
    pub fn new(input: usize, axis: usize, dim: Dim) -> At {
        At { input, axis, dim }
    }
}

/// Where a size the op calls for comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Whence {
    /// The sizes given to Split add up to it.
    SplitSizes,
    /// The weights' channels times `group` (a Conv's input channels).
    WeightChannels { group: i64 },
    /// The op's attributes or other inputs call for it.
    Required,
}

/// What a rank must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankNeed {
    Exactly(usize),
    AtLeast(usize),
    /// The rank of another input.
    Of(usize),
}

/// An attribute or input whose contents break the op's rules on their own.
#[derive(Clone, Debug, PartialEq)]
pub enum Malformed {
    /// Transpose's `perm` (given) is not a permutation of `0..rank`.
    NotAPermutation { perm: Vec<i64>, rank: usize },
    /// A Reshape target with more than one -1.
    SeveralInferred,
    /// A Reshape target entry below -1.
    NegativeEntry(i64),
    /// A Reshape target's 0 (copy the input's size) at `index`, past the input's rank.
    CopiesNoDim { index: usize, rank: usize },
    /// An axis named twice.
    RepeatedAxis(i64),
    /// Slice's step 0.
    ZeroStep,
    /// Split from opset 18 with neither a `split` input nor `num_outputs`.
    NoSplit,
    /// A list (attribute or input, by name) whose length is not the one the op calls for.
    Length { list: &'static str, len: usize, expected: usize },
    /// Einsum: `terms` operand terms for `inputs` inputs.
    TermCount { terms: usize, inputs: usize },
    /// Einsum: term `input` names `labels` dims of an input of rank `rank`.
    LabelCount { input: usize, labels: usize, rank: usize },
    /// Einsum: an output label no operand has.
    UnknownLabel(char),
    /// Einsum: a label that takes two different sizes.
    LabelSizes { label: char, a: At, b: At },
    /// Einsum: the ellipses of two operands stand for different numbers of dims.
    EllipsisDims { a: (usize, usize), b: (usize, usize) },
    /// A list (attribute, by name) with an entry below `least`, which the op does not allow.
    Below { list: &'static str, value: i64, least: i64 },
    /// Conv, ConvTranspose: `pads` given with an `auto_pad` other than NOTSET.
    PadsWithAutoPad,
}

/// What is wrong, with the sizes that say it.
#[derive(Clone, Debug, PartialEq)]
pub enum Detail {
    /// Two sizes that must be equal differ.
    Differ {
        a: At,
        b: At,
    },
    /// Input `at` has a size where one of `options` is called for.
    NoneOf {
        at: At,
        options: Vec<Dim>,
    },
    /// Input `at` has a size where `expected` is called for.
    Expected {
        at: At,
        expected: Dim,
        whence: Whence,
    },
    /// Reshape: `elements` cannot take the shape `target`, which holds `holds`.
    ElementCount {
        elements: Dim,
        target: Shape,
        holds: Dim,
    },
    Rank {
        input: usize,
        rank: usize,
        need: RankNeed,
    },
    /// An axis outside `-rank..rank` (`..=rank` for an insertion point, which `rank` then counts).
    AxisOutOfRange {
        axis: i64,
        rank: usize,
    },
    /// A constant index of input `input` outside `-size..size`.
    IndexOutOfRange {
        input: usize,
        index: i64,
        size: Dim,
    },
    /// `dim` is not a multiple of `divisor`.
    NotDivisible {
        dim: Dim,
        divisor: Dim,
    },
    /// A window (a dilated kernel) that spans `span` where input `at`, padded by `pads`, is smaller.
    Kernel {
        at: At,
        span: Dim,
        pads: (i64, i64),
    },
    /// Input `input` asks for `count` elements of an axis of `size` (TopK's k).
    TooMany {
        input: usize,
        count: i64,
        size: Dim,
    },
    /// Input `input` has element type `found` where input `against` has `expected`.
    Type {
        input: usize,
        found: i32,
        against: usize,
        expected: i32,
    },
    Malformed(Malformed),
    /// A condition on sizes the op requires ([`Ctx::require_condition`]), false at the sizes the inputs have.
    Unmet(Condition),
}

/// Broken for every size, or only unless conditions hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Violated(Detail),
    /// Holds exactly when every condition holds (on named symbols only).
    Conditional(Vec<Condition>),
}

/// A requirement of the op's specification that the inputs break, or meet only under conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct Contradiction {
    pub requirement: Requirement,
    /// The inputs concerned, by position in the node's input list: the finding names them with their shapes.
    pub inputs: Vec<usize>,
    pub verdict: Verdict,
}

impl Contradiction {
    pub fn violated(requirement: Requirement, inputs: Vec<usize>, detail: Detail) -> Contradiction {
        Contradiction { requirement, inputs, verdict: Verdict::Violated(detail) }
    }

    /// Whether no input of these shapes and types lets the op run.
    pub fn is_certain(&self) -> bool {
        matches!(self.verdict, Verdict::Violated(_))
    }

    /// The conditions it holds under (none when it is violated).
    pub fn conditions(&self) -> &[Condition] {
        match &self.verdict {
            Verdict::Conditional(conditions) => conditions,
            Verdict::Violated(_) => &[],
        }
    }

    /// The finding's code.
    pub fn code(&self) -> Code {
        match &self.verdict {
            Verdict::Conditional(_) => Code::ConditionalShape,
            Verdict::Violated(Detail::NotDivisible { .. }) => Code::InexactDivision,
            Verdict::Violated(Detail::Type { .. }) => Code::TypeMismatch,
            Verdict::Violated(_) => Code::ShapeContradiction,
        }
    }
}

/// The condition that two sizes (neither known, or one known) are equal, in its simplest exact form: the known
/// size is what the other must be (`K = 768`); a size capped as `min(c, N)` meets `N` itself exactly when `N ≤ c`;
/// a factor common to every coefficient cancels (`576*seq = 576*batch*seq` is `seq = batch*seq`). Symbols never
/// cancel: a size may be 0.
pub(crate) fn equal_condition(a: &Dim, b: &Dim) -> ConditionKind {
    let (dim, other) = if b.known().is_some() { (a, b) } else { (b, a) };
    if other.known().is_some() {
        return ConditionKind::OneOf { dim: dim.clone(), options: vec![other.clone()] };
    }
    for (x, y) in [(a, b), (b, a)] {
        let capped = x.to_poly().and_then(|p| p.min_args().map(<[_]>::to_vec));
        if let (Some([first, second]), Some(plain)) = (capped.as_deref(), y.to_poly()) {
            let bound = match (first.as_constant(), second.as_constant()) {
                (Some(c), None) if *second == plain => Some(c),
                (None, Some(c)) if *first == plain => Some(c),
                _ => None,
            };
            if let Some(c) = bound.and_then(|c| u64::try_from(c).ok()) {
                return ConditionKind::AtMost { dim: y.clone(), bound: Dim::Known(c) };
            }
        }
    }
    let reduced = a.to_poly().zip(b.to_poly()).and_then(|(p, q)| {
        let g = gcd(p.content(), q.content());
        (g > 1).then(|| Some((Dim::from_poly(p.div_floor(g)?), Dim::from_poly(q.div_floor(g)?)))).flatten()
    });
    let (x, y) = reduced.unwrap_or_else(|| (a.clone(), b.clone()));
    ConditionKind::OneOf { dim: x, options: vec![y] }
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(1)
}

/// Whether a size can stand in a condition: a named symbol or an expression over named symbols. A size nothing
/// names (unknown, or a symbol inference made up) says nothing: any condition on it would be on an unknown.
fn nameable(d: &Dim) -> bool {
    !d.mentions_fresh()
}

/// `n / d` when the division is exact. Two sizes are divided in integers; any other quotient is worked out once per
/// thread for each pair (every layer of a transformer reshapes `B*S*768` by `B*S*12` again), by the algebra's
/// floor division checked by multiplying back.
fn exact_quotient(n: Poly, d: Poly) -> Option<Poly> {
    if let (Some(a), Some(b)) = (n.as_constant(), d.as_constant()) {
        if a >= 0 && b > 0 {
            return (a % b == 0).then(|| Poly::constant(a / b));
        }
    }
    thread_local! {
        static QUOTIENTS: memo::Table<(Poly, Poly), Option<Poly>> = Default::default();
    }
    memo::remembered(&QUOTIENTS, (n, d), |(n, d)| n.div_poly(d).filter(|q| q.mul(d).as_ref() == Some(n)))
}

impl Ctx<'_, '_> {
    /// Records what the op's specification requires and these inputs break (see the module's documentation).
    pub fn report(&self, contradiction: Contradiction) {
        self.contradictions.borrow_mut().push(contradiction);
    }

    /// Whether a contradiction this node cannot run with has been reported.
    pub fn contradicted(&self) -> bool {
        self.contradictions.borrow().iter().any(Contradiction::is_certain)
    }

    /// Requires two sizes to be equal: the size they share (the known or the named one, under a condition), or
    /// `None` after a contradiction or when either is unknown.
    pub fn require_equal(&self, requirement: Requirement, a: At, b: At) -> Option<Dim> {
        if a.dim.provably_eq(&b.dim) {
            return Some(a.dim);
        }
        let inputs = if a.input == b.input { vec![a.input] } else { vec![a.input, b.input] };
        match (a.dim.known(), b.dim.known()) {
            (Some(_), Some(_)) => {
                self.report(Contradiction::violated(requirement, inputs, Detail::Differ { a, b }));
                None
            }
            _ if !nameable(&a.dim) || !nameable(&b.dim) => None,
            _ => {
                // A known size is what the symbol must be, and what the op goes on with.
                let agreed = if a.dim.known().is_some() { a.dim.clone() } else { b.dim.clone() };
                let condition = Condition { axis: a.axis, kind: equal_condition(&a.dim, &b.dim) };
                self.report(Contradiction { requirement, inputs, verdict: Verdict::Conditional(vec![condition]) });
                Some(agreed)
            }
        }
    }

    /// `dividend / divisor` where `requirement` calls for an exact division: the quotient when it is exact; a
    /// contradiction (`inexact-division`) when both are known and it is not; a condition (`4 divides 6*N`) when
    /// symbols decide it, with a size nothing names as the quotient. `axis` is where the quotient goes.
    pub fn divide(
        &mut self,
        requirement: Requirement,
        inputs: Vec<usize>,
        axis: usize,
        dividend: &Dim,
        divisor: &Dim,
    ) -> Dim {
        let (Some(n), Some(d)) = (dividend.to_poly(), divisor.to_poly()) else { return Dim::Unknown };
        if d.as_constant() == Some(0) {
            return Dim::Unknown;
        }
        if let Some(q) = exact_quotient(n.clone(), d.clone()) {
            return Dim::from_poly(q);
        }
        if n.as_constant().is_some() && d.as_constant().is_some() {
            let detail = Detail::NotDivisible { dim: dividend.clone(), divisor: divisor.clone() };
            self.report(Contradiction::violated(requirement, inputs, detail));
            return Dim::Unknown;
        }
        if nameable(dividend) && nameable(divisor) {
            let kind = ConditionKind::Divides { divisor: divisor.clone(), dim: dividend.clone() };
            let verdict = Verdict::Conditional(vec![Condition { axis, kind }]);
            self.report(Contradiction { requirement, inputs, verdict });
        }
        self.fresh()
    }

    /// Requires `axis` within the rank (`-rank..rank`): the axis in `0..rank`, or a contradiction on `inputs`.
    pub fn require_axis(&self, inputs: Vec<usize>, axis: i64, rank: usize) -> Option<usize> {
        let found = super::normalize_axis(axis, rank);
        if found.is_none() {
            let detail = Detail::AxisOutOfRange { axis, rank };
            self.report(Contradiction::violated(Requirement::AxisInRange, inputs, detail));
        }
        found
    }

    /// Requires the size at `at` to be `expected` (which the op's attributes or other inputs call for, as `whence`
    /// says), as [`Ctx::require_equal`] does for two input sizes.
    pub fn require_size(&self, requirement: Requirement, inputs: Vec<usize>, at: At, expected: Dim, whence: Whence) {
        if at.dim.provably_eq(&expected) {
            return;
        }
        let verdict = match (at.dim.known(), expected.known()) {
            (Some(_), Some(_)) => Verdict::Violated(Detail::Expected { at, expected, whence }),
            _ if !nameable(&at.dim) || !nameable(&expected) => return,
            _ => Verdict::Conditional(vec![Condition { axis: at.axis, kind: equal_condition(&at.dim, &expected) }]),
        };
        self.report(Contradiction { requirement, inputs, verdict });
    }

    /// Requires the size at `at` to be one of `options` (all known: a contradiction when it is none of them; a
    /// named size: the condition that it is one of them).
    pub fn require_one_of(&self, requirement: Requirement, inputs: Vec<usize>, at: At, options: Vec<Dim>) {
        if options.iter().any(|o| at.dim.provably_eq(o)) || !options.iter().all(nameable) || !nameable(&at.dim) {
            return;
        }
        let verdict = if at.dim.known().is_some() && options.iter().all(|o| o.known().is_some()) {
            Verdict::Violated(Detail::NoneOf { at, options })
        } else {
            let kind = ConditionKind::OneOf { dim: at.dim.clone(), options };
            Verdict::Conditional(vec![Condition { axis: at.axis, kind }])
        };
        self.report(Contradiction { requirement, inputs, verdict });
    }

    /// Requires axes (of an attribute or a constant input) within the rank (`-rank..rank`) and none named twice:
    /// the axes in `0..rank`, or `None` after a contradiction.
    pub fn require_axes(&self, inputs: Vec<usize>, axes: &[i64], rank: usize) -> Option<Vec<usize>> {
        let mut out: Vec<usize> = Vec::with_capacity(axes.len());
        for &a in axes {
            let axis = self.require_axis(inputs.clone(), a, rank)?;
            if out.contains(&axis) {
                let detail = Detail::Malformed(Malformed::RepeatedAxis(a));
                self.report(Contradiction::violated(Requirement::AxisInRange, inputs, detail));
                return None;
            }
            out.push(axis);
        }
        Some(out)
    }

    /// Requires input `input` to have a rank as `need` says (when its rank is known); whether it has.
    pub fn require_rank(&self, input: usize, need: RankNeed) -> bool {
        let Some(rank) = self.rank(input) else { return true };
        let ok = match need {
            RankNeed::Exactly(r) => rank == r,
            RankNeed::AtLeast(r) => rank >= r,
            RankNeed::Of(other) => self.rank(other).is_none_or(|r| r == rank),
        };
        if !ok {
            let inputs = match need {
                RankNeed::Of(other) => vec![input, other],
                _ => vec![input],
            };
            let detail = Detail::Rank { input, rank, need };
            self.report(Contradiction::violated(Requirement::Rank, inputs, detail));
        }
        ok
    }

    /// Requires the inputs at `positions` (those present and typed) to share one element type.
    pub fn require_same_type(&self, positions: &[usize]) {
        let mut first: Option<(usize, i32)> = None;
        for &i in positions {
            let Some(elem) = self.elem(i) else { continue };
            match first {
                None => first = Some((i, elem)),
                Some((against, expected)) if expected != elem => {
                    let detail = Detail::Type { input: i, found: elem, against, expected };
                    self.report(Contradiction::violated(Requirement::SameType, vec![against, i], detail));
                    return;
                }
                Some(_) => {}
            }
        }
    }
}
