//! numpy broadcasting of two shapes whose sizes are all known: the judgement of most broadcasting nodes of a large
//! graph, made by the walk for every pair it only counts and by the rule for every pair it binds.

use crate::sizes::shape::Dim;

/// Two sizes other than 1 that differ on one output axis: `a`'s and `b`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairMismatch {
    pub axis: usize,
    pub a: u64,
    pub b: u64,
}

/// numpy broadcasting of two shapes whose sizes are all known, the dims of the result written over `output` (a
/// buffer the caller may reuse, holding the dims of a value gone or none: the walk's most common site then
/// allocates nothing, and writes a size over a size): whether both shapes are the result's (`Ok(true)`: the
/// verdict `Same`, else `Broadcast`), or the first axis whose sizes differ with neither being 1. `None` when some
/// size is not known: a violation is concluded only of shapes that are known throughout. `output` is left empty
/// unless the result is `Ok`.
#[inline]
pub fn pair_sizes(a: &[Dim], b: &[Dim], output: &mut Vec<Dim>) -> Option<Result<bool, PairMismatch>> {
    // Most buffers held a value of the result's rank, all sizes (the walk's chains of pairs of one shape): written
    // over in one pass without a check of the buffer's length or a drop per axis. Anything else, a mismatch
    // included, is the general pass's, which writes over whatever this one wrote.
    if output.len() == a.len().max(b.len()) {
        if let Some(same) = sizes_over_sizes(a, b, output) {
            return Some(Ok(same));
        }
    }
    pair_sizes_written(a, b, output)
}

/// [`pair_sizes`] where `a`, `b` and `out` (of the result's rank) hold sizes only and the sizes broadcast: whether
/// both shapes are the result's. `None`, `out` partly written, for anything else.
#[inline(always)]
fn sizes_over_sizes(a: &[Dim], b: &[Dim], out: &mut [Dim]) -> Option<bool> {
    // The result is symmetric in its two shapes, and so is whether both are it: the longer is taken as the first.
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let padded = long.len() - short.len();
    let (out_padded, out_both) = out.split_at_mut(padded);
    for (o, d) in out_padded.iter_mut().zip(long) {
        let (Dim::Known(o), &Dim::Known(x)) = (o, d) else { return None };
        *o = x;
    }
    let (mut same_long, mut same_short) = (true, padded == 0);
    for ((o, x), y) in out_both.iter_mut().zip(&long[padded..]).zip(short) {
        let (Dim::Known(o), &Dim::Known(x), &Dim::Known(y)) = (o, x, y) else { return None };
        let size = match (x, y) {
            _ if x == y || y == 1 => x,
            (1, _) => y,
            _ => return None,
        };
        same_long &= x == size;
        same_short &= y == size;
        *o = size;
    }
    Some(same_long && same_short)
}

/// [`pair_sizes`] judged over the shape that is to hold the result, `over`, of rank at least `other`'s: whether both
/// shapes are the result's, and whether some axis of `over` widens (a 1 broadcast to `other`'s size: the result is
/// then `over` with those axes written by [`widen_over`], else `over` as it is). Nothing is written, so that a pair
/// it does not settle is left to [`pair_sizes`] as it was. `None` where [`pair_sizes`] gives no `Ok`, and where
/// `other` is the longer shape.
#[inline]
pub fn pair_sizes_over(over: &[Dim], other: &[Dim]) -> Option<Over> {
    let padded = over.len().checked_sub(other.len())?;
    if !over[..padded].iter().all(|d| matches!(d, Dim::Known(_))) {
        return None;
    }
    let (mut widens, mut same_other) = (false, padded == 0);
    for (x, y) in over[padded..].iter().zip(other) {
        let (&Dim::Known(x), &Dim::Known(y)) = (x, y) else { return None };
        match (x, y) {
            _ if x == y => {}
            (_, 1) => same_other = false,
            (1, _) => widens = true,
            _ => return None,
        }
    }
    Some(Over { same: !widens && same_other, widens })
}

/// What [`pair_sizes_over`] finds of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Over {
    /// Both shapes are the result's (the verdict `Same`, else `Broadcast`).
    pub same: bool,
    /// Some axis of the shape that holds the result is 1 where the other's is not.
    pub widens: bool,
}

/// Writes the result of a pair that [`pair_sizes_over`] found to widen over `over`: its 1s take `other`'s sizes.
pub fn widen_over(over: &mut [Dim], other: &[Dim]) {
    let padded = over.len() - other.len();
    for (x, y) in over[padded..].iter_mut().zip(other) {
        if *x == Dim::Known(1) {
            x.clone_from(y);
        }
    }
}

/// [`pair_sizes`] over a buffer of any length and dims, and for a mismatch or a size not known.
#[inline(never)]
fn pair_sizes_written(a: &[Dim], b: &[Dim], output: &mut Vec<Dim>) -> Option<Result<bool, PairMismatch>> {
    let rank = a.len().max(b.len());
    // Where each shape starts among the output's axes, padded with 1s on the left.
    let (from_a, from_b) = (rank - a.len(), rank - b.len());
    let (mut same_a, mut same_b) = (from_a == 0, from_b == 0);
    // The axes where the shorter shape is padded: the longer one's sizes, which a padded 1 leaves as they are
    // (and the shorter shape, padded, is not the result's already). Apart from the axes both shapes have, so that
    // no axis asks which shape it is in.
    let (longer, padded) = if from_a > 0 { (b, from_a) } else { (a, from_b) };
    for (axis, d) in longer[..padded].iter().enumerate() {
        let Dim::Known(x) = *d else {
            output.clear();
            return None;
        };
        put_size(output, axis, x);
    }
    for (i, (x, y)) in a[a.len() + padded - rank..].iter().zip(&b[b.len() + padded - rank..]).enumerate() {
        let (&Dim::Known(x), &Dim::Known(y)) = (x, y) else {
            output.clear();
            return None;
        };
        let out = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            output.clear();
            let known = a.iter().chain(b).all(|d| matches!(d, Dim::Known(_)));
            return known.then_some(Err(PairMismatch { axis: padded + i, a: x, b: y }));
        };
        same_a &= x == out;
        same_b &= y == out;
        put_size(output, padded + i, out);
    }
    // The dims past the result's, of a longer shape the buffer held: mostly none, else sizes, which need no drop.
    while output.len() > rank {
        if let Some(d) = output.pop().filter(|d| !matches!(d, Dim::Known(_))) {
            drop(d);
        }
    }
    Some(Ok(same_a && same_b))
}

/// Writes size `size` at axis `axis` of `output`, whose axes before it are written: over a size there (a value of
/// the same shape held the buffer before, as most did), over any other dim, or after the last.
#[inline(always)]
fn put_size(output: &mut Vec<Dim>, axis: usize, size: u64) {
    match output.get_mut(axis) {
        Some(Dim::Known(k)) => *k = size,
        Some(d) => *d = Dim::Known(size),
        None => output.push(Dim::Known(size)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::by_axis;
    use super::super::tests::small_shapes;
    use super::*;
    use crate::rules::Verdict;
    use crate::sizes::shape::Shape;

    #[test]
    fn pair_sizes_over_a_shape_conclude_what_pair_sizes_concludes_and_write_the_same_result() {
        let shapes = small_shapes();
        let n = Shape::ranked(vec![Dim::Known(2), Dim::sym("N")]);
        for a in shapes.iter().chain([&n]) {
            for b in shapes.iter().chain([&n]) {
                let (x, y) = (a.dims().unwrap_or_default(), b.dims().unwrap_or_default());
                let mut buffer = Vec::new();
                let expected = match pair_sizes(x, y, &mut buffer) {
                    Some(Ok(same)) if x.len() >= y.len() => Some(same),
                    _ => None,
                };
                let found = pair_sizes_over(x, y);
                assert_eq!(found.map(|o| o.same), expected, "{a} {b}");
                let Some(Over { widens, .. }) = found else { continue };
                let mut over = x.to_vec();
                widen_over(&mut over, y);
                assert_eq!(over, buffer, "{a} {b}");
                assert_eq!(widens, over != x, "{a} {b}: widens exactly when the result is not the shape it is over");
            }
        }
    }

    #[test]
    fn pair_sizes_fill_a_reused_buffer_with_the_broadcast_and_leave_it_empty_on_a_mismatch_or_a_symbol() {
        let shapes = small_shapes();
        // What the buffer holds on entry is a value's shape gone, of any rank, of sizes and symbols: of the result's
        // rank and all sizes (written over in one pass), or not.
        let sizes = |rank: usize| vec![Dim::Known(7); rank];
        let (mixed, symbol_last) =
            (vec![Dim::Known(4), Dim::sym("N"), Dim::Known(4)], vec![Dim::Known(1), Dim::sym("M")]);
        let left_over = [vec![], vec![Dim::sym("N")], sizes(5), symbol_last, sizes(1), sizes(2), sizes(3), mixed];
        let mut buffer = Vec::new();
        for (a, held) in shapes.iter().zip(left_over.iter().cycle()) {
            for b in &shapes {
                buffer.clone_from(held);
                let (x, y) = (a.dims().unwrap_or_default(), b.dims().unwrap_or_default());
                let found = pair_sizes(x, y, &mut buffer).expect("every size known");
                let merged = by_axis(&[a, b]);
                match (found, merged.verdict) {
                    (Ok(same), verdict) => {
                        assert_eq!(verdict, if same { Verdict::Same } else { Verdict::Broadcast }, "{a} {b}");
                        assert_eq!(Shape::ranked(buffer.clone()), merged.output, "{a} {b}");
                    }
                    (Err(m), Verdict::Violation(v)) => {
                        assert_eq!(Some(m.axis), v.axis, "{a} {b}");
                        assert!(buffer.is_empty(), "{a} {b}");
                    }
                    (found, verdict) => panic!("{a} {b}: {found:?} against {verdict:?}"),
                }
            }
        }
        buffer.clear();
        let n = [Dim::Known(2), Dim::sym("N")];
        assert_eq!(pair_sizes(&n, &[Dim::Known(3), Dim::Known(1)], &mut buffer), None);
        assert_eq!(pair_sizes(&[Dim::Known(3)], &n, &mut buffer), None, "a symbol after the axes met first");
        assert!(buffer.is_empty());
        buffer = vec![Dim::Known(5); 3];
        assert_eq!(pair_sizes(&n, &[Dim::Known(2), Dim::Known(1)], &mut buffer), None);
        assert!(buffer.is_empty(), "a buffer that held a shape is left empty by a symbol met after a size written");
    }
}
