//! Ops that rearrange, select or resize data: Reshape, Transpose, Concat, Slice, Gather, Pad, Resize…
//!
//! Where an op's sizes come from another input (Reshape's shape, Slice's starts, Pad's pads), that input's
//! contents are read from its shape value, so that shapes computed in the graph stay known.

use super::{normalize_axis, normalize_insert_axis, valops, Ctx};
use crate::shape::{Dim, Shape};
use crate::sym::Poly;
use crate::tensor::{self, IntValue, ValueFacts};

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let elem = ctx.elem(0);
    let tensor = |shape| ValueFacts::tensor(elem, shape);
    Some(match ctx.op {
        "Reshape" => vec![reshape(ctx)],
        "Flatten" => vec![ValueFacts { value: ctx.input(0).and_then(|f| f.value.clone()), ..tensor(flatten(ctx)) }],
        "Transpose" => vec![transpose(ctx)],
        "Squeeze" => vec![squeeze(ctx)],
        "Unsqueeze" => vec![unsqueeze(ctx)],
        "Concat" => vec![concat(ctx)],
        "Split" => split(ctx),
        "Slice" => vec![super::slice::slice(ctx)],
        "Gather" => vec![gather(ctx)],
        "GatherElements" => vec![gather_elements(ctx)],
        "GatherND" => vec![tensor(gather_nd(ctx))],
        "ScatterND" | "ScatterElements" | "Scatter" | "EyeLike" => vec![ValueFacts::tensor(
            if ctx.op == "EyeLike" { ctx.attrs.int("dtype").map(|d| d as i32).or(elem) } else { elem },
            ctx.shape(0),
        )],
        "Pad" => vec![tensor(pad(ctx))],
        "Tile" => vec![tile(ctx)],
        "DepthToSpace" | "SpaceToDepth" => vec![tensor(depth_space(ctx))],
        "OneHot" => vec![ValueFacts::tensor(ctx.elem(2), one_hot(ctx))],
        "Resize" | "Upsample" => vec![tensor(resize(ctx))],
        "If" => merge_branches(ctx),
        "Loop" => loop_outputs(ctx),
        "Scan" => scan_outputs(ctx),
        _ => return None,
    })
}

fn product(dims: &[Dim]) -> Option<Poly> {
    dims.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(&d.to_poly()?))
}

fn dim_of(p: Option<Poly>) -> Dim {
    p.map_or(Dim::Unknown, Dim::from_poly)
}

fn reshape(ctx: &mut Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let target: Option<Vec<IntValue>> = match ctx.attrs.ints("shape") {
        Some(s) if ctx.opset < 5 => Some(s.iter().map(|&v| Some(Poly::constant(v))).collect()),
        _ => ctx.value(1).map(<[IntValue]>::to_vec),
    };
    let data = ctx.dims(0);
    // The contents pass through unchanged: reshaping a shape vector keeps its values.
    let value = ctx.input(0).and_then(|f| f.value.clone());
    let Some(target) = target else {
        let shape = match ctx.dims(1) {
            Some([Dim::Known(n)]) if *n <= crate::shape::MAX_RANK => Shape::ranked(vec![Dim::Unknown; *n as usize]),
            _ => Shape::unranked(),
        };
        return ValueFacts { value, ..ValueFacts::tensor(elem, shape) };
    };
    let allow_zero = ctx.int("allowzero", 0) != 0;
    let mut infer_at = None;
    let mut dims: Vec<Dim> = Vec::with_capacity(target.len());
    for (i, t) in target.iter().enumerate() {
        let dim = match t.as_ref().map(|p| (p, p.as_constant())) {
            Some((_, Some(-1))) => {
                infer_at = Some(i);
                Dim::Unknown
            }
            Some((_, Some(0))) if !allow_zero => data.and_then(|d| d.get(i).cloned()).unwrap_or(Dim::Unknown),
            Some((p, _)) => Dim::from_poly(p.clone()),
            None => Dim::Unknown,
        };
        dims.push(dim);
    }
    if let Some(i) = infer_at {
        let others: Vec<Dim> = dims.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, d)| d.clone()).collect();
        let total = data.and_then(product);
        let known = product(&others);
        dims[i] = match (total, known) {
            (Some(t), Some(k)) if k.as_constant() != Some(0) => dim_of(t.div_poly(&k)),
            _ => Dim::Unknown,
        };
    }
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
}

fn flatten(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::ranked(vec![Dim::Unknown, Dim::Unknown]) };
    // Flatten's axis counts from the back like any axis, but may also be the rank itself.
    let axis = ctx.int("axis", 1);
    let rank = d.len() as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    if !(0..=rank).contains(&a) {
        return Shape::unranked();
    }
    let a = a as usize;
    Shape::ranked(vec![dim_of(product(&d[..a])), dim_of(product(&d[a..]))])
}

fn transpose(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let Some(d) = ctx.dims(0) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let perm: Vec<i64> = match ctx.attrs.ints("perm") {
        Some(p) if !p.is_empty() => p.to_vec(),
        _ => (0..d.len() as i64).rev().collect(),
    };
    let axes: Option<Vec<usize>> = perm.iter().map(|&p| normalize_axis(p, d.len())).collect();
    let Some(axes) = axes.filter(|a| a.len() == d.len()) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let value = ctx.input(0).and_then(valops::contents).and_then(|(shape, v)| valops::transpose(&shape, v, &axes));
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(axes.iter().map(|&a| d[a].clone()).collect())) }
}

fn squeeze(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let value = ctx.input(0).and_then(|f| f.value.clone());
    let Some(d) = ctx.dims(0) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let axes = if ctx.opset < 13 { ctx.attrs.ints("axes").map(<[i64]>::to_vec) } else { ctx.axes("axes", 1) };
    let dims = match axes {
        Some(axes) if !axes.is_empty() => {
            let Some(axes) = axes.iter().map(|&a| normalize_axis(a, d.len())).collect::<Option<Vec<usize>>>() else {
                return ValueFacts::tensor(elem, Shape::unranked());
            };
            d.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, x)| x.clone()).collect()
        }
        // Without axes every size-1 dim goes, which is only decidable when no dim could be 1 unseen.
        None if ctx.opset >= 13 && ctx.has_input(1) => return ValueFacts::tensor(elem, Shape::unranked()),
        _ if d.iter().all(|x| x.known().is_some()) => d.iter().filter(|x| !x.is_one()).cloned().collect(),
        _ => return ValueFacts::tensor(elem, Shape::unranked()),
    };
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
}

fn unsqueeze(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let value = ctx.input(0).and_then(|f| f.value.clone());
    let axes = if ctx.opset < 13 { ctx.attrs.ints("axes").map(<[i64]>::to_vec) } else { ctx.axes("axes", 1) };
    let (Some(d), Some(axes)) = (ctx.dims(0), axes) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    let rank = d.len() + axes.len();
    let Some(mut positions) = axes.iter().map(|&a| normalize_axis(a, rank)).collect::<Option<Vec<usize>>>() else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    positions.sort_unstable();
    let mut source = d.iter();
    let dims = (0..rank)
        .map(|i| if positions.contains(&i) { Some(Dim::Known(1)) } else { source.next().cloned() })
        .collect::<Option<Vec<Dim>>>();
    ValueFacts { value, ..ValueFacts::tensor(elem, dims.map_or_else(Shape::unranked, Shape::ranked)) }
}

fn concat(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let present: Vec<usize> = (0..ctx.inputs.len()).filter(|&i| ctx.has_input(i)).collect();
    let elem = present.iter().find_map(|&i| ctx.elem(i));
    let Some(all) = present.iter().map(|&i| ctx.dims(i)).collect::<Option<Vec<&[Dim]>>>() else {
        let rank = present.iter().find_map(|&i| ctx.rank(i));
        let shape = rank.map_or_else(Shape::unranked, |r| Shape::ranked(vec![Dim::Unknown; r]));
        return ValueFacts::tensor(elem, shape);
    };
    let Some(rank) = all.first().map(|d| d.len()) else { return ValueFacts::tensor(elem, Shape::unranked()) };
    let Some(axis) = normalize_axis(ctx.int("axis", 0), rank).filter(|_| all.iter().all(|d| d.len() == rank)) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
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

fn split(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let n = ctx.outputs;
    let unknown = |rank: Option<usize>| {
        let shape = rank.map_or_else(Shape::unranked, |r| Shape::ranked(vec![Dim::Unknown; r]));
        vec![ValueFacts::tensor(elem, shape); n]
    };
    let Some(d) = ctx.dims(0) else { return unknown(None) };
    let Some(axis) = normalize_axis(ctx.int("axis", 0), d.len()) else { return unknown(None) };
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
        Some(s) if !s.is_empty() => Some(s.iter().map(tensor::value_dim).collect()),
        _ => {
            let parts = ctx.attrs.int("num_outputs").map_or(n as i64, |k| k);
            let whole = d[axis].to_poly();
            match whole.as_ref().and_then(Poly::as_constant) {
                // From opset 18 the last chunk may be smaller.
                Some(total) if parts > 0 => {
                    let chunk = (total + parts - 1) / parts;
                    Some((0..parts).map(|i| Dim::Known((total - chunk * i).clamp(0, chunk) as u64)).collect())
                }
                _ => whole.and_then(|w| {
                    let each = w.div_poly(&Poly::constant(parts))?;
                    // Only an exact division gives equal symbolic parts.
                    (each.mul(&Poly::constant(parts))? == w).then(|| vec![Dim::from_poly(each); parts as usize])
                }),
            }
        }
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

fn gather(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let (Some(data), Some(indices)) = (ctx.dims(0), ctx.dims(1)) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    let Some(axis) = normalize_axis(ctx.int("axis", 0), data.len()) else {
        return ValueFacts::tensor(elem, Shape::unranked());
    };
    let dims: Vec<Dim> = data[..axis].iter().chain(indices).chain(&data[axis + 1..]).cloned().collect();
    // Picking entries of a shape vector (or of any small integer tensor).
    let value = ctx
        .input(0)
        .and_then(valops::contents)
        .zip(ctx.ints(1))
        .and_then(|((shape, v), idx)| valops::gather(&shape, v, axis, &idx));
    ValueFacts { value, ..ValueFacts::tensor(elem, Shape::ranked(dims)) }
}

fn gather_elements(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
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
        Some(a) => match a.iter().map(|&x| normalize_axis(x, d.len())).collect::<Option<Vec<usize>>>() {
            Some(a) => a,
            None => return Shape::unranked(),
        },
        None if ctx.opset >= 18 && ctx.has_input(3) => return Shape::ranked(vec![Dim::Unknown; d.len()]),
        None => (0..d.len()).collect(),
    };
    let Some(pads) = pads.filter(|p| p.len() == 2 * axes.len()) else {
        return Shape::ranked(vec![Dim::Unknown; d.len()]);
    };
    let mut dims = d.to_vec();
    for (k, &axis) in axes.iter().enumerate() {
        let (before, after) = (&pads[k], &pads[k + axes.len()]);
        let padded = d[axis].to_poly().zip(before.as_ref()).zip(after.as_ref());
        dims[axis] = dim_of(padded.and_then(|((p, b), a)| p.add(b)?.add(a)));
    }
    Shape::ranked(dims)
}

fn tile(ctx: &Ctx<'_, '_>) -> ValueFacts {
    let elem = ctx.elem(0);
    let Some(d) = ctx.dims(0) else { return ValueFacts::tensor(elem, Shape::unranked()) };
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

fn depth_space(ctx: &Ctx<'_, '_>) -> Shape {
    let Some([n, c, h, w]) = ctx.dims(0) else { return Shape::ranked(vec![Dim::Unknown; 4]) };
    let b = ctx.int("blocksize", 1);
    let b2 = Poly::constant(b * b);
    let bp = Poly::constant(b);
    type Op = fn(&Poly, &Poly) -> Option<Poly>;
    // DepthToSpace moves channels into space; SpaceToDepth the other way.
    let (op_c, op_hw): (Op, Op) = if ctx.op == "DepthToSpace" {
        (|x, k| x.div_poly(k), |x, k| x.mul(k))
    } else {
        (|x, k| x.mul(k), |x, k| x.div_poly(k))
    };
    let f = |d: &Dim, k: &Poly, g: Op| dim_of(d.to_poly().and_then(|x| g(&x, k)));
    Shape::ranked(vec![n.clone(), f(c, &b2, op_c), f(h, &bp, op_hw), f(w, &bp, op_hw)])
}

fn one_hot(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::unranked() };
    let depth = ctx.value(1).and_then(|v| v.first().cloned().flatten()).map_or(Dim::Unknown, Dim::from_poly);
    let Some(axis) = normalize_insert_axis(ctx.int("axis", -1), d.len()) else { return Shape::unranked() };
    let mut dims = d.to_vec();
    dims.insert(axis, depth);
    Shape::ranked(dims)
}

fn resize(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::unranked() };
    let unknown = || Shape::ranked(vec![Dim::Unknown; d.len()]);
    // Where sizes and scales sit: Upsample-7 has scales as an attribute, Upsample-9 and Resize-10 as input 1,
    // Resize-11 on as inputs 2 (scales) and 3 (sizes).
    let (scales_input, sizes_input) = match (ctx.op, ctx.opset) {
        ("Upsample", v) if v < 9 => (None, None),
        ("Upsample", _) | (_, 10) => (Some(1), None),
        _ => (Some(2), Some(3)),
    };
    let axes: Vec<usize> = match ctx.attrs.ints("axes") {
        Some(a) => match a.iter().map(|&x| normalize_axis(x, d.len())).collect::<Option<_>>() {
            Some(a) => a,
            None => return unknown(),
        },
        None => (0..d.len()).collect(),
    };
    if let Some(sizes) = sizes_input.filter(|&i| ctx.has_input(i)).and_then(|i| ctx.value(i)) {
        if sizes.len() == axes.len() {
            let mut dims = d.to_vec();
            for (k, &a) in axes.iter().enumerate() {
                dims[a] = tensor::value_dim(&sizes[k]);
            }
            return Shape::ranked(dims);
        }
    }
    let scales: Option<Vec<f64>> = match scales_input {
        None => ctx.attrs.get("scales").map(|a| a.floats.iter().map(|&f| f as f64).collect()),
        Some(i) => ctx.floats(i).map(<[f64]>::to_vec),
    };
    let Some(scales) = scales.filter(|s| s.len() == axes.len()) else { return unknown() };
    let mut dims = d.to_vec();
    for (k, &a) in axes.iter().enumerate() {
        let s = scales[k];
        dims[a] = match (d[a].known(), s) {
            (Some(n), s) => Dim::Known((n as f64 * s).floor() as u64),
            // floor(H * p / q) for a scale that is a fraction with a small denominator (2.0, 0.5, 1.5).
            (None, s) if s > 0.0 => (1..=64)
                .find(|&q| ((s * q as f64).round() - s * q as f64).abs() < 1e-9)
                .and_then(|q| {
                    let p = (s * q as f64).round();
                    (p < 1e9).then_some((p as i64, q))
                })
                .map_or(Dim::Unknown, |(p, q)| dim_of(d[a].to_poly().and_then(|x| x.scale(p)?.div_floor(q)))),
            _ => Dim::Unknown,
        };
    }
    Shape::ranked(dims)
}

/// Facts that hold for both of two values: what they agree on. Sizes that differ become fresh symbols,
/// since which branch runs is decided by data.
fn agree(a: &ValueFacts, b: &ValueFacts, fresh: &mut dyn FnMut() -> Dim) -> ValueFacts {
    let elem = if a.elem == b.elem { a.elem } else { None };
    let shape = match (a.shape.dims(), b.shape.dims()) {
        (Some(x), Some(y)) if x.len() == y.len() => {
            Shape::ranked(x.iter().zip(y).map(|(p, q)| if p.provably_eq(q) { p.clone() } else { fresh() }).collect())
        }
        _ => Shape::unranked(),
    };
    ValueFacts::tensor(elem, shape)
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
