//! What `--range`, a TensorRT profile and `--safe-ranges` ask of a model, matched to the model's inputs: a range
//! per symbol, single sizes apart (they are bindings: `--range seq=128..128` is `--bind seq=128`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::profile::{input_symbols, model_inputs, Input, Profile, ProfileError};
use super::{shown_name, Ranges, SizeRange};
use crate::onnx::pb::ModelProto;

/// The bounds `--safe-ranges` searches within for a symbol no range is given for.
pub const DEFAULT_SAFE_BOUNDS: SizeRange = SizeRange { min: 1, max: 65536, step: 1 };

/// The ranges asked for, before they are matched to a model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeRequest {
    /// `--range NAME=MIN..MAX[/STEP]`, in command-line order.
    pub ranges: Vec<(String, SizeRange)>,
    /// `--min-shapes`, `--opt-shapes`, `--max-shapes`.
    pub profile: Profile,
    /// `--safe-ranges`: every input symbol without a range searched within [`DEFAULT_SAFE_BOUNDS`].
    pub safe_ranges: bool,
}

/// Why the ranges asked for do not fit a model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RangeRequestError {
    #[error("--range {name}: no input of the model has a dim named {name} ({known}), nor is it an integer input")]
    Unknown { name: String, known: String },
    #[error("--range {name}: {name} is given {first} and {second}")]
    Twice { name: String, first: SizeRange, second: SizeRange },
    #[error("--range {name}: {range} is not within the profile's {profile}")]
    OutsideProfile { name: String, profile: SizeRange, range: SizeRange },
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

/// The ranges of one model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelRanges {
    /// Symbols with more than one size.
    pub ranges: Ranges,
    /// Symbols given one size: bound before inference, like `--bind`.
    pub points: Vec<(String, u64)>,
    /// The profile's opt size per symbol (the max where none is given).
    pub opt: BTreeMap<Arc<str>, u64>,
    /// The model's fed inputs, for profiles and witnesses.
    pub inputs: Vec<Input>,
    /// Symbols given [`DEFAULT_SAFE_BOUNDS`] by `--safe-ranges` rather than by a range.
    pub defaulted: Vec<Arc<str>>,
    /// `--safe-ranges` was asked for.
    pub safe_ranges: bool,
    /// Integer or boolean inputs given a range of values rather than sizes (`--range attention_mask=0..1`): what
    /// bounds the indices computed from them (OPT's positions, `CumSum(attention_mask)`).
    pub values: Vec<(Arc<str>, SizeRange)>,
}

impl RangeRequest {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty() && self.profile == Profile::default() && !self.safe_ranges
    }

    /// The request matched to `model`'s inputs: the profile's ranges, then each `--range` (a symbol no input names,
    /// or one given two different ranges, is an error), then the default bounds of `--safe-ranges`.
    pub fn resolve(&self, model: &ModelProto) -> Result<ModelRanges, RangeRequestError> {
        let inputs = model_inputs(model);
        let (mut all, opt) = self.profile.ranges(&inputs)?;
        let named = input_symbols(&inputs);
        let mut from_flags = Ranges::default();
        let mut values: Vec<(Arc<str>, SizeRange)> = Vec::new();
        for (name, range) in &self.ranges {
            // A name no dim has but an integer input does: the range of its values.
            let integer = |i: &Input| i.elem.is_some_and(integer_or_bool);
            if !named.iter().any(|n| **n == **name) && inputs.iter().any(|i| i.name == *name && integer(i)) {
                match values.iter().find(|(n, _)| **n == **name) {
                    Some((_, earlier)) if earlier != range => {
                        let (name, first, second) = (shown_name(name), *earlier, *range);
                        return Err(RangeRequestError::Twice { name, first, second });
                    }
                    Some(_) => {}
                    None => values.push((Arc::from(name.as_str()), *range)),
                }
                continue;
            }
            if !named.iter().any(|n| **n == **name) {
                let known = match named.is_empty() {
                    true => "its inputs name no size".to_string(),
                    false => {
                        let names: Vec<String> = named.iter().map(|n| shown_name(n)).collect();
                        format!("its inputs name {}", names.join(", "))
                    }
                };
                return Err(RangeRequestError::Unknown { name: shown_name(name), known });
            }
            if let Some(earlier) = from_flags.get(name).filter(|e| e != range) {
                let (name, first, second) = (shown_name(name), earlier, *range);
                return Err(RangeRequestError::Twice { name, first, second });
            }
            // A range may narrow the profile's (a step within its min..max: `--range h=320..640/32`).
            if let Some(profile) = all.get(name).filter(|p| range.first() < p.first() || range.last() > p.last()) {
                let (name, first, second) = (shown_name(name), profile, *range);
                return Err(RangeRequestError::OutsideProfile { name, profile: first, range: second });
            }
            from_flags.insert(name, *range);
        }
        for (name, range) in from_flags.iter() {
            all.insert(name, range);
        }
        let mut defaulted = Vec::new();
        if self.safe_ranges {
            let unranged: Vec<Arc<str>> = named.iter().filter(|n| all.get(n).is_none()).cloned().collect();
            for name in unranged {
                all.insert(&name, DEFAULT_SAFE_BOUNDS);
                defaulted.push(name);
            }
        }
        let mut ranges = Ranges::default();
        let mut points = Vec::new();
        for (name, range) in all.iter() {
            match range.is_point() {
                true => points.push((name.to_string(), range.first())),
                false => {
                    ranges.insert(name, range);
                }
            }
        }
        Ok(ModelRanges { ranges, points, opt, inputs, defaulted, safe_ranges: self.safe_ranges, values })
    }
}

/// Whether an element type holds integers (booleans as 0 and 1): an input that may be given a range of values.
fn integer_or_bool(elem: i32) -> bool {
    use crate::onnx::pb::DataType::*;
    [Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64].iter().any(|&t| t as i32 == elem)
}
