//! Tensor data kept outside the model file (`data_location = EXTERNAL`).
//!
//! A location is only ever resolved inside the model's folder: an absolute path, a `..` step, or a symlink that
//! leads out of the folder is refused before anything is opened (ONNX's own loader had path-traversal bugs here:
//! CVE-2022-25882, CVE-2024-27318). Data is read only where it is needed, and then only the bytes needed.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use crate::onnx::pb::{tensor_proto::DataLocation, TensorProto};
use rustc_hash::FxHashMap as HashMap;

/// Where one tensor's data lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalRef {
    /// The location as written, relative to the model's folder.
    pub location: String,
    pub offset: u64,
    pub length: Option<u64>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExternalError {
    #[error("tensor '{}' stores its data externally but names no location", crate::sys::escape::name(.tensor))]
    NoLocation { tensor: String },
    #[error("tensor '{}': external data location '{}' is {}; refused (external data must stay inside the model's folder)", crate::sys::escape::name(.tensor), crate::sys::escape::name(.location), .why)]
    Escapes { tensor: String, location: String, why: &'static str },
    #[error("tensor '{}': external data field '{}' is not a number: '{}'", crate::sys::escape::name(.tensor), crate::sys::escape::name(.key), crate::sys::escape::name(.value))]
    BadNumber { tensor: String, key: String, value: String },
    #[error("tensor '{}': external data file '{}' is missing", crate::sys::escape::name(.tensor), crate::sys::escape::name(.location))]
    Missing { tensor: String, location: String },
    #[error("tensor '{}': external data at offset {} with length {} runs past the end of '{}' ({} bytes)", crate::sys::escape::name(.tensor), .offset, .length, crate::sys::escape::name(.location), .size)]
    OutOfRange { tensor: String, location: String, offset: u64, length: u64, size: u64 },
    #[error("tensor '{}': cannot read external data '{}': {}", crate::sys::escape::name(.tensor), crate::sys::escape::name(.location), .reason)]
    Io { tensor: String, location: String, reason: String },
    #[error("tensor '{}': external data location '{}' is {}, not a regular file; refused (never opened)", crate::sys::escape::name(.tensor), crate::sys::escape::name(.location), .kind)]
    NotAFile { tensor: String, location: String, kind: &'static str },
    #[error("tensor '{}': external data in '{}' claims {} bytes where dims {:?} of {} need {}", crate::sys::escape::name(.tensor), crate::sys::escape::name(.location), .length, .dims, .elem, .needed)]
    LengthMismatch { tensor: String, location: String, length: u64, needed: u64, dims: Vec<i64>, elem: String },
}

impl ExternalError {
    /// The diagnostic code `check` reports this under: a length that disagrees with the tensor's dims and type is
    /// the tensor's own inconsistency, everything else is about the reference.
    pub fn code(&self) -> crate::diagnostic::Code {
        match self {
            ExternalError::LengthMismatch { .. } => crate::diagnostic::Code::TensorDataMismatch,
            _ => crate::diagnostic::Code::ExternalData,
        }
    }
}

/// The external reference of a tensor, if its data is external.
pub fn reference(t: &TensorProto) -> Option<Result<ExternalRef, ExternalError>> {
    if t.data_location != Some(DataLocation::External as i32) {
        return None;
    }
    let tensor = t.name().to_string();
    let mut location = None;
    let (mut offset, mut length) = (0u64, None);
    for entry in &t.external_data {
        let number = |v: &str| {
            v.parse::<u64>().map_err(|_| ExternalError::BadNumber {
                tensor: tensor.clone(),
                key: entry.key().to_string(),
                value: v.to_string(),
            })
        };
        match entry.key() {
            "location" => location = Some(entry.value().to_string()),
            "offset" => match number(entry.value()) {
                Ok(v) => offset = v,
                Err(e) => return Some(Err(e)),
            },
            "length" => match number(entry.value()) {
                Ok(v) => length = Some(v),
                Err(e) => return Some(Err(e)),
            },
            _ => {}
        }
    }
    Some(match location {
        Some(location) if !location.is_empty() => Ok(ExternalRef { location, offset, length }),
        _ => Err(ExternalError::NoLocation { tensor }),
    })
}

/// The file a location names, checked to lie inside `folder` (the model's folder) and to be a regular file.
/// Nothing is opened: the checks look at the path's text (a `..` step may only undo a step taken before it, so
/// `sub/../w.bin` is `w.bin`), then resolve symlinks with `canonicalize` and look at the result with `stat`, which
/// only read directory entries and inodes. A FIFO, a device or a folder is refused: opening a FIFO blocks until a
/// writer comes, and reading a device may never end.
pub fn resolve(folder: &Path, tensor: &str, location: &str) -> Result<PathBuf, ExternalError> {
    let escapes = |why| ExternalError::Escapes { tensor: tensor.to_string(), location: location.to_string(), why };
    let relative = Path::new(location);
    if relative.is_absolute() || location.starts_with('/') || location.starts_with('\\') || location.contains(':') {
        return Err(escapes("an absolute path"));
    }
    let Some(normal) = normalize(relative) else { return Err(escapes("a path that climbs out with '..'")) };
    let not_a_file =
        |kind| ExternalError::NotAFile { tensor: tensor.to_string(), location: location.to_string(), kind };
    if normal.as_os_str().is_empty() {
        return Err(not_a_file("the model's folder itself"));
    }
    let joined = folder.join(&normal);
    let missing = || ExternalError::Missing { tensor: tensor.to_string(), location: location.to_string() };
    let real = joined.canonicalize().map_err(|_| missing())?;
    let base = folder.canonicalize().map_err(|_| missing())?;
    if !real.starts_with(&base) {
        return Err(escapes("a symlink that leads outside the model's folder"));
    }
    let kind = std::fs::metadata(&real).map_err(|_| missing())?.file_type();
    if !kind.is_file() {
        return Err(not_a_file(crate::sys::platform::kind_in_words(kind)));
    }
    Ok(real)
}

/// A relative location with its `.` steps dropped and each `..` undoing the step before it; `None` when a `..`
/// would climb above the start, or the path is absolute.
pub fn normalize(relative: &Path) -> Option<PathBuf> {
    let mut normal = PathBuf::new();
    for c in relative.components() {
        match c {
            Component::Normal(step) => normal.push(step),
            Component::CurDir => {}
            Component::ParentDir => {
                if !normal.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(normal)
}

/// The bytes a tensor's data takes by its dims and element type, when that is fixed (not strings, not sub-byte
/// types) and the dims are valid.
pub fn expected_length(t: &TensorProto) -> Option<u64> {
    let unit = crate::onnx::pb::raw_size(t.data_type?)? as u64;
    t.dims.iter().try_fold(unit, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))
}

/// Checks a reference without reading its data: the location (as [`resolve`]), the claimed length against the
/// tensor's dims and type, and the range against the file's size. Returns the file and the data's length.
pub fn validate(folder: &Path, t: &TensorProto, r: &ExternalRef) -> Result<(PathBuf, u64), ExternalError> {
    let path = resolve(folder, t.name(), &r.location)?;
    let size = std::fs::metadata(&path)
        .map_err(|e| ExternalError::Io {
            tensor: t.name().to_string(),
            location: r.location.clone(),
            reason: e.to_string(),
        })?
        .len();
    let expected = expected_length(t);
    if let (Some(length), Some(needed)) = (r.length, expected) {
        if length != needed {
            return Err(ExternalError::LengthMismatch {
                tensor: t.name().to_string(),
                location: r.location.clone(),
                length,
                needed,
                dims: t.dims.clone(),
                elem: crate::onnx::tensor::elem_type_name(t.data_type()),
            });
        }
    }
    // Without a length the data runs to the end of the file; it must at least hold what the dims need.
    let length = r.length.unwrap_or(size.saturating_sub(r.offset));
    let short = r.length.is_none() && expected.is_some_and(|needed| needed > length);
    if short || r.offset > size || r.offset.checked_add(length).is_none_or(|end| end > size) {
        return Err(ExternalError::OutOfRange {
            tensor: t.name().to_string(),
            location: r.location.clone(),
            offset: r.offset,
            length: r.length.or(expected).unwrap_or(length),
            size,
        });
    }
    Ok((path, length))
}

/// Opens a data file for reading without ever blocking: `O_NONBLOCK` makes the open of a FIFO that replaced the
/// checked file in the meantime return at once, and what was opened is checked to be a regular file again.
pub fn open_data(path: &Path) -> std::io::Result<File> {
    let file = crate::sys::platform::open_without_blocking(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(file)
}

/// Reads a tensor's external bytes, when they are at most `max` bytes long.
pub fn read(folder: &Path, t: &TensorProto, r: &ExternalRef, max: u64) -> Result<Option<Vec<u8>>, ExternalError> {
    let (path, length) = validate(folder, t, r)?;
    if length > max {
        return Ok(None);
    }
    let io = |e: std::io::Error| ExternalError::Io {
        tensor: t.name().to_string(),
        location: r.location.clone(),
        reason: crate::sys::platform::io_reason(&e),
    };
    let mut file = open_data(&path).map_err(io)?;
    file.seek(SeekFrom::Start(r.offset)).map_err(io)?;
    let mut bytes = vec![0u8; length as usize];
    file.read_exact(&mut bytes).map_err(io)?;
    Ok(Some(bytes))
}

/// Every external reference of a model checked without reading tensor data ([`validate`]), and the contents of
/// the small integer tensors among them, which shape inference needs (Expand's or Reshape's shape kept outside).
pub fn survey(folder: &Path, model: &crate::onnx::pb::ModelProto) -> (HashMap<String, Vec<i64>>, Vec<ExternalError>) {
    use crate::onnx::tensor;
    let mut values = HashMap::default();
    let mut problems = Vec::new();
    // Most tensors are held in the file: only the others are looked at further.
    let external = |t: &&TensorProto| t.data_location == Some(DataLocation::External as i32);
    for t in all_tensors(model).into_iter().filter(external) {
        let r = match reference(t) {
            None => continue,
            Some(Err(e)) => {
                problems.push(e);
                continue;
            }
            Some(Ok(r)) => r,
        };
        let small_int = matches!(t.data_type, Some(tensor::INT64 | tensor::INT32))
            && t.dims
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))
                .is_some_and(|n| n as usize <= tensor::MAX_VALUE_ELEMENTS);
        // Other tensors are only checked: nothing of theirs is read.
        let max = if small_int { 8 * tensor::MAX_VALUE_ELEMENTS as u64 } else { 0 };
        match read(folder, t, &r, max) {
            Ok(Some(bytes)) if small_int => {
                let inline = TensorProto {
                    dims: t.dims.clone(),
                    data_type: t.data_type,
                    raw_data: Some(bytes.into()),
                    ..Default::default()
                };
                if let Some(v) = tensor::int_values(&inline) {
                    values.insert(t.name().to_string(), v);
                }
            }
            Ok(_) => {}
            Err(e) => problems.push(e),
        }
    }
    (values, problems)
}

/// Every tensor of a model held in the file's structure (initializers, Constant values, sparse values, attribute
/// tensors) in all graphs and function bodies, for callers that must visit each external reference.
pub fn all_tensors(model: &crate::onnx::pb::ModelProto) -> Vec<&TensorProto> {
    use crate::onnx::pb::{GraphProto, NodeProto};
    fn nodes<'a>(ns: &'a [NodeProto], out: &mut Vec<&'a TensorProto>) {
        // Tensors and graphs are attributes; most nodes hold none.
        for n in ns.iter().filter(|n| crate::onnx::attr::has_any(n)) {
            out.extend(crate::onnx::attr::tensors(n));
            for g in crate::onnx::attr::subgraphs(n) {
                graph(g, out);
            }
        }
    }
    fn graph<'a>(g: &'a GraphProto, out: &mut Vec<&'a TensorProto>) {
        out.extend(&g.initializer);
        for s in &g.sparse_initializer {
            out.extend(s.values.iter().chain(&s.indices));
        }
        nodes(&g.node, out);
    }
    let mut out = Vec::new();
    if let Some(g) = &model.graph {
        graph(g, &mut out);
    }
    for f in &model.functions {
        nodes(&f.node, &mut out);
    }
    for t in &model.training_info {
        for g in t.initialization.iter().chain(&t.algorithm) {
            graph(g, &mut out);
        }
    }
    out
}

/// A byte range of an external data file: path, offset, length.
pub type SourceRange = (std::path::PathBuf, u64, u64);

/// Where external data goes when the rewritten model is written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExternalMoves {
    /// Initializers whose data now sits in the model file.
    pub inlined: Vec<String>,
    /// The new file gathering external data, and each range to copy into it, in order.
    pub gathered: Option<(String, Vec<SourceRange>)>,
    /// Tensors that no longer point at their old location.
    pub moved: std::collections::HashSet<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_outside_the_folder_are_refused_before_opening() {
        let dir = tempfile::tempdir().unwrap();
        let escapes = |loc: &str| matches!(resolve(dir.path(), "w", loc), Err(ExternalError::Escapes { .. }));
        assert!(escapes("/etc/passwd"));
        assert!(escapes("../secret.bin"));
        assert!(escapes("data/../../secret.bin"));
        std::fs::write(dir.path().join("w.bin"), [0u8; 8]).unwrap();
        assert!(resolve(dir.path(), "w", "w.bin").is_ok());
        // A `..` that only undoes the step before it stays inside: `sub/../w.bin` is `w.bin`.
        assert_eq!(resolve(dir.path(), "w", "sub/../w.bin").unwrap(), resolve(dir.path(), "w", "w.bin").unwrap());
        assert!(matches!(resolve(dir.path(), "w", "."), Err(ExternalError::NotAFile { .. })));
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        assert!(matches!(resolve(dir.path(), "w", "sub"), Err(ExternalError::NotAFile { kind: "a folder", .. })));
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("x.bin"), [0u8; 8]).unwrap();
            std::os::unix::fs::symlink(outside.path().join("x.bin"), dir.path().join("link.bin")).unwrap();
            assert!(escapes("link.bin"));
        }
        assert!(matches!(resolve(dir.path(), "w", "absent.bin"), Err(ExternalError::Missing { .. })));
    }
}
