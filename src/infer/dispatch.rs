//! Which op family to ask first for a node of the default domain. The families are asked in turn and the first that
//! knows the op answers; each asks its own `match` of names, so a Conv was compared with some hundred names before
//! its family answered (a tenth of the inference on the PyTorch exports). The table below sends each op it names
//! straight to its family, by one `match` on a key of the name; any other op is asked of every family, as before.
//! A test holds the table to the families: each op named is answered by its family and by none asked before it.

use super::{attention, elementwise, image, layout, math, nn, norm, reduce, sequence, signal, text, values, window};
use super::{Ctx, ValueFacts};

/// An op family's rule: its outputs for the ops it knows, `None` for the others.
pub(super) type Rule = fn(&mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>>;

/// The op families in the order they are asked.
pub(super) const FAMILIES: [Rule; 13] = [
    elementwise::infer,
    values::infer,
    layout::infer,
    window::infer,
    nn::infer,
    norm::infer,
    reduce::infer,
    sequence::infer,
    signal::infer,
    attention::infer,
    image::infer,
    text::infer,
    math::infer,
];

/// An op's name as its length and its first, middle and last bytes (two names may share one: the table compares
/// the name whole).
const fn key(op: &str) -> u32 {
    let b = op.as_bytes();
    if b.is_empty() {
        return 0;
    }
    (b.len() as u32 & 0xff) | (b[0] as u32) << 8 | (b[b.len() / 2] as u32) << 16 | (b[b.len() - 1] as u32) << 24
}

/// The table: each family's place in [`FAMILIES`], with the ops it answers for.
macro_rules! table {
    ($($family:literal => [$($op:ident),* $(,)?]),* $(,)?) => {
        /// The keys of the names the table holds, as constants a `match` can compare with.
        #[allow(non_upper_case_globals)]
        mod keys {
            $($(pub(super) const $op: u32 = super::key(stringify!($op));)*)*
        }

        /// Where in [`FAMILIES`] to start asking for `op`: its family's place when the table names it, else 0.
        #[inline]
        pub(super) fn first_family(op: &str) -> usize {
            match key(op) {
                $($(keys::$op if op == stringify!($op) => $family,)*)*
                _ => 0,
            }
        }

        /// Every op the table names, with its family's place.
        #[cfg(test)]
        const NAMED: &[(&str, usize)] = &[$($((stringify!($op), $family),)*)*];
    };
}

table! {
    0 => [
        Identity, Neg, Abs, Not, Softmax, LogSoftmax, Hardmax, Cast, CastLike, RandomUniformLike, RandomNormalLike,
        Bernoulli, RandomUniform, RandomNormal, Dropout, Constant, Acos, Acosh, Asin, Asinh, Atan, Atanh, Ceil, Celu,
        Cos, Cosh, Elu, Erf, Exp, Floor, Gelu, HardSigmoid, HardSwish, LeakyRelu, Log, LpNormalization, LRN,
        MeanVarianceNormalization, Mish, Reciprocal, Relu, Round, Selu, Shrink, Sigmoid, Sign, Sin, Sinh, Softplus,
        Softsign, Sqrt, Tan, Tanh, ThresholdedRelu, Clip, BitwiseNot, Swish, CumSum, Trilu, ReverseSequence, IsNaN,
        IsInf,
    ],
    1 => [Shape, Size, ConstantOfShape, Range, NonZero, NonMaxSuppression, Compress, Unique],
    2 => [
        Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Split, Slice, Gather, GatherElements, GatherND,
        ScatterND, ScatterElements, Scatter, EyeLike, Pad, Tile, DepthToSpace, SpaceToDepth, OneHot, Resize, Upsample,
        If, Loop, Scan,
    ],
    3 => [
        Conv, DeformConv, ConvInteger, QLinearConv, ConvTranspose, MaxPool, AveragePool, LpPool, GlobalAveragePool,
        GlobalMaxPool, GlobalLpPool, MaxUnpool, MaxRoiPool, RoiAlign,
    ],
    4 => [
        MatMul, MatMulInteger, QLinearMatMul, RNN, GRU, LSTM, Einsum, QuantizeLinear, DequantizeLinear,
        DynamicQuantizeLinear, Attention, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss,
    ],
    5 => [BatchNormalization, InstanceNormalization, GroupNormalization, RMSNormalization, LayerNormalization],
    6 => [
        ArgMax, ArgMin, TopK, ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
        ReduceLogSum, ReduceLogSumExp, ReduceSumSquare,
    ],
}

#[cfg(test)]
mod tests {
    use super::super::with_bare_ctx;
    use super::*;

    /// Which families answer for `op` at `opset`, given no inputs.
    fn answering(op: &str, opset: i64) -> Vec<usize> {
        with_bare_ctx(op, opset, |ctx| (0..FAMILIES.len()).filter(|&f| FAMILIES[f](ctx).is_some()).collect())
    }

    #[test]
    fn each_op_the_table_names_is_answered_first_by_its_family() {
        for &(op, family) in NAMED {
            assert_eq!(first_family(op), family, "{op}");
            for opset in 1..=26 {
                assert_eq!(answering(op, opset).first(), Some(&family), "{op} at opset {opset}");
            }
        }
    }

    #[test]
    fn an_op_the_table_does_not_name_is_asked_of_every_family() {
        for op in ["Add", "Where", "Expand", "SequenceAt", "DFT", "Det", "FusedConv", "", "Con", "Conw", "conv"] {
            assert_eq!(first_family(op), 0, "{op}");
        }
    }

    #[test]
    fn names_with_one_key_are_told_apart_by_the_whole_name() {
        // `Relu` and `Rblu` share a key; `Erf` and `Elf` too.
        assert_eq!(key("Relu"), key("Rblu"));
        assert_eq!(first_family("Rblu"), 0);
        let shared = NAMED.iter().filter(|(a, _)| NAMED.iter().any(|(b, _)| a != b && key(a) == key(b)));
        for &(op, family) in shared {
            assert_eq!(first_family(op), family, "{op}");
        }
    }
}
