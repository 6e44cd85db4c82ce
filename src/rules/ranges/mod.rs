//! Ranges of input sizes (`--range seq=1..512`, `--range h=320..640/32`, a TensorRT profile) and what the sites'
//! conditions come to over them: every condition `holds` for every size in the ranges (a proof, by the dim algebra
//! of [`crate::sizes::sym`], never a sample), `fails` at a smallest witness, or stays `unproven` on named parts.
//!
//! - [`predicate`]: a site's conditions ([`crate::rules::ConditionKind`]) as comparisons of polynomials joined by
//!   "and" and "or", the one place a new kind of condition is taught to the decision;
//! - [`search`]: the decision over a box of sizes: a box is settled for every size at once where the algebra can
//!   (interval bounds, floors cleared by splitting a symbol into its residue classes), and split where it cannot,
//!   down to single sizes only where a part stays undecided (which the result says);
//! - [`safe`]: the largest box, within the given ranges, where every condition holds;
//! - [`profile`]: TensorRT's spelling of ranges (`--min-shapes images:1x3x320x320`, trtexec's and onnxruntime's
//!   TensorRT provider's) mapped to the inputs' symbols, and printed back for a safe box.

pub mod decider;
mod parts;
pub mod predicate;
pub mod profile;
pub mod request;
pub mod safe;
pub mod search;
pub mod within;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

pub use decider::{failing_axis, Decider, SafeRanges};
pub use predicate::Predicate;
pub use request::{ModelRanges, RangeRequest, RangeRequestError, DEFAULT_SAFE_BOUNDS};

/// The sizes `min`, `min + step`, …, up to `max` (which is on that lattice): one symbol's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SizeRange {
    min: u64,
    max: u64,
    step: u64,
}

/// Why a range cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("'{0}' is not MIN..MAX or MIN..MAX/STEP (sizes, both ends included)")]
    Syntax(String),
    #[error("'{0}': MIN is larger than MAX")]
    Empty(String),
    #[error("'{0}': the step must be at least 1")]
    ZeroStep(String),
    #[error("'{0}': a size is larger than ONNX allows (a dim is an int64)")]
    TooLarge(String),
}

impl SizeRange {
    /// The sizes from `min` to `max` by `step`; a `max` between two steps is brought down to the last one.
    pub fn new(min: u64, max: u64, step: u64) -> Result<SizeRange, RangeError> {
        let text = || format!("{min}..{max}/{step}");
        if step == 0 {
            return Err(RangeError::ZeroStep(text()));
        }
        if min > max {
            return Err(RangeError::Empty(text()));
        }
        if i64::try_from(max).is_err() {
            return Err(RangeError::TooLarge(text()));
        }
        Ok(SizeRange { min, max: max - (max - min) % step, step })
    }

    /// One size.
    pub fn point(size: u64) -> SizeRange {
        SizeRange { min: size, max: size, step: 1 }
    }

    /// `MIN..MAX`, `MIN..MAX/STEP`, or one size `N`.
    pub fn parse(text: &str) -> Result<SizeRange, RangeError> {
        let syntax = || RangeError::Syntax(text.to_string());
        let number = |s: &str| s.trim().parse::<u64>().map_err(|_| syntax());
        let (span, step) = match text.split_once('/') {
            Some((span, step)) => (span, number(step)?),
            None => (text, 1),
        };
        let range = match span.split_once("..") {
            Some((lo, hi)) => SizeRange::new(number(lo)?, number(hi.strip_prefix('=').unwrap_or(hi))?, step),
            None if step == 1 => SizeRange::new(number(span)?, number(span)?, 1),
            None => Err(syntax()),
        };
        range.map_err(|e| match e {
            RangeError::Empty(_) => RangeError::Empty(text.to_string()),
            RangeError::ZeroStep(_) => RangeError::ZeroStep(text.to_string()),
            RangeError::TooLarge(_) => RangeError::TooLarge(text.to_string()),
            other => other,
        })
    }

    /// The smallest size.
    pub fn first(self) -> u64 {
        self.min
    }

    /// The largest size.
    pub fn last(self) -> u64 {
        self.max
    }

    pub fn step(self) -> u64 {
        self.step
    }

    /// How many sizes.
    pub fn len(self) -> u64 {
        (self.max - self.min) / self.step + 1
    }

    /// Never empty; for clippy's `len` convention.
    pub fn is_empty(self) -> bool {
        false
    }

    pub fn is_point(self) -> bool {
        self.min == self.max
    }

    pub fn contains(self, size: u64) -> bool {
        (self.min..=self.max).contains(&size) && (size - self.min).is_multiple_of(self.step)
    }

    /// Whether every size of `other` is one of these.
    pub fn covers(self, other: SizeRange) -> bool {
        self.contains(other.min)
            && (other.is_point() || (self.contains(other.max) && other.step.is_multiple_of(self.step)))
    }
}

impl fmt::Display for SizeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.is_point(), self.step) {
            (true, _) => write!(f, "{}", self.min),
            (false, 1) => write!(f, "{}..{}", self.min, self.max),
            (false, step) => write!(f, "{}..{}/{step}", self.min, self.max),
        }
    }
}

/// A range per symbol: the sizes a model is asked about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges {
    map: BTreeMap<Arc<str>, SizeRange>,
}

impl Ranges {
    pub fn get(&self, name: &str) -> Option<SizeRange> {
        self.map.get(name).copied()
    }

    pub fn insert(&mut self, name: &str, range: SizeRange) -> Option<SizeRange> {
        self.map.insert(Arc::from(name), range)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, SizeRange)> {
        self.map.iter().map(|(k, &v)| (k, v))
    }

    /// `seq ∈ 1..512, h ∈ 320..640/32`.
    pub fn describe(&self) -> String {
        describe(self.iter().map(|(k, v)| (k.as_ref(), v)))
    }
}

/// `name ∈ range` pairs joined by commas.
pub fn describe<'a>(parts: impl Iterator<Item = (&'a str, SizeRange)>) -> String {
    let parts: Vec<String> = parts.map(|(n, r)| format!("{} ∈ {r}", shown_name(n))).collect();
    parts.join(", ")
}

/// A symbol as messages show it: bare when it is an identifier, else in quotes with control characters escaped
/// (names come from the model and are untrusted).
pub fn shown_name(name: &str) -> String {
    if crate::sizes::sym::display::is_plain_name(name) {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

/// Sizes for some symbols: a witness, or one corner of a box.
pub type Sizes = Vec<(Arc<str>, u64)>;

/// `seq = 65, h = 330`.
pub fn describe_sizes(sizes: &Sizes) -> String {
    let parts: Vec<String> = sizes.iter().map(|(n, v)| format!("{} = {v}", shown_name(n))).collect();
    parts.join(", ")
}

/// What the conditions of a site come to over the ranges.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Every condition holds at every size of the ranges.
    Holds(Proof),
    /// Some condition fails at `witness`: the smallest failing sizes (fewest steps above the ranges' minima, then
    /// in the order of the symbols), unless `smaller_unproven`: some smaller sizes stayed undecided.
    Fails { witness: Sizes, smaller_unproven: bool },
    /// No size was found to fail, but these parts of the ranges are not proven.
    Unproven(Unproven),
}

impl Decision {
    /// The `over_ranges` result's name in JSON: `holds`, `fails` or `unproven`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::Holds(_) => "holds",
            Decision::Fails { .. } => "fails",
            Decision::Unproven(_) => "unproven",
        }
    }
}

/// How a `holds` was proven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// Sizes decided one at a time (the algebra settled every other size by whole classes and intervals).
    pub enumerated: u64,
}

/// The undecided part of the ranges, and why it is undecided.
#[derive(Clone, Debug, PartialEq)]
pub struct Unproven {
    /// Boxes of sizes (a range per symbol), merged where adjacent; at most [`search::MAX_PARTS_SHOWN`] of them.
    pub parts: Vec<Vec<(Arc<str>, SizeRange)>>,
    /// How many sizes are undecided in all (saturating).
    pub sizes: u128,
    pub reason: UnprovenReason,
}

/// Why part of the ranges is undecided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnprovenReason {
    /// The conditions name symbols no range is given for.
    FreeSymbols(Vec<Arc<str>>),
    /// A condition is about a size nothing in the model names (an unknown dim).
    UnknownDim,
    /// The search gave up after its budget of boxes.
    Budget,
    /// Neither the algebra nor a size-by-size check decides these sizes (an overflow, or a size no rule reads).
    Undecided,
}

impl fmt::Display for UnprovenReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnprovenReason::FreeSymbols(names) => {
                let names: Vec<String> = names.iter().map(|n| shown_name(n)).collect();
                let verb = if names.len() == 1 { "has" } else { "have" };
                write!(f, "it depends on {}, which {verb} no range", names.join(", "))
            }
            UnprovenReason::UnknownDim => f.write_str("it depends on an unknown dim"),
            UnprovenReason::Budget => f.write_str("the search stopped at its budget"),
            UnprovenReason::Undecided => f.write_str("the algebra does not decide it"),
        }
    }
}

impl UnprovenReason {
    /// The reason's name in JSON.
    pub fn as_str(&self) -> &'static str {
        match self {
            UnprovenReason::FreeSymbols(_) => "free-symbols",
            UnprovenReason::UnknownDim => "unknown-dim",
            UnprovenReason::Budget => "budget",
            UnprovenReason::Undecided => "undecided",
        }
    }
}

/// Decides a predicate over the ranges (symbols it names without a range stay free), its independent parts apart.
pub fn decide(pred: &Predicate, ranges: &Ranges) -> Decision {
    decide_by_parts(pred, ranges, &mut |part| decide_whole(part, ranges))
}

/// The decision of a predicate from those of its independent parts (`part` decides one).
pub(crate) fn decide_by_parts(
    pred: &Predicate,
    ranges: &Ranges,
    part: &mut dyn FnMut(&Predicate) -> Decision,
) -> Decision {
    let parts = parts::independent(pred, ranges);
    if parts.len() == 1 {
        return part(&parts[0]);
    }
    let decisions: Vec<Decision> = parts.iter().map(part).collect();
    let symbols: Vec<Arc<str>> = pred.symbols().into_iter().filter(|s| ranges.get(s).is_some()).collect();
    parts::combine(&symbols, ranges, &decisions)
}

/// Decides a predicate over the ranges as one.
pub(crate) fn decide_whole(pred: &Predicate, ranges: &Ranges) -> Decision {
    let compiled = predicate::Compiled::new(pred, &|s| ranges.get(s).is_some());
    let root: search::Cell = compiled.symbols.iter().filter_map(|s| ranges.get(s)).collect();
    search::decide(&compiled, &root)
}

#[cfg(test)]
impl Ranges {
    /// Ranges from `(name, text)` pairs in `--range` spelling, for tests.
    pub(crate) fn parsed(list: &[(&str, &str)]) -> Ranges {
        let mut r = Ranges::default();
        for (name, text) in list {
            r.insert(name, SizeRange::parse(text).unwrap());
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_with_and_without_a_step() {
        assert_eq!(SizeRange::parse("1..512"), SizeRange::new(1, 512, 1));
        assert_eq!(SizeRange::parse("320..640/32").unwrap().to_string(), "320..640/32");
        assert_eq!(SizeRange::parse("320..650/32").unwrap().last(), 640);
        assert_eq!(SizeRange::parse("7").unwrap(), SizeRange::point(7));
        assert_eq!(SizeRange::parse("1..=8").unwrap().to_string(), "1..8");
        assert_eq!(SizeRange::parse("320..640/32").unwrap().len(), 11);
        assert!(matches!(SizeRange::parse("9..1"), Err(RangeError::Empty(_))));
        assert!(matches!(SizeRange::parse("1..9/0"), Err(RangeError::ZeroStep(_))));
        assert!(matches!(SizeRange::parse("1..x"), Err(RangeError::Syntax(_))));
        assert!(matches!(SizeRange::parse("1..99999999999999999999"), Err(RangeError::Syntax(_))));
        assert!(matches!(SizeRange::parse("0..18446744073709551615"), Err(RangeError::TooLarge(_))));
    }

    #[test]
    fn a_range_covers_the_progressions_inside_it() {
        let r = SizeRange::parse("320..640/32").unwrap();
        assert!(r.contains(352) && !r.contains(353) && !r.contains(672));
        assert!(r.covers(SizeRange::parse("384..512/64").unwrap()));
        assert!(!r.covers(SizeRange::parse("384..512/16").unwrap()));
        assert!(SizeRange::parse("1..64").unwrap().covers(SizeRange::point(64)));
    }
}
