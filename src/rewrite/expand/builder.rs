//! Building the nodes of a rewrite: every new value goes through one memoising constructor ([`Builder::memo`]),
//! so that the same value made explicit the same way twice, in one graph, is one set of nodes.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use crate::onnx::model::GraphStep;
use crate::onnx::pb::{
    tensor_proto::DataLocation, tensor_shape_proto, type_proto, ModelProto, NodeProto, TensorProto, TensorShapeProto,
    TypeProto, ValueInfoProto,
};
use crate::onnx::tensor::INT64;
use crate::onnx::wire::{GraphEdit, ModelEdit};

use super::encode::{self, NewAttribute};
use super::hot::{hot_at, Hot};
use super::names::Names;
use crate::sizes::shape::{Dim, Shape};

/// The graph being edited and the node new nodes go before.
pub(super) struct At<'l> {
    pub graph: &'l [GraphStep],
    pub before: usize,
}

impl At<'_> {
    fn in_main_graph(&self) -> bool {
        self.graph.is_empty()
    }
}

/// What the builder added, for the summary.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub nodes_added: usize,
    pub expands_inserted: usize,
    pub expands_shared: usize,
    pub materialized: usize,
}

/// The edit being built: new nodes, constants and value_infos, with fresh names.
pub(super) struct Builder<'m> {
    pub model: &'m ModelProto,
    /// The main graph's nodes, asked for twice at every site planned: found once.
    main_nodes: &'m [NodeProto],
    /// The edits of bodies (subgraphs and functions); see [`Builder::into_edit`].
    edit: ModelEdit,
    /// The main graph's edit, kept apart until the plan is made: it is asked for at every node a plan edits, and
    /// finding it by its (empty) path in the map of graphs cost more than recording the node's edit.
    main: GraphEdit,
    pub counts: Counts,
    names: Names<'m>,
    cache: HashMap<(Vec<GraphStep>, Made), String>,
    /// By graph, the values made for nearly every site, found without building a key (see [`Hot`]); the main
    /// graph's apart, found without hashing its path.
    hot: HashMap<Vec<GraphStep>, Hot>,
    hot_main: Hot,
    max_materialize_bytes: u64,
}

/// The element type and shape a new node's output is declared with, if any.
type Declared<'s> = Option<(i32, &'s Shape)>;

/// A constant's value: an int64 vector (a shape, an index, repeats), written as bytes, or a tensor made whole.
enum Constant<'v> {
    Int64(&'v [i64]),
    /// (Boxed: a tensor message is large, and rare here.)
    Tensor(Box<TensorProto>),
}

/// What a new value is, for sharing: the same value made explicit the same way twice is one set of nodes. (Shape
/// constants and `Expand`s are memoised in [`Hot`].)
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Made {
    ShapeOf(String),
    /// `Shape` of any value provably of this (fully resolved) shape, by its text.
    ShapeFor(String),
    Gathered(String, i64),
    Concat(Vec<String>),
    Reshape(String, Vec<i64>),
    Tile(String, Vec<i64>),
    Materialized(String, Vec<i64>, Vec<i64>),
}

impl<'m> Builder<'m> {
    pub fn new(model: &'m ModelProto, max_materialize_bytes: u64) -> Self {
        Builder {
            model,
            main_nodes: model.graph.as_ref().map_or(&[][..], |g| &g.node[..]),
            edit: ModelEdit::default(),
            main: GraphEdit::default(),
            counts: Counts::default(),
            names: Names::of(model),
            cache: HashMap::default(),
            hot: HashMap::default(),
            hot_main: Hot::default(),
            max_materialize_bytes,
        }
    }

    /// The edit of the graph or function body at `graph`.
    pub fn graph_edit(&mut self, graph: &[GraphStep]) -> &mut GraphEdit {
        match graph.is_empty() {
            true => &mut self.main,
            false => self.edit.graph_mut(graph),
        }
    }

    fn hot_mut(&mut self, graph: &[GraphStep]) -> &mut Hot {
        match graph.is_empty() {
            true => &mut self.hot_main,
            false => self.hot.entry(graph.to_vec()).or_default(),
        }
    }

    /// The edit of the whole model.
    pub fn into_edit(self) -> ModelEdit {
        let mut edit = self.edit;
        if !self.main.is_empty() {
            edit.graphs.insert(Vec::new(), self.main);
        }
        edit
    }

    /// The value `made` in the graph at `at`: the one made before, or a new one from `make` (which may decline).
    fn try_memo(&mut self, at: &At<'_>, made: Made, make: impl FnOnce(&mut Self) -> Option<String>) -> Option<String> {
        let key = (at.graph.to_vec(), made);
        if let Some(name) = self.cache.get(&key) {
            return Some(name.clone());
        }
        let name = make(self)?;
        self.cache.insert(key, name.clone());
        Some(name)
    }

    /// [`Builder::try_memo`] for values that can always be made.
    fn memo(&mut self, at: &At<'_>, made: Made, make: impl FnOnce(&mut Self) -> String) -> String {
        self.try_memo(at, made, |b| Some(make(b))).expect("made")
    }

    /// The node list of the graph or function body at `graph`, a path the analysis recorded.
    pub fn nodes_at(&self, graph: &[GraphStep]) -> &'m [NodeProto] {
        match graph.is_empty() {
            true => self.main_nodes,
            false => crate::onnx::model::body_at(self.model, graph).expect("an analysed body exists").nodes(),
        }
    }

    /// A new node `op` of `inputs` and `attr` computing `output`, before the node at `at`, named `OUTPUT_op`
    /// (made fresh), and `output` declared of element type and shape `declared` if given.
    fn add_node(
        &mut self,
        at: &At<'_>,
        (op, inputs, attr): (&str, &[&str], NewAttribute),
        output: &str,
        declared: Declared,
    ) {
        // `OUTPUT_op`: the ops made here are named in ASCII.
        let mut base = String::with_capacity(output.len() + 1 + op.len());
        base.push_str(output);
        base.push('_');
        base.extend(op.chars().map(|c| c.to_ascii_lowercase()));
        // The name borrowed from `names` while the edit is written (the graph's edit found field by field).
        let name = self.names.fresh(&base);
        let edit = match at.graph.is_empty() {
            true => &mut self.main,
            false => self.edit.graph_mut(at.graph),
        };
        let before = edit.insert_before.get_or_insert_with(at.before, Default::default);
        // The node's names and the few bytes of their headers (and of an attribute's, whose value is small).
        let names: usize = inputs.iter().map(|i| i.len()).sum::<usize>() + output.len() + name.len() + op.len();
        before.reserve(names + 3 * inputs.len() + 16 + if matches!(attr, NewAttribute::None) { 0 } else { 48 });
        before.push_with(|w| encode::node(w, inputs, output, name, op, &attr));
        if let Some((elem, shape)) = declared {
            edit.value_info.push_with(|w| encode::value_info(w, output, elem, shape));
        }
        self.counts.nodes_added += 1;
    }

    /// A constant: an initializer in the main graph (before IR version 4 also declared as a graph input, as that
    /// IR requires), a Constant node in subgraphs and function bodies (functions have no initializers, and a
    /// subgraph's own constants keep it self-contained).
    fn constant(&mut self, at: &At<'_>, name: &str, value: Constant) {
        let (elem, dims) = match &value {
            Constant::Int64(values) => (INT64, vec![values.len() as u64]),
            Constant::Tensor(t) => (t.data_type(), t.dims.iter().map(|&d| d as u64).collect()),
        };
        let shape = Shape::known(&dims);
        if at.in_main_graph() {
            let declared_too = self.model.ir_version() < 4;
            let edit = self.graph_edit(at.graph);
            match value {
                Constant::Int64(values) => edit.initializers.push_with(|w| encode::int64_tensor(w, Some(name), values)),
                Constant::Tensor(t) => edit.initializers.push(&TensorProto { name: Some(name.into()), ..*t }),
            }
            if declared_too {
                edit.inputs.push_with(|w| encode::value_info(w, name, elem, &shape));
            }
        } else {
            // (Rare: the value written whole, as a message.)
            let tensor = match value {
                Constant::Int64(values) => int64_tensor(values),
                Constant::Tensor(t) => TensorProto { name: None, ..*t },
            };
            self.add_node(at, ("Constant", &[], NewAttribute::Value(&tensor)), name, Some((elem, &shape)));
        }
    }

    /// A constant int64 shape vector.
    pub fn shape_constant(&mut self, at: &At<'_>, dims: &[u64]) -> String {
        if let Some((name, _)) = hot_at(&self.hot, &self.hot_main, at.graph).and_then(|h| h.shape_constant(dims)) {
            return name.to_string();
        }
        let label: Vec<String> = dims.iter().map(u64::to_string).collect();
        let label = if label.is_empty() { "scalar".into() } else { label.join("x") };
        let name = self.names.fresh(&format!("bcast_shape_{label}")).to_string();
        self.constant(at, &name, Constant::Int64(&as_i64(dims)));
        self.hot_mut(at.graph).add_shape_constant(dims, &name);
        name
    }

    /// `Expand(value, shape_constant(dims))`, declared with `out` when the element type is known: what nearly
    /// every static site asks for, found with a lookup of the constant and one of the `Expand` when both exist.
    pub fn expand_to_constant(
        &mut self,
        at: &At<'_>,
        value: &str,
        dims: &[u64],
        elem: Option<i32>,
        out: &Shape,
    ) -> Arc<str> {
        let hot = match at.graph.is_empty() {
            true => Some(&mut self.hot_main),
            false => self.hot.get_mut(at.graph),
        };
        if let Some(name) = hot.and_then(|h| h.expand_to_constant(value, dims)) {
            self.counts.expands_shared += 1;
            return name.clone();
        }
        let target = self.shape_constant(at, dims);
        self.expand(at, value, &target, elem, out)
    }

    /// `Shape(value)`, where `value` has shape `of`. One `Shape` serves every later value of the graph whose
    /// shape is provably the same (known sizes and the model's own symbols, equal): the sites of a transformer
    /// layer all broadcast to `[batch, seq, hidden]`, and one runtime `Shape` says it for all of them.
    pub fn shape_of(&mut self, at: &At<'_>, value: &str, of: &Shape) -> String {
        let key = (at.graph.to_vec(), Made::ShapeOf(value.to_string()));
        if let Some(name) = self.cache.get(&key) {
            return name.clone();
        }
        // Only shapes the next analysis derives the same way: a fresh symbol may come out under another name.
        let stable = of.dims().is_some_and(|d| !d.iter().any(Dim::mentions_fresh));
        let by_shape = stable.then(|| (at.graph.to_vec(), Made::ShapeFor(of.to_string())));
        if let Some(name) = by_shape.as_ref().and_then(|k| self.cache.get(k)) {
            return name.clone();
        }
        let name = self.names.fresh(&format!("{}_shape", sanitize(value))).to_string();
        let shape = of.rank().map_or_else(|| Shape::ranked(vec![Dim::Unknown]), |r| Shape::known(&[r as u64]));
        self.add_node(at, ("Shape", &[value], NewAttribute::None), &name, Some((INT64, &shape)));
        self.cache.insert(key, name.clone());
        if let Some(k) = by_shape {
            self.cache.insert(k, name.clone());
        }
        name
    }

    /// `Gather(Shape(value), [axis])`: one dim of a value, as a 1-element vector.
    pub fn gathered_dim(&mut self, at: &At<'_>, value: &str, axis: i64) -> String {
        self.memo(at, Made::Gathered(value.to_string(), axis), |b| {
            let shape = b.shape_of(at, value, &Shape::unranked());
            let index = b.names.fresh(&format!("{}_axis{axis}", sanitize(value))).to_string();
            b.constant(at, &index, Constant::Int64(&[axis]));
            let name = b.names.fresh(&format!("{}_dim{axis}", sanitize(value))).to_string();
            let node = ("Gather", &[shape.as_str(), &index][..], NewAttribute::None);
            b.add_node(at, node, &name, Some((INT64, &Shape::known(&[1]))));
            name
        })
    }

    /// `Concat(parts, axis=0)`: a shape vector from 1-element pieces.
    pub fn concat(&mut self, at: &At<'_>, parts: Vec<String>) -> String {
        self.memo(at, Made::Concat(parts.clone()), |b| {
            let name = b.names.fresh("bcast_target").to_string();
            let n = parts.len() as u64;
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            let node = ("Concat", &parts[..], NewAttribute::Int("axis", 0));
            b.add_node(at, node, &name, Some((INT64, &Shape::known(&[n]))));
            name
        })
    }

    /// `Expand(value, target)`, declared with `out` when the element type is known.
    pub fn expand(&mut self, at: &At<'_>, value: &str, target: &str, elem: Option<i32>, out: &Shape) -> Arc<str> {
        // The target numbered once, for the lookup and for the `Expand` made.
        let hot = self.hot_mut(at.graph);
        let target_n = hot.target(target);
        if let Some(name) = hot.expand(value, target_n).cloned() {
            self.counts.expands_shared += 1;
            return name;
        }
        const EXPANDED: &str = "_expanded";
        let mut base = String::with_capacity(value.len().min(MAX_FRAGMENT) + EXPANDED.len());
        push_fragment(&mut base, value);
        base.push_str(EXPANDED);
        let name: Arc<str> = self.names.fresh(&base).into();
        self.add_node(at, ("Expand", &[value, target], NewAttribute::None), &name, elem.map(|e| (e, out)));
        self.counts.expands_inserted += 1;
        self.hot_mut(at.graph).add_expand(value, target_n, name.clone());
        name
    }

    /// `Reshape(value, dims)`.
    pub fn reshape(&mut self, at: &At<'_>, value: &str, dims: &[u64], elem: Option<i32>) -> String {
        self.memo(at, Made::Reshape(value.to_string(), as_i64(dims)), |b| {
            let shape = b.shape_constant(at, dims);
            let name = b.names.fresh(&format!("{}_reshaped", sanitize(value))).to_string();
            let node = ("Reshape", &[value, shape.as_str()][..], NewAttribute::None);
            let shape = Shape::known(dims);
            b.add_node(at, node, &name, elem.map(|e| (e, &shape)));
            name
        })
    }

    /// `Tile(value, repeats)`, of shape `out`.
    pub fn tile(&mut self, at: &At<'_>, value: &str, repeats: &[i64], elem: Option<i32>, out: &[u64]) -> String {
        self.memo(at, Made::Tile(value.to_string(), repeats.to_vec()), |b| {
            let label: Vec<String> = repeats.iter().map(i64::to_string).collect();
            let repeats_name = b.names.fresh(&format!("bcast_repeats_{}", label.join("x"))).to_string();
            b.constant(at, &repeats_name, Constant::Int64(repeats));
            let name = b.names.fresh(&format!("{}_tiled", sanitize(value))).to_string();
            let node = ("Tile", &[value, repeats_name.as_str()][..], NewAttribute::None);
            let shape = Shape::known(out);
            b.add_node(at, node, &name, elem.map(|e| (e, &shape)));
            name
        })
    }

    /// The constant `value` written out at the output shape `out` (after viewing it with `mapped` dims), if it is
    /// a small enough constant held in the file.
    pub fn materialize(&mut self, at: &At<'_>, value: &str, mapped: Option<&[u64]>, out: &[u64]) -> Option<String> {
        let source = self.constant_tensor(at, value)?;
        let made = Made::Materialized(value.to_string(), mapped.map(as_i64).unwrap_or_default(), as_i64(out));
        self.try_memo(at, made, |b| {
            let name = b.names.fresh(&format!("{}_expanded", sanitize(value))).to_string();
            let tensor = crate::rewrite::materialize::broadcast_tensor(source, mapped, out, b.max_materialize_bytes)?;
            b.constant(at, &name, Constant::Tensor(Box::new(tensor)));
            b.counts.materialized += 1;
            Some(name)
        })
    }

    /// The tensor behind `name` when it is an initializer of the main graph or a `Constant` node's `value` in
    /// the graph being edited.
    fn constant_tensor(&self, at: &At<'_>, name: &str) -> Option<&'m TensorProto> {
        let graph = self.model.graph.as_ref()?;
        if at.in_main_graph() {
            if graph.input.iter().any(|i| i.name() == name) {
                return None; // an input with a default value can be overridden at run time
            }
            if let Some(t) = graph.initializer.iter().find(|t| t.name() == name) {
                return Some(t);
            }
        }
        // A Constant node of the same graph body, before the consumer.
        self.nodes_at(at.graph)[..at.before]
            .iter()
            .find(|n| n.op_type() == "Constant" && is_default(n) && n.output.first().is_some_and(|o| o == name))
            .and_then(|n| crate::onnx::attr::Attrs::new(n, None).tensor("value"))
            .filter(|t| t.data_location != Some(DataLocation::External as i32))
    }
}

/// Whether a node is of the default domain.
pub(super) fn is_default(n: &NodeProto) -> bool {
    crate::rules::ops::is_default_domain(n.domain())
}

fn as_i64(dims: &[u64]) -> Vec<i64> {
    dims.iter().map(|&d| d as i64).collect()
}

/// A name fragment made of characters every tool accepts in names, at most [`MAX_FRAGMENT`] of them: new names are
/// made from the names they derive from, and a fold over many inputs would otherwise grow them step by step.
fn sanitize(name: &str) -> String {
    let mut fragment = String::new();
    push_fragment(&mut fragment, name);
    fragment
}

/// [`sanitize`], written at the end of `out`.
fn push_fragment(out: &mut String, name: &str) {
    if name.len() <= MAX_FRAGMENT && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        // Such a name is its own fragment (the common case: checked by bytes, copied once).
        out.push_str(name.trim_matches('_'));
        return;
    }
    let s: String =
        name.chars().take(MAX_FRAGMENT).map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    out.push_str(s.trim_matches('_'));
}

const MAX_FRAGMENT: usize = 80;

/// A 1-D int64 tensor of `values`, unnamed: a `Constant`'s value.
pub(super) fn int64_tensor(values: &[i64]) -> TensorProto {
    TensorProto {
        dims: vec![values.len() as i64],
        data_type: Some(INT64),
        raw_data: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>().into()),
        ..Default::default()
    }
}

/// A value_info declaring `elem` and `shape` (unknown dims are left unset, an unknown rank leaves out the shape).
pub fn value_info(name: &str, elem: i32, shape: &Shape) -> ValueInfoProto {
    use tensor_shape_proto::{dimension::Value, Dimension};
    let shape = shape.dims().map(|dims| TensorShapeProto {
        dim: dims
            .iter()
            .map(|d| Dimension {
                value: match d {
                    Dim::Known(n) => Some(Value::DimValue(*n as i64)),
                    Dim::Sym(s) if !d.is_fresh() => Some(Value::DimParam(s.to_string())),
                    _ => None,
                },
                denotation: None,
            })
            .collect(),
    });
    ValueInfoProto {
        name: Some(name.to_string()),
        r#type: Some(TypeProto {
            tensor_type: Some(type_proto::Tensor { elem_type: Some(elem), shape }),
            ..Default::default()
        }),
        ..Default::default()
    }
}
