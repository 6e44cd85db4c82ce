//! The contents of small integer tensors moved around by layout ops: shape vectors that exporters reshape,
//! transpose, slice with steps, gather, concatenate, split, tile and expand (TorchScript's `F.pad` turns its pads
//! through `Reshape([-1, 2])`, a reversing `Slice`, `Transpose` and `Reshape([-1])`). Contents are row-major; every
//! helper needs the static dims of its input and gives `None` when they are not known or the result would be
//! larger than [`MAX_VALUE_ELEMENTS`].

use std::borrow::Cow;

use crate::onnx::tensor::{IntValue, ValueFacts, MAX_VALUE_ELEMENTS};
use crate::sizes::shape::Dim;

/// The static dims and the contents of a value, when both are known and agree.
pub fn contents(facts: &ValueFacts) -> Option<(Vec<usize>, &[IntValue])> {
    let value = facts.value.as_deref()?;
    let dims: Vec<usize> =
        facts.shape.dims()?.iter().map(|d| d.known().and_then(|k| usize::try_from(k).ok())).collect::<Option<_>>()?;
    (dims.iter().product::<usize>() == value.len()).then_some((dims, value))
}

/// The static dims and the contents of an integer value, its entries unknown where nothing is known of them: a
/// shape vector read from an op the tool cannot follow (`Gather(Shape(o), 0)` for an `o` of unknown rank) is still
/// one entry, so that the known entries next to it survive `Concat` and arithmetic (`[?, ?, 4, 16]`, not unknown).
pub fn contents_or_unknown(facts: &ValueFacts) -> Option<(Vec<usize>, Cow<'_, [IntValue]>)> {
    if let Some((dims, value)) = contents(facts) {
        return Some((dims, Cow::Borrowed(value)));
    }
    if facts.value.is_some() || !matches!(facts.elem, Some(crate::onnx::tensor::INT64 | crate::onnx::tensor::INT32)) {
        return None;
    }
    let dims: Vec<usize> =
        facts.shape.dims()?.iter().map(|d| d.known().and_then(|k| usize::try_from(k).ok())).collect::<Option<_>>()?;
    let count = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))?;
    small(count)?;
    Some((dims, Cow::Owned(vec![None; count])))
}

fn strides(dims: &[usize]) -> Vec<usize> {
    let mut out = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        out[i] = out[i + 1] * dims[i + 1];
    }
    out
}

/// Visits every index of `dims` in row-major order.
fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize])) {
    if dims.contains(&0) {
        return;
    }
    let mut idx = vec![0; dims.len()];
    loop {
        f(&idx);
        let mut axis = dims.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            idx[axis] += 1;
            if idx[axis] < dims[axis] {
                break;
            }
            idx[axis] = 0;
        }
    }
}

fn small(count: usize) -> Option<()> {
    (count <= MAX_VALUE_ELEMENTS).then_some(())
}

/// `Transpose` by `perm`.
pub fn transpose(dims: &[usize], value: &[IntValue], perm: &[usize]) -> Option<Vec<IntValue>> {
    let src = strides(dims);
    let out_dims: Vec<usize> = perm.iter().map(|&p| dims.get(p).copied()).collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(value.len());
    for_each_index(&out_dims, |idx| {
        let offset: usize = idx.iter().zip(perm).map(|(&i, &p)| i * src[p]).sum();
        out.push(value[offset].clone());
    });
    Some(out)
}

/// `Slice`: on each axis the indices `first, first + step, …` (`len` of them), already clamped.
pub fn slice(dims: &[usize], value: &[IntValue], picks: &[(i64, i64, usize)]) -> Option<Vec<IntValue>> {
    small(picks.iter().map(|p| p.2).product())?;
    let src = strides(dims);
    let out_dims: Vec<usize> = picks.iter().map(|p| p.2).collect();
    let mut out = Vec::new();
    let mut ok = true;
    for_each_index(&out_dims, |idx| {
        let offset = idx.iter().zip(picks).zip(&src).try_fold(0usize, |acc, ((&i, &(first, step, _)), &s)| {
            let at = usize::try_from(first + step * i as i64).ok()?;
            Some(acc + at * s)
        });
        match offset.and_then(|o| value.get(o)) {
            Some(v) => out.push(v.clone()),
            None => ok = false,
        }
    });
    ok.then_some(out)
}

/// `Gather` along `axis` with constant indices (negative ones counted from the end).
pub fn gather(dims: &[usize], value: &[IntValue], axis: usize, indices: &[i64]) -> Option<Vec<IntValue>> {
    let n = *dims.get(axis)? as i64;
    let picked: Vec<usize> = indices
        .iter()
        .map(|&i| {
            let i = if i < 0 { i + n } else { i };
            usize::try_from(i).ok().filter(|&i| (i as i64) < n)
        })
        .collect::<Option<_>>()?;
    let outer: usize = dims[..axis].iter().product();
    let inner: usize = dims[axis + 1..].iter().product();
    small(outer * picked.len() * inner)?;
    let mut out = Vec::new();
    for o in 0..outer {
        for &p in &picked {
            let base = (o * dims[axis] + p) * inner;
            out.extend_from_slice(&value[base..base + inner]);
        }
    }
    Some(out)
}

/// `Concat` along `axis` of values with equal dims elsewhere.
pub fn concat(parts: &[(Vec<usize>, &[IntValue])], axis: usize) -> Option<Vec<IntValue>> {
    let first = &parts.first()?.0;
    let outer: usize = first.get(..axis)?.iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for (dims, value) in parts {
            let chunk: usize = dims.get(axis..)?.iter().product();
            out.extend_from_slice(value.get(o * chunk..(o + 1) * chunk)?);
        }
    }
    small(out.len())?;
    Some(out)
}

/// One part of a `Split` along `axis`: `len` entries from `start`.
pub fn split_part(dims: &[usize], value: &[IntValue], axis: usize, start: usize, len: usize) -> Option<Vec<IntValue>> {
    let picks: Vec<(i64, i64, usize)> =
        dims.iter().enumerate().map(|(a, &d)| if a == axis { (start as i64, 1, len) } else { (0, 1, d) }).collect();
    slice(dims, value, &picks)
}

/// `GatherElements` along `axis`: each output entry takes the input entry at its own index with the axis
/// coordinate replaced by the index tensor's entry.
pub fn gather_elements(
    dims: &[usize],
    value: &[IntValue],
    axis: usize,
    index_dims: &[usize],
    indices: &[i64],
) -> Option<Vec<IntValue>> {
    small(indices.len())?;
    let src = strides(dims);
    let n = *dims.get(axis)? as i64;
    let mut out = Vec::with_capacity(indices.len());
    let mut k = 0;
    let mut ok = true;
    for_each_index(index_dims, |idx| {
        let i = indices[k];
        k += 1;
        let i = if i < 0 { i + n } else { i };
        let offset = idx.iter().enumerate().try_fold(0usize, |acc, (a, &c)| {
            let c = if a == axis { usize::try_from(i).ok().filter(|&i| (i as i64) < n)? } else { c };
            (c < *dims.get(a)?).then(|| acc + c * src[a])
        });
        match offset.and_then(|o| value.get(o)) {
            Some(v) => out.push(v.clone()),
            None => ok = false,
        }
    });
    ok.then_some(out)
}

/// `Tile` by constant repeats.
pub fn tile(dims: &[usize], value: &[IntValue], repeats: &[usize]) -> Option<Vec<IntValue>> {
    let out_dims: Vec<usize> = dims.iter().zip(repeats).map(|(&d, &r)| d.checked_mul(r)).collect::<Option<_>>()?;
    small(out_dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?)?;
    let src = strides(dims);
    let mut out = Vec::new();
    for_each_index(&out_dims, |idx| {
        let offset: usize = idx.iter().zip(dims).zip(&src).map(|((&i, &d), &s)| (i % d) * s).sum();
        out.push(value[offset].clone());
    });
    Some(out)
}

/// The contents of `facts` laid out at the static shape `out` by numpy broadcasting (Expand, and each input of a
/// broadcasting op).
pub fn spread(facts: &ValueFacts, out: &[u64]) -> Option<Vec<IntValue>> {
    let dims: Vec<u64> = facts.shape.dims()?.iter().map(Dim::known).collect::<Option<_>>()?;
    let (_, value) = contents_or_unknown(facts)?;
    let index = crate::rules::broadcast_index(&dims, out)?;
    index.iter().map(|&i| value.get(i).cloned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizes::sym::Poly;

    fn v(xs: &[i64]) -> Vec<IntValue> {
        xs.iter().map(|&x| Some(Poly::constant(x))).collect()
    }

    #[test]
    fn torchscript_pad_pattern_reverses_pairs() {
        // pads [a0, b0, a1, b1] -> Reshape [-1, 2] -> Slice step -1 on axis 0 -> Transpose -> Reshape [-1]
        let pads = v(&[1, 2, 3, 4]);
        let reversed = slice(&[2, 2], &pads, &[(1, -1, 2), (0, 1, 2)]).unwrap();
        assert_eq!(reversed, v(&[3, 4, 1, 2]));
        assert_eq!(transpose(&[2, 2], &reversed, &[1, 0]).unwrap(), v(&[3, 1, 4, 2]));
    }

    #[test]
    fn gather_concat_split_and_tile_keep_entries() {
        let m = v(&[1, 2, 3, 4, 5, 6]);
        assert_eq!(gather(&[2, 3], &m, 1, &[2, -3]).unwrap(), v(&[3, 1, 6, 4]));
        assert_eq!(gather(&[6], &m, 0, &[6]), None);
        let a = v(&[1, 2]);
        let b = v(&[3, 4]);
        assert_eq!(concat(&[(vec![1, 2], &a), (vec![1, 2], &b)], 1).unwrap(), v(&[1, 2, 3, 4]));
        assert_eq!(concat(&[(vec![1, 2], &a), (vec![1, 2], &b)], 0).unwrap(), v(&[1, 2, 3, 4]));
        assert_eq!(split_part(&[2, 3], &m, 1, 1, 2).unwrap(), v(&[2, 3, 5, 6]));
        assert_eq!(tile(&[2], &a, &[3]).unwrap(), v(&[1, 2, 1, 2, 1, 2]));
    }
}
