//! The one way a rewrite goes from a model to written bytes, for `expand`, `fold` and `infer`, and for the
//! command line and the Python extension alike: a command says what it analyses and how it plans ([`Rewrite`]);
//! [`rewrite()`] plans and splices the edit into the original bytes; [`write()`] writes them atomically beside OUT
//! (or lays them out in memory), and writes nothing for an unchanged model written over itself.

use std::path::Path;

use crate::analysis::{Bindings, Note};
use crate::onnx::external::ExternalMoves;
use crate::onnx::model::Model;
use crate::onnx::pb::field;
use crate::onnx::pb::ModelProto;
use crate::onnx::save::SaveError;
use crate::onnx::tensor::ValueFacts;
use crate::onnx::wire::{self, ModelEdit, Pieces, WireError};

/// What one rewriting command adds to the common path: its analysis and its plan.
pub trait Rewrite {
    /// The plan of one model: its edit and its summary.
    type Plan;
    type Error: std::fmt::Display + From<WireError>;
    /// The command's name, where `ONNX_BCAST_TEST_PANIC` may name it.
    const COMMAND: &'static str;
    /// What a model refused as broken is not: `not rewritten`, `not annotated`.
    const VERB: &'static str;

    /// Analyses `model` (refusing it when `check` reports it broken) and plans its edit.
    fn plan(&self, model: &Model) -> Result<Self::Plan, Self::Error>;
    fn edit(plan: &Self::Plan) -> &ModelEdit;
    /// Where the plan moves external data; `None`: every tensor stays where it is.
    fn moves(_plan: &Self::Plan) -> Option<&ExternalMoves> {
        None
    }
    /// The findings that make the model broken, when that is why the plan was refused.
    fn broken(error: &Self::Error) -> Option<&[Note]>;
}

/// Plans `model` and lays out its output: the input's bytes with the edit spliced in.
pub fn rewrite<R: Rewrite>(command: &R, model: &Model) -> Result<(R::Plan, Pieces), R::Error> {
    rewrite_planned_then(command, model, || {})
}

/// [`rewrite()`], with `planned` called once the plan is made, before the splice: when the analysis and the
/// planner's tables have been freed and the output's pieces are not yet made (the command line hands the freed
/// memory back to the system there).
pub fn rewrite_planned_then<R: Rewrite>(
    command: &R,
    model: &Model,
    planned: impl FnOnce(),
) -> Result<(R::Plan, Pieces), R::Error> {
    crate::sys::panics::test_point(R::COMMAND);
    let plan = command.plan(model)?;
    planned();
    let pieces = wire::apply(model.source(), R::edit(&plan))?;
    Ok((plan, pieces))
}

/// Where the rewritten bytes go.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    /// A file, written atomically with its external data (see [`crate::onnx::save::write_model`]).
    File(&'a Path),
    /// Laid out in memory.
    Memory,
}

/// What [`write()`] did.
pub enum Written {
    /// The file was written; the data files written beside it.
    File(Vec<String>),
    /// An unchanged model over its own file: nothing to write.
    UnchangedInPlace,
    Bytes(Vec<u8>),
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Save(#[from] SaveError),
    /// The bytes could not be laid out in memory.
    #[error(transparent)]
    Layout(#[from] std::io::Error),
}

/// The one write entry of the rewrites. `input` is the file the model came from, if any: an unchanged model
/// written over that very file (the same file, as [`crate::sys::platform::same_file`] judges it) is not written.
pub fn write<R: Rewrite>(
    model: &Model,
    plan: &R::Plan,
    pieces: &Pieces,
    input: Option<&Path>,
    target: Target<'_>,
) -> Result<Written, WriteError> {
    match target {
        Target::File(output) => {
            let unchanged = R::edit(plan).is_empty();
            if unchanged && input.is_some_and(|input| crate::sys::platform::same_file(input, output)) {
                return Ok(Written::UnchangedInPlace);
            }
            let stay = ExternalMoves::default();
            Ok(Written::File(crate::onnx::save::write_model(model, R::moves(plan).unwrap_or(&stay), pieces, output)?))
        }
        Target::Memory => Ok(Written::Bytes(pieces.to_vec(model.bytes())?)),
    }
}

/// Rewrites the main graph's input declarations whose dims name bound symbols: the size replaces the symbol (the
/// propagated counterpart of onnxruntime's `make_dynamic_shape_fixed`). `expand` and `infer` both write a plan that
/// holds at the bound sizes, so both say so in the inputs. Returns how many inputs changed.
pub fn bind_inputs(model: &ModelProto, bindings: &Bindings, edit: &mut ModelEdit) -> usize {
    let Some(graph) = &model.graph else { return 0 };
    if bindings.is_empty() {
        return 0;
    }
    let mut changed = 0;
    for (i, vi) in graph.input.iter().enumerate() {
        let unknown = ValueFacts::unknown();
        match crate::rewrite::declare::merged(vi, &unknown, bindings, false) {
            Some(bound) if bound != *vi => {
                edit.graph_mut(&[]).declaration_edits.insert((field::graph::INPUT, i), bound);
                changed += 1;
            }
            _ => {}
        }
    }
    changed
}
