//! Fresh names for what a rewrite adds, that collide with nothing in the model.

use rustc_hash::FxHashMap as HashMap;

use crate::onnx::pb::{tensor_shape_proto, GraphProto, ModelProto, NodeProto, ValueInfoProto};

/// Fresh names that collide with nothing in the model (values, nodes, functions, dim params), deterministically.
/// The model's own names are borrowed from it: only the names made here are owned.
pub(super) struct Names<'m> {
    /// The model's names. It never grows after [`Names::of`]: a table of all of them doubled for the few names a
    /// plan adds would cost more than the names themselves.
    taken: rustc_hash::FxHashSet<&'m str>,
    /// The names made here.
    made: rustc_hash::FxHashSet<String>,
    /// Per base name, the suffix to try first: probing from 1 every time is quadratic when a base repeats (a Sum
    /// of 10,000 inputs folds 10,000 Expands).
    next: HashMap<String, usize>,
}

impl<'m> Names<'m> {
    pub fn of(model: &'m ModelProto) -> Names<'m> {
        let mut names = Names { taken: Default::default(), made: Default::default(), next: HashMap::default() };
        if let Some(g) = &model.graph {
            // About as many names as the main graph has nodes' names and outputs (its inputs are mostly those
            // outputs): room for them at once rather than by doubling.
            names.taken.reserve(2 * g.node.len() + g.initializer.len() + g.input.len() + g.value_info.len());
            names.main_graph(g);
        }
        for f in &model.functions {
            names.take(f.name());
            f.input.iter().chain(&f.output).for_each(|n| names.take(n));
            names.nodes(&f.node);
            for vi in &f.value_info {
                names.declared(vi);
            }
            for sub in f.node.iter().flat_map(crate::onnx::attr::subgraphs) {
                names.graph(sub);
            }
        }
        names
    }

    fn take(&mut self, name: &'m str) {
        self.taken.insert(name);
    }

    fn nodes(&mut self, nodes: &'m [NodeProto]) {
        for n in nodes {
            self.take(n.name());
            n.input.iter().chain(&n.output).for_each(|v| self.take(v));
        }
    }

    /// The main graph's names but its nodes' inputs: each is a graph input, an initializer or a node's output
    /// (taken as such), or undefined, and a model that reads an undefined value is refused before any plan of it is
    /// used ([`crate::rewrite::refuse`]). Half the names of a large graph, not hashed.
    fn main_graph(&mut self, g: &'m GraphProto) {
        for n in &g.node {
            self.take(n.name());
            n.output.iter().for_each(|v| self.take(v));
        }
        self.graph_but_nodes(g);
    }

    fn graph(&mut self, g: &'m GraphProto) {
        self.nodes(&g.node);
        self.graph_but_nodes(g);
    }

    /// A graph's initializers, declarations and subgraphs.
    fn graph_but_nodes(&mut self, g: &'m GraphProto) {
        g.initializer.iter().for_each(|t| self.take(t.name()));
        g.sparse_initializer.iter().filter_map(|s| s.values.as_ref()).for_each(|t| self.take(t.name()));
        for vi in g.input.iter().chain(&g.output).chain(&g.value_info) {
            self.declared(vi);
        }
        for sub in g.node.iter().flat_map(crate::onnx::attr::subgraphs) {
            self.graph(sub);
        }
    }

    /// A declaration's name and the dim params of its type.
    fn declared(&mut self, vi: &'m ValueInfoProto) {
        self.take(vi.name());
        let shape = vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref());
        for d in shape.map_or(&[][..], |s| &s.dim[..]) {
            if let Some(tensor_shape_proto::dimension::Value::DimParam(p)) = &d.value {
                self.take(p);
            }
        }
    }

    pub fn fresh(&mut self, base: &str) -> String {
        let base = if base.is_empty() { "bcast" } else { base };
        // A base asked for the first time is most often free as it is: taken without noting where to go on from
        // (asked again, it is made, and the suffixes go on from 0 as if it had been noted). A base asked before is
        // never free again.
        if !self.taken.contains(base) && !self.made.contains(base) {
            self.made.insert(base.to_string());
            return base.to_string();
        }
        let k = match self.next.get_mut(base) {
            Some(k) => k,
            None => self.next.entry(base.to_string()).or_insert(0),
        };
        loop {
            let candidate = if *k == 0 { base.to_string() } else { format!("{base}_{k}") };
            *k += 1;
            if !self.taken.contains(candidate.as_str()) && self.made.insert(candidate.clone()) {
                return candidate;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::{type_proto, TensorProto, TensorShapeProto, TypeProto};

    #[test]
    fn a_fresh_name_avoids_every_name_the_model_defines_or_gives() {
        // The candidates for `v_expanded` are, in turn: a node's output, a graph input a node reads, an
        // initializer, a node's name, a dim param, and a name a function's node reads.
        let node = |name: &str, inputs: &[&str], output: &str| NodeProto {
            name: Some(name.into()),
            op_type: Some("Add".into()),
            input: inputs.iter().map(|&s| s.into()).collect(),
            output: smallvec::smallvec![output.into()],
            ..Default::default()
        };
        let declared = |name: &str, dims: &[&str]| ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(TypeProto {
                tensor_type: Some(type_proto::Tensor {
                    elem_type: Some(1),
                    shape: Some(TensorShapeProto {
                        dim: dims
                            .iter()
                            .map(|d| tensor_shape_proto::Dimension {
                                value: Some(tensor_shape_proto::dimension::Value::DimParam(d.to_string())),
                                denotation: None,
                            })
                            .collect(),
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let graph = GraphProto {
            node: vec![node("v_expanded_3", &["v_expanded_1", "v_expanded_2"], "v_expanded")],
            input: vec![declared("v_expanded_1", &["v_expanded_4"])],
            initializer: vec![TensorProto { name: Some("v_expanded_2".into()), ..Default::default() }],
            ..Default::default()
        };
        let function = crate::onnx::pb::FunctionProto {
            name: Some("f".into()),
            node: vec![node("g", &["v_expanded_5"], "y")],
            ..Default::default()
        };
        let model = ModelProto { graph: Some(graph), functions: vec![function], ..Default::default() };
        let mut names = Names::of(&model);
        assert_eq!(names.fresh("v_expanded"), "v_expanded_6");
        assert_eq!(names.fresh("v_expanded"), "v_expanded_7");
    }

    #[test]
    fn a_base_asked_again_goes_on_past_every_name_made_from_it_or_for_another() {
        let model = ModelProto::default();
        let mut names = Names::of(&model);
        // `a_1` made for a base of its own first; `a` free the first time, then `a_2`, `a_3`; `b` likewise.
        let made: Vec<String> = ["a_1", "a", "a", "b", "a", "b", "", ""].iter().map(|b| names.fresh(b)).collect();
        assert_eq!(made, ["a_1", "a", "a_2", "b", "a_3", "b_1", "bcast", "bcast_1"]);
    }
}
