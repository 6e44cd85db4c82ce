//! What a control-flow node tells the graph it runs about that graph's inputs (ONNX `docs/Operators.md`: Loop,
//! Scan-8/9, SequenceMap-17), and Scan-8's outputs. A body's own declarations still fill what this leaves unknown.
//!
//! Only what holds at every iteration is given: a loop-carried value keeps its element type but may change its
//! shape from one iteration to the next, so only its type is told; a scan input's slice has the input's shape
//! without the scanned axis at every iteration; a sequence's element, the facts every element shares.

use super::{normalize_axis, Ctx};
use crate::onnx::attr::Attrs;
use crate::onnx::tensor::{Kind, ValueFacts, BOOL, INT64};
use crate::sizes::shape::{Dim, Shape};

/// The starting facts of each of `count` inputs of the graph attribute of a `op` node (default domain, `opset`) with
/// these input facts; unknown for an op or input nothing is known of.
pub fn body_inputs(
    op: &str,
    opset: i64,
    attrs: Attrs<'_>,
    inputs: &[Option<&ValueFacts>],
    count: usize,
) -> Vec<ValueFacts> {
    let input = |i: usize| inputs.get(i).copied().flatten();
    let type_only = |f: Option<&ValueFacts>| {
        f.map_or_else(ValueFacts::unknown, |f| ValueFacts::of_kind(f.kind, f.elem, Shape::unranked()))
    };
    let mut out: Vec<ValueFacts> = match op {
        // Loop: the iteration number, the condition, then the carried values.
        "Loop" => {
            let mut v = vec![
                ValueFacts::tensor(Some(INT64), Shape::unranked()),
                ValueFacts::tensor(Some(BOOL), Shape::unranked()),
            ];
            v.extend((2..inputs.len()).map(|i| type_only(input(i))));
            v
        }
        "Scan" => scan(opset, attrs, inputs, count, &type_only),
        // SequenceMap: an element of each sequence, a tensor as it is.
        "SequenceMap" => (0..inputs.len())
            .map(|i| match input(i) {
                Some(f) if f.kind == Kind::Sequence => ValueFacts::tensor(f.elem, f.shape.clone()),
                Some(f) if f.kind == Kind::Tensor => ValueFacts::tensor(f.elem, f.shape.clone()),
                _ => ValueFacts::unknown(),
            })
            .collect(),
        _ => Vec::new(),
    };
    out.resize_with(count, ValueFacts::unknown);
    out.truncate(count);
    out
}

/// Scan: the states (their type only), then one slice of each scanned input. Scan-8 has a leading optional
/// `sequence_lens` input and batches every input on axis 0, scanning axis 1; from Scan-9 the scanned axis of each
/// input is its `scan_input_axes` entry (0 by default).
fn scan(
    opset: i64,
    attrs: Attrs<'_>,
    inputs: &[Option<&ValueFacts>],
    count: usize,
    type_only: &dyn Fn(Option<&ValueFacts>) -> ValueFacts,
) -> Vec<ValueFacts> {
    let first = usize::from(opset < 9);
    let given: Vec<Option<&ValueFacts>> = inputs.iter().skip(first).copied().collect();
    let scanned = usize::try_from(attrs.int("num_scan_inputs").unwrap_or(0)).unwrap_or(0).min(given.len());
    let states = given.len() - scanned;
    let mut out: Vec<ValueFacts> = given[..states].iter().map(|f| type_only(*f)).collect();
    for (j, f) in given[states..].iter().enumerate() {
        let slice = f.and_then(|f| {
            let d = f.shape.dims()?;
            let drop: Vec<usize> = if opset < 9 {
                (d.len() >= 2).then(|| vec![0, 1])?
            } else {
                let axis = attrs.ints("scan_input_axes").and_then(|a| a.get(j).copied()).unwrap_or(0);
                vec![normalize_axis(axis, d.len())?]
            };
            let dims: Vec<Dim> =
                d.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, x)| x.clone()).collect();
            Some(ValueFacts::tensor(f.elem, Shape::ranked(dims)))
        });
        out.push(slice.unwrap_or_else(|| type_only(*f)));
    }
    out.truncate(count);
    out
}

/// Scan-8's outputs: inputs `[sequence_lens, states…, scanned…]` and outputs all batched on axis 0. A final state
/// is the batch, then what the body keeps of each state; a scan output stacks the body's per-step output along
/// axis 1, as long as the scanned inputs (their axis 1).
pub fn scan8_outputs(ctx: &mut Ctx<'_, '_>) -> Vec<ValueFacts> {
    let Some(body) = ctx.subgraph("body") else { return Vec::new() };
    let scanned = usize::try_from(ctx.int("num_scan_inputs", 0)).unwrap_or(0);
    let states = ctx.inputs.len().saturating_sub(1 + scanned);
    let first_scanned = ctx.dims(1 + states);
    let (batch, length) = (super::dim_at(first_scanned, 0), super::dim_at(first_scanned, 1));
    let mut out = Vec::new();
    for k in 0..states {
        let (initial, after) =
            (ctx.input(1 + k).cloned().unwrap_or_default(), body.get(k).cloned().unwrap_or_default());
        let elem = initial.elem.filter(|&e| Some(e) == after.elem);
        let shape = match (initial.shape.dims(), after.shape.dims()) {
            (Some(i), Some(a)) if i.len() == a.len() + 1 => {
                let kept = i[1..].iter().zip(a).map(|(p, q)| if p.provably_eq(q) { p.clone() } else { Dim::Unknown });
                Shape::ranked(std::iter::once(i[0].clone()).chain(kept).collect())
            }
            _ => Shape::unranked(),
        };
        out.push(ValueFacts::tensor(elem, shape));
    }
    for step in body.iter().skip(states) {
        let shape = match step.shape.dims() {
            Some(d) => Shape::ranked([batch.clone(), length.clone()].into_iter().chain(d.iter().cloned()).collect()),
            None => Shape::unranked(),
        };
        out.push(ValueFacts::tensor(step.elem, shape));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::NodeProto;

    fn t(elem: i32, dims: &[u64]) -> ValueFacts {
        ValueFacts::tensor(Some(elem), Shape::known(dims))
    }

    #[test]
    fn a_loop_body_learns_the_carried_types_but_not_their_shapes() {
        let node = NodeProto::default();
        let (trips, cond, carried) = (t(INT64, &[]), t(BOOL, &[]), t(1, &[2]));
        let inputs = [Some(&trips), Some(&cond), Some(&carried)];
        let body = body_inputs("Loop", 13, Attrs::new(&node, None), &inputs, 3);
        assert_eq!(body[2], ValueFacts::tensor(Some(1), Shape::unranked()));
    }

    #[test]
    fn a_scan_body_sees_one_slice_of_each_scanned_input() {
        let node =
            NodeProto { attribute: vec![crate::infer::test_support::int("num_scan_inputs", 1)], ..Default::default() };
        let (state, xs) = (t(1, &[1, 3]), t(1, &[7, 2]));
        let body = body_inputs("Scan", 9, Attrs::new(&node, None), &[Some(&state), Some(&xs)], 2);
        assert_eq!(body[0], ValueFacts::tensor(Some(1), Shape::unranked()));
        assert_eq!(body[1], t(1, &[2]));
        // Scan-8: a sequence_lens input first, then batched inputs scanned on axis 1.
        let batched = t(1, &[1, 7, 2]);
        let body = body_inputs("Scan", 8, Attrs::new(&node, None), &[None, Some(&state), Some(&batched)], 2);
        assert_eq!(body[1], t(1, &[2]));
    }
}
