//! Writing a constant out at its broadcast shape, for toolchains that reject `Expand`.

use crate::onnx::pb::{raw_size, tensor_proto::DataLocation, DataType, TensorProto};
use crate::rules::broadcast_index;

/// Where each element's data lives in a tensor held in the file.
enum Data<'t> {
    /// Fixed-size elements in `raw_data`.
    Raw(&'t [u8], usize),
    Floats(&'t [f32], usize),
    Int32s(&'t [i32]),
    Int64s(&'t [i64]),
    Doubles(&'t [f64], usize),
    Uint64s(&'t [u64]),
    Strings(&'t [bytes::Bytes]),
}

fn data(t: &TensorProto) -> Option<Data<'_>> {
    let dt = t.data_type?;
    if let Some(raw) = t.raw_data.as_deref() {
        return Some(Data::Raw(raw, raw_size(dt)?));
    }
    use DataType::*;
    Some(match DataType::try_from(dt).ok()? {
        Float => Data::Floats(&t.float_data, 1),
        Complex64 => Data::Floats(&t.float_data, 2),
        Uint8 | Int8 | Uint16 | Int16 | Int32 | Bool | Float16 | Bfloat16 | Float8e4m3fn | Float8e4m3fnuz
        | Float8e5m2 | Float8e5m2fnuz | Float8e8m0 => Data::Int32s(&t.int32_data),
        Int64 => Data::Int64s(&t.int64_data),
        String => Data::Strings(&t.string_data),
        Double => Data::Doubles(&t.double_data, 1),
        Complex128 => Data::Doubles(&t.double_data, 2),
        Uint32 | Uint64 => Data::Uint64s(&t.uint64_data),
        Undefined | Uint4 | Int4 | Float4e2m1 | Uint2 | Int2 => return None,
    })
}

/// `source` broadcast to `out` (after viewing it with `mapped` dims, when given), or `None` when it is stored
/// outside the file, of a type whose elements are not addressable, or larger than `max_bytes`.
pub fn broadcast_tensor(
    source: &TensorProto,
    mapped: Option<&[u64]>,
    out: &[u64],
    max_bytes: u64,
) -> Option<TensorProto> {
    if source.data_location == Some(DataLocation::External as i32) || source.segment.is_some() {
        return None;
    }
    let dims: Vec<u64> = match mapped {
        Some(m) => m.to_vec(),
        None => source.dims.iter().map(|&d| u64::try_from(d).ok()).collect::<Option<_>>()?,
    };
    let count = |d: &[u64]| d.iter().try_fold(1u64, |acc, &x| acc.checked_mul(x));
    let source_dims: Vec<u64> = source.dims.iter().map(|&d| d.max(0) as u64).collect();
    if count(&dims)? != count(&source_dims)? {
        return None;
    }
    let out_count = count(out)?;
    let data = data(source)?;
    let element_bytes = match &data {
        Data::Raw(_, n) => *n as u64,
        Data::Strings(s) => s.iter().map(|b| b.len() as u64).max().unwrap_or(0).max(1),
        _ => raw_size(source.data_type?).unwrap_or(8) as u64,
    };
    if out_count.checked_mul(element_bytes)? > max_bytes {
        return None;
    }
    let index = broadcast_index(&dims, out)?;
    gather(source, &index, out)
}

/// The tensor of dims `dims` whose elements are `source`'s at the flat positions `index`, in `source`'s own
/// encoding; `None` when a position is out of range or the elements are not addressable.
pub fn gather(source: &TensorProto, index: &[usize], dims: &[u64]) -> Option<TensorProto> {
    if source.data_location == Some(DataLocation::External as i32) || source.segment.is_some() {
        return None;
    }
    let data = data(source)?;
    let mut t = TensorProto {
        dims: dims.iter().map(|&d| d as i64).collect(),
        data_type: source.data_type,
        ..Default::default()
    };
    let take = |n: usize, len: usize| -> Option<()> { (index.iter().all(|&i| (i + 1) * n <= len)).then_some(()) };
    match data {
        Data::Raw(raw, n) => {
            take(n, raw.len())?;
            let bytes: Vec<u8> = index.iter().flat_map(|&i| &raw[i * n..(i + 1) * n]).copied().collect();
            t.raw_data = Some(bytes.into());
        }
        Data::Floats(v, n) => {
            take(n, v.len())?;
            t.float_data = index.iter().flat_map(|&i| &v[i * n..(i + 1) * n]).copied().collect();
        }
        Data::Doubles(v, n) => {
            take(n, v.len())?;
            t.double_data = index.iter().flat_map(|&i| &v[i * n..(i + 1) * n]).copied().collect();
        }
        Data::Int32s(v) => {
            take(1, v.len())?;
            t.int32_data = index.iter().map(|&i| v[i]).collect();
        }
        Data::Int64s(v) => {
            take(1, v.len())?;
            t.int64_data = index.iter().map(|&i| v[i]).collect();
        }
        Data::Uint64s(v) => {
            take(1, v.len())?;
            t.uint64_data = index.iter().map(|&i| v[i]).collect();
        }
        Data::Strings(v) => {
            take(1, v.len())?;
            t.string_data = index.iter().map(|&i| v[i].clone()).collect();
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_index_repeats_broadcast_axes() {
        assert_eq!(broadcast_index(&[3], &[2, 3]).unwrap(), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(broadcast_index(&[2, 1], &[2, 3]).unwrap(), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(broadcast_index(&[], &[2]).unwrap(), vec![0, 0]);
        assert_eq!(broadcast_index(&[1, 3], &[0, 3]).unwrap(), Vec::<usize>::new());
        assert!(broadcast_index(&[2], &[3]).is_none());
    }

    #[test]
    fn raw_float_tensor_is_written_expanded() {
        let source = TensorProto {
            dims: vec![2, 1],
            data_type: Some(DataType::Float as i32),
            raw_data: Some([1f32, 2.0].iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>().into()),
            ..Default::default()
        };
        let t = broadcast_tensor(&source, None, &[2, 2], 1 << 20).unwrap();
        let raw = t.raw_data.unwrap();
        let values: Vec<f32> = raw.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(values, vec![1.0, 1.0, 2.0, 2.0]);
        assert_eq!(t.dims, vec![2, 2]);
        assert!(broadcast_tensor(&source, None, &[2, 2], 15).is_none(), "over the byte limit");
    }
}
