//! Typed attribute getters: the one place that reads `AttributeProto` values.
//!
//! Inside a model-local function an attribute may refer to an attribute of the calling node (`ref_attr_name`);
//! `Attrs` resolves such references against the call site, falling back to the function's declared defaults.

use crate::onnx::pb::{AttributeProto, GraphProto, NodeProto, TensorProto};

#[derive(Clone, Copy, Default)]
pub struct CallSite<'m> {
    /// The calling node's attributes.
    pub attrs: &'m [AttributeProto],
    /// The function's default attribute values.
    pub defaults: &'m [AttributeProto],
}

#[derive(Clone, Copy)]
pub struct Attrs<'m> {
    node: &'m NodeProto,
    call: Option<CallSite<'m>>,
}

impl<'m> Attrs<'m> {
    pub fn new(node: &'m NodeProto, call: Option<CallSite<'m>>) -> Self {
        Attrs { node, call }
    }

    /// Whether the node has no attribute at all (then every lookup finds nothing).
    pub fn is_empty(&self) -> bool {
        self.node.attribute.is_empty()
    }

    /// The attribute named `name`, with a function's `ref_attr_name` followed to the call site.
    pub fn get(&self, name: &str) -> Option<&'m AttributeProto> {
        let attr = self.node.attribute.iter().find(|a| a.name() == name)?;
        match (&attr.ref_attr_name, self.call) {
            (Some(target), Some(call)) => call.attrs.iter().chain(call.defaults).find(|a| a.name() == target.as_str()),
            (Some(_), None) => None,
            (None, _) => Some(attr),
        }
    }

    // The getters read an attribute as onnxruntime and ONNX's own inference read it: an attribute that is present
    // has its field's value, and a field left unset has the protobuf default (0, 0.0, empty), never the operator's
    // documented default, which applies only when the attribute is absent. `Flatten` with an `axis` attribute
    // whose `i` is unset flattens at axis 0 in both (`[2, 3]` → `[1, 6]`), not at the documented 1.

    /// An integer attribute: `None` when absent, 0 when present with `i` unset.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name).map(|a| a.i.unwrap_or(0))
    }

    /// A list of integers: `None` when absent, empty when present with none.
    pub fn ints(&self, name: &str) -> Option<&'m [i64]> {
        self.get(name).map(|a| a.ints.as_slice())
    }

    /// A float attribute: `None` when absent, 0.0 when present with `f` unset.
    pub fn float(&self, name: &str) -> Option<f32> {
        self.get(name).map(|a| a.f.unwrap_or(0.0))
    }

    /// A tensor attribute: `None` when absent or when present with `t` unset (an empty `TensorProto`, which
    /// describes no tensor a rule could read).
    pub fn tensor(&self, name: &str) -> Option<&'m TensorProto> {
        self.get(name).and_then(|a| a.t.as_ref())
    }

    /// A string attribute: `None` when absent, empty when present with `s` unset.
    pub fn string(&self, name: &str) -> Option<&'m [u8]> {
        self.get(name).map(|a| a.s.as_deref().unwrap_or_default())
    }

    /// Every graph-valued attribute value in attribute order: the attribute's position and name, the graph's
    /// position within the attribute (`g` first, then each of `graphs`), and the graph.
    pub fn graphs(&self) -> impl Iterator<Item = (usize, &'m str, usize, &'m GraphProto)> {
        self.node
            .attribute
            .iter()
            .enumerate()
            .flat_map(|(i, a)| a.g.iter().chain(&a.graphs).enumerate().map(move |(k, g)| (i, a.name(), k, g)))
    }
}

impl<'m> CallSite<'m> {
    /// The call that `node` makes into a function whose declared attribute defaults are `defaults`.
    pub fn of(node: &'m NodeProto, defaults: &'m [AttributeProto]) -> Self {
        CallSite { attrs: &node.attribute, defaults }
    }
}

/// The graph held by `node`'s attribute at position `attribute`, at position `graph` within it (`g` first, then
/// each of `graphs`): the numbering of a `GraphStep::Subgraph` of the model module.
pub fn subgraph(node: &NodeProto, attribute: usize, graph: usize) -> Option<&GraphProto> {
    let a = node.attribute.get(attribute)?;
    a.g.iter().chain(&a.graphs).nth(graph)
}

/// Every graph `node`'s attributes hold, in attribute order.
pub fn subgraphs(node: &NodeProto) -> impl Iterator<Item = &GraphProto> {
    node.attribute.iter().flat_map(|a| a.g.iter().chain(&a.graphs))
}

/// Every graph `node`'s attributes hold, for rewriting them in place.
pub fn subgraphs_mut(node: &mut NodeProto) -> impl Iterator<Item = &mut GraphProto> {
    node.attribute.iter_mut().flat_map(|a| a.g.iter_mut().chain(&mut a.graphs))
}

/// Every tensor `node`'s attributes hold directly (`t`, `tensors`, and the values and indices of sparse tensors);
/// not those inside subgraphs.
pub fn tensors(node: &NodeProto) -> impl Iterator<Item = &TensorProto> {
    node.attribute.iter().flat_map(|a| {
        let sparse = a.sparse_tensor.iter().chain(&a.sparse_tensors).flat_map(|s| s.values.iter().chain(&s.indices));
        a.t.iter().chain(&a.tensors).chain(sparse)
    })
}

/// Whether `node` has any attribute at all.
pub fn has_any(node: &NodeProto) -> bool {
    !node.attribute.is_empty()
}

/// The attributes of a call as a memo key, when the call's result depends on nothing else: `None` when an
/// attribute refers to the enclosing function's (`ref_attr_name`), whose value depends on the outer call.
pub fn call_signature(node: &NodeProto) -> Option<String> {
    if node.attribute.iter().any(|a| !a.ref_attr_name().is_empty()) {
        return None;
    }
    Some(format!("{:?}", node.attribute))
}
