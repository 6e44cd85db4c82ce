//! Sequence and optional values (ONNX `docs/Operators.md`: SequenceEmpty-11, SequenceConstruct-11,
//! SequenceInsert-11, SequenceAt-11, SequenceErase-11, SequenceLength-11, SplitToSequence-11/24,
//! ConcatFromSequence-11, SequenceMap-17; Optional-15/28, OptionalGetElement-15/18/28, OptionalHasElement-15/18/28).
//!
//! A sequence's facts are those every element shares: a size on which two elements may differ is unknown, never a
//! symbol, since a symbol would claim every element has that one size. The later versions of these ops only widen
//! their type constraints, so one rule serves every version.

use super::{normalize_axis, normalize_insert_axis, Ctx};
use crate::onnx::tensor::{self, Kind, ValueFacts, BOOL, INT64};
use crate::sizes::shape::{Dim, Shape};

const FLOAT: i32 = crate::onnx::pb::DataType::Float as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let first = ctx.input(0).cloned().unwrap_or_default();
    let sequence = |elem, shape| ValueFacts::of_kind(Kind::Sequence, elem, shape);
    Some(match ctx.op {
        // SequenceEmpty-11: `dtype`, float by default.
        "SequenceEmpty" => {
            let elem = ctx.attrs.int("dtype").and_then(|t| i32::try_from(t).ok()).unwrap_or(FLOAT);
            vec![sequence(Some(elem), Shape::unranked())]
        }
        "SequenceConstruct" => {
            let present: Vec<ValueFacts> =
                (0..ctx.inputs.len()).map(|i| ctx.input(i).cloned().unwrap_or_default()).collect();
            let elem = common_elem(present.iter().map(|f| f.elem));
            let shape = present.iter().map(|f| f.shape.clone()).reduce(|a, b| union(&a, &b)).unwrap_or_default();
            vec![sequence(elem, shape)]
        }
        "SequenceInsert" => {
            let tensor = ctx.input(1).cloned().unwrap_or_default();
            let elem = common_elem([first.elem, tensor.elem].into_iter());
            vec![sequence(elem, union(&first.shape, &tensor.shape))]
        }
        "SequenceAt" => vec![ValueFacts::tensor(first.elem, first.shape.clone())],
        "SequenceErase" => vec![sequence(first.elem, first.shape.clone())],
        "SequenceLength" => vec![ValueFacts::tensor(Some(INT64), Shape::scalar())],
        "SplitToSequence" => {
            super::indexing::split_to_sequence(ctx);
            vec![sequence(first.elem, split_to_sequence(ctx))]
        }
        "ConcatFromSequence" => vec![ValueFacts::tensor(first.elem, concat_from_sequence(ctx))],
        "SequenceMap" => sequence_map(ctx),
        "Optional" => vec![optional(ctx)],
        // From opset 18 a tensor or a sequence passes through as it is.
        "OptionalGetElement" => vec![match first.kind {
            Kind::Optional => ValueFacts { kind: Kind::Tensor, ..first },
            Kind::OptionalSequence => ValueFacts { kind: Kind::Sequence, ..first },
            Kind::Tensor | Kind::Sequence if ctx.opset >= 18 && first.elem.is_some() => first,
            _ => ValueFacts::unknown(),
        }],
        "OptionalHasElement" => vec![ValueFacts::tensor(Some(BOOL), Shape::scalar())],
        _ => return None,
    })
}

/// The element type all agree on, when all know it.
fn common_elem(elems: impl Iterator<Item = Option<i32>>) -> Option<i32> {
    let elems: Vec<Option<i32>> = elems.collect();
    let first = (*elems.first()?)?;
    elems.iter().all(|&e| e == Some(first)).then_some(first)
}

/// What two elements' shapes share: the rank when both have it, and each size both provably have.
pub(crate) fn union(a: &Shape, b: &Shape) -> Shape {
    match (a.dims(), b.dims()) {
        (Some(x), Some(y)) if x.len() == y.len() => Shape::ranked(
            x.iter().zip(y).map(|(p, q)| if p.provably_eq(q) { p.clone() } else { Dim::Unknown }).collect(),
        ),
        _ => Shape::unranked(),
    }
}

/// SplitToSequence: without `split` every element has size 1 on the axis (dropped unless `keepdims`); with a
/// scalar `split` every element but perhaps the last has that size; a 1-D `split` gives each its own.
fn split_to_sequence(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::unranked() };
    let Some(axis) = normalize_axis(ctx.int("axis", 0), d.len()) else { return Shape::unranked() };
    let mut dims = d.to_vec();
    if !ctx.has_input(1) {
        if ctx.int("keepdims", 1) == 0 {
            dims.remove(axis);
        } else {
            dims[axis] = Dim::Known(1);
        }
        return Shape::ranked(dims);
    }
    let split = ctx.ints(1);
    dims[axis] = match (ctx.rank(1), split.as_deref()) {
        // Every element but the last has the split size, the last the rest: the same size when it divides.
        (Some(0), Some(&[s])) if s > 0 => match d[axis].known() {
            Some(n) if n % s as u64 == 0 => Dim::Known(s as u64),
            _ => Dim::Unknown,
        },
        (Some(1), Some(sizes)) if !sizes.is_empty() && sizes.iter().all(|&s| s == sizes[0]) && sizes[0] >= 0 => {
            Dim::Known(sizes[0] as u64)
        }
        _ => Dim::Unknown,
    };
    Shape::ranked(dims)
}

/// ConcatFromSequence: the elements' shape with the axis summed (or, with `new_axis`, inserted), its size unknown.
fn concat_from_sequence(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::unranked() };
    let axis = ctx.int("axis", 0);
    let mut dims = d.to_vec();
    if ctx.int("new_axis", 0) == 1 {
        let Some(a) = normalize_insert_axis(axis, d.len()) else { return Shape::unranked() };
        dims.insert(a, Dim::Unknown);
    } else {
        let Some(a) = normalize_axis(axis, d.len()) else { return Shape::unranked() };
        dims[a] = Dim::Unknown;
    }
    Shape::ranked(dims)
}

/// SequenceMap-17: each output is a sequence of the body's output. The body's own symbols are bound afresh for
/// each element, so only its known sizes hold for every element.
fn sequence_map(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let Some(body) = ctx.subgraph("body") else { return Vec::new() };
    body.iter()
        .map(|out| {
            let shape = match out.shape.dims() {
                Some(d) => Shape::ranked(
                    d.iter().map(|x| if x.known().is_some() { x.clone() } else { Dim::Unknown }).collect(),
                ),
                None => Shape::unranked(),
            };
            ValueFacts::of_kind(Kind::Sequence, out.elem, shape)
        })
        .collect()
}

/// Optional-15: an optional of its input, or, without one, of the `type` attribute.
fn optional(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let inner = match ctx.input(0) {
        Some(f) => f.clone(),
        None if ctx.has_input(0) => ValueFacts::unknown(),
        None => tensor::facts_from_type(ctx.attrs.get("type").and_then(|a| a.tp.as_ref()), &mut Vec::new(), false),
    };
    match inner.kind {
        Kind::Tensor if inner.elem.is_some() || inner.shape.dims().is_some() => {
            ValueFacts::of_kind(Kind::Optional, inner.elem, inner.shape)
        }
        Kind::Sequence => ValueFacts::of_kind(Kind::OptionalSequence, inner.elem, inner.shape),
        _ => ValueFacts::unknown(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::tensor as t;
    use crate::infer::test_support::{int, run_rule};

    fn seq(elem: i32, shape: Shape) -> Option<ValueFacts> {
        Some(ValueFacts::of_kind(Kind::Sequence, Some(elem), shape))
    }

    #[test]
    fn sequence_construct_keeps_only_the_sizes_every_element_has() {
        let out = run_rule(infer, "SequenceConstruct", 11, vec![], &[t(1, &[2, 3, 4]), t(1, &[2, 5, 4])], 1);
        assert_eq!(out[0].kind, Kind::Sequence);
        assert_eq!(out[0].shape, Shape::ranked(vec![Dim::Known(2), Dim::Unknown, Dim::Known(4)]));
        let out = run_rule(infer, "SequenceConstruct", 11, vec![], &[t(1, &[2]), t(1, &[2, 5])], 1);
        assert_eq!(out[0].shape, Shape::unranked(), "ranks differ");
    }

    #[test]
    fn sequence_at_gives_an_element_and_length_a_scalar() {
        let s = seq(7, Shape::known(&[3]));
        let out = run_rule(infer, "SequenceAt", 11, vec![], &[s.clone(), t(7, &[])], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(7), Shape::known(&[3])));
        let out = run_rule(infer, "SequenceLength", 11, vec![], &[s], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(INT64), Shape::scalar()));
    }

    #[test]
    fn split_to_sequence_without_split_has_size_one_or_drops_the_axis() {
        let out = run_rule(infer, "SplitToSequence", 11, vec![int("axis", 1)], &[t(1, &[2, 6])], 1);
        assert_eq!(out[0].shape, Shape::known(&[2, 1]));
        let out = run_rule(infer, "SplitToSequence", 11, vec![int("axis", 1), int("keepdims", 0)], &[t(1, &[2, 6])], 1);
        assert_eq!(out[0].shape, Shape::known(&[2]));
    }

    #[test]
    fn split_to_sequence_by_a_scalar_that_does_not_divide_leaves_the_axis_unknown() {
        let split = |v: i64| {
            Some(ValueFacts { value: Some(vec![Some(crate::sizes::sym::Poly::constant(v))]), ..t(7, &[]).unwrap() })
        };
        let out = run_rule(infer, "SplitToSequence", 11, vec![int("axis", 1)], &[t(1, &[2, 6]), split(3)], 1);
        assert_eq!(out[0].shape, Shape::known(&[2, 3]));
        let out = run_rule(infer, "SplitToSequence", 11, vec![int("axis", 1)], &[t(1, &[2, 7]), split(3)], 1);
        assert_eq!(out[0].shape, Shape::ranked(vec![Dim::Known(2), Dim::Unknown]), "the last element has 1");
    }

    #[test]
    fn concat_from_sequence_leaves_the_axis_unknown_or_inserts_it() {
        let s = seq(1, Shape::known(&[2, 3]));
        let out = run_rule(infer, "ConcatFromSequence", 11, vec![int("axis", -1)], std::slice::from_ref(&s), 1);
        assert_eq!(out[0].shape, Shape::ranked(vec![Dim::Known(2), Dim::Unknown]));
        let out = run_rule(infer, "ConcatFromSequence", 11, vec![int("axis", -1), int("new_axis", 1)], &[s], 1);
        assert_eq!(out[0].shape, Shape::ranked(vec![Dim::Known(2), Dim::Known(3), Dim::Unknown]));
    }

    #[test]
    fn optional_wraps_and_get_element_unwraps() {
        let out = run_rule(infer, "Optional", 15, vec![], &[t(1, &[4])], 1);
        assert_eq!(out[0], ValueFacts::of_kind(Kind::Optional, Some(1), Shape::known(&[4])));
        let out = run_rule(infer, "OptionalGetElement", 15, vec![], &[Some(out[0].clone())], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(1), Shape::known(&[4])));
        let out = run_rule(infer, "OptionalGetElement", 15, vec![], &[t(1, &[4])], 1);
        assert_eq!(out[0], ValueFacts::unknown(), "a plain tensor is an input only from opset 18");
        let out = run_rule(infer, "OptionalGetElement", 18, vec![], &[t(1, &[4])], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(1), Shape::known(&[4])));
    }
}
