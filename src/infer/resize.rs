//! `Resize` (opsets 10, 11, 13, 18, 19) and `Upsample` (7, 9): the output size of each axis from `sizes`, or from
//! `scales` as `floor(input * scale)`, and from opset 18 `axes` and `keep_aspect_ratio_policy`.
//!
//! ONNX `Resize` (opset 18): "If keep_aspect_ratio_policy is "not_larger", the sizes are adjusted so that no extent
//! of the output is larger than the specified size, while keeping the original aspect ratio … scale =
//! Min(sizes[i] / in_size[d]); out_size[d] = round_int(scale * in_size[i])" ("not_smaller": Max). onnxruntime and
//! ONNX's inference compute both in single precision, over the `axes` (every axis without them).
//!
//! Scales are floats: onnxruntime multiplies in single precision, ONNX's inference in double, and they disagree
//! (`10 * 0.7f` is 7 in one and 6 in the other). A size is claimed only where both agree.

use super::{dim_of, normalize_axis, Ctx};
use crate::onnx::tensor;
use crate::sizes::shape::{Dim, Shape};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    Stretch,
    NotLarger,
    NotSmaller,
}

pub(super) fn resize(ctx: &Ctx<'_, '_>) -> Shape {
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
        // Not an attribute of the op before opset 18: what a runtime makes of it is not known.
        Some(_) if ctx.opset < 18 => return unknown(),
        Some(a) => match a.iter().map(|&x| normalize_axis(x, d.len())).collect::<Option<_>>() {
            Some(a) => a,
            None => return unknown(),
        },
        None => (0..d.len()).collect(),
    };
    let policy = match ctx.attrs.string("keep_aspect_ratio_policy").filter(|_| ctx.opset >= 18) {
        None | Some(b"stretch") => Policy::Stretch,
        Some(b"not_larger") => Policy::NotLarger,
        Some(b"not_smaller") => Policy::NotSmaller,
        // Any other policy (an empty one included) is refused by onnxruntime.
        Some(_) => return unknown(),
    };
    // An empty `sizes` (or `scales`) is how a model gives the other one: onnxruntime and ONNX read it as absent.
    if let Some(sizes) = sizes_input.filter(|&i| ctx.has_input(i)).and_then(|i| ctx.value(i)).filter(|s| !s.is_empty())
    {
        if sizes.len() != axes.len() {
            return unknown();
        }
        let mut dims = d.to_vec();
        match policy {
            Policy::Stretch => {
                for (k, &a) in axes.iter().enumerate() {
                    dims[a] = tensor::value_dim(&sizes[k]);
                }
            }
            _ => {
                let kept = keep_aspect_ratio(d, &axes, sizes, policy);
                for (k, &a) in axes.iter().enumerate() {
                    dims[a] = kept.as_ref().map_or(Dim::Unknown, |sizes| Dim::Known(sizes[k]));
                }
            }
        }
        return Shape::ranked(dims);
    }
    let scales: Option<Vec<f64>> = match scales_input {
        None => ctx.attrs.get("scales").map(|a| a.floats.iter().map(|&f| f as f64).collect()),
        Some(i) => ctx.floats(i).map(<[f64]>::to_vec),
    };
    let Some(scales) = scales.filter(|s| s.len() == axes.len()) else { return unknown() };
    let mut dims = d.to_vec();
    for (k, &a) in axes.iter().enumerate() {
        dims[a] = scaled(&d[a], scales[k]);
    }
    Shape::ranked(dims)
}

/// `floor(input * scale)`: for a known input where single and double precision agree; for a symbolic one
/// `floor(H * p / 2^k)`, when the scale is such a fraction (exact in both precisions, for sizes below 2^24).
fn scaled(input: &Dim, scale: f64) -> Dim {
    if scale.is_nan() || scale <= 0.0 {
        return Dim::Unknown;
    }
    if let Some(n) = input.known() {
        let single = (n as f32 * scale as f32).floor();
        let double = (n as f64 * scale).floor();
        return if single as f64 == double && double < 9.0e15 { Dim::Known(double as u64) } else { Dim::Unknown };
    }
    (0..=6)
        .map(|k| 1i64 << k)
        .find(|&q| (scale * q as f64).fract() == 0.0)
        .and_then(|q| {
            let p = scale * q as f64;
            (p < 1e9).then_some((p as i64, q))
        })
        .map_or(Dim::Unknown, |(p, q)| dim_of(input.to_poly().and_then(|x| x.scale(p)?.div_floor(q))))
}

/// The sizes of the `axes` under a policy that keeps the aspect ratio, when the input sizes on them and the sizes
/// asked for are known and single precision (what runtimes use) rounds as exact arithmetic does.
fn keep_aspect_ratio(d: &[Dim], axes: &[usize], sizes: &[tensor::IntValue], policy: Policy) -> Option<Vec<u64>> {
    let inputs: Vec<u64> = axes.iter().map(|&a| d[a].known().filter(|&n| n > 0)).collect::<Option<_>>()?;
    let asked: Vec<u64> = sizes
        .iter()
        .map(|s| s.as_ref().and_then(|p| p.as_constant()).and_then(|c| u64::try_from(c).ok()))
        .collect::<Option<_>>()?;
    // The axis whose ratio wins, compared exactly: asked[i] / inputs[i] as fractions.
    let better = |i: usize, j: usize| {
        let (lhs, rhs) = (asked[i] as u128 * inputs[j] as u128, asked[j] as u128 * inputs[i] as u128);
        if policy == Policy::NotLarger {
            lhs < rhs
        } else {
            lhs > rhs
        }
    };
    let w = (0..axes.len()).reduce(|w, i| if better(i, w) { i } else { w })?;
    let scale = asked[w] as f32 / inputs[w] as f32;
    inputs
        .iter()
        .map(|&n| {
            let single = (scale * n as f32).round();
            // Exact: round(asked[w] * n / inputs[w]), halves up.
            let num = 2 * asked[w] as u128 * n as u128 + inputs[w] as u128;
            let exact = num / (2 * inputs[w] as u128);
            (single as u128 == exact).then_some(exact as u64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::infer::test_support::{ints, run_rule, string};
    use crate::onnx::tensor::ValueFacts;
    use crate::sizes::shape::parse_shape;
    use crate::sizes::sym::Poly;

    fn sizes(v: &[i64]) -> Option<ValueFacts> {
        let shape = crate::sizes::shape::Shape::known(&[v.len() as u64]);
        Some(ValueFacts {
            value: Some(v.iter().map(|&x| Some(Poly::constant(x))).collect()),
            ..ValueFacts::tensor(Some(7), shape)
        })
    }

    fn scales(v: &[f64]) -> Option<ValueFacts> {
        let shape = crate::sizes::shape::Shape::known(&[v.len() as u64]);
        Some(ValueFacts { floats: Some(v.to_vec()), ..ValueFacts::tensor(Some(1), shape) })
    }

    fn resize(attrs: Vec<crate::onnx::pb::AttributeProto>, x: &str, inputs: [Option<ValueFacts>; 2]) -> String {
        let x = Some(ValueFacts::tensor(Some(1), parse_shape(x)));
        let [scales, sizes] = inputs;
        let all = [x, None, scales, sizes];
        run_rule(crate::infer::infer, "Resize", 18, attrs, &all, 1)[0].shape.to_string()
    }

    #[test]
    fn keep_aspect_ratio_not_larger_and_not_smaller_with_axes() {
        let policy = |p| vec![string("keep_aspect_ratio_policy", p), ints("axes", &[0, 1])];
        assert_eq!(resize(policy("not_larger"), "3,5", [None, sizes(&[6, 6])]), "[4, 6]");
        assert_eq!(resize(policy("not_smaller"), "3,5", [None, sizes(&[6, 6])]), "[6, 10]");
        assert_eq!(resize(policy("stretch"), "3,5", [None, sizes(&[6, 6])]), "[6, 6]");
        let spatial = |p| vec![string("keep_aspect_ratio_policy", p), ints("axes", &[2, 3])];
        assert_eq!(resize(spatial("not_smaller"), "1,1,3,5", [None, sizes(&[6, 6])]), "[1, 1, 6, 10]");
    }

    #[test]
    fn keep_aspect_ratio_without_axes_takes_every_axis_into_the_ratio() {
        // The batch and channel ratios of 1 win: nothing is resized (as onnxruntime does).
        let not_larger = vec![string("keep_aspect_ratio_policy", "not_larger")];
        assert_eq!(resize(not_larger, "1,1,3,5", [None, sizes(&[1, 1, 6, 6])]), "[1, 1, 3, 5]");
        // A symbolic size on a resized axis: its ratio is unknown, so is every size.
        let not_smaller = vec![string("keep_aspect_ratio_policy", "not_smaller")];
        assert_eq!(resize(not_smaller, "N,1,3,5", [None, sizes(&[1, 1, 6, 6])]), "[?, ?, ?, ?]");
    }

    #[test]
    fn scales_claim_a_size_only_where_single_and_double_precision_agree() {
        // 10 * 0.7f: 7 in single precision (onnxruntime), 6 in double (ONNX's inference).
        let f = 0.7f32 as f64;
        assert_eq!(resize(vec![], "1,1,10,8", [scales(&[1.0, 1.0, f, 0.5]), None]), "[1, 1, ?, 4]");
        assert_eq!(resize(vec![], "N,C,H,W", [scales(&[1.0, 1.0, 2.0, 1.5]), None]), "[N, C, 2*H, W + floor(W / 2)]");
        // A scale that is no binary fraction: the symbolic size is not claimed.
        let third = (1.0f32 / 3.0) as f64;
        assert_eq!(resize(vec![], "N,C,H,W", [scales(&[1.0, 1.0, third, 1.0]), None]), "[N, C, ?, W]");
    }
}
