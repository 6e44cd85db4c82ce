//! Property tests of the broadcast rules against an independent brute-force model of numpy broadcasting.
//!
//! The model works on plain `Vec<u64>` shapes (dims 0..=4, rank 0..=4). Symbolic properties bind symbols (and
//! unknown dims) to concrete sizes and check that the symbolic verdict agrees with every concrete outcome. The
//! models and the binding check are tests/it/oracle/rules.rs, which the fuzz target `broadcast_algebra` runs too.

use crate::oracle;

use onnx_bcast::rules::{
    bidirectional, equal_shapes, legacy_axis, multidirectional, unidirectional, Condition, ConditionKind, Outcome,
    Verdict,
};
use onnx_bcast::sizes::shape::{Dim, Shape};
use oracle::rules::{
    bindings, check_bindings, conditions, holds, known, legacy_model, multi_known, numpy, permutations, refs, to_shape,
    unknown_count, violated, Grid, D,
};
use proptest::collection::vec;
use proptest::prelude::*;

/// The dim of `shape` on output axis `axis` of a broadcast to rank `rank`, if it has one there.
fn dim_at<T>(shape: &[T], axis: usize, rank: usize) -> Option<&T> {
    (axis + shape.len()).checked_sub(rank).map(|i| &shape[i])
}

// ---------------------------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------------------------

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![2 => Just(1u64), 3 => 0u64..=4]
}

fn any_shape() -> impl Strategy<Value = Vec<u64>> {
    vec(size(), 0..=4)
}

/// Shapes that broadcast by construction: suffixes of one base shape with some dims replaced by 1.
fn compatible_shapes(count: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Vec<u64>>> {
    compatible_shapes_of_rank(count, 0..=4)
}

fn compatible_shapes_of_rank(
    count: std::ops::RangeInclusive<usize>,
    base_rank: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Vec<Vec<u64>>> {
    (vec(0u64..=4, base_rank), vec((0usize..=4, vec(any::<bool>(), 4)), count)).prop_map(|(base, specs)| {
        specs
            .into_iter()
            .map(|(r, ones)| {
                let r = r.min(base.len());
                base[base.len() - r..].iter().zip(ones).map(|(&d, one)| if one { 1 } else { d }).collect()
            })
            .collect()
    })
}

/// Compatible shapes with, sometimes, one dim changed to any size (often breaking compatibility).
fn shapes(count: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Vec<u64>>> {
    let mutated =
        (compatible_shapes(count.clone()), any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0u64..=4)
            .prop_map(|(mut shapes, i, j, v)| {
                let i = i.index(shapes.len());
                if !shapes[i].is_empty() {
                    let j = j.index(shapes[i].len());
                    shapes[i][j] = v;
                }
                shapes
            });
    prop_oneof![compatible_shapes(count.clone()), mutated, vec(any_shape(), count),]
}

/// A pair (a, b) where b is often unidirectionally broadcastable to a.
fn uni_pair() -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    prop_oneof![uni_towards(0..=4), shapes(2..=2).prop_map(|v| (v[0].clone(), v[1].clone())),]
}

/// A pair (a, b) where b is unidirectionally broadcastable to a by construction.
fn uni_towards(a_rank: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    (vec(0u64..=4, a_rank), 0usize..=4, vec(any::<bool>(), 4)).prop_map(|(a, r, ones)| {
        let r = r.min(a.len());
        let b = a[a.len() - r..].iter().zip(ones).map(|(&d, one)| if one { 1 } else { d }).collect();
        (a, b)
    })
}

fn sym_dim(with_unknown: bool) -> BoxedStrategy<D> {
    let w_unknown = if with_unknown { 1 } else { 0 };
    prop_oneof![
        5 => size().prop_map(D::K),
        2 => Just(D::S(0)),
        1 => Just(D::S(1)),
        w_unknown => Just(D::U),
    ]
    .boxed()
}

fn sym_shapes(count: std::ops::RangeInclusive<usize>, with_unknown: bool) -> BoxedStrategy<Vec<Vec<D>>> {
    vec(vec(sym_dim(with_unknown), 0..=3), count).boxed()
}

/// Every binding of N and M in 0..=4 and of the first three unknown dims in 0..=3.
const GRID: Grid =
    Grid { symbols: [&[0, 1, 2, 3, 4], &[0, 1, 2, 3, 4], &[1]], unknown_sizes: &[0, 1, 2, 3], unknowns: 3 };

/// [`check_bindings`] on [`GRID`], as a property's result.
fn check_against_bindings(
    symbolic: &Outcome,
    shapes: &[Vec<D>],
    concrete: impl Fn(&[Vec<u64>]) -> (Outcome, Option<Vec<u64>>),
) -> Result<(), TestCaseError> {
    check_bindings("", symbolic, shapes, &bindings(shapes, GRID), concrete).map_err(TestCaseError::fail)
}

// ---------------------------------------------------------------------------------------------------------------
// Multidirectional against the model
// ---------------------------------------------------------------------------------------------------------------

proptest! {
    /// Some(out) → Same/Broadcast with output `out`; None → a violation whose input and axis name a real conflict.
    #[test]
    fn multidirectional_agrees_with_numpy(shapes in shapes(1..=4)) {
        let o = multi_known(&shapes);
        match numpy(&shapes) {
            Some(out) => {
                prop_assert!(holds(&o), "{:?} → {:?}", shapes, o);
                prop_assert_eq!(o.output, known(&out));
            }
            None => {
                let Verdict::Violation(v) = &o.verdict else {
                    return Err(TestCaseError::fail(format!("{shapes:?} → {o:?}, expected a violation")));
                };
                let rank = shapes.iter().map(Vec::len).max().unwrap_or(0);
                let axis = v.axis.expect("a mismatch has an axis");
                let mine = *dim_at(&shapes[v.input], axis, rank).expect("offending input has the axis");
                prop_assert_ne!(mine, 1);
                let conflicts = shapes.iter().any(|s| {
                    dim_at(s, axis, rank).is_some_and(|&d| d != 1 && d != mine)
                });
                prop_assert!(conflicts, "{:?}: input {} axis {} has no conflict", shapes, v.input, axis);
            }
        }
    }

    /// Step 1 of the SONNX spec: the output rank is the largest input rank.
    #[test]
    fn multidirectional_output_rank_is_max_rank(shapes in shapes(1..=4)) {
        let o = multi_known(&shapes);
        if holds(&o) {
            prop_assert_eq!(o.output.rank(), shapes.iter().map(Vec::len).max());
        }
    }

    /// Same exactly when every input has the same shape (when the rule holds).
    #[test]
    fn multidirectional_same_iff_all_equal(shapes in shapes(1..=4)) {
        let o = multi_known(&shapes);
        let all_equal = shapes.iter().all(|s| *s == shapes[0]);
        prop_assert_eq!(o.verdict == Verdict::Same, all_equal, "{:?} → {:?}", shapes, o);
    }

    /// The SONNX alternate description: Broadcast is commutative.
    #[test]
    fn multidirectional_commutative(shapes in shapes(1..=4)) {
        let o = multi_known(&shapes);
        for p in permutations(shapes.len()) {
            let permuted: Vec<Vec<u64>> = p.iter().map(|&i| shapes[i].clone()).collect();
            let q = multi_known(&permuted);
            prop_assert_eq!(q.verdict.as_str(), o.verdict.as_str(), "{:?} vs {:?}", shapes, permuted);
            prop_assert_eq!(&q.output, &o.output, "{:?} vs {:?}", shapes, permuted);
        }
    }

    /// Broadcast(X1, X2, X3) = Broadcast(Broadcast(X1, X2), X3) = Broadcast(X1, Broadcast(X2, X3)); a violation
    /// anywhere is a violation of the whole.
    #[test]
    fn multidirectional_associative(shapes in shapes(3..=3)) {
        let (a, b, c) = (known(&shapes[0]), known(&shapes[1]), known(&shapes[2]));
        let all = multidirectional(&[&a, &b, &c]);
        let ab = multidirectional(&[&a, &b]);
        let bc = multidirectional(&[&b, &c]);
        let left = if violated(&ab) { ab.clone() } else { multidirectional(&[&ab.output, &c]) };
        let right = if violated(&bc) { bc.clone() } else { multidirectional(&[&a, &bc.output]) };
        for nested in [&left, &right] {
            prop_assert_eq!(violated(nested), violated(&all), "{:?}: {:?} vs {:?}", shapes, nested, all);
            if holds(&all) {
                prop_assert!(holds(nested));
                prop_assert_eq!(&nested.output, &all.output);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The other rules against the model
// ---------------------------------------------------------------------------------------------------------------

proptest! {
    /// B is unidirectionally broadcastable to A exactly when numpy(A, B) = A; the output is always A.
    #[test]
    fn unidirectional_holds_iff_numpy_gives_a((a, b) in uni_pair()) {
        let o = unidirectional(&known(&a), &known(&b));
        let expect = numpy(&[a.clone(), b.clone()]).as_ref() == Some(&a);
        prop_assert_eq!(holds(&o), expect, "{:?} {:?} → {:?}", a, b, o);
        prop_assert_eq!(violated(&o), !expect, "{:?} {:?} → {:?}", a, b, o);
        prop_assert_eq!(&o.output, &known(&a));
        prop_assert_eq!(o.verdict == Verdict::Same, a == b);
        if let Verdict::Violation(v) = &o.verdict {
            prop_assert_eq!(v.input, 1);
        }
    }

    /// The legacy rule with the default axis (None or -1) agrees with unidirectional when B has no trailing 1s.
    #[test]
    fn legacy_default_axis_agrees_with_unidirectional(
        (a, b) in uni_pair().prop_map(|(a, mut b)| {
            while b.last() == Some(&1) {
                b.pop();
            }
            (a, b)
        })
    ) {
        let (sa, sb) = (known(&a), known(&b));
        let u = unidirectional(&sa, &sb);
        prop_assert_eq!(&legacy_axis(&sa, &sb, None), &u, "{:?} {:?}", a, b);
        prop_assert_eq!(&legacy_axis(&sa, &sb, Some(-1)), &u, "{:?} {:?}", a, b);
    }

    /// The legacy rule with an explicit axis, against a model of the PDPD statement: trailing 1s of B dropped, the
    /// rest a contiguous run of A from `axis` where each size is A's or 1.
    #[test]
    fn legacy_explicit_axis_agrees_with_model((a, b) in uni_pair(), axis in -2i64..=4) {
        let o = legacy_axis(&known(&a), &known(&b), Some(axis));
        let expect = legacy_model(&a, &b, Some(axis));
        prop_assert_eq!(holds(&o), expect, "{:?} {:?} axis {} → {:?}", a, b, axis, o);
        prop_assert_eq!(violated(&o), !expect);
        prop_assert_eq!(&o.output, &known(&a));
    }

    /// No broadcasting: the rule holds exactly when every shape is identical, and the verdict is then Same.
    #[test]
    fn equal_shapes_iff_identical(shapes in shapes(1..=4)) {
        let owned: Vec<Shape> = shapes.iter().map(|s| known(s)).collect();
        let o = equal_shapes(&refs(&owned));
        let identical = shapes.iter().all(|s| *s == shapes[0]);
        prop_assert_eq!(holds(&o), identical, "{:?} → {:?}", shapes, o);
        prop_assert_eq!(violated(&o), !identical);
        if identical {
            prop_assert_eq!(o.verdict, Verdict::Same);
            prop_assert_eq!(o.output, known(&shapes[0]));
        }
    }

    /// Expand: the output is numpy(data, target); Same exactly when that is the data's shape.
    #[test]
    fn bidirectional_agrees_with_numpy(pair in shapes(2..=2)) {
        let (data, target) = (&pair[0], &pair[1]);
        let o = bidirectional(&known(data), &known(target));
        match numpy(&pair) {
            Some(out) => {
                prop_assert!(holds(&o), "{:?} → {:?}", pair, o);
                prop_assert_eq!(o.verdict == Verdict::Same, &out == data);
                prop_assert_eq!(o.output, known(&out));
            }
            None => prop_assert!(violated(&o), "{:?} → {:?}", pair, o),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Symbols
// ---------------------------------------------------------------------------------------------------------------

proptest! {
    /// Replacing a known dim of a broadcastable case by a fresh symbol S: where S meets a known size other than 1,
    /// the verdict is Conditional with S ∈ {1, k} on that axis (a known size never silently wins); where it meets
    /// only 1s, the rule still holds with S in the output.
    #[test]
    fn multidirectional_fresh_symbol_never_silently_loses(
        shapes in compatible_shapes_of_rank(1..=4, 1..=4),
        pick in any::<prop::sample::Index>(),
    ) {
        // One dim among all the inputs' dims.
        let places: Vec<(usize, usize)> =
            shapes.iter().enumerate().flat_map(|(i, s)| (0..s.len()).map(move |j| (i, j))).collect();
        prop_assume!(!places.is_empty());
        let (i, j) = places[pick.index(places.len())];
        let rank = shapes.iter().map(Vec::len).max().unwrap();
        let axis = rank - shapes[i].len() + j;
        let out = numpy(&shapes).expect("compatible by construction");
        let others: Vec<u64> = shapes
            .iter()
            .enumerate()
            .filter(|&(m, _)| m != i)
            .filter_map(|(_, s)| dim_at(s, axis, rank).copied())
            .filter(|&d| d != 1)
            .collect();
        let mut owned: Vec<Shape> = shapes.iter().map(|s| known(s)).collect();
        let mut dims = owned[i].dims().unwrap().to_vec();
        dims[j] = Dim::sym("S");
        owned[i] = Shape::ranked(dims);
        let o = multidirectional(&refs(&owned));
        if let Some(&k) = others.first() {
            let Verdict::Conditional(conds) = &o.verdict else {
                return Err(TestCaseError::fail(format!("{shapes:?} with S at {i},{j}: {o:?}, expected conditional")));
            };
            prop_assert_eq!(conds.len(), 1);
            prop_assert_eq!(conds[0].axis, axis);
            let mut options = vec![Dim::Known(1), Dim::Known(k)];
            options.sort();
            options.dedup();
            prop_assert_eq!(&conds[0].kind, &ConditionKind::OneOf { dim: Dim::sym("S"), options });
            prop_assert_eq!(o.output, known(&out));
        } else {
            prop_assert!(holds(&o), "{:?} with S at {},{}: {:?}", shapes, i, j, o);
            let mut expected: Vec<Dim> = out.iter().map(|&d| Dim::Known(d)).collect();
            expected[axis] = Dim::sym("S");
            prop_assert_eq!(o.output, Shape::ranked(expected));
        }
    }

    /// The same for unidirectional: a fresh symbol in B meeting A's known size k must be conditional (S ∈ {1, k},
    /// or S = 1 when k is 1); a fresh symbol in A meeting B's known size k other than 1 must be conditional S = k.
    #[test]
    fn unidirectional_fresh_symbol_never_silently_loses(
        (a, b) in uni_towards(1..=4),
        in_b in any::<bool>(),
        j in any::<prop::sample::Index>(),
    ) {
        prop_assert_eq!(numpy(&[a.clone(), b.clone()]), Some(a.clone()));
        let in_b = in_b && !b.is_empty();
        let target = if in_b { &b } else { &a };
        let j = j.index(target.len());
        let offset = a.len() - b.len();
        let mut sa: Vec<Dim> = a.iter().map(|&d| Dim::Known(d)).collect();
        let mut sb: Vec<Dim> = b.iter().map(|&d| Dim::Known(d)).collect();
        let o;
        if in_b {
            sb[j] = Dim::sym("S");
            o = unidirectional(&Shape::ranked(sa.clone()), &Shape::ranked(sb));
            let k = a[offset + j];
            let mut options = vec![Dim::Known(1), Dim::Known(k)];
            options.sort();
            options.dedup();
            prop_assert_eq!(
                &o.verdict,
                &Verdict::Conditional(vec![Condition {
                    axis: offset + j,
                    kind: ConditionKind::OneOf { dim: Dim::sym("S"), options },
                }]),
                "{:?} {:?} S in B at {}", a, b, j
            );
            prop_assert_eq!(o.output, Shape::ranked(sa));
        } else {
            sa[j] = Dim::sym("S");
            o = unidirectional(&Shape::ranked(sa.clone()), &Shape::ranked(sb));
            let partner = j.checked_sub(offset).map(|jb| b[jb]).filter(|&d| d != 1);
            match partner {
                Some(k) => prop_assert_eq!(
                    &o.verdict,
                    &Verdict::Conditional(vec![Condition {
                        axis: j,
                        kind: ConditionKind::OneOf { dim: Dim::sym("S"), options: vec![Dim::Known(k)] },
                    }]),
                    "{:?} {:?} S in A at {}", a, b, j
                ),
                None => prop_assert!(holds(&o), "{:?} {:?} S in A at {}: {:?}", a, b, j, o),
            }
            prop_assert_eq!(o.output, Shape::ranked(sa));
        }
    }

    /// Multidirectional with symbols: a Conditional outcome holds exactly for the bindings satisfying its
    /// conditions (with the bound output); Same/Broadcast hold and Violation is violated for every binding.
    #[test]
    fn multidirectional_symbols_agree_with_bindings(shapes in sym_shapes(1..=3, false)) {
        let owned: Vec<Shape> = shapes.iter().map(|s| to_shape(s)).collect();
        let o = multidirectional(&refs(&owned));
        check_against_bindings(&o, &shapes, |bound| (multi_known(bound), numpy(bound)))?;
    }

    /// With unknown dims too: whatever is claimed (holds, violated) is true for every binding of the unknowns.
    #[test]
    fn multidirectional_unknown_dims_are_sound(shapes in sym_shapes(1..=3, true)) {
        let owned: Vec<Shape> = shapes.iter().map(|s| to_shape(s)).collect();
        let o = multidirectional(&refs(&owned));
        if !matches!(o.verdict, Verdict::Conditional(_)) || unknown_count(&shapes) == 0 {
            check_against_bindings(&o, &shapes, |bound| (multi_known(bound), numpy(bound)))?;
        }
    }

    #[test]
    fn unidirectional_symbols_agree_with_bindings(shapes in sym_shapes(2..=2, false)) {
        let o = unidirectional(&to_shape(&shapes[0]), &to_shape(&shapes[1]));
        check_against_bindings(&o, &shapes, |bound| {
            (unidirectional(&known(&bound[0]), &known(&bound[1])), Some(bound[0].clone()))
        })?;
    }

    #[test]
    fn unidirectional_unknown_dims_are_sound(shapes in sym_shapes(2..=2, true)) {
        let o = unidirectional(&to_shape(&shapes[0]), &to_shape(&shapes[1]));
        if !matches!(o.verdict, Verdict::Conditional(_)) || unknown_count(&shapes) == 0 {
            check_against_bindings(&o, &shapes, |bound| {
                (unidirectional(&known(&bound[0]), &known(&bound[1])), Some(bound[0].clone()))
            })?;
        }
    }

    #[test]
    fn legacy_axis_symbols_agree_with_bindings(shapes in sym_shapes(2..=2, false), axis in prop::option::of(-1i64..=3)) {
        let o = legacy_axis(&to_shape(&shapes[0]), &to_shape(&shapes[1]), axis);
        check_against_bindings(&o, &shapes, |bound| {
            (legacy_axis(&known(&bound[0]), &known(&bound[1]), axis), Some(bound[0].clone()))
        })?;
    }

    #[test]
    fn equal_shapes_symbols_agree_with_bindings(shapes in sym_shapes(1..=3, false)) {
        let owned: Vec<Shape> = shapes.iter().map(|s| to_shape(s)).collect();
        let o = equal_shapes(&refs(&owned));
        check_against_bindings(&o, &shapes, |bound| {
            let owned: Vec<Shape> = bound.iter().map(|s| known(s)).collect();
            (equal_shapes(&refs(&owned)), Some(bound[0].clone()))
        })?;
    }

    #[test]
    fn bidirectional_symbols_agree_with_bindings(shapes in sym_shapes(2..=2, false)) {
        let o = bidirectional(&to_shape(&shapes[0]), &to_shape(&shapes[1]));
        check_against_bindings(&o, &shapes, |bound| {
            (bidirectional(&known(&bound[0]), &known(&bound[1])), numpy(bound))
        })?;
    }

    /// Commutativity with symbols and unknown dims: verdict kind, output and the set of conditions do not depend
    /// on the order of the inputs.
    #[test]
    fn multidirectional_symbols_commutative(shapes in sym_shapes(1..=3, true)) {
        let owned: Vec<Shape> = shapes.iter().map(|s| to_shape(s)).collect();
        let o = multidirectional(&refs(&owned));
        let identity: Vec<usize> = (0..shapes.len()).collect();
        for p in permutations(shapes.len()) {
            let permuted: Vec<Shape> = p.iter().map(|&i| owned[i].clone()).collect();
            let q = multidirectional(&refs(&permuted));
            prop_assert_eq!(q.verdict.as_str(), o.verdict.as_str(), "{:?} vs {:?}", owned, permuted);
            prop_assert_eq!(&q.output, &o.output);
            prop_assert_eq!(conditions(&q, &p), conditions(&o, &identity));
        }
    }
}
