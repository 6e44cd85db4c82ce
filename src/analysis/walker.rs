//! The walker's state: what one walk over a model carries from node to node. Its methods live beside the part
//! of the walk they serve (`walk`, `call`, `site`, `contradiction`, `index_bound`); this file imports none of them.

use super::*;

pub(super) struct Walker<'m, 's> {
    pub(super) options: Options,
    /// `--bind` sizes: graph inputs' declared symbols take them before inference.
    pub(super) bindings: Bindings,
    /// Record function bodies' facts too (`infer` writes them).
    pub(super) function_facts: bool,
    /// Where sites go when they are not kept in the analysis.
    pub(super) each_site: Option<&'s mut dyn super::Sites>,
    /// The sites `each_site` only counts: no record of them is made.
    pub(super) counted_only: super::CountedOnly,
    /// How many of those the walk met, by verdict (`kind as usize`): handed to `each_site` once the walk ends
    /// ([`Walker::hand_over_counts`]), where a call through `dyn Sites` for each cost ~15 instructions a node.
    pub(super) counted: [usize; 5],
    /// Whether `each_site` only counts some sites of the numpy rule that hold ([`Walker::counts_pairs`]): asked at
    /// every broadcasting node, settled once.
    pub(super) pairs: bool,
    /// Whether `each_site`, which counts no such pairs, takes them as records made from the walk's quick judgement
    /// ([`super::Sites::pair_records`]).
    pub(super) pair_records: bool,
    /// `pairs || pair_records`: whether the walk judges numpy pairs the quick way at all.
    pub(super) quick_pairs: bool,
    pub(super) functions: HashMap<(&'m str, &'m str), (usize, &'m FunctionProto)>,
    pub(super) active: Vec<(&'m str, &'m str)>,
    pub(super) out: Analysis,
    /// The model imports no default-domain opset and no default-domain node has been met yet.
    pub(super) opset_missing: bool,
    /// Fresh symbols made so far.
    pub(super) fresh: usize,
    /// Contents of small integer tensors whose data lives outside the model file, by tensor name.
    pub(super) external: HashMap<String, Vec<i64>>,
    /// Below IR 4 every initializer must also be listed as a graph input; runtimes then hold it constant (as
    /// onnxruntime does), so its contents count. From IR 4 on, listing it as an input makes it a default that the
    /// caller may override.
    pub(super) constant_initializers: bool,
    /// Function calls already walked, and what walking them may still cost.
    pub(super) calls: crate::analysis::calls::Calls,
    /// The ops the config file declares (`[ops]`), which no built-in rule knows.
    pub(super) custom: std::sync::Arc<infer::custom::CustomOps>,
    /// The body being walked has had its note about the expression budget (see `budget`).
    pub(super) budget_noted: bool,
    /// Some node of the body being walked holds a graph: where none does, no node's attributes are searched for one
    /// (a search of every node's attributes cost the 132 PyTorch exports' walk 1.9 M instructions).
    pub(super) graphs_here: bool,
    /// What each op met so far is to the walk.
    pub(super) ops: super::op_memo::OpMemo<'m>,
    /// Integer inputs the caller keeps within a range of values (`--range attention_mask=0..1`).
    pub(super) input_values: Vec<(std::sync::Arc<str>, crate::rules::ranges::SizeRange)>,
}

impl Walker<'_, '_> {
    /// Counts a site of verdict `kind` that `each_site` only counts.
    #[inline(always)]
    pub(super) fn count_site(&mut self, kind: crate::rules::VerdictKind) {
        self.counted[kind as usize] += 1;
    }

    /// Hands the sites counted so far to `each_site`.
    pub(super) fn hand_over_counts(&mut self) {
        let counted = std::mem::take(&mut self.counted);
        if let Some(each) = &mut self.each_site {
            for (kind, n) in super::sites::VERDICTS.into_iter().zip(counted).filter(|&(_, n)| n > 0) {
                each.count_many(kind, n);
            }
        }
    }
}

/// A symbol for a size nothing names. `?` cannot start a name in the models this tool has met, and the number
/// keeps every one distinct, so no two are ever taken to be equal.
pub(super) fn fresh_symbol(counter: &mut usize) -> Dim {
    *counter += 1;
    Dim::sym(&format!("?{counter}"))
}

/// Whether a taker counting `counted_only` only counts some sites of the numpy rule that hold (see
/// [`Walker::counts_pairs`]).
pub(super) fn counts_pairs(counted_only: super::CountedOnly) -> bool {
    let counts = |kind| counted_only.contains(kind, crate::rules::Rule::Multidirectional);
    counts(crate::rules::VerdictKind::Same) || counts(crate::rules::VerdictKind::Broadcast)
}
