//! Ops that rearrange, select or resize data: Reshape, Transpose, Concat, Slice, Gather, Pad, Resize…
//!
//! Where an op's sizes come from another input (Reshape's shape, Slice's starts, Pad's pads), that input's
//! contents are read from its shape value, so that shapes computed in the graph stay known.

use super::{normalize_axis, normalize_insert_axis, reshape, valops, Ctx};
use super::{At, Contradiction, Detail, Malformed, RankNeed, Requirement, Whence};
use crate::onnx::tensor::{self, IntValue, ValueFacts};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let elem = ctx.elem(0);
    let tensor = |shape| ValueFacts::tensor(elem, shape);
    Some(match ctx.op {
        "Reshape" => vec![reshape::reshape(ctx)],
        "Flatten" => {
            vec![ValueFacts { value: ctx.input(0).and_then(|f| f.value.clone()), ..tensor(reshape::flatten(ctx)) }]
        }
        "Transpose" => vec![reshape::transpose(ctx)],
        "Squeeze" => vec![reshape::squeeze(ctx)],
        "Unsqueeze" => vec![reshape::unsqueeze(ctx)],
        "Concat" => vec![concat(ctx)],
        "Split" => split(ctx),
        "Slice" => vec![super::slice::slice(ctx)],
        "Gather" => vec![gather(ctx)],
        "GatherElements" => vec![gather_elements(ctx)],
        "GatherND" => {
            super::indexing::gather_nd(ctx);
            vec![tensor(gather_nd(ctx))]
        }
        "ScatterND" | "ScatterElements" | "Scatter" | "EyeLike" => vec![{
            match ctx.op {
                "ScatterND" => super::indexing::scatter_nd(ctx),
                "ScatterElements" | "Scatter" => super::indexing::scatter_elements(ctx),
                _ => {}
            }
            ValueFacts::tensor(
                if ctx.op == "EyeLike" { super::elem_attr(ctx, "dtype").or(elem) } else { elem },
                ctx.shape(0),
            )
        }],
        "Pad" => vec![tensor(pad(ctx))],
        "Tile" => vec![tile(ctx)],
        "DepthToSpace" | "SpaceToDepth" => vec![tensor(depth_space(ctx))],
        "OneHot" => {
            super::indexing::one_hot(ctx);
            vec![ValueFacts::tensor(ctx.elem(2), one_hot(ctx))]
        }
        "Resize" | "Upsample" => vec![tensor(super::resize::resize(ctx))],
        "If" => merge_branches(ctx),
        "Loop" => loop_outputs(ctx),
        "Scan" if ctx.opset < 9 => super::bodies::scan8_outputs(ctx),
        "Scan" => scan_outputs(ctx),
        _ => return None,
    })
}

fn dim_of(p: Option<Poly>) -> Dim {
    p.map_or(Dim::Unknown, Dim::from_poly)
}

/// Concat (ONNX `Concat`): "All input tensors must have the same shape, except for the dimension size of the axis
/// to concatenate on."
fn concat(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let present: Vec<usize> = (0..ctx.inputs.len()).filter(|&i| ctx.has_input(i)).collect();
    let elem = present.iter().find_map(|&i| ctx.elem(i));
    ctx.require_same_type(&present);
    let axis = ctx.int("axis", if ctx.opset < 4 { 1 } else { 0 });
    let ranked: Vec<(usize, &[Dim])> = present.iter().filter_map(|&i| ctx.dims(i).map(|d| (i, d))).collect();
    if let Some(&(first, d0)) = ranked.first() {
        if let Some(&(i, _)) = ranked.iter().find(|(_, d)| d.len() != d0.len()) {
            ctx.require_rank(i, RankNeed::Of(first));
            return ValueFacts::tensor(elem, Shape::unranked());
        }
        let Some(axis) = ctx.require_axis(present.clone(), axis, d0.len()) else {
            return ValueFacts::tensor(elem, Shape::unranked());
        };
        concat_sizes(ctx, &ranked, axis);
    }
    let Some(all) = present.iter().map(|&i| ctx.dims(i)).collect::<Option<Vec<&[Dim]>>>() else {
        let rank = present.iter().find_map(|&i| ctx.rank(i));
        let shape = rank.map_or_else(Shape::unranked, |r| Shape::ranked(vec![Dim::Unknown; r]));
        return ValueFacts::tensor(elem, shape);
    };
    let Some(rank) = all.first().map(|d| d.len()) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let Some(axis) = normalize_axis(axis, rank) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let dims: Vec<Dim> = (0..rank)
        .map(|i| {
            if i == axis {
                dim_of(all.iter().try_fold(Poly::constant(0), |acc, d| acc.add(&d[i].to_poly()?)))
            } else {
                // Every input has the same size here; the most specific one says it.
                all.iter()
                    .map(|d| &d[i])
                    .find(|d| d.known().is_some())
                    .or_else(|| all.iter().map(|d| &d[i]).find(|d| !matches!(d, Dim::Unknown)))
                    .cloned()
                    .unwrap_or(Dim::Unknown)
            }
        })
        .collect();
    // Parts whose contents are unknown count as unknown entries, as long as some part says something.
    let value = present
        .iter()
        .map(|&i| ctx.input(i).and_then(valops::contents_or_unknown))
        .collect::<Option<Vec<_>>>()
        .filter(|parts| parts.iter().any(|(_, v)| v.iter().any(Option::is_some)))
        .and_then(|parts| {
            let parts: Vec<(Vec<usize>, &[IntValue])> = parts.iter().map(|(d, v)| (d.clone(), &v[..])).collect();
            valops::concat(&parts, axis)
        });
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
}

/// Concat's inputs (of one rank) agree off `axis`: each against the first one with a known size there, else the
/// first with a named one.
fn concat_sizes(ctx: &Ctx<'_, '_>, ranked: &[(usize, &[Dim])], axis: usize) {
    for a in (0..ranked[0].1.len()).filter(|&a| a != axis) {
        let reference = ranked
            .iter()
            .find(|(_, d)| d[a].known().is_some())
            .or_else(|| ranked.iter().find(|(_, d)| !d[a].mentions_fresh()));
        let Some(&(r, rd)) = reference else { continue };
        for &(i, d) in ranked.iter().filter(|(i, _)| *i != r) {
            ctx.require_equal(Requirement::ConcatSizes, At::new(r, a, rd[a].clone()), At::new(i, a, d[a].clone()));
            if ctx.contradicted() {
                return;
            }
        }
    }
}

/// Split (ONNX `Split`): the parts given by `split` (an attribute, an input from opset 13) add up to the axis, one
/// per output; without them the axis splits into equal parts, exactly ("The input is not evenly splittable" in
/// onnxruntime), except that from opset 18 with `num_outputs` the last part may be smaller.
fn split(ctx: &mut Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let n = ctx.outputs;
    let unknown = |rank: Option<usize>| {
        let shape = rank.map_or_else(Shape::unranked, |r| Shape::ranked(vec![Dim::Unknown; r]));
        vec![ValueFacts::tensor(elem, shape); n]
    };
    let Some(d) = ctx.dims(0).map(<[Dim]>::to_vec) else { return unknown(None) };
    let Some(axis) = ctx.require_axis(vec![0], ctx.int("axis", 0), d.len()) else { return unknown(None) };
    let given: Option<Vec<IntValue>> = match ctx.attrs.ints("split") {
        Some(s) => Some(s.iter().map(|&v| Some(Poly::constant(v))).collect()),
        None if ctx.opset >= 13 && ctx.has_input(1) => ctx.value(1).map(<[IntValue]>::to_vec),
        None => None,
    };
    // Split sizes given as an input whose contents are unknown: the parts are unknown, not equal.
    if given.is_none() && ctx.opset >= 13 && ctx.has_input(1) {
        return unknown(Some(d.len()));
    }
    let sizes: Option<Vec<Dim>> = match given {
        Some(s) if !s.is_empty() => Some(given_parts(ctx, &s, At::new(0, axis, d[axis].clone()))),
        _ => match ctx.attrs.int("num_outputs").filter(|_| ctx.opset >= 18) {
            Some(parts) => ceil_parts(ctx, &d[axis], parts),
            None if ctx.opset >= 18 => {
                let detail = Detail::Malformed(Malformed::NoSplit);
                ctx.report(Contradiction::violated(Requirement::SplitSizes, vec![0], detail));
                None
            }
            None => Some(vec![ctx.divide(Requirement::SplitSizes, vec![0], axis, &d[axis], &Dim::Known(n as u64)); n]),
        },
    };
    let Some(sizes) = sizes else { return unknown(Some(d.len())) };
    let contents = ctx.input(0).and_then(valops::contents);
    let mut start = 0usize;
    sizes
        .into_iter()
        .map(|s| {
            let len = s.known().and_then(|k| usize::try_from(k).ok());
            let value = contents.as_ref().zip(len).and_then(|((shape, v), len)| {
                let part = valops::split_part(shape, v, axis, start, len);
                start += len;
                part
            });
            let mut dims = d.to_vec();
            dims[axis] = s;
            ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
        })
        .collect()
}

/// The parts Split is given: one per output, adding up to the axis `whole`.
fn given_parts(ctx: &Ctx<'_, '_>, split: &[IntValue], whole: At) -> Vec<Dim> {
    if split.len() != ctx.outputs {
        let m = Malformed::Length { list: "split", len: split.len(), expected: ctx.outputs };
        ctx.report(Contradiction::violated(Requirement::SplitSizes, vec![0, 1], Detail::Malformed(m)));
    }
    let sizes: Vec<Dim> = split.iter().map(tensor::value_dim).collect();
    let sum = sizes.iter().try_fold(Poly::constant(0), |acc, d| acc.add(&d.to_poly()?));
    if let Some(sum) = sum {
        ctx.require_size(Requirement::SplitSizes, vec![0, 1], whole, Dim::from_poly(sum), Whence::SplitSizes);
    }
    sizes
}

/// Split-18's `num_outputs` parts: each `ceil(whole / parts)` but the last, which may be smaller. With another
/// number of outputs the runtimes disagree (onnxruntime's inference splits by `num_outputs`, its kernel by the
/// outputs), so nothing is claimed.
fn ceil_parts(ctx: &Ctx<'_, '_>, whole: &Dim, parts: i64) -> Option<Vec<Dim>> {
    if usize::try_from(parts).ok() != Some(ctx.outputs) {
        return None;
    }
    let w = whole.to_poly()?;
    match w.as_constant() {
        Some(total) => {
            let chunk = (total + parts - 1) / parts;
            Some((0..parts).map(|i| Dim::Known((total - chunk * i).clamp(0, chunk) as u64)).collect())
        }
        None => {
            let each = w.div_poly(&Poly::constant(parts))?;
            // Only an exact division gives equal symbolic parts.
            (each.mul(&Poly::constant(parts))? == w).then(|| vec![Dim::from_poly(each); ctx.outputs])
        }
    }
}

/// Gather: `data[:axis] + indices + data[axis + 1:]`; constant indices lie in `-size..size` of the axis.
fn gather(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let (Some(data), Some(indices)) = (ctx.dims(0), ctx.dims(1)) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    let Some(axis) = ctx.require_axis(vec![0], ctx.int("axis", 0), data.len()) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    indices_in_range(ctx, &data[axis]);
    let dims: Vec<Dim> = data[..axis].iter().chain(indices).chain(&data[axis + 1..]).cloned().collect();
    // Picking entries of a shape vector (or of any small integer tensor).
    let value = ctx
        .input(0)
        .and_then(valops::contents)
        .zip(ctx.ints(1))
        .and_then(|((shape, v), idx)| valops::gather(&shape, v, axis, &idx));
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
}

/// Constant indices (input 1) into an axis of `size`: each in `-size..size`.
fn indices_in_range(ctx: &Ctx<'_, '_>, size: &Dim) {
    let (Some(n), Some(indices)) = (size.known().and_then(|n| i64::try_from(n).ok()), ctx.ints(1)) else { return };
    if let Some(&index) = indices.iter().find(|&&i| i < -n || i >= n) {
        let detail = Detail::IndexOutOfRange { input: 1, index, size: size.clone() };
        ctx.report(Contradiction::violated(Requirement::IndexInRange, vec![0, 1], detail));
    }
}

/// GatherElements: indices of the data's rank, constant ones within the axis; the output has the indices' shape.
fn gather_elements(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    if ctx.require_rank(1, RankNeed::Of(0)) {
        if let Some(d) = ctx.dims(0) {
            if let Some(axis) = ctx.require_axis(vec![0], ctx.int("axis", 0), d.len()) {
                indices_in_range(ctx, &d[axis]);
            }
        }
    }
    let value = (|| {
        let (shape, v) = valops::contents(ctx.input(0)?)?;
        let (index_dims, _) = valops::contents(ctx.input(1)?)?;
        let axis = normalize_axis(ctx.int("axis", 0), shape.len())?;
        valops::gather_elements(&shape, v, axis, &index_dims, &ctx.ints(1)?)
    })();
    ValueFacts { value, ..ValueFacts::tensor(elem, ctx.shape(1)) }
}

fn gather_nd(ctx: &Ctx<'_, '_>) -> Shape {
    let (Some(data), Some(indices)) = (ctx.dims(0), ctx.dims(1)) else { return Shape::unranked() };
    let batch = ctx.int("batch_dims", 0).max(0) as usize;
    let Some(Dim::Known(last)) = indices.last() else { return Shape::unranked() };
    let from = batch + *last as usize;
    if from > data.len() || indices.is_empty() {
        return Shape::unranked();
    }
    Shape::ranked(indices[..indices.len() - 1].iter().chain(&data[from..]).cloned().collect())
}

fn pad(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::unranked() };
    let pads: Option<Vec<IntValue>> = if ctx.opset < 11 {
        let given = ctx.attrs.ints("pads").or_else(|| ctx.attrs.ints("paddings"));
        given.map(|p| p.iter().map(|&v| Some(Poly::constant(v))).collect())
    } else {
        ctx.value(1).map(<[IntValue]>::to_vec)
    };
    let axes: Vec<usize> = match if ctx.opset >= 18 && ctx.has_input(3) { ctx.ints(3) } else { None } {
        Some(a) => match ctx.require_axes(vec![0, 3], &a, d.len()) {
            Some(a) => a,
            None => return Shape::unranked(),
        },
        None if ctx.opset >= 18 && ctx.has_input(3) => return Shape::ranked(vec![Dim::Unknown; d.len()]),
        None => (0..d.len()).collect(),
    };
    let Some(pads) = pads else { return Shape::ranked(vec![Dim::Unknown; d.len()]) };
    if pads.len() != 2 * axes.len() {
        let m = Malformed::Length { list: "pads", len: pads.len(), expected: 2 * axes.len() };
        ctx.report(Contradiction::violated(Requirement::ListLength, vec![0, 1], Detail::Malformed(m)));
        return Shape::ranked(vec![Dim::Unknown; d.len()]);
    }
    let mut dims = d.to_vec();
    for (k, &axis) in axes.iter().enumerate() {
        let (before, after) = (&pads[k], &pads[k + axes.len()]);
        let padded = d[axis].to_poly().zip(before.as_ref()).zip(after.as_ref());
        // The two pads first: they may cancel on a size at the top of the range (ONNX's
        // test_pad_legacy_total_padding_cancellation pads 2^63 - 1 by 1 and -1).
        dims[axis] = dim_of(padded.and_then(|((p, b), a)| p.add(&b.add(a)?)));
    }
    Shape::ranked(dims)
}

/// Tile: one repeat per axis.
fn tile(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let Some(d) = ctx.dims(0) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    if let Some([Dim::Known(k)]) = ctx.dims(1) {
        if *k != d.len() as u64 {
            let m = Malformed::Length { list: "repeats", len: *k as usize, expected: d.len() };
            ctx.report(Contradiction::violated(Requirement::ListLength, vec![0, 1], Detail::Malformed(m)));
            return ValueFacts::tensor(elem, Shape::ranked(vec![Dim::Unknown; d.len()]));
        }
    }
    let shape = match ctx.value(1) {
        Some(r) if r.len() == d.len() => Shape::ranked(
            d.iter().zip(r).map(|(x, r)| dim_of(x.to_poly().zip(r.clone()).and_then(|(x, r)| x.mul(&r)))).collect(),
        ),
        _ => Shape::ranked(vec![Dim::Unknown; d.len()]),
    };
    let repeats: Option<Vec<usize>> = ctx.ints(1).and_then(|r| r.iter().map(|&k| usize::try_from(k).ok()).collect());
    let value =
        ctx.input(0).and_then(valops::contents).zip(repeats).and_then(|((dims, v), r)| valops::tile(&dims, v, &r));
    ValueFacts { value, ..ValueFacts::tensor(elem, shape) }
}

/// DepthToSpace moves `blocksize²` channels into space, SpaceToDepth the other way; each divides exactly (ONNX:
/// "rearranges (permutes) data from depth into blocks of spatial data").
fn depth_space(ctx: &mut Ctx<'_, '_>) -> Shape {
    if !ctx.require_rank(0, RankNeed::Exactly(4)) {
        return Shape::unranked();
    }
    let Some([n, c, h, w]) = ctx.dims(0).and_then(|d| <[Dim; 4]>::try_from(d.to_vec()).ok()) else {
        return Shape::ranked(vec![Dim::Unknown; 4]);
    };
    let b = ctx.int("blocksize", 1);
    // A block size whose square overflows is no size a tensor can have.
    let Some(b2) = b.checked_mul(b).filter(|_| b >= 1) else { return Shape::ranked(vec![Dim::Unknown; 4]) };
    let times = |d: &Dim, k: i64| dim_of(d.to_poly().and_then(|x| x.scale(k)));
    let requirement = Requirement::ExactDivision;
    let dims = if ctx.op == "DepthToSpace" {
        let c = ctx.divide(requirement, vec![0], 1, &c, &Dim::Known(b2 as u64));
        vec![n, c, times(&h, b), times(&w, b)]
    } else {
        let h = ctx.divide(requirement, vec![0], 2, &h, &Dim::Known(b as u64));
        let w = ctx.divide(requirement, vec![0], 3, &w, &Dim::Known(b as u64));
        vec![n, times(&c, b2), h, w]
    };
    Shape::ranked(dims)
}

fn one_hot(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::unranked() };
    let depth = ctx.value(1).and_then(|v| v.first().cloned().flatten()).map_or(Dim::Unknown, Dim::from_poly);
    let axis = ctx.int("axis", -1);
    let Some(axis) = normalize_insert_axis(axis, d.len()) else {
        let detail = Detail::AxisOutOfRange { axis, rank: d.len() };
        ctx.report(Contradiction::violated(Requirement::AxisInRange, vec![0], detail));
        return Shape::unranked();
    };
    let mut dims = d.to_vec();
    dims.insert(axis, depth);
    Shape::ranked(dims)
}

/// Facts that hold for both of two values: what they agree on. Sizes that differ become fresh symbols,
/// since which branch runs is decided by data.
fn agree(a: &ValueFacts, b: &ValueFacts, fresh: &mut dyn FnMut() -> Dim) -> ValueFacts {
    if a.kind != b.kind {
        return ValueFacts::unknown();
    }
    let elem = if a.elem == b.elem { a.elem } else { None };
    let shape = match (a.shape.dims(), b.shape.dims()) {
        (Some(x), Some(y)) if x.len() == y.len() => {
            Shape::ranked(x.iter().zip(y).map(|(p, q)| if p.provably_eq(q) { p.clone() } else { fresh() }).collect())
        }
        _ => Shape::unranked(),
    };
    ValueFacts::of_kind(a.kind, elem, shape)
}

fn merge_branches(ctx: &mut Ctx<'_, '_>) -> Vec<ValueFacts> {
    let (Some(then), Some(other)) = (ctx.subgraph("then_branch"), ctx.subgraph("else_branch")) else {
        return Vec::new();
    };
    // A condition known from the graph picks its branch.
    match ctx.ints(0).as_deref() {
        Some([0]) => return other.to_vec(),
        Some([_]) => return then.to_vec(),
        _ => {}
    }
    then.iter().zip(other).map(|(a, b)| agree(a, b, ctx.fresh)).collect()
}

/// Loop: carried values keep their shape only where every iteration provably keeps it; scan outputs stack one
/// slice per iteration.
fn loop_outputs(ctx: &mut Ctx<'_, '_>) -> Vec<ValueFacts> {
    let Some(body) = ctx.subgraph("body") else { return Vec::new() };
    let carried = ctx.inputs.len().saturating_sub(2);
    let trips = ctx.value(0).and_then(|v| v.first().cloned().flatten()).filter(|_| !ctx.has_input(1));
    let mut out = Vec::new();
    for k in 0..carried {
        let Some(initial) = ctx.input(k + 2) else {
            out.push(ValueFacts::unknown());
            continue;
        };
        let after = body.get(k + 1).cloned().unwrap_or_default();
        out.push(agree(initial, &after, ctx.fresh));
    }
    let trip_dim = trips.map_or_else(|| ctx.fresh(), Dim::from_poly);
    for slice in body.iter().skip(1 + carried) {
        let shape = match slice.shape.dims() {
            Some(d) => Shape::ranked(std::iter::once(trip_dim.clone()).chain(d.iter().cloned()).collect()),
            None => Shape::unranked(),
        };
        out.push(ValueFacts::tensor(slice.elem, shape));
    }
    out
}

/// Scan (opset 9 on): state outputs keep the body's shapes where they agree with the initial state; scan outputs
/// stack the body's per-iteration outputs along their axis.
fn scan_outputs(ctx: &mut Ctx<'_, '_>) -> Vec<ValueFacts> {
    let Some(body) = ctx.subgraph("body") else { return Vec::new() };
    let scan_inputs = ctx.int("num_scan_inputs", 0).max(0) as usize;
    let states = ctx.inputs.len().saturating_sub(scan_inputs);
    let sequence = ctx.dims(states).and_then(|d| {
        let axis = ctx.attrs.ints("scan_input_axes").and_then(|a| a.first().copied()).unwrap_or(0);
        normalize_axis(axis, d.len()).map(|a| d[a].clone())
    });
    let mut out = Vec::new();
    for k in 0..states {
        let initial = ctx.input(k).cloned().unwrap_or_default();
        out.push(agree(&initial, &body.get(k).cloned().unwrap_or_default(), ctx.fresh));
    }
    let length = sequence.unwrap_or_else(|| ctx.fresh());
    for (j, slice) in body.iter().skip(states).enumerate() {
        let axis = ctx.attrs.ints("scan_output_axes").and_then(|a| a.get(j).copied()).unwrap_or(0);
        let shape = match slice.shape.dims() {
            Some(d) => match normalize_insert_axis(axis, d.len()) {
                Some(a) => {
                    let mut dims = d.to_vec();
                    dims.insert(a, length.clone());
                    Shape::ranked(dims)
                }
                None => Shape::unranked(),
            },
            None => Shape::unranked(),
        };
        out.push(ValueFacts::tensor(slice.elem, shape));
    }
    out
}
