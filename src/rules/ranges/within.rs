//! Facts over ranges of sizes: every size that is one number at every size of the ranges written as that number,
//! `min(64, seq)` as `seq` where seq ≤ 64, a symbolic broadcast of sizes proven equal there as that size. Each
//! result equals the original at every size of the ranges, and nothing is said that holds for part of them only.

use std::sync::Arc;

use super::{decide, Decision, Predicate, Ranges};
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::{Interval, Poly};

/// A polynomial simplified over the ranges (unchanged where the simplification overflows).
pub fn poly_within(p: &Poly, ranges: &Ranges) -> Poly {
    let range = |name: &str| {
        let r = ranges.get(name)?;
        Some(Interval::between(i64::try_from(r.first()).ok()?, i64::try_from(r.last()).ok()?))
    };
    p.within(&range).unwrap_or_else(|| p.clone())
}

/// A dim over the ranges: a number where it is one over them, else its expression simplified; a symbolic
/// broadcast loses the sizes that are 1 over the ranges and becomes its size when the others are proven equal.
pub fn dim_within(d: &Dim, ranges: &Ranges) -> Dim {
    match d {
        Dim::Known(_) | Dim::Unknown => d.clone(),
        Dim::Broadcast(names) => broadcast_within(names, ranges).unwrap_or_else(|| d.clone()),
        other => match other.to_poly() {
            Some(p) => Dim::from_poly(poly_within(&p, ranges)),
            None => d.clone(),
        },
    }
}

fn broadcast_within(names: &Arc<[Arc<str>]>, ranges: &Ranges) -> Option<Dim> {
    let sizes: Vec<Poly> = names
        .iter()
        .map(|n| crate::sizes::sym::parse(n).ok().map(|p| poly_within(&p, ranges)))
        .collect::<Option<_>>()?;
    let mut left: Vec<Poly> = sizes.into_iter().filter(|p| p.as_constant() != Some(1)).collect();
    left.dedup();
    let first = left.first()?.clone();
    let equal = left[1..]
        .iter()
        .all(|p| matches!(decide(&Predicate::Equal(first.clone(), p.clone()), ranges), Decision::Holds(_)));
    equal.then(|| Dim::from_poly(first))
}

pub fn shape_within(s: &Shape, ranges: &Ranges) -> Shape {
    Shape(s.dims().map(|dims| dims.iter().map(|d| dim_within(d, ranges)).collect()))
}

/// Facts with every size, in the shape and in the contents, simplified over the ranges.
pub fn facts_within(f: &ValueFacts, ranges: &Ranges) -> ValueFacts {
    let value = f.value.as_ref().map(|v| v.iter().map(|x| x.as_ref().map(|p| poly_within(p, ranges))).collect());
    ValueFacts { shape: shape_within(&f.shape, ranges), value, ..f.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(list: &[(&str, &str)]) -> Ranges {
        Ranges::parsed(list)
    }

    #[test]
    fn a_size_constant_over_the_ranges_is_that_number() {
        let r = ranges(&[("seq", "64..512")]);
        assert_eq!(dim_within(&Dim::from_dim_param("min(64, seq)"), &r), Dim::Known(64));
        assert_eq!(dim_within(&Dim::from_dim_param("min(64, seq)"), &ranges(&[("seq", "1..64")])), Dim::sym("seq"));
        // Over part of the range only: the expression stays.
        let part = dim_within(&Dim::from_dim_param("min(64, seq)"), &ranges(&[("seq", "1..512")]));
        assert_eq!(part.to_string(), "min(64, seq)");
    }

    #[test]
    fn a_broadcast_of_sizes_equal_over_the_ranges_is_that_size() {
        let names: Arc<[Arc<str>]> = vec![Arc::from("min(64, seq)"), Arc::from("seq")].into();
        assert_eq!(dim_within(&Dim::Broadcast(names.clone()), &ranges(&[("seq", "1..64")])), Dim::sym("seq"));
        assert_eq!(dim_within(&Dim::Broadcast(names.clone()), &ranges(&[("seq", "1..65")])), Dim::Broadcast(names));
    }
}
