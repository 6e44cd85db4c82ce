//! Layer 1, what every other layer stands on: the system calls (the one platform-specific module, atomic
//! writes, byte-range copies), panics and stop requests, and how model-controlled text is shown.

pub mod atomic;
pub mod copy;
pub mod escape;
pub mod interrupt;
pub mod panics;
pub mod platform;
pub mod stdout;

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process is one run of the command line, which exits once its command is done
/// ([`this_process_is_one_command`]).
static ONE_COMMAND: AtomicBool = AtomicBool::new(false);

/// Said by the `onnx-bcast` binary before it runs its command: the process exits once that command is done. A host
/// that runs the command line in its own process (the Python wheel's `run_cli`) never says it, and its process goes
/// on after the command: everything the command held must then be freed.
pub fn this_process_is_one_command() {
    ONE_COMMAND.store(true, Ordering::Relaxed);
}

/// Lets go of `value` without freeing it when the process is about to exit ([`this_process_is_one_command`]):
/// freeing a decoded model of 100,000 nodes returns 700,000 blocks one by one (~30 M instructions, 4 ms) for the
/// exit to throw away anyway. The reasoning of clang's `-disable-free`. In any other process (a Python host running
/// the command line), `value` is dropped as usual.
pub fn exit_without_freeing<T>(value: T) {
    match ONE_COMMAND.load(Ordering::Relaxed) {
        true => std::mem::forget(value),
        false => drop(value),
    }
}

/// Whether the work at hand is the last of a process that exits after it ([`end_with_this_work`]).
static ENDING: AtomicBool = AtomicBool::new(false);

/// Says that the process ends once the work at hand is done, so that what holds tables as large as the model may
/// let go of them without freeing them ([`exit_without_freeing`]), as the analysis's scope of a top-level graph does. Only the
/// command line says so, for its only model, and it counts only in a process that is one run of the command
/// ([`this_process_is_one_command`]): a library caller's process (Python's) goes on, and frees everything.
pub fn end_with_this_work() {
    ENDING.store(true, Ordering::Relaxed);
}

/// Whether [`end_with_this_work`] was said in a process that is one run of the command line.
pub fn ending() -> bool {
    ENDING.load(Ordering::Relaxed) && ONE_COMMAND.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    /// Counts its drops.
    struct Counted<'a>(&'a Cell<usize>);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    // No test says `this_process_is_one_command`: the test process is a host that goes on, as Python's is.
    #[test]
    fn a_host_process_frees_what_the_command_line_would_let_go_of() {
        let drops = Cell::new(0);
        super::exit_without_freeing(Counted(&drops));
        assert_eq!(drops.get(), 1);
        super::end_with_this_work();
        assert!(!super::ending(), "a process that goes on after the command must free its scopes");
    }
}
