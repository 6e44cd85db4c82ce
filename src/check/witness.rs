//! `check --witness DIR`: for the sizes at which a site fails, input tensors of those sizes with random data, so
//! that the failure reproduces in any runtime. Each set of sizes gets a folder `DIR/MODEL/N/` holding one ONNX
//! `TensorProto` per fed input (`input_0.pb`, … named as the input, which `onnx.load_tensor` and onnxruntime's test
//! runner read), and `DIR/MODEL/witnesses.json` lists the sizes, the sites failing there and the files.
//!
//! Sizes: the failing sizes of the witness; every other symbol of the ranges at its smallest size, a bound symbol
//! at its size, and a symbol without a range at 1. Data (seeded, the same on every run): floats uniform in
//! [-1, 1), integers 0 or 1 (valid indices and masks for any table), booleans at random, strings "a"; an input a
//! failing index bound names (`filled` in witnesses.json) holds one value throughout, the one that drives the
//! computed indices past their table (RoBERTa's `input_ids` all 2, no padding id).

use std::path::{Path, PathBuf};

use prost::Message;

use crate::check::range_report::{RangeFailure, RangeReport, WrittenWitness};
use crate::infer::value_range::Fills;
use crate::onnx::pb::{DataType, TensorProto};
use crate::rules::ranges::profile::Input;
use crate::rules::ranges::Sizes;
use crate::sizes::shape::Dim;

/// The most bytes the tensors of one witness may take.
pub const MAX_WITNESS_BYTES: u64 = 256 << 20;

/// What a runtime says when it runs the model on a witness's tensors, the symbols at these sizes (`verify` builds
/// run tract).
pub type Runtime<'a> = &'a dyn Fn(&[TensorProto], &Sizes) -> String;

/// Writes the tensors of every distinct witness of `report` under `dir`, in a folder named after the model
/// (`shown`, its path as output shows it); records each in `report.witnesses`, with what `runtime` says of it when
/// there is one. A witness that cannot be written (too large, an input of an element type with no data) is
/// recorded with its reason, and the others still are.
pub fn write(
    inputs: &[Input],
    shown: &str,
    report: &mut RangeReport,
    dir: &Path,
    runtime: Option<Runtime>,
) -> std::io::Result<()> {
    let mut sets: Vec<(Sizes, Vec<RangeFailure>, Fills)> = Vec::new();
    for f in &report.failures {
        match sets.iter_mut().find(|(w, _, fills)| *w == f.witness && *fills == f.fills) {
            Some((_, sites, _)) => sites.push(f.clone()),
            None => sets.push((f.witness.clone(), vec![f.clone()], f.fills.clone())),
        }
    }
    if sets.is_empty() {
        return Ok(());
    }
    let model_dir = dir.join(folder_name(shown));
    let mut listed = Vec::new();
    for (k, (witness, sites, fills)) in sets.into_iter().enumerate() {
        let folder = model_dir.join((k + 1).to_string());
        let sizes = all_sizes(inputs, report, &witness);
        let tensors = tensors(inputs, &sizes, &fills, k as u64);
        let (error, files, said) = match tensors {
            Ok(tensors) => (None, write_tensors(&folder, &tensors)?, runtime.map(|run| run(&tensors, &sizes))),
            Err(reason) => (Some(reason), Vec::new(), None),
        };
        listed.push(listing((&sizes, &fills), &sites, &files, error.as_deref(), said.as_deref()));
        report.witnesses.push(WrittenWitness { sizes, sites, dir: folder, error, runtime: said });
    }
    let manifest = serde_json::to_vec_pretty(&listed).map_err(std::io::Error::other)?;
    std::fs::write(model_dir.join("witnesses.json"), manifest)
}

/// A folder name for a model from its shown path: letters, digits, `.`, `-` and `_` kept, `/` as `__`, anything
/// else `_` (a path is untrusted text).
fn folder_name(shown: &str) -> String {
    let name: String = shown
        .trim_start_matches("./")
        .trim_start_matches('/')
        .replace('/', "__")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .collect();
    match name.trim_start_matches('.') {
        "" => "model".to_string(),
        _ => name,
    }
}

/// The size of every symbol the inputs name: the witness's, else the ranges' smallest, else 1.
fn all_sizes(inputs: &[Input], report: &RangeReport, witness: &Sizes) -> Sizes {
    let mut sizes = witness.clone();
    for s in crate::rules::ranges::profile::input_symbols(inputs) {
        if !sizes.iter().any(|(n, _)| *n == s) {
            let size = report.ranges.get(&s).map_or(1, |r| r.first());
            sizes.push((s, size));
        }
    }
    sizes
}

/// One tensor per fed input at `sizes` (an input `fills` names holds its value throughout), or why there can be
/// none.
fn tensors(inputs: &[Input], sizes: &Sizes, fills: &Fills, seed: u64) -> Result<Vec<TensorProto>, String> {
    let mut total: u64 = 0;
    let mut rng = SplitMix(seed ^ 0x05ee_d0fb_ca57);
    let mut out = Vec::new();
    for input in inputs {
        let dims: Vec<u64> = match &input.dims {
            Some(dims) => dims.iter().map(|d| dim_size(d, sizes)).collect(),
            None => return Err(format!("input {:?} has no declared rank", input.name)),
        };
        let count = dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).ok_or("too many elements")?;
        let (elem, width) = element(input)?;
        total = total.saturating_add(count.saturating_mul(width));
        if total > MAX_WITNESS_BYTES {
            return Err(format!("the inputs would take more than {} MiB", MAX_WITNESS_BYTES >> 20));
        }
        let mut t = TensorProto {
            name: Some(input.name.clone()),
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type: Some(elem as i32),
            ..Default::default()
        };
        if elem == DataType::String {
            t.string_data = (0..count).map(|_| bytes::Bytes::from_static(b"a")).collect();
        } else if let Some((_, v)) = fills.iter().find(|(name, _)| **name == *input.name) {
            t.raw_data = Some(filled_data(elem, count, *v).into());
        } else {
            t.raw_data = Some(random_data(elem, count, &mut rng).into());
        }
        out.push(t);
    }
    Ok(out)
}

/// A declared dim at the sizes (an unknown dim, or one the sizes do not settle, at 1).
fn dim_size(dim: &Dim, sizes: &Sizes) -> u64 {
    let size = |name: &str| sizes.iter().find(|(n, _)| **n == *name).and_then(|(_, v)| i64::try_from(*v).ok());
    match dim {
        Dim::Known(n) => *n,
        other => other
            .to_poly()
            .and_then(|p| p.substitute(&size))
            .and_then(|p| p.as_constant())
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(1),
    }
}

/// The input's element type and its width in bytes.
fn element(input: &Input) -> Result<(DataType, u64), String> {
    let elem = DataType::try_from(input.elem.unwrap_or(DataType::Float as i32)).ok();
    let width = match elem {
        Some(DataType::Float | DataType::Int32 | DataType::Uint32) => 4,
        Some(DataType::Double | DataType::Int64 | DataType::Uint64) => 8,
        Some(DataType::Float16 | DataType::Bfloat16 | DataType::Int16 | DataType::Uint16) => 2,
        Some(DataType::Int8 | DataType::Uint8 | DataType::Bool) => 1,
        Some(DataType::String) => 1,
        _ => return Err(format!("input {:?} is of an element type witnesses do not make", input.name)),
    };
    Ok((elem.expect("matched above"), width))
}

/// `count` random elements of `elem`, little-endian.
fn random_data(elem: DataType, count: u64, rng: &mut SplitMix) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..count {
        let r = rng.next();
        let unit = (r >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
        let bit = r & 1;
        match elem {
            DataType::Float => out.extend(unit.to_le_bytes()),
            DataType::Double => out.extend(f64::from(unit).to_le_bytes()),
            DataType::Float16 => out.extend(half(unit).to_le_bytes()),
            DataType::Bfloat16 => out.extend(((unit.to_bits() >> 16) as u16).to_le_bytes()),
            DataType::Int64 | DataType::Uint64 => out.extend(bit.to_le_bytes()),
            DataType::Int32 | DataType::Uint32 => out.extend((bit as u32).to_le_bytes()),
            DataType::Int16 | DataType::Uint16 => out.extend((bit as u16).to_le_bytes()),
            _ => out.push(bit as u8),
        }
    }
    out
}

/// `count` elements of `elem` that are all `v`, little-endian (integer and boolean inputs: what drives computed
/// indices past their table).
fn filled_data(elem: DataType, count: u64, v: i64) -> Vec<u8> {
    let one: Vec<u8> = match elem {
        DataType::Int64 | DataType::Uint64 => v.to_le_bytes().to_vec(),
        DataType::Int32 | DataType::Uint32 => (v as i32).to_le_bytes().to_vec(),
        DataType::Int16 | DataType::Uint16 => (v as i16).to_le_bytes().to_vec(),
        DataType::Float => (v as f32).to_le_bytes().to_vec(),
        DataType::Double => (v as f64).to_le_bytes().to_vec(),
        _ => vec![v as u8],
    };
    one.repeat(count as usize)
}

/// An f32 in [-1, 1) as IEEE half precision, rounded towards zero (exact enough for random data).
fn half(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    if exp <= 0 {
        return sign;
    }
    sign | ((exp as u16) << 10) | ((bits >> 13) & 0x3ff) as u16
}

/// splitmix64: a small seeded generator (the data only needs to be the same on every run).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn write_tensors(folder: &Path, tensors: &[TensorProto]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(folder)?;
    let mut files = Vec::new();
    for (i, t) in tensors.iter().enumerate() {
        let path = folder.join(format!("input_{i}.pb"));
        std::fs::write(&path, t.encode_to_vec())?;
        files.push(path);
    }
    Ok(files)
}

fn listing(
    (sizes, fills): (&Sizes, &Fills),
    sites: &[RangeFailure],
    files: &[PathBuf],
    error: Option<&str>,
    runtime: Option<&str>,
) -> serde_json::Value {
    let sizes: serde_json::Map<String, serde_json::Value> =
        sizes.iter().map(|(n, v)| (n.to_string(), serde_json::Value::from(*v))).collect();
    let filled: serde_json::Map<String, serde_json::Value> =
        fills.iter().map(|(n, v)| (n.to_string(), serde_json::Value::from(*v))).collect();
    serde_json::json!({
        "sizes": sizes,
        "filled": filled,
        "sites": sites.iter().map(RangeFailure::path).collect::<Vec<_>>(),
        "files": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
        "error": error,
        "runtime": runtime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_path_becomes_one_safe_folder_name() {
        assert_eq!(folder_name("models/bert.onnx"), "models__bert.onnx");
        assert_eq!(folder_name("/tmp/bert.onnx"), "tmp__bert.onnx");
        assert_eq!(folder_name("./a b;rm.onnx"), "a_b_rm.onnx");
        assert_eq!(folder_name(".."), "model");
    }

    #[test]
    fn halves_are_ieee_half_precision() {
        assert_eq!(half(1.0 - f32::EPSILON), 0x3bff);
        assert_eq!(half(0.5), 0x3800);
        assert_eq!(half(-0.5), 0xb800);
        assert_eq!(half(0.0), 0);
    }
}
