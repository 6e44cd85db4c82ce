//! One broadcasting node evaluated: bound to its rule, judged, and recorded as a [`Site`].

use super::scope::Env;
use super::walker::{fresh_symbol, Walker};
use super::*;
use crate::onnx::location::node_label;

impl<'m> Walker<'m, '_> {
    /// Evaluates one broadcasting node and returns the facts of its outputs.
    pub(super) fn site(
        &mut self,
        env: &Env<'m, '_>,
        index: usize,
        node: &'m NodeProto,
        attrs: Attrs<'m>,
        op: BroadcastOp,
        inputs: &[Option<&ValueFacts>],
    ) -> Vec<ValueFacts> {
        let view = rules::NodeView::new(&node.input, inputs, attrs);
        let rules::Binding { rule, outcome, rule_inputs, target } = rules::bind(op.kind, &view);
        let present = view.present();
        let shape_at = |pos: usize| view.shape(pos);

        let site_inputs: Vec<SiteInput> = present
            .iter()
            .map(|&p| {
                let facts = inputs.get(p).copied().flatten();
                SiteInput {
                    name: node.input[p].clone(),
                    shape: facts.map_or_else(Shape::unranked, |f| f.shape.clone()),
                    elem: facts.and_then(|f| f.elem),
                }
            })
            .collect();
        let type_mismatch = type_mismatch(op.same_type, present, &site_inputs);
        let elem = if op.bool_output {
            Some(tensor::BOOL)
        } else {
            let typed = match op.same_type {
                SameType::Inputs(group) => group.first().copied().unwrap_or(0),
                _ => 0,
            };
            view.site_pos(typed).and_then(|i| site_inputs[i].elem)
        };
        let unknown_out = outcome.output.dims().is_some_and(|d| d.iter().any(|d| matches!(d, Dim::Unknown)));
        let output_shape = match op.kind {
            SiteKind::Multi | SiteKind::Expand if unknown_out => {
                let mut shapes: Vec<&Shape> = present.iter().map(|&p| shape_at(p)).collect();
                if let (SiteKind::Expand, Some(target)) = (op.kind, &target) {
                    shapes = vec![shape_at(0), target];
                }
                name_unknown_parts(&outcome.output, &shapes, &mut || fresh_symbol(&mut self.fresh))
            }
            _ => outcome.output.clone(),
        };

        let (graph, node_name, node_index, functions) = reported_at(env, node, index);
        let site = Site {
            loc: NodeLoc { graph: env.loc.clone(), node: index },
            graph,
            node: node_name,
            node_index,
            op: node.op_type().to_string(),
            kind: op.kind,
            rule,
            inputs: site_inputs,
            target,
            output_shape: output_shape.clone(),
            verdict: outcome.verdict,
            rule_inputs,
            type_mismatch,
            functions,
            opset: env.opset,
            attrs: SiteAttrs::of(attrs),
        };
        match &mut self.each_site {
            Some(each) => each(site),
            None => self.out.sites.push(site),
        }
        // Shape arithmetic is the ONNX ops' (an op of another domain may share a name, not a meaning).
        let value = ops::is_default_domain(node.domain())
            .then(|| infer::values::broadcast_value(node.op_type(), inputs, &output_shape))
            .flatten();
        let mut outputs = vec![ValueFacts { value, ..ValueFacts::tensor(elem, output_shape) }];
        outputs.resize_with(node.output.len().max(1), ValueFacts::unknown);
        outputs
    }
}

/// Where a site is reported: its graph, node name and position, and the chain of function calls it sits in (inside
/// a function: at the outermost calling node).
pub(super) fn reported_at(
    env: &Env<'_, '_>,
    node: &NodeProto,
    index: usize,
) -> (String, String, usize, Vec<FunctionFrame>) {
    match env.call {
        None => (env.path.clone(), node_label(node, index), index, Vec::new()),
        Some(call) => {
            let inner: Vec<String> = call.inner_nodes.iter().cloned().chain([node_label(node, index)]).collect();
            let frames = call
                .frames
                .iter()
                .zip(inner)
                .map(|(function, node)| FunctionFrame { function: function.clone(), node })
                .collect();
            (call.graph.clone(), call.node.clone(), call.node_index, frames)
        }
    }
}

/// The output of a numpy broadcast where an unknown dim met symbols: the broadcast of those symbols and a fresh
/// symbol for the unknown one, rather than unknown. The verdict stays what it was (undecided); what this keeps is
/// that the output is built from those symbols, so `expand`'s `x' = Expand(x, Shape(g))`, `g' = Expand(g,
/// Shape(x'))` gives `x'` and `g'` one provable shape.
fn name_unknown_parts(output: &Shape, inputs: &[&Shape], fresh: &mut dyn FnMut() -> Dim) -> Shape {
    let Some(out) = output.dims() else { return output.clone() };
    if !out.iter().any(|d| matches!(d, Dim::Unknown)) {
        return output.clone();
    }
    let rank = out.len();
    let dims = out
        .iter()
        .enumerate()
        .map(|(axis, d)| {
            if !matches!(d, Dim::Unknown) {
                return d.clone();
            }
            let column: Vec<&Dim> = inputs
                .iter()
                .filter_map(|s| s.dims())
                .filter_map(|ds| (axis + ds.len()).checked_sub(rank).map(|i| &ds[i]))
                .filter(|d| !d.is_one())
                .collect();
            let unknowns = column.iter().filter(|d| matches!(d, Dim::Unknown)).count();
            let symbols: Vec<&Dim> = column.iter().copied().filter(|d| d.is_symbolic()).collect();
            if unknowns != 1 || symbols.is_empty() || symbols.len() + 1 != column.len() {
                return Dim::Unknown;
            }
            let named = fresh();
            let mut parts = symbols;
            parts.push(&named);
            rules::symbolic_broadcast(&parts)
        })
        .collect();
    Shape::ranked(dims)
}

/// The first input of a type group whose element type differs from the group's first known type.
fn type_mismatch(same: SameType, present: &[usize], inputs: &[SiteInput]) -> Option<TypeMismatch> {
    let members: Vec<usize> = match same {
        SameType::Nothing => return None,
        SameType::All => (0..inputs.len()).collect(),
        SameType::Inputs(group) => group.iter().filter_map(|p| present.iter().position(|q| q == p)).collect(),
    };
    let mut first: Option<(usize, i32)> = None;
    for i in members {
        let Some(elem) = inputs[i].elem else { continue };
        match first {
            None => first = Some((i, elem)),
            Some((against, expected)) if expected != elem => {
                return Some(TypeMismatch { input: i, found: elem, against, expected })
            }
            Some(_) => {}
        }
    }
    None
}
