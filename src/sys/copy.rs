//! Copying a byte range of the input file into the output file: tensor data, most of a large model's bytes.
//!
//! Three ways, measured by `bench/write_path.sh` (paired runs against `cp`, see bench/README.md):
//! `write` from a memory map of the input a window at a time ([`Strategy::Map`]); `pread` into a 1 MiB buffer and
//! `write` ([`Strategy::Pread`]); and the kernel's `copy_file_range` ([`Strategy::Kernel`]), which copies page cache
//! to page cache without the data entering the process, but which Linux does with a slower path when the input and
//! output offsets differ modulo the page size, as they do after an edit (ext4: every 64 KiB the kernel moves at a
//! time starts and ends in the middle of an output page, which it must prepare). `ONNX_BCAST_COPY=map|pread|kernel`
//! picks one (for the benchmark); the default is [`default_for`] the range's length.
//!
//! A map is the default for long ranges (see [`default_for`]), each 1 MiB piece mapped in one call
//! (`MADV_POPULATE_READ`) before its write and unmapped after it: the data is copied once, page cache to page cache,
//! as `cp`'s `copy_file_range` copies it, without the kernel's misaligned path. Faulted in a page at a time instead,
//! a map cost page faults and page-table entries per cached folio: cheap when the file is cached in 2 MiB folios (as
//! after it was written or read with `read`), a third of the copy's system time when it is cached in 4 KiB ones;
//! `pread` was the default then, because its cost does not depend on the folios. `expand` of the 1 GB model against
//! `cp`, paired rounds (`bench/write_path.sh`, bench/README.md), wall / system time: input in 4 KiB folios, this map
//! 0.97× / 0.95×, `pread` 1.20× / 1.24×, the map faulted in 1.52× / 1.49×; input as `cat` leaves it, this map
//! 0.92× / 0.88× (quiet machine), `pread` 1.19× / 1.15×.

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

/// The way a range of `len` bytes is copied unless `ONNX_BCAST_COPY` says otherwise: a map from one window's
/// length on, `pread` below it. A short range saves little by a map and costs a map of its own, whose pages join
/// the process's resident memory where the 1 MiB buffer reuses heap pages it already has: `expand` of the bench's
/// 100,000 nodes (a 2.8 MB range of small weights) peaked 0.8 MiB higher through a map.
pub fn default_for(len: usize) -> Strategy {
    if len >= WINDOW {
        Strategy::Map
    } else {
        Strategy::Pread
    }
}

/// The length of one map of the input ([`through_map`]).
const WINDOW: usize = 16 << 20;

fn strategy(len: usize) -> Strategy {
    match std::env::var("ONNX_BCAST_COPY").as_deref() {
        Ok("map") => Strategy::Map,
        Ok("pread") => Strategy::Pread,
        Ok("kernel") => Strategy::Kernel,
        _ => default_for(len),
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
    match strategy(range.len()) {
        Strategy::Map => through_map(file, range, out),
        Strategy::Pread => through_buffer(file, range, out),
        Strategy::Kernel => in_kernel(file, range, out),
    }
}

/// `write` from a map of one 16 MiB window at a time, 1 MiB per write (one write of a whole window ran at half the
/// speed). Windows start on 2 MiB boundaries of the file, so that the kernel can map each cached folio at once.
/// Each 1 MiB piece is mapped in one call before its write ([`platform::populate`]) rather than a fault at a time,
/// and unmapped after it ([`platform::unmap_pages`]), so that the mapped pages, which count as resident, stay at
/// about one piece: faulted in, the pieces of a file cached in 4 KiB folios cost a third of the copy's system time.
fn through_map(file: &File, range: Range<usize>, out: &mut File) -> io::Result<()> {
    const PIECE: usize = 1 << 20;
    let mut start = range.start - range.start % WINDOW;
    while start < range.end {
        let end = (start + WINDOW).min(range.end);
        // SAFETY: a read-only map of the input, dropped before the next; the input being truncated meanwhile by
        // another process is the limit every memory-mapped reader has (see `Model::open`).
        let map = unsafe { memmap2::MmapOptions::new().offset(start as u64).len(end - start).map(file)? };
        // Pieces end on 1 MiB boundaries of the window, so that each populate and unmap covers whole pages.
        let mut at = range.start.max(start) - start;
        while at < map.len() {
            let to = ((at / PIECE + 1) * PIECE).min(map.len());
            platform::populate(&map, at..to);
            out.write_all(&map[at..to])?;
            platform::unmap_pages(&map, at..to);
            at = to;
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

    #[test]
    fn a_map_copy_across_windows_and_pieces_copies_every_byte_once() {
        // From the middle of a page of the first 16 MiB window to the middle of a page of the second: pieces that
        // start and end off the pieces' 1 MiB boundaries, each mapped, written and unmapped in turn.
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..WINDOW as u32 + (3 << 20)).map(|i| (i % 251) as u8 ^ (i >> 20) as u8).collect();
        std::fs::write(dir.path().join("in"), &bytes).unwrap();
        let input = File::open(dir.path().join("in")).unwrap();
        let range = (1 << 20) + 4099..WINDOW + (2 << 20) + 13;
        let mut out = File::create(dir.path().join("out")).unwrap();
        through_map(&input, range.clone(), &mut out).unwrap();
        drop(out);
        assert!(std::fs::read(dir.path().join("out")).unwrap() == bytes[range]);
    }

    #[test]
    fn long_ranges_are_copied_through_a_map_and_short_ones_through_a_buffer() {
        assert_eq!(default_for(WINDOW), Strategy::Map);
        assert_eq!(default_for(1 << 30), Strategy::Map);
        assert_eq!(default_for(WINDOW - 1), Strategy::Pread);
    }
}
