//! Image and sampling ops (ONNX `docs/Operators.md`: AffineGrid-20, GridSample-16/20/22, CenterCropPad-18,
//! Col2Im-18, ImageDecoder-20). GridSample-16 is the 4-D case of the N-D rule its later versions state.

use super::{dim_at, dim_of, normalize_axis, Ctx};
use crate::onnx::tensor::{self, IntValue, ValueFacts};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

const UINT8: i32 = crate::onnx::pb::DataType::Uint8 as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let elem = ctx.elem(0);
    Some(match ctx.op {
        "AffineGrid" => {
            super::image_checks::affine_grid(ctx);
            vec![ValueFacts::tensor(elem, affine_grid(ctx))]
        }
        "GridSample" => {
            super::image_checks::grid_sample(ctx);
            vec![ValueFacts::tensor(elem, grid_sample(ctx))]
        }
        "CenterCropPad" => {
            super::image_checks::center_crop_pad(ctx);
            vec![ValueFacts::tensor(elem, center_crop_pad(ctx))]
        }
        "Col2Im" => {
            super::indexing::col2im(ctx);
            vec![ValueFacts::tensor(elem, col2im(ctx))]
        }
        // ImageDecoder-20: `[H, W, C]` bytes, three channels but for Grayscale.
        "ImageDecoder" => {
            let channels = match ctx.attrs.string("pixel_format") {
                None | Some(b"RGB" | b"BGR") => Dim::Known(3),
                Some(b"Grayscale") => Dim::Known(1),
                Some(_) => Dim::Unknown,
            };
            vec![ValueFacts::tensor(Some(UINT8), Shape::ranked(vec![Dim::Unknown, Dim::Unknown, channels]))]
        }
        _ => return None,
    })
}

/// AffineGrid-20: from `size` `(N, C, H, W)` a grid `(N, H, W, 2)`; from `(N, C, D, H, W)` one `(N, D, H, W, 3)`.
fn affine_grid(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(size) = ctx.value(1) else {
        return match ctx.dims(1) {
            Some([Dim::Known(n @ (4 | 5))]) => Shape::ranked(vec![Dim::Unknown; *n as usize]),
            _ => Shape::unranked(),
        };
    };
    let spatial = match size.len() {
        4 | 5 => size.len() - 2,
        _ => return Shape::unranked(),
    };
    let mut dims = vec![tensor::value_dim(&size[0])];
    dims.extend(size[2..].iter().map(tensor::value_dim));
    dims.push(Dim::Known(spatial as u64));
    Shape::ranked(dims)
}

/// GridSample: `(N, C, D1…)` sampled at a grid `(N, D1_out…, r - 2)` gives `(N, C, D1_out…)`.
fn grid_sample(ctx: &Ctx<'_, '_>) -> Shape {
    let (x, grid) = (ctx.dims(0), ctx.dims(1));
    let rank = match (x, grid) {
        (Some(x), _) => x.len(),
        (None, Some(g)) => g.len(),
        _ => return Shape::unranked(),
    };
    if rank < 3 {
        return Shape::unranked();
    }
    let mut dims = vec![super::attention::unify(&[dim_at(x, 0), dim_at(grid, 0)]), dim_at(x, 1)];
    dims.extend((1..rank - 1).map(|i| dim_at(grid, i)));
    Shape::ranked(dims)
}

/// CenterCropPad-18: the `axes` (all by default) take the sizes of `shape`.
fn center_crop_pad(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0) else { return Shape::unranked() };
    let axes: Option<Vec<usize>> = match ctx.attrs.ints("axes") {
        Some(a) => a.iter().map(|&x| normalize_axis(x, d.len())).collect(),
        None => Some((0..d.len()).collect()),
    };
    let Some(axes) = axes else { return Shape::unranked() };
    let mut dims = d.to_vec();
    match ctx.value(1) {
        Some(sizes) if sizes.len() == axes.len() => {
            for (&a, s) in axes.iter().zip(sizes) {
                dims[a] = tensor::value_dim(s);
            }
        }
        _ => axes.iter().for_each(|&a| dims[a] = Dim::Unknown),
    }
    Shape::ranked(dims)
}

/// Col2Im-18: columns `(N, C * prod(block_shape), L)` folded into images `(N, C, image_shape…)`.
fn col2im(ctx: &Ctx<'_, '_>) -> Shape {
    let image: Option<&[IntValue]> = ctx.value(1);
    let spatial = match (image, ctx.dims(1), ctx.dims(2)) {
        (Some(v), _, _) => Some(v.len()),
        (_, Some([Dim::Known(n)]), _) | (_, _, Some([Dim::Known(n)])) => usize::try_from(*n).ok(),
        _ => None,
    };
    let Some(spatial) = spatial.filter(|&n| n as u64 <= crate::sizes::shape::MAX_RANK) else {
        return Shape::unranked();
    };
    let x = ctx.dims(0);
    let block: Option<Poly> = ctx.ints(2).filter(|b| b.iter().all(|&k| k > 0)).and_then(|b| {
        // Checked: the block sizes are the model's, any i64.
        b.iter().try_fold(1i64, |p, &k| p.checked_mul(k)).map(Poly::constant)
    });
    // Only an exact division: a channel count the block does not divide is the model's error.
    let channels = dim_at(x, 1).to_poly().zip(block).and_then(|(c, b)| {
        let q = c.div_poly(&b)?;
        (q.mul(&b)? == c).then_some(q)
    });
    let mut dims = vec![dim_at(x, 0), dim_of(channels)];
    match image {
        Some(v) => dims.extend(v.iter().map(tensor::value_dim)),
        None => dims.extend(std::iter::repeat_n(Dim::Unknown, spatial)),
    }
    Shape::ranked(dims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::{ints, run_rule};
    use crate::onnx::tensor::INT64;

    fn t(dims: &[u64]) -> Option<ValueFacts> {
        Some(ValueFacts::tensor(Some(1), Shape::known(dims)))
    }

    fn v(xs: &[i64]) -> Option<ValueFacts> {
        let value = xs.iter().map(|&x| Some(Poly::constant(x))).collect();
        Some(ValueFacts { value: Some(value), ..ValueFacts::tensor(Some(INT64), Shape::known(&[xs.len() as u64])) })
    }

    #[test]
    fn grid_sample_takes_the_grid_sizes() {
        let out = run_rule(infer, "GridSample", 20, vec![], &[t(&[2, 3, 8, 8]), t(&[2, 5, 6, 2])], 1);
        assert_eq!(out[0].shape, Shape::known(&[2, 3, 5, 6]));
    }

    #[test]
    fn affine_grid_makes_a_grid_of_the_size_asked() {
        let out = run_rule(infer, "AffineGrid", 20, vec![], &[t(&[2, 2, 3]), v(&[2, 3, 4, 5])], 1);
        assert_eq!(out[0].shape, Shape::known(&[2, 4, 5, 2]));
    }

    #[test]
    fn center_crop_pad_sets_the_axes_it_names() {
        let out =
            run_rule(infer, "CenterCropPad", 18, vec![ints("axes", &[0, 1])], &[t(&[20, 10, 3]), v(&[10, 12])], 1);
        assert_eq!(out[0].shape, Shape::known(&[10, 12, 3]));
    }

    #[test]
    fn col2im_divides_the_channels_by_the_block() {
        let out = run_rule(infer, "Col2Im", 18, vec![], &[t(&[1, 10, 12]), v(&[5, 5]), v(&[1, 5])], 1);
        assert_eq!(out[0].shape, Shape::known(&[1, 2, 5, 5]));
        let out = run_rule(infer, "Col2Im", 18, vec![], &[t(&[1, 11, 12]), v(&[5, 5]), v(&[1, 5])], 1);
        assert_eq!(out[0].shape, Shape::ranked(vec![Dim::Known(1), Dim::Unknown, Dim::Known(5), Dim::Known(5)]));
    }
}
