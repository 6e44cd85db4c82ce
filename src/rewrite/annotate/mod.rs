//! `infer`: every value's inferred element type and shape written back into the model as `value_info` (and into
//! the graph outputs' declarations), in subgraphs and function bodies too, so that the toolchains that ask for
//! "symbolic shape inference first" (onnxruntime's quantizer and TensorRT provider, NPU converters) get it. With
//! `--bind` the inputs' symbols take sizes first, and the result is a static model: the inputs are rewritten too.
//!
//! Like `expand`, this plans an edit from the model's own analysis and splices it into the original bytes
//! ([`crate::onnx::wire`]): everything it does not declare stays byte-identical, external data stays where it is.
//! Declarations that agree with inference are kept as written (completed where they leave a dim or the element
//! type empty); one that contradicts it is reported, and replaced only with `--overwrite-declared`.

mod ranged;

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::analysis::{Bindings, GraphStep, Note};
use crate::onnx::model::{body_at, Model, ModelBody};
use crate::onnx::pb::field;
use crate::onnx::pb::ValueInfoProto;
use crate::onnx::tensor::{self, ValueFacts};
use crate::onnx::wire::{self, GraphEdit, ModelEdit, Pieces};

pub use crate::rewrite::declare::{dim_value, new_declaration, MAX_DIM_PARAM};

#[derive(Clone, Debug, Default)]
pub struct InferOptions {
    /// `--bind`: sizes for the inputs' symbols; the inputs' declarations are rewritten with them.
    pub bindings: Bindings,
    /// Replace declarations that contradict inference instead of keeping them.
    pub overwrite_declared: bool,
    /// Ranges of sizes: what is written holds at every size of them (and a model with a site that fails somewhere
    /// in them is not written).
    pub ranges: crate::rules::ranges::RangeRequest,
}

/// A declaration that contradicts inference.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub graph: String,
    pub value: String,
    /// `declared [2, 3], inferred [2, 4] (axis 1)`.
    pub why: String,
    /// Whether the declaration was replaced (`--overwrite-declared`).
    pub replaced: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct InferSummary {
    /// Node outputs in the bodies written (a function body counts once).
    pub values: usize,
    /// Values that had no declaration and got one.
    pub declared: usize,
    /// Existing declarations completed or rewritten.
    pub completed: usize,
    /// Existing declarations left as they were.
    pub kept: usize,
    /// Values whose declaration, as written, has a rank and every dim a size or a `dim_param`.
    pub resolved: usize,
    /// Of those, the ones with every dim a size.
    pub static_shapes: usize,
    /// Graph inputs rewritten by `--bind`.
    pub inputs_bound: usize,
    /// Function bodies left as they were because the model's IR version has no `FunctionProto.value_info`.
    pub functions_skipped: usize,
    pub mismatches: Vec<Mismatch>,
}

pub struct Plan {
    pub edit: ModelEdit,
    pub summary: InferSummary,
}

#[derive(Debug, thiserror::Error)]
pub enum InferError {
    #[error(transparent)]
    Wire(#[from] wire::WireError),
    #[error(transparent)]
    Bind(#[from] crate::analysis::BindError),
    /// The model is broken in a way `check` reports as an error: nothing is written (as `expand`).
    #[error("{}", crate::rewrite::refuse::summary(.0))]
    Broken(Vec<Note>),
}

/// `FunctionProto.value_info` exists from IR version 10 (ONNX `docs/IR.md`, "Functions").
const FUNCTION_VALUE_INFO_IR: i64 = 10;

/// Plans the declarations of `model` from its own analysis (with the bindings).
pub fn plan(model: &Model, options: &InferOptions) -> Result<Plan, InferError> {
    let request = crate::analysis::Request {
        bindings: options.bindings.clone(),
        function_facts: true,
        ranges: options.ranges.clone(),
        ..Default::default()
    };
    let (request, ranges) = crate::analysis::prepare(model.proto(), &request)?;
    // A range of one size is a binding: the planner writes with the bindings the analysis had.
    let options = &InferOptions { bindings: request.bindings.clone(), ..options.clone() };
    let mut decider = ranges.as_ref().map(|r| crate::rules::ranges::Decider::new(r.ranges.clone()));
    let mut failing = Vec::new();
    // The sites are not needed, but over ranges each is decided: each is dropped as soon as it is judged, so that
    // they never all exist at once.
    let mut each = |site: crate::analysis::Site| {
        if let (Some(decider), crate::rules::Verdict::Conditional(conditions)) = (decider.as_mut(), &site.verdict) {
            if let d @ crate::rules::ranges::Decision::Fails { .. } = decider.decide(conditions) {
                failing.push(ranged::failing_note(&site, &d, conditions));
            }
        }
    };
    let every_value = crate::analysis::Options { value_facts: true };
    let mut analysis = crate::analysis::analyze_model_request(model, every_value, &request, Some(&mut each))?;
    let mut broken = crate::rewrite::refuse::broken(&analysis);
    broken.extend(failing);
    if !broken.is_empty() {
        return Err(InferError::Broken(broken));
    }
    if let Some(ranges) = &ranges {
        analysis.facts_within(&ranges.ranges);
    }
    // A function body is walked once per distinct call; what is written is what every call agrees on.
    let mut bodies: BTreeMap<Vec<GraphStep>, (String, HashMap<String, ValueFacts>)> = BTreeMap::new();
    for g in analysis.graphs {
        let (_, facts) = bodies.entry(g.loc).or_insert_with(|| (g.path, HashMap::new()));
        for (name, f) in g.values {
            let merged = match facts.get(&name) {
                Some(earlier) => crate::rewrite::declare::common(earlier, &f),
                None => f,
            };
            facts.insert(name, merged);
        }
    }
    let proto = model.proto();
    let mut plan = Plan { edit: ModelEdit::default(), summary: InferSummary::default() };
    for (loc, (path, facts)) in &bodies {
        let Some(body) = body_at(proto, loc) else { continue };
        if matches!(body, ModelBody::Function(_)) && proto.ir_version() < FUNCTION_VALUE_INFO_IR {
            plan.summary.functions_skipped += 1;
            continue;
        }
        let mut planner = BodyPlanner { options, main: loc.is_empty(), path, facts, summary: &mut plan.summary };
        planner.plan(body, plan.edit.graph_mut(loc));
    }
    plan.summary.inputs_bound = crate::rewrite::driver::bind_inputs(proto, &options.bindings, &mut plan.edit);
    Ok(plan)
}

/// `infer` on the common rewrite path ([`crate::rewrite::driver`]).
pub struct Annotate<'a>(pub &'a InferOptions);

impl crate::rewrite::driver::Rewrite for Annotate<'_> {
    type Plan = Plan;
    type Error = InferError;
    const COMMAND: &'static str = "infer";
    const VERB: &'static str = "annotated";

    fn plan(&self, model: &Model) -> Result<Plan, InferError> {
        plan(model, self.0)
    }
    fn edit(plan: &Plan) -> &ModelEdit {
        &plan.edit
    }
    fn broken(error: &InferError) -> Option<&[Note]> {
        match error {
            InferError::Broken(notes) => Some(notes),
            _ => None,
        }
    }
}

/// Plans a loaded model and lays out its output: the input's bytes with the declarations spliced in.
pub fn infer_model(model: &Model, options: &InferOptions) -> Result<(Plan, Pieces), InferError> {
    crate::rewrite::driver::rewrite(&Annotate(options), model)
}

/// Ops whose outputs are not tensors (sequences, optionals): never declared as tensors.
const NOT_TENSORS: &[&str] =
    &["SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SplitToSequence", "Optional"];

struct BodyPlanner<'a> {
    options: &'a InferOptions,
    /// The main graph (whose inputs `bind_inputs` rewrites).
    main: bool,
    path: &'a str,
    facts: &'a HashMap<String, ValueFacts>,
    summary: &'a mut InferSummary,
}

impl BodyPlanner<'_> {
    fn plan(&mut self, body: ModelBody<'_>, edit: &mut GraphEdit) {
        let mut produced: Vec<&str> = Vec::new();
        let mut skip: HashSet<&str> = HashSet::new();
        for node in body.nodes() {
            for out in node.output.iter().filter(|o| !o.is_empty()) {
                produced.push(out);
                if NOT_TENSORS.contains(&node.op_type()) && crate::rules::ops::is_default_domain(node.domain()) {
                    skip.insert(out);
                }
            }
        }
        let declarations: Vec<(u32, usize, &ValueInfoProto)> = match body {
            ModelBody::Graph(g) => {
                let outputs = g.output.iter().enumerate().map(|(i, v)| (field::graph::OUTPUT, i, v));
                let infos = g.value_info.iter().enumerate().map(|(i, v)| (field::graph::VALUE_INFO, i, v));
                // A subgraph's inputs (a Loop body's carried values) may name bound symbols too; the main graph's
                // are `bind_inputs`'s.
                let inputs = g.input.iter().enumerate().map(|(i, v)| (field::graph::INPUT, i, v));
                let inputs = inputs.filter(|_| !self.main && !self.options.bindings.is_empty());
                outputs.chain(infos).chain(inputs).collect()
            }
            ModelBody::Function(f) => {
                f.value_info.iter().enumerate().map(|(i, v)| (field::function::VALUE_INFO, i, v)).collect()
            }
        };
        let produced_set: HashSet<&str> = produced.iter().copied().collect();
        let mut declared: HashSet<&str> = HashSet::new();
        for &(number, position, vi) in &declarations {
            let first = declared.insert(vi.name());
            if !produced_set.contains(vi.name()) || skip.contains(vi.name()) {
                self.not_made(vi, (number, position), edit);
                continue;
            }
            // A value declared twice is one value.
            self.summary.values += usize::from(first);
            let Some(facts) = self.facts.get(vi.name()) else { continue };
            let written = self.redeclare(vi, facts);
            self.count(&written);
            if written != *vi {
                edit.declaration_edits.insert((number, position), written);
                self.summary.completed += 1;
            } else {
                self.summary.kept += 1;
            }
        }
        for name in produced {
            if declared.contains(name) || skip.contains(name) {
                continue;
            }
            self.summary.values += 1;
            let Some(vi) = self.facts.get(name).and_then(|f| new_declaration(name, f)) else { continue };
            self.summary.declared += 1;
            self.count(&vi);
            edit.value_info.push(&vi);
        }
    }

    /// A declaration of a value no node of the body makes (an input, an initializer): compared with what the value
    /// is, by the rule `check` applies to a value declared more than once (`analysis/declared.rs`); rewritten where
    /// bound symbols change, and where it contradicts the value with `--overwrite-declared`.
    fn not_made(&mut self, vi: &ValueInfoProto, at: (u32, usize), edit: &mut GraphEdit) {
        let bindings = &self.options.bindings;
        let declared = bindings.facts(&tensor::facts_from_type(vi.r#type.as_ref(), &mut Vec::new(), true));
        let facts = self.facts.get(vi.name());
        let contradiction = facts.and_then(|f| tensor::contradiction(f, &declared));
        let replace = contradiction.is_some() && self.options.overwrite_declared;
        if let Some(why) = contradiction {
            let (graph, value) = (self.path.to_string(), vi.name().to_string());
            self.summary.mismatches.push(Mismatch { graph, value, why, replaced: replace });
        }
        if bindings.is_empty() && !replace {
            return;
        }
        let facts = facts.filter(|_| replace).cloned().unwrap_or_default();
        match crate::rewrite::declare::merged(vi, &facts, bindings, replace) {
            Some(bound) if bound != *vi => {
                edit.declaration_edits.insert(at, bound);
            }
            _ => {}
        }
    }

    /// An existing declaration of a node output, as it is to be written.
    fn redeclare(&mut self, vi: &ValueInfoProto, facts: &ValueFacts) -> ValueInfoProto {
        let bindings = &self.options.bindings;
        let declared = bindings.facts(&tensor::facts_from_type(vi.r#type.as_ref(), &mut Vec::new(), true));
        let contradiction = tensor::contradiction(facts, &declared);
        let replace = contradiction.is_some() && self.options.overwrite_declared;
        if let Some(why) = contradiction {
            let (graph, value) = (self.path.to_string(), vi.name().to_string());
            self.summary.mismatches.push(Mismatch { graph, value, why, replaced: replace });
            if !replace {
                return crate::rewrite::declare::merged(vi, &ValueFacts::unknown(), bindings, false)
                    .unwrap_or_else(|| vi.clone());
            }
        }
        crate::rewrite::declare::merged(vi, facts, bindings, replace).unwrap_or_else(|| vi.clone())
    }

    fn count(&mut self, vi: &ValueInfoProto) {
        use crate::onnx::pb::tensor_shape_proto::dimension::Value;
        let Some(shape) = vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref()) else {
            return;
        };
        let resolved = |d: &&crate::onnx::pb::tensor_shape_proto::Dimension| match &d.value {
            Some(Value::DimValue(_)) => true,
            Some(Value::DimParam(p)) => !p.is_empty(),
            None => false,
        };
        if shape.dim.iter().all(|d| resolved(&d)) {
            self.summary.resolved += 1;
            if shape.dim.iter().all(|d| matches!(d.value, Some(Value::DimValue(_)))) {
                self.summary.static_shapes += 1;
            }
        }
    }
}
