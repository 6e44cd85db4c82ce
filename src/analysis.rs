//! Walks every graph of a model (main graph, If/Loop/Scan bodies, model-local functions at each call site),
//! infers value facts in topological order and evaluates every broadcasting site.
//!
//! The model is only read; the result is a side table of sites and notes that `check` and `expand` consume.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::attr::{Attrs, CallSite};
use crate::diagnostic::Code;
use crate::infer;
use crate::ops::{self, BroadcastOp, SameType, SiteKind};
use crate::proto::{FunctionProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, ValueInfoProto};
use crate::rules::{self, Outcome, Rule, Verdict};
use crate::shape::{Dim, Shape};
use crate::tensor::{self, ValueFacts};

/// The newest default-domain opset this tool knows; assumed when a model imports none.
pub const LATEST_OPSET: i64 = 23;

pub use crate::shape::MAX_RANK;

/// Subgraph and function nesting deeper than this is refused rather than followed.
pub const MAX_NESTING: usize = 64;

pub use crate::model::{GraphStep, NodeLoc};

pub use crate::rules::site::{FunctionFrame, Site, SiteAttrs, SiteInput, TypeMismatch};

/// A finding about the graph itself rather than a broadcasting site.
#[derive(Clone, Debug)]
pub struct Note {
    pub code: Code,
    pub graph: String,
    pub node: Option<String>,
    pub op: Option<String>,
    pub message: String,
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
    pub sites: Vec<Site>,
    pub notes: Vec<Note>,
    /// Every value's facts, graph by graph; empty when [`Options::value_facts`] is off.
    pub graphs: Vec<GraphFacts>,
    /// Ops that no inference rule knows (`domain.op` outside the default domain), with how many nodes each: their
    /// outputs are unknown, and so is what depends on them.
    pub opaque: std::collections::BTreeMap<String, usize>,
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
    analyze_with(model, HashMap::default(), Vec::new(), Options::default(), None)
}

/// Analyses a loaded model, following its external data references: every location is checked to stay inside
/// the model's folder (never opened otherwise), and small integer tensors stored outside the file are read,
/// since shape inference needs their values. Other external data is never read.
pub fn analyze_model(model: &crate::model::Model) -> Analysis {
    analyze_model_with(model, Options::default())
}

/// [`analyze_model`], keeping what `options` asks for.
pub fn analyze_model_with(model: &crate::model::Model, options: Options) -> Analysis {
    analyze_model_impl(model, options, None)
}

/// [`analyze_model_with`], handing each site to `each_site` as soon as it is evaluated instead of keeping it in
/// [`Analysis::sites`], which stays empty: a large model's sites then never all exist at once.
pub fn analyze_model_each(model: &crate::model::Model, options: Options, each_site: &mut dyn FnMut(Site)) -> Analysis {
    analyze_model_impl(model, options, Some(each_site))
}

fn analyze_model_impl(
    model: &crate::model::Model,
    options: Options,
    each_site: Option<&mut dyn FnMut(Site)>,
) -> Analysis {
    let folder = model.path().parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let (values, problems) = crate::external::survey(folder, model.proto());
    let notes = problems
        .into_iter()
        .map(|e| Note { code: e.code(), graph: "main".into(), node: None, op: None, message: e.to_string() })
        .collect();
    analyze_with(model.proto(), values, notes, options, each_site)
}

fn analyze_with(
    model: &ModelProto,
    external: HashMap<String, Vec<i64>>,
    notes: Vec<Note>,
    options: Options,
    each_site: Option<&mut dyn FnMut(Site)>,
) -> Analysis {
    let mut walker = Walker {
        options,
        each_site,
        functions: HashMap::default(),
        active: Vec::new(),
        out: Analysis { notes, ..Analysis::default() },
        opset_missing: false,
        fresh: 0,
        external,
        constant_initializers: model.ir_version() < 4,
        calls: crate::calls::Calls::default(),
    };
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
        let env = Env { path: "main".into(), loc: Vec::new(), outer: &[], opset, call: None, depth: 0 };
        walker.body(&env, Body::graph(graph));
    }
    // A body's facts are recorded when its walk ends, before its graph's: the main graph goes first, the
    // subgraphs after it in the order they were met.
    walker.out.graphs.sort_by_key(|g| !g.loc.is_empty());
    walker.out
}

fn default_opset(imports: &[OperatorSetIdProto]) -> Option<i64> {
    imports.iter().find(|o| ops::is_default_domain(o.domain())).map(|o| o.version())
}

/// The values visible in one graph body.
struct Scope<'m> {
    values: HashMap<&'m str, ValueFacts>,
    /// Names in the order they were defined: inputs, initializers, then node outputs in topological order.
    /// `None` when the body's facts are not recorded.
    order: Option<Vec<&'m str>>,
}

impl<'m> Scope<'m> {
    /// Room for every value a body defines, so that the table is never rehashed while it grows.
    fn with_capacity(n: usize) -> Scope<'m> {
        let order = Some(Vec::with_capacity(n));
        Scope { values: HashMap::with_capacity_and_hasher(n, Default::default()), order }
    }

    /// A scope whose values come and go (see [`Reads`]) and whose order is not kept.
    fn unordered(n: usize) -> Scope<'m> {
        Scope { values: HashMap::with_capacity_and_hasher(n, Default::default()), order: None }
    }

    fn define(&mut self, name: &'m str, facts: ValueFacts) {
        if self.values.insert(name, facts).is_none() {
            if let Some(order) = &mut self.order {
                order.push(name);
            }
        }
    }
}

/// How many reads of each node-made value of a body are still to come. Once a value's last reader has been
/// walked its facts are dropped, so that memory follows the graph's width, not its length: a chain of a million
/// nodes holds a few values at a time (issue 14: `check` of such a chain). Graph outputs are never dropped.
struct Reads<'m>(HashMap<&'m str, usize>);

impl<'m> Reads<'m> {
    /// Turns the table of producers into one of read counts (same keys: no second table of every name).
    fn count(mut counts: HashMap<&'m str, usize>, nodes: &'m [NodeProto], outputs: &[&'m str]) -> Reads<'m> {
        counts.values_mut().for_each(|c| *c = 0);
        let read = nodes.iter().flat_map(|n| n.input.iter().map(String::as_str));
        // A graph output counts as one read that never comes.
        for name in read.chain(outputs.iter().copied()) {
            if let Some(c) = counts.get_mut(name) {
                *c += 1;
            }
        }
        Reads(counts)
    }

    /// After `node` was walked: its inputs have one reader less, and what nobody reads any more goes.
    fn after(&mut self, node: &'m NodeProto, scope: &mut Scope<'m>) {
        for name in &node.input {
            if let Some(c) = self.0.get_mut(name.as_str()) {
                *c = c.saturating_sub(1);
            }
        }
        for name in node.input.iter().chain(&node.output).map(String::as_str) {
            if self.0.get(name) == Some(&0) {
                scope.values.remove(name);
            }
        }
    }
}

/// Values some node of a body produces, even one stuck in a cycle: reading them is not reading nothing. Only asked
/// about a name that is not defined yet, which a well-formed model never has, so the set is built on first use.
struct Produced<'m> {
    nodes: &'m [NodeProto],
    names: std::cell::OnceCell<HashSet<&'m str>>,
}

impl<'m> Produced<'m> {
    fn contains(&self, name: &str) -> bool {
        let names = self.names.get_or_init(|| {
            self.nodes.iter().flat_map(|n| n.output.iter().map(String::as_str)).filter(|o| !o.is_empty()).collect()
        });
        names.contains(name)
    }
}

/// A graph or function body, as far as the walk needs it.
struct Body<'m> {
    nodes: &'m [NodeProto],
    /// Inputs with the facts they start with.
    inputs: Vec<(&'m str, ValueFacts)>,
    initializers: &'m [TensorProto],
    declared: Vec<&'m ValueInfoProto>,
    /// How many of `declared`, from the front, declare graph inputs.
    declared_inputs: usize,
    outputs: Vec<&'m str>,
    /// Only graphs record their facts: a function body's facts depend on the call site.
    record: bool,
}

impl<'m> Body<'m> {
    fn graph(g: &'m GraphProto) -> Body<'m> {
        Body {
            nodes: &g.node,
            inputs: g.input.iter().map(|vi| (vi.name(), ValueFacts::unknown())).collect(),
            initializers: &g.initializer,
            declared: g.input.iter().chain(&g.value_info).chain(&g.output).collect(),
            declared_inputs: g.input.len(),
            outputs: g.output.iter().map(|vi| vi.name()).collect(),
            record: true,
        }
    }
}

/// Where a walk is: graph path, enclosing scopes, opset, and the function call it is inside, if any.
struct Env<'m, 'a> {
    path: String,
    loc: Vec<GraphStep>,
    outer: &'a [&'a Scope<'m>],
    opset: i64,
    call: Option<&'a CallContext<'m>>,
    depth: usize,
}

/// The call of a model-local function: where its sites are reported and how its attributes resolve.
struct CallContext<'m> {
    attrs: CallSite<'m>,
    graph: String,
    node: String,
    node_index: usize,
    /// Frames of the enclosing calls, outermost first; the innermost frame's node is filled per site.
    frames: Vec<String>,
    inner_nodes: Vec<String>,
}

struct Walker<'m, 's> {
    options: Options,
    /// Where sites go when they are not kept in the analysis.
    each_site: Option<&'s mut dyn FnMut(Site)>,
    functions: HashMap<(&'m str, &'m str), (usize, &'m FunctionProto)>,
    active: Vec<(&'m str, &'m str)>,
    out: Analysis,
    /// The model imports no default-domain opset and no default-domain node has been met yet.
    opset_missing: bool,
    /// Fresh symbols made so far.
    fresh: usize,
    /// Contents of small integer tensors whose data lives outside the model file, by tensor name.
    external: HashMap<String, Vec<i64>>,
    /// Below IR 4 every initializer must also be listed as a graph input; runtimes then hold it constant (as
    /// onnxruntime does), so its contents count. From IR 4 on, listing it as an input makes it a default that the
    /// caller may override.
    constant_initializers: bool,
    /// Function calls already walked, and what walking them may still cost.
    calls: crate::calls::Calls,
}

/// A symbol for a size nothing names. `?` cannot start a name in the models this tool has met, and the number
/// keeps every one distinct, so no two are ever taken to be equal.
fn fresh_symbol(counter: &mut usize) -> Dim {
    *counter += 1;
    Dim::sym(&format!("?{counter}"))
}

fn node_label(node: &NodeProto, index: usize) -> String {
    if node.name().is_empty() {
        format!("#{index} ({})", node.op_type())
    } else {
        node.name().to_string()
    }
}

impl<'m> Walker<'m, '_> {
    fn note(&mut self, env: &Env<'m, '_>, code: Code, node: Option<(&NodeProto, usize)>, message: String) {
        let (graph, node_name, op) = match (env.call, node) {
            (Some(call), _) => {
                (call.graph.clone(), Some(call.node.clone()), node.map(|(n, _)| n.op_type().to_string()))
            }
            (None, Some((n, i))) => (env.path.clone(), Some(node_label(n, i)), Some(n.op_type().to_string())),
            (None, None) => (env.path.clone(), None, None),
        };
        self.out.notes.push(Note { code, graph, node: node_name, op, message });
    }

    /// Walks one body and returns the facts of its outputs.
    fn body(&mut self, env: &Env<'m, '_>, body: Body<'m>) -> Vec<ValueFacts> {
        let mut declared: HashMap<&'m str, ValueFacts> = HashMap::default();
        for (i, vi) in body.declared.iter().enumerate() {
            let mut negative = Vec::new();
            let facts = tensor::facts_from_type(vi.r#type.as_ref(), &mut negative, i >= body.declared_inputs);
            if !negative.is_empty() {
                let axes: Vec<String> = negative.iter().map(usize::to_string).collect();
                let msg = format!(
                    "value '{}' declares a negative size on axis {}; read as unknown",
                    vi.name(),
                    axes.join(", ")
                );
                self.note(env, Code::NegativeDim, None, msg);
            }
            declared.entry(vi.name()).or_insert(facts);
        }

        // Facts are kept for every value only when they are asked for (`shapes`); otherwise each value is dropped
        // after its last reader, unless a subgraph of this body might still read it by name.
        let keep_all = (body.record && self.options.value_facts)
            || body.nodes.iter().any(|n| Attrs::new(n, None).graphs().next().is_some());
        let mut scope = if keep_all {
            let defined =
                body.inputs.len() + body.initializers.len() + body.nodes.iter().map(|n| n.output.len()).sum::<usize>();
            Scope::with_capacity(defined)
        } else {
            Scope::unordered(body.inputs.len() + body.initializers.len())
        };
        for (name, facts) in body.inputs {
            if scope.values.contains_key(name) {
                self.note(env, Code::DuplicateValue, None, format!("input '{name}' is listed more than once"));
            }
            let mut facts = facts.filled_from(declared.get(name).unwrap_or(&ValueFacts::unknown()));
            // A graph input's unnamed size is still one size: a fresh symbol keeps it apart from every other.
            if let Some(dims) = &mut facts.shape.0 {
                for d in dims.iter_mut().filter(|d| matches!(d, Dim::Unknown)) {
                    *d = fresh_symbol(&mut self.fresh);
                }
            }
            scope.define(name, facts);
        }
        let mut initialized: HashSet<&str> = HashSet::default();
        for init in body.initializers {
            if !initialized.insert(init.name()) {
                let msg = format!("initializer '{}' is given more than once", init.name());
                self.note(env, Code::DuplicateValue, None, msg);
            }
            if let Some(why) = tensor::data_mismatch(init) {
                let msg = format!("initializer '{}' {why}", init.name());
                self.note(env, Code::TensorDataMismatch, None, msg);
            }
            let mut from_tensor = tensor::facts_from_tensor(init);
            if let Some(v) = self.external.get(init.name()) {
                from_tensor.value = Some(v.iter().map(|&x| Some(crate::sym::Poly::constant(x))).collect());
            }
            // An initializer that is also a graph input is a default the caller may override: a declared input
            // shape wins, the initializer fills what is undeclared.
            let facts = match scope.values.get(init.name()) {
                Some(input) if input.shape.dims().is_some() && !self.constant_initializers => {
                    ValueFacts::tensor(input.elem, input.shape.clone())
                }
                _ => from_tensor,
            };
            scope.define(init.name(), facts);
        }

        let (order, producer) = self.topological_order(env, body.nodes, &scope);
        let mut reads = (!keep_all).then(|| Reads::count(producer, body.nodes, &body.outputs));
        if self.each_site.is_none() {
            // Room for this body's sites at once: growing by doubling would copy them, and briefly hold them twice.
            let here = body.nodes.iter().filter(|n| ops::broadcast_op(n.domain(), n.op_type(), env.opset).is_some());
            self.out.sites.reserve(here.count());
        }
        let produced = Produced { nodes: body.nodes, names: std::cell::OnceCell::new() };
        for index in order {
            let node = &body.nodes[index];
            self.node(env, &mut scope, &declared, &produced, index, node);
            if let Some(reads) = &mut reads {
                reads.after(node, &mut scope);
            }
        }

        let outputs =
            body.outputs.iter().map(|name| self.lookup(env, &scope, name).cloned().unwrap_or_default()).collect();
        if body.record && self.options.value_facts {
            let mut facts = scope.values;
            let order = scope.order.unwrap_or_default();
            let values: Vec<(String, ValueFacts)> =
                order.iter().filter_map(|k| facts.remove(k).map(|v| (k.to_string(), v))).collect();
            self.out.graphs.push(GraphFacts { path: env.path.clone(), loc: env.loc.clone(), values });
        }
        outputs
    }

    fn lookup<'s>(&self, env: &'s Env<'m, '_>, scope: &'s Scope<'m>, name: &str) -> Option<&'s ValueFacts> {
        scope.values.get(name).or_else(|| env.outer.iter().rev().find_map(|s| s.values.get(name)))
    }

    /// Nodes in an order where producers come first: the file's order when it is already topological (as ONNX
    /// requires), else Kahn's order; nodes caught in a cycle come last, in file order, and are reported.
    /// Also returns which node produces each value.
    fn topological_order(
        &mut self,
        env: &Env<'m, '_>,
        nodes: &'m [NodeProto],
        scope: &Scope<'m>,
    ) -> (Vec<usize>, HashMap<&'m str, usize>) {
        let mut producer: HashMap<&str, usize> = HashMap::with_capacity_and_hasher(nodes.len(), Default::default());
        for (i, node) in nodes.iter().enumerate() {
            for out in node.output.iter().filter(|o| !o.is_empty()) {
                if producer.insert(out, i).is_some() || scope.values.contains_key(out.as_str()) {
                    let msg = format!("value '{out}' is defined more than once");
                    self.note(env, Code::DuplicateValue, Some((node, i)), msg);
                }
            }
        }
        let in_order = nodes
            .iter()
            .enumerate()
            .all(|(i, node)| node.input.iter().all(|name| producer.get(name.as_str()).is_none_or(|&p| p < i)));
        if in_order {
            return ((0..nodes.len()).collect(), producer);
        }
        let mut pending: Vec<usize> = vec![0; nodes.len()];
        let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for (i, node) in nodes.iter().enumerate() {
            let deps: HashSet<usize> = node.input.iter().filter_map(|n| producer.get(n.as_str()).copied()).collect();
            pending[i] = deps.len();
            for d in deps {
                consumers[d].push(i);
            }
        }
        let mut ready: VecDeque<usize> = (0..nodes.len()).filter(|&i| pending[i] == 0).collect();
        let mut order = Vec::with_capacity(nodes.len());
        while let Some(i) = ready.pop_front() {
            order.push(i);
            for &c in &consumers[i] {
                pending[c] -= 1;
                if pending[c] == 0 {
                    ready.push_back(c);
                }
            }
        }
        if order.len() < nodes.len() {
            let placed: HashSet<usize> = order.iter().copied().collect();
            let stuck: Vec<usize> = (0..nodes.len()).filter(|i| !placed.contains(i)).collect();
            let names: Vec<String> = stuck.iter().take(5).map(|&i| node_label(&nodes[i], i)).collect();
            let msg = match stuck.len() {
                1 => format!("node {} depends on its own output", names[0]),
                n => format!("{n} nodes form a cycle, among them {}", names.join(", ")),
            };
            self.note(env, Code::GraphCycle, Some((&nodes[stuck[0]], stuck[0])), msg);
            order.extend(stuck);
        }
        (order, producer)
    }

    fn node(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        declared: &HashMap<&'m str, ValueFacts>,
        produced: &Produced<'m>,
        index: usize,
        node: &'m NodeProto,
    ) {
        let attrs = Attrs::new(node, env.call.map(|c| c.attrs));
        if self.opset_missing && env.call.is_none() && ops::is_default_domain(node.domain()) {
            self.opset_missing = false;
            let msg = format!("no opset import for the default domain; opset {LATEST_OPSET} assumed");
            self.note(env, Code::MissingOpset, Some((node, index)), msg);
        }
        // A size `Shape` reads is one size, whatever it is: an unknown dim of the input gets a fresh symbol there,
        // so that what is built from the shape (expand's `Expand(x, Shape(y))`) is provably y's size again.
        if node.op_type() == "Shape" && ops::is_default_domain(node.domain()) {
            let observed = node.input.first().and_then(|n| scope.values.get_mut(n.as_str()));
            if let Some(dims) = observed.and_then(|f| f.shape.0.as_mut()) {
                for d in dims.iter_mut().filter(|d| matches!(d, Dim::Unknown)) {
                    *d = fresh_symbol(&mut self.fresh);
                }
            }
        }
        // References into the scopes, not copies: a node's inputs are only read until its outputs are defined.
        let mut refs: Vec<Option<&ValueFacts>> = Vec::with_capacity(node.input.len());
        for name in &node.input {
            if name.is_empty() {
                refs.push(None);
                continue;
            }
            let found = self.lookup(env, scope, name);
            if found.is_none() && !produced.contains(name.as_str()) {
                let msg = format!("input '{name}' is not defined by any graph input, initializer or node");
                self.note(env, Code::UndefinedValue, Some((node, index)), msg);
            }
            refs.push(found);
        }

        let mut subgraphs: Vec<(&'m str, Vec<ValueFacts>)> = Vec::new();
        if env.depth >= MAX_NESTING && attrs.graphs().next().is_some() {
            let msg = format!("subgraphs nest deeper than {MAX_NESTING} levels; the deeper ones are not checked");
            self.note(env, Code::NestingTooDeep, Some((node, index)), msg);
        }
        if env.depth < MAX_NESTING {
            let label = node_label(node, index);
            for (attribute, attr, k, graph) in attrs.graphs() {
                let chain: Vec<&Scope<'m>> = env.outer.iter().copied().chain(std::iter::once(&*scope)).collect();
                let step = GraphStep::Subgraph { node: index, attribute, graph: k };
                let sub = Env {
                    path: format!("{}/{}/{}", env.path, label, attr),
                    loc: env.loc.iter().cloned().chain([step]).collect(),
                    outer: &chain,
                    opset: env.opset,
                    call: env.call,
                    depth: env.depth + 1,
                };
                let outputs = self.body(&sub, Body::graph(graph));
                subgraphs.push((attr, outputs));
            }
        }

        let outputs = if let Some(op) = ops::broadcast_op(node.domain(), node.op_type(), env.opset) {
            self.site(env, index, node, attrs, op, &refs)
        } else if let Some(&(k, f)) = self.functions.get(&(node.domain(), node.op_type())) {
            self.call(env, index, node, k, f, refs.iter().map(|r| r.cloned()).collect())
        } else {
            let mut fresh = || fresh_symbol(&mut self.fresh);
            let mut ctx = infer::Ctx {
                op: node.op_type(),
                opset: env.opset,
                attrs,
                inputs: &refs,
                outputs: node.output.len(),
                subgraphs: &subgraphs,
                fresh: &mut fresh,
            };
            let inferred = if ops::is_default_domain(node.domain()) { infer::infer(&mut ctx) } else { None };
            inferred.unwrap_or_else(|| {
                let op = if node.domain().is_empty() {
                    node.op_type().to_string()
                } else {
                    format!("{}.{}", node.domain(), node.op_type())
                };
                *self.out.opaque.entry(op).or_default() += 1;
                vec![ValueFacts::unknown(); node.output.len()]
            })
        };
        for (name, facts) in node.output.iter().zip(outputs) {
            if name.is_empty() {
                continue;
            }
            let facts = match declared.get(name.as_str()) {
                Some(d) => {
                    if let Some(why) = tensor::contradiction(&facts, d) {
                        let msg = format!("value '{name}' is declared with other facts than inference finds: {why}");
                        self.note(env, Code::DeclaredShapeMismatch, Some((node, index)), msg);
                    }
                    facts.filled_from(d)
                }
                None => facts,
            };
            scope.define(name, facts);
        }
    }

    /// Walks a model-local function's body with the facts of this call's inputs.
    fn call(
        &mut self,
        env: &Env<'m, '_>,
        index: usize,
        node: &'m NodeProto,
        function_index: usize,
        f: &'m FunctionProto,
        inputs: Vec<Option<ValueFacts>>,
    ) -> Vec<ValueFacts> {
        let memo_key = crate::calls::memo_key(function_index, node, env.opset, &inputs);
        if let Some(outputs) = memo_key.as_ref().and_then(|k| self.calls.memo.get(k)) {
            return outputs.clone();
        }
        if let crate::calls::Spend::Stop(message) = self.calls.spend(f) {
            if let Some(msg) = message {
                self.note(env, Code::NestingTooDeep, Some((node, index)), msg);
            }
            return vec![ValueFacts::unknown(); node.output.len()];
        }
        let fresh_before = self.fresh;
        let outputs = self.walk_call(env, index, node, function_index, f, inputs);
        // Outputs that hold symbols made during this call stand for this call's sizes only: never reused.
        if let (Some(k), true) = (memo_key, self.fresh == fresh_before) {
            self.calls.memo.insert(k, outputs.clone());
        }
        outputs
    }

    /// Walks a function body for [`Walker::call`], which memoises and budgets the walks.
    fn walk_call(
        &mut self,
        env: &Env<'m, '_>,
        index: usize,
        node: &'m NodeProto,
        function_index: usize,
        f: &'m FunctionProto,
        inputs: Vec<Option<ValueFacts>>,
    ) -> Vec<ValueFacts> {
        let key = (f.domain(), f.name());
        let unknown = || vec![ValueFacts::unknown(); node.output.len()];
        if self.active.contains(&key) {
            let msg = format!("function {}.{} calls itself; its body is not followed again", f.domain(), f.name());
            self.note(env, Code::RecursiveFunction, Some((node, index)), msg);
            return unknown();
        }
        if env.depth >= MAX_NESTING {
            let msg = format!(
                "function calls and subgraphs nest deeper than {MAX_NESTING} levels; the body of {}.{} is not checked here",
                f.domain(),
                f.name()
            );
            self.note(env, Code::NestingTooDeep, Some((node, index)), msg);
            return unknown();
        }
        let qualified =
            if f.domain().is_empty() { f.name().to_string() } else { format!("{}.{}", f.domain(), f.name()) };
        let context = match env.call {
            Some(outer) => CallContext {
                attrs: CallSite::of(node, &f.attribute_proto),
                graph: outer.graph.clone(),
                node: outer.node.clone(),
                node_index: outer.node_index,
                frames: outer.frames.iter().cloned().chain([qualified]).collect(),
                inner_nodes: outer.inner_nodes.iter().cloned().chain([node_label(node, index)]).collect(),
            },
            None => CallContext {
                attrs: CallSite::of(node, &f.attribute_proto),
                graph: env.path.clone(),
                node: node_label(node, index),
                node_index: index,
                frames: vec![qualified],
                inner_nodes: Vec::new(),
            },
        };
        let body = Body {
            nodes: &f.node,
            inputs: f
                .input
                .iter()
                .zip(inputs.into_iter().chain(std::iter::repeat(None)))
                .map(|(name, facts)| (name.as_str(), facts.unwrap_or_default()))
                .collect(),
            initializers: &[],
            declared: f.value_info.iter().collect(),
            declared_inputs: 0,
            outputs: f.output.iter().map(String::as_str).collect(),
            record: false,
        };
        let opset = default_opset(&f.opset_import).unwrap_or(env.opset);
        let inner = Env {
            path: format!("{}/{}", env.path, node_label(node, index)),
            loc: vec![GraphStep::Function(function_index)],
            outer: &[],
            opset,
            call: Some(&context),
            depth: env.depth + 1,
        };
        self.active.push(key);
        let outputs = self.body(&inner, body);
        self.active.pop();
        let mut outputs = outputs;
        outputs.resize_with(node.output.len(), ValueFacts::unknown);
        outputs
    }

    /// Evaluates one broadcasting node and returns the facts of its outputs.
    fn site(
        &mut self,
        env: &Env<'m, '_>,
        index: usize,
        node: &'m NodeProto,
        attrs: Attrs<'m>,
        op: BroadcastOp,
        inputs: &[Option<&ValueFacts>],
    ) -> Vec<ValueFacts> {
        let unranked = Shape::unranked();
        // Positions in the node's input list of the inputs that are present.
        let present: Vec<usize> = (0..node.input.len()).filter(|&i| !node.input[i].is_empty()).collect();
        let shape_at = |pos: usize| inputs.get(pos).copied().flatten().map_or(&unranked, |f| &f.shape);
        let site_pos = |pos: usize| present.iter().position(|&p| p == pos);
        let all_present: Vec<Option<usize>> = (0..present.len()).map(Some).collect();

        let (rule, outcome, rule_inputs, target) = match op.kind {
            // One value in every place (`Mul(x, x)`): no broadcast, whatever its shape.
            SiteKind::Multi
                if present.windows(2).all(|w| node.input[w[0]] == node.input[w[1]]) && present.len() > 1 =>
            {
                let outcome = Outcome { output: shape_at(present[0]).clone(), verdict: Verdict::Same };
                (Rule::Multidirectional, outcome, all_present, None)
            }
            SiteKind::Multi => {
                let shapes: Vec<&Shape> = present.iter().map(|&p| shape_at(p)).collect();
                (Rule::Multidirectional, rules::multidirectional(&shapes), all_present, None)
            }
            SiteKind::EqualShapes => {
                let shapes: Vec<&Shape> = present.iter().map(|&p| shape_at(p)).collect();
                (Rule::None, rules::equal_shapes(&shapes), all_present, None)
            }
            SiteKind::LegacyBinary => {
                let (a, b) = (shape_at(0), shape_at(1));
                let map = vec![site_pos(0), site_pos(1)];
                if attrs.int("broadcast") == Some(1) {
                    (Rule::LegacyAxis, rules::legacy_axis(a, b, attrs.int("axis")), map, None)
                } else {
                    (Rule::None, rules::equal_shapes(&[a, b]), map, None)
                }
            }
            SiteKind::Gemm { legacy } => {
                let target = gemm_target(shape_at(0), shape_at(1), attrs);
                let map = vec![None, site_pos(2)];
                let outcome = match node.input.get(2).filter(|c| !c.is_empty()) {
                    None => Outcome { output: target.clone(), verdict: Verdict::Same },
                    Some(_) if legacy && attrs.int("broadcast") != Some(1) => {
                        rules::equal_shapes(&[&target, shape_at(2)])
                    }
                    Some(_) => rules::unidirectional(&target, shape_at(2)),
                };
                let rule = if legacy && attrs.int("broadcast") != Some(1) { Rule::None } else { Rule::Unidirectional };
                (rule, Outcome { output: target.clone(), ..outcome }, map, Some(target))
            }
            SiteKind::PRelu { legacy } => {
                let (x, slope) = (shape_at(0), shape_at(1));
                let map = vec![site_pos(0), site_pos(1)];
                let outcome = match legacy_prelu(x, slope) {
                    Some(outcome) if legacy => outcome,
                    _ => rules::unidirectional(x, slope),
                };
                (Rule::Unidirectional, outcome, map, None)
            }
            SiteKind::Expand => {
                let target = expand_target(inputs.get(1).copied().flatten());
                let outcome = rules::bidirectional(shape_at(0), &target);
                (Rule::Bidirectional, outcome, vec![site_pos(0), site_pos(1)], Some(target))
            }
        };

        let site_inputs: Vec<SiteInput> = present
            .iter()
            .map(|&p| {
                let facts = inputs.get(p).copied().flatten();
                SiteInput {
                    name: node.input[p].clone(),
                    shape: facts.map_or_else(Shape::unranked, |f| f.shape.clone()),
                    elem: facts.and_then(|f| f.elem),
                }
            })
            .collect();
        let type_mismatch = type_mismatch(op.same_type, &present, &site_inputs);
        let elem = if op.bool_output {
            Some(tensor::BOOL)
        } else {
            let typed = match op.same_type {
                SameType::Inputs(group) => group.first().copied().unwrap_or(0),
                _ => 0,
            };
            site_pos(typed).and_then(|i| site_inputs[i].elem)
        };
        let unknown_out = outcome.output.dims().is_some_and(|d| d.iter().any(|d| matches!(d, Dim::Unknown)));
        let output_shape = match op.kind {
            SiteKind::Multi | SiteKind::Expand if unknown_out => {
                let mut shapes: Vec<&Shape> = present.iter().map(|&p| shape_at(p)).collect();
                if let (SiteKind::Expand, Some(target)) = (op.kind, &target) {
                    shapes = vec![shape_at(0), target];
                }
                name_unknown_parts(&outcome.output, &shapes, &mut || fresh_symbol(&mut self.fresh))
            }
            _ => outcome.output.clone(),
        };

        let (graph, node_name, node_index, functions) = match env.call {
            None => (env.path.clone(), node_label(node, index), index, Vec::new()),
            Some(call) => {
                let inner: Vec<String> = call.inner_nodes.iter().cloned().chain([node_label(node, index)]).collect();
                let frames = call
                    .frames
                    .iter()
                    .zip(inner)
                    .map(|(function, node)| FunctionFrame { function: function.clone(), node })
                    .collect();
                (call.graph.clone(), call.node.clone(), call.node_index, frames)
            }
        };
        let site = Site {
            loc: NodeLoc { graph: env.loc.clone(), node: index },
            graph,
            node: node_name,
            node_index,
            op: node.op_type().to_string(),
            kind: op.kind,
            rule,
            inputs: site_inputs,
            target,
            output_shape: output_shape.clone(),
            verdict: outcome.verdict,
            rule_inputs,
            type_mismatch,
            functions,
            opset: env.opset,
            attrs: SiteAttrs::of(attrs),
        };
        match &mut self.each_site {
            Some(each) => each(site),
            None => self.out.sites.push(site),
        }
        let value = infer::values::broadcast_value(node.op_type(), inputs, &output_shape);
        let mut outputs = vec![ValueFacts { value, ..ValueFacts::tensor(elem, output_shape) }];
        outputs.resize_with(node.output.len().max(1), ValueFacts::unknown);
        outputs
    }
}

/// The output of a numpy broadcast where an unknown dim met symbols: the broadcast of those symbols and a fresh
/// symbol for the unknown one, rather than unknown. The verdict stays what it was (undecided); what this keeps is
/// that the output is built from those symbols, so `expand`'s `x' = Expand(x, Shape(g))`, `g' = Expand(g,
/// Shape(x'))` gives `x'` and `g'` one provable shape.
fn name_unknown_parts(output: &Shape, inputs: &[&Shape], fresh: &mut dyn FnMut() -> Dim) -> Shape {
    let Some(out) = output.dims() else { return output.clone() };
    if !out.iter().any(|d| matches!(d, Dim::Unknown)) {
        return output.clone();
    }
    let rank = out.len();
    let dims = out
        .iter()
        .enumerate()
        .map(|(axis, d)| {
            if !matches!(d, Dim::Unknown) {
                return d.clone();
            }
            let column: Vec<&Dim> = inputs
                .iter()
                .filter_map(|s| s.dims())
                .filter_map(|ds| (axis + ds.len()).checked_sub(rank).map(|i| &ds[i]))
                .filter(|d| !d.is_one())
                .collect();
            let unknowns = column.iter().filter(|d| matches!(d, Dim::Unknown)).count();
            let symbols: Vec<&Dim> = column.iter().copied().filter(|d| d.is_symbolic()).collect();
            if unknowns != 1 || symbols.is_empty() || symbols.len() + 1 != column.len() {
                return Dim::Unknown;
            }
            let named = fresh();
            let mut parts = symbols;
            parts.push(&named);
            rules::symbolic_broadcast(&parts)
        })
        .collect();
    Shape::ranked(dims)
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

/// The shape an `Expand` targets, from the value of its shape input.
fn expand_target(shape_input: Option<&ValueFacts>) -> Shape {
    let Some(facts) = shape_input else { return Shape::unranked() };
    if let Some(values) = &facts.value {
        return Shape::ranked(values.iter().map(tensor::value_dim).collect());
    }
    match facts.shape.dims() {
        // A rank beyond any real tensor's is not worth spelling out dim by dim.
        Some([Dim::Known(n)]) if *n <= MAX_RANK => Shape::ranked(vec![Dim::Unknown; *n as usize]),
        _ => Shape::unranked(),
    }
}

/// The first input of a type group whose element type differs from the group's first known type.
fn type_mismatch(same: SameType, present: &[usize], inputs: &[SiteInput]) -> Option<TypeMismatch> {
    let members: Vec<usize> = match same {
        SameType::Nothing => return None,
        SameType::All => (0..inputs.len()).collect(),
        SameType::Inputs(group) => group.iter().filter_map(|p| present.iter().position(|q| q == p)).collect(),
    };
    let mut first: Option<(usize, i32)> = None;
    for i in members {
        let Some(elem) = inputs[i].elem else { continue };
        match first {
            None => first = Some((i, elem)),
            Some((against, expected)) if expected != elem => {
                return Some(TypeMismatch { input: i, found: elem, against, expected })
            }
            Some(_) => {}
        }
    }
    None
}
