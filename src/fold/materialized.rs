//! `--materialized`: a constant that is an expanded copy of a smaller one (every slice along some axes equal), as
//! `expand --materialize-constants` writes it, back in its small form. The small form keeps the axes along which
//! the tensor varies, with 1 elsewhere, and drops the leading 1s: numpy's broadcast then rebuilds the original
//! exactly, so a reader that broadcasts it anyway (proved as for any other broadcast) reads the same values.

use crate::materialize::gather;
use crate::proto::TensorProto;
use crate::rules::broadcast_index;

/// The most elements a constant may have to be looked at: each axis tried costs a pass over it.
const MAX_ELEMENTS: u64 = 1 << 24;

/// The small form of `t`, or `None` when it has no smaller one (or its data cannot be read: external, not
/// addressable). A form that only drops leading 1s has the same elements: see [`fewer_elements`].
pub(super) fn shrink(t: &TensorProto) -> Option<TensorProto> {
    let dims: Vec<u64> = t.dims.iter().map(|&d| u64::try_from(d).ok().filter(|&d| d > 0)).collect::<Option<_>>()?;
    let count = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).filter(|&c| c <= MAX_ELEMENTS)?;
    let identity: Vec<usize> = (0..count as usize).collect();
    let mut current = gather(t, &identity, &dims)?;
    let mut current_dims = dims.clone();
    for axis in 0..dims.len() {
        if current_dims[axis] == 1 {
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
/// written from. The same encoding is required (a copy made by `expand` keeps its original's; another encoding is
/// only a missed reuse, never a wrong one).
pub(super) fn copy_of(t: &TensorProto, u: &TensorProto) -> bool {
    let dims = |x: &TensorProto| x.dims.iter().map(|&d| u64::try_from(d).ok()).collect::<Option<Vec<u64>>>();
    let (Some(t_dims), Some(u_dims)) = (dims(t), dims(u)) else { return false };
    if t.data_type != u.data_type || u_dims.len() > t_dims.len() {
        return false;
    }
    let count: u64 = t_dims.iter().product();
    if count > MAX_ELEMENTS || u_dims.iter().product::<u64>() > count {
        return false;
    }
    let Some(index) = broadcast_index(&u_dims, &t_dims) else { return false };
    let identity: Vec<usize> = (0..count as usize).collect();
    match (gather(u, &index, &t_dims), gather(t, &identity, &t_dims)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::DataType;

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
    fn a_tensor_that_varies_everywhere_does_not_shrink() {
        assert!(shrink(&floats(&[2, 2], &[1.0, 2.0, 3.0, 4.0])).is_none());
    }

    #[test]
    fn the_original_of_a_copy_is_recognised() {
        let t = floats(&[2, 3], &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        assert!(copy_of(&t, &floats(&[3], &[1.0, 2.0, 3.0])));
        assert!(copy_of(&t, &floats(&[1, 3], &[1.0, 2.0, 3.0])), "leading 1s hold the same");
        assert!(!copy_of(&t, &floats(&[3], &[1.0, 2.0, 4.0])));
        assert!(!copy_of(&t, &floats(&[3, 1], &[1.0, 2.0, 3.0])));
        let constant = floats(&[2, 3], &[5.0; 6]);
        assert!(copy_of(&constant, &floats(&[2, 1], &[5.0, 5.0])), "an original that could shrink itself");
    }
}
