//! Tensor data kept outside the model file (`data_location = EXTERNAL`).
//!
//! A location is only ever resolved inside the model's folder: an absolute path, a `..` step, or a symlink that
//! leads out of the folder is refused before anything is opened (ONNX's own loader had path-traversal bugs here:
//! CVE-2022-25882, CVE-2024-27318). Data is read only where it is needed, and then only the bytes needed.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use crate::proto::{tensor_proto::DataLocation, TensorProto};

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
    #[error("tensor '{tensor}' stores its data externally but names no location")]
    NoLocation { tensor: String },
    #[error("tensor '{tensor}': external data location '{location}' is {why}; refused (external data must stay inside the model's folder)")]
    Escapes { tensor: String, location: String, why: &'static str },
    #[error("tensor '{tensor}': external data field '{key}' is not a number: '{value}'")]
    BadNumber { tensor: String, key: String, value: String },
    #[error("tensor '{tensor}': external data file '{location}' is missing")]
    Missing { tensor: String, location: String },
    #[error("tensor '{tensor}': external data at offset {offset} with length {length} runs past the end of '{location}' ({size} bytes)")]
    OutOfRange { tensor: String, location: String, offset: u64, length: u64, size: u64 },
    #[error("tensor '{tensor}': cannot read external data '{location}': {reason}")]
    Io { tensor: String, location: String, reason: String },
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

/// The file a location names, checked to lie inside `folder` (the model's folder). Nothing is opened: the checks
/// look at the path's text, then resolve symlinks with `canonicalize`, which only reads directory entries.
pub fn resolve(folder: &Path, tensor: &str, location: &str) -> Result<PathBuf, ExternalError> {
    let escapes = |why| ExternalError::Escapes { tensor: tensor.to_string(), location: location.to_string(), why };
    let relative = Path::new(location);
    if relative.is_absolute() || location.starts_with('/') || location.starts_with('\\') || location.contains(':') {
        return Err(escapes("an absolute path"));
    }
    if relative.components().any(|c| matches!(c, Component::ParentDir | Component::RootDir | Component::Prefix(_))) {
        return Err(escapes("a path that climbs out with '..'"));
    }
    let joined = folder.join(relative);
    let missing = || ExternalError::Missing { tensor: tensor.to_string(), location: location.to_string() };
    let real = joined.canonicalize().map_err(|_| missing())?;
    let base = folder.canonicalize().map_err(|_| missing())?;
    if !real.starts_with(&base) {
        return Err(escapes("a symlink that leads outside the model's folder"));
    }
    Ok(real)
}

/// Reads a tensor's external bytes, when they are at most `max` bytes long.
pub fn read(folder: &Path, t: &TensorProto, r: &ExternalRef, max: u64) -> Result<Option<Vec<u8>>, ExternalError> {
    let path = resolve(folder, t.name(), &r.location)?;
    let io = |e: std::io::Error| ExternalError::Io {
        tensor: t.name().to_string(),
        location: r.location.clone(),
        reason: e.to_string(),
    };
    let mut file = File::open(&path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let length = r.length.unwrap_or(size.saturating_sub(r.offset));
    if r.offset.checked_add(length).is_none_or(|end| end > size) {
        return Err(ExternalError::OutOfRange {
            tensor: t.name().to_string(),
            location: r.location.clone(),
            offset: r.offset,
            length,
            size,
        });
    }
    if length > max {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(r.offset)).map_err(io)?;
    let mut bytes = vec![0u8; length as usize];
    file.read_exact(&mut bytes).map_err(io)?;
    Ok(Some(bytes))
}

/// Every tensor of a model held in the file's structure (initializers, Constant values, sparse values, attribute
/// tensors) in all graphs and function bodies, for callers that must visit each external reference.
pub fn all_tensors(model: &crate::proto::ModelProto) -> Vec<&TensorProto> {
    use crate::proto::{GraphProto, NodeProto};
    fn nodes<'a>(ns: &'a [NodeProto], out: &mut Vec<&'a TensorProto>) {
        for n in ns {
            for a in &n.attribute {
                out.extend(a.t.iter().chain(&a.tensors));
                for s in a.sparse_tensor.iter().chain(&a.sparse_tensors) {
                    out.extend(s.values.iter().chain(&s.indices));
                }
                for g in a.g.iter().chain(&a.graphs) {
                    graph(g, out);
                }
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
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.bin"), [0u8; 8]).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.bin"), dir.path().join("link.bin")).unwrap();
        assert!(escapes("link.bin"));
        assert!(matches!(resolve(dir.path(), "w", "absent.bin"), Err(ExternalError::Missing { .. })));
    }
}
