//! One graph body (main graph, subgraph or function body) as `fold` sees it: who reads each value, which values
//! leave the body, and which nodes become dead once some are removed.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeSet;

use crate::onnx::model::{GraphStep, ModelBody};
use crate::onnx::pb::{GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto};

/// The parts of a body `fold` reads.
pub(super) struct Body<'m> {
    pub nodes: &'m [NodeProto],
    pub initializers: &'m [TensorProto],
    /// The body's inputs that are not constants (below IR version 4 every initializer is also listed as an input,
    /// and is a constant all the same, as onnxruntime holds it).
    pub inputs: HashSet<&'m str>,
    /// Each listed input's position, for leaving out the entry of a removed initializer.
    pub input_index: HashMap<&'m str, usize>,
    pub value_info: &'m [ValueInfoProto],
    /// Names the body hands out: its outputs.
    pub outputs: HashSet<&'m str>,
    /// Names read inside nested subgraphs of this body's nodes (from the outer scope, or their own: a name read
    /// there is never renamed or removed).
    pub nested_reads: HashSet<&'m str>,
    /// For each value, the nodes reading it and at which input positions.
    pub readers: HashMap<&'m str, Vec<(usize, usize)>>,
    /// The node computing each value.
    pub producer: HashMap<&'m str, usize>,
    /// Each initializer by name (the last of a name, as a later one replaces an earlier).
    pub initializer: HashMap<&'m str, &'m TensorProto>,
}

impl<'m> Body<'m> {
    /// The body at `loc`, or `None` if the path leads nowhere.
    pub fn at(model: &'m ModelProto, loc: &[GraphStep]) -> Option<Body<'m>> {
        Some(match crate::onnx::model::body_at(model, loc)? {
            ModelBody::Function(f) => Body::new(&f.node, (&[], false), &[], &f.value_info, f.output.iter()),
            ModelBody::Graph(g) => Body::new(
                &g.node,
                (&g.initializer, model.ir_version() < 4),
                &g.input,
                &g.value_info,
                g.output.iter().map(|o| o.name.as_ref().unwrap_or(&EMPTY)),
            ),
        })
    }

    fn new<'o>(
        nodes: &'m [NodeProto],
        (initializers, constant_inputs): (&'m [TensorProto], bool),
        inputs: &'m [ValueInfoProto],
        value_info: &'m [ValueInfoProto],
        outputs: impl Iterator<Item = &'m String>,
    ) -> Body<'m> {
        let mut readers: HashMap<&'m str, Vec<(usize, usize)>> = HashMap::default();
        let mut nested_reads = HashSet::default();
        for (i, n) in nodes.iter().enumerate() {
            for (p, name) in n.input.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
                readers.entry(name.as_str()).or_default().push((i, p));
            }
            for g in crate::onnx::attr::subgraphs(n) {
                nested_names(g, &mut nested_reads);
            }
        }
        let producer =
            nodes.iter().enumerate().flat_map(|(i, n)| n.output.iter().map(move |o| (o.as_str(), i))).collect();
        Body {
            producer,
            initializer: initializers.iter().map(|t| (t.name(), t)).collect(),
            nodes,
            initializers,
            inputs: inputs
                .iter()
                .map(|v| v.name())
                .filter(|n| !(constant_inputs && initializers.iter().any(|t| t.name() == *n)))
                .collect(),
            input_index: inputs.iter().enumerate().map(|(i, v)| (v.name(), i)).collect(),
            value_info,
            outputs: outputs.map(String::as_str).collect(),
            nested_reads,
            readers,
        }
    }

    /// Whether `name` must keep existing whatever is removed: it leaves the body or a nested graph reads it.
    pub fn pinned(&self, name: &str) -> bool {
        self.outputs.contains(name) || self.nested_reads.contains(name)
    }

    /// Marks `node` removed, with every shape computation that dies with it: one whose every output was read
    /// before, and by removed nodes only now (a node already unused in the input stays, as written), and dead code
    /// of the input that reads a removed value (it would read an undefined one). `passes_on(node, position)`: that
    /// removed node hands the value it reads there on to its readers (a folded broadcast's source), so the value
    /// lives on. Only the cone of `node` is visited.
    pub fn remove_with(&self, gone: &mut BTreeSet<usize>, node: usize, passes_on: &dyn Fn(usize, usize) -> bool) {
        gone.insert(node);
        let mut work = vec![node];
        while let Some(n) = work.pop() {
            let upstream = self.nodes[n].input.iter().filter_map(|v| self.producer.get(v.as_str()).copied());
            let upstream: Vec<usize> =
                upstream.filter(|p| !gone.contains(p) && self.dies(*p, gone, passes_on)).collect();
            let downstream: Vec<usize> = self.nodes[n]
                .output
                .iter()
                .flat_map(|o| self.readers.get(o.as_str()).into_iter().flatten())
                .map(|&(r, _)| r)
                .filter(|r| !gone.contains(r) && self.dead_end(*r, 0))
                .collect();
            for m in upstream.into_iter().chain(downstream) {
                if gone.insert(m) {
                    work.push(m);
                }
            }
        }
    }

    /// Whether node `p`, a shape computation, has every output read before and by gone nodes only now.
    fn dies(&self, p: usize, gone: &BTreeSet<usize>, passes_on: &dyn Fn(usize, usize) -> bool) -> bool {
        let n = &self.nodes[p];
        is_shape_computation(n)
            && !n.output.is_empty()
            && n.output.iter().filter(|o| !o.is_empty()).all(|o| {
                let readers = self.readers.get(o.as_str()).map(Vec::as_slice).unwrap_or(&[]);
                !self.pinned(o)
                    && !readers.is_empty()
                    && readers.iter().all(|&(r, q)| gone.contains(&r) && !passes_on(r, q))
            })
    }

    /// Whether node `i` is a shape computation whose results nothing uses (dead code as written: `Shape` of a
    /// value whose shape nothing reads). Such a reader never keeps a broadcast alive; it goes with it.
    pub fn dead_end(&self, i: usize, depth: usize) -> bool {
        let n = &self.nodes[i];
        depth < 8
            && is_shape_computation(n)
            && !n.output.is_empty()
            && n.output.iter().all(|o| {
                !self.pinned(o)
                    && self
                        .readers
                        .get(o.as_str())
                        .is_none_or(|rs| rs.iter().all(|&(r, _)| self.dead_end(r, depth + 1)))
            })
    }

    /// Initializers read before, and only by removed nodes, now: constants of removed shape computations. One that
    /// is also a graph input (a default a caller may override) stays.
    pub fn dead_initializers(
        &self,
        removed: &BTreeSet<usize>,
        passes_on: &dyn Fn(usize, usize) -> bool,
    ) -> BTreeSet<usize> {
        self.initializers
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                let name = t.name();
                let readers = self.readers.get(name).map(Vec::as_slice).unwrap_or(&[]);
                !self.pinned(name)
                    && !self.inputs.contains(name)
                    && !readers.is_empty()
                    && readers.iter().all(|&(r, p)| removed.contains(&r) && !passes_on(r, p))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The graph input entries of removed initializers (below IR version 4 every initializer has one).
    pub fn dead_inputs(&self, initializers: &BTreeSet<usize>) -> BTreeSet<usize> {
        initializers.iter().filter_map(|&i| self.input_index.get(self.initializers[i].name()).copied()).collect()
    }

    /// The `value_info` entries of values no node computes any more.
    pub fn dead_value_info(&self, removed: &BTreeSet<usize>) -> BTreeSet<usize> {
        let gone: HashSet<&str> =
            removed.iter().flat_map(|&i| self.nodes[i].output.iter().map(|n| n.as_str())).collect();
        self.value_info.iter().enumerate().filter(|(_, v)| gone.contains(v.name())).map(|(i, _)| i).collect()
    }
}

static EMPTY: String = String::new();

/// Every name read by a node of `g` or of the graphs nested in it.
fn nested_names<'m>(g: &'m GraphProto, out: &mut HashSet<&'m str>) {
    for n in &g.node {
        out.extend(n.input.iter().map(|n| n.as_str()));
        for sub in crate::onnx::attr::subgraphs(n) {
            nested_names(sub, out);
        }
    }
    out.extend(g.output.iter().map(|o| o.name()));
}

/// Ops that only compute small tensors from shapes and constants, with no effect besides their outputs: what
/// `expand` builds to compute a target shape, and what exporters build around an `Expand` (TorchScript's
/// `Shape`/`Gather`/`Unsqueeze`/`Concat`, its `Where(Equal(s, -1), 1, s)`).
fn is_shape_computation(n: &NodeProto) -> bool {
    const OPS: &[&str] = &[
        "Constant",
        "ConstantOfShape",
        "Shape",
        "Size",
        "Gather",
        "Concat",
        "Slice",
        "Unsqueeze",
        "Squeeze",
        "Reshape",
        "Cast",
        "Identity",
        "Equal",
        "Where",
        "Mul",
        "Add",
        "Sub",
        "Div",
        "Max",
        "Min",
        "Abs",
        "Neg",
        "Range",
        // A broadcast whose every reader went (a copy of ones under a removed `Mul`) goes with them.
        "Expand",
        "Tile",
    ];
    crate::rules::ops::is_default_domain(n.domain())
        && OPS.contains(&n.op_type())
        && crate::onnx::attr::subgraphs(n).next().is_none()
}
