//! The strategy of a rewrite: for each broadcasting node, which inputs to make explicit and how (`Expand` to a
//! constant or computed shape, `Reshape` + `Tile` below opset 8, a materialized constant), or why it is left as
//! it is. The nodes themselves come from the [`Builder`].

use std::collections::HashMap;

use super::action::ActionText;
use super::builder::{is_default, At, Builder};
use super::{Action, ExpandOptions, ExpandSummary, LeftReason, LeftSite};
use crate::analysis::{GraphStep, NodeLoc, Site};
use crate::onnx::pb::NodeProto;
use crate::onnx::wire::{InputEdit, NodeEdit};
use crate::rules::ops::SiteKind;
use crate::rules::{Alignment, RewriteOperand, Rule, Verdict};
use crate::sizes::shape::{Dim, Shape};
use std::sync::Arc;

pub(super) struct Planner<'m> {
    pub b: Builder<'m>,
    pub options: ExpandOptions,
    pub summary: ExpandSummary,
    producers: HashMap<Vec<GraphStep>, HashMap<&'m str, usize>>,
    /// The text of the action being planned.
    text: ActionText,
    /// The first node whose action's text came to 4 GiB or more ([`super::TooLong`]): the plan fails.
    too_long: Option<NodeLoc>,
}

/// One input to make explicit, its name and shape borrowed from the site.
struct Operand<'s> {
    position: usize,
    name: &'s str,
    shape: &'s Shape,
    elem: Option<i32>,
    alignment: Alignment,
}

/// What one broadcasting node becomes.
enum SitePlan {
    /// Nothing to do: no input is broadcast, or the broadcast is already explicit.
    Nothing,
    /// Left implicit, and why.
    Left(LeftSite),
    /// Made explicit: the node's new inputs (and dropped legacy attributes) and what was done are recorded
    /// ([`Planner::explicit`]).
    Explicit,
}

/// The inputs of one node made explicit: the new value for each input position (the steps, a line per input, go
/// to the planner's [`ActionText`]).
#[derive(Default)]
struct Rewritten {
    /// By position, in order (one held inline: see `wire::ReplacedInputs`).
    replaced: crate::onnx::wire::ReplacedInputs,
}

impl Rewritten {
    fn add(&mut self, position: usize, name: impl Into<Arc<str>>) {
        self.set(position, name.into());
    }

    /// The input at `position` becomes `name`.
    fn set(&mut self, position: usize, name: Arc<str>) {
        // Mostly after every position replaced so far: the inputs are taken in order.
        if self.replaced.last().is_none_or(|(last, _)| *last < position) {
            self.replaced.push((position, name));
            return;
        }
        match self.replaced.binary_search_by_key(&position, |(p, _)| *p) {
            Ok(i) => self.replaced[i].1 = name,
            Err(i) => self.replaced.insert(i, (position, name)),
        }
    }

    fn has(&self, position: usize) -> bool {
        self.replaced.iter().any(|(p, _)| *p == position)
    }
}

/// What follows the step of an input made explicit at a shape computed in the graph.
const COMPUTED: &str = " (computed in the graph)";

fn left(site: &Site, reason: LeftReason) -> SitePlan {
    let (graph, node, op) = (site.graph.to_string(), site.node.to_string(), site.op.to_string());
    SitePlan::Left(LeftSite { graph, node, op, reason })
}

impl<'m> Planner<'m> {
    pub fn new(mut b: Builder<'m>, options: ExpandOptions) -> Self {
        // Room for a line and a node edit per node of the main graph at once (of which the nodes that broadcast and
        // are rewritten are written, the rest of the room never touched): a list of 100,000 grown by doubling
        // leaves its old copies freed but not yet returned to the system at the command's peak.
        let nodes = b.model.graph.as_ref().map_or(0, |g| g.node.len());
        let summary = ExpandSummary { actions: Vec::with_capacity(nodes), ..Default::default() };
        if nodes > 0 {
            b.graph_edit(&[]).node_edits.reserve(nodes);
        }
        Planner { b, options, summary, producers: HashMap::new(), text: ActionText::default(), too_long: None }
    }

    /// Plans one broadcasting node; `sites` are its evaluations (several for a function called several times).
    pub fn site(&mut self, loc: &NodeLoc, sites: &[Site]) {
        match self.plan_site(loc, sites) {
            SitePlan::Nothing => {}
            SitePlan::Left(site) => self.summary.left.push(site),
            SitePlan::Explicit => {}
        }
    }

    /// Records the node at `loc` made explicit: its edit, and what was done. (Moved once, into their lists: a site
    /// plan that carried them cost a copy of both at every site.)
    fn explicit(&mut self, loc: &NodeLoc, edit: NodeEdit, action: Action) -> SitePlan {
        self.b.graph_edit(&loc.graph).node_edits.insert(loc.node, edit);
        self.summary.made_explicit += 1;
        self.summary.actions.push(action);
        SitePlan::Explicit
    }

    /// Notes the node at `loc` as the one whose action's text is too long, unless one was before: the plan fails.
    #[cold]
    fn too_long(&mut self, loc: &NodeLoc) -> SitePlan {
        self.too_long.get_or_insert_with(|| loc.clone());
        SitePlan::Nothing
    }

    /// The plan: the edit, and the summary with what the builder added; `Err` when a site's text was too long.
    pub fn finish(self) -> Result<super::Plan, super::ExpandError> {
        if let Some(loc) = self.too_long {
            return Err(super::ExpandError::SiteTooLong(loc));
        }
        let counts = self.b.counts;
        let summary = ExpandSummary {
            expands_inserted: counts.expands_inserted,
            expands_shared: counts.expands_shared,
            materialized: counts.materialized,
            nodes_added: counts.nodes_added,
            ..self.summary
        };
        Ok(super::Plan { edit: self.b.into_edit(), summary, external: Default::default() })
    }

    fn plan_site(&mut self, loc: &NodeLoc, sites: &[Site]) -> SitePlan {
        let first = &sites[0];
        if let Some(plan) = self.not_rewritten(loc, sites) {
            return plan;
        }
        // A function body is shared by its calls: a constant target is only right if every call agrees on it.
        let agreed =
            sites.len() == 1 || sites.iter().all(|s| s.output_shape == first.output_shape && same_inputs(s, first));
        let node = self.node_proto(loc);
        let operands = self.operands(first);
        if operands.is_empty() {
            return SitePlan::Nothing;
        }
        let at = At { graph: &loc.graph, before: loc.node };
        self.text.begin(&first.graph, &first.node, &first.op);
        let result = match known_sizes(&first.output_shape).filter(|_| agreed) {
            // The output shape is `out`'s, every dim known.
            Some(out) => self.make_static(&at, &operands, (&out, &first.output_shape), first.opset),
            None => self.make_dynamic(&at, first, &operands, node, first.opset),
        };
        let done = match result {
            Ok(done) => done,
            Err(reason) => return left(first, reason),
        };
        let mut drop_attributes = Vec::new();
        if first.rule == Rule::LegacyAxis || first.kind == (SiteKind::Gemm { legacy: true }) {
            drop_attributes = ["broadcast", "axis"].iter().map(|s| s.to_string()).collect();
        }
        let mut conditions: Vec<String> = Vec::new();
        for s in sites {
            if let Verdict::Conditional(conds) = &s.verdict {
                for c in conds.iter().map(ToString::to_string) {
                    if !conditions.contains(&c) {
                        conditions.push(c);
                    }
                }
            }
        }
        let Ok(action) = self.text.finish(conditions) else { return self.too_long(loc) };
        // The inputs replaced, by position: the splice keeps the others as they are written.
        self.explicit(loc, NodeEdit { inputs: InputEdit::At(done.replaced), drop_attributes }, action)
    }

    /// Why a node is not rewritten, if it is not: it breaks its rule, needs nothing, is already explicit, or no
    /// rewrite fits it.
    fn not_rewritten(&mut self, loc: &NodeLoc, sites: &[Site]) -> Option<SitePlan> {
        let first = &sites[0];
        if let Some(bad) =
            sites.iter().find(|s| matches!(s.verdict, Verdict::Violation(_)) || s.type_mismatch.is_some())
        {
            return Some(left(bad, LeftReason::BreaksRule));
        }
        if !first.rule.rewritable() {
            return Some(SitePlan::Nothing);
        }
        if sites.iter().all(|s| matches!(s.verdict, Verdict::Same)) {
            return Some(SitePlan::Nothing);
        }
        if let Some(refusal) = first.rule.rewrite_refusal(first) {
            return Some(left(first, LeftReason::Refused(refusal)));
        }
        if sites.iter().all(|s| matches!(s.verdict, Verdict::Unknown)) && self.already_explicit(loc, first) {
            return Some(SitePlan::Nothing);
        }
        // An undecided site stays as it is: rewritten, it would become several undecided sites (the Expands and
        // the node), and `expand` never gives `check` more to report than the model had.
        if let Some(undecided) = sites.iter().find(|s| matches!(s.verdict, Verdict::Unknown)) {
            return Some(left(undecided, LeftReason::Undecided { unknown: undecided.unknown_parts() }));
        }
        if !loc.graph.is_empty() && first.opset < 9 {
            return Some(left(first, LeftReason::NoShapeConstantInBody { opset: first.opset }));
        }
        // A function body is shared by its calls: one rewrite fits them all only if they agree on the attributes
        // it reads.
        if let Some(other) = sites.iter().find(|s| s.attrs != first.attrs) {
            let (first_node, other) = (first.node.to_string(), other.node.to_string());
            return Some(left(first, LeftReason::CallsDisagree { first: first_node, other }));
        }
        None
    }

    fn node_proto(&self, loc: &NodeLoc) -> &'m NodeProto {
        &self.b.nodes_at(&loc.graph)[loc.node]
    }

    /// The node producing each value of the graph at `graph`, by position.
    fn producers(&mut self, graph: &[GraphStep]) -> &HashMap<&'m str, usize> {
        let nodes = self.b.nodes_at(graph);
        self.producers.entry(graph.to_vec()).or_insert_with(|| {
            nodes.iter().enumerate().flat_map(|(i, n)| n.output.iter().map(move |o| (o.as_str(), i))).collect()
        })
    }

    /// Whether a site whose shapes are undecided already has the form `expand` gives it (its rule says which).
    fn already_explicit(&mut self, loc: &NodeLoc, site: &Site) -> bool {
        let nodes = self.b.nodes_at(&loc.graph);
        let producers = self.producers(&loc.graph).clone();
        let made_by = |value: &str, op: &str| -> Option<&'m NodeProto> {
            producers.get(value).map(|&i| &nodes[i]).filter(|n| n.op_type() == op && is_default(n))
        };
        site.rule.already_explicit(site, &made_by)
    }

    /// The inputs of a site that do not already have the shape they are broadcast to.
    /// The inputs to make explicit, as the site's rule says, with their positions in the node.
    fn operands<'s>(&self, site: &'s Site) -> smallvec::SmallVec<[Operand<'s>; 2]> {
        // Site inputs are the node's present inputs in order; recover their positions in the node (the same
        // positions when every input is present, as it mostly is).
        let node = self.node_proto(&site.loc);
        let all_present = node.input.len() == site.inputs.len();
        let position = |input: usize| match all_present {
            true => Some(input),
            false => (0..node.input.len()).filter(|&i| !node.input[i].is_empty()).nth(input),
        };
        let mut operands = smallvec::SmallVec::new();
        for RewriteOperand { input, alignment } in site.rule.rewrite_operands(site) {
            let site_input = &site.inputs[input];
            operands.push(Operand {
                position: position(input).expect("a site input is a present input of its node"),
                name: &site_input.name,
                shape: &site_input.shape,
                elem: site_input.elem,
                alignment,
            });
        }
        operands
    }

    fn make_static(
        &mut self,
        at: &At<'_>,
        operands: &[Operand],
        (out, out_shape): (&[u64], &Shape),
        opset: i64,
    ) -> Result<Rewritten, LeftReason> {
        let mut done = Rewritten::default();
        for op in operands {
            let mapped = match &op.alignment {
                Alignment::Mapped(m) => Some(m.clone()),
                Alignment::Numpy => None,
            };
            if self.options.materialize_constants {
                if let Some(name) = self.b.materialize(at, op.name, mapped.as_deref(), out) {
                    done.add(op.position, name);
                    self.text.step(op.name, op.shape, "constant of shape", out_shape, "");
                    continue;
                }
            }
            if opset >= 8 && mapped.is_none() {
                let name = self.b.expand_to_constant(at, op.name, out, op.elem, out_shape);
                done.add(op.position, name);
                self.text.step(op.name, op.shape, "Expand to", out_shape, "");
                continue;
            }
            // Below opset 8 there is no Expand: Reshape to the aligned rank, then Tile each axis to its size.
            if opset < 6 {
                return Err(LeftReason::NoShapeInputs { opset });
            }
            let Some(input_dims) = op.shape.known_dims() else {
                return Err(LeftReason::NoStaticInputShape { input: op.name.to_string() });
            };
            let aligned = mapped.unwrap_or_else(|| {
                let mut d = vec![1u64; out.len() - input_dims.len().min(out.len())];
                d.extend(&input_dims);
                d
            });
            let mut current = op.name.to_string();
            if aligned != input_dims {
                current = self.b.reshape(at, &current, &aligned, op.elem);
            }
            let repeats: Vec<i64> = aligned.iter().zip(out).map(|(&a, &o)| if a == o { 1 } else { o as i64 }).collect();
            if repeats.iter().any(|&r| r != 1) {
                current = self.b.tile(at, &current, &repeats, op.elem, out);
            }
            done.add(op.position, current);
            self.text.step(op.name, op.shape, "Reshape/Tile to", out_shape, "");
        }
        Ok(done)
    }

    fn make_dynamic(
        &mut self,
        at: &At<'_>,
        site: &Site,
        operands: &[Operand],
        node: &NodeProto,
        opset: i64,
    ) -> Result<Rewritten, LeftReason> {
        let mut done = Rewritten::default();
        if opset < 8 {
            return Err(LeftReason::NoExpand { opset, output: site.output_shape.clone().into_owned() });
        }
        if operands.iter().any(|o| matches!(o.alignment, Alignment::Mapped(_))) {
            return Err(LeftReason::LegacyAxisNeedsStaticShapes);
        }
        let out_shape = self.declared_output(site);
        let target = match site.rule {
            Rule::Unidirectional => self.one_way_target(at, site, node)?,
            _ => {
                let (target, anchor) = self.numpy_target(at, site, node, &out_shape, &mut done);
                if let Some(position) = anchor {
                    // The anchor has the output shape already: it stays as it is.
                    done.set(position, node.input[position].as_str().into());
                }
                target
            }
        };
        let remaining: Vec<&Operand> = operands.iter().filter(|o| !done.has(o.position)).collect();
        for op in remaining {
            let name = self.b.expand(at, op.name, &target, op.elem, &out_shape);
            done.add(op.position, name);
            self.text.step(op.name, op.shape, "Expand to", &site.output_shape, COMPUTED);
        }
        done.replaced.retain(|(position, name)| **name != *node.input[*position]);
        Ok(done)
    }

    /// The target shape of a numpy-rule site whose output shape is not static, and the position of the input that
    /// gives it when one has the output shape already (the anchor, never expanded to its own shape). Without an
    /// anchor, Expand is folded over the inputs so that the running value takes every input's shape in turn; it
    /// stands for the first input (recorded in `done`).
    fn numpy_target(
        &mut self,
        at: &At<'_>,
        site: &Site,
        node: &NodeProto,
        out_shape: &Shape,
        done: &mut Rewritten,
    ) -> (String, Option<usize>) {
        let present: Vec<usize> = (0..node.input.len()).filter(|&i| !node.input[i].is_empty()).collect();
        let rule_inputs: Vec<usize> = site.rule_inputs.iter().flatten().copied().collect();
        let names: Vec<&crate::analysis::SiteInput> = rule_inputs.iter().map(|&i| &site.inputs[i]).collect();
        // Provably the output's shape, symbols and expressions included (an unknown dim is not: its size may be
        // another input's). Such an input is never expanded to its own shape (tests/it/expand_analysable.rs).
        if let Some(k) = names.iter().position(|i| i.shape.provably_eq(&site.output_shape)) {
            return (self.b.shape_of(at, &names[k].name, &names[k].shape), Some(present[rule_inputs[k]]));
        }
        let mut acc: Arc<str> = names[0].name.as_ref().into();
        let mut folded: Vec<&Shape> = vec![&names[0].shape];
        for (k, next) in names[1..].iter().enumerate() {
            let s = self.b.shape_of(at, &next.name, &next.shape);
            folded.push(&next.shape);
            // Each step is declared with the broadcast of the inputs folded so far, which is the output's shape only
            // at the last step.
            let step_shape = if k + 2 == names.len() {
                out_shape.clone()
            } else {
                self.declarable(&crate::rules::multidirectional(&folded).output)
            };
            acc = self.b.expand(at, &acc, &s, names[0].elem, &step_shape);
        }
        // The folded value has the output shape: it stands for the first input, always, so that every input reads
        // as `acc` or `Expand(_, Shape(acc))` when the model is analysed again.
        done.add(present[rule_inputs[0]], acc.clone());
        self.text.step(&names[0].name, &names[0].shape, "Expand to", &site.output_shape, COMPUTED);
        (self.b.shape_of(at, &acc, &site.output_shape), None)
    }

    /// The shape a one-way input is broadcast to, as a value of the graph: Gemm's and QGemm's (M, N) gathered from
    /// A and B, an attention bias's scores (B, N, S, T), or PRelu's X.
    fn one_way_target(&mut self, at: &At<'_>, site: &Site, node: &NodeProto) -> Result<String, LeftReason> {
        Ok(match site.kind {
            SiteKind::Gemm { .. } | SiteKind::QGemm => {
                let dims = crate::rules::unidirectional::gemm_target_dims(site).expect("a Gemm site");
                let [m, n] = dims.map(|(input, axis)| self.b.gathered_dim(at, &node.input[input], axis));
                self.b.concat(at, vec![m, n])
            }
            SiteKind::AttentionBias(attn) => match self.scores_shape(at, site, node, attn) {
                Some(target) => target,
                None => {
                    return Err(LeftReason::ScoresLengthInsideTheOp { scores: site.output_shape.clone().into_owned() })
                }
            },
            _ => self.b.shape_of(at, &node.input[0], &site.inputs[0].shape),
        })
    }

    /// The scores' shape (B, N, S, T) as a value of the graph, read where the rule says
    /// ([`crate::rules::attention_bias::scores_dims`]).
    fn scores_shape(
        &mut self,
        at: &At<'_>,
        site: &Site,
        node: &NodeProto,
        attn: crate::rules::ops::Attn,
    ) -> Option<String> {
        let dims = crate::rules::attention_bias::scores_dims(site, node, attn)?;
        let b = self.b.gathered_dim(at, &node.input[0], 0);
        let n = self.b.shape_constant(at, &[dims.heads]);
        let s = self.b.gathered_dim(at, &node.input[0], 1);
        let t = self.b.gathered_dim(at, &node.input[dims.total.0], dims.total.1);
        Some(self.b.concat(at, vec![b, n, s, t]))
    }

    /// The output shape as a declaration can state it: sizes and the model's own symbols. Expressions, symbolic
    /// broadcasts and symbols inference made up are left unset rather than named anew: a new name would be a fact
    /// the next analysis cannot relate to anything else.
    fn declared_output(&self, site: &Site) -> Shape {
        self.declarable(&site.output_shape)
    }

    fn declarable(&self, shape: &Shape) -> Shape {
        let Some(dims) = shape.dims() else { return Shape::unranked() };
        Shape::ranked(
            dims.iter()
                .map(|d| match d {
                    Dim::Known(_) => d.clone(),
                    Dim::Sym(_) if !d.is_fresh() => d.clone(),
                    _ => Dim::Unknown,
                })
                .collect(),
        )
    }
}

/// The sizes of a shape whose every size is known, inline: put together without collecting an iterator.
fn known_sizes(shape: &Shape) -> Option<smallvec::SmallVec<[u64; 6]>> {
    let mut sizes = smallvec::SmallVec::new();
    for d in shape.dims()? {
        sizes.push(d.known()?);
    }
    Some(sizes)
}

fn same_inputs(a: &Site, b: &Site) -> bool {
    a.inputs.len() == b.inputs.len() && a.inputs.iter().zip(&b.inputs).all(|(x, y)| x.shape == y.shape)
}
