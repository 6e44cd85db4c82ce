use std::collections::BTreeMap;

use proptest::prelude::*;

use super::super::{decide, Decision, Predicate, Ranges, SizeRange, UnprovenReason};
use crate::sizes::sym::{parse, Poly};

fn p(text: &str) -> Poly {
    parse(text).unwrap()
}

fn ranges(list: &[(&str, &str)]) -> Ranges {
    let mut r = Ranges::default();
    for (name, text) in list {
        r.insert(name, SizeRange::parse(text).unwrap());
    }
    r
}

fn witness(d: &Decision) -> Vec<(String, u64)> {
    match d {
        Decision::Fails { witness, .. } => witness.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// YOLOv8's anchors (nudenet 320n): the three heads' cells against 21 anchors per cell of the coarsest grid.
fn yolo_anchors() -> Predicate {
    let heads = p("floor((height + 7) / 8)*floor((width + 7) / 8) + floor((height + 15) / 16)*floor((width + 15) / 16) + floor((height + 31) / 32)*floor((width + 31) / 32)");
    let anchors = p("21*floor((height + 31) / 32)*floor((width + 31) / 32)");
    let one = Poly::constant(1);
    Predicate::Any(vec![
        Predicate::Equal(heads.clone(), anchors.clone()),
        Predicate::Equal(heads, one.clone()),
        Predicate::Equal(anchors, one),
    ])
}

#[test]
fn a_position_table_fails_one_past_its_length() {
    let table = Predicate::AtMost(p("seq"), Poly::constant(64));
    assert_eq!(witness(&decide(&table, &ranges(&[("seq", "1..512")]))), [("seq".to_string(), 65)]);
    assert_eq!(decide(&table, &ranges(&[("seq", "1..64")])), Decision::Holds(super::Proof { enumerated: 0 }));
    // The capped slice of a position buffer against the sequence: min(64, seq) = seq, or one of them 1.
    let capped = Predicate::Any(vec![
        Predicate::Equal(p("min(64, seq)"), p("seq")),
        Predicate::Equal(p("min(64, seq)"), Poly::constant(1)),
    ]);
    assert_eq!(witness(&decide(&capped, &ranges(&[("seq", "1..100000")]))), [("seq".to_string(), 65)]);
    assert!(matches!(decide(&capped, &ranges(&[("seq", "1..64")])), Decision::Holds(_)));
}

#[test]
fn yolo_anchors_hold_for_multiples_of_32_by_algebra_alone() {
    let d = decide(&yolo_anchors(), &ranges(&[("height", "320..640/32"), ("width", "320..640/32")]));
    assert_eq!(d, Decision::Holds(super::Proof { enumerated: 0 }));
    let d = decide(&yolo_anchors(), &ranges(&[("height", "320..6400/32"), ("width", "32..64000/32")]));
    assert_eq!(d, Decision::Holds(super::Proof { enumerated: 0 }));
}

#[test]
fn yolo_anchors_fail_at_the_smallest_size_off_the_grid() {
    let d = decide(&yolo_anchors(), &ranges(&[("height", "320..640"), ("width", "320..640")]));
    assert_eq!(witness(&d), [("height".to_string(), 320), ("width".to_string(), 321)]);
    // Sizes just below a multiple of 32 give the same grids: 313..320 all hold, 312 does not.
    assert!(matches!(
        decide(&yolo_anchors(), &ranges(&[("height", "313..320"), ("width", "313..320")])),
        Decision::Holds(_)
    ));
    let d = decide(&yolo_anchors(), &ranges(&[("height", "312..320"), ("width", "320")]));
    assert_eq!(witness(&d), [("height".to_string(), 312), ("width".to_string(), 320)]);
}

#[test]
fn divisibility_is_decided_by_residue_classes() {
    let four_divides = Predicate::Divides(Poly::constant(4), p("6*N"));
    assert_eq!(witness(&decide(&four_divides, &ranges(&[("N", "1..100")]))), [("N".to_string(), 1)]);
    let d = decide(&four_divides, &ranges(&[("N", "2..100000/2")]));
    assert_eq!(d, Decision::Holds(super::Proof { enumerated: 0 }));
}

#[test]
fn a_symbol_without_a_range_leaves_the_condition_unproven() {
    let pair = Predicate::Any(vec![Predicate::Equal(p("seq"), p("M")), Predicate::Equal(p("seq"), Poly::constant(1))]);
    match decide(&pair, &ranges(&[("seq", "2..9")])) {
        Decision::Unproven(u) => {
            assert_eq!(u.reason, UnprovenReason::FreeSymbols(vec!["M".into()]));
            assert_eq!(u.sizes, 8);
            assert_eq!(u.parts.len(), 1, "{u:?}");
            assert_eq!(u.parts[0][0].1.to_string(), "2..9");
        }
        other => panic!("{other:?}"),
    }
    // At seq = 1 it holds whatever M is.
    assert!(matches!(decide(&pair, &ranges(&[("seq", "1")])), Decision::Holds(_)));
}

#[test]
fn an_unknown_dim_is_never_decided() {
    match decide(&Predicate::Unknowable, &ranges(&[])) {
        Decision::Unproven(u) => assert_eq!(u.reason, UnprovenReason::UnknownDim),
        other => panic!("{other:?}"),
    }
}

/// The predicate at one size, worked out directly (no boxes, no search).
fn truth(pred: &Predicate, at: &BTreeMap<String, i64>) -> Option<bool> {
    let value = |q: &Poly| q.substitute(&|n| at.get(n).copied())?.as_constant();
    Some(match pred {
        Predicate::Equal(a, b) => value(a)? == value(b)?,
        Predicate::AtMost(a, b) => value(a)? <= value(b)?,
        Predicate::Divides(d, a) => value(a)?.rem_euclid(value(d)?) == 0,
        Predicate::Any(ps) => ps.iter().map(|q| truth(q, at)).collect::<Option<Vec<bool>>>()?.into_iter().any(|b| b),
        Predicate::All(ps) => ps.iter().map(|q| truth(q, at)).collect::<Option<Vec<bool>>>()?.into_iter().all(|b| b),
        Predicate::Unknowable => return None,
    })
}

/// Small expressions over `a` and `b` with floors, minima and products: the shapes inference makes.
fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![Just("a".to_string()), Just("b".to_string()), (1i64..40).prop_map(|c| c.to_string())];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("({x} + {y})")),
            (inner.clone(), 2i64..4).prop_map(|(x, k)| format!("({x})*{k}")),
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("({x})*({y})")),
            (inner.clone(), 2i64..9).prop_map(|(x, d)| format!("floor(({x}) / {d})")),
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("min({x}, {y})")),
            (inner, 0i64..9).prop_map(|(x, c)| format!("({x} - {c})")),
        ]
    })
}

fn predicate() -> impl Strategy<Value = Predicate> {
    (expr(), expr(), 0..3usize).prop_map(|(x, y, kind)| {
        let (x, y) = (p(&x), p(&y));
        match kind {
            0 => Predicate::Equal(x, y),
            1 => Predicate::AtMost(x, y),
            _ => Predicate::Any(vec![Predicate::Equal(x.clone(), y), Predicate::Equal(x, Poly::constant(1))]),
        }
    })
}

fn range() -> impl Strategy<Value = SizeRange> {
    (0u64..40, 0u64..40, 1u64..5).prop_map(|(min, len, step)| SizeRange::new(min, min + len * step, step).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Every claim is true at every size: a proof holds at each, a witness fails and nothing smaller fails (unless
    /// some smaller size is said to be undecided), and an undecided result fails nowhere.
    #[test]
    fn decisions_agree_with_every_size(pred in predicate(), ra in range(), rb in range()) {
        let mut r = Ranges::default();
        r.insert("a", ra);
        r.insert("b", rb);
        let decision = decide(&pred, &r);
        let mut failing = Vec::new();
        for i in 0..ra.len() {
            for j in 0..rb.len() {
                let (a, b) = (ra.first() + i * ra.step(), rb.first() + j * rb.step());
                let at = BTreeMap::from([("a".to_string(), a as i64), ("b".to_string(), b as i64)]);
                if truth(&pred, &at) == Some(false) {
                    failing.push((i + j, a, b));
                }
            }
        }
        failing.sort();
        let names: Vec<String> = pred.symbols().iter().map(|s| s.to_string()).collect();
        match decision {
            Decision::Holds(_) => prop_assert!(failing.is_empty(), "proved, but fails at {:?}", failing.first()),
            Decision::Fails { witness, smaller_unproven } => {
                let w: BTreeMap<String, u64> = witness.iter().map(|(n, v)| (n.to_string(), *v)).collect();
                let at = BTreeMap::from([
                    ("a".to_string(), *w.get("a").unwrap_or(&ra.first()) as i64),
                    ("b".to_string(), *w.get("b").unwrap_or(&rb.first()) as i64),
                ]);
                prop_assert_eq!(truth(&pred, &at), Some(false), "the witness {:?} holds", w);
                if !smaller_unproven && names.len() == 2 {
                    let first = failing[0];
                    prop_assert_eq!((w["a"], w["b"]), (first.1, first.2), "not the smallest witness");
                }
            }
            Decision::Unproven(_) => {}
        }
    }
}
