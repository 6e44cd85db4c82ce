//! Where the extension's work runs: on a worker thread with the command line's stack, while the calling thread
//! waits without the GIL and lets Python handle signals. A worker that has finished is kept for the next call, so that
//! a call starts no thread and finds its allocator's heap set up: with a thread per call, `check` of a one-node model
//! cost 55-65 µs of CPU (10-15 µs now), and of a 128-node PyTorch export (bert.dynamo18) 1.8 ms (1.1 ms now), the
//! difference being the thread's start and its heap's setup and teardown (perf stat, 300-2,000 calls in a loop).
//! `check` of a small model runs on the calling thread instead, and comes here only when that cannot be or takes
//! too long (src/inline.rs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use pyo3::prelude::*;

use crate::Failure;

/// Runs `work` without the GIL, a panic in it becoming `InternalError` naming the model. The work runs on a worker
/// thread while this one waits for it, a few times a second taking the GIL to let Python run its signal handlers:
/// Ctrl-C (`KeyboardInterrupt`, or whatever a handler raises) asks the work to stop
/// ([`onnx_bcast::sys::interrupt`]), waits for it to end (at the next node), discards what it made and raises. Work
/// that writes checks the request before writing.
pub(crate) fn without_gil<T: Send + 'static>(
    py: Python<'_>,
    shown: &str,
    work: impl FnOnce() -> Result<T, Failure> + Send + 'static,
) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let slot: Arc<Handover<T>> = Arc::new((Mutex::new(None), Condvar::new()));
    let (flag, handover) = (stop.clone(), slot.clone());
    let job: Job = Box::new(move || {
        let outcome = onnx_bcast::sys::interrupt::watch(flag, || onnx_bcast::sys::panics::guard(work));
        Box::new(move || {
            *handover.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
            handover.1.notify_all();
        })
    });
    run(job).map_err(|e| PyErr::from(Failure::Other(format!("{shown}: cannot start the work: {e}"))))?;
    let mut raised = None;
    let outcome = loop {
        let outcome = py.detach(|| {
            let guard = slot.0.lock().unwrap_or_else(|e| e.into_inner());
            let (mut guard, _) =
                slot.1.wait_timeout_while(guard, SIGNAL_POLL, |o| o.is_none()).unwrap_or_else(|e| e.into_inner());
            guard.take()
        });
        if let Some(outcome) = outcome {
            break outcome;
        }
        // Once interrupted, only the end of the work is awaited: it stops at its next node.
        if raised.is_none() {
            if let Err(e) = py.check_signals() {
                stop.store(true, Ordering::Relaxed);
                raised = Some(e);
            }
        }
    };
    if let Some(raised) = raised {
        return Err(raised);
    }
    match outcome {
        Ok(done) => Ok(done?),
        Err(panic) => Err(Failure::Internal(format!("{shown}: {panic}")).into()),
    }
}

/// How often a call into the library lets Python handle signals.
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Where a job leaves its outcome (a panic's message when it panicked) for the caller.
type Handover<T> = (Mutex<Option<Result<Result<T, Failure>, String>>>, Condvar);

/// A call's work; what it returns hands the outcome over to the caller. The worker puts itself back among the idle
/// ones in between, so that a caller that calls again at once finds it there instead of starting another thread.
type Job = Box<dyn FnOnce() -> Box<dyn FnOnce() + Send> + Send>;

/// The idle workers, each waiting on its channel for a job.
static IDLE: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

/// The process the workers belong to. A child made by `fork` (a `multiprocessing` pool) has none of its parent's
/// threads, and may have inherited `IDLE` locked: it starts a thread per call and never touches `IDLE`.
static OWNER: OnceLock<u32> = OnceLock::new();

/// How many idle workers are kept: calls from more threads at once than this start threads that end after their job.
const KEPT: usize = 4;

/// Whether this is the process the extension was first called in, not a child made by `fork`, which has none of
/// its threads (and may have inherited their locks held).
pub(crate) fn in_first_process() -> bool {
    let pid = std::process::id();
    *OWNER.get_or_init(|| pid) == pid
}

/// An idle worker, taken off the list.
fn idle_worker() -> Option<mpsc::Sender<Job>> {
    IDLE.lock().unwrap_or_else(|e| e.into_inner()).pop()
}

/// Hands `job` to an idle worker, or to a new one.
fn run(mut job: Job) -> std::io::Result<()> {
    let keep = in_first_process();
    while let Some(worker) = keep.then(idle_worker).flatten() {
        match worker.send(job) {
            Ok(()) => return Ok(()),
            // A worker that is gone (it cannot be, but a job is never lost to it).
            Err(mpsc::SendError(back)) => job = back,
        }
    }
    let (sender, jobs) = mpsc::channel::<Job>();
    let own = sender.clone();
    sender.send(job).map_err(|_| std::io::Error::other("the worker's channel closed"))?;
    std::thread::Builder::new()
        .name("onnx-bcast".into())
        // Analysis recurses into subgraphs and function bodies: as much stack as the command line gives it.
        .stack_size(16 << 20)
        .spawn(move || {
            for job in jobs.iter() {
                let hand_over = job();
                let kept = keep && {
                    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
                    idle.len() < KEPT && {
                        idle.push(own.clone());
                        true
                    }
                };
                hand_over();
                if !kept {
                    break;
                }
            }
        })?;
    Ok(())
}
