//! Copying a byte range of the input file into the output file: tensor data, most of a large model's bytes.
//!
//! Three ways, measured by `bench/write_path.sh` (paired runs against `cp`, see bench/README.md):
//! `write` from a memory map of the input a window at a time ([`Strategy::Map`]); `pread` into a 1 MiB buffer and
//! `write` ([`Strategy::Pread`]); and the kernel's `copy_file_range` ([`Strategy::Kernel`]), which copies page cache
//! to page cache without the data entering the process, but which Linux does with a slower path when the input and
//! output offsets differ modulo the page size, as they do after an edit (ext4: every 64 KiB the kernel moves at a
//! time starts and ends in the middle of an output page, which it must prepare). `ONNX_BCAST_COPY=map|pread|kernel`
//! picks one (for the benchmark); the default is [`DEFAULT`].
//!
//! `pread` is the default because its cost does not depend on how the input sits in the page cache. A map costs
//! page faults and page-table entries set up and torn down per cached folio: cheap when the file is cached in 2 MiB
//! folios (as after it was written), a third of the copy's system time when it is cached in small ones. Measured on
//! the 1 GB model into a fresh OUT (with the output's blocks reserved first, see [`prepare`]), paired rounds against
//! `cp` at a load average of 5-6: input cached in large folios, system time map 0.21-0.23 s, pread 0.23-0.33 s, `cp`
//! 0.25-0.27 s; in the state where maps were slow, map 0.41-0.47 s, pread 0.29-0.33 s, `cp` 0.28-0.31 s.

use std::fs::File;
use std::io::{self, Write};
use std::ops::Range;

use crate::sys::platform;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Map,
    Pread,
    Kernel,
}

pub const DEFAULT: Strategy = Strategy::Pread;

fn strategy() -> Strategy {
    match std::env::var("ONNX_BCAST_COPY").as_deref() {
        Ok("map") => Strategy::Map,
        Ok("pread") => Strategy::Pread,
        Ok("kernel") => Strategy::Kernel,
        _ => DEFAULT,
    }
}

/// Prepares `out` for `len` bytes written from its start: a large output has its blocks allocated at once
/// ([`platform::reserve`]). On ext4, a write into blocks that are not yet allocated reserves each 4 KiB block as it
/// goes (delayed allocation: an extent-status entry, a quota charge, a reservation per block); allocated first, the
/// blocks are a few extents. Copying 1 GB at a misaligned offset took 0.27-0.29 s of system time without, 0.20-0.23 s
/// with (`cp`, which allocates as it goes: 0.25-0.27 s), paired runs. The bytes written are the same.
pub fn prepare(out: &File, len: u64) {
    const LARGE: u64 = 16 << 20;
    if len >= LARGE {
        platform::reserve(out, len);
    }
}

/// Writes `file[range]` to `out` at its current position.
pub fn copy_range(file: &File, range: Range<usize>, out: &mut File) -> io::Result<()> {
    // The input must still be as long as it was (a map past the end would fault; a short read would be silent).
    if (file.metadata()?.len() as usize) < range.end {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the input changed while being read"));
    }
    match strategy() {
        Strategy::Map => through_map(file, range, out),
        Strategy::Pread => through_buffer(file, range, out),
        Strategy::Kernel => in_kernel(file, range, out),
    }
}

/// `write` from a map of one 16 MiB window at a time, 1 MiB per write (one write of a whole window ran at half the
/// speed). Windows start on 2 MiB boundaries of the file, so that the kernel can map each cached folio at once, and
/// keep the mapped pages, which count as resident, to a few MiB.
fn through_map(file: &File, range: Range<usize>, out: &mut File) -> io::Result<()> {
    const WINDOW: usize = 16 << 20;
    let mut start = range.start - range.start % WINDOW;
    while start < range.end {
        let end = (start + WINDOW).min(range.end);
        // SAFETY: a read-only map of the input, dropped before the next; the input being truncated meanwhile by
        // another process is the limit every memory-mapped reader has (see `Model::open`).
        let map = unsafe { memmap2::MmapOptions::new().offset(start as u64).len(end - start).map(file)? };
        for piece in map[range.start.max(start) - start..].chunks(1 << 20) {
            out.write_all(piece)?;
        }
        start = end;
    }
    Ok(())
}

/// `pread` into a 1 MiB buffer and `write`.
fn through_buffer(file: &File, range: Range<usize>, out: &mut File) -> io::Result<()> {
    let mut buffer = vec![0u8; (1 << 20).min(range.len())];
    let mut at = range.start;
    while at < range.end {
        let n = buffer.len().min(range.end - at);
        platform::read_exact_at(file, &mut buffer[..n], at as u64)?;
        out.write_all(&buffer[..n])?;
        at += n;
    }
    Ok(())
}

/// `copy_file_range` from the input's offset to the output's position; a map copy where the kernel refuses (or
/// where there is no such call: see `platform`).
fn in_kernel(file: &File, range: Range<usize>, out: &mut File) -> io::Result<()> {
    let mut offset = range.start as u64;
    let end = range.end as u64;
    while offset < end {
        let want = ((end - offset) as usize).min(1 << 30);
        match platform::copy_file_range(file, &mut offset, out, want) {
            None => return through_map(file, offset as usize..range.end, out),
            Some(Err(e)) => return Err(e),
            Some(Ok(0)) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the input ended early")),
            Some(Ok(_)) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prepared_output_keeps_its_size_and_the_bytes_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut out = File::create(&path).unwrap();
        prepare(&out, 32 << 20);
        assert_eq!(out.metadata().unwrap().len(), 0, "reserving space is not writing");
        out.write_all(b"model").unwrap();
        drop(out);
        assert_eq!(std::fs::read(&path).unwrap(), b"model");
    }

    #[test]
    fn every_strategy_copies_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..(3 << 20) + 77).map(|i: u32| (i % 253) as u8).collect();
        std::fs::write(dir.path().join("in"), &bytes).unwrap();
        let input = File::open(dir.path().join("in")).unwrap();
        for (k, copy) in [through_map, through_buffer, in_kernel].into_iter().enumerate() {
            let path = dir.path().join(format!("out{k}"));
            let mut out = File::create(&path).unwrap();
            out.write_all(b"head").unwrap();
            copy(&input, 5..bytes.len() - 3, &mut out).unwrap();
            out.write_all(b"tail").unwrap();
            drop(out);
            let want = [b"head".as_slice(), &bytes[5..bytes.len() - 3], b"tail"].concat();
            assert!(std::fs::read(&path).unwrap() == want, "strategy {k}");
        }
    }
}
