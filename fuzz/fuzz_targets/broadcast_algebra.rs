//! The broadcast rules on arbitrary small shapes: known sizes (small, and now and then huge), symbols, symbolic
//! expressions, symbolic broadcasts and unknown dims, ranked or not. What must hold is
//! `oracle::rules::broadcast_algebra` (shared with tests/it/broadcast_props.rs and the replay of the regressions in
//! tests/it/fuzz_regressions.rs); this file only says how the fuzzer's bytes become shapes.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/oracle/mod.rs"]
mod oracle;

use oracle::rules::{Input, D};

fn dim(u: &mut Unstructured<'_>) -> arbitrary::Result<D> {
    Ok(match u.int_in_range(0..=31u8)? {
        0..=9 => D::K(1),
        10..=19 => D::K(u.int_in_range(0..=4)?),
        20 => D::K(u64::arbitrary(u)?),
        21..=25 => D::S(u.int_in_range(0..=2)?),
        26 | 27 => D::E(u.int_in_range(0..=2)?, u.int_in_range(-2..=3)?),
        28 => {
            let a = u.int_in_range(0..=2)?;
            let b = (a + u.int_in_range(1..=2)?) % 3;
            D::B(a.min(b), a.max(b))
        }
        _ => D::U,
    })
}

/// 1–4 shapes of rank ≤ 6 (one in 16 of unknown rank), and a legacy axis: none, -1, small, or any i64.
fn input(u: &mut Unstructured<'_>) -> arbitrary::Result<Input> {
    let count = u.int_in_range(1..=4usize)?;
    let mut shapes = Vec::with_capacity(count);
    for _ in 0..count {
        if u.ratio(1, 16)? {
            shapes.push(None);
            continue;
        }
        let rank = u.int_in_range(0..=6usize)?;
        shapes.push(Some((0..rank).map(|_| dim(u)).collect::<arbitrary::Result<Vec<D>>>()?));
    }
    let axis = match u.int_in_range(0..=3u8)? {
        0 => None,
        1 => Some(-1),
        2 => Some(u.int_in_range(-2..=7)?),
        _ => Some(i64::arbitrary(u)?),
    };
    Ok(Input { shapes, axis })
}

// `Input`'s Debug form is a `.shapes` regression file: `cargo fuzz fmt broadcast_algebra ARTIFACT` prints one.
impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        input(u)
    }
}

fuzz_target!(|input: Input| oracle::rules::broadcast_algebra(&input));
