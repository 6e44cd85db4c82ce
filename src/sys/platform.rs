//! The one place for what differs between operating systems: every other module calls these functions, so that the
//! crate builds wherever Rust's standard library does (`tests/it/layers.rs` fails on a `libc::` or `std::os::` path
//! anywhere else).
//!
//! - Linux: an output is written into an unnamed `O_TMPFILE` and linked into place (`linkat`), so that a killed run
//!   leaves nothing behind (see `atomic`); tensor data may be copied by the kernel (`copy_file_range`, see `copy`).
//! - Unix: reads at an offset (`pread`), the file mode of a new file, FIFOs, sockets and devices told apart, data
//!   files opened without blocking (`O_NONBLOCK`), and a file known by its device and inode.
//! - Elsewhere, the portable path of each: a named temporary file renamed into place, copies through a memory map,
//!   reads at an offset through a memory map, the permissions the system gives, a plain open after the check that
//!   the path is a regular file, and a file known by its canonical path.
//!
//! The cargo feature `portable-write` turns the Linux-only write path off, so that a Linux build writes exactly as
//! other systems do; `cargo test --features portable-write` runs the whole suite that way. The portable versions of
//! the Unix calls ([`portable`]) are compiled on every system and tested here against the native ones.

use std::fs::{File, FileType};
use std::io;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::path::Path;

/// Whether outputs are written through an unnamed `O_TMPFILE` (Linux, unless the feature `portable-write` is on).
pub const UNNAMED_TEMPORARY_FILES: bool = cfg!(all(target_os = "linux", not(feature = "portable-write")));

/// An unnamed file in `dir`, readable and writable by its owner only, if the system and the file system make one
/// (Linux's `O_TMPFILE`); `None` elsewhere, and then the caller writes a named temporary file.
pub fn unnamed_file_in(dir: &Path) -> Option<File> {
    #[cfg(all(target_os = "linux", not(feature = "portable-write")))]
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir).ok()
    }
    #[cfg(not(all(target_os = "linux", not(feature = "portable-write"))))]
    {
        let _ = dir;
        None
    }
}

/// Gives a file made by [`unnamed_file_in`] the name `path`; fails if `path` exists. Elsewhere there is no such
/// file, and this is never called.
pub fn link_unnamed(file: &File, path: &Path) -> io::Result<()> {
    #[cfg(all(target_os = "linux", not(feature = "portable-write")))]
    {
        linux::link(file, path)
    }
    #[cfg(not(all(target_os = "linux", not(feature = "portable-write"))))]
    {
        let _ = (file, path);
        Err(io::Error::new(io::ErrorKind::Unsupported, "no unnamed temporary files on this system"))
    }
}

/// Copies up to `want` bytes of `file` from `*offset` to `out`'s position in the kernel, advancing `*offset`:
/// `Some` with the count copied (0 at the end of the file), or `None` where the kernel cannot (another system, two
/// file systems, an old kernel): the caller then copies them itself.
pub fn copy_file_range(file: &File, offset: &mut u64, out: &File, want: usize) -> Option<io::Result<usize>> {
    #[cfg(all(target_os = "linux", not(feature = "portable-write")))]
    {
        linux::copy_file_range(file, offset, out, want)
    }
    #[cfg(not(all(target_os = "linux", not(feature = "portable-write"))))]
    {
        let _ = (file, offset, out, want);
        None
    }
}

/// Asks the file system to allocate `len` bytes for `file` from its start, ahead of the writes that fill them,
/// without changing its size (Linux's `fallocate` with `FALLOC_FL_KEEP_SIZE`). Best effort: nothing elsewhere, and
/// nothing where the file system cannot (the writes then allocate as they go, and report a full disk themselves).
pub fn reserve(file: &File, len: u64) {
    #[cfg(all(target_os = "linux", not(feature = "portable-write")))]
    linux::reserve(file, len);
    #[cfg(not(all(target_os = "linux", not(feature = "portable-write"))))]
    let _ = (file, len);
}

/// Maps the pages of `map[range]` in one call ahead of reading them (Linux's `MADV_POPULATE_READ`, 5.14 and later)
/// where reading them would fault them in a few at a time. Best effort: on an older kernel or another system they
/// are faulted in as they are read.
pub fn populate(map: &memmap2::Mmap, range: Range<usize>) {
    #[cfg(target_os = "linux")]
    let _ = map.advise_range(memmap2::Advice::PopulateRead, range.start, range.len());
    #[cfg(not(target_os = "linux"))]
    let _ = (map, range);
}

/// Takes the pages of `map[range]` out of the process (`MADV_DONTNEED`) once they have been read, so that they no
/// longer count as resident. The map stays valid: a later read would map the same bytes again from the page cache.
/// Best effort; nothing where the call does not exist.
pub fn unmap_pages(map: &memmap2::Mmap, range: Range<usize>) {
    // SAFETY: `map` is a read-only shared map of a file. MADV_DONTNEED drops its page-table entries only: the file's
    // pages stay in the page cache, and any later read of the range faults the same bytes back in.
    #[cfg(unix)]
    unsafe {
        let _ = map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, range.start, range.len());
    }
    #[cfg(not(unix))]
    let _ = (map, range);
}

/// Reads exactly `buf.len()` bytes of `file` at `offset`, without moving a file position (so that threads may share
/// the file).
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        portable::read_exact_at(file, buf, offset)
    }
}

/// [`read_exact_at`] into a buffer that need not be initialized: once it returns `Ok`, all of `buf` is written.
/// Why: a read buffer of up to 1 MiB zeroed before every read was a tenth of decoding a real model's instructions
/// (`vec![0; n]` is a `memset` of all of it), and the read then wrote over every byte anyway.
pub fn read_exact_at_uninit(file: &File, buf: &mut [MaybeUninit<u8>], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // As std's `read_exact_at`: interrupted reads are retried, and the end of the file before the buffer's is
        // the same error.
        let (mut buf, mut offset) = (buf, offset);
        while !buf.is_empty() {
            let want = buf.len().min(isize::MAX as usize);
            let at = libc::off_t::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            // SAFETY: the descriptor is open, and `buf` is writable for `want` bytes, which outlive the call.
            let n = unsafe { libc::pread(file.as_raw_fd(), buf.as_mut_ptr().cast(), want, at) };
            match n {
                0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "failed to fill whole buffer")),
                n if n < 0 => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
                n => {
                    buf = &mut buf[n as usize..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        // The portable read goes through a slice, so the buffer is initialized first.
        buf.fill(MaybeUninit::new(0));
        // SAFETY: every byte was just written.
        let buf = unsafe { &mut *(buf as *mut [MaybeUninit<u8>] as *mut [u8]) };
        portable::read_exact_at(file, buf, offset)
    }
}

/// Reads up to `buf.len()` bytes of `file` at `offset` (fewer at its end); returns how many.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        portable::read_at(file, buf, offset)
    }
}

/// Opens a file for reading without ever blocking: on Unix with `O_NONBLOCK`, so that the open of a FIFO that
/// replaced a checked file returns at once. Elsewhere a plain open (there are no FIFOs in the file system).
pub fn open_without_blocking(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
    }
    #[cfg(not(unix))]
    {
        File::open(path)
    }
}

/// What a path that is not a regular file is, in words: `a folder`, `a FIFO`, `a socket`, `a device`.
pub fn kind_in_words(kind: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        match () {
            _ if kind.is_dir() => "a folder",
            _ if kind.is_fifo() => "a FIFO",
            _ if kind.is_socket() => "a socket",
            _ if kind.is_char_device() || kind.is_block_device() => "a device",
            _ => "not a file",
        }
    }
    #[cfg(not(unix))]
    {
        portable::kind_in_words(kind)
    }
}

/// Whether two paths name one existing file: the same device and inode on Unix, the same canonical path elsewhere.
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        portable::same_file(a, b)
    }
}

/// What the system said about an I/O error, in words, without its number: `No such file or directory`, not
/// `No such file or directory (os error 2)` (the number differs between systems and says nothing more).
pub fn io_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match (text.rfind(" (os error "), text.ends_with(')')) {
        (Some(at), true) if text[at + 11..text.len() - 1].bytes().all(|b| b.is_ascii_digit() || b == b'-') => {
            text[..at].to_string()
        }
        _ => text,
    }
}

/// Whether a terminal shows UTF-8, from the locale variables `LC_ALL`, `LC_CTYPE` and `LANG` (the first set one
/// decides; none set is the C locale, ASCII). Elsewhere than Unix, the console takes Unicode from Rust's standard
/// library whatever the locale: always.
pub fn terminal_is_utf8(locale: [Option<&str>; 3]) -> bool {
    if cfg!(not(unix)) {
        return true;
    }
    let first = locale.into_iter().flatten().find(|v| !v.is_empty());
    first.is_some_and(|v| {
        let v = v.to_ascii_lowercase();
        v.contains("utf-8") || v.contains("utf8")
    })
}

/// The permissions of a new output file: `rw-r--r--` on Unix (a temporary file is made owner-only); elsewhere the
/// system's default (`None`).
pub fn new_file_permissions() -> Option<std::fs::Permissions> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Some(std::fs::Permissions::from_mode(0o644))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Writes `buf` to standard output, whose lock `lock` is, past the lock's line buffer (see `sys::stdout`): to the
/// descriptor itself on Unix, where a closed one (`EBADF`) swallows what is written as Rust's `Stdout` does;
/// through the lock elsewhere.
pub fn write_stdout(lock: &mut io::StdoutLock<'_>, buf: &[u8]) -> io::Result<usize> {
    #[cfg(unix)]
    {
        use std::io::Write;
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: the descriptor is standard output's, open for the process's life (a Rust program's start opens
        // /dev/null on a closed one; a host process's closed one answers EBADF, below); the `File` is never
        // dropped, so it never closes it.
        let mut file = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(lock.as_raw_fd()) });
        closed_is_a_sink(file.write(buf), buf.len())
    }
    #[cfg(not(unix))]
    {
        use std::io::Write;
        lock.write(buf)
    }
}

/// What a write of `len` bytes to standard output comes to: all of them when the descriptor is closed (`EBADF`),
/// as for Rust's `Stdout`; otherwise what the write says.
#[cfg(unix)]
fn closed_is_a_sink(written: io::Result<usize>, len: usize) -> io::Result<usize> {
    match written {
        Err(e) if e.raw_os_error() == Some(libc::EBADF) => Ok(len),
        written => written,
    }
}

/// Asks the kernel to back this process's memory with no more transparent huge pages (Linux; nothing elsewhere).
/// The binary does so for runs on small models, where clearing a whole 2 MiB page for the first bytes of a heap
/// region costs more than the run's own work (see `main.rs`).
pub fn no_more_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and changes only how this process's pages are backed.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Whether the main thread's stack may grow to `size` bytes, raising its soft limit if need be; for the process's
/// main thread (`cli::run::main_on_check_stack`). Linux grows the main thread's stack on demand up to
/// `RLIMIT_STACK` as it is at each fault, and keeps at least 128 MiB below it free of other mappings. Past the
/// raised limit the process dies of SIGSEGV, as past a thread's guard page, only without Rust's "has overflowed its
/// stack" line (which knows the limit at start only). False elsewhere, where a new thread gets the stack instead.
pub fn main_stack_may_grow_to(size: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit and setrlimit read and write the one struct they are given, which outlives the calls.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_STACK, &mut limit) != 0 {
                return false;
            }
            let enough = |l: libc::rlim_t| l == libc::RLIM_INFINITY || l >= size as libc::rlim_t;
            if enough(limit.rlim_cur) {
                return true;
            }
            if !enough(limit.rlim_max) {
                return false;
            }
            limit.rlim_cur = size as libc::rlim_t;
            libc::setrlimit(libc::RLIMIT_STACK, &limit) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = size;
        false
    }
}

/// The Linux-only write path.
#[cfg(all(target_os = "linux", not(feature = "portable-write")))]
mod linux {
    use std::ffi::CString;
    use std::fs::File;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    use std::path::Path;

    /// `linkat` of the unnamed file through `/proc/self/fd`, or with `AT_EMPTY_PATH` where `/proc` is not mounted.
    pub(super) fn link(file: &File, path: &Path) -> io::Result<()> {
        let target = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
        let proc_path = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL in the path");
        // SAFETY: both paths are NUL-terminated strings that outlive the calls; the descriptor is open.
        let linked = unsafe {
            libc::linkat(libc::AT_FDCWD, proc_path.as_ptr(), libc::AT_FDCWD, target.as_ptr(), libc::AT_SYMLINK_FOLLOW)
        };
        if linked == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::NotFound || Path::new("/proc/self/fd").exists() {
            return Err(error);
        }
        // No /proc: AT_EMPTY_PATH links the descriptor itself (it needs CAP_DAC_READ_SEARCH on older kernels).
        let empty = CString::new("").expect("no NUL");
        // SAFETY: as above.
        let linked = unsafe {
            libc::linkat(file.as_raw_fd(), empty.as_ptr(), libc::AT_FDCWD, target.as_ptr(), libc::AT_EMPTY_PATH)
        };
        if linked == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    pub(super) fn reserve(file: &File, len: u64) {
        let Ok(len) = libc::off_t::try_from(len) else { return };
        // SAFETY: the descriptor is open; the call takes plain integers. Its failure (EOPNOTSUPP, ENOSPC) is left
        // to the writes that follow.
        unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) };
    }

    pub(super) fn copy_file_range(file: &File, offset: &mut u64, out: &File, want: usize) -> Option<io::Result<usize>> {
        let mut at = libc::loff_t::try_from(*offset).ok()?;
        // SAFETY: both descriptors are open; `at` outlives the call; a null output offset means the output's file
        // position, which the call advances.
        let n =
            unsafe { libc::copy_file_range(file.as_raw_fd(), &mut at, out.as_raw_fd(), std::ptr::null_mut(), want, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EXDEV | libc::ENOSYS | libc::EINVAL | libc::EOPNOTSUPP) => None,
                _ => Some(Err(e)),
            };
        }
        *offset = at as u64;
        Some(Ok(n as usize))
    }
}

/// The portable versions of the Unix calls: what other systems run, compiled and tested everywhere.
#[cfg_attr(unix, allow(dead_code))]
pub mod portable {
    use std::fs::{File, FileType};
    use std::io;
    use std::path::Path;

    /// [`super::read_exact_at`] through a memory map of the range, which shares no file position.
    pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match read_at(file, buf, offset)? {
            n if n == buf.len() => Ok(()),
            _ => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "failed to fill whole buffer")),
        }
    }

    /// [`super::read_at`] through a memory map of the range.
    pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let len = file.metadata()?.len();
        let n = usize::try_from(len.saturating_sub(offset)).unwrap_or(usize::MAX).min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: a read-only map, dropped before returning; the file being truncated meanwhile by another process
        // is the limit every memory-mapped reader has (see `Model::open`).
        let map = unsafe { memmap2::MmapOptions::new().offset(offset).len(n).map(file)? };
        buf[..n].copy_from_slice(&map);
        Ok(n)
    }

    /// [`super::kind_in_words`] where only folders and files are told apart.
    pub fn kind_in_words(kind: FileType) -> &'static str {
        if kind.is_dir() {
            "a folder"
        } else {
            "not a file"
        }
    }

    /// [`super::same_file`] by canonical paths.
    pub fn same_file(a: &Path, b: &Path) -> bool {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_closed_standard_output_swallows_what_is_written_and_other_failures_stay_failures() {
        let closed = closed_is_a_sink(Err(io::Error::from_raw_os_error(libc::EBADF)), 7);
        assert_eq!(closed.unwrap(), 7);
        let gone = closed_is_a_sink(Err(io::Error::from_raw_os_error(libc::EPIPE)), 7);
        assert_eq!(gone.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(closed_is_a_sink(Ok(3), 7).unwrap(), 3, "a short write stays short");
    }

    /// Where the main stack may grow to a size, the soft limit says so afterwards (raised if it was lower).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_stack_that_may_grow_has_its_limit_raised_that_far() {
        let size = 16 << 20;
        if main_stack_may_grow_to(size) {
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) }, 0);
            assert!(limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur >= size as libc::rlim_t);
        }
    }

    #[test]
    fn portable_reads_at_an_offset_give_what_pread_gives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        for (offset, len) in [(0, 10), (4095, 3), (70_001, 29_999), (99_990, 10)] {
            let mut native = vec![0u8; len];
            let mut portable = vec![0u8; len];
            read_exact_at(&file, &mut native, offset).unwrap();
            portable::read_exact_at(&file, &mut portable, offset).unwrap();
            assert_eq!(native, portable, "at {offset}");
            let mut uninit = Vec::with_capacity(len);
            read_exact_at_uninit(&file, &mut uninit.spare_capacity_mut()[..len], offset).unwrap();
            // SAFETY: the read wrote all `len` bytes.
            unsafe { uninit.set_len(len) };
            assert_eq!(native, uninit, "at {offset}, into a buffer not yet written");
            assert_eq!(&portable[..], &bytes[offset as usize..offset as usize + len]);
        }
        // Past the end: a short read, then an error for an exact one; at the end, nothing.
        let mut buf = [0u8; 20];
        assert_eq!(portable::read_at(&file, &mut buf, 99_990).unwrap(), 10);
        assert_eq!(read_at(&file, &mut buf, 99_990).unwrap(), 10);
        assert_eq!(portable::read_at(&file, &mut buf, 100_000).unwrap(), 0);
        let short = portable::read_exact_at(&file, &mut buf, 99_990).unwrap_err();
        assert_eq!(short.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(read_exact_at(&file, &mut buf, 99_990).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        let mut uninit = [MaybeUninit::uninit(); 20];
        let short = read_exact_at_uninit(&file, &mut uninit, 99_990).unwrap_err();
        assert_eq!(
            (short.kind(), short.to_string()),
            (io::ErrorKind::UnexpectedEof, "failed to fill whole buffer".into())
        );
    }

    #[test]
    fn portable_file_identity_follows_links_as_device_and_inode_do() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.onnx");
        std::fs::write(&a, b"x").unwrap();
        let b = dir.path().join("sub/../a.onnx");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let other = dir.path().join("b.onnx");
        std::fs::write(&other, b"x").unwrap();
        for same in [same_file, portable::same_file] {
            assert!(same(&a, &b));
            assert!(!same(&a, &other));
            assert!(!same(&a, &dir.path().join("missing.onnx")));
        }
    }

    #[test]
    fn io_errors_are_told_in_words_without_the_systems_number() {
        let missing = File::open("/no/such/onnx-bcast/file").unwrap_err();
        assert!(missing.to_string().contains("(os error"), "{missing}");
        assert_eq!(io_reason(&missing), "No such file or directory");
        assert_eq!(io_reason(&io::Error::other("stop (os error x)")), "stop (os error x)");
    }

    #[test]
    fn a_folder_is_named_a_folder_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let kind = std::fs::metadata(dir.path()).unwrap().file_type();
        assert_eq!(kind_in_words(kind), "a folder");
        assert_eq!(portable::kind_in_words(kind), "a folder");
    }
}
