//! One broadcasting node evaluated: bound to its rule, judged, and recorded as a [`Site`].

use super::scope::Env;
use super::walker::{fresh_symbol, Walker};
use super::*;
use std::borrow::Cow;

use crate::onnx::location::node_label_of;

impl<'m> Walker<'m, '_> {
    /// Evaluates one broadcasting node and returns the facts of its outputs.
    pub(super) fn site(
        &mut self,
        env: &Env<'m, '_>,
        (index, node, attrs): (usize, &'m NodeProto, Attrs<'m>),
        op: BroadcastOp,
        inputs: &[Option<&ValueFacts>],
        dims: Option<Vec<Dim>>,
    ) -> super::scope::Outputs {
        // A counted pair needs no more; debug builds judge it in full all the same, to assert that the two agree.
        // (`dims` is `None` where the walk found already that the site is no such pair.)
        let quick = match dims.filter(|_| self.counts_pairs()).and_then(|d| self.counted_pair(node, op, inputs, d)) {
            Some((outputs, kind)) if !cfg!(debug_assertions) => return self.count(kind, outputs),
            quick => quick,
        };
        let view = rules::NodeView::new(&node.input, inputs, attrs);
        let rules::Binding { rule, outcome: rules::Outcome { output, verdict }, rule_inputs, target } =
            rules::bind(op.kind, &view);
        let present = view.present();
        let shape_at = |pos: usize| view.shape(pos);

        let unknown_out = output.dims().is_some_and(|d| d.iter().any(|d| matches!(d, Dim::Unknown)));
        let output_shape = match op.kind {
            SiteKind::Multi | SiteKind::Expand if unknown_out => {
                let mut shapes: Vec<&Shape> = present.iter().map(|&p| shape_at(p)).collect();
                if let (SiteKind::Expand, Some(target)) = (op.kind, &target) {
                    shapes = vec![shape_at(0), target];
                }
                name_unknown_parts(&output, &shapes, &mut || fresh_symbol(&mut self.fresh))
            }
            _ => output,
        };
        let outputs = output_facts(node, op, (inputs, present), output_shape);

        let elem_of = |i: usize| inputs.get(present[i]).copied().flatten().and_then(|f| f.elem);
        let type_mismatch = type_mismatch(op.same_type, present, elem_of);
        // A site the taker only counts (it holds, and nothing is to be said of it) is counted without its record;
        // debug builds make the record all the same, to assert that the full judgement agrees.
        let kind = verdict.kind();
        let counted = type_mismatch.is_none() && self.counted_only.contains(kind, rule);
        debug_assert!(
            quick.as_ref().is_none_or(|(quick, k)| counted && *k == kind && *quick == outputs),
            "a site settled as a counted pair is counted with the same verdict and outputs when judged in full"
        );
        if counted && !cfg!(debug_assertions) {
            return self.count(kind, outputs);
        }
        let (graph, node_name, node_index, functions) = reported_at(env, node, index);
        let site = Site {
            loc: NodeLoc { graph: env.loc.clone(), node: index },
            graph,
            node: node_name,
            node_index,
            op: Cow::Borrowed(node.op_type()),
            kind: op.kind,
            rule,
            inputs: site_inputs(node, present, inputs),
            target,
            output_shape: Cow::Borrowed(&outputs[0].shape),
            verdict,
            rule_inputs,
            type_mismatch,
            functions,
            opset: env.opset,
            attrs: SiteAttrs::of(attrs),
        };
        match &mut self.each_site {
            Some(each) if counted => {
                debug_assert!(each.agrees(&site), "a site counted only has no finding: {site:?}");
                drop(site);
                self.counted[kind as usize] += 1;
            }
            Some(each) => each.site(site),
            None => self.out.sites.push(site.into_owned()),
        }
        outputs
    }
}

impl Walker<'_, '_> {
    /// Counts a site of verdict `kind` that the taker only counts, and gives back its outputs.
    fn count(&mut self, kind: rules::VerdictKind, outputs: super::scope::Outputs) -> super::scope::Outputs {
        if self.each_site.is_some() {
            self.count_site(kind);
        }
        outputs
    }

    /// Whether the taker only counts some sites of the numpy rule that hold, which [`Walker::counted_pair`] may
    /// then settle.
    #[inline]
    pub(super) fn counts_pairs(&self) -> bool {
        self.pairs
    }

    /// A site the taker only counts, settled without its record and without binding its rule in full: two inputs
    /// of the numpy rule, both present, their sizes all known and broadcastable, of one type (most sites of a large
    /// graph). Its outputs (their dims pushed onto `dims`, empty, which a dropped value left) and its verdict;
    /// `None` for every other site, which [`Walker::site`] judges in full.
    fn counted_pair(
        &self,
        node: &NodeProto,
        op: BroadcastOp,
        inputs: &[Option<&ValueFacts>],
        dims: Vec<Dim>,
    ) -> Option<(super::scope::Outputs, rules::VerdictKind)> {
        let mut first = ValueFacts { shape: Shape::ranked(dims), ..ValueFacts::unknown() };
        let kind = self.counted_pair_into(node, op, inputs, &mut first)?;
        let mut outputs: super::scope::Outputs = smallvec::smallvec![first];
        if node.output.len() > 1 {
            outputs.resize_with(node.output.len(), ValueFacts::unknown);
        }
        Some((outputs, kind))
    }

    /// [`Walker::counted_pair`], its first output written over `out` (whose dims it reuses): the walk builds a node's
    /// one output in the box it is defined in, rather than moving it there through the site's list of outputs.
    /// `out` is left unspecified when the site is not such a pair (`None`).
    pub(super) fn counted_pair_into(
        &self,
        node: &NodeProto,
        op: BroadcastOp,
        inputs: &[Option<&ValueFacts>],
        out: &mut ValueFacts,
    ) -> Option<rules::VerdictKind> {
        let (SiteKind::Multi, [Some(a), Some(b)], true) = (op.kind, inputs, self.quick_pairs) else { return None };
        const BOTH: &[usize] = &[0, 1];
        // Two inputs of one type variable (every numpy op but Where, whose condition is its own) differ in type
        // exactly when both types are known and are not the same.
        let differ = match op.same_type {
            SameType::All => a.elem.zip(b.elem).is_some_and(|(x, y)| x != y),
            same => type_mismatch(same, BOTH, |i| inputs[i].and_then(|f| f.elem)).is_some(),
        };
        if differ {
            return None;
        }
        // The dims of the value whose box this was, for the output's: `pair_sizes` writes over them (mostly sizes
        // of the same shape: a size written over a size).
        let dims = out.shape.0.get_or_insert_with(Vec::new);
        let same = rules::multidirectional::pair_sizes(a.shape.dims()?, b.shape.dims()?, dims)?.ok()?;
        let kind = if same { rules::VerdictKind::Same } else { rules::VerdictKind::Broadcast };
        if !self.pair_records && !self.counted_only.contains(kind, rules::Rule::Multidirectional) {
            return None;
        }
        let (elem, contents) = output_parts(node, op, (inputs, BOTH), &out.shape);
        // Field by field, the shape in place: the box's old facts are mostly empty, and need no call to drop them
        // whole. (Every field is named, so that a field added to `ValueFacts` is not left behind.)
        let ValueFacts { elem: out_elem, shape: _, value, floats, contradicted, kind: out_kind } = out;
        (*out_elem, *contradicted, *out_kind) = (elem, false, tensor::Kind::Tensor);
        match contents {
            Some(contents) => *value = Some(contents),
            None if value.is_some() => *value = None,
            None => {}
        }
        if floats.is_some() {
            *floats = None;
        }
        Some(kind)
    }
}

impl Walker<'_, '_> {
    /// What [`Walker::counted_pair_into`] concludes of a pair (`refs`, in input order) whose input `k` is to hold
    /// the output (the node reads it last), without writing it: the verdict, the output's element type, and the
    /// shape's widening (see [`rules::multidirectional::pair_sizes_over`]). `None` for every other pair, and for a
    /// pair whose output is not that input's shape written over (an input of known contents, a shorter input `k`).
    pub(super) fn judge_pair_over(
        &self,
        node: &NodeProto,
        op: BroadcastOp,
        refs: [&ValueFacts; 2],
        k: usize,
    ) -> Option<PairOver> {
        let (SiteKind::Multi, true, false) = (op.kind, self.quick_pairs, self.pair_records) else { return None };
        let [a, b] = refs;
        // Contents would be the output's to compute: the general way.
        if a.value.is_some() || b.value.is_some() {
            return None;
        }
        const BOTH: &[usize] = &[0, 1];
        let inputs = [Some(a), Some(b)];
        let differ = match op.same_type {
            SameType::All => a.elem.zip(b.elem).is_some_and(|(x, y)| x != y),
            same => type_mismatch(same, BOTH, |i| inputs[i].and_then(|f| f.elem)).is_some(),
        };
        if differ {
            return None;
        }
        let sizes = rules::multidirectional::pair_sizes_over(refs[k].shape.dims()?, refs[1 - k].shape.dims()?)?;
        let kind = if sizes.same { rules::VerdictKind::Same } else { rules::VerdictKind::Broadcast };
        if !self.counted_only.contains(kind, rules::Rule::Multidirectional) {
            return None;
        }
        let (elem, _) = output_parts(node, op, (&inputs, BOTH), &refs[k].shape);
        Some(PairOver { kind, elem, widens: sizes.widens })
    }
}

/// A counted pair judged over one of its inputs ([`Walker::judge_pair_over`]), to be written over it.
pub(super) struct PairOver {
    pub(super) kind: rules::VerdictKind,
    /// The output's element type.
    pub(super) elem: Option<i32>,
    widens: bool,
}

impl PairOver {
    /// Writes the output over `over`, the facts of the input it was judged over; `other` is the other input's.
    /// What [`Walker::counted_pair_into`] leaves in the output's box, field by field.
    pub(super) fn write(&self, over: &mut ValueFacts, other: &ValueFacts) {
        let ValueFacts { elem, shape, value: _, floats, contradicted: _, kind } = over;
        if let (true, Some(dims), Some(other)) = (self.widens, shape.0.as_mut(), other.shape.dims()) {
            rules::multidirectional::widen_over(dims, other);
        }
        (*elem, *kind) = (self.elem, tensor::Kind::Tensor);
        if floats.is_some() {
            *floats = None;
        }
    }
}

/// The facts of a broadcasting node's outputs: the broadcast's shape, with the type of its output (boolean for a
/// comparison, else the inputs'), and its contents where the inputs' are known; further outputs unknown.
// Inlined into both of its callers (a counted pair and a site judged in full): as a call it cost `check --format
// json` 11 M instructions more on 100,000 sites.
#[inline(always)]
fn output_facts(
    node: &NodeProto,
    op: BroadcastOp,
    (inputs, present): (&[Option<&ValueFacts>], &[usize]),
    output_shape: Shape,
) -> super::scope::Outputs {
    let mut outputs = smallvec::smallvec![output_fact(node, op, (inputs, present), output_shape)];
    if node.output.len() > 1 {
        outputs.resize_with(node.output.len(), ValueFacts::unknown);
    }
    outputs
}

/// The facts of a broadcasting node's first output (see [`output_facts`]).
#[inline(always)]
fn output_fact(
    node: &NodeProto,
    op: BroadcastOp,
    (inputs, present): (&[Option<&ValueFacts>], &[usize]),
    output_shape: Shape,
) -> ValueFacts {
    let (elem, value) = output_parts(node, op, (inputs, present), &output_shape);
    ValueFacts { value, ..ValueFacts::tensor(elem, output_shape) }
}

/// The element type and the contents of a broadcasting node's first output, of shape `output_shape`.
#[inline(always)]
fn output_parts(
    node: &NodeProto,
    op: BroadcastOp,
    (inputs, present): (&[Option<&ValueFacts>], &[usize]),
    output_shape: &Shape,
) -> (Option<i32>, Option<Vec<tensor::IntValue>>) {
    let elem = if op.bool_output {
        Some(tensor::BOOL)
    } else {
        let typed = match op.same_type {
            SameType::Inputs(group) => group.first().copied().unwrap_or(0),
            _ => 0,
        };
        present.contains(&typed).then(|| inputs.get(typed).copied().flatten()).flatten().and_then(|f| f.elem)
    };
    // Shape arithmetic is the ONNX ops' (an op of another domain may share a name, not a meaning); only an input
    // of known contents gives the output contents.
    let any_value = inputs.iter().any(|f| f.is_some_and(|f| f.value.is_some()));
    let value = (any_value && ops::is_default_domain(node.domain()))
        .then(|| infer::values::broadcast_value(node.op_type(), inputs, output_shape))
        .flatten();
    (elem, value)
}

/// The present inputs of a site, their names and shapes borrowed from the node and the scope: the site lives only
/// as long as [`Walker::site`]'s call unless the analysis keeps it (then it is copied once, `into_owned`).
// Inlined: as a call it cost 4 M instructions more on 100,000 sites.
#[inline(always)]
pub(super) fn site_inputs<'a>(
    node: &'a NodeProto,
    present: &[usize],
    inputs: &[Option<&'a ValueFacts>],
) -> smallvec::SmallVec<[SiteInput<'a>; 2]> {
    let mut site_inputs = smallvec::SmallVec::new();
    for &p in present {
        let facts = inputs.get(p).copied().flatten();
        site_inputs.push(SiteInput {
            name: Cow::Borrowed(node.input[p].as_str()),
            shape: facts.map_or(Cow::Owned(Shape::unranked()), |f| Cow::Borrowed(&f.shape)),
            elem: facts.and_then(|f| f.elem),
        });
    }
    site_inputs
}

/// Where a site is reported: its graph, node name and position, and the chain of function calls it sits in (inside
/// a function: at the outermost calling node), borrowed from the walk's place and the node.
pub(super) fn reported_at<'a>(
    env: &'a Env<'_, '_>,
    node: &'a NodeProto,
    index: usize,
) -> (Cow<'a, str>, Cow<'a, str>, usize, Vec<FunctionFrame<'a>>) {
    match env.call {
        None => (Cow::Borrowed(&env.path), node_label_of(node, index), index, Vec::new()),
        Some(call) => {
            let inner = call.inner_nodes.iter().map(|n| Cow::Borrowed(n.as_str())).chain([node_label_of(node, index)]);
            let frames = call
                .frames
                .iter()
                .zip(inner)
                .map(|(function, node)| FunctionFrame { function: Cow::Borrowed(function), node })
                .collect();
            (Cow::Borrowed(&call.graph), Cow::Borrowed(&call.node), call.node_index, frames)
        }
    }
}

/// [`reported_at`] as owned text, for the records an analysis keeps (contradictions, index bounds).
pub(super) fn reported_owned(
    env: &Env<'_, '_>,
    node: &NodeProto,
    index: usize,
) -> (String, String, usize, Vec<FunctionFrame<'static>>) {
    let (graph, node_name, node_index, functions) = reported_at(env, node, index);
    let functions = functions.into_iter().map(FunctionFrame::into_owned).collect();
    (graph.into_owned(), node_name.into_owned(), node_index, functions)
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

/// The first input of a type group whose element type differs from the group's first known type; `elem` gives
/// the element type of each present input, by position among them.
#[inline]
pub(super) fn type_mismatch(
    same: SameType,
    present: &[usize],
    elem: impl Fn(usize) -> Option<i32>,
) -> Option<TypeMismatch> {
    // The group's members in the order of the group (`Inputs`) or of the inputs (`All`).
    match same {
        SameType::Nothing => None,
        SameType::All => first_mismatch(0..present.len(), elem),
        SameType::Inputs(group) => {
            first_mismatch(group.iter().filter_map(|p| present.iter().position(|q| q == p)), elem)
        }
    }
}

/// The first of `members` whose element type differs from the first known one among them.
fn first_mismatch(members: impl Iterator<Item = usize>, elem: impl Fn(usize) -> Option<i32>) -> Option<TypeMismatch> {
    let mut first: Option<(usize, i32)> = None;
    for i in members {
        let Some(found) = elem(i) else { continue };
        match first {
            None => first = Some((i, found)),
            Some((against, expected)) if expected != found => {
                return Some(TypeMismatch { input: i, found, against, expected })
            }
            Some(_) => {}
        }
    }
    None
}
