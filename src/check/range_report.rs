//! What `check` says about ranges of sizes: each conditional site decided over the model's ranges, and with
//! `--safe-ranges` the largest box of sizes where every site holds, as a TensorRT optimization profile in trtexec's
//! and onnxruntime's spellings.

use std::sync::Arc;

use crate::rules::ranges::profile::{profile_of, ProfileShapes};
use crate::rules::ranges::{Decider, Decision, ModelRanges, Ranges, SafeRanges, SizeRange, Sizes};
use crate::rules::{Condition, Site};

/// A model's ranges while its sites are judged.
#[derive(Debug)]
pub struct Ranged {
    model: ModelRanges,
    decider: Decider,
    /// Sites that break their rule whatever the sizes: no box is safe while there is one.
    always_violated: usize,
    failures: Vec<RangeFailure>,
}

/// A site that fails somewhere in the ranges, with its smallest failing sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeFailure {
    pub graph: String,
    pub node: String,
    pub op: String,
    pub witness: Sizes,
    /// Graph inputs the witness fills with one value (the data that drives computed indices past their table).
    pub fills: crate::infer::value_range::Fills,
}

impl RangeFailure {
    /// `GRAPH/NODE`, as JSON names the site (whole, unescaped).
    pub fn path(&self) -> String {
        format!("{}/{}", self.graph, self.node)
    }

    /// `GRAPH › NODE (OP)`, as text names the site (escaped, [`crate::onnx::location::at`]).
    pub fn at(&self) -> String {
        crate::onnx::location::at(&self.graph, Some(&self.node), Some(&self.op))
    }
}

/// Input tensors written for failing sizes (`--witness`).
#[derive(Clone, Debug, PartialEq)]
pub struct WrittenWitness {
    /// The sizes of every symbol of the inputs (the failing ones, and the others at their smallest).
    pub sizes: Sizes,
    /// The sites that fail at these sizes.
    pub sites: Vec<RangeFailure>,
    /// The folder the tensors were written into.
    pub dir: std::path::PathBuf,
    /// Where the tensors could not be written, why (nothing is written then).
    pub error: Option<String>,
    /// What a runtime said when it ran the model on them (`verify` builds).
    pub runtime: Option<String>,
}

/// The ranges a model was checked over, and its safe ranges when asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeReport {
    /// Every symbol's range, single sizes included (those were bound before inference).
    pub ranges: Ranges,
    /// Symbols searched within the default bounds of `--safe-ranges`, no range being given for them.
    pub defaulted: Vec<Arc<str>>,
    /// With `--safe-ranges`.
    pub safe: Option<SafeReport>,
    /// Every site that fails somewhere in the ranges, in the order judged.
    pub failures: Vec<RangeFailure>,
    /// The tensors `--witness` wrote.
    pub witnesses: Vec<WrittenWitness>,
}

/// The largest safe box of a model, and its profile.
#[derive(Clone, Debug, PartialEq)]
pub struct SafeReport {
    pub outcome: SafeRanges,
    /// Sites that break their rule at every size (then nothing is safe).
    pub always_violated: usize,
    /// The safe box as an optimization profile (when there is a box).
    pub profile: Option<ProfileShapes>,
}

impl Ranged {
    pub fn new(model: ModelRanges) -> Ranged {
        let decider = Decider::new(model.ranges.clone());
        Ranged { model, decider, always_violated: 0, failures: Vec::new() }
    }

    /// What a site's conditions come to over the ranges.
    pub fn decide(&mut self, conditions: &[Condition]) -> Decision {
        self.decider.decide(conditions)
    }

    /// A site that breaks its rule whatever the sizes.
    pub fn violated(&mut self) {
        self.always_violated += 1;
    }

    /// A site that fails at `witness`.
    pub fn failed(&mut self, site: &Site, witness: &Sizes) {
        let (graph, node, op) = (site.graph.to_string(), site.node.to_string(), site.op.to_string());
        self.failures.push(RangeFailure { graph, node, op, witness: witness.clone(), fills: Vec::new() });
    }

    /// A node that fails at `witness` when these graph inputs are filled with these values.
    pub fn failed_at(
        &mut self,
        (graph, node, op): (&str, &str, &str),
        witness: &Sizes,
        fills: &crate::infer::value_range::Fills,
    ) {
        let (graph, node, op) = (graph.to_string(), node.to_string(), op.to_string());
        self.failures.push(RangeFailure { graph, node, op, witness: witness.clone(), fills: fills.to_vec() });
    }

    pub fn finish(self) -> RangeReport {
        let mut ranges = self.model.ranges.clone();
        for (name, size) in &self.model.points {
            ranges.insert(name, SizeRange::point(*size));
        }
        let safe = self.model.safe_ranges.then(|| {
            let outcome = match self.always_violated {
                0 => self.decider.safe(),
                _ => SafeRanges::None { left_out: 0 },
            };
            let profile = match &outcome {
                SafeRanges::Safe { safe, .. } => {
                    let mut all = ranges.clone();
                    for (name, range) in &safe.ranges {
                        all.insert(name, *range);
                    }
                    Some(profile_of(&self.model.inputs, &all, &self.model.opt))
                }
                SafeRanges::None { .. } => None,
            };
            SafeReport { outcome, always_violated: self.always_violated, profile }
        });
        RangeReport { ranges, defaulted: self.model.defaulted, safe, failures: self.failures, witnesses: Vec::new() }
    }
}

impl SafeReport {
    /// The safe box over every symbol, single sizes included; `None` when nothing is safe.
    pub fn safe_ranges(&self, all: &Ranges) -> Option<Ranges> {
        let SafeRanges::Safe { safe, .. } = &self.outcome else { return None };
        let mut out = all.clone();
        for (name, range) in &safe.ranges {
            out.insert(name, *range);
        }
        Some(out)
    }
}
