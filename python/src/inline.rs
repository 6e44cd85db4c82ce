//! Short work on the calling thread. Handing a call to the worker thread and waiting for it ([`without_gil`]) costs
//! more than the handover itself: on the PyTorch exports `check(ModelProto)` took 20-40 µs a call more through the
//! worker than on the calling thread (5-12%: the data crosses to the other core, and both threads are woken), where a
//! one-node model's whole call costs 6-8 µs. What the worker guarantees is kept:
//! - its stack: the work runs here only when this thread has [`STACK_LEFT`] of stack left, eight times what a
//!   model nested as deep as analysis goes needs (function_chain_64: under 512 KiB; 30 nested Ifs: under 256 KiB);
//! - Ctrl-C: the work runs here only for a small model, and a watchdog thread asks it to stop once it has used
//!   [`BUDGET`] of the thread's CPU time, or has run [`WAITED`] (work that waits, on a pipe say, uses no CPU time).
//!   A call stopped so is run again on the worker, which lets Python handle signals while it waits: a Ctrl-C is
//!   raised that much plus one node later at most. CPU time first: on a loaded machine a thread waits for a core
//!   for tens of milliseconds, and a budget of 20 ms in wall time stopped checks of 0.8 ms there (and ran them
//!   again: up to 32 ms a call, 1 of 1,000 at load 6);
//! - the GIL is let go, and a panic becomes `InternalError`, as on the worker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::worker::{in_first_process, without_gil};
use crate::Failure;

/// How much CPU time work on the calling thread may use before it is stopped and run again on the worker: a model
/// small enough to run here ([`SMALL_BYTES`]) is checked in a few milliseconds.
const BUDGET: Duration = Duration::from_millis(20);

/// How long work on the calling thread may run, whatever CPU time it used, before it is run again on the worker.
const WAITED: Duration = Duration::from_millis(200);

/// The largest model (its bytes, or its file's) run on the calling thread: about 20,000 nodes, 5 ms of checking.
/// Weights cost nothing to check, but a larger model is more likely to run past [`BUDGET`] and be checked twice.
pub(crate) const SMALL_BYTES: u64 = 1 << 20;

/// The stack a thread must have left to run the work itself.
const STACK_LEFT: usize = 4 << 20;

/// Runs `work` without the GIL: on this thread when `bytes` (the model's size) is at most [`SMALL_BYTES`] and this
/// thread has the stack for it, else, or when it runs past its budget, on the worker ([`without_gil`]).
pub(crate) fn run<T: Send + 'static>(
    py: Python<'_>,
    shown: &str,
    bytes: u64,
    work: impl Fn() -> Result<T, Failure> + Send + Sync + 'static,
) -> PyResult<T> {
    let clock = (bytes <= SMALL_BYTES && in_first_process() && stack_left().is_some_and(|left| left >= STACK_LEFT))
        .then(this_threads_clock)
        .flatten();
    if let Some(clock) = clock {
        let stop = Arc::new(AtomicBool::new(false));
        if arm(&stop, clock) {
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

/// The calls running on their callers' threads; whether the watchdog runs, and whether it waits for a call.
struct Watch {
    armed: Vec<Armed>,
    started: bool,
    parked: bool,
}

/// A call on its caller's thread: its stop request, the thread's CPU clock and its reading when the call began, when
/// it must end ([`WAITED`]), and when the watchdog reads the clock next (by then the call has used [`BUDGET`] at most).
struct Armed {
    stop: Arc<AtomicBool>,
    clock: Clock,
    began: Duration,
    ends: Instant,
    due: Instant,
}

static WATCH: (Mutex<Watch>, Condvar) =
    (Mutex::new(Watch { armed: Vec::new(), started: false, parked: false }), Condvar::new());

/// Registers a call's stop request with the watchdog (started by the first call); false when it cannot start.
fn arm(stop: &Arc<AtomicBool>, clock: Clock) -> bool {
    let Some(began) = cpu_time(clock) else { return false };
    let mut watch = WATCH.0.lock().unwrap_or_else(|e| e.into_inner());
    if !watch.started {
        let started = std::thread::Builder::new().name("onnx-bcast-watch".into()).spawn(watchdog);
        if started.is_err() {
            return false;
        }
        watch.started = true;
    }
    let now = Instant::now();
    watch.armed.push(Armed { stop: stop.clone(), clock, began, ends: now + WAITED, due: now + BUDGET });
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
    watch.armed.retain(|armed| !Arc::ptr_eq(&armed.stop, stop));
    stop.load(Ordering::Relaxed)
}

/// Asks every call that has used its budget to stop, then sleeps until a call may have, or until a call arrives.
fn watchdog() {
    let mut watch = WATCH.0.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        let mut next = None::<Instant>;
        for armed in watch.armed.iter_mut().filter(|a| !a.stop.load(Ordering::Relaxed)) {
            if armed.due <= now {
                let used = cpu_time(armed.clock).map_or(BUDGET, |t| t.saturating_sub(armed.began));
                match BUDGET.checked_sub(used).filter(|left| !left.is_zero() && now < armed.ends) {
                    Some(left) => armed.due = (now + left).min(armed.ends),
                    None => {
                        armed.stop.store(true, Ordering::Relaxed);
                        continue;
                    }
                }
            }
            next = Some(next.map_or(armed.due, |n| n.min(armed.due)));
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

/// A thread's CPU clock, which another thread can read.
#[cfg(target_os = "linux")]
type Clock = libc::clockid_t;
#[cfg(not(target_os = "linux"))]
type Clock = ();

/// This thread's CPU clock.
#[cfg(target_os = "linux")]
fn this_threads_clock() -> Option<Clock> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self is this thread, alive while its clock is read (the call it runs is armed till it ends).
    (unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0).then_some(clock)
}

/// Elsewhere: none, and the work runs on the worker.
#[cfg(not(target_os = "linux"))]
fn this_threads_clock() -> Option<Clock> {
    None
}

/// The CPU time a thread has used, read from its clock.
#[cfg(target_os = "linux")]
fn cpu_time(clock: Clock) -> Option<Duration> {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write to.
    (unsafe { libc::clock_gettime(clock, &mut t) } == 0)
        .then(|| Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0)))
}

#[cfg(not(target_os = "linux"))]
fn cpu_time(_: Clock) -> Option<Duration> {
    None
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
