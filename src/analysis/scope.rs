//! What a walk carries: the values in scope, their remaining readers, the body being walked and where it is.

use super::*;

/// The values visible in one graph body.
pub(super) struct Scope<'m> {
    pub(super) values: Values<'m>,
    /// Names in the order they were defined: inputs, initializers, then node outputs in topological order.
    /// `None` when the body's facts are not recorded.
    pub(super) order: Option<Vec<&'m str>>,
    /// The value ranges of integer tensors, where known ([`crate::infer::value_range`]): a side table of the
    /// walk, dropped with the values.
    pub(super) ranges: HashMap<&'m str, crate::infer::value_range::ValueRange>,
}

impl<'m> Scope<'m> {
    /// Room for every value a body defines, so that the table is never rehashed while it grows.
    pub(super) fn with_capacity(n: usize) -> Scope<'m> {
        let order = Some(Vec::with_capacity(n));
        Scope { values: Values::with_capacity(n), order, ranges: HashMap::default() }
    }

    /// A scope whose values come and go (see [`Reads`]) and whose order is not kept.
    pub(super) fn unordered(n: usize) -> Scope<'m> {
        Scope { values: Values::with_capacity(n), order: None, ranges: HashMap::default() }
    }

    pub(super) fn define(&mut self, name: &'m str, facts: ValueFacts) {
        if self.values.insert(name, facts).is_none() {
            if let Some(order) = &mut self.order {
                order.push(name);
            }
        }
    }
}

/// The facts of the values in scope, by name. Each value's facts are boxed: an entry of the table is then a name and
/// a pointer (24 bytes) instead of the facts themselves (112), and the table of a body with ten thousand
/// initializers stays in the caches, where the lookup of every node input used to miss them.
pub(super) struct Values<'m>(HashMap<&'m str, Box<ValueFacts>>);

impl<'m> Values<'m> {
    fn with_capacity(n: usize) -> Values<'m> {
        Values(HashMap::with_capacity_and_hasher(n, Default::default()))
    }

    pub(super) fn get(&self, name: &str) -> Option<&ValueFacts> {
        self.0.get(name).map(|facts| &**facts)
    }

    pub(super) fn get_mut(&mut self, name: &str) -> Option<&mut ValueFacts> {
        self.0.get_mut(name).map(|facts| &mut **facts)
    }

    pub(super) fn contains_key(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Defines `name` (again): the facts it had before, if any.
    pub(super) fn insert(&mut self, name: &'m str, facts: ValueFacts) -> Option<ValueFacts> {
        self.0.insert(name, Box::new(facts)).map(|facts| *facts)
    }

    pub(super) fn remove(&mut self, name: &str) -> Option<ValueFacts> {
        self.0.remove(name).map(|facts| *facts)
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
    /// From who produces what and the walk's order of nodes.
    pub(super) fn plan(
        producers: Producers<'m>,
        nodes: &'m [NodeProto],
        order: &[usize],
        outputs: &[&'m str],
    ) -> Reads<'m> {
        const KEPT: usize = usize::MAX;
        let mut position = vec![0; nodes.len()];
        for (p, &i) in order.iter().enumerate() {
            position[i] = p;
        }
        // A value nobody reads goes right after its producer; one that is read, after its last reader. Of the values
        // of one name, only the one the name stands for is followed (the last made, as for the walk's lookups).
        let mut last = vec![KEPT; producers.value_node.len()];
        for &v in producers.by_name.values() {
            last[v as usize] = position[producers.value_node[v as usize] as usize];
        }
        for (p, &i) in order.iter().enumerate() {
            for v in producers.reads(i) {
                last[v] = last[v].max(p);
            }
        }
        for name in outputs {
            if let Some(&v) = producers.by_name.get(name) {
                last[v as usize] = KEPT;
            }
        }
        let mut drops: Vec<(usize, &'m str)> = Vec::with_capacity(producers.by_name.len());
        for (i, node) in nodes.iter().enumerate() {
            let first = producers.first_output[i] as usize;
            let gone = node.output.iter().enumerate().map(|(k, name)| (last[first + k], name.as_str()));
            drops.extend(gone.filter(|&(p, _)| p != KEPT));
        }
        // In node order already, and nearly by position where the file is in order: the stable sort has little to do.
        drops.sort_by_key(|&(p, _)| p);
        Reads { drops, next: 0 }
    }

    /// After the node at walk position `position` was walked: what nobody reads any more goes.
    pub(super) fn after(&mut self, position: usize, scope: &mut Scope<'m>) {
        while let Some(&(p, name)) = self.drops.get(self.next) {
            if p > position {
                break;
            }
            scope.values.remove(name);
            // Most bodies hold no integer ranges: no second lookup of the name then.
            if !scope.ranges.is_empty() {
                scope.ranges.remove(name);
            }
            self.next += 1;
        }
    }
}

/// Which node makes each value of a body, found by name once per node input, so that working out the walk's order
/// and when each value has had its last reader takes no further lookup in a table as large as the graph (on a
/// million nodes, every such lookup misses the caches). Values are numbered node by node, output by output.
pub(super) struct Producers<'m> {
    /// The value each name stands for: the last made, when a name is made twice.
    by_name: HashMap<&'m str, u32>,
    /// The first value of each node, and one past the last value.
    first_output: Vec<u32>,
    /// The node making each value.
    value_node: Vec<u32>,
    /// The value each node input reads, node by node; [`Producers::NONE`] for one no node of the body makes.
    reads: Vec<u32>,
    /// Where each node's inputs start in `reads`, and one past the last.
    first_read: Vec<u32>,
}

impl<'m> Producers<'m> {
    const NONE: u32 = u32::MAX;

    /// Calls `each_output` with every named output in order (node, name, whether the name was made before). A
    /// model file holds fewer than 2^32 names: numbering them by `u32` halves the tables.
    pub(super) fn of(nodes: &'m [NodeProto], mut each_output: impl FnMut(usize, &'m str, bool)) -> Producers<'m> {
        let values: usize = nodes.iter().map(|n| n.output.len()).sum();
        let mut by_name: HashMap<&'m str, u32> = HashMap::with_capacity_and_hasher(values, Default::default());
        let mut first_output = Vec::with_capacity(nodes.len() + 1);
        let mut value_node = Vec::with_capacity(values);
        for (i, node) in nodes.iter().enumerate() {
            first_output.push(value_node.len() as u32);
            for out in &node.output {
                if !out.is_empty() {
                    let again = by_name.insert(out.as_str(), value_node.len() as u32).is_some();
                    each_output(i, out.as_str(), again);
                }
                value_node.push(i as u32);
            }
        }
        first_output.push(value_node.len() as u32);
        let mut reads = Vec::with_capacity(nodes.iter().map(|n| n.input.len()).sum());
        let mut first_read = Vec::with_capacity(nodes.len() + 1);
        for node in nodes {
            first_read.push(reads.len() as u32);
            reads.extend(node.input.iter().map(|name| by_name.get(name.as_str()).copied().unwrap_or(Self::NONE)));
        }
        first_read.push(reads.len() as u32);
        Producers { by_name, first_output, value_node, reads, first_read }
    }

    /// The values node `i` reads that nodes of the body make, in input order.
    fn reads(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let reads = &self.reads[self.first_read[i] as usize..self.first_read[i + 1] as usize];
        reads.iter().filter(|&&v| v != Self::NONE).map(|&v| v as usize)
    }

    /// The nodes making node `i`'s inputs, in input order (inputs no node of the body makes left out).
    pub(super) fn input_nodes(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.reads(i).map(|v| self.value_node[v] as usize)
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
