//! Layer 1, what every other layer stands on: the system calls (the one platform-specific module, atomic
//! writes, byte-range copies), panics and stop requests, and how model-controlled text is shown.

pub mod atomic;
pub mod copy;
pub mod escape;
pub mod interrupt;
pub mod panics;
pub mod platform;
pub mod stdout;

/// Lets go of `value` without freeing it, for what a process that is about to exit holds: freeing a decoded
/// model of 100,000 nodes returns 700,000 blocks one by one (~30 M instructions, 4 ms) for the exit to throw away
/// anyway. The reasoning of clang's `-disable-free`; only for the command line, whose process ends with the work.
pub fn exit_without_freeing<T>(value: T) {
    std::mem::forget(value);
}

/// Whether the process ends with the work at hand ([`end_with_this_work`]).
static ENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says that the process ends once the work at hand is done, so that what holds tables as large as the model may
/// let go of them without freeing them ([`exit_without_freeing`]), as the analysis's outermost scope does. Only the
/// command line says so, for its only model: a library caller's process (Python's) goes on, and frees everything.
pub fn end_with_this_work() {
    ENDING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`end_with_this_work`] was said.
pub fn ending() -> bool {
    ENDING.load(std::sync::atomic::Ordering::Relaxed)
}
