//! The interval algebra of value ranges against evaluation: random chains of the ops position ids are made of,
//! evaluated on random data at concrete sizes, must stay within their ranges, and reach every end the range says
//! is reached once the inputs are filled as it says.

use super::*;
use proptest::prelude::*;

fn seq() -> Poly {
    Poly::symbol(Arc::from("seq"))
}

fn at(p: &Poly, n: i64) -> i64 {
    p.substitute(&|s| (s == "seq").then_some(n)).and_then(|p| p.as_constant()).expect("a constant at a size")
}

/// A chain of ops over 1-D tensors of `seq` elements, and one fed integer input `ids`.
#[derive(Clone, Debug)]
enum Expr {
    /// `Range(0, seq, 1)`.
    Positions,
    /// `Not(Equal(ids, c))` as 0/1.
    NotEqual(i64),
    /// `Equal(ids, c)` as 0/1.
    Equal(i64),
    Constant(i64),
    AddConst(Box<Expr>, i64),
    MulConst(Box<Expr>, i64),
    Neg(Box<Expr>),
    CumSum(Box<Expr>, bool),
    Add(Box<Expr>, Box<Expr>),
    Mul(Box<Expr>, Box<Expr>),
    Max(Box<Expr>, Box<Expr>),
    Min(Box<Expr>, Box<Expr>),
    Where(Box<Expr>, Box<Expr>),
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        Just(Expr::Positions),
        (0i64..3).prop_map(Expr::NotEqual),
        (0i64..3).prop_map(Expr::Equal),
        (-3i64..4).prop_map(Expr::Constant),
    ];
    leaf.prop_recursive(4, 16, 2, |inner| {
        let b = |e| Box::new(e);
        prop_oneof![
            (inner.clone(), -3i64..4).prop_map(move |(e, k)| Expr::AddConst(b(e), k)),
            (inner.clone(), -3i64..4).prop_map(move |(e, k)| Expr::MulConst(b(e), k)),
            inner.clone().prop_map(move |e| Expr::Neg(b(e))),
            (inner.clone(), any::<bool>()).prop_map(move |(e, x)| Expr::CumSum(b(e), x)),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Expr::Add(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Expr::Mul(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Expr::Max(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Expr::Min(b(x), b(y))),
            (inner.clone(), inner).prop_map(move |(x, y)| Expr::Where(b(x), b(y))),
        ]
    })
}

fn ids() -> ValueRange {
    ValueRange::fed("ids", Some(crate::onnx::tensor::INT64)).unwrap()
}

/// The range the module gives the expression (`None`: no fact).
fn symbolic(e: &Expr) -> Option<ValueRange> {
    Some(match e {
        Expr::Positions => range(Poly::constant(0), seq(), 1)?,
        Expr::NotEqual(c) => {
            let eq = equal(&ids(), &ValueRange::point(Poly::constant(*c)))?;
            ValueRange {
                lo: eq.hi.map(|e| End::new(zero(), e.reach)),
                hi: eq.lo.map(|e| End::new(Poly::constant(1), e.reach)),
                input: None,
            }
        }
        Expr::Equal(c) => equal(&ids(), &ValueRange::point(Poly::constant(*c)))?,
        Expr::Constant(k) => ValueRange::point(Poly::constant(*k)),
        Expr::AddConst(x, k) => symbolic(x)?.add(&ValueRange::point(Poly::constant(*k))),
        Expr::MulConst(x, k) => symbolic(x)?.mul(&ValueRange::point(Poly::constant(*k)))?,
        Expr::Neg(x) => symbolic(x)?.neg(),
        Expr::CumSum(x, exclusive) => symbolic(x)?.cumsum(&seq(), *exclusive)?,
        Expr::Add(x, y) => symbolic(x)?.add(&symbolic(y)?),
        Expr::Mul(x, y) => symbolic(x)?.mul(&symbolic(y)?)?,
        Expr::Max(x, y) => ValueRange::extremum(&[symbolic(x)?, symbolic(y)?], true)?,
        Expr::Min(x, y) => ValueRange::extremum(&[symbolic(x)?, symbolic(y)?], false)?,
        Expr::Where(x, y) => ValueRange::hull(&[symbolic(x)?, symbolic(y)?]),
    })
}

/// The expression's elements at `n` elements with `ids` as given (and a fixed pattern for Where's condition).
fn eval(e: &Expr, ids: &[i64]) -> Vec<i64> {
    let n = ids.len();
    let zip = |x: &Expr, y: &Expr, f: &dyn Fn(i64, i64) -> i64| -> Vec<i64> {
        eval(x, ids).iter().zip(eval(y, ids)).map(|(a, b)| f(*a, b)).collect()
    };
    match e {
        Expr::Positions => (0..n as i64).collect(),
        Expr::NotEqual(c) => ids.iter().map(|v| i64::from(v != c)).collect(),
        Expr::Equal(c) => ids.iter().map(|v| i64::from(v == c)).collect(),
        Expr::Constant(k) => vec![*k; n],
        Expr::AddConst(x, k) => eval(x, ids).iter().map(|v| v + k).collect(),
        Expr::MulConst(x, k) => eval(x, ids).iter().map(|v| v * k).collect(),
        Expr::Neg(x) => eval(x, ids).iter().map(|v| -v).collect(),
        Expr::CumSum(x, exclusive) => {
            let mut sum = 0;
            eval(x, ids)
                .iter()
                .map(|v| {
                    let before = sum;
                    sum += v;
                    if *exclusive {
                        before
                    } else {
                        sum
                    }
                })
                .collect()
        }
        Expr::Add(x, y) => zip(x, y, &|a, b| a + b),
        Expr::Mul(x, y) => zip(x, y, &|a, b| a * b),
        Expr::Max(x, y) => zip(x, y, &|a, b| a.max(b)),
        Expr::Min(x, y) => zip(x, y, &|a, b| a.min(b)),
        Expr::Where(x, y) => {
            let (a, b) = (eval(x, ids), eval(y, ids));
            (0..n).map(|i| if i % 3 == 1 { a[i] } else { b[i] }).collect()
        }
    }
}

/// Whether an end is reached as it says: with its fills (other data as drawn), every element or some element
/// equals the bound.
fn reached(e: &Expr, end: &End, n: i64, data: &[i64]) -> bool {
    let Some(reach) = &end.reach else { return true };
    let mut ids = data.to_vec();
    for (name, v) in &reach.fills {
        assert_eq!(name.as_ref(), "ids");
        ids.iter_mut().for_each(|x| *x = *v);
    }
    let bound = at(&end.at, n);
    let values = eval(e, &ids);
    if reach.every {
        values.iter().all(|v| *v == bound)
    } else {
        values.contains(&bound)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn value_ranges_hold_and_reach_as_they_say(e in expr(), n in 1i64..12, data in prop::collection::vec(0i64..4, 12)) {
        let Some(r) = symbolic(&e) else { return Ok(()) };
        let ids = &data[..n as usize];
        let values = eval(&e, ids);
        if let Some(lo) = &r.lo {
            let bound = at(&lo.at, n);
            prop_assert!(values.iter().all(|v| *v >= bound), "{e:?} at {n}: {values:?} below {bound}");
            prop_assert!(reached(&e, lo, n, ids), "{e:?} at {n}: low end {bound} not reached as {:?} says", lo.reach);
        }
        if let Some(hi) = &r.hi {
            let bound = at(&hi.at, n);
            prop_assert!(values.iter().all(|v| *v <= bound), "{e:?} at {n}: {values:?} above {bound}");
            prop_assert!(reached(&e, hi, n, ids), "{e:?} at {n}: high end {bound} not reached as {:?} says", hi.reach);
        }
    }
}

#[test]
fn positions_from_a_range_reach_seq_minus_one() {
    let r = range(Poly::constant(0), seq(), 1).unwrap();
    assert_eq!(r.hi.as_ref().unwrap().at.to_string(), "seq - 1");
    assert_eq!(r.hi.unwrap().reach, Some(Reach::somewhere()));
    // A step of two stops below limit - 1 at some sizes: the bound holds, unreached.
    assert_eq!(range(Poly::constant(0), seq(), 2).unwrap().hi.unwrap().reach, None);
}

#[test]
fn roberta_position_ids_reach_seq_plus_one_when_no_id_is_padding() {
    // ids = CumSum(mask) * mask + 1, mask = Not(Equal(input_ids, 1)).
    let eq = equal(&ids(), &ValueRange::point(Poly::constant(1))).unwrap();
    let mask = ValueRange {
        lo: eq.hi.map(|e| End::new(zero(), e.reach)),
        hi: eq.lo.map(|e| End::new(Poly::constant(1), e.reach)),
        input: None,
    };
    let positions = mask.cumsum(&seq(), false).unwrap().mul(&mask).unwrap().add(&ValueRange::point(Poly::constant(1)));
    let hi = positions.hi.unwrap();
    assert_eq!(hi.at.to_string(), "seq + 1");
    assert_eq!(hi.reach, Some(Reach { fills: vec![(Arc::from("ids"), 2)], every: false }));
}

#[test]
fn an_integer_input_alone_bounds_nothing() {
    // OPT: CumSum(attention_mask) of an int64 input: any value may be fed, so no bound.
    assert_eq!(ids().cumsum(&seq(), false), None);
}

#[test]
fn of_node_reads_no_kept_range_that_inputs_read_leaves_out() {
    use crate::onnx::tensor::INT64;
    let ops = [
        "Identity",
        "Unsqueeze",
        "Squeeze",
        "Reshape",
        "Flatten",
        "Expand",
        "Transpose",
        "Tile",
        "Cast",
        "Slice",
        "Gather",
        "GatherElements",
        "GatherND",
        "Compress",
        "Add",
        "Sub",
        "Mul",
        "Neg",
        "Abs",
        "Max",
        "Min",
        "Where",
        "Concat",
        "CumSum",
        "Range",
        "Equal",
        "Not",
        "ConstantOfShape",
        "Size",
    ];
    let node = crate::onnx::pb::NodeProto::default();
    let attrs = Attrs::new(&node, None);
    let vector = ValueFacts::tensor(Some(INT64), crate::sizes::shape::Shape::known(&[4]));
    // Scalars of known value (CumSum's axis, Range's start, limit and step), whose facts give a range of their own:
    // one read where `inputs_read` says none is read would differ from the kept one.
    let scalar = |v: i64| ValueFacts { value: Some(vec![Some(Poly::constant(v))]), ..vector.clone() };
    let facts = [vector.clone(), scalar(0), scalar(1)];
    let refs: Vec<Option<&ValueFacts>> = facts.iter().map(Some).collect();
    let kept: Vec<ValueRange> = (0..3).map(|i| ValueRange::between(10 * i + 2, 10 * i + 5)).collect();
    for op in ops {
        let read = inputs_read(op);
        let all: Vec<Option<&ValueRange>> = kept.iter().map(Some).collect();
        let whole = of_node(op, attrs, &Operands { facts: &refs, ranges: &all }, &vector);
        for left_out in (0..3).filter(|&i| read >> i & 1 == 0) {
            let mut ranges = all.clone();
            ranges[left_out] = None;
            let without = of_node(op, attrs, &Operands { facts: &refs, ranges: &ranges }, &vector);
            assert_eq!(without, whole, "{op} reads input {left_out}'s range");
        }
        // What it reads, it reads: a range it is given there decides something (else the table keeps more than
        // needed, which costs without being wrong).
        let none: Vec<Option<&ValueRange>> = vec![None; 3];
        let bare = of_node(op, attrs, &Operands { facts: &refs, ranges: &none }, &vector);
        assert_eq!(read != 0, whole != bare, "{op}: kept ranges read {read:b}");
    }
}
