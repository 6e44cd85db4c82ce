//! `Slice` with known or symbolic starts and ends, any non-zero steps, negative indices and clamping (ONNX
//! `Slice`, numpy's slicing). `position_ids[:, :seq]` on a `[1, 512]` buffer is `[1, min(512, seq)]` and
//! `x[..., :-1]` on a `T` axis is `max(0, T - 1)`; every axis the slice does not name keeps its dim.

use super::{valops, Contradiction, Ctx, Detail, Malformed, Requirement};
use crate::onnx::tensor::{IntValue, ValueFacts};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

/// Bounds at least this large mean "to the end" (exporters write INT64_MAX or INT32_MAX).
const TO_THE_END: i64 = i32::MAX as i64;

pub fn slice(ctx: &mut Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let Some(d) = ctx.dims(0).map(<[Dim]>::to_vec) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let d = d.as_slice();
    let rank_only = || ValueFacts::tensor(elem, Shape::ranked(vec![Dim::Unknown; d.len()]));
    let Some(params) = params(ctx, d.len()) else { return rank_only() };
    let mut dims = d.to_vec();
    // Per axis: constant (first index, step, count) when everything about it is known.
    let mut picks: Vec<Option<(i64, i64, usize)>> =
        d.iter().map(|x| x.known().and_then(|k| usize::try_from(k).ok()).map(|k| (0, 1, k))).collect();
    let mut seen = vec![false; d.len()];
    for (k, &a) in params.axes.iter().enumerate() {
        let (Some(axis), Some(s), Some(e), Some(&step)) =
            (ctx.require_axis(vec![0], a, d.len()), params.starts.get(k), params.ends.get(k), params.steps.get(k))
        else {
            return rank_only();
        };
        let broken = match (step, seen[axis]) {
            (0, _) => Some(Malformed::ZeroStep),
            (_, true) => Some(Malformed::RepeatedAxis(a)),
            _ => None,
        };
        if let Some(m) = broken {
            ctx.report(Contradiction::violated(Requirement::ListLength, vec![0], Detail::Malformed(m)));
            return rank_only();
        }
        seen[axis] = true;
        let taken = axis_slice(&d[axis], s.as_ref(), e.as_ref(), step);
        // A length the algebra cannot write (a start whose sign depends on a symbol, `64 - seq`) is still one
        // size: a fresh symbol, like any size nothing names.
        dims[axis] = match &taken {
            Some((_, len)) => Dim::from_poly(len.clone()),
            None if d[axis].to_poly().is_some() => ctx.fresh(),
            None => Dim::Unknown,
        };
        picks[axis] = taken.and_then(|(first, len)| {
            let count = usize::try_from(len.as_constant()?).ok()?;
            Some((first.as_constant()?, step, count))
        });
    }
    let value = ctx.input(0).and_then(valops::contents).and_then(|(shape, v)| {
        let picks: Vec<(i64, i64, usize)> = picks.into_iter().collect::<Option<_>>()?;
        valops::slice(&shape, v, &picks)
    });
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
}

struct Params {
    starts: Vec<IntValue>,
    ends: Vec<IntValue>,
    axes: Vec<i64>,
    steps: Vec<i64>,
}

/// Starts and ends may be symbolic; axes and steps must be constants.
fn params(ctx: &Ctx<'_, '_>, rank: usize) -> Option<Params> {
    let constants = |v: &[i64]| v.iter().map(|&x| Some(Poly::constant(x))).collect::<Vec<IntValue>>();
    let (starts, ends, axes, steps) = if ctx.opset < 10 {
        let starts = constants(ctx.attrs.ints("starts")?);
        let ends = constants(ctx.attrs.ints("ends")?);
        (starts, ends, ctx.attrs.ints("axes").map(<[i64]>::to_vec), None)
    } else {
        let given = |i: usize| if ctx.has_input(i) { ctx.ints(i).map(Some) } else { Some(None) };
        // Starts or ends whose contents are unknown still say how many axes are sliced: the others keep their
        // dims.
        let count = |i: usize| match ctx.dims(i) {
            Some([Dim::Known(k)]) => usize::try_from(*k).ok().filter(|&k| k <= rank),
            _ => None,
        };
        let bounds = |i: usize| ctx.value(i).map(<[IntValue]>::to_vec).or_else(|| Some(vec![None; count(i)?]));
        (bounds(1)?, bounds(2)?, given(3)?, given(4)?)
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    // Starts, ends, axes and steps are one list each of one length.
    let lengths = [("ends", ends.len()), ("axes", axes.len()), ("steps", steps.len())];
    if let Some(&(list, len)) = lengths.iter().find(|&&(_, len)| len != starts.len()) {
        let m = Malformed::Length { list, len, expected: starts.len() };
        ctx.report(Contradiction::violated(Requirement::ListLength, vec![0], Detail::Malformed(m)));
        return None;
    }
    (axes.len() <= rank).then_some(Params { starts, ends, axes, steps })
}

/// The clamped first index and the count of one axis of size `size`.
fn axis_slice(size: &Dim, start: Option<&Poly>, end: Option<&Poly>, step: i64) -> Option<(Poly, Poly)> {
    let n = size.to_poly()?;
    let (s, e) = (clamp(start?, &n, step)?, clamp(end?, &n, step)?);
    let span = if step > 0 { e.sub(&s)? } else { s.sub(&e)? };
    let len = span.div_ceil(step.checked_abs()?)?.max_of(&Poly::constant(0));
    Some((s, len))
}

/// An index clamped as Slice clamps it: negative ones count from the end; forwards into [0, n], backwards into
/// [-1, n - 1]. A symbolic index of unknown sign cannot be clamped.
fn clamp(v: &Poly, n: &Poly, step: i64) -> Option<Poly> {
    let (lo, hi) =
        if step > 0 { (Poly::constant(0), n.clone()) } else { (Poly::constant(-1), n.sub(&Poly::constant(1))?) };
    if let Some(c) = v.as_constant() {
        if c >= TO_THE_END {
            return Some(hi);
        }
        if c <= -TO_THE_END {
            return Some(lo);
        }
    }
    let b = v.bounds();
    let zero = crate::sizes::sym::Ext::Fin(0);
    if b.lo >= zero {
        Some(v.min_of(&hi))
    } else if b.hi < zero {
        Some(n.add(v)?.max_of(&lo))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::run_rule;
    use crate::infer::Ctx;

    fn run(data: ValueFacts, starts: &[Poly], ends: &[Poly], axes: &[i64], steps: &[i64]) -> ValueFacts {
        let vals = |v: &[Poly]| ValueFacts {
            value: Some(v.iter().cloned().map(Some).collect()),
            ..ValueFacts::tensor(Some(7), Shape::known(&[v.len() as u64]))
        };
        let ints = |v: &[i64]| vals(&v.iter().map(|&x| Poly::constant(x)).collect::<Vec<_>>());
        let rule: fn(&mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> = |ctx| Some(vec![slice(ctx)]);
        let inputs = [Some(data), Some(vals(starts)), Some(vals(ends)), Some(ints(axes)), Some(ints(steps))];
        run_rule(rule, "Slice", 13, vec![], &inputs, 1).remove(0)
    }

    fn c(v: i64) -> Poly {
        Poly::constant(v)
    }

    fn shape(text: &str) -> ValueFacts {
        ValueFacts::tensor(Some(1), crate::sizes::shape::parse_shape(text))
    }

    #[test]
    fn slice_of_a_buffer_up_to_a_symbolic_length_keeps_the_other_axes() {
        let out = run(shape("1,512"), &[c(0)], &[Poly::atom("seq")], &[1], &[1]);
        assert_eq!(out.shape.to_string(), "[1, min(512, seq)]");
    }

    #[test]
    fn negative_end_on_a_symbolic_axis() {
        let out = run(shape("N,T,8"), &[c(0)], &[c(-1)], &[1], &[1]);
        assert_eq!(out.shape.to_string(), "[N, max(0, T - 1), 8]");
        // `[1:]` of the same axis is the same size, in the same form.
        let tail = run(shape("N,T,8"), &[c(1)], &[c(i64::MAX)], &[1], &[1]);
        assert_eq!(tail.shape, out.shape);
    }

    #[test]
    fn unknown_bounds_leave_the_other_axes_alone() {
        let rule: fn(&mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> = |ctx| Some(vec![slice(ctx)]);
        let opaque = ValueFacts::tensor(Some(7), Shape::known(&[1]));
        let axes = ValueFacts { value: Some(vec![Some(c(1))]), ..opaque.clone() };
        let inputs = [Some(shape("N,T,8")), Some(opaque.clone()), Some(opaque), Some(axes)];
        let out = run_rule(rule, "Slice", 13, vec![], &inputs, 1).remove(0);
        assert_eq!(out.shape.to_string(), "[N, ?1, 8]");
    }

    #[test]
    fn reversing_and_strided_slices_of_known_axes() {
        let out = run(shape("5,9"), &[c(-1), c(1)], &[c(-i64::MAX), c(100)], &[0, 1], &[-1, 3]);
        assert_eq!(out.shape.to_string(), "[5, 3]");
        let sym = run(shape("N"), &[c(0)], &[c(i64::MAX)], &[0], &[2]);
        assert_eq!(sym.shape.to_string(), "[floor((N + 1) / 2)]");
    }

    #[test]
    fn slicing_a_shape_vector_slices_its_contents() {
        let v = ValueFacts {
            value: Some(vec![Some(Poly::atom("N")), Some(c(3)), Some(Poly::atom("H"))]),
            ..ValueFacts::tensor(Some(7), Shape::known(&[3]))
        };
        let out = run(v, &[c(-1)], &[c(-i64::MAX)], &[0], &[-1]);
        assert_eq!(out.value.unwrap(), vec![Some(Poly::atom("H")), Some(c(3)), Some(Poly::atom("N"))]);
    }
}
