//! Stopping a long analysis from outside: a caller that runs the work on a thread of its own ([`watch`]) raises a
//! flag (the Python extension does when the user presses Ctrl-C), and the walk, which reads it before each node
//! ([`request`]), stops there. What it returns is then incomplete: the caller that raised the flag discards it
//! (and writes nothing). The command line needs none of this: Ctrl-C ends the process, and its writes are atomic.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `work` on this thread with `flag` as its stop request.
pub fn watch<T>(flag: Arc<AtomicBool>, work: impl FnOnce() -> T) -> T {
    let outer = FLAG.with(|f| f.replace(Some(flag)));
    struct Restore(Option<Arc<AtomicBool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FLAG.with(|f| *f.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(outer);
    work()
}

/// Whether the work on this thread was asked to stop.
pub fn requested() -> bool {
    FLAG.with(|f| f.borrow().as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed)))
}

/// The stop request of the work on this thread, read once: a loop asks it at each step without a thread-local
/// lookup (it does not change while the work runs).
pub fn request() -> StopRequest {
    StopRequest(FLAG.with(|f| f.borrow().clone()))
}

/// The stop request of one run of work ([`request`]); work nobody watches (the command line's) has none.
pub struct StopRequest(Option<Arc<AtomicBool>>);

impl StopRequest {
    /// Whether the work should stop before its next step. Watched work also takes its test pause here
    /// ([`test_pause`]); work nobody watches asks nothing.
    #[inline]
    pub fn stop_now(&self) -> bool {
        let Some(flag) = &self.0 else { return false };
        if flag.load(Ordering::Relaxed) {
            return true;
        }
        test_pause();
        false
    }

    /// Whether anything watches the work.
    pub fn is_watched(&self) -> bool {
        self.0.is_some()
    }
}

/// Makes every node of watched work take `ONNX_BCAST_TEST_SLOW_MS` milliseconds more: the tests' way to have a call
/// that lasts while they press Ctrl-C, whatever the machine's speed. Work nobody watches is never slowed. Costs one
/// environment lookup per run.
pub fn test_pause() {
    static PAUSE: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    let pause = PAUSE.get_or_init(|| {
        let ms = std::env::var("ONNX_BCAST_TEST_SLOW_MS").ok()?.parse().ok()?;
        Some(std::time::Duration::from_millis(ms))
    });
    if let Some(pause) = pause.filter(|_| FLAG.with(|f| f.borrow().is_some())) {
        std::thread::sleep(pause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_request_is_seen_only_by_the_work_it_watches() {
        assert!(!requested());
        assert!(!request().is_watched(), "work nobody watches has no stop request to read");
        let flag = Arc::new(AtomicBool::new(false));
        watch(flag.clone(), || {
            assert!(!requested());
            let read_once = request();
            assert!(read_once.is_watched(), "watched work has its stop request");
            assert!(!read_once.stop_now());
            flag.store(true, Ordering::Relaxed);
            assert!(requested());
            assert!(read_once.stop_now(), "the request read before the stop sees the stop");
        });
        assert!(!requested());
        assert!(!request().is_watched());
    }
}
