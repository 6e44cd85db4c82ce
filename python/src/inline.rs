//! Short work on the calling thread. Handing a call to the worker thread and waiting for it ([`without_gil`]) costs
//! more than the handover itself: on the PyTorch exports `check(ModelProto)` took 20-40 µs a call more through the
//! worker than on the calling thread (5-12%: the data crosses to the other core, and both threads are woken), where a
//! one-node model's whole call costs 6-8 µs. What the worker guarantees is kept:
//! - its stack: the work runs here only when this thread has [`STACK_LEFT`] of stack left, eight times what a
//!   model nested as deep as analysis goes needs (function_chain_64: under 512 KiB; 30 nested Ifs: under 256 KiB);
//! - Ctrl-C: the work runs here only for a small model, and a watchdog thread asks it to stop once it has run
//!   [`BUDGET`]; a call stopped so is run again on the worker, which lets Python handle signals while it waits.
//!   A Ctrl-C pressed meanwhile is raised at most [`BUDGET`] plus one node later than on the worker;
//! - the GIL is let go, and a panic becomes `InternalError`, as on the worker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::worker::{in_first_process, without_gil};
use crate::Failure;

/// How long work on the calling thread may run before it is stopped and run again on the worker: a model small
/// enough to run here ([`SMALL_BYTES`]) is checked in a few milliseconds.
const BUDGET: Duration = Duration::from_millis(20);

/// The largest model (its bytes, or its file's) run on the calling thread: about 20,000 nodes, 5 ms of checking.
/// Weights cost nothing to check, but a larger model is more likely to run past [`BUDGET`] and be checked twice.
pub(crate) const SMALL_BYTES: u64 = 1 << 20;

/// The stack a thread must have left to run the work itself.
const STACK_LEFT: usize = 4 << 20;

/// Runs `work` without the GIL: on this thread when `bytes` (the model's size) is at most [`SMALL_BYTES`] and this
/// thread has the stack for it, else, or when it runs past [`BUDGET`], on the worker ([`without_gil`]).
pub(crate) fn run<T: Send + 'static>(
    py: Python<'_>,
    shown: &str,
    bytes: u64,
    work: impl Fn() -> Result<T, Failure> + Send + Sync + 'static,
) -> PyResult<T> {
    if bytes <= SMALL_BYTES && in_first_process() && stack_left().is_some_and(|left| left >= STACK_LEFT) {
        let stop = Arc::new(AtomicBool::new(false));
        if arm(&stop) {
            let outcome =
                py.detach(|| onnx_bcast::sys::interrupt::watch(stop.clone(), || onnx_bcast::sys::panics::guard(&work)));
            if !disarm(&stop) {
                return match outcome {
                    Ok(done) => Ok(done?),
                    Err(panic) => Err(Failure::Internal(format!("{shown}: {panic}")).into()),
                };
            }
            // Stopped at its budget, so incomplete: a Ctrl-C pressed meanwhile is raised now, else the worker runs it.
            py.check_signals()?;
        }
    }
    without_gil(py, shown, work)
}

/// The calls running on their callers' threads, each with its stop request and when it is due to stop; whether the
/// watchdog runs, and whether it waits for a call with no deadline.
struct Watch {
    armed: Vec<(Arc<AtomicBool>, Instant)>,
    started: bool,
    parked: bool,
}

static WATCH: (Mutex<Watch>, Condvar) =
    (Mutex::new(Watch { armed: Vec::new(), started: false, parked: false }), Condvar::new());

/// Registers a call's stop request with the watchdog (started by the first call); false when it cannot start.
fn arm(stop: &Arc<AtomicBool>) -> bool {
    let mut watch = WATCH.0.lock().unwrap_or_else(|e| e.into_inner());
    if !watch.started {
        let started = std::thread::Builder::new().name("onnx-bcast-watch".into()).spawn(watchdog);
        if started.is_err() {
            return false;
        }
        watch.started = true;
    }
    watch.armed.push((stop.clone(), Instant::now() + BUDGET));
    // A watchdog waiting with a deadline sees the call when it wakes; only one waiting for calls is woken.
    if watch.parked {
        watch.parked = false;
        WATCH.1.notify_one();
    }
    true
}

/// Takes a call's stop request off the watchdog's list; whether the watchdog asked it to stop.
fn disarm(stop: &Arc<AtomicBool>) -> bool {
    let mut watch = WATCH.0.lock().unwrap_or_else(|e| e.into_inner());
    watch.armed.retain(|(armed, _)| !Arc::ptr_eq(armed, stop));
    stop.load(Ordering::Relaxed)
}

/// Asks every call past its deadline to stop, then sleeps until the next deadline, or until a call arrives.
fn watchdog() {
    let mut watch = WATCH.0.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        let mut next = None::<Instant>;
        for (stop, deadline) in &watch.armed {
            if *deadline <= now {
                stop.store(true, Ordering::Relaxed);
            } else {
                next = Some(next.map_or(*deadline, |n| n.min(*deadline)));
            }
        }
        watch = match next {
            Some(deadline) => WATCH.1.wait_timeout(watch, deadline - now).unwrap_or_else(|e| e.into_inner()).0,
            None => {
                watch.parked = true;
                WATCH.1.wait_while(watch, |w| w.parked).unwrap_or_else(|e| e.into_inner())
            }
        };
    }
}

/// How much stack this thread has left below this call, where the platform says where its stack ends.
fn stack_left() -> Option<usize> {
    // A local's address (a reference to a constant would be promoted to a static's).
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    stack_end().and_then(|end| here.checked_sub(end))
}

/// The lowest address of this thread's stack, asked once per thread (for the main thread glibc reads
/// /proc/self/maps to answer).
#[cfg(target_os = "linux")]
fn stack_end() -> Option<usize> {
    thread_local! {
        static END: Option<usize> = {
            // SAFETY: the attributes are initialised by pthread_getattr_np before they are read, and destroyed once.
            unsafe {
                let mut attr: libc::pthread_attr_t = std::mem::zeroed();
                if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
                    None
                } else {
                    let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
                    let got = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
                    libc::pthread_attr_destroy(&mut attr);
                    (got == 0 && !addr.is_null()).then_some(addr as usize)
                }
            }
        };
    }
    END.with(|end| *end)
}

/// Elsewhere the stack's size is not known: the work always runs on the worker.
#[cfg(not(target_os = "linux"))]
fn stack_end() -> Option<usize> {
    None
}
