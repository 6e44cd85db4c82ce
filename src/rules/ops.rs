//! The op table: which ops broadcast, by which rule, over which inputs, and which inputs share an element type,
//! for each opset. Shape inference for the ops that do not broadcast lives in `infer`.

/// How a broadcasting op relates its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteKind {
    /// numpy broadcasting over every present input (`Where`: condition included).
    Multi,
    /// Variadic ops before opset 8: every input must have the same shape.
    EqualShapes,
    /// Binary ops before opset 7: `broadcast=1` (with optional `axis`) allows B onto A, else shapes are equal.
    LegacyBinary,
    /// Gemm's C towards (M, N); before opset 7 only with `broadcast=1`.
    Gemm { legacy: bool },
    /// PRelu's slope towards X; before opset 7 by the old per-channel definition.
    PRelu { legacy: bool },
    /// `Expand`: the data input against the target shape held by input 1.
    Expand,
    /// numpy broadcasting over the inputs at these positions (a bit per position in the node's input list): the
    /// contrib ops whose other inputs are scales and zero points (`QLinearAdd`'s A and B), the skip
    /// normalizations' input and skip, and ops declared in the config file (`broadcast I..J`).
    NumpyOf(u64),
    /// `com.microsoft.QGemm`'s C (input 6) towards (M, N) from A (input 0) and B (input 3).
    QGemm,
    /// The `attention_bias` of an attention op towards (B, N, S, T): batch, heads, query length, total length.
    AttentionBias(Attn),
    /// `com.microsoft.BiasAdd`: X (N, S, C) + bias (C) + skip (N, S, C), numpy broadcasting of the three; the
    /// kernel takes the bias only as (C), so the broadcast stays the op's own (`expand` leaves it, and says why).
    BiasAdd,
}

/// The attention ops whose `attention_bias` broadcasts, each with its inputs' layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attn {
    /// `com.microsoft.Attention`: input (B, S, _), past (2, B, N, P, H) at 4, attention_bias at 5.
    Attention,
    /// `com.microsoft.MultiHeadAttention`: query at 0, key at 1, attention_bias at 5, past_key at 6.
    MultiHead,
    /// `com.microsoft.GroupQueryAttention`: query at 0, total_sequence_length at 6, attention_bias at 10.
    GroupQuery,
}

impl Attn {
    /// The position of `attention_bias` among the node's inputs.
    pub fn bias_input(self) -> usize {
        match self {
            Attn::Attention | Attn::MultiHead => 5,
            Attn::GroupQuery => 10,
        }
    }
}

/// Which inputs must share one element type (one type variable `T` in the op's schema).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SameType {
    /// Every input.
    All,
    /// The listed input positions.
    Inputs(&'static [usize]),
    /// No two inputs share a type variable.
    Nothing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BroadcastOp {
    pub kind: SiteKind,
    pub same_type: SameType,
    /// The output is boolean (comparisons) rather than the inputs' type.
    pub bool_output: bool,
}

struct Entry {
    op: &'static str,
    /// First opset version (inclusive) this entry applies to.
    since: i64,
    kind: SiteKind,
    same_type: SameType,
}

const fn e(op: &'static str, since: i64, kind: SiteKind, same_type: SameType) -> Entry {
    Entry { op, since, kind, same_type }
}

use SameType::{All, Inputs, Nothing};
use SiteKind::{EqualShapes, Expand, LegacyBinary, Multi};

/// Entries for one op are listed together, in increasing `since`; the last one not after the model's opset applies.
static TABLE: &[Entry] = &[
    e("Add", 1, LegacyBinary, All),
    e("Add", 7, Multi, All),
    e("Sub", 1, LegacyBinary, All),
    e("Sub", 7, Multi, All),
    e("Mul", 1, LegacyBinary, All),
    e("Mul", 7, Multi, All),
    e("Div", 1, LegacyBinary, All),
    e("Div", 7, Multi, All),
    e("Pow", 1, LegacyBinary, All),
    e("Pow", 7, Multi, All),
    // From opset 12 the exponent has its own type variable T1.
    e("Pow", 12, Multi, Nothing),
    e("Mod", 10, Multi, All),
    e("BitShift", 11, Multi, All),
    e("And", 1, LegacyBinary, All),
    e("And", 7, Multi, All),
    e("Or", 1, LegacyBinary, All),
    e("Or", 7, Multi, All),
    e("Xor", 1, LegacyBinary, All),
    e("Xor", 7, Multi, All),
    e("Equal", 1, LegacyBinary, All),
    e("Equal", 7, Multi, All),
    e("Greater", 1, LegacyBinary, All),
    e("Greater", 7, Multi, All),
    e("Less", 1, LegacyBinary, All),
    e("Less", 7, Multi, All),
    e("GreaterOrEqual", 12, Multi, All),
    e("LessOrEqual", 12, Multi, All),
    e("BitwiseAnd", 18, Multi, All),
    e("BitwiseOr", 18, Multi, All),
    e("BitwiseXor", 18, Multi, All),
    e("Where", 9, Multi, Inputs(&[1, 2])),
    e("Max", 1, EqualShapes, All),
    e("Max", 8, Multi, All),
    e("Min", 1, EqualShapes, All),
    e("Min", 8, Multi, All),
    e("Mean", 1, EqualShapes, All),
    e("Mean", 8, Multi, All),
    e("Sum", 1, EqualShapes, All),
    e("Sum", 8, Multi, All),
    e("Gemm", 1, SiteKind::Gemm { legacy: true }, All),
    e("Gemm", 7, SiteKind::Gemm { legacy: false }, All),
    e("PRelu", 1, SiteKind::PRelu { legacy: true }, All),
    e("PRelu", 7, SiteKind::PRelu { legacy: false }, All),
    e("Expand", 8, Expand, Nothing),
];

const COMPARISONS: &[&str] = &["Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"];

/// True for the ONNX default domain, however it is spelled.
pub fn is_default_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

/// The broadcasting behaviour of `op` in `domain` at default-domain opset `opset`, or `None` for an op that does
/// not broadcast. An opset older than the op's first version takes its first definition.
pub fn broadcast_op(domain: &str, op: &str, opset: i64) -> Option<BroadcastOp> {
    if !is_default_domain(domain) {
        return None;
    }
    let (range, bool_output) = by_op().get(op)?;
    let versions = &TABLE[range.clone()];
    let entry = versions.iter().rfind(|entry| entry.since <= opset).unwrap_or(&versions[0]);
    Some(BroadcastOp { kind: entry.kind, same_type: entry.same_type, bool_output: *bool_output })
}

/// The broadcasting contrib ops of onnxruntime (`com.microsoft`), each with its section of onnxruntime's
/// `docs/ContribOperators.md`; their rules are the standard ones (see `rules`), bound to other input positions.
pub fn contrib_broadcast_op(domain: &str, op: &str) -> Option<BroadcastOp> {
    if domain != "com.microsoft" {
        return None;
    }
    let (kind, same_type) = match op {
        // "com.microsoft.QLinearAdd", "com.microsoft.QLinearMul": "Performs element-wise binary addition
        // (multiplication) on 8 bit data types (with Numpy-style broadcasting support)" of A (input 0) and B
        // (input 3); both are of type T, and so is C.
        "QLinearAdd" | "QLinearMul" => (SiteKind::NumpyOf(1 << 0 | 1 << 3), Inputs(&[0, 3])),
        // "com.microsoft.QGemm": Gemm's arithmetic on quantized A and B; C (int32) is "unidirectional
        // broadcastable to (M, N)", as Gemm's.
        "QGemm" => (SiteKind::QGemm, Nothing),
        // "com.microsoft.FusedGemm": Gemm followed by an activation: C as Gemm's.
        "FusedGemm" => (SiteKind::Gemm { legacy: false }, All),
        // "com.microsoft.SkipLayerNormalization", "com.microsoft.SkipSimplifiedLayerNormalization": skip is
        // (B, S, H), (1, S, H) or (S, H) against input (B, S, H): numpy broadcasting of the two, added before the
        // normalization. (gamma, beta and bias are per-channel parameters of the normalization, not operands.)
        "SkipLayerNormalization" | "SkipSimplifiedLayerNormalization" => {
            (SiteKind::NumpyOf(1 << 0 | 1 << 1), Inputs(&[0, 1]))
        }
        // "com.microsoft.Attention", "com.microsoft.MultiHeadAttention", "com.microsoft.GroupQueryAttention":
        // attention_bias is "(batch_size or 1, num_heads or 1, sequence_length, total_sequence_length)": one-way
        // broadcasting towards (B, N, S, T), as a Gemm's C towards (M, N).
        // "com.microsoft.BiasAdd": "Add input with bias, then add residual inputs": X (N, S, C), bias (C), skip
        // (N, S, C), all of type T.
        "BiasAdd" => (SiteKind::BiasAdd, All),
        "Attention" => (SiteKind::AttentionBias(Attn::Attention), Nothing),
        "MultiHeadAttention" => (SiteKind::AttentionBias(Attn::MultiHead), Nothing),
        "GroupQueryAttention" => (SiteKind::AttentionBias(Attn::GroupQuery), Nothing),
        _ => return None,
    };
    Some(BroadcastOp { kind, same_type, bool_output: false })
}

/// The site of an op the config file declares a numpy broadcast of the inputs in `mask`.
pub fn declared_broadcast(mask: u64) -> BroadcastOp {
    BroadcastOp { kind: SiteKind::NumpyOf(mask), same_type: Nothing, bool_output: false }
}

/// Where each op's entries are in [`TABLE`], and whether its output is boolean (one of [`COMPARISONS`]): every
/// node of a model is looked up, so not by a scan.
fn by_op() -> &'static rustc_hash::FxHashMap<&'static str, (std::ops::Range<usize>, bool)> {
    type Index = rustc_hash::FxHashMap<&'static str, (std::ops::Range<usize>, bool)>;
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = Index::default();
        for (i, entry) in TABLE.iter().enumerate() {
            index.entry(entry.op).or_insert((i..i, COMPARISONS.contains(&entry.op))).0.end = i + 1;
        }
        index
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variadic_ops_broadcast_only_from_opset_8() {
        for op in ["Sum", "Max", "Min", "Mean"] {
            assert_eq!(broadcast_op("", op, 6).unwrap().kind, EqualShapes, "{op} at 6");
            assert_eq!(broadcast_op("", op, 7).unwrap().kind, EqualShapes, "{op} at 7");
            assert_eq!(broadcast_op("", op, 8).unwrap().kind, Multi, "{op} at 8");
        }
    }

    #[test]
    fn binary_ops_use_the_legacy_form_before_opset_7() {
        assert_eq!(broadcast_op("", "Add", 6).unwrap().kind, LegacyBinary);
        assert_eq!(broadcast_op("ai.onnx", "Add", 7).unwrap().kind, Multi);
        assert_eq!(broadcast_op("", "Gemm", 6).unwrap().kind, SiteKind::Gemm { legacy: true });
        assert_eq!(broadcast_op("", "Gemm", 11).unwrap().kind, SiteKind::Gemm { legacy: false });
    }

    #[test]
    fn pow_exponent_has_its_own_type_from_opset_12() {
        assert_eq!(broadcast_op("", "Pow", 11).unwrap().same_type, All);
        assert_eq!(broadcast_op("", "Pow", 12).unwrap().same_type, Nothing);
    }

    #[test]
    fn where_condition_broadcasts_but_has_its_own_type() {
        let op = broadcast_op("", "Where", 16).unwrap();
        assert_eq!(op.kind, Multi);
        assert_eq!(op.same_type, Inputs(&[1, 2]));
    }

    #[test]
    fn each_op_is_listed_in_one_run_of_increasing_versions() {
        for (op, (range, _)) in by_op() {
            assert!(TABLE[range.clone()].iter().all(|e| e.op == *op), "{op} is split");
            assert!(TABLE[range.clone()].windows(2).all(|w| w[0].since < w[1].since), "{op} out of order");
        }
        assert_eq!(by_op().values().map(|(r, _)| r.len()).sum::<usize>(), TABLE.len());
    }

    #[test]
    fn other_domains_and_ops_are_not_sites() {
        assert!(broadcast_op("com.microsoft", "Add", 1).is_none());
        assert!(contrib_broadcast_op("com.microsoft", "Add").is_none());
        assert_eq!(contrib_broadcast_op("com.microsoft", "QLinearAdd").unwrap().kind, SiteKind::NumpyOf(0b1001));
        assert!(contrib_broadcast_op("", "QLinearAdd").is_none());
        assert!(broadcast_op("", "Relu", 13).is_none());
        assert!(broadcast_op("", "Equal", 11).unwrap().bool_output);
    }
}
