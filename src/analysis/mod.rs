//! Walks every graph of a model (main graph, If/Loop/Scan bodies, model-local functions at each call site),
//! infers value facts in topological order and evaluates every broadcasting site.
//!
//! The model is only read; the result is a side table of sites and notes that `check` and `expand` consume.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::diagnostic::Code;
use crate::infer;
use crate::onnx::attr::{Attrs, CallSite};
use crate::onnx::location::MAIN_GRAPH;
use crate::onnx::pb::{
    FunctionProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, SparseTensorProto, TensorProto,
    ValueInfoProto,
};
use crate::onnx::tensor::{self, ValueFacts};
use crate::rules;
use crate::rules::ops::{self, BroadcastOp, SameType, SiteKind};
use crate::sizes::shape::{Dim, Shape};

/// The newest default-domain opset this tool knows; assumed when a model imports none.
pub const LATEST_OPSET: i64 = 28;

/// The newest IR version an ONNX release defines (onnx 1.23: `onnx.IR_VERSION`, the release of opset
/// [`LATEST_OPSET`]). A model that declares another one outside 1..=this gets an `unknown-ir-version` note.
pub const LATEST_IR_VERSION: i64 = 14;

pub use crate::sizes::shape::MAX_RANK;

/// Subgraph and function nesting deeper than this is refused rather than followed.
pub const MAX_NESTING: usize = 64;

pub use crate::onnx::model::{GraphStep, NodeLoc};

pub use crate::rules::site::{FunctionFrame, Site, SiteAttrs, SiteInput, TypeMismatch};

/// A finding about the graph itself rather than a broadcasting site.
#[derive(Clone, Debug)]
pub struct Note {
    pub code: Code,
    pub graph: String,
    pub node: Option<String>,
    pub op: Option<String>,
    /// Names marked ([`crate::sys::escape::name`]).
    pub message: crate::sys::escape::Message,
}

/// The facts inferred for the values of one graph body, in definition order.
#[derive(Clone, Debug)]
pub struct GraphFacts {
    pub path: String,
    pub loc: Vec<GraphStep>,
    pub values: Vec<(String, ValueFacts)>,
}

#[derive(Debug, Default)]
pub struct Analysis {
    pub sites: Vec<Site<'static>>,
    pub notes: Vec<Note>,
    /// Every value's facts, graph by graph; empty when [`Options::value_facts`] is off.
    pub graphs: Vec<GraphFacts>,
    /// Ops that no inference rule knows (`domain.op` outside the default domain), with how many nodes each: their
    /// outputs are unknown, and so is what depends on them.
    pub opaque: std::collections::BTreeMap<String, usize>,
    /// Nodes whose inputs break what their op's specification requires of them, or meet it only under conditions
    /// (see [`crate::infer::require`]).
    pub contradictions: Vec<ShapeFinding>,
    /// Gathers whose computed indices stay within their table only at some sizes (see [`index_bound`]).
    pub index_bounds: Vec<IndexBound>,
}

/// What an analysis keeps besides its sites and notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Keep the facts of every value ([`Analysis::graphs`]), which `shapes` shows. `check` and `expand` need only
    /// the sites, and skip them on large models' behalf.
    pub value_facts: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { value_facts: true }
    }
}

/// Analyses a decoded model. Never fails: what cannot be understood becomes unknown facts or notes.
pub fn analyze(model: &ModelProto) -> Analysis {
    analyze_with(model, HashMap::default(), Vec::new(), (Options::default(), &Request::default()), None)
}

/// Analyses a loaded model, following its external data references: every location is checked to stay inside
/// the model's folder (never opened otherwise), and small integer tensors stored outside the file are read,
/// since shape inference needs their values. Other external data is never read.
pub fn analyze_model(model: &crate::onnx::model::Model) -> Analysis {
    analyze_model_with(model, Options::default())
}

/// [`analyze_model`], keeping what `options` asks for.
pub fn analyze_model_with(model: &crate::onnx::model::Model, options: Options) -> Analysis {
    analyze_model_impl(model, options, &Request::default(), None)
}

/// [`analyze_model_with`], handing each site to `each_site` as soon as it is evaluated instead of keeping it in
/// [`Analysis::sites`], which stays empty: a large model's sites then never all exist at once.
pub fn analyze_model_each(
    model: &crate::onnx::model::Model,
    options: Options,
    each_site: &mut dyn FnMut(Site<'_>),
) -> Analysis {
    let mut each_site = each_site;
    analyze_model_impl(model, options, &Request::default(), Some(&mut each_site))
}

fn analyze_model_impl(
    model: &crate::onnx::model::Model,
    options: Options,
    request: &Request,
    each_site: Option<&mut dyn Sites>,
) -> Analysis {
    let folder = model.folder();
    let (values, problems) = crate::onnx::external::survey(folder, model.proto());
    let mut notes: Vec<Note> = problems
        .into_iter()
        .map(|e| Note { code: e.code(), graph: MAIN_GRAPH.into(), node: None, op: None, message: e.to_string().into() })
        .collect();
    let ir = model.proto().ir_version();
    if !(1..=LATEST_IR_VERSION).contains(&ir) {
        let read_as = match ir > LATEST_IR_VERSION {
            true => format!("it is read as IR {LATEST_IR_VERSION}, and "),
            false => String::new(),
        };
        let message = format!(
            "the model declares IR version {ir}, which no ONNX release defines (1 to {LATEST_IR_VERSION}); {read_as}\
             runtimes refuse it"
        );
        notes.push(Note {
            code: Code::UnknownIrVersion,
            graph: MAIN_GRAPH.into(),
            node: None,
            op: None,
            message: message.into(),
        });
    }
    analyze_with(model.proto(), values, notes, (options, request), each_site)
}

fn analyze_with(
    model: &ModelProto,
    external: HashMap<String, Vec<i64>>,
    notes: Vec<Note>,
    (options, request): (Options, &Request),
    each_site: Option<&mut dyn Sites>,
) -> Analysis {
    let counted_only = each_site.as_ref().map_or(sites::CountedOnly::NONE, |s| s.counted_only());
    let mut walker = Walker {
        options,
        bindings: request.bindings.clone(),
        function_facts: request.function_facts,
        pairs: each_site.is_some() && walker::counts_pairs(counted_only),
        pair_records: each_site.as_ref().is_some_and(|s| s.pair_records()) && !walker::counts_pairs(counted_only),
        quick_pairs: false,
        each_site,
        counted_only,
        counted: [0; 5],
        functions: HashMap::default(),
        active: Vec::new(),
        out: Analysis { notes, ..Analysis::default() },
        opset_missing: false,
        fresh: 0,
        external,
        constant_initializers: model.ir_version() < 4,
        calls: crate::analysis::calls::Calls::default(),
        custom: request.custom_ops.clone(),
        budget_noted: false,
        graphs_here: false,
        input_values: request.input_values.clone(),
        ops: op_memo::OpMemo::new(),
    };
    walker.quick_pairs = walker.pairs || walker.pair_records;
    for (i, f) in model.functions.iter().enumerate() {
        walker.functions.insert((f.domain(), f.name()), (i, f));
    }
    let opset = match default_opset(&model.opset_import) {
        Some(v) => v,
        None if model.opset_import.is_empty() && model.ir_version() < 3 => 1,
        // A model may use only other domains (ai.onnx.ml, say); the first default-domain node reports the gap.
        None => {
            walker.opset_missing = true;
            LATEST_OPSET
        }
    };
    if let Some(graph) = &model.graph {
        let env = Env { path: MAIN_GRAPH.into(), loc: Vec::new(), outer: &[], opset, call: None, depth: 0 };
        walker.body(&env, Body::graph(graph));
    }
    if request.training_graphs {
        walker.training_graphs(model, opset);
    }
    walker.hand_over_counts();
    // A body's facts are recorded when its walk ends, before its graph's: the main graph goes first, the
    // subgraphs after it in the order they were met.
    walker.out.graphs.sort_by_key(|g| !g.loc.is_empty());
    walker.out
}

fn default_opset(imports: &[OperatorSetIdProto]) -> Option<i64> {
    imports.iter().find(|o| ops::is_default_domain(o.domain())).map(|o| o.version())
}

pub mod bind;
mod budget;
mod call;
pub mod calls;
mod contradiction;
mod declared;
mod flow;
#[cfg(test)]
mod flow_tests;
pub mod index_bound;
mod initializers;
mod names;
mod op_memo;
mod pair_over;
mod pair_record;
mod pair_step;
mod reads;
#[cfg(test)]
mod reads_tests;
mod scope;
mod site;
pub mod sites;
mod training;
mod walk;
mod walker;

use scope::{Body, Env};
use walker::Walker;

pub use bind::{analyze_model_request, analyze_model_sites, prepare, BindError, Bindings, Request};
pub use contradiction::ShapeFinding;
pub use index_bound::{BoundVerdict, IndexBound};
pub use sites::{CountedOnly, Sites};
