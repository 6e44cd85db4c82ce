//! Layer 1, what every other layer stands on: the system calls (the one platform-specific module, atomic
//! writes, byte-range copies), panics and stop requests, and how model-controlled text is shown.

pub mod atomic;
pub mod copy;
pub mod escape;
pub mod interrupt;
pub mod panics;
pub mod platform;
