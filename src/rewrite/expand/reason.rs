//! Why `expand` leaves a site as it is: one typed reason per case, as `fold`'s `KeptReason`, worded in one place.
//! The words are what `expand` prints and what its JSON's `left[].reason` holds; [`LeftReason::kind`] is the
//! JSON's `left[].kind`.

use std::fmt;

use crate::rules::RewriteRefusal;
use crate::sizes::shape::Shape;
use crate::sys::escape::name as shown;

/// Why a site is left as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftKind {
    /// It breaks its broadcasting rule (or its inputs' element types differ): the model needs fixing first.
    BreaksRule,
    /// Its shapes are not known well enough to decide whether it broadcasts: a rewrite would turn one undecided
    /// site into several, so it stays as it is (`check --strict` reports it as `undecided-broadcast`).
    Undecided,
    /// It broadcasts, and no op of the model's opset makes that explicit faithfully (or a function's calls need
    /// different rewrites of its one body).
    NoFaithfulRewrite,
}

impl LeftKind {
    /// The kind's name, for JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LeftKind::BreaksRule => "breaks-rule",
            LeftKind::Undecided => "undecided",
            LeftKind::NoFaithfulRewrite => "no-faithful-rewrite",
        }
    }

    /// Whether a site left for this reason is a finding, as `check` judges at its default level: an undecided
    /// site is one only under `--strict`, so `expand` leaving one still did its job.
    pub fn is_finding(self) -> bool {
        !matches!(self, LeftKind::Undecided)
    }
}

/// Why one site is left, with what its words need. Names are the model's, shown escaped.
#[derive(Clone, Debug, PartialEq)]
pub enum LeftReason {
    /// The site breaks its rule (or its inputs' element types differ).
    BreaksRule,
    /// The site fails somewhere within `--range` (the decision in words) and needs these conditions.
    FailsWithinRanges { failing: String, needs: Vec<String> },
    /// Its shapes are undecided (these parts unknown).
    Undecided { unknown: String },
    /// Its rule's op would refuse the explicit form.
    Refused(RewriteRefusal),
    /// Inside a subgraph or function below opset 9, where `Constant` holds no int64 shape.
    NoShapeConstantInBody { opset: i64 },
    /// A function's calls read different attributes at these nodes: one rewrite of the shared body fits not both.
    CallsDisagree { first: String, other: String },
    /// Below opset 6, `Reshape` and `Tile` take their shapes as attributes.
    NoShapeInputs { opset: i64 },
    /// Below opset 8 (no `Expand`) an input's shape must be static for `Reshape` + `Tile`.
    NoStaticInputShape { input: String },
    /// Below opset 8 the output shape must be static.
    NoExpand { opset: i64, output: Shape },
    /// The legacy `axis` form is made explicit only at static shapes.
    LegacyAxisNeedsStaticShapes,
    /// An attention bias's scores length T is worked out inside the op: no value of the graph holds it.
    ScoresLengthInsideTheOp { scores: Shape },
}

impl LeftReason {
    pub fn kind(&self) -> LeftKind {
        match self {
            LeftReason::BreaksRule | LeftReason::FailsWithinRanges { .. } => LeftKind::BreaksRule,
            LeftReason::Undecided { .. } => LeftKind::Undecided,
            _ => LeftKind::NoFaithfulRewrite,
        }
    }
}

impl fmt::Display for LeftReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeftReason::BreaksRule => {
                f.write_str("the site breaks its broadcasting rule; fix the model first (see `onnx-bcast check`)")
            }
            LeftReason::FailsWithinRanges { failing, needs } => write!(
                f,
                "{failing} within the ranges (it needs {}); fix the model or narrow the ranges",
                needs.join(" and ")
            ),
            LeftReason::Undecided { unknown } => {
                write!(f, "undecided ({unknown} unknown): left as it is, since a rewrite would add undecided sites")
            }
            LeftReason::Refused(refusal) => refusal.fmt(f),
            LeftReason::NoShapeConstantInBody { opset } => write!(
                f,
                "no faithful rewrite inside a subgraph or function at opset {opset}: Constant holds int64 shapes only \
                 from opset 9"
            ),
            LeftReason::CallsDisagree { first, other } => write!(
                f,
                "the calls at {} and {} give the function's node different transA/transB/axis: no one rewrite of the \
                 shared body fits both",
                shown(first),
                shown(other)
            ),
            LeftReason::NoShapeInputs { opset } => write!(
                f,
                "no faithful rewrite at opset {opset}: Reshape and Tile take their shapes as inputs only from opset 6"
            ),
            LeftReason::NoStaticInputShape { input } => {
                write!(f, "input {} has no static shape, which Reshape and Tile need below opset 8", shown(input))
            }
            LeftReason::NoExpand { opset, output } => write!(
                f,
                "no faithful rewrite at opset {opset}: the output shape {output} is not static and Expand needs opset 8"
            ),
            LeftReason::LegacyAxisNeedsStaticShapes => {
                f.write_str("the legacy axis form needs static shapes to be made explicit")
            }
            LeftReason::ScoresLengthInsideTheOp { scores } => write!(
                f,
                "the attention bias broadcasts towards the scores (B, N, S, T) {scores}, whose total length T the op \
                 works out inside itself from a past or a packed input: no value of the graph holds it to Expand to"
            ),
        }
    }
}
