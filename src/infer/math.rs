//! Math ops with shape rules of their own (ONNX `docs/Operators.md`: BitCast-26, CumProd-26, Det-11/22,
//! Multinomial-7/22).

use super::Ctx;
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};

const INT32: i32 = crate::onnx::pb::DataType::Int32 as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        // BitCast-26 reinterprets elements of the same width: the input's shape, the type `to`.
        "BitCast" => {
            let to = ctx.attrs.int("to").and_then(|t| i32::try_from(t).ok()).filter(|&t| t != 0);
            vec![ValueFacts::tensor(to, ctx.shape(0))]
        }
        "CumProd" => vec![ValueFacts::tensor(ctx.elem(0), ctx.shape(0))],
        // Det: `[*, M, M]` to `[*]`.
        "Det" => {
            super::image_checks::det(ctx);
            let shape = match ctx.dims(0) {
                Some(d) if d.len() >= 2 => Shape::ranked(d[..d.len() - 2].to_vec()),
                _ => Shape::unranked(),
            };
            vec![ValueFacts::tensor(ctx.elem(0), shape)]
        }
        // Multinomial: `[batch, sample_size]` draws, of `dtype` (int32 by default).
        "Multinomial" => {
            let elem = ctx.attrs.int("dtype").and_then(|t| i32::try_from(t).ok()).unwrap_or(INT32);
            let batch = match ctx.dims(0) {
                Some([b, _]) => b.clone(),
                _ => Dim::Unknown,
            };
            let samples = ctx.int("sample_size", 1);
            let samples = if samples >= 0 { Dim::Known(samples as u64) } else { Dim::Unknown };
            vec![ValueFacts::tensor(Some(elem), Shape::ranked(vec![batch, samples]))]
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::tensor as t;
    use crate::infer::test_support::{int, run_rule};

    #[test]
    fn det_drops_the_matrix_axes() {
        let out = run_rule(infer, "Det", 22, vec![], &[t(1, &[5, 3, 3])], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(1), Shape::known(&[5])));
    }

    #[test]
    fn bitcast_keeps_the_shape_and_takes_the_type_to() {
        let out = run_rule(infer, "BitCast", 26, vec![int("to", 6)], &[t(1, &[2, 3])], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(6), Shape::known(&[2, 3])));
    }

    #[test]
    fn multinomial_draws_sample_size_per_batch_row() {
        let out = run_rule(infer, "Multinomial", 7, vec![int("sample_size", 4)], &[t(1, &[2, 10])], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(INT32), Shape::known(&[2, 4])));
    }
}
