use std::cmp::Ordering;

use super::*;

fn p(text: &str) -> Poly {
    parse(text).unwrap_or_else(|e| panic!("{text:?} does not parse: {e:?}"))
}

fn n() -> Poly {
    Poly::atom("N")
}

#[test]
fn equal_expressions_have_one_normal_form() {
    let a = n().add(&Poly::constant(1)).unwrap().mul(&Poly::constant(3)).unwrap();
    let b = Poly::constant(3).add(&n().mul(&Poly::constant(3)).unwrap()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.to_string(), "3*N + 3");
    assert_eq!(n().sub(&n()).unwrap(), Poly::constant(0));
}

#[test]
fn exact_division_simplifies_and_inexact_division_is_a_floor() {
    assert_eq!(p("2*N + 4").div_floor(2).unwrap().to_string(), "N + 2");
    assert_eq!(n().div_floor(2).unwrap().to_string(), "floor(N / 2)");
    assert_eq!(Poly::constant(7).div_floor(2).unwrap(), Poly::constant(3));
    assert_eq!(Poly::constant(-7).div_floor(2).unwrap(), Poly::constant(-4));
    assert_eq!(Poly::constant(7).div_ceil(2).unwrap(), Poly::constant(4));
    assert_eq!(n().div_poly(&n()).unwrap(), Poly::constant(1));
    assert_eq!(p("768*N").div_poly(&p("12*N")).unwrap(), Poly::constant(64));
}

#[test]
fn exact_polynomial_division_reduces_to_the_quotient() {
    // ddddocr common.onnx: floor((8210*X + 8210) / (X + 1)) is 8210.
    assert_eq!(p("8210*X + 8210").div_poly(&p("X + 1")).unwrap(), Poly::constant(8210));
    assert_eq!(p("X*X + 2*X + 1").div_poly(&p("X + 1")).unwrap(), p("X + 1"));
    assert_eq!(p("X*Y + Y").div_poly(&p("X + 1")).unwrap(), p("Y"));
    // The exact part comes out of a floor, the rest stays inside.
    assert_eq!(p("X*Y + 5").div_poly(&p("X")).unwrap().to_string(), "Y + floor(5 / X)");
}

#[test]
fn floor_takes_out_its_integer_part() {
    assert_eq!(p("floor((2*N + 3) / 2)"), p("N + 1"));
    // floor((H - 1) / 2) + 1 and floor((H + 1) / 2) are one quantity, printed one way.
    assert_eq!(p("floor((H - 1) / 2) + 1"), p("floor((H + 1) / 2)"));
    assert_eq!(p("floor((H - 1) / 2) + 1").to_string(), "floor((H + 1) / 2)");
    // sympy's spelling of the same floor.
    assert_eq!(p("floor(H/2 - 1/2) + 1"), p("floor((H + 1) / 2)"));
    assert_eq!(p("floor((4*H + 2) / 6)"), p("floor((2*H + 1) / 3)"));
}

#[test]
fn nested_floors_by_constants_become_one() {
    // wav2vec2's feature extractor: floor(floor(samples / 5) / 2) is floor(samples / 10).
    assert_eq!(p("floor(floor(samples / 5) / 2)"), p("floor(samples / 10)"));
    // A chain of stride-2 convolutions.
    assert_eq!(p("floor((floor((H + 1) / 2) + 1) / 2)"), p("floor((H + 3) / 4)"));
    // A common factor cancels first; a scaled inner floor is not merged.
    assert_eq!(p("floor(2*floor(H / 3) / 4)"), p("floor(H / 6)"));
    assert_eq!(p("floor(3*floor(H / 2) / 4)").to_string(), "floor(3*floor(H / 2) / 4)");
}

#[test]
fn every_size_is_at_least_zero() {
    // Equal(N, -1) is false for every size: TorchScript's expand(batch, -1).
    assert_eq!(n().eq_decided(&Poly::constant(-1)), Some(false));
    assert_eq!(n().eq_decided(&Poly::constant(3)), None);
    assert_eq!(p("N + 1").compare(&Poly::constant(0)), Some(Ordering::Greater));
    assert_eq!(p("N - 1").compare(&Poly::constant(0)), None);
    assert_eq!(Poly::constant(0).max_of(&n()), n());
    assert_eq!(Poly::constant(0).min_of(&n()), Poly::constant(0));
    assert_eq!(p("max(0, N - 1)").to_string(), "max(0, N - 1)");
    assert_eq!(p("N*M").abs(), Some(p("N*M")));
    assert_eq!(p("-N").abs(), Some(n()));
    assert_eq!(p("N - M").abs(), None);
}

#[test]
fn min_and_max_flatten_and_drop_what_is_beaten() {
    assert_eq!(p("min(512, seq)").to_string(), "min(512, seq)");
    assert_eq!(p("Min(seq, 512)"), p("min(512, seq)"));
    assert_eq!(p("min(min(512, seq), 1024)"), p("min(512, seq)"));
    assert_eq!(p("min(seq, seq + 1)"), p("seq"));
    assert_eq!(p("max(seq, seq + 1)"), p("seq + 1"));
    assert_eq!(Poly::constant(2).max_of(&Poly::constant(5)), Poly::constant(5));
    assert_eq!(n().max_of(&Poly::atom("M")), Poly::atom("M").max_of(&n()));
    // A minimum bounded by a constant bounds what is built on it.
    assert_eq!(p("min(512, seq)").at_most_for_all(&Poly::constant(512)), Some(true));
}

#[test]
fn modulo_follows_the_divisor_sign() {
    assert_eq!(Poly::constant(-7).modulo(&Poly::constant(3)).unwrap(), Poly::constant(2));
    assert_eq!(p("2*N + 1").modulo(&Poly::constant(2)).unwrap(), Poly::constant(1));
    assert_eq!(p("Mod(N, 2)"), p("N - 2*floor(N / 2)"));
}

#[test]
fn products_of_sums_print_with_parentheses() {
    // nudenet: a product of two floors plus one, printed so that it reads back as itself.
    let a = p("floor(floor(floor(height/2 - 1/2)/2)/2) + 1");
    let b = p("floor(floor(floor(width/2 - 1/2)/2)/2) + 1");
    let prod = a.mul(&b).unwrap();
    assert_eq!(p(&prod.to_string()), prod);
    let nested = p("floor((floor((N + 1) / 2) + 3) / 4)");
    assert_eq!(p(&nested.to_string()), nested);
    assert_eq!(p("3*min(512, seq)*N").to_string(), "3*N*min(512, seq)");
    // The exact part of a division comes out even when the rest is negative: one quantity, one form.
    assert_eq!(p("floor((8210*X + 5) / (X + 1))").to_string(), "floor(-8205 / (X + 1)) + 8210");
    assert_eq!(p("floor((8210*X + 5) / (X + 1))"), p("8210 + floor(-8205 / (X + 1))"));
}

#[test]
fn a_printed_broadcast_parses_back_to_itself() {
    let b = Poly::broadcast(vec!["2*N".into(), "floor(M / 2)".into()].into());
    assert_eq!(p(&b.to_string()), b);
    let nested = p("2*broadcast(2*broadcast(N, M), 7) + 1");
    assert_eq!(nested.to_string(), "15");
    assert_eq!(p(&p("broadcast(2, 5, N)").to_string()), p("broadcast(2, 5, N)"));
    assert_eq!(p("broadcast(1, N)"), p("N"));
}

#[test]
fn text_that_is_not_a_size_does_not_parse() {
    for bad in ["", "N +", "2.5", "N/2", "f(N)", "min(N)", "(N", "N)", "N $ M", "x**99"] {
        assert!(parse(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn overflow_is_no_value() {
    let big = Poly::constant(i64::MAX);
    assert_eq!(big.add(&Poly::constant(1)), None);
    assert_eq!(big.mul(&Poly::constant(2)), None);
    assert_eq!(Poly::constant(i64::MIN).neg(), None);
    assert!(Poly::constant(1 << 62).mul(&p("N")).unwrap().mul(&Poly::constant(4)).is_none());
    // Bounds saturate to infinity instead of overflowing.
    let huge = p("N*N*N").scale(i64::MAX).unwrap();
    assert_eq!((huge.bounds().lo, huge.bounds().hi), (Ext::Fin(0), Ext::PosInf));
}
