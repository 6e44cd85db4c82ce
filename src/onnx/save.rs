//! Saving a rewritten model: what OUT may be, what may be written beside it, and how.
//!
//! The policy, one for every mode of `expand`:
//!
//! - OUT's folder must exist; it is never created. (Folders that the model's external data locations name *inside*
//!   it, like `weights/` in `weights/w.bin`, are created, as part of the model's layout.)
//! - OUT may be a new file or an existing regular file, replaced atomically ([`crate::sys::atomic`]). A symlink is
//!   followed: the file it points to is replaced and the link stays, as `cp` does; a dangling link is refused.
//! - An OUT that exists and is not a regular file (a FIFO, `/dev/stdout`, a terminal) is written through, as is
//!   stdout for `-`. A stream cannot be replaced atomically, and has no folder to carry external data into: the
//!   model's external data references are written as they are (valid read from the input's folder), and
//!   `--gather-external-data` is refused.
//! - `--gather-external-data FILE` makes FILE beside OUT. FILE must be new, or a data file the input model itself
//!   references there (which the rewrite then owns); it is never IN, OUT, or any other existing file.
//! - Every message names OUT (or the data file written beside it), never a temporary name.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::onnx::external::{self, ExternalMoves, SourceRange};
use crate::onnx::wire::Pieces;
use crate::sys::atomic::{folder_of, write_atomically};

/// Where the rewritten model goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    /// An existing file that is not a regular file (a FIFO, a device): written through.
    Stream(PathBuf),
    /// A regular file, new or replaced (the target of a symlink OUT), and its folder.
    File {
        path: PathBuf,
        folder: PathBuf,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("{out}: cannot write: it is a folder; OUT must name a file")]
    IsFolder { out: String },
    #[error("{out}: cannot write: the folder '{folder}' does not exist (OUT's folder is never created)")]
    NoFolder { out: String, folder: String },
    #[error("{out}: cannot write: '{folder}' is not a folder")]
    NotAFolder { out: String, folder: String },
    #[error("{out}: cannot write: it is a symlink to '{target}', which does not exist")]
    Dangling { out: String, target: String },
    #[error("{out}: --gather-external-data {file}: {why}")]
    Gather { out: String, file: String, why: String },
    #[error("{out}: cannot write external data '{file}' beside it: {reason}")]
    Data { out: String, file: String, reason: String },
    #[error("{out}: cannot write: {reason}")]
    Io { out: String, reason: String },
}

/// An I/O error without the path the OS call was given (which may be a temporary name).
fn reason(e: &io::Error) -> String {
    crate::sys::platform::io_reason(e)
}

/// Where `output` (OUT as given) leads, by the policy in the module documentation.
pub fn destination(output: &Path) -> Result<Destination, SaveError> {
    let out = output.display().to_string();
    if output.as_os_str() == "-" {
        return Ok(Destination::Stdout);
    }
    let io = |e: io::Error| SaveError::Io { out: out.clone(), reason: reason(&e) };
    let path = match std::fs::symlink_metadata(output) {
        Ok(link) => {
            let meta = match std::fs::metadata(output) {
                Ok(meta) => meta,
                Err(_) => {
                    let target = std::fs::read_link(output).map_err(io)?.display().to_string();
                    return Err(SaveError::Dangling { out, target });
                }
            };
            if meta.is_dir() {
                return Err(SaveError::IsFolder { out });
            } else if !meta.is_file() {
                return Ok(Destination::Stream(output.to_path_buf()));
            } else if link.file_type().is_symlink() {
                output.canonicalize().map_err(io)?
            } else {
                output.to_path_buf()
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => output.to_path_buf(),
        Err(e) => return Err(io(e)),
    };
    // A regular file, new or replaced: its folder must exist (it does, for a file that exists).
    let folder = folder_of(&path).to_path_buf();
    let shown = folder.display().to_string();
    match std::fs::metadata(&folder) {
        Ok(meta) if meta.is_dir() => Ok(Destination::File { path, folder }),
        Ok(_) => Err(SaveError::NotAFolder { out, folder: shown }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(SaveError::NoFolder { out, folder: shown }),
        Err(e) => Err(io(e)),
    }
}

/// Writes a rewritten model to `output` and keeps its external data references valid there: when OUT is in
/// another folder than the input, each external data file is copied beside it at the same relative location
/// (checked to stay inside both folders). The copies are made first and removed again if the model cannot be
/// written, so a failure leaves nothing behind. Returns the locations written beside OUT.
pub fn write_model(
    model: &crate::onnx::model::Model,
    moves: &ExternalMoves,
    pieces: &Pieces,
    output: &Path,
) -> Result<Vec<String>, SaveError> {
    let out = output.display().to_string();
    let (path, to) = match destination(output)? {
        Destination::Stdout => return write_stream(model, moves, pieces, &out, &mut crate::sys::stdout::locked()),
        Destination::Stream(path) => {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| SaveError::Io { out: out.clone(), reason: reason(&e) })?;
            return write_stream(model, moves, pieces, &out, &mut file);
        }
        Destination::File { path, folder } => (path, folder),
    };
    let from = model.folder();
    let same_folder = match (from.canonicalize(), to.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let carried = if same_folder { Vec::new() } else { carried_locations(model, from, moves, &out)? };
    if let Some((file, _)) = &moves.gathered {
        gather_allowed(model, (from, &to), &path, file, &carried, &out)?;
    }
    let mut written: Vec<PathBuf> = Vec::new();
    let mut names = Vec::new();
    let undo = |written: &[PathBuf]| written.iter().for_each(|p| drop(std::fs::remove_file(p)));
    for (location, source) in &carried {
        // `validate` accepted the location, so it normalizes to a path inside the folder.
        let target = to.join(external::normalize(Path::new(location)).unwrap_or_else(|| location.into()));
        let copied = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| write_atomically(&target, |w| io::copy(&mut external::open_data(source)?, w).map(|_| ())));
        if let Err(e) = copied {
            undo(&written);
            return Err(SaveError::Data { out, file: location.clone(), reason: reason(&e) });
        }
        written.push(target);
        names.push(location.clone());
    }
    if let Some((file, ranges)) = &moves.gathered {
        let target = to.join(file);
        if let Err(e) = write_atomically(&target, |w| gather(ranges, w)) {
            undo(&written);
            return Err(SaveError::Data { out, file: file.clone(), reason: reason(&e) });
        }
        written.push(target);
        names.push(file.clone());
    }
    let write = |w: &mut File| {
        crate::sys::copy::prepare(w, pieces.len());
        pieces.write_to_file(model.source(), w)
    };
    if let Err(e) = write_atomically(&path, write) {
        undo(&written);
        return Err(SaveError::Io { out, reason: reason(&e) });
    }
    Ok(names)
}

/// The model to a stream: its external data references stay as they are.
fn write_stream(
    model: &crate::onnx::model::Model,
    moves: &ExternalMoves,
    pieces: &Pieces,
    out: &str,
    stream: &mut dyn Write,
) -> Result<Vec<String>, SaveError> {
    if let Some((file, _)) = &moves.gathered {
        let why = "OUT is not a regular file, so there is no folder to gather into".to_string();
        return Err(SaveError::Gather { out: out.to_string(), file: file.clone(), why });
    }
    let mut buffered = io::BufWriter::with_capacity(1 << 20, stream);
    pieces
        .write_to(model.source(), &mut buffered)
        .and_then(|()| buffered.flush())
        .map_err(|e| SaveError::Io { out: out.to_string(), reason: reason(&e) })?;
    Ok(Vec::new())
}

/// Each distinct external data location the rewritten model still references, with the file it resolves to.
fn carried_locations(
    model: &crate::onnx::model::Model,
    from: &Path,
    moves: &ExternalMoves,
    out: &str,
) -> Result<Vec<(String, PathBuf)>, SaveError> {
    let mut seen = HashSet::new();
    let mut carried = Vec::new();
    for t in external::all_tensors(model.proto()) {
        if moves.moved.contains(t.name()) {
            continue;
        }
        let Some(r) = external::reference(t) else { continue };
        let invalid = |e: external::ExternalError| SaveError::Io { out: out.to_string(), reason: e.to_string() };
        let r = r.map_err(invalid)?;
        if seen.insert(r.location.clone()) {
            let (source, _) = external::validate(from, t, &r).map_err(invalid)?;
            carried.push((r.location, source));
        }
    }
    Ok(carried)
}

/// Whether `--gather-external-data FILE` may write FILE beside `path` (OUT): see the module documentation.
/// `folders`: the input's folder and OUT's.
fn gather_allowed(
    model: &crate::onnx::model::Model,
    (from, to): (&Path, &Path),
    path: &Path,
    file: &str,
    carried: &[(String, PathBuf)],
    out: &str,
) -> Result<(), SaveError> {
    let target = to.join(file);
    let refuse = |why: &str| Err(SaveError::Gather { out: out.to_string(), file: file.to_string(), why: why.into() });
    // The data files the input model references, found before any file is looked at.
    let sources: Vec<PathBuf> = external::all_tensors(model.proto())
        .into_iter()
        .filter_map(|t| {
            let r = external::reference(t)?.ok()?;
            external::resolve(from, t.name(), &r.location).ok()
        })
        .collect();
    if path.file_name() == Some(std::ffi::OsStr::new(file)) || crate::sys::platform::same_file(&target, path) {
        return refuse("names OUT itself");
    }
    if crate::sys::platform::same_file(&target, model.path()) {
        return refuse("names the input model");
    }
    if carried.iter().any(|(location, _)| Path::new(location) == Path::new(file)) {
        return refuse("is also where the model's other external data is copied");
    }
    let Ok(meta) = std::fs::symlink_metadata(&target) else { return Ok(()) };
    if !meta.is_file() {
        return refuse("exists and is not a regular file");
    }
    // An existing file may only be one the input model references beside OUT: the rewrite replaces it.
    if sources.iter().any(|source| crate::sys::platform::same_file(source, &target)) {
        Ok(())
    } else {
        refuse("already exists and is not a data file of this model; choose a new name")
    }
}

/// Copies the gathered ranges one after the other, each on a 64-byte boundary.
fn gather(ranges: &[SourceRange], w: &mut File) -> io::Result<()> {
    let mut written = 0u64;
    for (source, offset, length) in ranges {
        let pad = written.div_ceil(64) * 64 - written;
        w.write_all(&vec![0u8; pad as usize])?;
        let mut f = external::open_data(source)?;
        io::Seek::seek(&mut f, io::SeekFrom::Start(*offset))?;
        let copied = io::copy(&mut io::Read::take(f, *length), w)?;
        if copied != *length {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "external data ended early"));
        }
        written += pad + length;
    }
    Ok(())
}
