//! The `ai.onnx.preview.training` domain (ONNX `docs/Operators.md`, "ai.onnx.preview.training": Adagrad-1,
//! Momentum-1, Adam-1, Gradient-1). The optimizers take `[R, T, X…, G…, state…]` and give each optimized tensor and
//! each state tensor back updated, with its type and shape.

use super::Ctx;
use crate::onnx::tensor::ValueFacts;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    // How many groups of tensors follow R and T: X and G, then the states each optimizer keeps.
    let groups = match ctx.op {
        "Adagrad" | "Momentum" => 3,
        "Adam" => 4,
        "Gradient" => return Some(gradient(ctx)),
        _ => return None,
    };
    let n = ctx.inputs.len().saturating_sub(2) / groups;
    // Outputs: the new X…, then the new states, group after group; G has none.
    let updated = (0..n).map(|i| 2 + i).chain((2..groups).flat_map(|g| (0..n).map(move |i| 2 + g * n + i)));
    Some(updated.map(|i| carried(ctx, i)).collect())
}

/// An input as its update comes out: the same type and shape, new contents.
fn carried(ctx: &Ctx<'_, '_>, i: usize) -> ValueFacts {
    ctx.input(i).map_or_else(ValueFacts::unknown, |f| ValueFacts::of_kind(f.kind, f.elem, f.shape.clone()))
}

/// Gradient-1: the gradient of the scalar `y` with respect to each tensor `xs` names, fed as the first inputs, has
/// that tensor's type and shape.
fn gradient(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let xs = ctx.attrs.get("xs").map_or(0, |a| a.strings.len());
    (0..xs.min(ctx.outputs)).map(|i| carried(ctx, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::run_rule;
    use crate::sizes::shape::Shape;

    fn t(dims: &[u64]) -> Option<ValueFacts> {
        Some(ValueFacts::tensor(Some(1), Shape::known(dims)))
    }

    #[test]
    fn adam_updates_each_tensor_and_both_its_states() {
        // R, T, X1, X2, G1, G2, V1, V2, H1, H2.
        let inputs = [t(&[]), t(&[]), t(&[1]), t(&[2]), t(&[1]), t(&[2]), t(&[3]), t(&[4]), t(&[5]), t(&[6])];
        let out = run_rule(infer, "Adam", 1, vec![], &inputs, 6);
        let dims: Vec<Shape> = out.iter().map(|f| f.shape.clone()).collect();
        let expected: Vec<Shape> = [1, 2, 3, 4, 5, 6].iter().map(|&d| Shape::known(&[d])).collect();
        assert_eq!(dims, expected);
    }

    #[test]
    fn adagrad_updates_each_tensor_and_its_accumulated_squares() {
        let inputs = [t(&[]), t(&[]), t(&[7]), t(&[7]), t(&[8])];
        let out = run_rule(infer, "Adagrad", 1, vec![], &inputs, 2);
        assert_eq!(out[0].shape, Shape::known(&[7]));
        assert_eq!(out[1].shape, Shape::known(&[8]));
    }
}
