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
