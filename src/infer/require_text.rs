//! The words of a [`Contradiction`]: the inputs it concerns with their shapes, what the specification requires, and
//! what is wrong, as `check` prints it.

use super::require::{At, Contradiction, Detail, Malformed, Operand, RankNeed, Verdict, Whence};
use crate::onnx::tensor::elem_type_name;
use crate::rules::Condition;
use crate::sizes::shape::Dim;

impl Contradiction {
    /// The finding's message, names marked ([`crate::sys::escape::name`]); `inputs` are the node's inputs by position
    /// (an absent one with an empty name).
    pub fn message(&self, inputs: &[Operand]) -> String {
        let listed = list_inputs(&self.inputs, inputs);
        match &self.verdict {
            Verdict::Conditional(conditions) => {
                let mut texts: Vec<String> = Vec::new();
                for text in conditions.iter().map(Condition::to_string) {
                    if !texts.contains(&text) {
                        texts.push(text);
                    }
                }
                format!("holds only if {}: {listed} ({})", crate::rules::all_of(&texts), self.requirement.what())
            }
            Verdict::Violated(detail) => {
                format!("{listed}: {}: {}", self.requirement.broken(), detail_text(detail, inputs))
            }
        }
    }
}

impl Contradiction {
    /// A conditional contradiction's message once its conditions are decided over ranges of sizes: `fails at
    /// kv_cache_dim = 1 (it needs kv_cache_dim = 16): ...`, or `holds only if ...; over the ranges, unproven for
    /// ...: ...`.
    pub fn message_over_ranges(&self, inputs: &[Operand], decision: &crate::rules::ranges::Decision) -> String {
        let listed = list_inputs(&self.inputs, inputs);
        let mut texts: Vec<String> = Vec::new();
        for text in self.conditions().iter().map(Condition::to_string) {
            if !texts.contains(&text) {
                texts.push(text);
            }
        }
        let (conditions, what) = (crate::rules::all_of(&texts), self.requirement.what());
        match decision {
            crate::rules::ranges::Decision::Unproven(_) => {
                format!("holds only if {conditions}; over the ranges, {}: {listed} ({what})", decision.text())
            }
            _ => format!("{} (it needs {conditions}): {listed} ({what})", decision.text()),
        }
    }
}

/// Input `i`'s name, marked as a model-controlled name ([`crate::sys::escape::name`]).
fn name(inputs: &[Operand], i: usize) -> String {
    inputs.get(i).map_or("?".into(), |s| crate::sys::escape::name(&s.name).to_string())
}

/// `A [2, 3] and B [4, 5]`; an input whose contents are known by its contents, `target = [4, -1]`.
fn list_inputs(which: &[usize], inputs: &[Operand]) -> String {
    let parts: Vec<String> = which
        .iter()
        .filter_map(|&i| inputs.get(i).filter(|s| !s.name.is_empty()))
        .map(|s| match &s.value {
            Some(v) if s.shape.rank() == Some(1) => {
                let entries: Vec<String> = v.iter().map(|e| e.as_ref().map_or("?".into(), |p| p.to_string())).collect();
                format!("{} = [{}]", crate::sys::escape::name(&s.name), entries.join(", "))
            }
            _ => format!("{} {}", crate::sys::escape::name(&s.name), s.shape),
        })
        .collect();
    match parts.len() {
        0 => "the inputs".into(),
        1 => parts[0].clone(),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

fn at_text(at: &At, inputs: &[Operand]) -> String {
    format!("{} has {} on its axis {}", name(inputs, at.input), at.dim, at.axis)
}

fn detail_text(detail: &Detail, inputs: &[Operand]) -> String {
    match detail {
        Detail::Differ { a, b } => format!("{} where {}", at_text(a, inputs), at_text(b, inputs)),
        Detail::Expected { at, expected, whence } => {
            let why = match whence {
                Whence::SplitSizes => format!("the split sizes add up to {expected}"),
                Whence::WeightChannels { group } => format!("the weights take {expected} (group {group})"),
                Whence::Required => format!("{expected} is required"),
            };
            format!("{} where {why}", at_text(at, inputs))
        }
        Detail::NoneOf { at, options } => {
            let options: Vec<String> = options.iter().map(Dim::to_string).collect();
            format!("{} where {} is required", at_text(at, inputs), options.join(" or "))
        }
        Detail::ElementCount { elements, target, holds } => {
            format!("{elements} elements cannot take the shape {target}, which holds {holds}")
        }
        Detail::Rank { input, rank, need } => {
            let need = match need {
                RankNeed::Exactly(r) => format!("rank {r} is required"),
                RankNeed::AtLeast(r) => format!("rank {r} or more is required"),
                RankNeed::Of(other) => {
                    let r = inputs.get(*other).and_then(|s| s.shape.rank()).map_or("?".into(), |r| r.to_string());
                    format!("{} has rank {r}", name(inputs, *other))
                }
            };
            format!("{} has rank {rank} where {need}", name(inputs, *input))
        }
        Detail::AxisOutOfRange { axis, rank } => format!("axis {axis} is out of range for rank {rank}"),
        Detail::IndexOutOfRange { input, index, size } => {
            format!("{} holds index {index}, out of range for a size of {size}", name(inputs, *input))
        }
        Detail::NotDivisible { dim, divisor } => format!("{divisor} does not divide {dim}"),
        Detail::Kernel { at, span, pads: (before, after) } => {
            format!("{}, padded by {before} and {after}, where the kernel spans {span}", at_text(at, inputs))
        }
        Detail::TooMany { input, count, size } => {
            format!("{} asks for {count} elements of an axis of {size}", name(inputs, *input))
        }
        Detail::Type { input, found, against, expected } => format!(
            "{} is {} where {} is {}",
            name(inputs, *input),
            elem_type_name(*found),
            name(inputs, *against),
            elem_type_name(*expected)
        ),
        Detail::Malformed(m) => malformed_text(m, inputs),
        Detail::Unmet(condition) => format!("it requires {condition}, which these sizes make false"),
    }
}

fn malformed_text(m: &Malformed, inputs: &[Operand]) -> String {
    match m {
        Malformed::NotAPermutation { perm, rank } => format!("perm {perm:?} for rank {rank}"),
        Malformed::SeveralInferred => "the target has more than one -1".into(),
        Malformed::NegativeEntry(v) => format!("the target has the entry {v}"),
        Malformed::CopiesNoDim { index, rank } => {
            format!("the target's 0 at index {index} copies no dim of an input of rank {rank}")
        }
        Malformed::RepeatedAxis(a) => format!("axis {a} is named twice"),
        Malformed::ZeroStep => "a step is 0".into(),
        Malformed::NoSplit => "neither a split input nor num_outputs is given".into(),
        Malformed::Length { list, len, expected } => format!("{list} has {len} entries where {expected} are needed"),
        Malformed::TermCount { terms, inputs } => format!("{terms} operand terms for {inputs} inputs"),
        Malformed::LabelCount { input, labels, rank } => {
            format!("the term of {} names {labels} dims of rank {rank}", name(inputs, *input))
        }
        Malformed::UnknownLabel(l) => format!("the output label {l} is no operand's"),
        Malformed::LabelSizes { label, a, b } => {
            format!("label {label}: {} where {}", at_text(a, inputs), at_text(b, inputs))
        }
        Malformed::EllipsisDims { a: (i, n), b: (j, m) } => format!(
            "the ellipsis of {} stands for {n} dims where that of {} stands for {m}",
            name(inputs, *i),
            name(inputs, *j)
        ),
        Malformed::Below { list, value, least } => format!("{list} holds {value} where {least} or more is required"),
        Malformed::PadsWithAutoPad => "pads is given with an auto_pad other than NOTSET".into(),
    }
}
