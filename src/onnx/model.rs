//! Loading models: the only place that turns a file into a `ModelProto` (writing is `wire`'s and `save`'s).
//!
//! The file is memory-mapped, and every large `bytes` field of the decoded model (tensor `raw_data` above all) is a
//! view into the mapping: weights are never copied or even read. The rest is read with `pread` (see
//! [`crate::onnx::source`] for why not through the map).

use std::fs::File;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;

use crate::onnx::long_fields;
use crate::onnx::pb::{FunctionProto, GraphProto, ModelProto, NodeProto};
use crate::onnx::presize;
use crate::onnx::source::{DecodeFailure, FileSource, Source};

/// One step from a model down to a graph body.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GraphStep {
    /// The body of the model-local function at this position of `ModelProto.functions`.
    Function(usize),
    /// A graph held by a node's attribute: node position, attribute position, position of the graph within the
    /// attribute (`g` is 0, `graphs[k]` is k, or k + 1 when both are set).
    Subgraph { node: usize, attribute: usize, graph: usize },
    /// A graph of `ModelProto.training_info[info]`: its `algorithm`, or its `initialization`. Only `check` and
    /// `shapes` walk them; the rewrites leave them as they are.
    Training { info: usize, algorithm: bool },
}

/// A body of the model that a path of [`GraphStep`]s leads to: a graph, or a model-local function.
#[derive(Clone, Copy, Debug)]
pub enum ModelBody<'m> {
    Graph(&'m GraphProto),
    Function(&'m FunctionProto),
}

impl<'m> ModelBody<'m> {
    pub fn nodes(self) -> &'m [NodeProto] {
        match self {
            ModelBody::Graph(g) => &g.node,
            ModelBody::Function(f) => &f.node,
        }
    }
}

/// The body at `path`, or `None` where the path leads nowhere. A function or a training graph is a body of the
/// model itself, so only a first step names one; every later step goes into a node's graph attribute. The one
/// resolver of a path: the walk records paths, and every rewrite finds its bodies again through here.
pub fn body_at<'m>(model: &'m ModelProto, path: &[GraphStep]) -> Option<ModelBody<'m>> {
    let (mut body, rest) = match path.split_first() {
        Some((GraphStep::Function(k), rest)) => (ModelBody::Function(model.functions.get(*k)?), rest),
        Some((&GraphStep::Training { info, algorithm }, rest)) => {
            let t = model.training_info.get(info)?;
            let g = if algorithm { &t.algorithm } else { &t.initialization };
            (ModelBody::Graph(g.as_ref()?), rest)
        }
        _ => (ModelBody::Graph(model.graph.as_ref()?), path),
    };
    for step in rest {
        let GraphStep::Subgraph { node, attribute, graph } = *step else { return None };
        body = ModelBody::Graph(crate::onnx::attr::subgraph(body.nodes().get(node)?, attribute, graph)?);
    }
    Some(body)
}

/// Where a node sits in the model's structure; an empty path is the main graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeLoc {
    pub graph: Vec<GraphStep>,
    pub node: usize,
}

/// Why a model could not be loaded or saved. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read: {}", crate::sys::platform::io_reason(source))]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: is a directory, not an ONNX model file")]
    IsDirectory { path: PathBuf },
    #[error("{path}: not a binary ONNX model (empty file)")]
    Empty { path: PathBuf },
    /// The bytes do not decode, and they look like something else: text (an ONNX text-format file, JSON, a Git LFS
    /// pointer) or a zip archive.
    #[error("{path}: not a binary ONNX model (looks like {looks_like})")]
    NotBinary { path: PathBuf, looks_like: &'static str },
    #[error("{path}: not a valid ONNX model: {reason}")]
    Decode { path: PathBuf, reason: String },
    #[error("{path}: the model has no graph")]
    NoGraph { path: PathBuf },
    /// A name (or another field but tensor data) of 4 GiB or more: refused before decoding, by its length alone
    /// ([`crate::onnx::long_fields`]).
    #[error("{path}: not a supported ONNX model: {field}")]
    LongField { path: PathBuf, field: crate::onnx::long_fields::LongField },
}

/// A decoded model together with the bytes it was decoded from.
pub struct Model {
    path: PathBuf,
    /// The folder of `path` (`.` for a bare name), where external data locations are resolved: found once, here.
    folder: PathBuf,
    bytes: Bytes,
    /// The file the model was opened from; `None` for a model decoded from bytes in memory.
    file: Option<File>,
    proto: ModelProto,
}

impl Model {
    /// Memory-maps `path` and decodes it. Tensor data stays in the mapping.
    pub fn open(path: impl AsRef<Path>) -> Result<Model, LoadError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| LoadError::Io { path: path.clone(), source };
        let meta = std::fs::metadata(&path).map_err(io)?;
        if meta.is_dir() {
            return Err(LoadError::IsDirectory { path });
        }
        if meta.len() == 0 {
            return Err(LoadError::Empty { path });
        }
        let file = File::open(&path).map_err(io)?;
        let len = usize::try_from(meta.len()).map_err(|_| io(std::io::ErrorKind::FileTooLarge.into()))?;
        if let Some(field) = long_fields::find(&Source::File(FileSource::new(&file, len))) {
            return Err(LoadError::LongField { path, field });
        }
        // SAFETY: the mapping is read-only. Another process truncating the file while we run could fault us;
        // that is the documented limit of memory-mapped I/O and the price of never copying weights.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let bytes = Bytes::from_owner(map);
        let proto = match crate::onnx::decode::decode_model(&file, &bytes) {
            Ok(proto) => proto,
            Err(DecodeFailure::Io(source)) => return Err(LoadError::Io { path, source }),
            Err(DecodeFailure::Decode(e)) => {
                return Err(not_binary(&path, &file)
                    .unwrap_or_else(|| LoadError::Decode { path, reason: decode_reason(&e.to_string()) }));
            }
        };
        if proto.graph.is_none() {
            return Err(not_binary(&path, &file).unwrap_or(LoadError::NoGraph { path }));
        }
        let folder = crate::sys::atomic::folder_of(&path).to_path_buf();
        Ok(Model { path, folder, bytes, file: Some(file), proto })
    }

    /// Decodes a model from bytes already in memory; `path` only names it in messages.
    pub fn from_bytes(path: impl Into<PathBuf>, bytes: Bytes) -> Result<Model, LoadError> {
        let path = path.into();
        if bytes.is_empty() {
            return Err(LoadError::Empty { path });
        }
        let not_binary = |path: &Path| {
            let head = &bytes[..bytes.len().min(512)];
            looks_like(head).map(|looks_like| LoadError::NotBinary { path: path.to_path_buf(), looks_like })
        };
        if let Some(field) = long_fields::find(&Source::Memory(&bytes)) {
            return Err(LoadError::LongField { path, field });
        }
        // Small initializers stay views of `bytes` (prost's path): only the nodes take the fast path.
        let mut proto = presize::presized(presize::counts_in_memory(&bytes));
        crate::onnx::decode::merge_model(&mut proto, bytes.clone(), false).map_err(|e| {
            not_binary(&path)
                .unwrap_or_else(|| LoadError::Decode { path: path.clone(), reason: decode_reason(&e.to_string()) })
        })?;
        presize::fit_name_lists(&mut proto);
        if proto.graph.is_none() {
            return Err(not_binary(&path).unwrap_or(LoadError::NoGraph { path }));
        }
        let folder = crate::sys::atomic::folder_of(&path).to_path_buf();
        Ok(Model { path, folder, bytes, file: None, proto })
    }

    /// Gives main-graph initializer `index`, whose data the caller left out (it has no `raw_data`), the bytes `data`
    /// in its place; false when there is no such initializer or it has data. The policy of when that is sound is
    /// [`crate::onnx::tensor::with_placeholder_data`]'s.
    pub fn fill_left_out_data(&mut self, index: usize, data: Bytes) -> bool {
        let tensor = self.proto.graph.as_mut().and_then(|g| g.initializer.get_mut(index));
        match tensor {
            Some(t) if t.raw_data.is_none() => {
                t.raw_data = Some(data);
                true
            }
            _ => false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder the model's file is in (`.` for a bare name): where its external data locations are resolved.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// The bytes the model was decoded from (the memory map, for a model opened from a file). Reading them maps
    /// file pages into the process; [`Model::source`] reads without mapping.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The model's bytes for reading ranges of them: through `pread` for a model opened from a file.
    pub fn source(&self) -> Source<'_> {
        match &self.file {
            Some(file) => Source::File(FileSource::new(file, self.bytes.len())),
            None => Source::Memory(&self.bytes),
        }
    }

    pub fn proto(&self) -> &ModelProto {
        &self.proto
    }
}

/// What a file that is no ONNX model looks like, from its first bytes: a zip archive, or text. Asked only once
/// decoding has failed, so a model is never judged by its first bytes.
fn not_binary(path: &Path, file: &File) -> Option<LoadError> {
    let mut head = [0u8; 512];
    let n = crate::sys::platform::read_at(file, &mut head, 0).ok()?;
    looks_like(&head[..n]).map(|looks_like| LoadError::NotBinary { path: path.to_path_buf(), looks_like })
}

/// `a zip archive` for a zip archive's signature; `text` when the bytes are UTF-8 (a cut last character allowed) without
/// control characters other than tabs, newlines and carriage returns.
fn looks_like(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Some("a zip archive");
    }
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let printable = |c: char| !c.is_control() || matches!(c, '\t' | '\n' | '\r');
    (!text.is_empty() && text.chars().all(printable)).then_some("text")
}

/// A decoder error in words a user can act on, with the outermost few steps of where it happened.
///
/// prost words it as `failed to decode Protobuf message: Inner.field: ... : Outer.field: description`, innermost
/// step first, with one step per nesting level, which is thousands of characters for a depth bomb.
fn decode_reason(raw: &str) -> String {
    let body = raw.strip_prefix("failed to decode Protobuf message: ").unwrap_or(raw);
    // Path steps look like `Message.field`; what follows them is the description, which may hold ": " itself.
    let all: Vec<&str> = body.split(": ").collect();
    let is_step = |p: &str| {
        p.split_once('.').is_some_and(|(m, f)| {
            !m.is_empty()
                && !f.is_empty()
                && m.chars().all(|c| c.is_ascii_alphanumeric())
                && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    let steps = all.iter().take_while(|p| is_step(p)).count();
    let mut parts: Vec<&str> = all[..steps].to_vec();
    let joined = all[steps..].join(": ");
    let description = joined.as_str();
    let what = match description {
        "buffer underflow" => "the file ends in the middle of a field (truncated?)".to_string(),
        "recursion limit reached" => "messages nest deeper than the decoder allows (100 levels)".to_string(),
        d if d.starts_with("invalid key value") || d.starts_with("invalid wire type") => {
            format!("bytes that are not a protobuf field ({d}); is this an ONNX model?")
        }
        "invalid string value: data is not UTF-8 encoded" => "a string field is not valid UTF-8".to_string(),
        d => d.to_string(),
    };
    if parts.is_empty() {
        return what;
    }
    parts.reverse();
    let shown: Vec<&str> = parts.iter().take(4).copied().collect();
    let more = if parts.len() > 4 { format!(" > … ({} levels in all)", parts.len()) } else { String::new() };
    format!("{what}, at {}{more}", shown.join(" > "))
}

/// Encodes a model to its wire form.
pub fn encode(model: &ModelProto) -> Vec<u8> {
    model.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::looks_like;

    #[test]
    fn text_and_zip_are_recognised_and_binary_is_not() {
        assert_eq!(looks_like(b"ir_version: 8\ngraph {\n"), Some("text"));
        assert_eq!(looks_like("caf\u{e9}".as_bytes()), Some("text"));
        assert_eq!(looks_like(&"caf\u{e9}".as_bytes()[..4]), Some("text"), "a character cut at the end");
        assert_eq!(looks_like(b"PK\x03\x04\x14\x00"), Some("a zip archive"));
        assert_eq!(looks_like(b"\x08\x08\x12\x04"), None);
        assert_eq!(looks_like(b""), None);
    }
}
