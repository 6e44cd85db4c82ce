//! Indices a Gather reads its table with, computed from the sizes (position ids `Range(0, seq) + 2`, or
//! `CumSum(mask) + 1`): ONNX `Gather` and `GatherElements` (docs/Operators.md) accept indices in `[-s, s-1]` for an
//! axis of `s` entries, so a table of 66 rows read by ids that reach `seq + 1` holds only while `seq ≤ 64`. The walk
//! keeps the value ranges of integer tensors ([`crate::infer::value_range`]) beside their facts, and records here
//! the condition on sizes each such Gather needs, which `check` reports (`index-bound`) and decides over ranges of
//! sizes like a broadcast's.
//!
//! Only an end some element reaches becomes a condition (see [`crate::infer::value_range::Reach`]): a bound that
//! may be loose says nothing about failing.

use super::scope::{Env, Scope};
use super::site::reported_owned;
use super::walker::Walker;
use super::*;
use crate::infer::value_range::{self, End, Fills, Operands, ValueRange};
use crate::infer::Operand;
use crate::rules::{Condition, ConditionKind};
use crate::sizes::sym::Poly;

/// A Gather whose computed indices stay within the axis they index only at some sizes, or at none.
#[derive(Clone, Debug)]
pub struct IndexBound {
    /// Where it is reported: the graph, and the node (inside a function, the calling node's).
    pub graph: String,
    pub node: String,
    pub node_index: usize,
    pub op: String,
    pub functions: Vec<FunctionFrame<'static>>,
    /// The table (data) and the indices, with their shapes.
    pub data: Operand,
    pub indices: Operand,
    pub axis: usize,
    /// The size of the indexed axis.
    pub size: Dim,
    /// The greatest index, or the least, that some element reaches past the axis (`seq + 1`).
    pub reaches: Vec<Poly>,
    /// Graph inputs filled so that the indices reach it (`input_ids` all 2: no padding id): a witness's data.
    pub fills: Fills,
    pub verdict: BoundVerdict,
}

/// Whether the indices stay within the axis.
#[derive(Clone, Debug, PartialEq)]
pub enum BoundVerdict {
    /// Exactly when every condition holds (`seq ≤ 64`).
    Conditional(Vec<Condition>),
    /// At no size: some index is out of the axis whatever the sizes.
    Violated,
}

/// `x ≤ bound` as a condition, its constant moved to the bound (`seq + 1 ≤ 65` reads `seq ≤ 64`); `None` when a
/// side is no size (a negative constant, which no size condition can say).
fn at_most(x: &Poly, bound: &Poly, axis: usize) -> Option<Condition> {
    let c = x.constant_term();
    let (lhs, rhs) = match x.as_constant() {
        Some(_) => (x.clone(), bound.clone()),
        None => (x.sub(&Poly::constant(c))?, bound.sub(&Poly::constant(c))?),
    };
    let (dim, bound) = (Dim::from_poly(lhs), Dim::from_poly(rhs));
    if matches!(dim, Dim::Unknown) || matches!(bound, Dim::Unknown) || dim.mentions_fresh() || bound.mentions_fresh() {
        return None;
    }
    Some(Condition { axis, kind: ConditionKind::AtMost { dim, bound } })
}

/// What one reached end needs: `need ≤ size` decided for every size, or a condition.
enum Need {
    Holds,
    Never,
    Condition(Condition),
}

fn need(x: &Poly, size: &Poly, axis: usize) -> Option<Need> {
    Some(match x.at_most_for_all(size) {
        Some(true) => Need::Holds,
        Some(false) => Need::Never,
        None => Need::Condition(at_most(x, size, axis)?),
    })
}

/// Keeps the range of a node's first output beside its facts.
pub(super) fn keep_range<'m>(scope: &mut Scope<'m>, node: &'m NodeProto, range: Option<ValueRange>) {
    // Most nodes have none: their output is not looked at.
    let Some(r) = range else { return };
    if let Some(name) = node.output.first().filter(|n| !n.is_empty()) {
        scope.ranges.insert(name, r);
    }
}

/// The inputs whose kept ranges a node of `op` checks as indices against its table (bit by position): a Gather's
/// and a GatherElements' second.
#[inline(always)]
pub(super) fn indices_read(op: &str) -> u64 {
    match op {
        "Gather" | "GatherElements" => 0b10,
        _ => 0,
    }
}

/// Whether values of element type `elem` are of a type no range is kept of (floating-point, or any type but the
/// integers and booleans ranges are kept of): only a Gather's output of such a type may have one.
#[inline(always)]
pub(super) fn floating(elem: Option<i32>) -> bool {
    elem.is_some_and(|e| e != tensor::INT64 && e != tensor::INT32 && e != tensor::BOOL)
}

impl<'m> Walker<'m, '_> {
    /// The range a node's first output takes, from its inputs' ranges; a Gather's indices checked against its
    /// table on the way.
    #[inline(always)]
    pub(super) fn value_range(
        &mut self,
        env: &Env<'m, '_>,
        scope: &Scope<'m>,
        (index, node, attrs): (usize, &'m NodeProto, Attrs<'m>),
        refs: &[Option<&ValueFacts>],
        outputs: &[ValueFacts],
    ) -> Option<ValueRange> {
        let output = outputs.first()?;
        let floating = floating(output.elem);
        if !ops::is_default_domain(node.domain())
            || (floating && !matches!(node.op_type(), "Gather" | "GatherElements"))
        {
            return None;
        }
        self.value_range_of(env, scope, (index, node, attrs), refs, output)
    }

    /// [`Walker::value_range`] of a node whose output may have one (most nodes' outputs, floating-point, have none:
    /// they are told apart inline, without a call).
    fn value_range_of(
        &mut self,
        env: &Env<'m, '_>,
        scope: &Scope<'m>,
        (index, node, attrs): (usize, &'m NodeProto, Attrs<'m>),
        refs: &[Option<&ValueFacts>],
        output: &ValueFacts,
    ) -> Option<ValueRange> {
        let ranges: Vec<Option<&ValueRange>> = node.input.iter().map(|n| self.lookup_range(env, scope, n)).collect();
        if indices_read(node.op_type()) != 0 {
            if let Some(Some(indices)) = ranges.get(1) {
                self.index_bound(env, (index, node, attrs), refs, indices);
            }
        }
        value_range::of_node(node.op_type(), attrs, &Operands { facts: refs, ranges: &ranges }, output)
    }

    fn lookup_range<'s>(&self, env: &'s Env<'m, '_>, scope: &'s Scope<'m>, name: &str) -> Option<&'s ValueRange> {
        if name.is_empty() {
            return None;
        }
        scope.ranges.get(name).or_else(|| env.outer.iter().rev().find_map(|s| s.ranges.get(name)))
    }

    /// Records what a Gather's indices need of the sizes to stay within the axis they index.
    fn index_bound(
        &mut self,
        env: &Env<'m, '_>,
        (index, node, attrs): (usize, &'m NodeProto, Attrs<'m>),
        refs: &[Option<&ValueFacts>],
        indices: &ValueRange,
    ) {
        let (Some(data), Some(idx)) = (refs.first().copied().flatten(), refs.get(1).copied().flatten()) else { return };
        // Known indices are checked by the op's own rule (`shape-contradiction`).
        if idx.value.is_some() || data.contradicted || idx.contradicted {
            return;
        }
        let Some(dims) = data.shape.dims() else { return };
        let Some(axis) = crate::infer::normalize_axis(attrs.int("axis").unwrap_or(0), dims.len()) else { return };
        let Some(size) = dims[axis].to_poly() else { return };
        let mut conditions = Vec::new();
        let (mut reaches, mut fills, mut never) = (Vec::new(), Vec::new(), false);
        // The greatest index needs `hi + 1 ≤ size`, the least `-lo ≤ size`.
        let plus_one = |p: &Poly| p.add(&Poly::constant(1));
        for (end, past) in [(&indices.hi, &plus_one as &dyn Fn(&Poly) -> Option<Poly>), (&indices.lo, &Poly::neg)] {
            let Some(End { at, reach: Some(reach) }) = end else { continue };
            let Some(x) = past(at) else { continue };
            match need(&x, &size, axis) {
                None | Some(Need::Holds) => continue,
                Some(Need::Never) => never = true,
                Some(Need::Condition(c)) => conditions.push(c),
            }
            reaches.push(at.clone());
            if fills.is_empty() {
                fills = reach.fills.clone();
            }
        }
        if reaches.is_empty() {
            return;
        }
        let verdict = if never { BoundVerdict::Violated } else { BoundVerdict::Conditional(conditions) };
        let (graph, node_name, node_index, functions) = reported_owned(env, node, index);
        let operand =
            |i: usize, f: &ValueFacts| Operand { name: node.input[i].to_string(), shape: f.shape.clone(), value: None };
        self.out.index_bounds.push(IndexBound {
            graph,
            node: node_name,
            node_index,
            op: node.op_type().to_string(),
            functions,
            data: operand(0, data),
            indices: operand(1, idx),
            axis,
            size: dims[axis].clone(),
            reaches,
            fills,
            verdict,
        });
    }
}
