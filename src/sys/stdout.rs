//! Standard output without its line buffer, for output that is buffered already or written in large pieces.
//!
//! Rust's `Stdout` is line-buffered: every byte written through it is searched for the last newline (`memrchr`),
//! even a write of megabytes that a `BufWriter` in front already gathered. `check --format json` of 100,000 nodes
//! writes 36 MB and spent 40 M instructions (4% of the run) in that search; a model written to stdout (`expand M -`)
//! is searched whole. [`Raw`] holds the `Stdout` lock, so that nothing else writes in between, and writes to the
//! descriptor itself.
//!
//! It keeps what `Stdout` does at the edges: a closed standard output (`EBADF`: the process was started with fd 1
//! closed, `cmd >&-`) swallows what is written, as Rust's `Stdout` does; a reader that went away (`EPIPE`) is an
//! error, which the commands end quietly on. Elsewhere than on Unix it is the `Stdout` lock itself.

use std::io::{self, Write};

/// Standard output, locked, written to without the line buffer (see the module).
pub struct Raw<'a> {
    lock: io::StdoutLock<'a>,
}

impl<'a> Raw<'a> {
    /// `lock`'s output, what it holds already written out first.
    pub fn new(mut lock: io::StdoutLock<'a>) -> Raw<'a> {
        // Anything the line buffer holds goes out before what is written past it. (A failure is found again by
        // the first write.)
        let _ = lock.flush();
        Raw { lock }
    }
}

/// Standard output, locked, without the line buffer: `Raw::new(io::stdout().lock())`.
pub fn locked() -> Raw<'static> {
    Raw::new(io::stdout().lock())
}

#[cfg(unix)]
impl Write for Raw<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: the descriptor is standard output's, open for the process's life (a Rust program's start opens
        // /dev/null on a closed one; a host process's closed one answers EBADF, below); the `File` is never dropped,
        // so it never closes it.
        let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(self.lock.as_raw_fd()) });
        closed_is_a_sink(file.write(buf), buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
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

#[cfg(not(unix))]
impl Write for Raw<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.lock.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.lock.flush()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_closed_standard_output_swallows_what_is_written_and_other_failures_stay_failures() {
        let closed = closed_is_a_sink(Err(io::Error::from_raw_os_error(libc::EBADF)), 7);
        assert_eq!(closed.unwrap(), 7);
        let gone = closed_is_a_sink(Err(io::Error::from_raw_os_error(libc::EPIPE)), 7);
        assert_eq!(gone.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(closed_is_a_sink(Ok(3), 7).unwrap(), 3, "a short write stays short");
    }
}
