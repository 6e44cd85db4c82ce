//! The explicit broadcasts of a graph body: `Expand`; `Tile` whose repeats are 1 wherever the input's size is not
//! 1 (then it is the `Expand` of its input to the tiled shape); `Mul` by ones, `Add` of zeros and `Where` on a
//! constant condition, which compute their other input broadcast. Each candidate knows its source and, per
//! evaluation, the source's shape and whether the broadcast itself is proved to hold.

use crate::analysis::FunctionFrame;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

use super::body::Body;
use super::proof::{call_key, CallKey};
use super::Form;
use crate::analysis::Site;
use crate::onnx::pb::NodeProto;
use crate::onnx::tensor::ValueFacts;
use crate::rules::ops::SiteKind;
use crate::rules::{Condition, Verdict};
use crate::sizes::shape::{Dim, Shape};

/// One evaluation of a candidate.
#[derive(Clone, Debug)]
pub(super) struct Eval {
    pub source: Shape,
    /// The broadcast is proved to hold (it fails for no size).
    pub holds: bool,
    /// Its output provably has the source's shape: it changes nothing, whoever reads it.
    pub noop: bool,
    /// Its output provably has more elements than its source: an axis of size 1 (or a missing one) grows.
    pub grows: bool,
    /// The conditions on sizes the broadcast itself holds under, when its verdict is conditional.
    pub conditions: Vec<Condition>,
}

/// An explicit broadcast that may be removed.
pub(super) struct Candidate {
    pub node: usize,
    pub form: Form,
    /// The node's input position of the value the broadcast copies.
    pub source_pos: usize,
    pub evals: Vec<(CallKey, Eval)>,
    /// Where it is reported, as `check` reports its first evaluation: the graph and node label (inside a function
    /// body, of the call), and the function frames down to the node itself.
    pub graph: String,
    pub label: String,
    pub functions: Vec<FunctionFrame<'static>>,
}

impl Candidate {
    pub fn eval(&self, key: &CallKey) -> Option<&Eval> {
        self.evals.iter().find(|(k, _)| k == key).map(|(_, e)| e)
    }
}

fn holds(site: &Site) -> bool {
    matches!(site.verdict, Verdict::Same | Verdict::Broadcast) && site.type_mismatch.is_none()
}

/// The candidates among the broadcasting nodes of one body (`sites`: each node's evaluations), and the `Tile`s
/// (which are no sites) from the body's value facts (`facts`, `None` for a function body, whose facts are per
/// call and not kept: its `Tile`s stay).
pub(super) fn candidates(
    body: &Body<'_>,
    sites: &BTreeMap<usize, Vec<&Site<'static>>>,
    facts: Option<(&str, &HashMap<&str, &ValueFacts>)>,
) -> BTreeMap<usize, Candidate> {
    let mut out = BTreeMap::new();
    for (&index, evaluations) in sites {
        let node = &body.nodes[index];
        if let Some((form, source_pos)) = form_of(body, node, evaluations[0]) {
            let evals: Vec<(CallKey, Eval)> =
                evaluations.iter().map(|s| (call_key(s), eval_of(s, source_pos, node))).collect();
            // A `Mul` by ones that broadcasts nothing (a bias that happens to be zero) is arithmetic, not a
            // broadcast: only one that makes its source larger is used as a broadcast.
            if form != Form::Expand && !evals.iter().all(|(_, e)| e.grows) {
                continue;
            }
            let first = evaluations[0];
            let (graph, label, functions) = (first.graph.to_string(), first.node.to_string(), first.functions.clone());
            out.insert(index, Candidate { node: index, form, source_pos, evals, graph, label, functions });
        }
    }
    if let Some((path, facts)) = facts {
        for (index, node) in body.nodes.iter().enumerate() {
            let found = match tile_eval(node, facts) {
                Some(eval) => Some((Form::Tile, eval)),
                // An Unsqueeze is mostly shape arithmetic (a scalar made 1-D for a Concat): it is a broadcast to
                // fold only where a broadcasting op reads it.
                None if read_by_a_site(body, node, sites, facts) => {
                    prepend_eval(node, facts).map(|eval| (Form::Unsqueeze, eval))
                }
                None => None,
            };
            if let Some((form, eval)) = found {
                let label = if node.name().is_empty() {
                    format!("#{index} ({})", node.op_type())
                } else {
                    node.name().to_string()
                };
                let (evals, graph) = (vec![(Vec::new(), eval)], path.to_string());
                let functions = Vec::new();
                out.insert(index, Candidate { node: index, form, source_pos: 0, evals, graph, label, functions });
            }
        }
    }
    out
}

/// Which form a broadcasting node is, and the input position of its source.
fn form_of(body: &Body<'_>, node: &NodeProto, site: &Site) -> Option<(Form, usize)> {
    if !crate::rules::ops::is_default_domain(node.domain()) || node.output.len() != 1 {
        return None;
    }
    let constant = |pos: usize, fill: f64| node.input.get(pos).is_some_and(|n| is_fill(body, n, fill));
    match (site.kind, node.op_type(), node.input.len()) {
        (SiteKind::Expand, "Expand", 2) if !node.input[0].is_empty() => Some((Form::Expand, 0)),
        (SiteKind::Multi, "Mul", 2) if constant(1, 1.0) => Some((Form::MulOnes, 0)),
        (SiteKind::Multi, "Mul", 2) if constant(0, 1.0) => Some((Form::MulOnes, 1)),
        // `x + 0` is `x` but for the sign of a zero (-0 + 0 is +0): removing it keeps a -0 that was made +0,
        // which no comparison of values tells apart.
        (SiteKind::Multi, "Add", 2) if constant(1, 0.0) => Some((Form::AddZeros, 0)),
        (SiteKind::Multi, "Add", 2) if constant(0, 0.0) => Some((Form::AddZeros, 1)),
        (SiteKind::Multi, "Where", 3) if constant(0, 1.0) => Some((Form::WhereConstant, 1)),
        (SiteKind::Multi, "Where", 3) if constant(0, 0.0) => Some((Form::WhereConstant, 2)),
        _ => None,
    }
}

fn eval_of(site: &Site, source_pos: usize, node: &NodeProto) -> Eval {
    // Site inputs are the node's present inputs, in order.
    let present: Vec<usize> = (0..node.input.len()).filter(|&i| !node.input[i].is_empty()).collect();
    let source = present
        .iter()
        .position(|&p| p == source_pos)
        .and_then(|i| site.inputs.get(i))
        .map_or_else(Shape::unranked, |i| i.shape.clone().into_owned());
    let noop = matches!(site.verdict, Verdict::Same) || source.provably_eq(&site.output_shape);
    let conditions = match &site.verdict {
        Verdict::Conditional(c) => c.clone(),
        _ => Vec::new(),
    };
    let grows = grows(&source, &site.output_shape);
    Eval { noop: noop && holds(site), holds: holds(site), source, conditions, grows }
}

/// Whether `output` provably has more axes than `source`, or a size where `source` has 1 and `output` a size
/// other than 1.
fn grows(source: &Shape, output: &Shape) -> bool {
    let (Some(s), Some(o)) = (source.dims(), output.dims()) else { return false };
    o.len() > s.len() || s.iter().zip(o).any(|(a, b)| a.is_one() && !b.is_one() && !matches!(b, Dim::Unknown))
}

/// A `Tile` that only copies size-1 axes: known repeats, and each axis repeated once or of size 1.
fn tile_eval(node: &NodeProto, facts: &HashMap<&str, &ValueFacts>) -> Option<Eval> {
    if node.op_type() != "Tile" || !crate::rules::ops::is_default_domain(node.domain()) || node.input.len() != 2 {
        return None;
    }
    let input = facts.get(node.input[0].as_str())?;
    let repeats = facts.get(node.input[1].as_str())?.value.as_ref()?;
    let dims = input.shape.dims()?;
    if dims.len() != repeats.len() {
        return None;
    }
    let mut noop = true;
    for (d, r) in dims.iter().zip(repeats) {
        let r = r.as_ref()?.as_constant()?;
        if r != 1 {
            noop = false;
        }
        if r != 1 && (!matches!(d, Dim::Known(1)) || r < 0) {
            return None;
        }
    }
    Some(Eval { source: input.shape.clone(), holds: true, noop, conditions: Vec::new(), grows: !noop })
}

/// Whether a broadcasting op reads `node`'s output, directly or through other copies of it (`Expand`, `Tile`,
/// `Unsqueeze`, `Reshape`, reading it as their data): those may go first, and a second fold must find nothing
/// the first did not.
fn read_by_a_site(
    body: &Body<'_>,
    node: &NodeProto,
    sites: &BTreeMap<usize, Vec<&Site<'static>>>,
    facts: &HashMap<&str, &ValueFacts>,
) -> bool {
    let mut work = vec![(node, 0usize)];
    while let Some((node, depth)) = work.pop() {
        for (r, p) in node.output.iter().flat_map(|o| body.readers.get(o.as_str()).into_iter().flatten()) {
            if sites.contains_key(r) {
                return true;
            }
            let reader = &body.nodes[*r];
            let copy = *p == 0
                && (reader.op_type() == "Expand"
                    || tile_eval(reader, facts).is_some()
                    || prepend_eval(reader, facts).is_some());
            if copy && depth < 16 {
                work.push((reader, depth + 1));
            }
        }
    }
    false
}

/// An `Unsqueeze` or `Reshape` that only puts size-1 axes in front of its input: numpy broadcasting prepends those
/// by itself ("Multidirectional Broadcasting": the shorter shape is padded with 1s on the left).
fn prepend_eval(node: &NodeProto, facts: &HashMap<&str, &ValueFacts>) -> Option<Eval> {
    if !matches!(node.op_type(), "Unsqueeze" | "Reshape") || !crate::rules::ops::is_default_domain(node.domain()) {
        return None;
    }
    let input = facts.get(node.input.first()?.as_str())?;
    let output = facts.get(node.output.first()?.as_str())?;
    let (source, out) = (input.shape.dims()?, output.shape.dims()?);
    let leading = out.len().checked_sub(source.len()).filter(|&k| k > 0)?;
    let ones = out[..leading].iter().all(|d| matches!(d, Dim::Known(1)));
    let same = out[leading..].iter().zip(source).all(|(a, b)| a.provably_eq(b));
    (ones && same).then(|| Eval {
        source: input.shape.clone(),
        holds: true,
        noop: false,
        grows: true,
        conditions: Vec::new(),
    })
}

/// Whether `name` is a constant of this body (an initializer that is not also an input, or a `Constant` node's
/// `value`) whose every element is `fill` (1 is also `true`, 0 `false`), or an `Expand`/`Tile` of one (a copy of
/// ones is ones: so a fold that removes that copy leaves nothing a second fold would find).
fn is_fill(body: &Body<'_>, name: &str, fill: f64) -> bool {
    let made_by = body.producer.get(name).map(|&i| &body.nodes[i]);
    let tensor = match made_by {
        Some(n) if !crate::rules::ops::is_default_domain(n.domain()) => return false,
        Some(n) if matches!(n.op_type(), "Expand" | "Tile") => {
            return n.input.first().is_some_and(|source| source != name && is_fill(body, source, fill))
        }
        Some(n) if n.op_type() == "Constant" => crate::onnx::attr::Attrs::new(n, None).tensor("value"),
        Some(_) => None,
        None => body.initializer.get(name).copied().filter(|_| !body.inputs.contains(name)),
    };
    let Some(t) = tensor else { return false };
    if let Some(v) = crate::onnx::tensor::float_values(t) {
        return !v.is_empty() && v.iter().all(|&x| x == fill);
    }
    crate::onnx::tensor::int_values(t).is_some_and(|v| !v.is_empty() && v.iter().all(|&x| x as f64 == fill))
}
