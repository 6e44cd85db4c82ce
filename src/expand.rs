//! `expand`: plans the rewrite of every implicit broadcast into explicit ops, as an edit applied in one step.
//!
//! Planning only reads the model and its analysis. Each site whose inputs are not proven to have the output's
//! shape gets, for each such input, an explicit broadcast placed right before the node: `Expand` to a constant
//! shape when the output shape is static, `Expand` to a shape computed in the graph by `Shape` ops when it is
//! symbolic, `Reshape` + `Tile` below opset 8 (where `Expand` does not exist), or, on request, the constant input
//! itself written out expanded. Sites that break their rule, or that no op of the model's opset can make explicit
//! faithfully, are left as they are and reported.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::analysis::{Analysis, GraphStep, NodeLoc, Site};
use crate::proto::{
    attribute_proto::AttributeType, tensor_proto::DataLocation, tensor_shape_proto, type_proto, AttributeProto,
    GraphProto, ModelProto, NodeProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use crate::rules::{Rule, Verdict};
use crate::ops::SiteKind;
use crate::shape::{Dim, Shape};
use crate::tensor::INT64;
use crate::wire::{self, ModelEdit, NodeEdit, Pieces};

#[derive(Clone, Debug)]
pub struct ExpandOptions {
    /// Write constant inputs out expanded instead of inserting an `Expand` for them.
    pub materialize_constants: bool,
    /// The largest expanded constant, in bytes, that `materialize_constants` writes.
    pub max_materialize_bytes: u64,
    /// Main-graph initializers whose external data is at most this many bytes are written into the model file.
    pub inline_external_below: Option<u64>,
    /// All other external data of main-graph initializers is gathered into this one new file beside the output
    /// (a plain file name).
    pub gather_external: Option<String>,
}

impl Default for ExpandOptions {
    fn default() -> Self {
        ExpandOptions {
            materialize_constants: false,
            max_materialize_bytes: 16 << 20,
            inline_external_below: None,
            gather_external: None,
        }
    }
}

/// A byte range of an external data file: path, offset, length.
pub type SourceRange = (std::path::PathBuf, u64, u64);

/// Where external data goes when the rewritten model is written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExternalMoves {
    /// Initializers whose data now sits in the model file.
    pub inlined: Vec<String>,
    /// The new file gathering external data, and each range to copy into it, in order.
    pub gathered: Option<(String, Vec<SourceRange>)>,
    /// Tensors that no longer point at their old location.
    pub moved: std::collections::HashSet<String>,
}

/// A site left implicit, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct LeftSite {
    pub graph: String,
    pub node: String,
    pub op: String,
    pub reason: String,
}

/// What one site became.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub graph: String,
    pub node: String,
    pub op: String,
    /// One line per input made explicit, e.g. `B [3] -> Expand to [2, 3]`.
    pub steps: Vec<String>,
    /// The conditions on symbols the site still holds under (`N ∈ {1, 2}`): the rewrite makes the broadcast
    /// explicit, not valid for other sizes.
    pub conditions: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExpandSummary {
    /// Broadcasting sites examined (a site in a function body counts once, however often it is called).
    pub sites: usize,
    pub made_explicit: usize,
    pub expands_inserted: usize,
    /// Inputs that reuse an `Expand` already inserted for the same value and target.
    pub expands_shared: usize,
    pub materialized: usize,
    pub nodes_added: usize,
    pub actions: Vec<Action>,
    pub left: Vec<LeftSite>,
}

pub struct Plan {
    pub edit: ModelEdit,
    pub summary: ExpandSummary,
    pub external: ExternalMoves,
}

/// Plans the rewrite of `model`, whose analysis is `analysis`.
pub fn plan(model: &ModelProto, analysis: &Analysis, options: ExpandOptions) -> Plan {
    let mut groups: BTreeMap<&NodeLoc, Vec<&Site>> = BTreeMap::new();
    for site in &analysis.sites {
        groups.entry(&site.loc).or_default().push(site);
    }
    let mut planner = Planner {
        model,
        options,
        edit: ModelEdit::default(),
        names: Names::of(model),
        cache: HashMap::new(),
        producers: HashMap::new(),
        summary: ExpandSummary { sites: groups.len(), ..Default::default() },
    };
    for (loc, sites) in groups {
        planner.site(loc, &sites);
    }
    Plan { edit: planner.edit, summary: planner.summary, external: ExternalMoves::default() }
}

/// Plans the rewrite of a loaded model and lays out its output: the input's bytes with the edit spliced in.
pub fn expand_model(model: &crate::model::Model, options: ExpandOptions) -> Result<(Plan, Pieces), ExpandError> {
    let analysis = crate::analysis::analyze_model_with(model, crate::analysis::Options { value_facts: false });
    let broken = crate::refuse::broken(&analysis);
    if !broken.is_empty() {
        return Err(ExpandError::Broken(broken));
    }
    let mut plan = plan(model.proto(), &analysis, options.clone());
    plan.external = move_external(model, &options, &mut plan.edit)?;
    let pieces = wire::apply(model.source(), &plan.edit)?;
    Ok((plan, pieces))
}

#[derive(Debug, thiserror::Error)]
pub enum ExpandError {
    #[error(transparent)]
    Wire(#[from] wire::WireError),
    #[error(transparent)]
    External(#[from] crate::external::ExternalError),
    #[error("--gather-external-data takes a plain file name, not '{0}'")]
    GatherName(String),
    /// The model is broken in a way `check` reports as an error (a cycle, an undefined value, unusable external
    /// data, ...): nothing is rewritten, and the findings say why.
    #[error("{}", crate::refuse::summary(.0))]
    Broken(Vec<crate::analysis::Note>),
}

/// Inlines or gathers the external data of main-graph initializers, as the options ask.
fn move_external(
    model: &crate::model::Model,
    options: &ExpandOptions,
    edit: &mut ModelEdit,
) -> Result<ExternalMoves, ExpandError> {
    use crate::external;
    let mut moves = ExternalMoves::default();
    if options.inline_external_below.is_none() && options.gather_external.is_none() {
        return Ok(moves);
    }
    if let Some(name) = &options.gather_external {
        let plain = std::path::Path::new(name).file_name().is_some_and(|f| f == name.as_str());
        if !plain {
            return Err(ExpandError::GatherName(name.clone()));
        }
        moves.gathered = Some((name.clone(), Vec::new()));
    }
    let folder = model.path().parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let Some(graph) = &model.proto().graph else { return Ok(moves) };
    let mut next_offset = 0u64;
    for (j, t) in graph.initializer.iter().enumerate() {
        let Some(r) = external::reference(t) else { continue };
        let r = r?;
        let (source, length) = external::validate(folder, t, &r)?;
        if options.inline_external_below.is_some_and(|max| length <= max) {
            if let Some(bytes) = external::read(folder, t, &r, length)? {
                let inline = TensorProto {
                    raw_data: Some(bytes.into()),
                    data_location: None,
                    external_data: Vec::new(),
                    ..t.clone()
                };
                edit.graph_mut(&[]).initializer_edits.insert(j, inline);
                moves.inlined.push(t.name().to_string());
                moves.moved.insert(t.name().to_string());
                continue;
            }
        }
        if let Some((file, ranges)) = &mut moves.gathered {
            // Each tensor starts on a 64-byte boundary, as memory-mapping readers prefer.
            let offset = next_offset.div_ceil(64) * 64;
            next_offset = offset + length;
            let entry =
                |k: &str, v: String| crate::proto::StringStringEntryProto { key: Some(k.into()), value: Some(v) };
            let moved = TensorProto {
                external_data: vec![
                    entry("location", file.clone()),
                    entry("offset", offset.to_string()),
                    entry("length", length.to_string()),
                ],
                ..t.clone()
            };
            edit.graph_mut(&[]).initializer_edits.insert(j, moved);
            ranges.push((source, r.offset, length));
            moves.moved.insert(t.name().to_string());
        }
    }
    Ok(moves)
}

/// Fresh names that collide with nothing in the model (values, nodes, functions, dim params), deterministically.
struct Names {
    taken: HashSet<String>,
    /// Per base name, the suffix to try first: probing from 1 every time is quadratic when a base repeats (a Sum
    /// of 10,000 inputs folds 10,000 Expands).
    next: HashMap<String, usize>,
}

impl Names {
    fn of(model: &ModelProto) -> Names {
        let mut taken = HashSet::new();
        let mut add_nodes = |nodes: &[NodeProto], taken: &mut HashSet<String>| {
            for n in nodes {
                taken.insert(n.name().to_string());
                taken.extend(n.input.iter().chain(&n.output).cloned());
            }
        };
        fn graph(g: &GraphProto, taken: &mut HashSet<String>, add: &mut dyn FnMut(&[NodeProto], &mut HashSet<String>)) {
            add(&g.node, taken);
            taken.extend(g.initializer.iter().map(|t| t.name().to_string()));
            taken.extend(g.sparse_initializer.iter().filter_map(|s| s.values.as_ref()).map(|t| t.name().to_string()));
            for vi in g.input.iter().chain(&g.output).chain(&g.value_info) {
                taken.insert(vi.name().to_string());
                type_names(vi.r#type.as_ref(), taken);
            }
            for sub in g.node.iter().flat_map(crate::attr::subgraphs) {
                graph(sub, taken, add);
            }
        }
        fn type_names(ty: Option<&TypeProto>, taken: &mut HashSet<String>) {
            let Some(shape) = ty.and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref()) else { return };
            for d in &shape.dim {
                if let Some(tensor_shape_proto::dimension::Value::DimParam(p)) = &d.value {
                    taken.insert(p.clone());
                }
            }
        }
        if let Some(g) = &model.graph {
            graph(g, &mut taken, &mut add_nodes);
        }
        for f in &model.functions {
            taken.insert(f.name().to_string());
            taken.extend(f.input.iter().chain(&f.output).cloned());
            add_nodes(&f.node, &mut taken);
            for vi in &f.value_info {
                taken.insert(vi.name().to_string());
                type_names(vi.r#type.as_ref(), &mut taken);
            }
            for sub in f.node.iter().flat_map(crate::attr::subgraphs) {
                graph(sub, &mut taken, &mut add_nodes);
            }
        }
        Names { taken, next: HashMap::new() }
    }

    fn fresh(&mut self, base: &str) -> String {
        let base = if base.is_empty() { "bcast" } else { base };
        let k = self.next.entry(base.to_string()).or_insert(0);
        loop {
            let candidate = if *k == 0 { base.to_string() } else { format!("{base}_{k}") };
            *k += 1;
            if self.taken.insert(candidate.clone()) {
                return candidate;
            }
        }
    }
}

/// What a new value is, for sharing: the same value made explicit the same way twice is one set of nodes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Made {
    ShapeConstant(Vec<i64>),
    ShapeOf(String),
    /// `Shape` of any value provably of this (fully resolved) shape, by its text.
    ShapeFor(String),
    Gathered(String, i64),
    Concat(Vec<String>),
    Expand(String, String),
    Reshape(String, Vec<i64>),
    Tile(String, Vec<i64>),
    Materialized(String, Vec<i64>, Vec<i64>),
}

struct Planner<'m> {
    model: &'m ModelProto,
    options: ExpandOptions,
    edit: ModelEdit,
    names: Names,
    cache: HashMap<(Vec<GraphStep>, Made), String>,
    producers: HashMap<Vec<GraphStep>, HashMap<&'m str, usize>>,
    summary: ExpandSummary,
}

fn ops_default(n: &NodeProto) -> bool {
    crate::ops::is_default_domain(n.domain())
}

/// The graph being edited and the node new nodes go before.
struct At<'l> {
    graph: &'l [GraphStep],
    before: usize,
}

impl At<'_> {
    fn in_main_graph(&self) -> bool {
        self.graph.is_empty()
    }
}

/// How an input's dims line up with the output's.
#[derive(Clone, Debug)]
enum Alignment {
    /// numpy: right-aligned.
    Numpy,
    /// Reshape to these dims first (legacy `axis` forms, per-channel PRelu), then broadcast numpy-style.
    Mapped(Vec<u64>),
}

/// One input to make explicit.
struct Operand {
    position: usize,
    name: String,
    shape: Shape,
    elem: Option<i32>,
    alignment: Alignment,
}

fn static_dims(shape: &Shape) -> Option<Vec<u64>> {
    shape.dims()?.iter().map(Dim::known).collect()
}

fn as_i64(dims: &[u64]) -> Vec<i64> {
    dims.iter().map(|&d| d as i64).collect()
}

impl<'m> Planner<'m> {
    fn leave(&mut self, site: &Site, reason: String) {
        self.summary.left.push(LeftSite {
            graph: site.graph.clone(),
            node: site.node.clone(),
            op: site.op.clone(),
            reason,
        });
    }

    /// Plans one broadcasting node; `sites` are its evaluations (several for a function called several times).
    fn site(&mut self, loc: &NodeLoc, sites: &[&Site]) {
        let first = sites[0];
        if let Some(bad) =
            sites.iter().find(|s| matches!(s.verdict, Verdict::Violation(_)) || s.type_mismatch.is_some())
        {
            self.leave(
                bad,
                "the site breaks its broadcasting rule; fix the model first (see `onnx-bcast check`)".into(),
            );
            return;
        }
        if !matches!(first.rule, Rule::Multidirectional | Rule::Unidirectional | Rule::LegacyAxis) {
            return;
        }
        if sites.iter().all(|s| matches!(s.verdict, Verdict::Same)) {
            return;
        }
        if sites.iter().all(|s| matches!(s.verdict, Verdict::Unknown)) && self.already_explicit(loc, first) {
            return;
        }
        if !loc.graph.is_empty() && first.opset < 9 {
            let reason = format!(
                "no faithful rewrite inside a subgraph or function at opset {}: Constant holds int64 shapes only from opset 9",
                first.opset
            );
            self.leave(first, reason);
            return;
        }
        // A function body is shared by its calls: one rewrite fits them all only if they agree on the attributes
        // it reads.
        if let Some(other) = sites.iter().find(|s| s.attrs != first.attrs) {
            let reason = format!(
                "the calls at {} and {} give the function's node different transA/transB/axis: no one rewrite of the shared body fits both",
                first.node, other.node
            );
            self.leave(first, reason);
            return;
        }
        // A function body is shared by its calls: a constant target is only right if every call agrees on it.
        let agreed = sites.iter().all(|s| s.output_shape == first.output_shape && same_inputs(s, first));
        let node = self.node_proto(loc);
        let operands = self.operands(first);
        if operands.is_empty() {
            return;
        }
        let at = At { graph: &loc.graph, before: loc.node };
        let out_static = static_dims(&first.output_shape).filter(|_| agreed);
        let opset = first.opset;
        let mut steps = Vec::new();
        let mut replaced: BTreeMap<usize, String> = BTreeMap::new();

        let result = match out_static {
            Some(out) => self.make_static(&at, &operands, &out, opset, &mut steps, &mut replaced),
            None => self.make_dynamic(&at, first, &operands, node, opset, &mut steps, &mut replaced),
        };
        if let Err(reason) = result {
            self.leave(first, reason);
            return;
        }
        let mut inputs = node.input.clone();
        for (position, name) in &replaced {
            inputs[*position] = name.clone();
        }
        let mut drop_attributes = Vec::new();
        if first.rule == Rule::LegacyAxis || first.kind == (SiteKind::Gemm { legacy: true }) {
            drop_attributes = ["broadcast", "axis"].iter().map(|s| s.to_string()).collect();
        }
        self.edit.graph_mut(&loc.graph).node_edits.insert(loc.node, NodeEdit { inputs: Some(inputs), drop_attributes });
        self.summary.made_explicit += 1;
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
        self.summary.actions.push(Action {
            graph: first.graph.clone(),
            node: first.node.clone(),
            op: first.op.clone(),
            steps,
            conditions,
        });
    }

    /// The node list of the graph or function body at `graph`.
    fn nodes_at(&self, graph: &[GraphStep]) -> &'m [NodeProto] {
        let mut nodes: &'m [NodeProto] = &self.model.graph.as_ref().expect("analysed models have a graph").node;
        for step in graph {
            nodes = match *step {
                GraphStep::Function(k) => &self.model.functions[k].node,
                GraphStep::Subgraph { node, attribute, graph } => {
                    &crate::attr::subgraph(&nodes[node], attribute, graph).expect("analysed subgraph exists").node
                }
            };
        }
        nodes
    }

    fn node_proto(&self, loc: &NodeLoc) -> &'m NodeProto {
        &self.nodes_at(&loc.graph)[loc.node]
    }

    /// The node producing each value of the graph at `graph`, by position.
    fn producers(&mut self, graph: &[GraphStep]) -> &HashMap<&'m str, usize> {
        let nodes = self.nodes_at(graph);
        self.producers.entry(graph.to_vec()).or_insert_with(|| {
            nodes.iter().enumerate().flat_map(|(i, n)| n.output.iter().map(move |o| (o.as_str(), i))).collect()
        })
    }

    /// Whether a site whose shapes are undecided already has the form `expand` gives it: an anchor input and
    /// every other input `Expand(_, Shape(anchor))` (numpy rules), or its broadcast input an `Expand` to a shape
    /// computed from the other inputs (one-way rules). Without this, a second `expand` would wrap the explicit
    /// broadcasts of the first again.
    fn already_explicit(&mut self, loc: &NodeLoc, site: &Site) -> bool {
        let nodes = self.nodes_at(&loc.graph);
        let producers = self.producers(&loc.graph).clone();
        let made_by = |value: &str, op: &str| -> Option<&'m NodeProto> {
            producers.get(value).map(|&i| &nodes[i]).filter(|n| n.op_type() == op && ops_default(n))
        };
        let names: Vec<&str> = site.rule_inputs.iter().flatten().map(|&i| site.inputs[i].name.as_str()).collect();
        match site.rule {
            Rule::Multidirectional => names.iter().any(|anchor| {
                names.iter().filter(|v| *v != anchor).all(|v| {
                    made_by(v, "Expand").and_then(|e| e.input.get(1)).and_then(|t| made_by(t, "Shape")).is_some_and(
                        |s| s.input.first().map(String::as_str) == Some(anchor) && !crate::attr::has_any(s),
                    )
                })
            }),
            Rule::Unidirectional => site.rule_inputs.get(1).copied().flatten().is_some_and(|b| {
                made_by(&site.inputs[b].name, "Expand")
                    .and_then(|e| e.input.get(1))
                    .is_some_and(|t| made_by(t, "Shape").is_some() || made_by(t, "Concat").is_some())
            }),
            _ => false,
        }
    }

    /// The inputs of a site that do not already have the shape they are broadcast to.
    fn operands(&self, site: &Site) -> Vec<Operand> {
        let node_positions: Vec<usize> = {
            // Site inputs are the node's present inputs in order; recover their positions in the node.
            let node = self.node_proto(&site.loc);
            (0..node.input.len()).filter(|&i| !node.input[i].is_empty()).collect()
        };
        let operand = |site_index: usize, alignment: Alignment| {
            let input = &site.inputs[site_index];
            Operand {
                position: node_positions[site_index],
                name: input.name.clone(),
                shape: input.shape.clone(),
                elem: input.elem,
                alignment,
            }
        };
        let target = site.target.as_ref().unwrap_or(&site.output_shape);
        match site.rule {
            Rule::Multidirectional => site
                .rule_inputs
                .iter()
                .flatten()
                .filter(|&&i| !site.inputs[i].shape.provably_eq(&site.output_shape))
                .map(|&i| operand(i, Alignment::Numpy))
                .collect(),
            Rule::Unidirectional => {
                let Some(b) = site.rule_inputs.get(1).copied().flatten() else { return Vec::new() };
                if site.inputs[b].shape.provably_eq(target) {
                    return Vec::new();
                }
                let alignment = if site.kind == (SiteKind::PRelu { legacy: true }) {
                    legacy_prelu_alignment(&site.inputs[b].shape, target)
                } else {
                    Alignment::Numpy
                };
                vec![operand(b, alignment)]
            }
            Rule::LegacyAxis => {
                let Some(b) = site.rule_inputs.get(1).copied().flatten() else { return Vec::new() };
                let a = &site.output_shape;
                let (Some(ad), Some(bd)) = (a.dims(), static_dims(&site.inputs[b].shape)) else {
                    return vec![operand(b, Alignment::Numpy)];
                };
                let axis = legacy_axis_of(site.attrs.axis, ad.len(), bd.len());
                let trimmed = bd.len() - bd.iter().rev().take_while(|&&d| d == 1).count();
                if axis + trimmed > ad.len() {
                    return vec![operand(b, Alignment::Numpy)];
                }
                let mut mapped = vec![1u64; ad.len()];
                mapped[axis..axis + trimmed].copy_from_slice(&bd[..trimmed]);
                vec![operand(b, Alignment::Mapped(mapped))]
            }
            _ => Vec::new(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn make_static(
        &mut self,
        at: &At<'_>,
        operands: &[Operand],
        out: &[u64],
        opset: i64,
        steps: &mut Vec<String>,
        replaced: &mut BTreeMap<usize, String>,
    ) -> Result<(), String> {
        let out_shape = Shape::known(out);
        for op in operands {
            let mapped = match &op.alignment {
                Alignment::Mapped(m) => Some(m.clone()),
                Alignment::Numpy => None,
            };
            if self.options.materialize_constants {
                if let Some(name) = self.materialize(at, op, mapped.as_deref(), out) {
                    steps.push(format!("{} {} -> constant of shape {}", op.name, op.shape, out_shape));
                    replaced.insert(op.position, name);
                    continue;
                }
            }
            if opset >= 8 && mapped.is_none() {
                let target = self.shape_constant(at, out);
                let name = self.expand(at, &op.name, &target, op.elem, &out_shape);
                steps.push(format!("{} {} -> Expand to {}", op.name, op.shape, out_shape));
                replaced.insert(op.position, name);
                continue;
            }
            // Below opset 8 there is no Expand: Reshape to the aligned rank, then Tile each axis to its size.
            if opset < 6 {
                return Err(format!(
                    "no faithful rewrite at opset {opset}: Reshape and Tile take their shapes as inputs only from opset 6"
                ));
            }
            let Some(input_dims) = static_dims(&op.shape) else {
                return Err(format!(
                    "input {} has no static shape, which Reshape and Tile need below opset 8",
                    op.name
                ));
            };
            let aligned = mapped.unwrap_or_else(|| {
                let mut d = vec![1u64; out.len() - input_dims.len().min(out.len())];
                d.extend(&input_dims);
                d
            });
            let mut current = op.name.clone();
            if aligned != input_dims {
                current = self.reshape(at, &current, &aligned, op.elem);
            }
            let repeats: Vec<i64> = aligned.iter().zip(out).map(|(&a, &o)| if a == o { 1 } else { o as i64 }).collect();
            if repeats.iter().any(|&r| r != 1) {
                current = self.tile(at, &current, &repeats, op.elem, out);
            }
            steps.push(format!("{} {} -> Reshape/Tile to {}", op.name, op.shape, out_shape));
            replaced.insert(op.position, current);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn make_dynamic(
        &mut self,
        at: &At<'_>,
        site: &Site,
        operands: &[Operand],
        node: &NodeProto,
        opset: i64,
        steps: &mut Vec<String>,
        replaced: &mut BTreeMap<usize, String>,
    ) -> Result<(), String> {
        if opset < 8 {
            return Err(format!(
                "no faithful rewrite at opset {opset}: the output shape {} is not static and Expand needs opset 8",
                site.output_shape
            ));
        }
        if operands.iter().any(|o| matches!(o.alignment, Alignment::Mapped(_))) {
            return Err("the legacy axis form needs static shapes to be made explicit".into());
        }
        let out_shape = self.declared_output(site);
        let target = match (site.rule, site.kind) {
            (Rule::Unidirectional, SiteKind::Gemm { .. }) => {
                // Read as evaluated: inside a function, transA/transB may refer to the call's attributes.
                let m = self.gathered_dim(at, &node.input[0], i64::from(site.attrs.trans_a));
                let n = self.gathered_dim(at, &node.input[1], i64::from(!site.attrs.trans_b));
                self.concat(at, vec![m, n])
            }
            (Rule::Unidirectional, _) => self.shape_of(at, &node.input[0], &site.inputs[0].shape),
            _ => {
                // An input that already has the output shape gives the target; else fold Expand over the inputs
                // so that the running value takes every input's shape in turn.
                let names: Vec<&crate::analysis::SiteInput> =
                    site.rule_inputs.iter().flatten().map(|&i| &site.inputs[i]).collect();
                // Only an anchor whose dims are plain sizes and symbols: a derived dim may be written differently
                // when the rewritten model is analysed again, and the rewrite must read as explicit then too.
                let plain =
                    |s: &Shape| s.dims().is_some_and(|d| d.iter().all(|d| matches!(d, Dim::Known(_) | Dim::Sym(_))));
                match names.iter().find(|i| i.shape.provably_eq(&site.output_shape) && plain(&i.shape)) {
                    Some(anchor) => self.shape_of(at, &anchor.name, &anchor.shape),
                    None => {
                        let mut acc = names[0].name.clone();
                        let mut folded: Vec<&Shape> = vec![&names[0].shape];
                        for (k, next) in names[1..].iter().enumerate() {
                            let s = self.shape_of(at, &next.name, &next.shape);
                            folded.push(&next.shape);
                            // Each step is declared with the broadcast of the inputs folded so far, which is the
                            // output's shape only at the last step.
                            let step_shape = if k + 2 == names.len() {
                                out_shape.clone()
                            } else {
                                self.declarable(&crate::rules::multidirectional(&folded).output)
                            };
                            acc = self.expand(at, &acc, &s, names[0].elem, &step_shape);
                        }
                        // The folded value has the output shape: it stands for the first input, always, so that
                        // every input reads as `acc` or `Expand(_, Shape(acc))` when the model is analysed again.
                        let first_site_input = site.rule_inputs.iter().flatten().next().copied();
                        let present: Vec<usize> =
                            (0..node.input.len()).filter(|&i| !node.input[i].is_empty()).collect();
                        if let Some(position) = first_site_input.map(|i| present[i]) {
                            steps.push(format!(
                                "{} {} -> Expand to {} (computed in the graph)",
                                names[0].name, names[0].shape, site.output_shape
                            ));
                            replaced.insert(position, acc.clone());
                        }
                        self.shape_of(at, &acc, &site.output_shape)
                    }
                }
            }
        };
        let remaining: Vec<&Operand> = operands.iter().filter(|o| !replaced.contains_key(&o.position)).collect();
        for op in remaining {
            let name = self.expand(at, &op.name, &target, op.elem, &out_shape);
            steps.push(format!("{} {} -> Expand to {} (computed in the graph)", op.name, op.shape, site.output_shape));
            replaced.insert(op.position, name);
        }
        Ok(())
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

    fn cached(&self, at: &At<'_>, made: &Made) -> Option<String> {
        self.cache.get(&(at.graph.to_vec(), made.clone())).cloned()
    }

    fn remember(&mut self, at: &At<'_>, made: Made, name: &str) {
        self.cache.insert((at.graph.to_vec(), made), name.to_string());
    }

    fn add_node(&mut self, at: &At<'_>, node: NodeProto, value_info: Option<ValueInfoProto>) {
        let edit = self.edit.graph_mut(at.graph);
        edit.insert_before.entry(at.before).or_default().push(node);
        edit.value_info.extend(value_info);
        self.summary.nodes_added += 1;
    }

    fn new_node(&mut self, op: &str, inputs: Vec<String>, output: &str, attrs: Vec<AttributeProto>) -> NodeProto {
        NodeProto {
            input: inputs,
            output: vec![output.to_string()],
            name: Some(self.names.fresh(&format!("{output}_{}", op.to_lowercase()))),
            op_type: Some(op.to_string()),
            attribute: attrs,
            ..Default::default()
        }
    }

    /// A constant: an initializer in the main graph (before IR version 4 also declared as a graph input, as that
    /// IR requires), a Constant node in subgraphs and function bodies (functions have no initializers, and a
    /// subgraph's own constants keep it self-contained).
    fn constant(&mut self, at: &At<'_>, mut tensor: TensorProto) -> String {
        let name = tensor.name().to_string();
        let dims: Vec<u64> = tensor.dims.iter().map(|&d| d as u64).collect();
        let vi = value_info(&name, tensor.data_type(), &Shape::known(&dims));
        if at.in_main_graph() {
            let edit = self.edit.graph_mut(at.graph);
            edit.initializers.push(tensor);
            if self.model.ir_version() < 4 {
                edit.inputs.push(vi);
            }
        } else {
            tensor.name = None;
            let attr = AttributeProto {
                name: Some("value".into()),
                r#type: Some(AttributeType::Tensor as i32),
                t: Some(tensor),
                ..Default::default()
            };
            let node = self.new_node("Constant", Vec::new(), &name, vec![attr]);
            self.add_node(at, node, Some(vi));
        }
        name
    }

    fn shape_constant(&mut self, at: &At<'_>, dims: &[u64]) -> String {
        let made = Made::ShapeConstant(as_i64(dims));
        if let Some(name) = self.cached(at, &made) {
            return name;
        }
        let label: Vec<String> = dims.iter().map(u64::to_string).collect();
        let name = self
            .names
            .fresh(&format!("bcast_shape_{}", if label.is_empty() { "scalar".into() } else { label.join("x") }));
        let tensor = int64_tensor(&name, &as_i64(dims));
        self.constant(at, tensor);
        self.remember(at, made, &name);
        name
    }

    /// `Shape(value)`, where `value` has shape `of`. One `Shape` serves every later value of the graph whose
    /// shape is provably the same (known sizes and the model's own symbols, equal): the sites of a transformer layer all broadcast to
    /// `[batch, seq, hidden]`, and one runtime `Shape` says it for all of them.
    fn shape_of(&mut self, at: &At<'_>, value: &str, of: &Shape) -> String {
        let made = Made::ShapeOf(value.to_string());
        if let Some(name) = self.cached(at, &made) {
            return name;
        }
        // Only shapes the next analysis derives the same way: a fresh symbol may come out under another name.
        let stable = of.dims().is_some_and(|d| !d.iter().any(Dim::mentions_fresh));
        let by_shape = stable.then(|| Made::ShapeFor(of.to_string()));
        if let Some(name) = by_shape.as_ref().and_then(|m| self.cached(at, m)) {
            return name;
        }
        let name = self.names.fresh(&format!("{}_shape", sanitize(value)));
        let node = self.new_node("Shape", vec![value.to_string()], &name, Vec::new());
        let shape = of.rank().map_or_else(|| Shape::ranked(vec![Dim::Unknown]), |r| Shape::known(&[r as u64]));
        self.add_node(at, node, Some(value_info(&name, INT64, &shape)));
        self.remember(at, made, &name);
        if let Some(m) = by_shape {
            self.remember(at, m, &name);
        }
        name
    }

    /// `Gather(Shape(value), [axis])`: one dim of a value, as a 1-element vector.
    fn gathered_dim(&mut self, at: &At<'_>, value: &str, axis: i64) -> String {
        let made = Made::Gathered(value.to_string(), axis);
        if let Some(name) = self.cached(at, &made) {
            return name;
        }
        let shape = self.shape_of(at, value, &Shape::unranked());
        let index = self.names.fresh(&format!("{}_axis{axis}", sanitize(value)));
        self.constant(at, int64_tensor(&index, &[axis]));
        let name = self.names.fresh(&format!("{}_dim{axis}", sanitize(value)));
        let node = self.new_node("Gather", vec![shape, index], &name, Vec::new());
        self.add_node(at, node, Some(value_info(&name, INT64, &Shape::known(&[1]))));
        self.remember(at, made, &name);
        name
    }

    fn concat(&mut self, at: &At<'_>, parts: Vec<String>) -> String {
        let made = Made::Concat(parts.clone());
        if let Some(name) = self.cached(at, &made) {
            return name;
        }
        let name = self.names.fresh("bcast_target");
        let n = parts.len() as u64;
        let node = self.new_node("Concat", parts, &name, vec![int_attr("axis", 0)]);
        self.add_node(at, node, Some(value_info(&name, INT64, &Shape::known(&[n]))));
        self.remember(at, made, &name);
        name
    }

    fn expand(&mut self, at: &At<'_>, value: &str, target: &str, elem: Option<i32>, out: &Shape) -> String {
        let made = Made::Expand(value.to_string(), target.to_string());
        if let Some(name) = self.cached(at, &made) {
            self.summary.expands_shared += 1;
            return name;
        }
        let name = self.names.fresh(&format!("{}_expanded", sanitize(value)));
        let node = self.new_node("Expand", vec![value.to_string(), target.to_string()], &name, Vec::new());
        let vi = elem.map(|e| value_info(&name, e, out));
        self.add_node(at, node, vi);
        self.summary.expands_inserted += 1;
        self.remember(at, made, &name);
        name
    }

    fn reshape(&mut self, at: &At<'_>, value: &str, dims: &[u64], elem: Option<i32>) -> String {
        let made = Made::Reshape(value.to_string(), as_i64(dims));
        if let Some(name) = self.cached(at, &made) {
            return name;
        }
        let shape = self.shape_constant(at, dims);
        let name = self.names.fresh(&format!("{}_reshaped", sanitize(value)));
        let node = self.new_node("Reshape", vec![value.to_string(), shape], &name, Vec::new());
        let vi = elem.map(|e| value_info(&name, e, &Shape::known(dims)));
        self.add_node(at, node, vi);
        self.remember(at, made, &name);
        name
    }

    fn tile(&mut self, at: &At<'_>, value: &str, repeats: &[i64], elem: Option<i32>, out: &[u64]) -> String {
        let made = Made::Tile(value.to_string(), repeats.to_vec());
        if let Some(name) = self.cached(at, &made) {
            return name;
        }
        let label: Vec<String> = repeats.iter().map(i64::to_string).collect();
        let repeats_name = self.names.fresh(&format!("bcast_repeats_{}", label.join("x")));
        self.constant(at, int64_tensor(&repeats_name, repeats));
        let name = self.names.fresh(&format!("{}_tiled", sanitize(value)));
        let node = self.new_node("Tile", vec![value.to_string(), repeats_name], &name, Vec::new());
        let vi = elem.map(|e| value_info(&name, e, &Shape::known(out)));
        self.add_node(at, node, vi);
        self.remember(at, made, &name);
        name
    }

    /// Writes a constant input out at the output shape, if it is a small enough constant held in the file.
    fn materialize(&mut self, at: &At<'_>, op: &Operand, mapped: Option<&[u64]>, out: &[u64]) -> Option<String> {
        let source = self.constant_tensor(at, &op.name)?;
        let made = Made::Materialized(op.name.clone(), mapped.map(as_i64).unwrap_or_default(), as_i64(out));
        if let Some(name) = self.cached(at, &made) {
            return Some(name);
        }
        let name = self.names.fresh(&format!("{}_expanded", sanitize(&op.name)));
        let tensor = crate::materialize::broadcast_tensor(source, mapped, out, self.options.max_materialize_bytes)?;
        self.constant(at, TensorProto { name: Some(name.clone()), ..tensor });
        self.summary.materialized += 1;
        self.remember(at, made, &name);
        Some(name)
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
            .find(|n| n.op_type() == "Constant" && ops_default(n) && n.output.first().is_some_and(|o| o == name))
            .and_then(|n| crate::attr::Attrs::new(n, None).tensor("value"))
            .filter(|t| t.data_location != Some(DataLocation::External as i32))
    }
}

fn same_inputs(a: &Site, b: &Site) -> bool {
    a.inputs.len() == b.inputs.len() && a.inputs.iter().zip(&b.inputs).all(|(x, y)| x.shape == y.shape)
}

/// The start axis of a legacy `broadcast=1` node: its `axis` attribute (as evaluated), or the suffix position.
fn legacy_axis_of(axis: Option<i64>, rank_a: usize, rank_b: usize) -> usize {
    match axis {
        Some(axis) if axis >= 0 => axis as usize,
        _ => rank_a.saturating_sub(rank_b),
    }
}

/// PRelu before opset 7 applies a 1-D slope of C elements per channel (axis 1).
fn legacy_prelu_alignment(slope: &Shape, x: &Shape) -> Alignment {
    match (static_dims(slope).as_deref(), x.dims()) {
        (Some(&[c]), Some(xd))
            if c != 1 && xd.len() >= 2 && xd[1] == Dim::Known(c) && xd.last() != Some(&Dim::Known(c)) =>
        {
            let mut mapped = vec![1u64; xd.len()];
            mapped[1] = c;
            Alignment::Mapped(mapped)
        }
        _ => Alignment::Numpy,
    }
}

/// A name fragment made of characters every tool accepts in names, at most [`MAX_FRAGMENT`] of them: new names are
/// made from the names they derive from, and a fold over many inputs would otherwise grow them step by step.
fn sanitize(name: &str) -> String {
    let s: String =
        name.chars().take(MAX_FRAGMENT).map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    s.trim_matches('_').to_string()
}

const MAX_FRAGMENT: usize = 80;

fn int_attr(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(value),
        ..Default::default()
    }
}

fn int64_tensor(name: &str, values: &[i64]) -> TensorProto {
    TensorProto {
        dims: vec![values.len() as i64],
        data_type: Some(INT64),
        name: Some(name.to_string()),
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

pub use crate::save::write_expanded;
