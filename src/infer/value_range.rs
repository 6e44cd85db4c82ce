//! Ranges of the values of integer tensors, in terms of the sizes (`[0, seq - 1]` for `Range(0, seq, 1)`), for
//! what reads values as indices: a Gather of position ids computed from the sequence length reads its table in
//! bounds only while `seq ≤ rows` (see `analysis::index_bound`). A side table the walk keeps beside the value facts;
//! inference itself never reads it.
//!
//! Sound first: each end is a bound every element respects at every size ([`ValueRange::lo`], [`ValueRange::hi`]),
//! and an op this module does not know, or a bound it cannot compute, gives no fact. An end also says when some
//! element equals it ([`Reach`]): only a reached end may become a condition that fails, since a loose bound
//! (`min(…)` computed as its first argument's) would make a model look broken that is not.

use std::sync::Arc;

use crate::onnx::attr::Attrs;
use crate::onnx::pb::DataType;
use crate::onnx::tensor::{ValueFacts, BOOL};
use crate::sizes::sym::{Ext, Poly};

/// Graph inputs (fed by the caller) and the value that fills each.
pub type Fills = Vec<(Arc<str>, i64)>;

/// When an end of a range is reached: with each named graph input filled with its value (the other inputs
/// anything), every element equals the bound (`every`), or at least one does (the tensor being non-empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    pub fills: Fills,
    pub every: bool,
}

impl Reach {
    /// Reached by every element whatever the inputs (a constant).
    fn always() -> Reach {
        Reach { fills: Vec::new(), every: true }
    }

    /// Reached by some element whatever the inputs (the last of a Range).
    fn somewhere() -> Reach {
        Reach { fills: Vec::new(), every: false }
    }

    /// Both reached at one element at once: where one is reached everywhere, at the element where the other is
    /// (broadcasting pairs every element of each input with the other's); the fills must agree.
    fn with(a: Option<&Reach>, b: Option<&Reach>) -> Option<Reach> {
        let (a, b) = (a?, b?);
        if !(a.every || b.every) {
            return None;
        }
        let mut fills = a.fills.clone();
        for (name, v) in &b.fills {
            match fills.iter().find(|(n, _)| n == name) {
                Some((_, w)) if w != v => return None,
                Some(_) => {}
                None => fills.push((name.clone(), *v)),
            }
        }
        fills.sort();
        Some(Reach { fills, every: a.every && b.every })
    }
}

/// One end of a range: a bound on every element, and whether (and how) it is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct End {
    pub at: Poly,
    pub reach: Option<Reach>,
}

impl End {
    fn new(at: Poly, reach: Option<Reach>) -> End {
        End { at, reach }
    }

    fn unreached(at: Poly) -> End {
        End { at, reach: None }
    }
}

/// The values of an integer tensor: every element within `[lo, hi]` (an end `None` is unbounded).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueRange {
    pub lo: Option<End>,
    pub hi: Option<End>,
    /// The tensor is this graph input, element for element (through casts and reshapes): filling the input fills
    /// it.
    pub input: Option<Arc<str>>,
}

/// Whether `p ≥ 0` at every size.
fn nonnegative(p: &Poly) -> bool {
    p.bounds().lo >= Ext::Fin(0)
}

fn zero() -> Poly {
    Poly::constant(0)
}

impl ValueRange {
    /// Every element is `p`.
    pub fn point(p: Poly) -> ValueRange {
        let end = End::new(p, Some(Reach::always()));
        ValueRange { lo: Some(end.clone()), hi: Some(end), input: None }
    }

    /// Every element within `[lo, hi]`, neither end known to be reached.
    pub fn between(lo: i64, hi: i64) -> ValueRange {
        let end = |v| Some(End::unreached(Poly::constant(v)));
        ValueRange { lo: end(lo), hi: end(hi), input: None }
    }

    /// A graph input the caller feeds: a boolean one is 0 or 1 (each reached by filling it), an integer one is
    /// anything, but filling it decides what follows from it (`Equal(input_ids, 1)`).
    pub fn fed(name: &str, elem: Option<i32>) -> Option<ValueRange> {
        let name: Arc<str> = Arc::from(name);
        match elem? {
            BOOL => {
                let end = |v: i64| {
                    Some(End::new(Poly::constant(v), Some(Reach { fills: vec![(name.clone(), v)], every: true })))
                };
                Some(ValueRange { lo: end(0), hi: end(1), input: Some(name.clone()) })
            }
            e if is_integer(e) => Some(ValueRange { lo: None, hi: None, input: Some(name) }),
            _ => None,
        }
    }

    /// A graph input whose values the caller keeps within `[lo, hi]` (`--range attention_mask=0..1`), each end
    /// reached by filling it with that end.
    pub fn fed_within(name: &str, lo: i64, hi: i64) -> ValueRange {
        let name: Arc<str> = Arc::from(name);
        let end =
            |v: i64| Some(End::new(Poly::constant(v), Some(Reach { fills: vec![(name.clone(), v)], every: true })));
        ValueRange { lo: end(lo), hi: end(hi), input: Some(name.clone()) }
    }

    /// What known contents say: one value everywhere, or the least and greatest of known constants; a boolean
    /// tensor is 0 or 1.
    pub fn of_facts(f: &ValueFacts) -> Option<ValueRange> {
        if let Some(values) = f.value.as_deref().filter(|v| !v.is_empty()) {
            let values: Option<Vec<&Poly>> = values.iter().map(Option::as_ref).collect();
            if let Some(values) = values {
                if values.iter().all(|v| *v == values[0]) {
                    return Some(ValueRange::point(values[0].clone()));
                }
                let constants: Option<Vec<i64>> = values.iter().map(|v| v.as_constant()).collect();
                if let Some(c) = constants {
                    let end = |v: i64| Some(End::new(Poly::constant(v), Some(Reach::somewhere())));
                    let (lo, hi) = (*c.iter().min()?, *c.iter().max()?);
                    return Some(ValueRange { lo: end(lo), hi: end(hi), input: None });
                }
            }
        }
        (f.elem == Some(BOOL)).then(|| ValueRange::between(0, 1))
    }

    /// Some of the elements (a slice, a gather): the bounds hold, an end reached everywhere still is.
    fn subset(&self) -> ValueRange {
        let keep = |e: &Option<End>| e.as_ref().map(|e| End::new(e.at.clone(), e.reach.clone().filter(|r| r.every)));
        ValueRange { lo: keep(&self.lo), hi: keep(&self.hi), input: None }
    }

    /// `-x`.
    fn neg(&self) -> ValueRange {
        let flip = |e: &Option<End>| e.as_ref().and_then(|e| Some(End::new(e.at.neg()?, e.reach.clone())));
        ValueRange { lo: flip(&self.hi), hi: flip(&self.lo), input: None }
    }

    /// `x + y`, elementwise with broadcasting.
    fn add(&self, other: &ValueRange) -> ValueRange {
        let sum = |a: &Option<End>, b: &Option<End>| {
            let (a, b) = (a.as_ref()?, b.as_ref()?);
            Some(End::new(a.at.add(&b.at)?, Reach::with(a.reach.as_ref(), b.reach.as_ref())))
        };
        ValueRange { lo: sum(&self.lo, &other.lo), hi: sum(&self.hi, &other.hi), input: None }
    }

    /// `x * c` for a constant `c`: the ends scaled (swapped by a negative `c`), reached where they were.
    fn scale(&self, c: i64) -> Option<ValueRange> {
        if c < 0 {
            return self.neg().scale(c.checked_neg()?);
        }
        let times = |e: &Option<End>| e.as_ref().and_then(|e| Some(End::new(e.at.scale(c)?, e.reach.clone())));
        Some(ValueRange { lo: times(&self.lo), hi: times(&self.hi), input: None })
    }

    /// The one value of every element, when both ends are the same constant.
    fn constant(&self) -> Option<i64> {
        match (&self.lo, &self.hi) {
            (Some(lo), Some(hi)) if lo.at == hi.at => lo.at.as_constant(),
            _ => None,
        }
    }

    /// `x * y`: by a constant, or where both are never negative (a mask times positions).
    fn mul(&self, other: &ValueRange) -> Option<ValueRange> {
        if let Some(c) = other.constant() {
            return self.scale(c);
        }
        if let Some(c) = self.constant() {
            return other.scale(c);
        }
        let lo_a = self.lo.as_ref().filter(|e| nonnegative(&e.at))?;
        let lo_b = other.lo.as_ref().filter(|e| nonnegative(&e.at))?;
        let product =
            |a: &End, b: &End| Some(End::new(a.at.mul(&b.at)?, Reach::with(a.reach.as_ref(), b.reach.as_ref())));
        let hi = match (&self.hi, &other.hi) {
            (Some(a), Some(b)) => product(a, b),
            _ => None,
        };
        Some(ValueRange { lo: product(lo_a, lo_b), hi, input: None })
    }

    /// `CumSum` along an axis of `n` elements (`exclusive`: each sum leaves its own element out). For elements
    /// that are never negative, the sums lie between the least element (0 when exclusive) and `n` times the
    /// greatest, which the last sum reaches where every element is at its greatest; never positive, the other way.
    fn cumsum(&self, n: &Poly, exclusive: bool) -> Option<ValueRange> {
        let never_positive = self.hi.as_ref().is_some_and(|e| e.at.neg().is_some_and(|p| nonnegative(&p)));
        if never_positive && !self.lo.as_ref().is_some_and(|e| nonnegative(&e.at)) {
            return Some(self.neg().cumsum(n, exclusive)?.neg());
        }
        let lo = self.lo.as_ref().filter(|e| nonnegative(&e.at))?;
        let at_least = match exclusive {
            true => End::new(zero(), Some(Reach::somewhere())),
            false => End::new(lo.at.clone(), lo.reach.clone().filter(|r| r.every).map(|r| Reach { every: false, ..r })),
        };
        let count = if exclusive { n.sub(&Poly::constant(1))? } else { n.clone() };
        let at_most = self.hi.as_ref().and_then(|hi| {
            let reach = hi.reach.clone().filter(|r| r.every).map(|r| Reach { every: false, ..r });
            Some(End::new(hi.at.mul(&count)?, reach))
        });
        Some(ValueRange { lo: Some(at_least), hi: at_most, input: None })
    }

    /// The elementwise greatest (`max`) or least of several: each end the extremum of theirs. Where the ends
    /// are one value, the end on the extremum's side (the high end of a max) is reached where any input reaches
    /// it, the other only where all do at one element.
    fn extremum(all: &[ValueRange], max: bool) -> Option<ValueRange> {
        let end = |pick: &dyn Fn(&ValueRange) -> &Option<End>, outer: bool| {
            let ends: Vec<&End> = all.iter().map(|r| pick(r).as_ref()).collect::<Option<_>>()?;
            let first = ends.first()?;
            if ends.iter().all(|e| e.at == first.at) {
                let reach = match outer {
                    true => ends.iter().find_map(|e| e.reach.clone()),
                    false => ends[1..]
                        .iter()
                        .try_fold(first.reach.clone(), |acc, e| Some(Reach::with(acc.as_ref(), e.reach.as_ref())))?,
                };
                return Some(End::new(first.at.clone(), reach));
            }
            let at = ends[1..]
                .iter()
                .fold(first.at.clone(), |acc, e| if max { acc.max_of(&e.at) } else { acc.min_of(&e.at) });
            Some(End::unreached(at))
        };
        Some(ValueRange { lo: end(&|r| &r.lo, !max), hi: end(&|r| &r.hi, max), input: None })
    }

    /// Values drawn from any of several (Where, Concat): the least of the lows and the greatest of the highs.
    fn hull(all: &[ValueRange]) -> ValueRange {
        let end = |pick: &dyn Fn(&ValueRange) -> &Option<End>, max: bool| {
            let ends: Option<Vec<&End>> = all.iter().map(|r| pick(r).as_ref()).collect();
            let ends = ends?;
            let first = ends.first()?;
            if ends.iter().all(|e| e.at == first.at) {
                let every = ends.iter().all(|e| e.reach.as_ref().is_some_and(|r| r.every && r.fills.is_empty()));
                return Some(End::new(first.at.clone(), every.then(Reach::always)));
            }
            let at = ends[1..]
                .iter()
                .fold(first.at.clone(), |acc, e| if max { acc.max_of(&e.at) } else { acc.min_of(&e.at) });
            Some(End::unreached(at))
        };
        ValueRange { lo: end(&|r| &r.lo, false), hi: end(&|r| &r.hi, true), input: None }
    }
}

fn is_integer(elem: i32) -> bool {
    use DataType::*;
    [Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64].iter().any(|&t| t as i32 == elem)
}

/// The inputs of a node as this module reads them: their facts and the ranges the walk keeps.
pub struct Operands<'a> {
    pub facts: &'a [Option<&'a ValueFacts>],
    pub ranges: &'a [Option<&'a ValueRange>],
}

impl Operands<'_> {
    /// Input `i`'s range: the one kept, else what its facts say.
    fn range(&self, i: usize) -> Option<ValueRange> {
        if let Some(r) = self.ranges.get(i).copied().flatten() {
            return Some(r.clone());
        }
        self.facts.get(i).copied().flatten().and_then(ValueRange::of_facts)
    }

    /// Input `i`'s one value, when it holds one element that is known.
    fn scalar(&self, i: usize) -> Option<Poly> {
        match self.facts.get(i).copied().flatten()?.value.as_deref()? {
            [Some(v)] => Some(v.clone()),
            _ => None,
        }
    }

    fn all(&self) -> Option<Vec<ValueRange>> {
        (0..self.facts.len()).map(|i| self.range(i)).collect()
    }
}

/// The range of the first output of a default-domain node of `op`, whose first output has facts `output`.
pub fn of_node(op: &str, attrs: Attrs<'_>, inputs: &Operands<'_>, output: &ValueFacts) -> Option<ValueRange> {
    if output.elem.is_some_and(|e| e != BOOL && !is_integer(e)) {
        return None;
    }
    if let Some(known) = output.value.as_ref().and_then(|_| ValueRange::of_facts(output)) {
        return Some(known);
    }
    of_op(op, attrs, inputs, output).or_else(|| (output.elem == Some(BOOL)).then(|| ValueRange::between(0, 1)))
}

/// The inputs whose kept ranges [`of_node`] reads for a node of `op`, bit by position (`u64::MAX`: all of them):
/// only a value some reader reads the range of needs one kept (see `analysis::flow`). In step with [`of_op`], whose
/// `r(i)` and `inputs.all()` are the reads; a test holds the two together.
pub fn inputs_read(op: &str) -> u64 {
    match op {
        "Identity" | "Unsqueeze" | "Squeeze" | "Reshape" | "Flatten" | "Expand" | "Transpose" | "Tile" | "Cast"
        | "Slice" | "Gather" | "GatherElements" | "GatherND" | "Compress" | "Neg" | "Abs" | "CumSum" | "Not" => 1,
        "Add" | "Sub" | "Mul" | "Equal" => 0b11,
        "Where" => 0b110,
        "Max" | "Min" | "Concat" => u64::MAX,
        _ => 0,
    }
}

fn of_op(op: &str, attrs: Attrs<'_>, inputs: &Operands<'_>, output: &ValueFacts) -> Option<ValueRange> {
    let r = |i| inputs.range(i);
    match op {
        "Identity" | "Unsqueeze" | "Squeeze" | "Reshape" | "Flatten" | "Expand" | "Transpose" | "Tile" => r(0),
        "Cast" => cast(r(0)?, output.elem?),
        "Slice" | "Gather" | "GatherElements" | "GatherND" | "Compress" => Some(r(0)?.subset()),
        "Add" => Some(r(0)?.add(&r(1)?)),
        "Sub" => Some(r(0)?.add(&r(1)?.neg())),
        "Mul" => r(0)?.mul(&r(1)?),
        "Neg" => Some(r(0)?.neg()),
        "Abs" => r(0).filter(|x| x.lo.as_ref().is_some_and(|e| nonnegative(&e.at))),
        "Max" | "Min" => ValueRange::extremum(&inputs.all()?, op == "Max"),
        "Where" => Some(ValueRange::hull(&[r(1)?, r(2)?])),
        "Concat" => Some(ValueRange::hull(&inputs.all()?)),
        "CumSum" => {
            let dims = inputs.facts.first().copied().flatten()?.shape.dims()?;
            let axis = super::normalize_axis(inputs.scalar(1)?.as_constant()?, dims.len())?;
            r(0)?.cumsum(&dims[axis].to_poly()?, attrs.int("exclusive").unwrap_or(0) != 0)
        }
        "Range" => range(inputs.scalar(0)?, inputs.scalar(1)?, inputs.scalar(2)?.as_constant()?),
        "Equal" => Some(equal(&r(0)?, &r(1)?).unwrap_or_else(|| ValueRange::between(0, 1))),
        "Not" => {
            let x = r(0)?;
            let flip = |e: &Option<End>, v: i64| e.as_ref().map(|e| End::new(Poly::constant(v), e.reach.clone()));
            Some(ValueRange { lo: flip(&x.hi, 0), hi: flip(&x.lo, 1), input: None })
        }
        "ConstantOfShape" => {
            let values = attrs.tensor("value").and_then(crate::onnx::tensor::int_values);
            match values.as_deref() {
                Some([v]) => Some(ValueRange::point(Poly::constant(*v))),
                None => Some(ValueRange::point(zero())),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A cast to an integer type keeps the values where the type holds them: int64 and int32 for sizes (a symbolic
/// bound is a size, which int32 shape arithmetic assumes below 2³¹ too), narrower types only constant bounds that
/// fit.
fn cast(x: ValueRange, to: i32) -> Option<ValueRange> {
    use DataType::*;
    let wide = to == Int64 as i32 || to == Int32 as i32;
    let fits = |e: &Option<End>, lo: i64, hi: i64| {
        e.as_ref().and_then(|e| e.at.as_constant()).is_some_and(|c| (lo..=hi).contains(&c))
    };
    let narrow = [(Int8, -128, 127), (Int16, -32768, 32767), (Uint8, 0, 255), (Uint16, 0, 65535)]
        .iter()
        .any(|&(t, lo, hi)| t as i32 == to && fits(&x.lo, lo, hi) && fits(&x.hi, lo, hi));
    (wide || narrow).then_some(x)
}

/// `Range(start, limit, delta)`: from `start` by `delta` up to (not including) `limit`; with a step of one, the
/// last element is `limit - 1` (or `limit + 1` counting down), reached whenever there is an element.
fn range(start: Poly, limit: Poly, delta: i64) -> Option<ValueRange> {
    let first = End::new(start, Some(Reach::somewhere()));
    let reach = (delta.abs() == 1).then(Reach::somewhere);
    match delta {
        d if d > 0 => {
            Some(ValueRange { lo: Some(first), hi: Some(End::new(limit.sub(&Poly::constant(1))?, reach)), input: None })
        }
        d if d < 0 => {
            Some(ValueRange { lo: Some(End::new(limit.add(&Poly::constant(1))?, reach)), hi: Some(first), input: None })
        }
        _ => None,
    }
}

/// `Equal(x, c)` where `x` is a graph input and `c` a constant: 1 where the caller fills `x` with `c`, 0 where with
/// anything else (`c + 1`).
fn equal(a: &ValueRange, b: &ValueRange) -> Option<ValueRange> {
    let constant = |r: &ValueRange| match (&r.lo, &r.hi) {
        (Some(lo), Some(hi)) if lo.at == hi.at && lo.reach.as_ref().is_some_and(|r| r.every && r.fills.is_empty()) => {
            lo.at.as_constant()
        }
        _ => None,
    };
    let (name, c) = match (&a.input, constant(b), &b.input, constant(a)) {
        (Some(name), Some(c), _, _) | (_, _, Some(name), Some(c)) => (name.clone(), c),
        _ => return None,
    };
    let end = |bound: i64, fill: i64| {
        Some(End::new(Poly::constant(bound), Some(Reach { fills: vec![(name.clone(), fill)], every: true })))
    };
    Some(ValueRange { lo: end(0, c.checked_add(1)?), hi: end(1, c), input: None })
}

#[cfg(test)]
#[path = "value_range_tests.rs"]
mod tests;
