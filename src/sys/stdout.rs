//! Standard output without its line buffer, for output that is buffered already or written in large pieces.
//!
//! Rust's `Stdout` is line-buffered: every byte written through it is searched for the last newline (`memrchr`),
//! even a write of megabytes that a `BufWriter` in front already gathered. `check --format json` of 100,000 nodes
//! writes 36 MB: past the search it runs 932.1 M instructions instead of 951.7 M. A model written to stdout
//! (`expand M -`) was searched whole. [`Raw`] holds the `Stdout` lock, so that nothing else writes in between, and writes to the
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

impl Write for Raw<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        crate::sys::platform::write_stdout(&mut self.lock, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Nothing is held here; elsewhere than on Unix the lock holds what was written.
        self.lock.flush()
    }
}
