//! Shape inference for sliding-window ops: convolutions (and their transposes), pooling, unpooling and RoI
//! pooling. Sizes are polynomials: a stride-1 'same' convolution keeps `H`, a strided one is a floor expression.

use super::{c, dim_at, dim_of, ints_attr, At, Contradiction, Ctx, Detail, Malformed, RankNeed, Requirement, Whence};
use crate::onnx::tensor::{self, ValueFacts, INT32, INT64};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::{memo, Poly};

/// The sliding-window ops' outputs, and what each requires of its inputs.
pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        "Conv" => {
            let lists = Lists::of(ctx);
            ctx.require_same_type(&[0, 1, 2]);
            conv_requirements(ctx, &lists, 0, 1, Some(2));
            vec![conv(ctx, &lists, 0, 1, ctx.elem(0))]
        }
        "DeformConv" => {
            let lists = Lists::of(ctx);
            conv_requirements(ctx, &lists, 0, 1, Some(3));
            vec![conv(ctx, &lists, 0, 1, ctx.elem(0))]
        }
        "ConvInteger" => {
            let lists = Lists::of(ctx);
            conv_requirements(ctx, &lists, 0, 1, None);
            vec![conv(ctx, &lists, 0, 1, Some(INT32))]
        }
        "QLinearConv" => {
            let lists = Lists::of(ctx);
            conv_requirements(ctx, &lists, 0, 3, Some(8));
            vec![conv(ctx, &lists, 0, 3, ctx.elem(7))]
        }
        "ConvTranspose" => {
            let lists = Lists::of(ctx);
            ctx.require_same_type(&[0, 1, 2]);
            conv_transpose_requirements(ctx, &lists);
            vec![ValueFacts::tensor(ctx.elem(0), conv_transpose_shape(ctx, &lists).unwrap_or_default())]
        }
        "MaxPool" => {
            let lists = Lists::of(ctx);
            pool_requirements(ctx, &lists);
            let y = ValueFacts::tensor(ctx.elem(0), pool_shape(ctx, &lists).unwrap_or_default());
            let indices = ValueFacts::tensor(Some(INT64), y.shape.clone());
            vec![y, indices]
        }
        "AveragePool" | "LpPool" => {
            let lists = Lists::of(ctx);
            pool_requirements(ctx, &lists);
            vec![ValueFacts::tensor(ctx.elem(0), pool_shape(ctx, &lists).unwrap_or_default())]
        }
        "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool" => {
            let shape = ctx.dims(0).map_or_else(Shape::unranked, |d| {
                Shape::ranked(
                    d.iter().enumerate().map(|(i, d)| if i < 2 { d.clone() } else { Dim::Known(1) }).collect(),
                )
            });
            vec![ValueFacts::tensor(ctx.elem(0), shape)]
        }
        "MaxUnpool" => {
            // ONNX MaxUnpool: the indices `I` are of X's shape, (N x C x D1 ...) at least.
            ctx.require_rank(1, RankNeed::AtLeast(2));
            vec![ValueFacts::tensor(ctx.elem(0), max_unpool_shape(ctx, &Lists::of(ctx)).unwrap_or_default())]
        }
        "MaxRoiPool" | "RoiAlign" => vec![ValueFacts::tensor(ctx.elem(0), roi_shape(ctx))],
        _ => return None,
    })
}

/// A window op's attributes, each looked up once: a Conv asked for them some twenty times, each a search of the
/// node's attributes by name. The lists as [`ints_attr`] reads them (an empty one as absent).
struct Lists<'m> {
    kernel_shape: Option<&'m [i64]>,
    strides: Option<&'m [i64]>,
    dilations: Option<&'m [i64]>,
    pads: Option<&'m [i64]>,
    output_padding: Option<&'m [i64]>,
    output_shape: Option<&'m [i64]>,
    auto_pad: Option<&'m [u8]>,
}

impl<'m> Lists<'m> {
    fn of(ctx: &Ctx<'_, 'm>) -> Lists<'m> {
        Lists {
            kernel_shape: ints_attr(ctx, "kernel_shape"),
            strides: ints_attr(ctx, "strides"),
            dilations: ints_attr(ctx, "dilations"),
            pads: ints_attr(ctx, "pads"),
            output_padding: ints_attr(ctx, "output_padding"),
            output_shape: ints_attr(ctx, "output_shape"),
            auto_pad: ctx.attrs.string("auto_pad"),
        }
    }
}

/// A per-axis int list attribute (`given`): `default` on every axis when absent, `None` when its length is wrong or
/// a value is below `min`.
fn per_axis(given: Option<&[i64]>, len: usize, default: i64, min: i64) -> Option<Vec<i64>> {
    match given {
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
fn window(ctx: &Ctx<'_, '_>, lists: &Lists<'_>, n: usize, weights: Option<usize>) -> Option<Window> {
    let auto_pad = match lists.auto_pad {
        None | Some(b"NOTSET" | b"") => AutoPad::NotSet,
        Some(b"SAME_UPPER" | b"SAME_LOWER") => AutoPad::Same,
        Some(b"VALID") => AutoPad::Valid,
        Some(_) => return None,
    };
    let strides = per_axis(lists.strides, n, 1, 1)?;
    let dilations = per_axis(lists.dilations, n, 1, 1)?;
    let pads = per_axis(lists.pads, 2 * n, 0, i64::MIN)?;
    let kernel = match lists.kernel_shape {
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
    pub(super) fn effective_kernel(&self, i: usize) -> Option<Poly> {
        effective_kernel(self.kernel[i].as_ref(), self.dilations[i])
    }

    /// Explicit pads of axis `i`; none for VALID.
    pub(super) fn pads(&self, i: usize) -> (i64, i64) {
        match self.auto_pad {
            AutoPad::NotSet => (self.pads[i], self.pads[i + self.n()]),
            _ => (0, 0),
        }
    }

    /// The output size of a convolution or pooling window along spatial axis `i`.
    fn output(&self, i: usize, input: &Dim, ceil_mode: bool) -> Dim {
        dim_of(self.output_poly(i, input, ceil_mode))
    }

    /// The output size along spatial axis `i`, worked out once per thread for each input size and window: every
    /// convolution of a network's stage asks the same.
    pub(super) fn output_poly(&self, i: usize, input: &Dim, ceil_mode: bool) -> Option<Poly> {
        thread_local! {
            static OUTPUTS: memo::Table<Axis, Option<Poly>> = Default::default();
        }
        let axis = Axis {
            input: input.clone(),
            kernel: self.kernel[i].clone(),
            stride: self.strides[i],
            dilation: self.dilations[i],
            pads: self.pads(i),
            same: self.auto_pad == AutoPad::Same,
            ceil_mode,
        };
        memo::remembered(&OUTPUTS, axis, Axis::output)
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

/// What a window's output size along one axis depends on.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Axis {
    input: Dim,
    kernel: Option<Poly>,
    stride: i64,
    dilation: i64,
    /// Explicit pads, begin and end.
    pads: (i64, i64),
    /// SAME_UPPER or SAME_LOWER.
    same: bool,
    ceil_mode: bool,
}

impl Axis {
    fn output(&self) -> Option<Poly> {
        let s = self.stride;
        let x = self.input.to_poly()?;
        let ek = effective_kernel(self.kernel.as_ref(), self.dilation);
        if self.same {
            // ceil(in / s) in both the ONNX inference and runtimes. In ceil mode a kernel narrower than the stride
            // gets no padding and the window count can exceed that; left unknown.
            let spans_stride = ek.as_ref().and_then(Poly::as_constant).is_some_and(|e| e >= s);
            if self.ceil_mode && s > 1 && !spans_stride {
                return None;
            }
            return x.div_ceil(s);
        }
        let (pb, pe) = self.pads;
        let ek = ek?;
        let span = x.add(&c(pb))?.add(&c(pe))?.sub(&ek)?;
        if !self.ceil_mode {
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
}

/// `(k - 1) * dilation + 1`.
fn effective_kernel(kernel: Option<&Poly>, dilation: i64) -> Option<Poly> {
    kernel?.sub(&c(1))?.mul(&c(dilation))?.add(&c(1))
}

/// The number of spatial axes: from the data's rank, else the weights' rank, else the kernel attribute.
fn spatial_rank(ctx: &Ctx<'_, '_>, lists: &Lists<'_>, x: usize, w: Option<usize>) -> Option<usize> {
    if let Some(d) = ctx.dims(x) {
        return d.len().checked_sub(2);
    }
    if let Some(d) = w.and_then(|w| ctx.dims(w)) {
        return d.len().checked_sub(2);
    }
    lists.kernel_shape.map(<[i64]>::len)
}

/// Conv, ConvInteger, QLinearConv, DeformConv: data `x`, weights `w` of shape `[M, C/group, k…]`.
fn conv(ctx: &Ctx<'_, '_>, lists: &Lists<'_>, x: usize, w: usize, elem: Option<i32>) -> ValueFacts {
    ValueFacts::tensor(elem, conv_shape(ctx, lists, x, w).unwrap_or_default())
}

fn conv_shape(ctx: &Ctx<'_, '_>, lists: &Lists<'_>, x: usize, w: usize) -> Option<Shape> {
    let n = spatial_rank(ctx, lists, x, Some(w))?;
    let xd = ctx.dims(x);
    let mut dims = vec![dim_at(xd, 0), dim_at(ctx.dims(w), 0)];
    let win = window(ctx, lists, n, Some(w));
    for i in 0..n {
        let input = dim_at(xd, i + 2);
        let out = win.as_ref().and_then(|win| win.output_poly(i, &input, false));
        // onnxruntime refuses a convolution with no window ("Invalid input shape"); pooling gives size 0 there.
        if let (Some(win), Some(o)) = (&win, out.as_ref().and_then(Poly::as_constant)) {
            if o <= 0 {
                let span = win.effective_kernel(i).map_or(Dim::Unknown, Dim::from_poly);
                let detail = Detail::Kernel { at: At::new(x, i + 2, input), span, pads: win.pads(i) };
                ctx.report(Contradiction::violated(Requirement::KernelFits, vec![x, w], detail));
            }
        }
        dims.push(dim_of(out));
    }
    Some(Shape::ranked(dims))
}

/// What a convolution (ONNX `Conv`, "X … (N x C x D1 x D2 … x Dn)", "W … (M x C/group x kH x kW)", "B … 1D bias of
/// size M") requires of its inputs, with onnxruntime's reading: W of X's rank; X's channels W's times `group`; M
/// divisible by `group`; `kernel_shape`, when given, W's spatial dims; the per-axis attributes as long as the
/// spatial rank (data `x`, weights `w`, bias `b`).
fn conv_requirements(ctx: &mut Ctx<'_, '_>, lists: &Lists<'_>, x: usize, w: usize, b: Option<usize>) {
    if !window_attributes(ctx, lists, x)
        || !ctx.require_rank(x, RankNeed::AtLeast(3))
        || !ctx.require_rank(w, RankNeed::Of(x))
    {
        return;
    }
    let (Some(xd), Some(wd)) = (ctx.dims(x), ctx.dims(w)) else { return };
    let given = [("kernel_shape", lists.kernel_shape), ("strides", lists.strides), ("dilations", lists.dilations)];
    lists_fit(ctx, lists, xd.len() - 2, &given, x);
    let group = ctx.int("group", 1);
    if group >= 1 {
        let channels = dim_of(wd[1].to_poly().and_then(|c| c.scale(group)));
        let at = At::new(x, 1, xd[1].clone());
        ctx.require_size(Requirement::Channels, vec![x, w], at, channels, Whence::WeightChannels { group });
        ctx.divide(Requirement::Channels, vec![w], 0, &wd[0], &Dim::Known(group as u64));
    }
    if let Some(k) = lists.kernel_shape.filter(|k| k.len() + 2 == wd.len()) {
        for (i, &size) in k.iter().enumerate() {
            let at = At::new(w, i + 2, wd[i + 2].clone());
            let size = u64::try_from(size).map_or(Dim::Unknown, Dim::Known);
            ctx.require_size(Requirement::Channels, vec![w], at, size, Whence::Required);
        }
    }
    if let Some(b) = b.filter(|&b| ctx.has_input(b)) {
        if ctx.require_rank(b, RankNeed::Exactly(1)) {
            if let Some(bd) = ctx.dims(b) {
                ctx.require_equal(Requirement::Channels, At::new(b, 0, bd[0].clone()), At::new(w, 0, wd[0].clone()));
            }
        }
    }
}

/// ConvTranspose (ONNX: "W … (C x M/group x kH x kW)", "B … of size M"): X's channels are W's first dim, the
/// bias as many as W's second dim times `group`.
fn conv_transpose_requirements(ctx: &Ctx<'_, '_>, lists: &Lists<'_>) {
    if !window_attributes(ctx, lists, 0)
        || !ctx.require_rank(0, RankNeed::AtLeast(3))
        || !ctx.require_rank(1, RankNeed::Of(0))
    {
        return;
    }
    let (Some(xd), Some(wd)) = (ctx.dims(0), ctx.dims(1)) else { return };
    let given = [
        ("kernel_shape", lists.kernel_shape),
        ("strides", lists.strides),
        ("dilations", lists.dilations),
        ("output_padding", lists.output_padding),
    ];
    lists_fit(ctx, lists, xd.len() - 2, &given, 0);
    ctx.require_equal(Requirement::Channels, At::new(0, 1, xd[1].clone()), At::new(1, 0, wd[0].clone()));
    let group = ctx.int("group", 1);
    if let (Some(bd), true) = (ctx.dims(2), group >= 1) {
        if ctx.require_rank(2, RankNeed::Exactly(1)) {
            let m = dim_of(wd[1].to_poly().and_then(|c| c.scale(group)));
            ctx.require_size(Requirement::Channels, vec![1, 2], At::new(2, 0, bd[0].clone()), m, Whence::Required);
        }
    }
}

/// The per-axis attributes `given` (by name) have one entry per spatial axis (`pads` two), when given.
fn lists_fit(ctx: &Ctx<'_, '_>, lists: &Lists<'_>, n: usize, given: &[(&'static str, Option<&[i64]>)], x: usize) {
    let all = given.iter().map(|&(l, v)| (l, v, n)).chain([("pads", lists.pads, 2 * n)]);
    for (list, v, expected) in all {
        if let Some(v) = v.filter(|v| v.len() != expected) {
            let m = Malformed::Length { list, len: v.len(), expected };
            ctx.report(Contradiction::violated(Requirement::ListLength, vec![x], Detail::Malformed(m)));
        }
    }
}

/// The window attributes in range (ONNX's inference, which onnxruntime runs when it loads a model, refuses the
/// others): kernel sizes, strides and dilations positive; pads, output padding and output shape not negative.
/// Whether they are (one finding for the first that is not: what follows from it says nothing more).
fn window_attributes(ctx: &Ctx<'_, '_>, lists: &Lists<'_>, x: usize) -> bool {
    let least = [
        ("kernel_shape", lists.kernel_shape, 1),
        ("strides", lists.strides, 1),
        ("dilations", lists.dilations, 1),
        ("pads", lists.pads, 0),
        ("output_padding", lists.output_padding, 0),
        ("output_shape", lists.output_shape, 0),
    ];
    for (list, given, least) in least {
        if let Some(&value) = given.and_then(|v| v.iter().find(|&&v| v < least)) {
            let m = Malformed::Below { list, value, least };
            ctx.report(Contradiction::violated(Requirement::WindowAttributes, vec![x], Detail::Malformed(m)));
            return false;
        }
    }
    // Convolutions take explicit pads or auto_pad, not both (onnxruntime refuses both, even zero pads; it runs
    // pools given both).
    let auto = lists.auto_pad.filter(|a| !a.is_empty() && *a != b"NOTSET");
    if matches!(ctx.op, "Conv" | "ConvTranspose") && auto.is_some() && lists.pads.is_some() {
        let detail = Detail::Malformed(Malformed::PadsWithAutoPad);
        ctx.report(Contradiction::violated(Requirement::WindowAttributes, vec![x], detail));
        return false;
    }
    true
}

/// Pooling: data of rank 3 or more, its per-axis attributes as long as the spatial rank.
fn pool_requirements(ctx: &Ctx<'_, '_>, lists: &Lists<'_>) {
    if !window_attributes(ctx, lists, 0) || !ctx.require_rank(0, RankNeed::AtLeast(3)) {
        return;
    }
    if let Some(r) = ctx.rank(0) {
        let given = [("kernel_shape", lists.kernel_shape), ("strides", lists.strides), ("dilations", lists.dilations)];
        lists_fit(ctx, lists, r - 2, &given, 0);
    }
}

/// ConvTranspose: weights `[C, M/group, k…]`; output channels `W[1] * group`.
fn conv_transpose_shape(ctx: &Ctx<'_, '_>, lists: &Lists<'_>) -> Option<Shape> {
    let n = spatial_rank(ctx, lists, 0, Some(1))?;
    let xd = ctx.dims(0);
    let group = ctx.int("group", 1);
    let channels = dim_at(ctx.dims(1), 1).to_poly().and_then(|m| m.mul(&c(group)));
    let mut dims = vec![dim_at(xd, 0), if group >= 1 { dim_of(channels) } else { Dim::Unknown }];
    if let Some(out) = lists.output_shape {
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
    let win = window(ctx, lists, n, Some(1));
    let output_padding = per_axis(lists.output_padding, n, 0, 0);
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
fn pool_shape(ctx: &Ctx<'_, '_>, lists: &Lists<'_>) -> Option<Shape> {
    let n = spatial_rank(ctx, lists, 0, None)?;
    let xd = ctx.dims(0);
    let mut dims = vec![dim_at(xd, 0), dim_at(xd, 1)];
    let ceil_mode = ctx.int("ceil_mode", 0) != 0;
    let win = window(ctx, lists, n, None);
    for i in 0..n {
        let input = dim_at(xd, i + 2);
        dims.push(win.as_ref().map_or(Dim::Unknown, |win| win.output(i, &input, ceil_mode)));
    }
    Some(Shape::ranked(dims))
}

/// MaxUnpool: the `output_shape` input when given, else `(in - 1) * s + k - pads`.
fn max_unpool_shape(ctx: &Ctx<'_, '_>, lists: &Lists<'_>) -> Option<Shape> {
    if ctx.inputs.len() > 2 {
        if let Some(v) = ctx.value(2) {
            return Some(Shape::ranked(v.iter().map(tensor::value_dim).collect()));
        }
        return match ctx.rank(0) {
            Some(r) => Some(Shape::ranked(vec![Dim::Unknown; r])),
            None => match ctx.dims(2) {
                Some([Dim::Known(r)]) if *r <= crate::sizes::shape::MAX_RANK => {
                    Some(Shape::ranked(vec![Dim::Unknown; *r as usize]))
                }
                _ => None,
            },
        };
    }
    let n = spatial_rank(ctx, lists, 0, None)?;
    let xd = ctx.dims(0);
    let mut dims = vec![dim_at(xd, 0), dim_at(xd, 1)];
    let win = window(ctx, lists, n, None);
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
pub(super) fn roi_shape(ctx: &Ctx<'_, '_>) -> Shape {
    let mut rois = dim_at(ctx.dims(1), 0);
    // RoiAlign's batch_indices has one entry per RoI: either input may say the count.
    if ctx.op == "RoiAlign" {
        rois = super::attention::unify(&[rois, dim_at(ctx.dims(2), 0)]);
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
