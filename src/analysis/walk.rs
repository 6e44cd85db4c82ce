//! The walk over one graph or function body: values in topological order, each node inferred or judged.

use super::call::Call;
use super::contradiction::Rule;
use super::scope::{Body, Env, Produced, Reads, Scope};
use super::*;

pub(super) struct Walker<'m, 's> {
    pub(super) options: Options,
    /// `--bind` sizes: graph inputs' declared symbols take them before inference.
    pub(super) bindings: Bindings,
    /// Record function bodies' facts too (`infer` writes them).
    pub(super) function_facts: bool,
    /// Where sites go when they are not kept in the analysis.
    pub(super) each_site: Option<&'s mut dyn FnMut(Site)>,
    pub(super) functions: HashMap<(&'m str, &'m str), (usize, &'m FunctionProto)>,
    pub(super) active: Vec<(&'m str, &'m str)>,
    pub(super) out: Analysis,
    /// The model imports no default-domain opset and no default-domain node has been met yet.
    pub(super) opset_missing: bool,
    /// Fresh symbols made so far.
    pub(super) fresh: usize,
    /// Contents of small integer tensors whose data lives outside the model file, by tensor name.
    pub(super) external: HashMap<String, Vec<i64>>,
    /// Below IR 4 every initializer must also be listed as a graph input; runtimes then hold it constant (as
    /// onnxruntime does), so its contents count. From IR 4 on, listing it as an input makes it a default that the
    /// caller may override.
    pub(super) constant_initializers: bool,
    /// Function calls already walked, and what walking them may still cost.
    pub(super) calls: crate::calls::Calls,
}

/// A symbol for a size nothing names. `?` cannot start a name in the models this tool has met, and the number
/// keeps every one distinct, so no two are ever taken to be equal.
pub(super) fn fresh_symbol(counter: &mut usize) -> Dim {
    *counter += 1;
    Dim::sym(&format!("?{counter}"))
}

pub(super) fn node_label(node: &NodeProto, index: usize) -> String {
    if node.name().is_empty() {
        format!("#{index} ({})", node.op_type())
    } else {
        node.name().to_string()
    }
}

impl<'m> Walker<'m, '_> {
    pub(super) fn note(&mut self, env: &Env<'m, '_>, code: Code, node: Option<(&NodeProto, usize)>, message: String) {
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
    pub(super) fn body(&mut self, env: &Env<'m, '_>, body: Body<'m>) -> Vec<ValueFacts> {
        let declared = self.declared(env, &body.declared, body.declared_inputs);

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
        self.define_initializers(env, &mut scope, body.initializers, &body.declared[..body.declared_inputs]);

        let (order, producer) = self.topological_order(env, body.nodes, &scope);
        let mut reads = (!keep_all).then(|| Reads::plan(producer, body.nodes, &order, &body.outputs));
        if self.each_site.is_none() {
            // Room for this body's sites at once: growing by doubling would copy them, and briefly hold them twice.
            let here = body.nodes.iter().filter(|n| ops::broadcast_op(n.domain(), n.op_type(), env.opset).is_some());
            self.out.sites.reserve(here.count());
        }
        let produced = Produced { nodes: body.nodes, names: std::cell::OnceCell::new() };
        for (position, &index) in order.iter().enumerate() {
            let node = &body.nodes[index];
            self.node(env, &mut scope, &declared, &produced, index, node);
            if let Some(reads) = &mut reads {
                reads.after(position, &mut scope);
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

    /// The facts each value's declaration gives (graph inputs first: `declared_inputs` of them).
    fn declared(
        &mut self,
        env: &Env<'m, '_>,
        infos: &[&'m ValueInfoProto],
        declared_inputs: usize,
    ) -> HashMap<&'m str, ValueFacts> {
        let mut declared: HashMap<&'m str, ValueFacts> = HashMap::default();
        for (i, vi) in infos.iter().enumerate() {
            let mut negative = Vec::new();
            let mut facts = tensor::facts_from_type(vi.r#type.as_ref(), &mut negative, i >= declared_inputs);
            if i < declared_inputs && !self.bindings.is_empty() {
                facts = self.bindings.facts(&facts);
            }
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
        declared
    }

    /// Defines a body's initializers in `scope`, noting duplicates and data that does not fit the dims.
    fn define_initializers(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        initializers: &'m [TensorProto],
        inputs: &[&'m ValueInfoProto],
    ) {
        let mut initialized: HashSet<&str> = HashSet::default();
        // The inputs' declarations by name, made only when an initializer names an input.
        let mut declared_inputs: Option<HashMap<&str, &ValueInfoProto>> = None;
        for init in initializers {
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
            // shape wins, the initializer fills what is undeclared. One that contradicts the declaration is refused
            // by runtimes: the value is contradicted.
            let is_input = scope.values.contains_key(init.name());
            if is_input {
                let by_name = declared_inputs.get_or_insert_with(|| inputs.iter().map(|vi| (vi.name(), *vi)).collect());
                let declared = by_name.get(init.name()).copied();
                if self.initializer_contradicts(env, init.name(), declared, &from_tensor) {
                    scope.define(init.name(), ValueFacts::contradicted());
                    continue;
                }
            }
            let facts = match scope.values.get(init.name()) {
                Some(input) if input.shape.dims().is_some() && !self.constant_initializers => {
                    ValueFacts::tensor(input.elem, input.shape.clone())
                }
                _ => from_tensor,
            };
            scope.define(init.name(), facts);
        }
    }

    /// Walks the graphs `node`'s attributes hold, inside the scopes visible at it, and returns their outputs' facts
    /// by attribute name.
    fn subgraphs(
        &mut self,
        env: &Env<'m, '_>,
        scope: &Scope<'m>,
        index: usize,
        node: &'m NodeProto,
        attrs: Attrs<'m>,
    ) -> Vec<(&'m str, Vec<ValueFacts>)> {
        let mut subgraphs: Vec<(&'m str, Vec<ValueFacts>)> = Vec::new();
        if env.depth >= MAX_NESTING && attrs.graphs().next().is_some() {
            let msg = format!("subgraphs nest deeper than {MAX_NESTING} levels; the deeper ones are not checked");
            self.note(env, Code::NestingTooDeep, Some((node, index)), msg);
        }
        if env.depth < MAX_NESTING {
            let label = node_label(node, index);
            for (attribute, attr, k, graph) in attrs.graphs() {
                let chain: Vec<&Scope<'m>> = env.outer.iter().copied().chain(std::iter::once(scope)).collect();
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
        subgraphs
    }

    /// Defines a node's outputs in `scope`, checked against and completed by their declarations.
    fn define_outputs(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        declared: &HashMap<&'m str, ValueFacts>,
        index: usize,
        node: &'m NodeProto,
        outputs: Vec<ValueFacts>,
    ) {
        for (name, facts) in node.output.iter().zip(outputs) {
            if name.is_empty() {
                continue;
            }
            let facts = match declared.get(name.as_str()) {
                Some(d) => {
                    // A declaration is read with the bound sizes too; one that contradicts inference only once they
                    // are bound is the binding's contradiction, not the model's.
                    let bound = match self.bindings.is_empty() {
                        true => std::borrow::Cow::Borrowed(d),
                        false => std::borrow::Cow::Owned(self.bindings.facts(d)),
                    };
                    if let Some(why) = tensor::contradiction(&facts, &bound) {
                        if !self.bindings.is_empty() && tensor::contradiction(&facts, d).is_none() {
                            let msg =
                                format!("value '{name}' {} at the bound sizes: {why}", super::bind::DECLARED_OTHERWISE);
                            self.note(env, Code::BindContradiction, Some((node, index)), msg);
                        } else {
                            let msg = format!("value '{name}' {}: {why}", super::bind::DECLARED_OTHERWISE);
                            self.note(env, Code::DeclaredShapeMismatch, Some((node, index)), msg);
                        }
                    }
                    facts.filled_from(&bound)
                }
                None => facts,
            };
            scope.define(name, facts);
        }
    }

    pub(super) fn lookup<'s>(&self, env: &'s Env<'m, '_>, scope: &'s Scope<'m>, name: &str) -> Option<&'s ValueFacts> {
        scope.values.get(name).or_else(|| env.outer.iter().rev().find_map(|s| s.values.get(name)))
    }

    /// Nodes in an order where producers come first: the file's order when it is already topological (as ONNX
    /// requires), else Kahn's order; nodes caught in a cycle come last, in file order, and are reported.
    /// Also returns which node produces each value.
    pub(super) fn topological_order(
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

    pub(super) fn node(
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

        let subgraphs = self.subgraphs(env, scope, index, node, attrs);

        // What reads a value that follows a contradiction (directly, or in a subgraph) follows it too.
        let tainted = refs.iter().flatten().any(|f| f.contradicted)
            || subgraphs.iter().any(|(_, outputs)| outputs.iter().any(|f| f.contradicted));
        let outputs = if tainted {
            vec![ValueFacts::contradicted(); node.output.len()]
        } else if let Some(op) = ops::broadcast_op(node.domain(), node.op_type(), env.opset) {
            let outputs = self.site(env, index, node, attrs, op, &refs);
            // What the op requires beyond its broadcast, which its rule judged: Gemm's inner sizes.
            let validate: Rule = |ctx| {
                infer::validate_broadcasting(ctx);
                None
            };
            let (_, found) = self.run_rule(env, (node, attrs), &refs, &subgraphs, validate);
            self.checked(env, index, node, &refs, found, outputs)
        } else if let Some(&(k, f)) = self.functions.get(&(node.domain(), node.op_type())) {
            self.call(env, Call { index, node, function_index: k, f }, refs.iter().map(|r| r.cloned()).collect())
        } else {
            let (inferred, found) = self.run_rule(env, (node, attrs), &refs, &subgraphs, infer::infer);
            let outputs = inferred.unwrap_or_else(|| self.opaque(node));
            self.checked(env, index, node, &refs, found, outputs)
        };
        self.define_outputs(env, scope, declared, index, node, outputs);
    }
}
