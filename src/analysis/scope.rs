//! What a walk carries: the values in scope, their remaining readers, the body being walked and where it is.

use super::*;

/// The values visible in one graph body.
pub(super) struct Scope<'m> {
    pub(super) values: HashMap<&'m str, ValueFacts>,
    /// Names in the order they were defined: inputs, initializers, then node outputs in topological order.
    /// `None` when the body's facts are not recorded.
    pub(super) order: Option<Vec<&'m str>>,
}

impl<'m> Scope<'m> {
    /// Room for every value a body defines, so that the table is never rehashed while it grows.
    pub(super) fn with_capacity(n: usize) -> Scope<'m> {
        let order = Some(Vec::with_capacity(n));
        Scope { values: HashMap::with_capacity_and_hasher(n, Default::default()), order }
    }

    /// A scope whose values come and go (see [`Reads`]) and whose order is not kept.
    pub(super) fn unordered(n: usize) -> Scope<'m> {
        Scope { values: HashMap::with_capacity_and_hasher(n, Default::default()), order: None }
    }

    pub(super) fn define(&mut self, name: &'m str, facts: ValueFacts) {
        if self.values.insert(name, facts).is_none() {
            if let Some(order) = &mut self.order {
                order.push(name);
            }
        }
    }
}

/// When each node-made value of a body has had its last reader. Once it has, its facts are dropped, so that
/// memory follows the graph's width, not its length: a chain of a million nodes holds a few values at a time
/// (bench/run.sh hostile measures it). Graph outputs are never dropped. The drops are worked out once, as a list
/// sorted by walk position, so that the walk itself does no more than one removal per value.
pub(super) struct Reads<'m> {
    /// (position in the walk after which the value goes, value), by position.
    drops: Vec<(usize, &'m str)>,
    next: usize,
}

impl<'m> Reads<'m> {
    /// From the table of producers (value → node index) and the walk's order of nodes.
    pub(super) fn plan(
        mut last: HashMap<&'m str, usize>,
        nodes: &'m [NodeProto],
        order: &[usize],
        outputs: &[&'m str],
    ) -> Reads<'m> {
        let mut position = vec![0; nodes.len()];
        for (p, &i) in order.iter().enumerate() {
            position[i] = p;
        }
        // A value nobody reads goes right after its producer; one that is read, after its last reader.
        last.values_mut().for_each(|v| *v = position[*v]);
        for (p, &i) in order.iter().enumerate() {
            for name in &nodes[i].input {
                if let Some(l) = last.get_mut(name.as_str()) {
                    *l = (*l).max(p);
                }
            }
        }
        for name in outputs {
            last.remove(name);
        }
        let mut drops: Vec<(usize, &'m str)> = last.into_iter().map(|(name, p)| (p, name)).collect();
        drops.sort_unstable_by_key(|&(p, _)| p);
        Reads { drops, next: 0 }
    }

    /// After the node at walk position `position` was walked: what nobody reads any more goes.
    pub(super) fn after(&mut self, position: usize, scope: &mut Scope<'m>) {
        while let Some(&(p, name)) = self.drops.get(self.next) {
            if p > position {
                break;
            }
            scope.values.remove(name);
            self.next += 1;
        }
    }
}

/// Values some node of a body produces, even one stuck in a cycle: reading them is not reading nothing. Only asked
/// about a name that is not defined yet, which a well-formed model never has, so the set is built on first use.
pub(super) struct Produced<'m> {
    pub(super) nodes: &'m [NodeProto],
    pub(super) names: std::cell::OnceCell<HashSet<&'m str>>,
}

impl<'m> Produced<'m> {
    pub(super) fn contains(&self, name: &str) -> bool {
        let names = self.names.get_or_init(|| {
            self.nodes.iter().flat_map(|n| n.output.iter().map(String::as_str)).filter(|o| !o.is_empty()).collect()
        });
        names.contains(name)
    }
}

/// A graph or function body, as far as the walk needs it.
pub(super) struct Body<'m> {
    pub(super) nodes: &'m [NodeProto],
    /// Inputs with the facts they start with.
    pub(super) inputs: Vec<(&'m str, ValueFacts)>,
    pub(super) initializers: &'m [TensorProto],
    pub(super) sparse_initializers: &'m [SparseTensorProto],
    pub(super) declared: Vec<&'m ValueInfoProto>,
    /// How many of `declared`, from the front, declare graph inputs.
    pub(super) declared_inputs: usize,
    pub(super) outputs: Vec<&'m str>,
    /// Graphs record their facts; a function body, whose facts depend on the call site, only when asked.
    pub(super) record: bool,
}

impl<'m> Body<'m> {
    pub(super) fn graph(g: &'m GraphProto) -> Body<'m> {
        Body {
            nodes: &g.node,
            inputs: g.input.iter().map(|vi| (vi.name(), ValueFacts::unknown())).collect(),
            initializers: &g.initializer,
            sparse_initializers: &g.sparse_initializer,
            declared: g.input.iter().chain(&g.value_info).chain(&g.output).collect(),
            declared_inputs: g.input.len(),
            outputs: g.output.iter().map(|vi| vi.name()).collect(),
            record: true,
        }
    }
}

/// Where a walk is: graph path, enclosing scopes, opset, and the function call it is inside, if any.
pub(super) struct Env<'m, 'a> {
    pub(super) path: String,
    pub(super) loc: Vec<GraphStep>,
    pub(super) outer: &'a [&'a Scope<'m>],
    pub(super) opset: i64,
    pub(super) call: Option<&'a CallContext<'m>>,
    pub(super) depth: usize,
}

/// The call of a model-local function: where its sites are reported and how its attributes resolve.
pub(super) struct CallContext<'m> {
    pub(super) attrs: CallSite<'m>,
    pub(super) graph: String,
    pub(super) node: String,
    pub(super) node_index: usize,
    /// Frames of the enclosing calls, outermost first; the innermost frame's node is filled per site.
    pub(super) frames: Vec<String>,
    pub(super) inner_nodes: Vec<String>,
}
