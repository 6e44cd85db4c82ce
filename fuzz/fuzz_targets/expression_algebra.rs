//! The symbolic size algebra on arbitrary expression trees (sums, products, floors and ceilings by constants and by
//! expressions, modulo, minima, maxima, absolute values over three sizes, nested up to 12 deep) and arbitrary text
//! for its parser. What must hold is `oracle::sym::expression_algebra`; this file only says how the fuzzer's bytes
//! become a `Case`.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/oracle/mod.rs"]
mod oracle;

use oracle::sym::{Case, E};

fn expr(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<E> {
    let leaf = depth == 0 || u.ratio(1, 4)?;
    if leaf {
        return Ok(match u.int_in_range(0..=3u8)? {
            0 | 1 => E::Sym(u.int_in_range(0..=2)?),
            2 => E::Const(u.int_in_range(-3..=12)?),
            _ => E::Const(i64::arbitrary(u)?),
        });
    }
    let sub = |u: &mut Unstructured<'_>| expr(u, depth - 1).map(Box::new);
    Ok(match u.int_in_range(0..=11u8)? {
        0 => E::Add(sub(u)?, sub(u)?),
        1 => E::Sub(sub(u)?, sub(u)?),
        2 => E::Mul(sub(u)?, sub(u)?),
        3 => E::Neg(sub(u)?),
        4 => E::FloorDiv(sub(u)?, u.int_in_range(-1..=7)?),
        5 => E::CeilDiv(sub(u)?, u.int_in_range(1..=7)?),
        6 => E::DivPoly(sub(u)?, sub(u)?),
        7 => E::Mod(sub(u)?, sub(u)?),
        8 => E::Min(sub(u)?, sub(u)?),
        9 => E::Max(sub(u)?, sub(u)?),
        10 => E::Abs(sub(u)?),
        // The step of the crafted chains: min(s, floor(max(s - 1, 2) / 2)) + max(s - 1, 2), on a sub-expression.
        _ => {
            let s = sub(u)?;
            let m = Box::new(E::Max(Box::new(E::Sub(s.clone(), Box::new(E::Const(1)))), Box::new(E::Const(2))));
            E::Add(Box::new(E::Min(s, Box::new(E::FloorDiv(m.clone(), 2)))), m)
        }
    })
}

impl<'a> Arbitrary<'a> for Case {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let count = u.int_in_range(1..=3usize)?;
        let exprs = (0..count).map(|_| expr(u, 12)).collect::<arbitrary::Result<Vec<E>>>()?;
        Ok(Case { exprs, text: String::arbitrary(u)? })
    }
}

fuzz_target!(|case: Case| oracle::sym::expression_algebra(&case));
