//! `--materialized`: a constant that is an expanded copy of a smaller one (every slice along some axes equal), as
//! `expand --materialize-constants` writes it, back in its small form. The small form keeps the axes along which
//! the tensor varies, with 1 elsewhere, and drops the leading 1s: numpy's broadcast then rebuilds the original
//! exactly, so a reader that broadcasts it anyway (proved as for any other broadcast) reads the same values.

use crate::onnx::pb::TensorProto;
use crate::rewrite::materialize::gather;
use crate::rules::broadcast_index;

/// The most elements a constant may have to be looked at: each axis tried costs a pass over it.
const MAX_ELEMENTS: u64 = 1 << 24;

/// The small form of `t`, or `None` when it has no smaller one (or its data cannot be read: external, not
/// addressable). A form that only drops leading 1s has the same elements: see [`fewer_elements`].
pub(super) fn shrink(t: &TensorProto) -> Option<TensorProto> {
    let dims: Vec<u64> = t.dims.iter().map(|&d| u64::try_from(d).ok().filter(|&d| d > 0)).collect::<Option<_>>()?;
    let count = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).filter(|&c| c <= MAX_ELEMENTS)?;
    if let Some(small) = shrink_raw(t, &dims) {
        return small;
    }
    let identity: Vec<usize> = (0..count as usize).collect();
    let mut current = gather(t, &identity, &dims)?;
    let mut current_dims = dims.clone();
    for axis in 0..dims.len() {
        if current_dims[axis] == 1 {
            continue;
        }
        // Two elements a step apart on this axis tell most varying tensors (weights) at once.
        let step: u64 = current_dims[axis + 1..].iter().product();
        if gather(&current, &[0], &[1]) != gather(&current, &[step as usize], &[1]) {
            continue;
        }
        let mut small_dims = current_dims.clone();
        small_dims[axis] = 1;
        let small = gather(&current, &first_slice(&current_dims, axis), &small_dims)?;
        let back = gather(&small, &broadcast_index(&small_dims, &current_dims)?, &current_dims)?;
        if back == current {
            (current, current_dims) = (small, small_dims);
        }
    }
    let leading = current_dims.iter().take_while(|&&d| d == 1).count();
    if current_dims == dims && leading == 0 {
        return None;
    }
    current.dims = current_dims[leading..].iter().map(|&d| d as i64).collect();
    Some(current)
}

/// [`shrink`] for a tensor held in `raw_data` (what exporters and `expand` write), comparing and copying whole
/// slices of bytes: the element-by-element path costs minutes on a model with a hundred large constants. `None`
/// when the tensor is not in `raw_data`; else the answer of [`shrink`].
fn shrink_raw(t: &TensorProto, dims: &[u64]) -> Option<Option<TensorProto>> {
    use crate::onnx::pb::tensor_proto::DataLocation;
    let raw = t.raw_data.as_deref().filter(|_| t.data_location != Some(DataLocation::External as i32))?;
    let size = crate::onnx::pb::raw_size(t.data_type?)?;
    let count: u64 = dims.iter().product();
    if size == 0 || raw.len() as u64 != count * size as u64 {
        return Some(None);
    }
    let mut bytes = raw.to_vec();
    let mut current = dims.to_vec();
    for axis in 0..current.len() {
        let d = current[axis] as usize;
        if d == 1 {
            continue;
        }
        // A slice on this axis is `inner` elements; the tensor is `outer` runs of `d` slices.
        let inner = current[axis + 1..].iter().product::<u64>() as usize * size;
        let equal = bytes.chunks(d * inner).all(|run| run.chunks(inner).skip(1).all(|slice| slice == &run[..inner]));
        if equal {
            bytes = bytes.chunks(d * inner).flat_map(|run| &run[..inner]).copied().collect();
            current[axis] = 1;
        }
    }
    let leading = current.iter().take_while(|&&d| d == 1).count();
    if current == dims && leading == 0 {
        return Some(None);
    }
    let dims = current[leading..].iter().map(|&d| d as i64).collect();
    Some(Some(TensorProto { dims, data_type: t.data_type, raw_data: Some(bytes.into()), ..Default::default() }))
}

/// Whether `small` holds fewer elements than `t`: an axis shrank, not only leading 1s went.
pub(super) fn fewer_elements(t: &TensorProto, small: &TensorProto) -> bool {
    small.dims.iter().product::<i64>() < t.dims.iter().product::<i64>()
}

/// The flat positions, in order, of the elements of a tensor of `dims` whose index on `axis` is 0.
fn first_slice(dims: &[u64], axis: usize) -> Vec<usize> {
    let inner: u64 = dims[axis + 1..].iter().product();
    let count: u64 = dims.iter().product();
    (0..count).filter(|f| (f / inner).is_multiple_of(dims[axis])).map(|f| f as usize).collect()
}

/// Whether `t` is `u` broadcast to `t`'s dims (numpy's rule): `u` is the original a materialized `t` was
/// written from. `small` is `t`'s small form: `u` broadcasts to `t` exactly when its dims broadcast to `t`'s and
/// its own small form holds `small`'s values (collapsing the axes along which a tensor is constant changes what
/// it broadcasts to nothing). The same encoding is required (a copy made by `expand` keeps its original's; another
/// encoding is only a missed reuse, never a wrong one).
pub(super) fn copy_of(t: &TensorProto, small: &TensorProto, u: &TensorProto) -> bool {
    if t.data_type != u.data_type || u.dims.len() > t.dims.len() || u.dims.iter().any(|&d| d < 1) {
        return false;
    }
    let offset = t.dims.len() - u.dims.len();
    if u.dims.iter().zip(&t.dims[offset..]).any(|(&a, &b)| a != 1 && a != b) {
        return false;
    }
    let count = |d: &[i64]| d.iter().product::<i64>();
    if count(&u.dims) > count(&t.dims) || count(&u.dims) < count(&small.dims) {
        return false;
    }
    let shrunk = shrink(u);
    let u_small = shrunk.as_ref().unwrap_or(u);
    let core = |d: &[i64]| d.iter().copied().skip_while(|&x| x == 1).collect::<Vec<i64>>();
    if core(&u_small.dims) != core(&small.dims) {
        return false;
    }
    if let (Some(a), Some(b)) = (u_small.raw_data.as_deref(), small.raw_data.as_deref()) {
        return a == b;
    }
    let n = count(&small.dims).max(1) as usize;
    let flat = |x: &TensorProto| gather(x, &(0..n).collect::<Vec<_>>(), &[n as u64]);
    matches!((flat(u_small), flat(small)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::DataType;

    fn floats(dims: &[i64], v: &[f32]) -> TensorProto {
        TensorProto {
            dims: dims.to_vec(),
            data_type: Some(DataType::Float as i32),
            float_data: v.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn equal_rows_shrink_to_one_row_without_leading_ones() {
        let t = shrink(&floats(&[2, 3], &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0])).unwrap();
        assert_eq!(t.dims, vec![3]);
        assert_eq!(t.float_data, vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn equal_columns_keep_their_axis_as_one() {
        let t = shrink(&floats(&[2, 3], &[1.0, 1.0, 1.0, 4.0, 4.0, 4.0])).unwrap();
        assert_eq!((t.dims, t.float_data), (vec![2, 1], vec![1.0, 4.0]));
    }

    #[test]
    fn raw_data_shrinks_as_typed_data_does() {
        let values = [1f32, 2.0, 3.0, 1.0, 2.0, 3.0];
        let raw = TensorProto {
            dims: vec![2, 3],
            data_type: Some(DataType::Float as i32),
            raw_data: Some(values.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>().into()),
            ..Default::default()
        };
        let small = shrink(&raw).unwrap();
        assert_eq!(small.dims, vec![3]);
        let got: Vec<f32> =
            small.raw_data.unwrap().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, vec![1.0, 2.0, 3.0]);
        let columns = TensorProto {
            raw_data: Some(
                [1f32, 1.0, 1.0, 4.0, 4.0, 4.0].iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>().into(),
            ),
            ..raw.clone()
        };
        assert_eq!(shrink(&columns).unwrap().dims, vec![2, 1]);
    }

    #[test]
    fn a_tensor_that_varies_everywhere_does_not_shrink() {
        assert!(shrink(&floats(&[2, 2], &[1.0, 2.0, 3.0, 4.0])).is_none());
    }

    #[test]
    fn the_original_of_a_copy_is_recognised() {
        let t = floats(&[2, 3], &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        let small = shrink(&t).unwrap();
        assert!(copy_of(&t, &small, &floats(&[3], &[1.0, 2.0, 3.0])));
        assert!(copy_of(&t, &small, &floats(&[1, 3], &[1.0, 2.0, 3.0])), "leading 1s hold the same");
        assert!(!copy_of(&t, &small, &floats(&[3], &[1.0, 2.0, 4.0])));
        assert!(!copy_of(&t, &small, &floats(&[3], &[9.0, 2.0, 3.0])), "the first element differs");
        assert!(!copy_of(&t, &small, &floats(&[3, 1], &[1.0, 2.0, 3.0])));
        let constant = floats(&[2, 3], &[5.0; 6]);
        let one = shrink(&constant).unwrap();
        assert!(copy_of(&constant, &one, &floats(&[2, 1], &[5.0, 5.0])), "an original that could shrink itself");
    }
}
