//! The walk over one graph or function body: values in topological order, each node inferred or judged.

use super::call::Call;
use super::contradiction::Rule;
use super::declared::Declared;
use super::flow::Flow;
use super::op_memo::OpFacts;
use super::reads::Reads;
use super::scope::{Body, Env, Outputs, Producers, Scope};
use super::walker::{fresh_symbol, Walker};
use super::*;
use crate::onnx::location::node_label;
use crate::onnx::pb::node::CompactString;
use crate::sys::escape::name as shown;

/// The outputs of a node's graph attributes, by attribute name.
type Subgraphs<'m> = [(&'m str, Vec<ValueFacts>)];

impl<'m> Walker<'m, '_> {
    pub(super) fn note(&mut self, env: &Env<'m, '_>, code: Code, node: Option<(&NodeProto, usize)>, message: String) {
        let (graph, node_name, op) = match (env.call, node) {
            (Some(call), _) => {
                (call.graph.clone(), Some(call.node.clone()), node.map(|(n, _)| n.op_type().to_string()))
            }
            (None, Some((n, i))) => (env.path.clone(), Some(node_label(n, i)), Some(n.op_type().to_string())),
            (None, None) => (env.path.clone(), None, None),
        };
        self.out.notes.push(Note { code, graph, node: node_name, op, message: message.into() });
    }

    /// Walks one body and returns the facts of its outputs.
    pub(super) fn body(&mut self, env: &Env<'m, '_>, body: Body<'m>) -> Vec<ValueFacts> {
        let outer_noted = std::mem::take(&mut self.budget_noted);
        let mut declared = self.declared(env, &body.declared, body.declared_inputs);

        // Facts are kept for every value only when they are asked for (`shapes`); otherwise each value is dropped
        // after its last reader, unless a subgraph of this body might still read it by name.
        let has_subgraphs = body.nodes.iter().any(|n| Attrs::new(n, None).graphs().next().is_some());
        let outer_graphs = std::mem::replace(&mut self.graphs_here, has_subgraphs);
        let keep_all = (body.record && self.options.value_facts) || has_subgraphs;
        let settled_values = body.inputs.len() + body.initializers.len();
        let mut scope = match keep_all {
            // Room for every value the body defines: numbering the nodes (`Producers::of`) adds their outputs' names
            // to the inputs' and initializers', and a table grown then hashes all of those again.
            true => Scope::with_capacity(settled_values + body.nodes.iter().map(|n| n.output.len()).sum::<usize>()),
            // Values followed as they come (`walk_flow`) need no room for every one.
            false => Scope::unordered(settled_values),
        };
        let input_names: Vec<&'m str> = body.inputs.iter().map(|(name, _)| *name).collect();
        for (name, facts) in body.inputs {
            if scope.contains(name) {
                let msg = format!("input '{}' is listed more than once", shown(name));
                self.note(env, Code::DuplicateValue, None, msg);
            }
            let mut facts = facts.filled_from(declared.get(name).unwrap_or(&ValueFacts::unknown()));
            // A graph input's unnamed size is still one size: a fresh symbol keeps it apart from every other. (Not
            // so in a sequence, whose elements may each have their own.)
            if let Some(dims) = facts.shape.0.as_mut().filter(|_| facts.kind.is_tensor()) {
                for d in dims.iter_mut().filter(|d| matches!(d, Dim::Unknown)) {
                    *d = fresh_symbol(&mut self.fresh);
                }
            }
            self.seed_value_range(env, &mut scope, name, facts.elem);
            scope.define(name, facts);
        }
        let inputs = &body.declared[..body.declared_inputs];
        self.define_initializers(env, &mut scope, body.initializers, body.sparse_initializers, inputs);
        // A subgraph reads this body's values by name, through a scope it cannot change: it gets them whole.
        has_subgraphs.then(|| scope.read_all_floats());
        // What inputs and initializers are is settled: their other declarations must agree with it.
        let sparse = body.sparse_initializers.iter().filter_map(|s| s.values.as_ref()).map(|t| t.name());
        let how_many = input_names.len() + body.initializers.len() + body.sparse_initializers.len();
        let settled = input_names.into_iter().chain(body.initializers.iter().map(|t| t.name())).chain(sparse);
        self.compare_settled(env, &scope, &declared, (settled, how_many));
        if self.constant_initializers {
            // An input with an initializer is a constant below IR 4, not something the caller fills.
            body.initializers.iter().for_each(|t| drop(scope.ranges.remove(t.name())));
        }

        if self.each_site.is_none() {
            // Room for this body's sites at once: growing by doubling would copy them, and briefly hold them twice.
            let here = body.nodes.iter().filter(|n| ops::broadcast_op(n.domain(), n.op_type(), env.opset).is_some());
            self.out.sites.reserve(here.count());
        }
        // A body whose values are dropped is walked as its values flow where it can be.
        let outputs = match (!keep_all).then(|| Flow::plan(body.nodes, &scope, &body.outputs, &declared)).flatten() {
            Some(flow) => self.walk_flow(env, &mut scope, &mut declared, (body.nodes, &body.outputs), flow),
            None => self.walk_numbered(env, &mut scope, &mut declared, (body.nodes, &body.outputs), keep_all),
        };
        body.outputs.iter().zip(&outputs).for_each(|(name, &s)| scope.read_floats(s, name));
        let outputs = (body.outputs.iter().zip(outputs))
            .map(|(name, s)| self.lookup(env, &scope, (s, name)).cloned().unwrap_or_default())
            .collect();
        if body.record && self.options.value_facts {
            let values = scope.into_recorded();
            self.out.graphs.push(GraphFacts { path: env.path.clone(), loc: env.loc.clone(), values });
        } else if env.outer.is_empty() && env.call.is_none() && crate::sys::ending() {
            // A top-level graph's scope, in a process that ends with this work, goes with the process: freeing the
            // facts of 10,000 initializers read took ~1.4 M instructions for the exit to throw away. A subgraph's
            // or a call's scope is freed here, so that memory follows what is walked.
            crate::sys::exit_without_freeing(scope);
        }
        (self.budget_noted, self.graphs_here) = (outer_noted, outer_graphs);
        outputs
    }

    /// Walks `nodes` in topological order, each value numbered ([`Producers`]); gives the slots of the body's
    /// outputs (`body_outputs`). Values are dropped after their last reader unless `keep_all`.
    fn walk_numbered(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        declared: &mut Declared<'m>,
        (nodes, body_outputs): (&'m [NodeProto], &[&'m str]),
        keep_all: bool,
    ) -> Vec<u32> {
        let (order, producers) = self.topological_order(env, nodes, scope);
        let outputs: Vec<u32> = body_outputs.iter().map(|name| scope.slot(name)).collect();
        let mut reads = (!keep_all).then(|| Reads::plan(&producers, scope, &order, &outputs));
        declared.index_made(scope);
        // Subgraphs read a body's values by name; nothing else does while it is walked.
        scope.settle(&producers, keep_all);
        let stop = crate::sys::interrupt::request();
        for (position, &index) in order.iter().enumerate() {
            // A caller that asked the work to stop (Ctrl-C in Python) discards what it gets.
            if stop.stop_now() {
                break;
            }
            // Every value's range is worked out: a subgraph may read any by name, or the plan could not follow names.
            let placed = (index, producers.inputs(index), producers.first_output(index), true);
            self.node(env, scope, declared, placed, &nodes[index]);
            if let Some(reads) = &mut reads {
                reads.after(position, scope, &producers);
            }
        }
        outputs
    }

    /// Walks the graphs `node`'s attributes hold, inside the scopes visible at it, and returns their outputs' facts
    /// by attribute name. A control-flow node's `inputs` say what its body's inputs start with
    /// (`infer::bodies`).
    fn subgraphs(
        &mut self,
        env: &Env<'m, '_>,
        scope: &Scope<'m>,
        (index, node, attrs): (usize, &'m NodeProto, Attrs<'m>),
        inputs: &[Option<&ValueFacts>],
    ) -> Vec<(&'m str, Vec<ValueFacts>)> {
        let mut subgraphs: Vec<(&'m str, Vec<ValueFacts>)> = Vec::new();
        if env.depth >= MAX_NESTING && attrs.graphs().next().is_some() {
            let msg = format!("subgraphs nest deeper than {MAX_NESTING} levels; the deeper ones are not checked");
            self.note(env, Code::NestingTooDeep, Some((node, index)), msg);
        }
        if env.depth < MAX_NESTING {
            // Made for the first graph only: most nodes hold none, and a label is a String.
            let mut label = None;
            for (attribute, attr, k, graph) in attrs.graphs() {
                let label = label.get_or_insert_with(|| node_label(node, index));
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
                let mut body = Body::graph(graph);
                if ops::is_default_domain(node.domain()) {
                    let seeds = infer::bodies::body_inputs(node.op_type(), env.opset, attrs, inputs, body.inputs.len());
                    body.inputs.iter_mut().zip(seeds).for_each(|((_, facts), seed)| *facts = seed);
                }
                let outputs = self.body(&sub, body);
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
        declared: &Declared<'m>,
        (index, first): (usize, u32),
        node: &'m NodeProto,
        outputs: Outputs,
    ) {
        match outputs.into_inner() {
            // Most nodes make one value: taken out whole, where an iterator over the list moved it twice more and
            // cost the 132 PyTorch exports' walk ~1 M instructions.
            Ok([facts]) => {
                if let Some(name) = node.output.first() {
                    self.define_output(env, (scope, declared), (index, first, 0), node, (name, facts));
                }
            }
            Err(outputs) => {
                for (k, (name, facts)) in node.output.iter().zip(outputs).enumerate() {
                    self.define_output(env, (scope, declared), (index, first, k), node, (name, facts));
                }
            }
        }
    }

    /// Defines a node's output `k` (in slot `first + k`), named `name`, checked against and completed by its
    /// declaration.
    #[inline(always)]
    fn define_output(
        &mut self,
        env: &Env<'m, '_>,
        (scope, declared): (&mut Scope<'m>, &Declared<'m>),
        (index, first, k): (usize, u32, usize),
        node: &'m NodeProto,
        (name, facts): (&'m CompactString, ValueFacts),
    ) {
        if name.is_empty() {
            return;
        }
        let facts = match declared.of_made(first + k as u32, name) {
            Some(d) => {
                // A declaration is read with the bound sizes too; one that contradicts inference only once they
                // are bound is the binding's contradiction, not the model's.
                let bound = match self.bindings.is_empty() {
                    true => std::borrow::Cow::Borrowed(d),
                    false => std::borrow::Cow::Owned(self.bindings.facts(d)),
                };
                if let Some(why) = tensor::contradiction(&facts, &bound) {
                    if !self.bindings.is_empty() && tensor::contradiction(&facts, d).is_none() {
                        let msg = format!(
                            "value '{}' {} at the bound sizes: {why}",
                            shown(name),
                            super::bind::DECLARED_OTHERWISE
                        );
                        self.note(env, Code::BindContradiction, Some((node, index)), msg);
                    } else {
                        let msg = format!("value '{}' {}: {why}", shown(name), super::bind::DECLARED_OTHERWISE);
                        self.note(env, Code::DeclaredShapeMismatch, Some((node, index)), msg);
                    }
                }
                let facts = facts.filled_from(&bound);
                self.compare_declarations(env, declared, (name, &facts), Some((node, index)), false);
                facts
            }
            None => facts,
        };
        scope.define_made(first + k as u32, name, facts);
    }

    /// The outputs of a broadcasting node outside the ONNX domain besides the broadcast itself (a skip
    /// normalization's statistics) and its output's type, from the op's inference rule or its declaration; what
    /// the rule found the inputs break or meet only under conditions (GroupQueryAttention's cache sizes).
    fn site_outputs(
        &mut self,
        env: &Env<'m, '_>,
        node: &'m NodeProto,
        attrs: Attrs<'m>,
        (refs, subgraphs): (&[Option<&ValueFacts>], &Subgraphs<'m>),
        declared: Option<infer::custom::OpDecl>,
        outputs: &mut [ValueFacts],
    ) -> Vec<infer::Contradiction> {
        if let Some(decl) = declared {
            let elem = decl.elem(refs);
            outputs.iter_mut().for_each(|o| o.elem = elem);
            return Vec::new();
        }
        let domain = node.domain();
        let (inferred, found) = self.run_rule(env, (node, attrs), refs, subgraphs, |ctx| infer::infer_in(domain, ctx));
        let Some(inferred) = inferred else { return found };
        // An attention op's site is its bias against the scores (B, N, S, T), which are no output of the op.
        let scores = matches!(ops::contrib_broadcast_op(node.domain(), node.op_type()), Some(o) if matches!(o.kind, ops::SiteKind::AttentionBias(_)));
        for (i, (out, inf)) in outputs.iter_mut().zip(inferred).enumerate() {
            if i == 0 && !scores {
                out.elem = inf.elem.or(out.elem);
            } else {
                *out = inf;
            }
        }
        found
    }

    /// A node no rule knows: counted by op, noted (reported under `--strict`), its outputs unknown.
    fn opaque_node(&mut self, env: &Env<'m, '_>, index: usize, node: &'m NodeProto) -> Vec<ValueFacts> {
        let op = if node.domain().is_empty() {
            node.op_type().to_string()
        } else {
            format!("{}.{}", node.domain(), node.op_type())
        };
        let msg = format!(
            "onnx-bcast has no inference rule for {op}: the shapes of its outputs and of what depends on them are \
             unknown (declare it in onnx-bcast.toml under [ops])"
        );
        self.note(env, Code::OpaqueNode, Some((node, index)), msg);
        *self.out.opaque.entry(op).or_default() += 1;
        vec![ValueFacts::unknown(); node.output.len()]
    }

    /// The facts a name resolved to slot `s` in `scope` reads: the scope's, else the enclosing scopes' by name.
    #[inline(always)]
    pub(super) fn lookup<'s>(
        &self,
        env: &'s Env<'m, '_>,
        scope: &'s Scope<'m>,
        (s, name): (u32, &(impl AsRef<str> + ?Sized)),
    ) -> Option<&'s ValueFacts> {
        scope.read(s, name).or_else(|| env.outer.iter().rev().find_map(|o| o.get(name.as_ref())))
    }

    /// Nodes in an order where producers come first: the file's order when it is already topological (as ONNX
    /// requires), else Kahn's order; nodes caught in a cycle come last, in file order, and are reported.
    /// Also returns which node produces each value.
    pub(super) fn topological_order(
        &mut self,
        env: &Env<'m, '_>,
        nodes: &'m [NodeProto],
        scope: &mut Scope<'m>,
    ) -> (Vec<usize>, Producers<'m>) {
        let producers = Producers::of(nodes, scope, |i, out, defined_before| {
            if defined_before {
                let msg = format!("value '{}' is defined more than once", shown(out));
                self.note(env, Code::DuplicateValue, Some((&nodes[i], i)), msg);
            }
        });
        let in_order = producers.in_order;
        if in_order {
            return ((0..nodes.len()).collect(), producers);
        }
        let mut pending: Vec<usize> = vec![0; nodes.len()];
        let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for (i, waiting) in pending.iter_mut().enumerate() {
            let deps: HashSet<usize> = producers.input_nodes(i).collect();
            *waiting = deps.len();
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
            let names: Vec<String> =
                stuck.iter().take(5).map(|&i| shown(&node_label(&nodes[i], i)).to_string()).collect();
            let msg = match stuck.len() {
                1 => format!("node {} depends on its own output", names[0]),
                n => format!("{n} nodes form a cycle, among them {}", names.join(", ")),
            };
            self.note(env, Code::GraphCycle, Some((&nodes[stuck[0]], stuck[0])), msg);
            order.extend(stuck);
        }
        (order, producers)
    }

    /// A size `Shape` reads is one size, whatever it is: an unknown dim of the input gets a fresh symbol there, so
    /// that what is built from the shape (expand's `Expand(x, Shape(y))`) is provably y's size again.
    fn name_what_shape_reads(&mut self, scope: &mut Scope<'m>, node: &'m NodeProto, op: (&str, &str), slots: &[u32]) {
        if op.1 == "Shape" && ops::is_default_domain(op.0) {
            let observed = node.input.first().zip(slots.first()).and_then(|(n, &s)| scope.read_mut(s, n));
            if let Some(dims) = observed.and_then(|f| f.shape.0.as_mut()) {
                for d in dims.iter_mut().filter(|d| matches!(d, Dim::Unknown)) {
                    *d = fresh_symbol(&mut self.fresh);
                }
            }
        }
    }

    pub(super) fn node(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        declared: &Declared<'m>,
        (index, slots, first, ranged): (usize, &[u32], u32, bool),
        node: &'m NodeProto,
    ) {
        let attrs = Attrs::new(node, env.call.map(|c| c.attrs));
        let (domain, op_type) = (node.domain(), node.op_type()); // Read once: a node is asked about them often.
        let facts = *self.op_facts(env, (index, node), (domain, op_type));
        let OpFacts { broadcast, plain, .. } = facts;
        // A broadcasting node of the ONNX domain reads its inputs' shapes, types and integer contents; any other
        // node may ask for an initializer's floating-point contents.
        if broadcast.is_none() || !ops::is_default_domain(domain) {
            node.input.iter().zip(slots).for_each(|(name, &s)| scope.read_floats(s, name));
        }
        self.name_what_shape_reads(scope, node, (domain, op_type), slots);
        // A counted pair with one output is built in the box it is defined in, rather than moved there through the
        // site's list of outputs (see `in_place`).
        let mut spare = broadcast
            .filter(|_| plain && attrs.is_empty() && self.quick_pairs)
            .filter(|_| self.one_undeclared_output(declared, node, first))
            .map(|_| scope.spare_box());
        let dims = match spare.is_some() {
            true => None,
            false => Some(broadcast.filter(|_| self.counts_pairs()).map(|_| scope.spare_dims()).unwrap_or_default()),
        };
        let refs = self.read_inputs(env, scope, (index, node), slots);
        // What reads a value that follows a contradiction (directly, or in a subgraph) follows it too.
        let tainted_refs = refs.iter().flatten().any(|f| f.contradicted);
        // What this node's inference refuses for size is counted from here (declarations and subgraphs before it
        // count for themselves). A box is spare only for a node of no attribute, and so of no subgraph.
        let pair = match (broadcast, spare.as_deref_mut()) {
            (Some(op), Some(facts)) if !tainted_refs => {
                crate::sizes::sym::take_refusals();
                self.counted_pair_into(node, op, &refs, facts).map(|kind| (op, kind))
            }
            _ => None,
        };
        if let (Some((op, kind)), Some(mut facts)) = (pair, spare.take_if(|_| pair.is_some())) {
            self.in_place(env, (index, node, attrs), (op, kind), &refs, &mut facts);
            let range = ranged
                .then(|| self.value_range(env, scope, (index, node, attrs), &refs, std::slice::from_ref(&*facts)));
            drop(refs);
            scope.define_boxed(first, &node.output[0], facts);
            return super::index_bound::keep_range(scope, node, range.flatten());
        }
        // Most nodes hold no attribute, and so no graph; most bodies hold no graph at all.
        let subgraphs = match attrs.is_empty() || !self.graphs_here {
            true => Vec::new(),
            false => self.subgraphs(env, scope, (index, node, attrs), &refs),
        };
        let tainted = tainted_refs || subgraphs.iter().any(|(_, outputs)| outputs.iter().any(|f| f.contradicted));
        crate::sizes::sym::take_refusals();
        let mut outputs: Outputs = match tainted {
            true => smallvec::smallvec![ValueFacts::contradicted(); node.output.len()],
            false => self.outputs(env, (index, node, attrs), (&refs, &subgraphs), (facts, dims, (domain, op_type))),
        };
        let refused = crate::sizes::sym::take_refusals() > 0;
        self.keep_within_budget(env, (node, index), refused, &mut outputs);
        let range = (ranged && !tainted).then(|| self.value_range(env, scope, (index, node, attrs), &refs, &outputs));
        let range = range.flatten();
        drop(refs);
        if let Some(b) = spare {
            scope.give_back(b);
        }
        self.define_outputs(env, scope, declared, (index, first), node, outputs);
        super::index_bound::keep_range(scope, node, range);
    }

    /// What the walk makes of `node`'s op; the first node of the default domain in a model that imports no opset for
    /// it is told which opset is assumed.
    #[inline(always)]
    pub(super) fn op_facts(
        &mut self,
        env: &Env<'m, '_>,
        (index, node): (usize, &'m NodeProto),
        (domain, op_type): (&'m str, &'m str),
    ) -> &OpFacts {
        if self.opset_missing && env.call.is_none() && ops::is_default_domain(domain) {
            self.opset_missing = false;
            let msg = format!("no opset import for the default domain; opset {LATEST_OPSET} assumed");
            self.note(env, Code::MissingOpset, Some((node, index)), msg);
        }
        let custom = &self.custom;
        self.ops.get((domain, op_type, env.opset), || {
            let decl = custom.get(domain, op_type).copied();
            let broadcast = ops::broadcast_op(domain, op_type, env.opset)
                .or_else(|| decl.and_then(|d| d.broadcast_inputs()).map(ops::declared_broadcast))
                .or_else(|| ops::contrib_broadcast_op(domain, op_type));
            let plain = ops::is_default_domain(domain) && !infer::requires_beyond_broadcasting(op_type);
            OpFacts { decl, broadcast, plain }
        })
    }

    /// The outputs of a node that follows no contradiction: judged as a site, walked as a function call, or
    /// inferred by the op's rule. (Its op's domain and name as [`Walker::node`] read them: read again here, they cost
    /// the 132 PyTorch exports' walk 0.5 M instructions.)
    #[inline]
    fn outputs(
        &mut self,
        env: &Env<'m, '_>,
        (index, node, attrs): (usize, &'m NodeProto, Attrs<'m>),
        (refs, subgraphs): (&[Option<&ValueFacts>], &Subgraphs<'m>),
        (OpFacts { decl, broadcast, .. }, dims, (domain, op_type)): (OpFacts, Option<Vec<Dim>>, (&'m str, &'m str)),
    ) -> Outputs {
        if let Some(op) = broadcast {
            let mut outputs = self.site(env, (index, node, attrs), op, refs, dims);
            if ops::is_default_domain(domain) && !infer::requires_beyond_broadcasting(op_type) {
                outputs
            } else if ops::is_default_domain(domain) {
                // What the op requires beyond its broadcast, which its rule judged: Gemm's inner sizes.
                let validate: Rule = |ctx| {
                    infer::validate_broadcasting(ctx);
                    None
                };
                let (_, found) = self.run_rule(env, (node, attrs), refs, subgraphs, validate);
                self.checked(env, index, node, refs, found, outputs.into_vec()).into()
            } else {
                // A contrib or declared site: its other outputs come from the op's own rule.
                let found = self.site_outputs(env, node, attrs, (refs, subgraphs), decl, &mut outputs);
                self.checked(env, index, node, refs, found, outputs.into_vec()).into()
            }
        } else if let Some(&(k, f)) = self.functions.get(&(domain, op_type)) {
            self.call(env, Call { index, node, function_index: k, f }, refs.iter().map(|r| r.cloned()).collect()).into()
        } else {
            let (inferred, found) = match decl {
                Some(decl) => self.run_rule(env, (node, attrs), refs, subgraphs, |ctx| decl.infer(ctx)),
                None => self.run_rule(env, (node, attrs), refs, subgraphs, |ctx| infer::infer_in(domain, ctx)),
            };
            let outputs = inferred.unwrap_or_else(|| self.opaque_node(env, index, node));
            self.checked(env, index, node, refs, found, outputs).into()
        }
    }

    /// Whether `node` has one output, named, that no declaration names (`first` is its slot): what a counted pair
    /// defines in place needs no comparison with a declaration.
    #[inline]
    fn one_undeclared_output(&self, declared: &Declared<'m>, node: &NodeProto, first: u32) -> bool {
        matches!(&node.output[..], [name] if !name.is_empty() && declared.of_made(first, name).is_none())
    }

    /// A counted pair whose output [`Walker::counted_pair_into`] wrote in `facts`: counted, and its output bounded as
    /// every node's ([`Walker::keep_within_budget`]). Debug builds judge the site in full all the same
    /// ([`Walker::site`], which counts it then) and assert that it gives the same output. A taker of pair records
    /// gets the pair's record instead ([`Walker::pair_record`]).
    #[inline(always)]
    pub(super) fn in_place(
        &mut self,
        env: &Env<'m, '_>,
        (index, node, attrs): (usize, &'m NodeProto, Attrs<'m>),
        (op, kind): (BroadcastOp, rules::VerdictKind),
        refs: &[Option<&ValueFacts>],
        facts: &mut ValueFacts,
    ) {
        if self.pair_records {
            self.pair_record(env, (index, node, attrs), (op, kind), refs, facts);
        } else if cfg!(debug_assertions) {
            let full = self.site(env, (index, node, attrs), op, refs, Some(Vec::new()));
            debug_assert!(
                full.len() == 1 && full[0] == *facts,
                "a counted pair built in place has the output its full judgement gives: {facts:?} against {full:?}"
            );
        } else if self.each_site.is_some() {
            self.count_site(kind);
        }
        // The pair's sizes are all known: only a refusal or contents can be past the budget.
        let refused = crate::sizes::sym::take_refusals() > 0;
        if refused || facts.value.is_some() {
            self.keep_within_budget(env, (node, index), refused, std::slice::from_mut(facts));
        }
    }

    /// The facts node `index` reads, input by input, from the slots its inputs resolve to: references into the
    /// scopes, not copies, since a node's inputs are only read until its outputs are defined.
    fn read_inputs<'s>(
        &mut self,
        env: &'s Env<'m, '_>,
        scope: &'s Scope<'m>,
        (index, node): (usize, &'m NodeProto),
        slots: &[u32],
    ) -> smallvec::SmallVec<[Option<&'s ValueFacts>; 4]> {
        // Inline: most nodes read at most four values, and a list on the heap was an allocation per node.
        let mut refs = smallvec::SmallVec::new();
        for (name, &s) in node.input.iter().zip(slots) {
            if name.is_empty() {
                refs.push(None);
                continue;
            }
            let found = self.lookup(env, scope, (s, name));
            // A value some node of the body makes, not yet walked (in a cycle), is not undefined.
            if found.is_none() && !scope.made_here(s) {
                let msg = format!("input '{}' is not defined by any graph input, initializer or node", shown(name));
                self.note(env, Code::UndefinedValue, Some((node, index)), msg);
            }
            refs.push(found);
        }
        refs
    }

    /// What the caller feeds the main graph, as a value range: a boolean is 0 or 1, an integer what fills it (or
    /// the range `--range` keeps it within).
    fn seed_value_range(&self, env: &Env<'m, '_>, scope: &mut Scope<'m>, name: &'m str, elem: Option<i32>) {
        if !env.loc.is_empty() || env.call.is_some() {
            return;
        }
        let within = self.input_values.iter().find(|(n, _)| **n == *name).map(|(_, r)| *r);
        let fed = match within.and_then(|r| Some((i64::try_from(r.first()).ok()?, i64::try_from(r.last()).ok()?))) {
            Some((lo, hi)) => Some(crate::infer::value_range::ValueRange::fed_within(name, lo, hi)),
            None => crate::infer::value_range::ValueRange::fed(name, elem),
        };
        if let Some(r) = fed {
            scope.ranges.insert(name, r);
        }
    }
}
