//! Reading a model file without touching its tensor data.
//!
//! The file is memory-mapped, but the map is only used to hand out views of large `bytes` fields (tensor
//! `raw_data`); everything else is read with `pread` through a small window. Why not decode straight from the map:
//! on Linux 6.x the page cache holds a file that was read with `read()` (by `cp`, a download, `onnx.load`) in folios
//! of up to 2 MiB, and touching one mapped byte maps the whole folio into the process. A tensor's header sits next
//! to its data, so decoding 200 tensors from the map put 400 MiB of file pages in our RSS although no tensor byte
//! was read. Through `pread`, header bytes are copied out and no page is mapped.
//!
//! The window starts small ([`MIN_READ`]) after every skipped large payload and doubles while the reader walks on
//! (through small fields, or over small payloads), up to [`MAX_READ`]: a run of large tensors costs one small read
//! each, not their data, and a graph of small fields is read in a few dozen calls rather than one a page.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::ops::Range;

use bytes::{Buf, Bytes};
use prost::encoding::decode_varint;
use prost::Message;

/// `bytes` fields of this size or more become views of the map instead of copies.
pub const LARGE: usize = 16 << 10;
/// The first read after a skip: one page, the one that holds the header just read.
const MIN_READ: usize = 4 << 10;
const MAX_READ: usize = 1 << 20;

/// Where the wire-level writer reads the original model from.
pub enum Source<'a> {
    Memory(&'a [u8]),
    File(FileSource<'a>),
}

impl<'a> From<&'a [u8]> for Source<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        Source::Memory(bytes)
    }
}

impl<'a> From<&'a Bytes> for Source<'a> {
    fn from(bytes: &'a Bytes) -> Self {
        Source::Memory(bytes)
    }
}

impl<'a> From<&'a Vec<u8>> for Source<'a> {
    fn from(bytes: &'a Vec<u8>) -> Self {
        Source::Memory(bytes)
    }
}

impl Source<'_> {
    pub fn len(&self) -> usize {
        match self {
            Source::Memory(b) => b.len(),
            Source::File(f) => f.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the bytes of `range` to `out`.
    pub fn read_into(&self, range: Range<usize>, out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Source::Memory(b) => {
                let bytes = b.get(range).ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
                out.extend_from_slice(bytes);
                Ok(())
            }
            Source::File(f) => f.read_into(range, out),
        }
    }

    /// Calls `f` with the bytes of `range` where they are held (in memory, or in the file's window, read into it
    /// first) rather than copied out: the splice reads a graph's field headers and its small nodes this way.
    pub fn with_bytes<R>(&self, range: Range<usize>, f: impl FnOnce(&[u8]) -> R) -> io::Result<R> {
        match self {
            Source::Memory(b) => b.get(range).map(f).ok_or_else(|| io::ErrorKind::UnexpectedEof.into()),
            Source::File(file) => file.with_bytes(range, f),
        }
    }

    /// The open file, when the source is one (large ranges are then copied file to file).
    pub fn file(&self) -> Option<&File> {
        match self {
            Source::Memory(_) => None,
            Source::File(f) => Some(f.file),
        }
    }
}

/// A file read through a window; see the module documentation.
pub struct FileSource<'a> {
    file: &'a File,
    len: usize,
    window: RefCell<Window>,
}

impl<'a> FileSource<'a> {
    pub fn new(file: &'a File, len: usize) -> Self {
        FileSource { file, len, window: RefCell::new(Window::default()) }
    }

    fn with_bytes<R>(&self, range: Range<usize>, f: impl FnOnce(&[u8]) -> R) -> io::Result<R> {
        if range.len() >= MAX_READ {
            let mut bytes = Vec::new();
            self.read_into(range, &mut bytes)?;
            return Ok(f(&bytes));
        }
        if range.end > self.len {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut w = self.window.borrow_mut();
        if !w.covers(&range) {
            w.fill(self.file, range.start, range.len(), self.len)?;
        }
        Ok(f(w.get(range)))
    }

    fn read_into(&self, range: Range<usize>, out: &mut Vec<u8>) -> io::Result<()> {
        if range.end > self.len {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut w = self.window.borrow_mut();
        if !w.covers(&range) {
            if range.len() >= MAX_READ {
                let at = out.len();
                out.resize(at + range.len(), 0);
                return crate::sys::platform::read_exact_at(self.file, &mut out[at..], range.start as u64);
            }
            w.fill(self.file, range.start, range.len(), self.len)?;
        }
        out.extend_from_slice(w.get(range));
        Ok(())
    }
}

/// The bytes of the file from `start`, and how much to read next time.
#[derive(Default)]
pub(crate) struct Window {
    start: usize,
    /// The file's bytes from `start`. Its capacity is never shrunk, and a read goes into that capacity without
    /// clearing it first, so that a read neither clears nor moves bytes (a `Vec` grown by `resize` clears what it
    /// adds and, when it moves, copies what it held: ~2 instructions a byte on every growth, ~2 M on a 2.7 MB
    /// graph; a buffer zeroed when made cost as many instructions as the file's bytes, 34 M over 132 real models).
    bytes: Vec<u8>,
    next_read: usize,
}

impl Window {
    /// The bytes from `at` on, at least `need` of them (fewer only at the end of the file), read if the window does
    /// not hold them.
    #[inline(always)]
    pub(crate) fn head(&mut self, file: &File, at: usize, need: usize, file_len: usize) -> io::Result<&[u8]> {
        if !self.covers(&(at..at + need)) {
            self.fill(file, at, need, file_len)?;
        }
        Ok(&self.bytes()[at - self.start..])
    }

    /// The bytes read.
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn end(&self) -> usize {
        self.start + self.bytes.len()
    }

    fn covers(&self, range: &Range<usize>) -> bool {
        range.start >= self.start && range.end <= self.end()
    }

    fn get(&self, range: Range<usize>) -> &[u8] {
        &self.bytes()[range.start - self.start..range.end - self.start]
    }

    /// Reads at least `need` bytes from `at` (fewer only at the end of the file).
    fn fill(&mut self, file: &File, at: usize, need: usize, file_len: usize) -> io::Result<()> {
        // Reading on from within the window, from its end, or from past a small payload's skip means the caller
        // walks forward: read ahead more. (A scan of headers skips every payload, and a small one often ends past
        // the window, as a header may straddle its end; taking either for a jump kept the presize scan at one 4 KiB
        // `pread` a step, 1,843 of them on a 7.6 MB graph.) A jump over a large payload (one that will be a view of
        // the map) means a payload was skipped, and the next one may start right after the next header.
        let forward = self.start <= at && at < self.end() + LARGE;
        self.next_read = if forward && self.next_read > 0 { (self.next_read * 2).min(MAX_READ) } else { MIN_READ };
        let size = self.next_read.max(need).min(file_len.saturating_sub(at));
        self.bytes.clear();
        if self.bytes.capacity() < size {
            // A new buffer rather than a grown one: nothing to copy over. The window grows by doubling to
            // MAX_READ, so it is made at once as large as it may grow for this read's size and the file's.
            let grown = size.max(MAX_READ.min(file_len.saturating_sub(at)));
            self.bytes = Vec::new();
            self.bytes = Vec::with_capacity(grown);
        }
        self.start = at;
        let room = &mut self.bytes.spare_capacity_mut()[..size];
        let read = crate::sys::platform::read_exact_at_uninit(file, room, at as u64);
        if read.is_ok() {
            // SAFETY: the read wrote all `size` bytes, within the capacity.
            unsafe { self.bytes.set_len(size) };
        }
        read
    }
}

/// Decodes a message from a file: large `bytes` fields are views of `map` (the same file, mapped), everything
/// else is read through the window.
pub fn decode<M: Message + Default>(file: &File, map: &Bytes) -> Result<M, DecodeFailure> {
    let mut message = M::default();
    merge(file, map, &mut message)?;
    Ok(message)
}

fn merge(file: &File, map: &Bytes, message: &mut impl Message) -> Result<(), DecodeFailure> {
    merge_with(file, map, |buf| message.merge(buf))
}

/// Runs `merge` over the file read through the window, large fields as views of `map`.
pub(crate) fn merge_with(
    file: &File,
    map: &Bytes,
    merge: impl FnOnce(&mut FileBuf) -> Result<(), prost::DecodeError>,
) -> Result<(), DecodeFailure> {
    let mut buf = FileBuf { file, map, window: Window::default(), pos: 0, end: map.len(), error: None, refill_at: 0 };
    buf.refill_at_pos();
    let merged = merge(&mut buf);
    match (buf.error, merged) {
        (Some(e), _) => Err(DecodeFailure::Io(e)),
        (None, merged) => merged.map_err(DecodeFailure::Decode),
    }
}

/// A varint, as prost reads it; one or two bytes inline (keys, and lengths under 16 KiB: a small tensor's).
#[inline(always)]
pub(crate) fn varint(rest: &mut &[u8]) -> Option<u64> {
    match **rest {
        [b, ..] if b < 0x80 => {
            *rest = &rest[1..];
            Some(u64::from(b))
        }
        [low, high, ..] if high < 0x80 => {
            *rest = &rest[2..];
            Some(u64::from(low & 0x7f) | u64::from(high) << 7)
        }
        _ => {
            // prost reads a copy: where `rest` itself went to prost's (out-of-line) reader, the caller's slice had
            // to live in memory, and every field a decoder read stored and loaded it again (~5 instructions).
            let mut copy = *rest;
            let value = decode_varint(&mut copy).ok();
            *rest = copy;
            value
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("malformed protobuf at byte {offset}: {reason}")]
    Malformed { offset: usize, reason: &'static str },
    #[error("cannot read the input: {}", crate::sys::platform::io_reason(.0))]
    Io(#[from] io::Error),
}

/// One field of a message: its number, the whole field's range and, for length-delimited fields, the payload's.
pub struct Field {
    pub number: u32,
    pub range: Range<usize>,
    pub payload: Range<usize>,
}

/// A field's key and a varint (its value or its length) take at most this many bytes.
pub(crate) const MAX_HEAD: usize = 20;

/// A message of at most this many bytes is read whole to list its fields (one read instead of one per field).
const SMALL_MESSAGE: usize = 1 << 10;

/// The fields of the message held in `source[range]`, in order. Reads only their headers (a small message whole).
pub(crate) fn fields(source: &Source, range: Range<usize>) -> Result<Vec<Field>, WireError> {
    // Room for a node's usual fields (inputs, output, name, op type) at once.
    let mut out = Vec::with_capacity(8);
    for_each_field(source, range, |f| out.push(f))?;
    Ok(out)
}

/// Calls `each` with the fields of the message held in `source[range]`, in order. Reads only their headers.
pub fn for_each_field(source: &Source, range: Range<usize>, mut each: impl FnMut(Field)) -> Result<(), WireError> {
    try_for_each_field(source, range, |f| {
        each(f);
        Ok(())
    })
}

/// [`for_each_field`] with an `each` that may fail, which stops the walk with its error.
pub fn try_for_each_field(
    source: &Source,
    range: Range<usize>,
    mut each: impl FnMut(Field) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let mut pos = range.start;
    // A small message (a node, an attribute) is read once, whole; a large one header by header, each read where
    // the source holds it.
    if range.len() <= SMALL_MESSAGE {
        let mut message = Vec::with_capacity(range.len());
        source.read_into(range.clone(), &mut message)?;
        while pos < range.end {
            let field = field_at(&message[pos - range.start..], pos, 0)?;
            pos = field.range.end;
            each(field)?;
        }
        return Ok(());
    }
    while pos < range.end {
        let head = pos..range.end.min(pos + MAX_HEAD);
        let beyond = range.end - head.end;
        let field = source.with_bytes(head, |head| field_at(head, pos, beyond))??;
        pos = field.range.end;
        each(field)?;
    }
    Ok(())
}

/// The field whose header `rest` starts with, at `start` in the source; `beyond`: how many bytes of the message
/// follow `rest`.
pub(crate) fn field_at(mut rest: &[u8], start: usize, beyond: usize) -> Result<Field, WireError> {
    let err = |reason| WireError::Malformed { offset: start, reason };
    let before = rest.len();
    let key = decode_varint(&mut rest).map_err(|_| err("bad field key"))?;
    let number = u32::try_from(key >> 3).map_err(|_| err("field number out of range"))?;
    let wire = key & 7;
    let mut payload = 0..0;
    match wire {
        0 => {
            decode_varint(&mut rest).map_err(|_| err("bad varint"))?;
        }
        1 | 5 => {
            let n = if wire == 1 { 8 } else { 4 };
            if rest.len() < n {
                return Err(err("truncated fixed-size field"));
            }
            rest = &rest[n..];
        }
        2 => {
            let len = decode_varint(&mut rest).map_err(|_| err("bad length"))?;
            let len = usize::try_from(len).map_err(|_| err("length out of range"))?;
            if len > rest.len() + beyond {
                return Err(err("length beyond the message"));
            }
            let p = start + (before - rest.len());
            payload = p..p + len;
        }
        _ => return Err(err("unsupported wire type")),
    }
    let end = if wire == 2 { payload.end } else { start + (before - rest.len()) };
    Ok(Field { number, range: start..end, payload })
}

#[derive(Debug)]
pub enum DecodeFailure {
    Io(io::Error),
    Decode(prost::DecodeError),
}

/// The decoder's view of the file. Invariant: the window holds `pos` whenever anything remains.
pub(crate) struct FileBuf<'a> {
    file: &'a File,
    map: &'a Bytes,
    window: Window,
    pos: usize,
    end: usize,
    /// A failed read ends the input here, so that the decoder stops; the error is reported instead of its.
    error: Option<io::Error>,
    /// Where the window is moved on: its end, or, in a window grown large (a walk through small fields, nodes and
    /// declarations), [`LARGE`] bytes before it, so that a message under `LARGE` lies whole in the chunk, where the
    /// decoder's fast paths read it (one cut by the window's end went through prost's generated code: ~90,000
    /// instructions for a PyTorch node with its stack traces). Re-reading up to `LARGE` bytes of a window of up to
    /// [`MAX_READ`] costs little; a small window, as between large tensors, runs out first. `usize::MAX` once the
    /// window reaches the end of the input.
    refill_at: usize,
}

impl FileBuf<'_> {
    /// Moves the window to `pos` once the decoder reaches [`FileBuf::refill_at`].
    #[inline]
    fn refill(&mut self) {
        if self.pos >= self.refill_at && self.pos < self.end {
            self.refill_at_pos();
        }
    }

    #[cold]
    fn refill_at_pos(&mut self) {
        if let Err(e) = self.window.fill(self.file, self.pos, 1, self.end) {
            self.error = Some(e);
            self.end = self.pos;
            self.window.start = self.pos;
        }
        let end = self.window.end();
        self.refill_at = match end {
            _ if end >= self.end => usize::MAX,
            _ if self.window.bytes.len() >= 4 * LARGE => end - LARGE,
            _ => end,
        };
    }
}

impl Buf for FileBuf<'_> {
    fn remaining(&self) -> usize {
        self.end - self.pos
    }

    #[inline]
    fn chunk(&self) -> &[u8] {
        // The window holds `pos` while anything remains; at the end, `pos` may lie past it.
        self.window.bytes().get(self.pos - self.window.start..).unwrap_or_default()
    }

    #[inline]
    fn advance(&mut self, cnt: usize) {
        assert!(cnt <= self.remaining(), "advance past the end of the input");
        self.pos += cnt;
        self.refill();
    }

    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        assert!(len <= self.remaining(), "copy_to_bytes past the end of the input");
        if len >= LARGE {
            let view = self.map.slice(self.pos..self.pos + len);
            self.advance(len);
            return view;
        }
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let chunk = self.chunk();
            if chunk.is_empty() {
                // A read failed; the decoder sees a short field and stops, and the error is reported.
                break;
            }
            let n = chunk.len().min(len - out.len());
            out.extend_from_slice(&chunk[..n]);
            self.advance(n);
        }
        Bytes::from(out)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::onnx::pb::{GraphProto, ModelProto, TensorProto};
    use std::io::Write;

    fn model_with_tensors(sizes: &[usize]) -> Vec<u8> {
        let initializer = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| TensorProto {
                name: Some(format!("t{i}")),
                dims: vec![n as i64],
                data_type: Some(2),
                raw_data: Some(Bytes::from((0..n).map(|b| b as u8).collect::<Vec<u8>>())),
                ..Default::default()
            })
            .collect();
        let graph = GraphProto { name: Some("g".into()), initializer, ..Default::default() };
        ModelProto { ir_version: Some(8), graph: Some(graph), ..Default::default() }.encode_to_vec()
    }

    /// `bytes` in a temporary file, and the file mapped (the decoder's tests in `decode_tests.rs` use it too).
    pub(in crate::onnx) fn file_with(bytes: &[u8]) -> (tempfile::NamedTempFile, Bytes) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        let map = unsafe { memmap2::Mmap::map(f.as_file()) }.unwrap();
        (f, Bytes::from_owner(map))
    }

    #[test]
    fn decoding_through_the_window_gives_what_decoding_from_memory_gives() {
        let bytes = model_with_tensors(&[3, LARGE - 1, LARGE, 5 * MAX_READ, 7, 0, 100_000]);
        let (f, map) = file_with(&bytes);
        let from_file: ModelProto = decode(f.as_file(), &map).unwrap();
        assert_eq!(from_file, ModelProto::decode(bytes.as_slice()).unwrap());
        // The file ends with a large field, read as a view: the decoder ends past the window.
        let bytes = model_with_tensors(&[3, 2 * LARGE]);
        let (f, map) = file_with(&bytes);
        let from_file: ModelProto = decode(f.as_file(), &map).unwrap();
        assert_eq!(from_file, ModelProto::decode(bytes.as_slice()).unwrap());
    }

    #[test]
    fn large_fields_are_views_of_the_map_and_small_ones_are_copies() {
        let bytes = model_with_tensors(&[10, LARGE]);
        let (f, map) = file_with(&bytes);
        let model: ModelProto = decode(f.as_file(), &map).unwrap();
        let in_map = |b: &Bytes| map.as_ptr_range().contains(&b.as_ptr());
        let tensors = &model.graph.as_ref().unwrap().initializer;
        assert!(!in_map(tensors[0].raw_data.as_ref().unwrap()));
        assert!(in_map(tensors[1].raw_data.as_ref().unwrap()));
    }

    /// Keys and lengths of one and two bytes are read inline; every other varint by prost, so all read alike,
    /// non-minimal encodings (`0x80 0x00`) and cut ones included.
    #[test]
    fn varints_read_inline_are_prosts() {
        let mut inputs: Vec<Vec<u8>> = (0..=u16::MAX).map(|v| v.to_le_bytes().to_vec()).collect();
        inputs.extend([
            vec![],
            vec![0x80],
            vec![0xff, 0xff],
            vec![0xff, 0xff, 0x7f, 9],
            vec![0x80; 11],
            vec![0xff; 10],
        ]);
        inputs.extend((0..64).map(|shift| {
            let mut out = Vec::new();
            prost::encoding::encode_varint(1u64 << shift, &mut out);
            out
        }));
        for bytes in inputs {
            let (mut ours, mut theirs) = (&bytes[..], &bytes[..]);
            let read = varint(&mut ours);
            assert_eq!(read, decode_varint(&mut theirs).ok(), "{bytes:02x?}");
            if read.is_some() {
                assert_eq!(ours, theirs, "{bytes:02x?}: the same bytes read");
            }
        }
    }

    #[test]
    fn a_truncated_file_is_a_decode_error() {
        let bytes = model_with_tensors(&[LARGE * 2]);
        let (f, map) = file_with(&bytes[..bytes.len() - 10]);
        assert!(matches!(decode::<ModelProto>(f.as_file(), &map), Err(DecodeFailure::Decode(_))));
    }

    /// A scan of headers (the presize count) asks the window for a few bytes at each field, skipping payloads: a
    /// header straddling the window's end, or one past a small payload that ended past it, is the scan walking on,
    /// and the window doubles; a jump over a large payload starts it small again.
    #[test]
    fn the_window_grows_while_a_scan_walks_on_and_starts_small_after_a_large_skip() {
        let bytes = vec![0u8; 6 * MAX_READ];
        let (f, _map) = file_with(&bytes);
        let (file, len) = (f.as_file(), bytes.len());
        let mut w = Window::default();
        w.head(file, 0, MAX_HEAD, len).unwrap();
        assert_eq!(w.next_read, MIN_READ);
        // A header straddling the end: read again from its start.
        let at = w.end() - 3;
        w.head(file, at, MAX_HEAD, len).unwrap();
        assert_eq!((w.start, w.next_read), (at, 2 * MIN_READ));
        // A small payload skipped past the end.
        let at = w.end() + 300;
        w.head(file, at, MAX_HEAD, len).unwrap();
        assert_eq!((w.start, w.next_read), (at, 4 * MIN_READ));
        // Reading on from the end, up to the largest read.
        for _ in 0..12 {
            let at = w.end();
            w.head(file, at, MAX_HEAD, len).unwrap();
        }
        assert_eq!(w.next_read, MAX_READ);
        // A large payload skipped: small again.
        let at = w.end() + LARGE;
        w.head(file, at, MAX_HEAD, len).unwrap();
        assert_eq!((w.start, w.next_read), (at, MIN_READ));
        // A jump back (the writer reading a range before the window) is no walk forward either.
        w.head(file, at + 4 * MIN_READ, MAX_HEAD, len).unwrap();
        w.head(file, 10, MAX_HEAD, len).unwrap();
        assert_eq!((w.start, w.next_read), (10, MIN_READ));
    }

    #[test]
    fn a_file_source_reads_any_range_and_refuses_one_beyond_the_end() {
        let bytes: Vec<u8> = (0..3 * MAX_READ).map(|i| (i % 251) as u8).collect();
        let (f, _map) = file_with(&bytes);
        let source = Source::File(FileSource::new(f.as_file(), bytes.len()));
        for range in [0..1, 5..MIN_READ + 9, 100..100, MAX_READ - 3..2 * MAX_READ + 5, 3 * MAX_READ - 2..3 * MAX_READ] {
            let mut out = vec![7];
            source.read_into(range.clone(), &mut out).unwrap();
            assert_eq!(&out[1..], &bytes[range]);
        }
        assert!(source.read_into(3 * MAX_READ - 1..3 * MAX_READ + 1, &mut Vec::new()).is_err());
    }
}
