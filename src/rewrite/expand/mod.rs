//! `expand`: plans the rewrite of every implicit broadcast into explicit ops, as an edit applied in one step.
//!
//! Planning only reads the model and its analysis. Each site whose inputs are not proven to have the output's
//! shape gets, for each such input, an explicit broadcast placed right before the node: `Expand` to a constant
//! shape when the output shape is static, `Expand` to a shape computed in the graph by `Shape` ops when it is
//! symbolic, `Reshape` + `Tile` below opset 8 (where `Expand` does not exist), or, on request, the constant input
//! itself written out expanded. Sites that break their rule, or that no op of the model's opset can make explicit
//! faithfully, are left as they are and reported.

//!
//! The parts: `strategy` decides what each site becomes, `builder` makes the new nodes (one memoising
//! constructor; what nearly every site asks for is memoised in `hot`, and `names` makes their names, both holding
//! texts in `texts`) and `encode` writes them as bytes, `external` moves external data as the options ask, and
//! [`write_expanded`] writes the result through [`crate::onnx::save`].

mod action;
mod builder;
mod encode;
mod external;
mod hot;
mod names;
mod order;
mod ranged;
mod reason;
mod strategy;
mod texts;

use crate::onnx::model::Model;
use crate::onnx::wire::{self, ModelEdit, Pieces};

#[cfg(test)]
pub(crate) use action::ActionText;
pub use action::{Action, TooLong};
pub use builder::value_info;
pub use reason::{LeftKind, LeftReason};

#[derive(Clone, Debug)]
pub struct ExpandOptions {
    /// Write constant inputs out expanded instead of inserting an `Expand` for them.
    pub materialize_constants: bool,
    /// The largest expanded constant, in bytes, that `materialize_constants` writes.
    pub max_materialize_bytes: u64,
    /// Main-graph initializers whose external data is at most this many bytes are written into the model file.
    pub inline_external_below: Option<u64>,
    /// All other external data of main-graph initializers is gathered into this one new file beside the output
    /// (a plain file name).
    pub gather_external: Option<String>,
}

impl Default for ExpandOptions {
    fn default() -> Self {
        ExpandOptions {
            materialize_constants: false,
            max_materialize_bytes: 16 << 20,
            inline_external_below: None,
            gather_external: None,
        }
    }
}

pub use crate::onnx::external::{ExternalMoves, SourceRange};

/// A site left implicit, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct LeftSite {
    pub graph: String,
    pub node: String,
    pub op: String,
    pub reason: LeftReason,
}

impl LeftSite {
    pub fn kind(&self) -> LeftKind {
        self.reason.kind()
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExpandSummary {
    /// Broadcasting sites examined (a site in a function body counts once, however often it is called).
    pub sites: usize,
    pub made_explicit: usize,
    pub expands_inserted: usize,
    /// Inputs that reuse an `Expand` already inserted for the same value and target.
    pub expands_shared: usize,
    pub materialized: usize,
    pub nodes_added: usize,
    pub actions: Vec<Action>,
    pub left: Vec<LeftSite>,
}

pub struct Plan {
    pub edit: ModelEdit,
    pub summary: ExpandSummary,
    pub external: ExternalMoves,
}

/// Plans the rewrite of `model`: analyses it, refuses a model `check` calls broken, and plans every site. The
/// plan is made from the model's own analysis, never from another's.
pub fn plan(model: &Model, options: ExpandOptions) -> Result<Plan, ExpandError> {
    plan_bound(model, options, &crate::analysis::Bindings::default())
}

/// [`plan`] with `--bind` sizes given to the inputs' symbols before the analysis the plan is made from.
pub fn plan_bound(
    model: &Model,
    options: ExpandOptions,
    bindings: &crate::analysis::Bindings,
) -> Result<Plan, ExpandError> {
    let request = crate::analysis::Request { bindings: bindings.clone(), ..Default::default() };
    plan_request(model, options, &request)
}

/// [`plan`] for an analysis request: `--bind` sizes, and ranges of sizes over which each conditional site is
/// decided first (one that holds at every size of them is rewritten with no condition left to state; one that
/// fails somewhere in them is left as it is, named with its failing sizes).
pub fn plan_request(
    model: &Model,
    options: ExpandOptions,
    request: &crate::analysis::Request,
) -> Result<Plan, ExpandError> {
    let (request, ranges) = crate::analysis::prepare(model.proto(), request)?;
    let analysis_options = crate::analysis::Options { value_facts: false };
    let max = options.max_materialize_bytes;
    if ranges.is_none() {
        // Sites planned as the walk evaluates them: see `order`.
        let mut planner = strategy::Planner::new(builder::Builder::new(model.proto(), max), options.clone());
        let mut taker = order::Taker { order: order::InOrder::default(), planner: &mut planner };
        let analysis = crate::analysis::analyze_model_sites(model, analysis_options, &request, Some(&mut taker))?;
        refuse_broken(&analysis)?;
        if !taker.order.out_of_order() {
            planner.summary.sites = taker.order.finish(&mut planner);
            return planner.finish();
        }
    }
    let analysis = crate::analysis::analyze_model_request(model, analysis_options, &request, None)?;
    refuse_broken(&analysis)?;
    let mut sites = analysis.sites;
    let failing = match ranges {
        Some(ranges) => ranged::decide(&mut sites, &ranges.ranges),
        None => Vec::new(),
    };
    sites.retain(|s| !failing.iter().any(|(loc, _)| *loc == s.loc));
    let mut planner = strategy::Planner::new(builder::Builder::new(model.proto(), max), options);
    let planned = order::plan_sorted(&mut planner, sites);
    planner.summary.sites = planned + failing.len();
    planner.summary.left.extend(failing.into_iter().map(|(_, left)| left));
    planner.finish()
}

/// `Err` with the findings when `check` reports the analysed model as broken.
fn refuse_broken(analysis: &crate::analysis::Analysis) -> Result<(), ExpandError> {
    let broken = crate::rewrite::refuse::broken(analysis);
    match broken.is_empty() {
        true => Ok(()),
        false => Err(ExpandError::Broken(broken)),
    }
}

/// `expand` on the common rewrite path ([`crate::rewrite::driver`]), for an analysis request (`--bind` sizes and
/// ranges: see [`plan_request`]); a range of one size is a binding, and the inputs are rewritten with it.
pub struct Expand<'a> {
    pub options: ExpandOptions,
    pub request: &'a crate::analysis::Request,
}

impl crate::rewrite::driver::Rewrite for Expand<'_> {
    type Plan = Plan;
    type Error = ExpandError;
    const COMMAND: &'static str = "expand";
    const VERB: &'static str = "rewritten";

    fn plan(&self, model: &Model) -> Result<Plan, ExpandError> {
        let mut plan = plan_request(model, self.options.clone(), self.request)?;
        let (prepared, _) = crate::analysis::prepare(model.proto(), self.request)?;
        plan.external = external::move_external(model, &self.options, &mut plan.edit)?;
        crate::rewrite::driver::bind_inputs(model.proto(), &prepared.bindings, &mut plan.edit);
        Ok(plan)
    }
    fn edit(plan: &Plan) -> &ModelEdit {
        &plan.edit
    }
    fn moves(plan: &Plan) -> Option<&ExternalMoves> {
        Some(&plan.external)
    }
    fn broken(error: &ExpandError) -> Option<&[crate::analysis::Note]> {
        match error {
            ExpandError::Broken(notes) => Some(notes),
            _ => None,
        }
    }
}

/// [`expand_model_bound`] for an analysis request: see [`Expand`].
pub fn expand_model_request(
    model: &Model,
    options: ExpandOptions,
    request: &crate::analysis::Request,
) -> Result<(Plan, Pieces), ExpandError> {
    crate::rewrite::driver::rewrite(&Expand { options, request }, model)
}

/// Plans the rewrite of a loaded model and lays out its output: the input's bytes with the edit spliced in.
pub fn expand_model(model: &Model, options: ExpandOptions) -> Result<(Plan, Pieces), ExpandError> {
    expand_model_bound(model, options, &crate::analysis::Bindings::default())
}

/// [`expand_model`] with `--bind` sizes: the plan holds only at those sizes, so the inputs are rewritten to say so.
pub fn expand_model_bound(
    model: &Model,
    options: ExpandOptions,
    bindings: &crate::analysis::Bindings,
) -> Result<(Plan, Pieces), ExpandError> {
    let request = crate::analysis::Request { bindings: bindings.clone(), ..Default::default() };
    expand_model_request(model, options, &request)
}

#[derive(Debug, thiserror::Error)]
pub enum ExpandError {
    #[error(transparent)]
    Wire(#[from] wire::WireError),
    #[error(transparent)]
    External(#[from] crate::onnx::external::ExternalError),
    #[error(transparent)]
    Bind(#[from] crate::analysis::BindError),
    #[error("--gather-external-data takes a plain file name, not '{0}'")]
    GatherName(String),
    /// The model is broken in a way `check` reports as an error (a cycle, an undefined value, unusable external
    /// data, ...): nothing is rewritten, and the findings say why.
    #[error("{}", crate::rewrite::refuse::summary(.0))]
    Broken(Vec<crate::analysis::Note>),
    /// A site whose text comes to 4 GiB or more ([`TooLong`]), at this node: named by its place, as its names are
    /// what is too long to show.
    #[error("node {} of {}: {}", .0.node, if .0.graph.is_empty() { "the main graph" } else { "a graph body" }, TooLong)]
    SiteTooLong(crate::onnx::model::NodeLoc),
}

/// Writes a rewritten model to `output`, with its external data where the plan put it; see
/// [`crate::onnx::save::write_model`] for what may be written where. Returns the data files written beside `output`.
pub fn write_expanded(
    model: &Model,
    plan: &Plan,
    pieces: &Pieces,
    output: &std::path::Path,
) -> Result<Vec<String>, crate::rewrite::driver::WriteError> {
    use crate::rewrite::driver::{write, Target, Written};
    Ok(match write::<Expand>(model, plan, pieces, None, Target::File(output))? {
        Written::File(files) => files,
        Written::UnchangedInPlace | Written::Bytes(_) => Vec::new(),
    })
}
