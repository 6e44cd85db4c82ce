//! The fold of each graph body, to a fixed point: a candidate is removed when every consumer it would leave is
//! proved to broadcast its source anyway; a removal can free another candidate (a `Shape` of it that fed only a
//! removed `Expand` dies with that `Expand`), so the candidates are tried again until nothing changes.

use crate::onnx::location::node_label;
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, BTreeSet};

use super::body::Body;
use super::forms::{self, Candidate};
use super::proof::{self, CallKey, Replaced};
use super::{FoldOptions, FoldPlan, FoldSummary, Folded, Form, Kept, KeptReason, RemovedWith};
use crate::analysis::{Analysis, Site};
use crate::diagnostic::Code;
use crate::onnx::model::GraphStep;
use crate::onnx::pb::{ModelProto, TensorProto};
use crate::onnx::tensor::ValueFacts;
use crate::onnx::wire::{GraphEdit, InputEdit, NodeEdit};
use crate::sizes::shape::Shape;

pub(super) fn plan(model: &ModelProto, analysis: &Analysis, options: FoldOptions) -> FoldPlan {
    let mut bodies: BTreeMap<&[GraphStep], BTreeMap<usize, Vec<&Site>>> = BTreeMap::new();
    for site in &analysis.sites {
        bodies.entry(&site.loc.graph).or_default().entry(site.loc.node).or_default().push(site);
    }
    // Facts of bodies walked once; a body walked per call (inside a function) has no one set of facts.
    let mut facts: HashMap<&[GraphStep], Option<HashMap<&str, &ValueFacts>>> = HashMap::default();
    let mut paths: HashMap<&[GraphStep], &str> = HashMap::default();
    for g in &analysis.graphs {
        paths.insert(&g.loc, &g.path);
        let once = !matches!(g.loc.first(), Some(GraphStep::Function(_)));
        let values = once.then(|| g.values.iter().map(|(n, f)| (n.as_str(), f)).collect());
        facts.entry(&g.loc).and_modify(|seen| *seen = None).or_insert(values);
        bodies.entry(&g.loc).or_default();
    }
    // Past the call budget some calls were never walked: a proof from the walked ones says nothing of the others.
    let calls_cut = analysis.notes.iter().any(|n| n.code == Code::NestingTooDeep);
    let mut plan = FoldPlan { edit: Default::default(), summary: FoldSummary::default() };
    for (loc, sites) in &bodies {
        let in_function = matches!(loc.first(), Some(GraphStep::Function(_)));
        let Some(body) = Body::at(model, loc) else { continue };
        let body_facts = facts.get(loc).and_then(Option::as_ref);
        let path = paths.get(loc).copied().unwrap_or("main");
        let candidates = forms::candidates(&body, sites, body_facts.map(|f| (path, f)));
        // With `--materialized` a body's constants are candidates too.
        let nothing = candidates.is_empty() && (!options.materialized || body.initializers.is_empty());
        if nothing || (in_function && calls_cut) {
            continue;
        }
        let mut fold = BodyFold::new(&body, sites, &candidates);
        let kept = fold.run();
        if options.materialized {
            fold.shrink_constants();
        }
        fold.record(loc, kept, &mut plan);
    }
    plan
}

/// The fold of one body in progress.
struct BodyFold<'a, 'm> {
    body: &'a Body<'m>,
    sites: &'a BTreeMap<usize, Vec<&'a Site<'static>>>,
    candidates: &'a BTreeMap<usize, Candidate>,
    producer: HashMap<&'m str, usize>,
    folded: BTreeSet<usize>,
    /// `folded` and the shape computations that fed only them, as of the last change.
    removed: BTreeSet<usize>,
    /// `--materialized`: constants written back small, by initializer position, with the name their readers read
    /// then (their own, or an initializer already holding the small form).
    shrunk: BTreeMap<usize, (TensorProto, String)>,
}

impl<'a, 'm> BodyFold<'a, 'm> {
    fn new(
        body: &'a Body<'m>,
        sites: &'a BTreeMap<usize, Vec<&'a Site<'static>>>,
        candidates: &'a BTreeMap<usize, Candidate>,
    ) -> Self {
        let producer = body.producer.clone();
        BodyFold {
            body,
            sites,
            candidates,
            producer,
            folded: BTreeSet::new(),
            removed: BTreeSet::new(),
            shrunk: BTreeMap::new(),
        }
    }

    /// Folds what can be folded; returns why each other candidate is kept.
    fn run(&mut self) -> BTreeMap<usize, KeptReason> {
        loop {
            let mut changed = false;
            let mut kept = BTreeMap::new();
            // The forms `expand` writes (Expand, Tile) first, each group nearest the consumers first: when two
            // broadcasts feed one node and only one of them can go, the one kept is then the model's own (a Reshape
            // or Unsqueeze that prepends 1s, or the earlier Expand), even where `expand` put its Expand early
            // because several readers share it.
            let ordered = self.candidates.iter().rev().filter(|(_, c)| matches!(c.form, Form::Expand | Form::Tile));
            let rest = self.candidates.iter().rev().filter(|(_, c)| !matches!(c.form, Form::Expand | Form::Tile));
            for (&index, candidate) in ordered.chain(rest) {
                if self.folded.contains(&index) || self.removed.contains(&index) {
                    continue;
                }
                match self.try_fold(candidate) {
                    Ok(()) => {
                        self.folded.insert(index);
                        let mut removed = std::mem::take(&mut self.removed);
                        self.body.remove_with(&mut removed, index, &|r, p| self.passes_on(r, p));
                        self.removed = removed;
                        changed = true;
                    }
                    Err(reason) => {
                        kept.insert(index, reason);
                    }
                }
            }
            if !changed {
                return kept;
            }
        }
    }

    /// A broadcast that holds only under conditions goes only where every consumer then holds under those same
    /// conditions; otherwise it is kept for them.
    fn try_fold(&self, c: &Candidate) -> Result<(), KeptReason> {
        match c.evals.iter().find(|(_, e)| !e.conditions.is_empty()) {
            Some((_, e)) => {
                let conditions: Vec<&crate::rules::ConditionKind> =
                    c.evals.iter().flat_map(|(_, e)| e.conditions.iter().map(|c| &c.kind)).collect();
                self.try_fold_under(c, &conditions)
                    .map_err(|_| KeptReason::BroadcastConditional { conditions: e.conditions.clone() })
            }
            None => self.try_fold_under(c, &[]),
        }
    }

    fn try_fold_under(&self, c: &Candidate, conditions: &[&crate::rules::ConditionKind]) -> Result<(), KeptReason> {
        let output = self.body.nodes[c.node].output[0].as_str();
        if c.evals.is_empty() || c.evals.iter().any(|(_, e)| !e.holds && e.conditions.is_empty()) {
            return Err(KeptReason::BroadcastUndecided);
        }
        if self.body.outputs.contains(output) {
            return Err(KeptReason::GraphOutput);
        }
        if self.body.nested_reads.contains(output) {
            return Err(KeptReason::ReadInSubgraph);
        }
        let consumers = self.consumers(output);
        if consumers.is_empty() {
            return Err(KeptReason::Unused);
        }
        // A broadcast that provably changes no shape changes nothing for any reader.
        if c.evals.iter().all(|(_, e)| e.noop) {
            return Ok(());
        }
        for n in consumers {
            let Some(sites) = self.sites.get(&n) else {
                let node = &self.body.nodes[n];
                return Err(KeptReason::OtherConsumer { node: node_label(node, n), op: node.op_type().to_string() });
            };
            proof::judge_consumer_under(sites, &|name, key| self.replaced(name, key, c.node), conditions)?;
        }
        Ok(())
    }

    /// `--materialized`: each initializer that shrinks (`materialized::shrink`) and whose every live reader
    /// broadcasts its small form anyway, proved as for a removed broadcast, is written small.
    fn shrink_constants(&mut self) {
        for (index, t) in self.body.initializers.iter().enumerate() {
            let name = t.name();
            if self.body.pinned(name)
                || self.body.inputs.contains(name)
                || !self.body.initializer.get(name).is_some_and(|u| std::ptr::eq(*u, t))
            {
                continue;
            }
            let consumers = self.consumers(name);
            if consumers.is_empty() || consumers.iter().any(|n| !self.sites.contains_key(n)) {
                continue;
            }
            let Some(small) = super::materialized::shrink(t) else { continue };
            let reuse = self.original_of(t, &small);
            // A constant with leading 1s and no axis to shrink changes only with an original to go back to.
            if reuse.is_none() && !super::materialized::fewer_elements(t, &small) {
                continue;
            }
            // Read as the original when it is still there (with its own shape), else as the small form.
            let dims = reuse.map_or(&small.dims, |(_, u)| &u.dims);
            let small_shape = Shape::known(&dims.iter().map(|&d| d as u64).collect::<Vec<_>>());
            let read_as = reuse.map_or(name, |(u, _)| u).to_string();
            let replace = |value: &str, key: &CallKey| {
                let r = self.replaced(value, key, usize::MAX);
                let through = r.as_ref().map_or(value, |r| r.name.as_str());
                if through == name {
                    return Some(Replaced { name: read_as.clone(), shape: Some(small_shape.clone()) });
                }
                r
            };
            let proved = consumers.iter().all(|n| proof::judge_consumer(&self.sites[n], &replace).is_ok());
            if proved {
                self.shrunk.insert(index, (TensorProto { name: Some(name.to_string()), ..small }, read_as));
            }
        }
    }

    /// The constant `t` was written out from, when it is still in the body: an initializer, or a `Constant` node
    /// before every reader of `t`. Its name and tensor.
    fn original_of(&self, t: &TensorProto, small: &TensorProto) -> Option<(&'m str, &'m TensorProto)> {
        let name = t.name();
        let initializer = self.body.initializers.iter().find(|u| {
            u.name() != name && !self.body.inputs.contains(u.name()) && super::materialized::copy_of(t, small, u)
        });
        if let Some(u) = initializer {
            return Some((u.name(), u));
        }
        let first_reader = self.body.readers.get(name)?.iter().map(|&(r, _)| r).min()?;
        let found: Vec<(&'m str, &'m TensorProto)> = self.body.nodes[..first_reader]
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let constant = n.op_type() == "Constant" && crate::rules::ops::is_default_domain(n.domain());
                let value = crate::onnx::attr::Attrs::new(n, None).tensor("value");
                let value = value.filter(|_| constant && !self.removed.contains(&i))?;
                let output = n.output.first()?.as_str();
                super::materialized::copy_of(t, small, value).then_some((output, value))
            })
            .collect();
        // Several constants may hold those values; `expand` names a copy after its original (`b` -> `b_expanded`).
        found.iter().find(|(o, _)| name.starts_with(o)).or(found.first()).copied()
    }

    /// Whether node `reader`, reading at `position`, is a folded broadcast whose source that is: its readers read
    /// the value now.
    fn passes_on(&self, reader: usize, position: usize) -> bool {
        self.folded.contains(&reader) && self.candidates.get(&reader).is_some_and(|c| c.source_pos == position)
    }

    /// The live nodes that read `value`, looking through removed broadcasts of it (their readers read it next).
    fn consumers(&self, value: &str) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        for &(reader, position) in self.body.readers.get(value).map(Vec::as_slice).unwrap_or(&[]) {
            match self.candidates.get(&reader) {
                Some(c) if self.folded.contains(&reader) && c.source_pos == position => {
                    out.extend(self.consumers(self.body.nodes[reader].output[0].as_str()))
                }
                _ if self.removed.contains(&reader) || self.body.dead_end(reader, 0) => {}
                _ => {
                    out.insert(reader);
                }
            }
        }
        out
    }

    /// What `name` becomes at evaluation `key` once the folded candidates and `tentative` are removed.
    fn replaced(&self, name: &str, key: &CallKey, tentative: usize) -> Option<Replaced> {
        let mut current = name;
        let mut shape = None;
        while let Some(&n) = self.producer.get(current) {
            if !(self.folded.contains(&n) || n == tentative) {
                break;
            }
            let Some(c) = self.candidates.get(&n) else { break };
            shape = Some(c.eval(key).map(|e| e.source.clone()));
            current = self.body.nodes[n].input[c.source_pos].as_str();
        }
        shape.map(|shape| Replaced { name: current.to_string(), shape })
    }

    /// The edit of this body and its lines in the summary.
    fn record(&self, loc: &[GraphStep], kept: BTreeMap<usize, KeptReason>, plan: &mut FoldPlan) {
        let summary = &mut plan.summary;
        summary.candidates += self.candidates.len();
        let removed = &self.removed;
        let mut edit = GraphEdit::default();
        for (i, node) in self.body.nodes.iter().enumerate() {
            if removed.contains(&i) {
                continue;
            }
            let inputs: Vec<String> = node
                .input
                .iter()
                .map(|n| self.replaced(n, &Vec::new(), usize::MAX).map_or_else(|| n.to_string(), |r| r.name))
                .map(|n| self.renamed(n))
                .collect();
            if !inputs.iter().eq(node.input.iter()) {
                edit.node_edits.insert(i, NodeEdit { inputs: InputEdit::All(inputs), drop_attributes: Vec::new() });
            }
        }
        for &i in &self.folded {
            let c = &self.candidates[&i];
            let node = &self.body.nodes[i];
            let into = self.consumers_after(node.output[0].as_str());
            summary.folded.push(Folded {
                graph: c.graph.clone(),
                node: c.label.clone(),
                op: node.op_type().to_string(),
                functions: c.functions.clone(),
                form: c.form,
                source: node.input[c.source_pos].to_string(),
                into,
            });
        }
        self.record_removed_with(summary);
        for (i, reason) in kept {
            let c = &self.candidates[&i];
            let op = self.body.nodes[i].op_type().to_string();
            let (graph, node, functions) = (c.graph.clone(), c.label.clone(), c.functions.clone());
            summary.kept.push(Kept { graph, node, op, functions, form: c.form, reason });
        }
        edit.remove_initializers = self.body.dead_initializers(removed, &|r, p| self.passes_on(r, p));
        for (&index, (small, read_as)) in &self.shrunk {
            if read_as.as_str() == small.name() {
                edit.initializer_edits.insert(index, small.clone());
            } else {
                edit.remove_initializers.insert(index);
            }
            let node = small.name().to_string();
            summary.folded.push(Folded {
                graph: self.graph_path(),
                node: node.clone(),
                op: "initializer".into(),
                functions: Vec::new(),
                form: super::Form::Materialized,
                source: read_as.clone(),
                into: self.consumers_after(&node),
            });
        }
        edit.remove_inputs = self.body.dead_inputs(&edit.remove_initializers);
        summary.constants_shrunk += self.shrunk.len();
        summary.candidates += self.shrunk.len();
        edit.remove_value_info = self.body.dead_value_info(removed);
        summary.nodes_removed += removed.len();
        summary.initializers_removed += edit.remove_initializers.len();
        edit.remove_nodes = removed.clone();
        if !edit.is_empty() {
            *plan.edit.graph_mut(loc) = edit;
        }
    }

    /// The candidates removed with the nodes that alone read them (neither folded nor kept), with those readers.
    fn record_removed_with(&self, summary: &mut FoldSummary) {
        let removed = &self.removed;
        for (&i, c) in self.candidates.iter().filter(|(i, _)| removed.contains(i) && !self.folded.contains(i)) {
            let node = &self.body.nodes[i];
            let readers = self.body.readers.get(node.output[0].as_str()).map(Vec::as_slice).unwrap_or(&[]);
            let mut with: Vec<String> = readers.iter().map(|&(r, _)| node_label(&self.body.nodes[r], r)).collect();
            with.dedup();
            let (graph, node, op) = (c.graph.clone(), c.label.clone(), node.op_type().to_string());
            summary.removed_with.push(RemovedWith { graph, node, op, form: c.form, with });
        }
    }

    /// The name a reader reads `value` by once constants are written small: a shrunk constant's original.
    fn renamed(&self, value: String) -> String {
        match self.body.initializer.get(value.as_str()) {
            Some(t) => self
                .shrunk
                .values()
                .find(|(small, _)| small.name() == t.name())
                .map_or(value, |(_, read_as)| read_as.clone()),
            None => value,
        }
    }

    /// The graph's path as sites report it.
    fn graph_path(&self) -> String {
        self.sites.values().next().map_or_else(|| "main".to_string(), |s| s[0].graph.to_string())
    }

    /// The labels of the live nodes that read what `value` was, once folded.
    fn consumers_after(&self, value: &str) -> Vec<String> {
        self.consumers(value).into_iter().map(|n| node_label(&self.body.nodes[n], n)).collect()
    }
}
