//! Shape inference for the nn op family: convolutions and pooling, matrix products, normalizations, recurrent
//! layers, Einsum, quantization, attention and losses.
//!
//! Sizes are computed as polynomials, so a stride-1 'same' convolution keeps `H` and a stride-2 one gives
//! `floor((H + pads - dilation*(k-1) - 1) / 2) + 1`. Wherever runtimes (or the specification's own texts) disagree on
//! a size, the size is left unknown.

use std::collections::BTreeMap;

use super::{normalize_axis, Ctx};
use crate::rules;
use crate::shape::{Dim, Shape};
use crate::sym::Poly;
use crate::tensor::{self, ValueFacts, INT32, INT64};

const FLOAT: i32 = crate::pb::DataType::Float as i32;
const UINT8: i32 = crate::pb::DataType::Uint8 as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let same = |ctx: &Ctx<'_, '_>| ValueFacts::tensor(ctx.elem(0), ctx.shape(0));
    Some(match ctx.op {
        "Conv" | "DeformConv" => vec![conv(ctx, 0, 1, ctx.elem(0))],
        "ConvInteger" => vec![conv(ctx, 0, 1, Some(INT32))],
        "QLinearConv" => vec![conv(ctx, 0, 3, ctx.elem(7))],
        "ConvTranspose" => {
            vec![ValueFacts::tensor(ctx.elem(0), conv_transpose_shape(ctx).unwrap_or_default())]
        }
        "MaxPool" => {
            let y = ValueFacts::tensor(ctx.elem(0), pool_shape(ctx).unwrap_or_default());
            let indices = ValueFacts::tensor(Some(INT64), y.shape.clone());
            vec![y, indices]
        }
        "AveragePool" | "LpPool" => vec![ValueFacts::tensor(ctx.elem(0), pool_shape(ctx).unwrap_or_default())],
        "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool" => {
            let shape = ctx.dims(0).map_or_else(Shape::unranked, |d| {
                Shape::ranked(
                    d.iter().enumerate().map(|(i, d)| if i < 2 { d.clone() } else { Dim::Known(1) }).collect(),
                )
            });
            vec![ValueFacts::tensor(ctx.elem(0), shape)]
        }
        "MaxUnpool" => vec![ValueFacts::tensor(ctx.elem(0), max_unpool_shape(ctx).unwrap_or_default())],
        "MaxRoiPool" | "RoiAlign" => vec![ValueFacts::tensor(ctx.elem(0), roi_shape(ctx))],
        "MatMul" => vec![ValueFacts::tensor(ctx.elem(0), matmul_shape(ctx.dims(0), ctx.dims(1)))],
        "MatMulInteger" => vec![ValueFacts::tensor(Some(INT32), matmul_shape(ctx.dims(0), ctx.dims(1)))],
        "QLinearMatMul" => vec![ValueFacts::tensor(ctx.elem(7), matmul_shape(ctx.dims(0), ctx.dims(3)))],
        "BatchNormalization" => batch_norm(ctx),
        "InstanceNormalization" | "GroupNormalization" | "RMSNormalization" => vec![same(ctx)],
        "LayerNormalization" => layer_norm(ctx),
        "RNN" => recurrent(ctx, 1, false),
        "GRU" => recurrent(ctx, 3, false),
        "LSTM" => recurrent(ctx, 4, true),
        "Einsum" => vec![ValueFacts::tensor(ctx.elem(0), einsum_shape(ctx).unwrap_or_default())],
        "QuantizeLinear" => {
            let elem = match output_dtype(ctx) {
                Some(t) => Some(t),
                // The zero point's type; uint8 without one. A zero point that is named but unresolved says nothing.
                None if ctx.inputs.len() > 2 => ctx.elem(2),
                None => Some(UINT8),
            };
            vec![ValueFacts::tensor(elem, ctx.shape(0))]
        }
        "DequantizeLinear" => {
            let elem = match output_dtype(ctx) {
                Some(t) => Some(t),
                None if ctx.opset >= 19 => ctx.elem(1),
                None => Some(FLOAT),
            };
            vec![ValueFacts::tensor(elem, ctx.shape(0))]
        }
        "DynamicQuantizeLinear" => vec![
            ValueFacts::tensor(Some(UINT8), ctx.shape(0)),
            ValueFacts::tensor(Some(FLOAT), Shape::scalar()),
            ValueFacts::tensor(Some(UINT8), Shape::scalar()),
        ],
        "Attention" => attention(ctx),
        "NegativeLogLikelihoodLoss" | "SoftmaxCrossEntropyLoss" => loss(ctx),
        _ => return None,
    })
}

fn c(n: i64) -> Poly {
    Poly::constant(n)
}

fn dim_of(p: Option<Poly>) -> Dim {
    p.map_or(Dim::Unknown, Dim::from_poly)
}

/// Dim `i` of `dims`, unknown when the rank is unknown or too small.
fn dim_at(dims: Option<&[Dim]>, i: usize) -> Dim {
    dims.and_then(|d| d.get(i).cloned()).unwrap_or(Dim::Unknown)
}

fn output_dtype(ctx: &Ctx<'_, '_>) -> Option<i32> {
    ctx.attrs.int("output_dtype").filter(|&t| t != 0).and_then(|t| i32::try_from(t).ok())
}

/// A non-empty int list attribute.
fn ints_attr<'m>(ctx: &Ctx<'_, 'm>, name: &str) -> Option<&'m [i64]> {
    ctx.attrs.ints(name).filter(|v| !v.is_empty())
}

/// A per-axis int list attribute: `default` on every axis when absent, `None` when its length is wrong or a value
/// is below `min`.
fn per_axis(ctx: &Ctx<'_, '_>, name: &str, len: usize, default: i64, min: i64) -> Option<Vec<i64>> {
    match ints_attr(ctx, name) {
        Some(v) => (v.len() == len && v.iter().all(|&x| x >= min)).then(|| v.to_vec()),
        None => Some(vec![default; len]),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AutoPad {
    NotSet,
    /// SAME_UPPER or SAME_LOWER: which side gets the odd pad does not change the size.
    Same,
    Valid,
}

/// The sliding-window attributes of a convolution or pooling node over `n` spatial axes.
struct Window {
    kernel: Vec<Option<Poly>>,
    strides: Vec<i64>,
    dilations: Vec<i64>,
    /// `[x1_begin, x2_begin…, x1_end, x2_end…]`.
    pads: Vec<i64>,
    auto_pad: AutoPad,
}

/// The window attributes; the kernel from `kernel_shape`, else from the spatial dims of the weight input. `None`
/// when an attribute is malformed.
fn window(ctx: &Ctx<'_, '_>, n: usize, weights: Option<usize>) -> Option<Window> {
    let auto_pad = match ctx.attrs.string("auto_pad") {
        None | Some(b"NOTSET" | b"") => AutoPad::NotSet,
        Some(b"SAME_UPPER" | b"SAME_LOWER") => AutoPad::Same,
        Some(b"VALID") => AutoPad::Valid,
        Some(_) => return None,
    };
    let strides = per_axis(ctx, "strides", n, 1, 1)?;
    let dilations = per_axis(ctx, "dilations", n, 1, 1)?;
    let pads = per_axis(ctx, "pads", 2 * n, 0, i64::MIN)?;
    let kernel = match ints_attr(ctx, "kernel_shape") {
        Some(k) if k.len() == n && k.iter().all(|&x| x >= 1) => k.iter().map(|&x| Some(c(x))).collect(),
        Some(_) => return None,
        None => match weights.and_then(|w| ctx.dims(w)) {
            Some(w) if w.len() == n + 2 => w[2..].iter().map(Dim::to_poly).collect(),
            _ => vec![None; n],
        },
    };
    Some(Window { kernel, strides, dilations, pads, auto_pad })
}

impl Window {
    fn n(&self) -> usize {
        self.strides.len()
    }

    /// `(k - 1) * dilation + 1`.
    fn effective_kernel(&self, i: usize) -> Option<Poly> {
        self.kernel[i].as_ref()?.sub(&c(1))?.mul(&c(self.dilations[i]))?.add(&c(1))
    }

    /// Explicit pads of axis `i`; none for VALID.
    fn pads(&self, i: usize) -> (i64, i64) {
        match self.auto_pad {
            AutoPad::NotSet => (self.pads[i], self.pads[i + self.n()]),
            _ => (0, 0),
        }
    }

    /// The output size of a convolution or pooling window along spatial axis `i`.
    fn output(&self, i: usize, input: &Dim, ceil_mode: bool) -> Dim {
        dim_of(self.output_poly(i, input, ceil_mode))
    }

    fn output_poly(&self, i: usize, input: &Dim, ceil_mode: bool) -> Option<Poly> {
        let s = self.strides[i];
        let x = input.to_poly()?;
        let ek = self.effective_kernel(i);
        if self.auto_pad == AutoPad::Same {
            // ceil(in / s) in both the ONNX inference and runtimes. In ceil mode a kernel narrower than the stride
            // gets no padding and the window count can exceed that; left unknown.
            let spans_stride = ek.as_ref().and_then(Poly::as_constant).is_some_and(|e| e >= s);
            if ceil_mode && s > 1 && !spans_stride {
                return None;
            }
            return x.div_ceil(s);
        }
        let (pb, pe) = self.pads(i);
        let ek = ek?;
        let span = x.add(&c(pb))?.add(&c(pe))?.sub(&ek)?;
        if !ceil_mode {
            return span.div_floor(s)?.add(&c(1));
        }
        let out = span.div_ceil(s)?.add(&c(1))?;
        // Newer definitions drop a last window that would start in the end padding; older ones keep it. It can
        // start there only when pe + s > effective kernel; then the size is claimed only when both agree.
        if ek.as_constant().is_some_and(|e| pe.checked_add(s).is_some_and(|t| t <= e)) {
            return Some(out);
        }
        let (o, inp) = (out.as_constant()?, x.as_constant()?);
        ((o - 1).checked_mul(s)? < inp.checked_add(pb)?).then_some(out)
    }

    /// The output size of a transposed convolution along spatial axis `i`, without `output_shape`.
    fn transpose_output(&self, i: usize, input: &Dim, output_padding: i64) -> Option<Poly> {
        let s = self.strides[i];
        let x = input.to_poly()?;
        let ek = self.effective_kernel(i)?;
        if self.auto_pad == AutoPad::Same {
            // `in * s` when the padding it needs is not negative; the ONNX inference adds output_padding on top
            // where runtimes do not, so only output_padding 0 is claimed.
            return (output_padding == 0 && ek.as_constant()? >= s).then(|| x.mul(&c(s))).flatten();
        }
        let (pb, pe) = self.pads(i);
        x.sub(&c(1))?.mul(&c(s))?.add(&c(output_padding))?.add(&ek)?.sub(&c(pb))?.sub(&c(pe))
    }
}

/// The number of spatial axes: from the data's rank, else the weights' rank, else the kernel attribute.
fn spatial_rank(ctx: &Ctx<'_, '_>, x: usize, w: Option<usize>) -> Option<usize> {
    if let Some(d) = ctx.dims(x) {
        return d.len().checked_sub(2);
    }
    if let Some(d) = w.and_then(|w| ctx.dims(w)) {
        return d.len().checked_sub(2);
    }
    ints_attr(ctx, "kernel_shape").map(<[i64]>::len)
}

/// Conv, ConvInteger, QLinearConv, DeformConv: data `x`, weights `w` of shape `[M, C/group, k…]`.
fn conv(ctx: &Ctx<'_, '_>, x: usize, w: usize, elem: Option<i32>) -> ValueFacts {
    ValueFacts::tensor(elem, conv_shape(ctx, x, w).unwrap_or_default())
}

fn conv_shape(ctx: &Ctx<'_, '_>, x: usize, w: usize) -> Option<Shape> {
    let n = spatial_rank(ctx, x, Some(w))?;
    let xd = ctx.dims(x);
    let mut dims = vec![dim_at(xd, 0), dim_at(ctx.dims(w), 0)];
    let win = window(ctx, n, Some(w));
    for i in 0..n {
        let input = dim_at(xd, i + 2);
        dims.push(win.as_ref().map_or(Dim::Unknown, |win| win.output(i, &input, false)));
    }
    Some(Shape::ranked(dims))
}

/// ConvTranspose: weights `[C, M/group, k…]`; output channels `W[1] * group`.
fn conv_transpose_shape(ctx: &Ctx<'_, '_>) -> Option<Shape> {
    let n = spatial_rank(ctx, 0, Some(1))?;
    let xd = ctx.dims(0);
    let group = ctx.int("group", 1);
    let channels = dim_at(ctx.dims(1), 1).to_poly().and_then(|m| m.mul(&c(group)));
    let mut dims = vec![dim_at(xd, 0), if group >= 1 { dim_of(channels) } else { Dim::Unknown }];
    if let Some(out) = ints_attr(ctx, "output_shape") {
        // The spatial sizes, or (as some exporters write) the whole shape.
        let spatial = match out.len() {
            l if l == n => out,
            l if l == n + 2 => &out[2..],
            _ => &[],
        };
        if spatial.len() == n {
            dims.extend(spatial.iter().map(|&v| u64::try_from(v).map_or(Dim::Unknown, Dim::Known)));
        } else {
            dims.resize(n + 2, Dim::Unknown);
        }
        return Some(Shape::ranked(dims));
    }
    let win = window(ctx, n, Some(1));
    let output_padding = per_axis(ctx, "output_padding", n, 0, 0);
    for i in 0..n {
        let input = dim_at(xd, i + 2);
        let out = match (&win, &output_padding) {
            (Some(win), Some(op)) => dim_of(win.transpose_output(i, &input, op[i])),
            _ => Dim::Unknown,
        };
        dims.push(out);
    }
    Some(Shape::ranked(dims))
}

/// MaxPool, AveragePool, LpPool: `[N, C, windows…]`, the kernel from `kernel_shape`.
fn pool_shape(ctx: &Ctx<'_, '_>) -> Option<Shape> {
    let n = spatial_rank(ctx, 0, None)?;
    let xd = ctx.dims(0);
    let mut dims = vec![dim_at(xd, 0), dim_at(xd, 1)];
    let ceil_mode = ctx.int("ceil_mode", 0) != 0;
    let win = window(ctx, n, None);
    for i in 0..n {
        let input = dim_at(xd, i + 2);
        dims.push(win.as_ref().map_or(Dim::Unknown, |win| win.output(i, &input, ceil_mode)));
    }
    Some(Shape::ranked(dims))
}

/// MaxUnpool: the `output_shape` input when given, else `(in - 1) * s + k - pads`.
fn max_unpool_shape(ctx: &Ctx<'_, '_>) -> Option<Shape> {
    if ctx.inputs.len() > 2 {
        if let Some(v) = ctx.value(2) {
            return Some(Shape::ranked(v.iter().map(tensor::value_dim).collect()));
        }
        return match ctx.rank(0) {
            Some(r) => Some(Shape::ranked(vec![Dim::Unknown; r])),
            None => match ctx.dims(2) {
                Some([Dim::Known(r)]) if *r <= crate::shape::MAX_RANK => {
                    Some(Shape::ranked(vec![Dim::Unknown; *r as usize]))
                }
                _ => None,
            },
        };
    }
    let n = spatial_rank(ctx, 0, None)?;
    let xd = ctx.dims(0);
    let mut dims = vec![dim_at(xd, 0), dim_at(xd, 1)];
    let win = window(ctx, n, None);
    for i in 0..n {
        let input = dim_at(xd, i + 2);
        let out = win.as_ref().and_then(|w| {
            let k = w.kernel[i].as_ref()?;
            let (pb, pe) = (w.pads[i], w.pads[i + n]);
            input.to_poly()?.sub(&c(1))?.mul(&c(w.strides[i]))?.add(k)?.sub(&c(pb))?.sub(&c(pe))
        });
        dims.push(dim_of(out));
    }
    Some(Shape::ranked(dims))
}

/// MaxRoiPool `[num_rois, C, pooled_shape…]`, RoiAlign `[num_rois, C, output_height, output_width]`.
fn roi_shape(ctx: &Ctx<'_, '_>) -> Shape {
    let mut rois = dim_at(ctx.dims(1), 0);
    if ctx.op == "RoiAlign" && matches!(rois, Dim::Unknown) {
        rois = dim_at(ctx.dims(2), 0);
    }
    let channels = dim_at(ctx.dims(0), 1);
    let size = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok()).map_or(Dim::Unknown, Dim::Known);
    let pooled: Vec<Dim> = if ctx.op == "RoiAlign" {
        vec![size(Some(ctx.int("output_height", 1))), size(Some(ctx.int("output_width", 1)))]
    } else {
        match ints_attr(ctx, "pooled_shape") {
            Some(p) => p.iter().map(|&v| size(Some(v))).collect(),
            None => vec![Dim::Unknown; 2],
        }
    };
    Shape::ranked([rois, channels].into_iter().chain(pooled).collect())
}

/// numpy matmul: batch dims broadcast, `[…, n, k] × […, k, m] → […, n, m]`; a 1-D operand gains a dim (prepended
/// for A, appended for B) that the result then drops.
pub fn matmul_shape(a: Option<&[Dim]>, b: Option<&[Dim]>) -> Shape {
    let (Some(a), Some(b)) = (a, b) else { return Shape::unranked() };
    if a.is_empty() || b.is_empty() {
        return Shape::unranked();
    }
    let (a_batch, n) = match a.len() {
        1 => (&a[..0], None),
        l => (&a[..l - 2], Some(a[l - 2].clone())),
    };
    let (b_batch, m) = match b.len() {
        1 => (&b[..0], None),
        l => (&b[..l - 2], Some(b[l - 1].clone())),
    };
    let batch = rules::multidirectional(&[&Shape::ranked(a_batch.to_vec()), &Shape::ranked(b_batch.to_vec())]);
    let mut dims = match batch.output.0 {
        Some(d) => d,
        // Batch dims that cannot broadcast: the model fails there; the rank is still known.
        None => vec![Dim::Unknown; a_batch.len().max(b_batch.len())],
    };
    dims.extend(n);
    dims.extend(m);
    Shape::ranked(dims)
}

/// Y, then the statistics: `running_mean, running_var` from opset 14 (training mode), `mean, var, saved_mean,
/// saved_var` before. Each has the shape of the `mean` input: `[C]`, or per activation with `spatial=0`.
fn batch_norm(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let y = ValueFacts::tensor(ctx.elem(0), ctx.shape(0));
    let mean = ctx.shape(3);
    let stat_shape = if mean.rank().is_some() {
        mean
    } else if ctx.opset >= 9 || ctx.int("spatial", 1) != 0 {
        Shape::ranked(vec![dim_at(ctx.dims(0), 1)])
    } else {
        Shape::unranked()
    };
    let elem = if ctx.opset >= 15 { ctx.elem(3) } else { ctx.elem(0) };
    let stat = ValueFacts::tensor(elem, stat_shape);
    vec![y, stat.clone(), stat.clone(), stat.clone(), stat]
}

/// Y, then Mean and InvStdDev: X's shape with every axis from `axis` on reduced to 1, of the `stash_type` type.
fn layer_norm(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let y = ValueFacts::tensor(ctx.elem(0), ctx.shape(0));
    let axis = ctx.int("axis", -1);
    let stat_shape = ctx
        .dims(0)
        .and_then(|d| {
            let a = normalize_axis(axis, d.len())?;
            Some(Shape::ranked(
                d.iter().enumerate().map(|(i, d)| if i < a { d.clone() } else { Dim::Known(1) }).collect(),
            ))
        })
        .unwrap_or_default();
    let elem = i32::try_from(ctx.int("stash_type", 1)).ok();
    let stat = ValueFacts::tensor(elem, stat_shape);
    vec![y, stat.clone(), stat]
}

/// RNN, GRU, LSTM: `Y` `[seq, dirs, batch, hidden]` (layout 0) or `[batch, seq, dirs, hidden]` (layout 1), `Y_h`
/// (and LSTM's `Y_c`) `[dirs, batch, hidden]` or `[batch, dirs, hidden]`.
fn recurrent(ctx: &Ctx<'_, '_>, gates: i64, cell: bool) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let layout = ctx.int("layout", 0);
    let (seq, batch) = match ctx.dims(0) {
        Some([a, b, _]) if layout == 0 => (a.clone(), b.clone()),
        Some([a, b, _]) if layout == 1 => (b.clone(), a.clone()),
        _ => (Dim::Unknown, Dim::Unknown),
    };
    let dirs = match ctx.attrs.string("direction") {
        None | Some(b"forward" | b"reverse") => Dim::Known(1),
        Some(b"bidirectional") => Dim::Known(2),
        Some(_) => dim_at(ctx.dims(1), 0),
    };
    let hidden = match ctx.attrs.int("hidden_size") {
        Some(h) if h > 0 => Dim::Known(h as u64),
        _ => match (ctx.dims(2), ctx.dims(1)) {
            (Some([_, _, h]), _) => h.clone(),
            (_, Some([_, gh, _])) => dim_of(gh.to_poly().and_then(|p| p.div_floor(gates))),
            _ => Dim::Unknown,
        },
    };
    let (y, state) = match layout {
        0 => (
            Shape::ranked(vec![seq, dirs.clone(), batch.clone(), hidden.clone()]),
            Shape::ranked(vec![dirs, batch, hidden]),
        ),
        1 => (
            Shape::ranked(vec![batch.clone(), seq, dirs.clone(), hidden.clone()]),
            Shape::ranked(vec![batch, dirs, hidden]),
        ),
        _ => (Shape::unranked(), Shape::unranked()),
    };
    let state = ValueFacts::tensor(elem, state);
    let mut out = vec![ValueFacts::tensor(elem, y), state.clone()];
    if cell {
        out.push(state);
    }
    out
}

/// One operand (or the result) of an Einsum equation: labels before and after an optional ellipsis.
struct Term {
    before: Vec<u8>,
    ellipsis: bool,
    after: Vec<u8>,
}

impl Term {
    fn parse(text: &[u8]) -> Option<Term> {
        let (before, ellipsis, after) = match text.windows(3).position(|w| w == b"...") {
            Some(p) => (&text[..p], true, &text[p + 3..]),
            None => (text, false, &text[..0]),
        };
        let labels = |t: &[u8]| t.iter().all(u8::is_ascii_alphabetic).then(|| t.to_vec());
        Some(Term { before: labels(before)?, ellipsis, after: labels(after)? })
    }

    fn labels(&self) -> impl Iterator<Item = &u8> {
        self.before.iter().chain(&self.after)
    }
}

/// The size a label takes: every occurrence must agree (or, where a runtime broadcasts labels, be 1).
fn label_dim(dims: &[Dim]) -> Dim {
    let big: Vec<&Dim> = dims.iter().filter(|d| !d.is_one()).collect();
    if big.is_empty() {
        return if dims.is_empty() { Dim::Unknown } else { Dim::Known(1) };
    }
    let known: Vec<u64> = big.iter().filter_map(|d| d.known()).collect();
    if let Some(&k) = known.first() {
        return if known.iter().all(|&x| x == k) { Dim::Known(k) } else { Dim::Unknown };
    }
    if big.iter().all(|d| d.provably_eq(big[0])) {
        big[0].clone()
    } else {
        Dim::Unknown
    }
}

fn einsum_shape(ctx: &Ctx<'_, '_>) -> Option<Shape> {
    let equation: Vec<u8> =
        ctx.attrs.string("equation")?.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    let (lhs, rhs) = match equation.windows(2).position(|w| w == b"->") {
        Some(p) => (&equation[..p], Some(&equation[p + 2..])),
        None => (&equation[..], None),
    };
    let terms: Vec<Term> = lhs.split(|&b| b == b',').map(Term::parse).collect::<Option<_>>()?;
    if terms.len() != ctx.inputs.len() {
        return None;
    }
    let mut labels: BTreeMap<u8, Vec<Dim>> = BTreeMap::new();
    let mut counts: BTreeMap<u8, usize> = BTreeMap::new();
    // The ellipsis dims of each operand that has one; `None` when some operand's rank is unknown.
    let mut ellipses: Option<Vec<Shape>> = Some(Vec::new());
    let mut any_ellipsis = false;
    for (i, term) in terms.iter().enumerate() {
        for &l in term.labels() {
            *counts.entry(l).or_default() += 1;
            labels.entry(l).or_default();
        }
        any_ellipsis |= term.ellipsis;
        let Some(dims) = ctx.dims(i) else {
            if term.ellipsis {
                ellipses = None;
            }
            continue;
        };
        let named = term.before.len() + term.after.len();
        let covered = if term.ellipsis { dims.len().checked_sub(named)? } else { 0 };
        if !term.ellipsis && dims.len() != named {
            return None;
        }
        let tail = term.before.len() + covered;
        for (k, &l) in term.before.iter().enumerate() {
            labels.entry(l).or_default().push(dims[k].clone());
        }
        for (k, &l) in term.after.iter().enumerate() {
            labels.entry(l).or_default().push(dims[tail + k].clone());
        }
        if term.ellipsis {
            if let Some(e) = ellipses.as_mut() {
                e.push(Shape::ranked(dims[term.before.len()..tail].to_vec()));
            }
        }
    }
    let ellipsis_dims = ellipses.map(|shapes| {
        let refs: Vec<&Shape> = shapes.iter().collect();
        let rank = shapes.iter().filter_map(Shape::rank).max().unwrap_or(0);
        rules::multidirectional(&refs).output.0.unwrap_or_else(|| vec![Dim::Unknown; rank])
    });
    let output = match rhs {
        Some(rhs) => Term::parse(rhs)?,
        // Implicit output: the ellipsis dims, then the labels used once, in alphabetical (byte) order.
        None => Term {
            before: Vec::new(),
            ellipsis: any_ellipsis,
            after: counts.iter().filter(|(_, &n)| n == 1).map(|(&l, _)| l).collect(),
        },
    };
    // An output label must appear among the operands.
    let resolve = |ls: &[u8]| ls.iter().map(|l| labels.get(l).map(|d| label_dim(d))).collect::<Option<Vec<Dim>>>();
    let mut dims = resolve(&output.before)?;
    if output.ellipsis {
        dims.extend(ellipsis_dims?);
    }
    dims.extend(resolve(&output.after)?);
    Some(Shape::ranked(dims))
}

/// Attention (opset 23): 4-D `[B, heads, seq, head_size]` or 3-D `[B, seq, heads * head_size]` inputs. Outputs
/// Y, present_key, present_value, qk_matmul_output.
fn attention(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let (q, k, v) = (ctx.dims(0), ctx.dims(1), ctx.dims(2));
    let heads = |name: &str| ctx.attrs.int(name).filter(|&h| h > 0);
    let (q_heads, kv_heads) = (heads("q_num_heads"), heads("kv_num_heads"));
    let per_head = |d: Dim, h: Option<i64>| dim_of(d.to_poly().zip(h).and_then(|(p, h)| p.div_floor(h)));
    let batch = dim_at(q, 0);
    // Layout-independent sizes.
    let (q_heads_dim, q_seq, kv_seq, head, v_head, rank) = match q.map(<[Dim]>::len) {
        Some(4) => (dim_at(q, 1), dim_at(q, 2), dim_at(k, 2), dim_at(q, 3), dim_at(v, 3), 4),
        Some(3) => (
            q_heads.map_or(Dim::Unknown, |h| Dim::Known(h as u64)),
            dim_at(q, 1),
            dim_at(k, 1),
            per_head(dim_at(q, 2), q_heads),
            per_head(dim_at(v, 2), kv_heads),
            3,
        ),
        _ => return vec![ValueFacts::tensor(elem, Shape::unranked())],
    };
    let kv_heads_dim = match rank {
        4 => dim_at(k, 1),
        _ => kv_heads.map_or(Dim::Unknown, |h| Dim::Known(h as u64)),
    };
    // Total key length: past + new keys.
    let total = if ctx.inputs.len() > 4 {
        match ctx.dims(4) {
            Some([_, _, past, _]) => dim_of(past.to_poly().zip(kv_seq.to_poly()).and_then(|(p, s)| p.add(&s))),
            _ => Dim::Unknown,
        }
    } else {
        kv_seq.clone()
    };
    let y = if rank == 4 {
        Shape::ranked(vec![batch.clone(), q_heads_dim.clone(), q_seq.clone(), v_head.clone()])
    } else {
        let hidden = v_head.to_poly().zip(q_heads).and_then(|(p, h)| p.mul(&c(h)));
        Shape::ranked(vec![batch.clone(), q_seq.clone(), dim_of(hidden)])
    };
    let present = |size: Dim| {
        ValueFacts::tensor(elem, Shape::ranked(vec![batch.clone(), kv_heads_dim.clone(), total.clone(), size]))
    };
    vec![
        ValueFacts::tensor(elem, y),
        present(head),
        present(v_head),
        ValueFacts::tensor(elem, Shape::ranked(vec![batch.clone(), q_heads_dim, q_seq, total.clone()])),
    ]
}

/// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: `[N, d…]` without reduction, else a scalar; the
/// latter's log_prob has the scores' shape.
fn loss(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let elem = ctx.elem(0);
    let shape = match ctx.attrs.string("reduction") {
        None | Some(b"mean" | b"sum") => Shape::scalar(),
        Some(b"none") => match (ctx.dims(0), ctx.dims(1)) {
            (_, Some(t)) => Shape::ranked(t.to_vec()),
            (Some(x), None) if x.len() >= 2 => {
                Shape::ranked(x.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, d)| d.clone()).collect())
            }
            _ => Shape::unranked(),
        },
        Some(_) => Shape::unranked(),
    };
    vec![ValueFacts::tensor(elem, shape), ValueFacts::tensor(elem, ctx.shape(0))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::AttributeProto;
    use crate::shape::parse_shape;

    use crate::infer::test_support::{int, ints, run_rule, string};

    fn t(shape: &str) -> Option<ValueFacts> {
        Some(ValueFacts::tensor(Some(FLOAT), parse_shape(shape)))
    }

    fn typed(elem: i32, shape: &str) -> Option<ValueFacts> {
        Some(ValueFacts::tensor(Some(elem), parse_shape(shape)))
    }

    fn run(
        op: &str,
        opset: i64,
        attrs: Vec<AttributeProto>,
        inputs: &[Option<ValueFacts>],
        outputs: usize,
    ) -> Vec<ValueFacts> {
        run_rule(infer, op, opset, attrs, inputs, outputs)
    }

    /// The shape of each output, as text.
    fn shapes(
        op: &str,
        opset: i64,
        attrs: Vec<AttributeProto>,
        inputs: &[Option<ValueFacts>],
        outputs: usize,
    ) -> Vec<String> {
        run(op, opset, attrs, inputs, outputs).iter().map(|f| f.shape.to_string()).collect()
    }

    fn shape(op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]) -> String {
        shapes(op, opset, attrs, inputs, 1).remove(0)
    }

    #[test]
    fn conv_same_and_unit_stride_keep_symbols() {
        let x = t("N,3,H,W");
        let w = t("16,3,3,3");
        let same = vec![string("auto_pad", "SAME_UPPER")];
        assert_eq!(shape("Conv", 11, same, &[x.clone(), w.clone()]), "[N, 16, H, W]");
        let pads = vec![ints("pads", &[1, 1, 1, 1])];
        assert_eq!(shape("Conv", 11, pads, &[x.clone(), w.clone()]), "[N, 16, H, W]");
        // The kernel attribute wins over nothing; without pads a 3x3 kernel takes 2 off.
        let valid = vec![ints("kernel_shape", &[3, 3])];
        assert_eq!(shape("Conv", 11, valid, &[x.clone(), w.clone()]), "[N, 16, H - 2, W - 2]");
        let dilated = vec![ints("dilations", &[2, 2])];
        assert_eq!(shape("Conv", 11, dilated, &[x.clone(), w]), "[N, 16, H - 4, W - 4]");
        // Unknown weights: the channel count is unknown, the spatial sizes still follow from kernel_shape.
        let k = vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1, 1, 1, 1])];
        assert_eq!(shape("Conv", 11, k, &[x, None]), "[N, ?, H, W]");
    }

    #[test]
    fn strided_conv_is_a_floor_expression() {
        let x = t("N,3,H,W");
        let w = t("8,3,3,3");
        let attrs = vec![ints("strides", &[2, 2]), ints("pads", &[1, 1, 1, 1])];
        assert_eq!(shape("Conv", 11, attrs, &[x.clone(), w.clone()]), "[N, 8, floor((H + 1) / 2), floor((W + 1) / 2)]");
        let same = vec![ints("strides", &[2, 2]), string("auto_pad", "SAME_LOWER")];
        assert_eq!(shape("Conv", 11, same, &[x, w]), "[N, 8, floor((H + 1) / 2), floor((W + 1) / 2)]");
        // ResNet's stem: 224 → 112.
        let stem = vec![ints("strides", &[2, 2]), ints("pads", &[3, 3, 3, 3])];
        assert_eq!(shape("Conv", 11, stem, &[t("1,3,224,224"), t("64,3,7,7")]), "[1, 64, 112, 112]");
        // Malformed strides: the sizes are unknown, the rank is not.
        let bad = vec![ints("strides", &[2])];
        assert_eq!(shape("Conv", 11, bad, &[t("1,3,8,8"), t("4,3,3,3")]), "[1, 4, ?, ?]");
    }

    #[test]
    fn quantized_convs_take_their_types_and_weights() {
        let out = run("ConvInteger", 10, vec![], &[typed(2, "1,3,8,8"), typed(2, "4,3,3,3")], 1);
        assert_eq!((out[0].elem, out[0].shape.to_string()), (Some(INT32), "[1, 4, 6, 6]".to_string()));
        let s = t("");
        let zp = typed(3, "");
        let inputs = [typed(3, "1,3,8,8"), s.clone(), zp.clone(), typed(3, "4,3,3,3"), s.clone(), zp.clone(), s, zp];
        let out = run("QLinearConv", 10, vec![], &inputs, 1);
        assert_eq!((out[0].elem, out[0].shape.to_string()), (Some(3), "[1, 4, 6, 6]".to_string()));
    }

    #[test]
    fn conv_transpose_output_padding_and_output_shape() {
        let x = t("N,16,H,W");
        let w = t("16,8,4,4");
        let attrs = vec![ints("strides", &[2, 2]), ints("pads", &[1, 1, 1, 1])];
        assert_eq!(shape("ConvTranspose", 11, attrs, &[x.clone(), w.clone()]), "[N, 8, 2*H, 2*W]");
        let grouped = vec![int("group", 2)];
        assert_eq!(shape("ConvTranspose", 11, grouped, &[x.clone(), w.clone()]), "[N, 16, H + 3, W + 3]");
        let padded = vec![ints("strides", &[2, 2]), ints("pads", &[1, 1, 1, 1]), ints("output_padding", &[1, 0])];
        assert_eq!(shape("ConvTranspose", 11, padded, &[t("1,16,7,7"), t("16,8,3,3")]), "[1, 8, 14, 13]");
        let out = vec![ints("strides", &[2, 2]), ints("output_shape", &[20, 30])];
        assert_eq!(shape("ConvTranspose", 11, out, &[x.clone(), w.clone()]), "[N, 8, 20, 30]");
        let full = vec![ints("output_shape", &[1, 8, 20, 30])];
        assert_eq!(shape("ConvTranspose", 11, full, &[x.clone(), w.clone()]), "[N, 8, 20, 30]");
        let same = vec![ints("strides", &[2, 2]), string("auto_pad", "SAME_UPPER")];
        assert_eq!(shape("ConvTranspose", 11, same, &[x.clone(), w.clone()]), "[N, 8, 2*H, 2*W]");
        // SAME with output_padding: the ONNX inference and runtimes disagree.
        let disputed =
            vec![ints("strides", &[2, 2]), string("auto_pad", "SAME_UPPER"), ints("output_padding", &[1, 1])];
        assert_eq!(shape("ConvTranspose", 11, disputed, &[x, w]), "[N, 8, ?, ?]");
    }

    #[test]
    fn pooling_ceil_mode() {
        let x = t("1,3,32,32");
        let k = || vec![ints("kernel_shape", &[3, 3]), ints("strides", &[2, 2])];
        let out = run("MaxPool", 12, k(), std::slice::from_ref(&x), 2);
        assert_eq!(out[0].shape.to_string(), "[1, 3, 15, 15]");
        assert_eq!((out[1].elem, out[1].shape.to_string()), (Some(INT64), "[1, 3, 15, 15]".to_string()));
        let ceil = [k(), vec![int("ceil_mode", 1)]].concat();
        assert_eq!(shape("MaxPool", 12, ceil.clone(), &[x]), "[1, 3, 16, 16]");
        assert_eq!(shape("MaxPool", 12, ceil, &[t("N,C,H,W")]), "[N, C, floor(H / 2), floor(W / 2)]");
        // A last window that would start in the end padding: dropped by newer definitions, kept by older ones.
        let edge = vec![ints("kernel_shape", &[2]), ints("strides", &[2]), ints("pads", &[0, 1]), int("ceil_mode", 1)];
        assert_eq!(shape("AveragePool", 19, edge.clone(), &[t("1,1,4")]), "[1, 1, ?]");
        assert_eq!(shape("AveragePool", 19, edge.clone(), &[t("1,1,5")]), "[1, 1, 3]");
        assert_eq!(shape("AveragePool", 19, edge, &[t("1,1,L")]), "[1, 1, ?]");
        let global = run("GlobalAveragePool", 1, vec![], &[t("N,C,H,W")], 1);
        assert_eq!(global[0].shape.to_string(), "[N, C, 1, 1]");
        let same = vec![ints("kernel_shape", &[3]), ints("strides", &[2]), string("auto_pad", "SAME_UPPER")];
        assert_eq!(shape("LpPool", 18, same, &[t("N,C,L")]), "[N, C, floor((L + 1) / 2)]");
        let unpool = vec![ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])];
        assert_eq!(shape("MaxUnpool", 11, unpool, &[t("N,C,H,W"), typed(INT64, "N,C,H,W")]), "[N, C, 2*H, 2*W]");
    }

    #[test]
    fn matmul_broadcasts_batch_dims() {
        assert_eq!(shape("MatMul", 13, vec![], &[t("N,1,3,4"), t("5,4,6")]), "[N, 5, 3, 6]");
        assert_eq!(shape("MatMul", 13, vec![], &[t("4"), t("4")]), "[]");
        assert_eq!(shape("MatMul", 13, vec![], &[t("4"), t("N,4,6")]), "[N, 6]");
        assert_eq!(shape("MatMul", 13, vec![], &[t("B,S,4"), t("4")]), "[B, S]");
        assert_eq!(shape("MatMul", 13, vec![], &[t("2,3,4"), t("3,4,5")]), "[?, 3, 5]");
        assert_eq!(shape("MatMul", 13, vec![], &[t("*"), t("4,5")]), "[unknown rank]");
        let out = run("MatMulInteger", 10, vec![], &[typed(2, "M,K"), typed(2, "K,N")], 1);
        assert_eq!((out[0].elem, out[0].shape.to_string()), (Some(INT32), "[M, N]".to_string()));
    }

    #[test]
    fn einsum_explicit_implicit_and_ellipsis() {
        let attr = |eq: &str| vec![string("equation", eq)];
        assert_eq!(shape("Einsum", 12, attr("bij,bjk->bik"), &[t("B,I,J"), t("B,J,K")]), "[B, I, K]");
        assert_eq!(shape("Einsum", 12, attr("ij,jk"), &[t("2,3"), t("3,4")]), "[2, 4]");
        assert_eq!(shape("Einsum", 12, attr("...ij,...jk"), &[t("N,1,3,4"), t("5,4,6")]), "[N, 5, 3, 6]");
        assert_eq!(shape("Einsum", 12, attr("... ij, ... jk -> ... ik"), &[t("N,3,4"), t("4,6")]), "[N, 3, 6]");
        assert_eq!(shape("Einsum", 12, attr("ij->ji"), &[t("A,B")]), "[B, A]");
        assert_eq!(shape("Einsum", 12, attr("ii"), &[t("3,3")]), "[]");
        assert_eq!(shape("Einsum", 12, attr("i,i->"), &[t("N"), t("N")]), "[]");
        assert_eq!(shape("Einsum", 12, attr("bhqd,bhkd->bhqk"), &[t("B,8,Q,64"), t("B,8,K,64")]), "[B, 8, Q, K]");
        // Implicit labels are sorted: uppercase before lowercase.
        assert_eq!(shape("Einsum", 12, attr("aB"), &[t("2,3")]), "[3, 2]");
        // A label the operands do not have, or a rank that does not fit: nothing is claimed.
        assert_eq!(shape("Einsum", 12, attr("ij->iz"), &[t("2,3")]), "[unknown rank]");
        assert_eq!(shape("Einsum", 12, attr("ijk->i"), &[t("2,3")]), "[unknown rank]");
        assert_eq!(shape("Einsum", 12, attr("...i->i"), &[t("*")]), "[?]");
    }

    #[test]
    fn recurrent_layouts_and_directions() {
        let bi = || vec![string("direction", "bidirectional"), int("hidden_size", 20)];
        let w = t("2,80,10");
        let r = t("2,80,20");
        let out = shapes("LSTM", 14, bi(), &[t("S,B,10"), w.clone(), r.clone()], 3);
        assert_eq!(out, ["[S, 2, B, 20]", "[2, B, 20]", "[2, B, 20]"]);
        let layout1 = [bi(), vec![int("layout", 1)]].concat();
        let out = shapes("LSTM", 14, layout1, &[t("B,S,10"), w, r.clone()], 3);
        assert_eq!(out, ["[B, S, 2, 20]", "[B, 2, 20]", "[B, 2, 20]"]);
        // The hidden size from R, else from W's rows over the gate count.
        let out = shapes("GRU", 7, vec![], &[t("S,B,10"), t("1,60,10"), None], 3);
        assert_eq!(out, ["[S, 1, B, 20]", "[1, B, 20]", "[unknown rank]"]);
        let out = shapes("RNN", 7, vec![string("direction", "reverse")], &[t("S,B,10"), t("1,H,10"), t("1,H,H")], 2);
        assert_eq!(out, ["[S, 1, B, H]", "[1, B, H]"]);
    }

    #[test]
    fn normalizations() {
        let x = t("N,C,H,W");
        let bn = || vec![x.clone(), t("C"), t("C"), t("C"), t("C")];
        let out = shapes("BatchNormalization", 15, vec![int("training_mode", 1)], &bn(), 3);
        assert_eq!(out, ["[N, C, H, W]", "[C]", "[C]"]);
        let out = shapes("BatchNormalization", 7, vec![], &[x.clone(), t("C"), t("C"), None, None], 5);
        assert_eq!(out, ["[N, C, H, W]", "[C]", "[C]", "[C]", "[C]"]);
        let out = run("LayerNormalization", 17, vec![int("axis", -2)], &[typed(10, "B,S,D"), t("S,D"), t("S,D")], 3);
        let got: Vec<_> = out.iter().map(|f| (f.elem, f.shape.to_string())).collect();
        assert_eq!(
            got,
            [
                (Some(10), "[B, S, D]".to_string()),
                (Some(FLOAT), "[B, 1, 1]".to_string()),
                (Some(FLOAT), "[B, 1, 1]".to_string())
            ]
        );
        assert_eq!(shape("InstanceNormalization", 6, vec![], &[x.clone(), t("C"), t("C")]), "[N, C, H, W]");
        let roi = shape("RoiAlign", 16, vec![int("output_height", 7), int("output_width", 7)], &[x, t("R,4"), t("R")]);
        assert_eq!(roi, "[R, C, 7, 7]");
    }

    #[test]
    fn quantization_types() {
        let elem = |op: &str, opset: i64, attrs: Vec<AttributeProto>, inputs: &[Option<ValueFacts>]| {
            run(op, opset, attrs, inputs, 1)[0].elem
        };
        let x = t("N,4");
        assert_eq!(elem("QuantizeLinear", 13, vec![], &[x.clone(), t("")]), Some(UINT8));
        assert_eq!(elem("QuantizeLinear", 13, vec![], &[x.clone(), t(""), typed(3, "")]), Some(3));
        assert_eq!(elem("QuantizeLinear", 21, vec![int("output_dtype", 17)], &[x.clone(), t("")]), Some(17));
        assert_eq!(elem("DequantizeLinear", 13, vec![], &[typed(2, "N,4"), t(""), typed(2, "")]), Some(FLOAT));
        assert_eq!(elem("DequantizeLinear", 19, vec![], &[typed(2, "N,4"), typed(10, ""), typed(2, "")]), Some(10));
        let out = run("DynamicQuantizeLinear", 11, vec![], &[x], 3);
        let got: Vec<_> = out.iter().map(|f| (f.elem, f.shape.to_string())).collect();
        assert_eq!(
            got,
            [(Some(UINT8), "[N, 4]".to_string()), (Some(FLOAT), "[]".to_string()), (Some(UINT8), "[]".to_string())]
        );
    }

    #[test]
    fn attention_and_losses() {
        let out = shapes("Attention", 23, vec![], &[t("B,8,L,64"), t("B,2,S,64"), t("B,2,S,32")], 4);
        assert_eq!(out, ["[B, 8, L, 32]", "[B, 2, S, 64]", "[B, 2, S, 32]", "[B, 8, L, S]"]);
        let heads = vec![int("q_num_heads", 8), int("kv_num_heads", 2)];
        let inputs = [t("B,L,512"), t("B,S,128"), t("B,S,128"), None, t("B,2,P,64"), t("B,2,P,64")];
        let out = shapes("Attention", 23, heads, &inputs, 3);
        assert_eq!(out, ["[B, L, 512]", "[B, 2, P + S, 64]", "[B, 2, P + S, 64]"]);
        let none = vec![string("reduction", "none")];
        let out = shapes("SoftmaxCrossEntropyLoss", 13, none, &[t("N,C,D"), typed(INT64, "N,D")], 2);
        assert_eq!(out, ["[N, D]", "[N, C, D]"]);
        assert_eq!(shape("NegativeLogLikelihoodLoss", 13, vec![], &[t("N,C"), typed(INT64, "N")]), "[]");
    }
}
