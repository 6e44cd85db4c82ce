//! Typed attribute getters: the one place that reads `AttributeProto` values.
//!
//! Inside a model-local function an attribute may refer to an attribute of the calling node (`ref_attr_name`);
//! `Attrs` resolves such references against the call site, falling back to the function's declared defaults.

use crate::proto::{AttributeProto, GraphProto, NodeProto, TensorProto};

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

    /// The attribute named `name`, with a function's `ref_attr_name` followed to the call site.
    pub fn get(&self, name: &str) -> Option<&'m AttributeProto> {
        let attr = self.node.attribute.iter().find(|a| a.name() == name)?;
        match (&attr.ref_attr_name, self.call) {
            (Some(target), Some(call)) => call.attrs.iter().chain(call.defaults).find(|a| a.name() == target.as_str()),
            (Some(_), None) => None,
            (None, _) => Some(attr),
        }
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(|a| a.i)
    }

    pub fn ints(&self, name: &str) -> Option<&'m [i64]> {
        self.get(name).map(|a| a.ints.as_slice())
    }

    pub fn float(&self, name: &str) -> Option<f32> {
        self.get(name).and_then(|a| a.f)
    }

    pub fn tensor(&self, name: &str) -> Option<&'m TensorProto> {
        self.get(name).and_then(|a| a.t.as_ref())
    }

    pub fn string(&self, name: &str) -> Option<&'m [u8]> {
        self.get(name).and_then(|a| a.s.as_deref())
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
/// each of `graphs`): the numbering of [`crate::model::GraphStep::Subgraph`].
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
