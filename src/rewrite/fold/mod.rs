//! `fold`: the inverse of `expand`. An explicit broadcast (`Expand`, a `Tile` of size-1 axes, a `Mul` by ones, an
//! `Add` of zeros, a `Where` on a constant condition) is removed when each of its consumers broadcasts its source
//! anyway under the consumer's own rule, with provably the same output shape; the consumers then read the source.
//!
//! The proof works on the analysis' shapes, symbols included: an equality counts only where it is proved (two
//! different symbols are never equal, a known size never wins over a symbol). A broadcast that would need a
//! condition on sizes, that feeds an op that does not broadcast, or whose output leaves its graph is kept, and
//! [`Kept`] says why. Shape computations that fed only removed broadcasts go with them (and their initializers and
//! `value_info`), so `fold` undoes `expand`. Like `expand`, the plan is an edit spliced into the original bytes:
//! what is not touched stays byte for byte, and a model with nothing to fold comes out byte-identical.
//!
//! The parts: `forms` finds the candidates, `proof` judges a consumer, `plan` iterates to a fixed point per graph
//! body (a removal can free another: `expand`'s `y' = Expand(y, Shape(x'))` must go before `x'`), `body` knows who
//! reads what, and `materialized` (with `--materialized`) shrinks constants written out expanded.

mod body;
mod forms;
mod materialized;
mod plan;
mod proof;

use std::fmt;

use crate::analysis::Site;
use crate::onnx::model::Model;
use crate::onnx::wire::{self, ModelEdit, Pieces};
use crate::rules::Condition;
use crate::sizes::shape::Shape;

/// What `fold` may do besides removing explicit broadcasts.
#[derive(Clone, Copy, Debug, Default)]
pub struct FoldOptions {
    /// Also write a constant that is an expanded copy of a smaller one (all rows equal along some axes) back in
    /// its small form, when each of its readers broadcasts it anyway: undoes `expand --materialize-constants`.
    pub materialized: bool,
}

/// Which explicit broadcast a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Expand,
    /// `Tile` whose repeats are 1 wherever the input's size is not 1.
    Tile,
    /// `Unsqueeze` or `Reshape` that only puts size-1 axes in front (numpy does so by itself).
    Unsqueeze,
    /// `Mul` by a constant of ones.
    MulOnes,
    /// `Add` of a constant of zeros.
    AddZeros,
    /// `Where` on a constant condition that picks one input everywhere.
    WhereConstant,
    /// A constant written out at a broadcast shape (`--materialized`).
    Materialized,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Expand => "expand",
            Form::Tile => "tile",
            Form::Unsqueeze => "unsqueeze",
            Form::MulOnes => "mul-ones",
            Form::AddZeros => "add-zeros",
            Form::WhereConstant => "where-constant",
            Form::Materialized => "materialized",
        }
    }
}

/// Why an explicit broadcast is kept.
#[derive(Clone, Debug, PartialEq)]
pub enum KeptReason {
    /// Its output is an output of its graph.
    GraphOutput,
    /// A nested graph (an `If`/`Loop`/`Scan` body) reads its output.
    ReadInSubgraph,
    /// Nothing reads its output: there is no consumer to fold it into.
    Unused,
    /// The broadcast itself is not proved to hold (its verdict is conditional, unknown or a violation): removing
    /// it could make a failing model run.
    BroadcastUndecided,
    /// The broadcast itself holds only under conditions on sizes (`N ∈ {1, 2}`): removing it is no safer.
    BroadcastConditional { conditions: Vec<Condition> },
    /// A consumer reads it at an input its rule does not broadcast (or does not broadcast at all, or not by
    /// itself: the opset 1–6 and equal-shape forms). `input` is the position among the consumer's present inputs.
    NotBroadcastingConsumer { node: String, op: String, input: usize },
    /// A consumer that is not a broadcasting op at all.
    OtherConsumer { node: String, op: String },
    /// The consumer would hold only under conditions on symbols.
    ConsumerConditional { node: String, op: String, conditions: Vec<Condition> },
    /// The shapes are not known well enough to decide the consumer.
    ConsumerUnknown { node: String, op: String },
    /// The consumer would break its rule.
    ConsumerViolation { node: String, op: String },
    /// The consumer's output shape would not provably stay the same: the broadcast gives it its shape.
    OutputChanges { node: String, op: String, from: Shape, to: Shape },
    /// A function body's consumer was evaluated at a call where the broadcast was not.
    NoEvaluation { node: String, op: String },
}

impl KeptReason {
    /// The reason's kind, for JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            KeptReason::GraphOutput => "graph-output",
            KeptReason::ReadInSubgraph => "read-in-subgraph",
            KeptReason::Unused => "unused",
            KeptReason::BroadcastUndecided => "broadcast-undecided",
            KeptReason::BroadcastConditional { .. } => "broadcast-conditional",
            KeptReason::NotBroadcastingConsumer { .. } => "not-broadcasting-input",
            KeptReason::OtherConsumer { .. } => "other-consumer",
            KeptReason::ConsumerConditional { .. } => "consumer-conditional",
            KeptReason::ConsumerUnknown { .. } => "consumer-unknown",
            KeptReason::ConsumerViolation { .. } => "consumer-violation",
            KeptReason::OutputChanges { .. } => "output-changes",
            KeptReason::NoEvaluation { .. } => "no-evaluation",
        }
    }

    /// The consumer the reason is about, if any.
    pub fn consumer(&self) -> Option<(&str, &str)> {
        match self {
            KeptReason::NotBroadcastingConsumer { node, op, .. }
            | KeptReason::OtherConsumer { node, op }
            | KeptReason::ConsumerConditional { node, op, .. }
            | KeptReason::ConsumerUnknown { node, op }
            | KeptReason::ConsumerViolation { node, op }
            | KeptReason::OutputChanges { node, op, .. }
            | KeptReason::NoEvaluation { node, op } => Some((node, op)),
            _ => None,
        }
    }
}

impl fmt::Display for KeptReason {
    /// The consumer's node and op are marked names ([`crate::sys::escape::name`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // An unnamed node is already labelled `#INDEX (OP)`: the op once is enough.
        let who = |node: &str, op: &str| match node.starts_with('#') && node.ends_with(&format!(" ({op})")) {
            true => crate::sys::escape::name(node).to_string(),
            false => format!("{} ({})", crate::sys::escape::name(node), crate::sys::escape::name(op)),
        };
        match self {
            KeptReason::GraphOutput => f.write_str("its output is an output of the graph"),
            KeptReason::ReadInSubgraph => f.write_str("a nested graph reads its output"),
            KeptReason::Unused => f.write_str("nothing reads its output"),
            KeptReason::BroadcastUndecided => f.write_str("the broadcast itself is not proved to hold"),
            KeptReason::BroadcastConditional { conditions } => {
                let c: Vec<String> = conditions.iter().map(ToString::to_string).collect();
                write!(f, "the broadcast itself holds only if {}", crate::rules::all_of(&c))
            }
            KeptReason::NotBroadcastingConsumer { node, op, input } => {
                write!(f, "{} reads it as input {input}, which its rule does not broadcast", who(node, op))
            }
            KeptReason::OtherConsumer { node, op } => write!(f, "{} reads it and does not broadcast", who(node, op)),
            KeptReason::ConsumerConditional { node, op, conditions } => {
                let c: Vec<String> = conditions.iter().map(ToString::to_string).collect();
                write!(f, "{} would hold only if {}", who(node, op), crate::rules::all_of(&c))
            }
            KeptReason::ConsumerUnknown { node, op } => {
                write!(f, "{}: the shapes are not known well enough to prove it broadcasts anyway", who(node, op))
            }
            KeptReason::ConsumerViolation { node, op } => write!(f, "{} would break its rule", who(node, op)),
            KeptReason::OutputChanges { node, op, from, to } => {
                write!(f, "{} would give {to} instead of {from}: the broadcast sets its output shape", who(node, op))
            }
            KeptReason::NoEvaluation { node, op } => {
                write!(f, "{} is evaluated at a function call where the broadcast is not", who(node, op))
            }
        }
    }
}

/// An explicit broadcast removed. Named as `check` names a site: inside a model-local function, `graph` and `node`
/// are its (first) call's, and `functions` the frames down to the broadcast (`in function F (node N)`).
#[derive(Clone, Debug, PartialEq)]
pub struct Folded {
    pub graph: String,
    pub node: String,
    pub op: String,
    pub functions: Vec<crate::analysis::FunctionFrame<'static>>,
    pub form: Form,
    /// The value the consumers read instead.
    pub source: String,
    /// The consumers (node labels) that now read `source`.
    pub into: Vec<String>,
}

/// An explicit broadcast removed because everything that read it was removed: it fed only other broadcasts that
/// were folded, or their shape computations (`vit`'s `Expand` of a mask that only a folded `Where` read).
#[derive(Clone, Debug, PartialEq)]
pub struct RemovedWith {
    pub graph: String,
    pub node: String,
    pub op: String,
    pub form: Form,
    /// The removed nodes (labels) that read it.
    pub with: Vec<String>,
}

/// An explicit broadcast kept, and why; named as [`Folded`] is.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    pub graph: String,
    pub node: String,
    pub op: String,
    pub functions: Vec<crate::analysis::FunctionFrame<'static>>,
    pub form: Form,
    pub reason: KeptReason,
}

/// What `fold` did with each candidate: every one is in exactly one of `folded`, `removed_with` and `kept`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FoldSummary {
    /// Explicit broadcasts examined (a node in a function body counts once, however often it is called).
    pub candidates: usize,
    pub folded: Vec<Folded>,
    /// Removed with the nodes that read them (not folded into a consumer of their own).
    pub removed_with: Vec<RemovedWith>,
    pub kept: Vec<Kept>,
    /// Nodes removed in all: the broadcasts and the shape computations that fed only them.
    pub nodes_removed: usize,
    pub initializers_removed: usize,
    /// Constants written back in their small form (`--materialized`).
    pub constants_shrunk: usize,
}

pub struct FoldPlan {
    pub edit: ModelEdit,
    pub summary: FoldSummary,
}

#[derive(Debug, thiserror::Error)]
pub enum FoldError {
    #[error(transparent)]
    Wire(#[from] wire::WireError),
    /// The model is broken in a way `check` reports as an error: nothing is rewritten, and the findings say why.
    #[error("{}", crate::rewrite::refuse::summary(.0))]
    Broken(Vec<crate::analysis::Note>),
}

/// Plans the fold of `model` from its own analysis; refuses a model `check` calls broken.
pub fn plan(model: &Model, options: FoldOptions) -> Result<FoldPlan, FoldError> {
    let analysis = crate::analysis::analyze_model_with(model, crate::analysis::Options { value_facts: true });
    let broken = crate::rewrite::refuse::broken(&analysis);
    if !broken.is_empty() {
        return Err(FoldError::Broken(broken));
    }
    Ok(plan::plan(model.proto(), &analysis, options))
}

/// `fold` on the common rewrite path ([`crate::rewrite::driver`]).
pub struct Fold(pub FoldOptions);

impl crate::rewrite::driver::Rewrite for Fold {
    type Plan = FoldPlan;
    type Error = FoldError;
    const COMMAND: &'static str = "fold";
    const VERB: &'static str = "rewritten";

    fn plan(&self, model: &Model) -> Result<FoldPlan, FoldError> {
        plan(model, self.0)
    }
    fn edit(plan: &FoldPlan) -> &ModelEdit {
        &plan.edit
    }
    fn broken(error: &FoldError) -> Option<&[crate::analysis::Note]> {
        match error {
            FoldError::Broken(notes) => Some(notes),
            _ => None,
        }
    }
}

/// Plans the fold of a loaded model and lays out its output: the input's bytes with the edit spliced in.
pub fn fold_model(model: &Model, options: FoldOptions) -> Result<(FoldPlan, Pieces), FoldError> {
    crate::rewrite::driver::rewrite(&Fold(options), model)
}

/// The node a site is, by its label inside its own body (inside a function: the node of the body, not the call).
pub(crate) fn node_label(site: &Site) -> String {
    site.functions.last().map_or_else(|| site.node.to_string(), |f| f.node.to_string())
}
