//! Signal processing (ONNX `docs/Operators.md`: DFT-17/20, STFT-17, HannWindow-17, HammingWindow-17,
//! BlackmanWindow-17, MelWeightMatrix-17). Sizes come from scalar inputs (`dft_length`, `frame_step`, a window's
//! `size`) read as values, symbolic where the graph computes them.

use super::require::{At, Contradiction, Detail, RankNeed, Requirement};
use super::{dim_at, dim_of, normalize_axis, Ctx};
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

const FLOAT: i32 = crate::onnx::pb::DataType::Float as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        "DFT" => {
            check_dft(ctx);
            vec![ValueFacts::tensor(ctx.elem(0), dft(ctx))]
        }
        "STFT" => {
            // The signal is `[batch, length, 1 or 2]`; ONNX's inference asks for 2 dims at least.
            ctx.require_rank(0, RankNeed::AtLeast(2));
            vec![ValueFacts::tensor(ctx.elem(0), stft(ctx))]
        }
        // A window of `size` samples, of `output_datatype` (float by default).
        "HannWindow" | "HammingWindow" | "BlackmanWindow" => {
            let size = dim_of(scalar(ctx, 0).filter(|p| p.as_constant().is_none_or(|n| n > 0)));
            vec![ValueFacts::tensor(Some(output_datatype(ctx)), Shape::ranked(vec![size]))]
        }
        // `[floor(dft_length / 2) + 1, num_mel_bins]`.
        "MelWeightMatrix" => {
            let bins = dim_of(scalar(ctx, 0));
            let half = dim_of(scalar(ctx, 1).and_then(|n| n.div_floor(2)?.add(&Poly::constant(1))));
            vec![ValueFacts::tensor(Some(output_datatype(ctx)), Shape::ranked(vec![half, bins]))]
        }
        _ => return None,
    })
}

/// The one element of input `i` (a scalar, or a 1-element tensor), as a polynomial.
fn scalar(ctx: &Ctx<'_, '_>, i: usize) -> Option<Poly> {
    match ctx.value(i)? {
        [v] => v.clone(),
        _ => None,
    }
}

fn output_datatype(ctx: &Ctx<'_, '_>) -> i32 {
    ctx.attrs.int("output_datatype").and_then(|t| i32::try_from(t).ok()).unwrap_or(FLOAT)
}

/// The DFT's input: `[..., 1]` real or `[..., 2]` complex (onnxruntime refuses other last sizes), real for the
/// one-sided transform and complex for its inverse; the signal axis any but that last one.
fn check_dft(ctx: &Ctx<'_, '_>) {
    let Some(d) = ctx.dims(0) else { return };
    if !ctx.require_rank(0, RankNeed::AtLeast(2)) {
        return;
    }
    let rank = d.len();
    let last = At::new(0, rank - 1, d[rank - 1].clone());
    let (onesided, inverse) = (ctx.int("onesided", 0) != 0, ctx.int("inverse", 0) != 0);
    let options = match (onesided, inverse) {
        (true, false) => vec![Dim::Known(1)],
        (true, true) => vec![Dim::Known(2)],
        (false, _) => vec![Dim::Known(1), Dim::Known(2)],
    };
    ctx.require_one_of(Requirement::OperandSizes, vec![0], last, options);
    let axis = match ctx.opset >= 20 {
        true => ctx.ints(2).and_then(|a| (a.len() == 1).then_some(a[0])),
        false => Some(ctx.int("axis", 1)),
    };
    // The axes `-rank..-1` and `0..rank - 1`: an axis of the signal's first `rank - 1` dims.
    if let Some(axis) = axis.filter(|&a| normalize_axis(a, rank).is_none_or(|n| n == rank - 1)) {
        let detail = Detail::AxisOutOfRange { axis, rank };
        ctx.report(Contradiction::violated(Requirement::AxisInRange, vec![0], detail));
    }
}

/// DFT: the input's shape with the signal axis resized and the last axis 2 (complex), or 1 for the inverse
/// one-sided transform (IRFFT). The axis is the `axis` attribute (default 1) at opset 17 and the third input
/// (default -2) from opset 20; it may not be the last.
fn dft(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0).filter(|d| d.len() >= 2) else { return Shape::unranked() };
    let (onesided, inverse) = (ctx.int("onesided", 0) != 0, ctx.int("inverse", 0) != 0);
    let mut dims = d.to_vec();
    let rank = d.len();
    dims[rank - 1] = Dim::Known(if onesided && inverse { 1 } else { 2 });
    let axis = if ctx.opset >= 20 {
        match ctx.has_input(2) {
            true => ctx.ints(2).and_then(|a| (a.len() == 1).then_some(a[0])),
            false => Some(-2),
        }
    } else {
        Some(ctx.int("axis", 1))
    };
    let resized = onesided || ctx.has_input(1);
    let Some(axis) = axis else {
        // An unknown axis: every size but the last may be the one that changes.
        if resized {
            dims[..rank - 1].iter_mut().for_each(|x| *x = Dim::Unknown);
        }
        return Shape::ranked(dims);
    };
    let Some(axis) = normalize_axis(axis, rank).filter(|&a| a < rank - 1) else { return Shape::unranked() };
    let length = if ctx.has_input(1) {
        scalar(ctx, 1)
    } else if onesided && inverse {
        // IRFFT's default length: 2 * (n - 1).
        d[axis].to_poly().and_then(|n| n.sub(&Poly::constant(1))?.scale(2))
    } else {
        d[axis].to_poly()
    };
    dims[axis] = dim_of(if onesided && !inverse {
        // RFFT keeps the non-redundant half: floor(n / 2) + 1 bins.
        length.and_then(|n| n.div_floor(2)?.add(&Poly::constant(1)))
    } else {
        length
    });
    Shape::ranked(dims)
}

/// STFT: `[batch, frames, bins, 2]` with `frames = floor((signal - frame) / frame_step) + 1` and `bins` the frame
/// length, or `floor(frame / 2) + 1` one-sided (the schema's default, 1). The frame length is `frame_length`, else
/// the window's length.
fn stft(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0).filter(|d| d.len() == 3) else { return Shape::ranked(vec![Dim::Unknown; 4]) };
    let frame = if ctx.has_input(3) { scalar(ctx, 3) } else { dim_at(ctx.dims(2), 0).to_poly() };
    let step = scalar(ctx, 1).and_then(|s| s.as_constant()).filter(|&s| s > 0);
    let frames = d[1].to_poly().zip(frame.clone()).zip(step).and_then(|((n, f), s)| {
        let span = n.sub(&f)?;
        // A signal shorter than a frame has no frame to take: the node fails there.
        if span.as_constant().is_some_and(|c| c < 0) {
            return None;
        }
        span.div_floor(s)?.add(&Poly::constant(1))
    });
    let onesided = ctx.int("onesided", 1) != 0;
    let bins = if onesided { frame.and_then(|f| f.div_floor(2)?.add(&Poly::constant(1))) } else { frame };
    Shape::ranked(vec![d[0].clone(), dim_of(frames), dim_of(bins), Dim::Known(2)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::{int, run_rule};
    use crate::onnx::tensor::INT64;

    fn t(dims: &[u64]) -> Option<ValueFacts> {
        Some(ValueFacts::tensor(Some(FLOAT), Shape::known(dims)))
    }

    fn scalar_of(v: i64) -> Option<ValueFacts> {
        Some(ValueFacts {
            value: Some(vec![Some(Poly::constant(v))]),
            ..ValueFacts::tensor(Some(INT64), Shape::scalar())
        })
    }

    #[test]
    fn dft_keeps_the_length_and_makes_the_last_axis_complex() {
        let out = run_rule(infer, "DFT", 20, vec![], &[t(&[4, 10, 1])], 1);
        assert_eq!(out[0].shape, Shape::known(&[4, 10, 2]));
        let out = run_rule(infer, "DFT", 17, vec![int("axis", 1)], &[t(&[4, 10, 1]), scalar_of(16)], 1);
        assert_eq!(out[0].shape, Shape::known(&[4, 16, 2]), "dft_length pads the signal");
    }

    #[test]
    fn dft_onesided_keeps_half_the_bins_and_its_inverse_restores_an_even_length() {
        let out = run_rule(infer, "DFT", 20, vec![int("onesided", 1)], &[t(&[4, 10, 1])], 1);
        assert_eq!(out[0].shape, Shape::known(&[4, 6, 2]));
        let inverse = vec![int("onesided", 1), int("inverse", 1)];
        let out = run_rule(infer, "DFT", 20, inverse, &[t(&[4, 6, 2])], 1);
        assert_eq!(out[0].shape, Shape::known(&[4, 10, 1]));
    }

    #[test]
    fn dft_with_an_unknown_axis_that_resizes_knows_only_the_last_axis() {
        let unknown_axis = Some(ValueFacts::tensor(Some(INT64), Shape::scalar()));
        let out = run_rule(infer, "DFT", 20, vec![int("onesided", 1)], &[t(&[4, 10, 1]), None, unknown_axis], 1);
        assert_eq!(out[0].shape, Shape::ranked(vec![Dim::Unknown, Dim::Unknown, Dim::Known(2)]));
    }

    #[test]
    fn stft_counts_frames_and_onesided_bins_by_default() {
        let window = t(&[5]);
        let out = run_rule(infer, "STFT", 17, vec![], &[t(&[2, 10, 1]), scalar_of(2), window.clone()], 1);
        assert_eq!(out[0].shape, Shape::known(&[2, 3, 3, 2]), "frames floor((10 - 5) / 2) + 1, bins 5 / 2 + 1");
        let out = run_rule(infer, "STFT", 17, vec![int("onesided", 0)], &[t(&[2, 10, 1]), scalar_of(2), window], 1);
        assert_eq!(out[0].shape, Shape::known(&[2, 3, 5, 2]));
    }

    #[test]
    fn windows_and_mel_matrices_take_their_sizes_from_scalars() {
        let out = run_rule(infer, "HannWindow", 17, vec![int("output_datatype", 11)], &[scalar_of(10)], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(11), Shape::known(&[10])));
        let out = run_rule(infer, "MelWeightMatrix", 17, vec![], &[scalar_of(8), scalar_of(16)], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(FLOAT), Shape::known(&[9, 8])));
    }
}
