//! Checking the models on a pool of threads, each result emitted in argument order as soon as the ones before it
//! are out.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rayon::iter::{ParallelBridge, ParallelIterator};

use onnx_bcast::analysis::{analyze_model_request, analyze_model_sites, prepare, Request};
use onnx_bcast::check::{CheckOptions, Judge};
use onnx_bcast::cli::config::Target;
use onnx_bcast::onnx::model::Model;
use onnx_bcast::render;
use onnx_bcast::sys::platform::io_reason;

use super::progress::Progress;
use super::sink::{Failure, Outcome, Reporter, Spool};
use super::{Status, SITES_ONLY};

/// What each model is checked for: the analysis request (bindings, ranges), and the folder `--witness` writes
/// failing sizes' inputs into.
pub type Asked<'a> = (&'a Request, Option<&'a std::path::Path>);

/// Checks one model (on a worker thread, or on the main thread when it is the run's only one: see [`run_checks`]):
/// each site is judged and dropped as the analysis reaches it. For JSON
/// output (`json`) each site is written to the model's spool as it is judged, so memory does not grow with the
/// number of sites. `only`: this is the only model, and the process exits once its result is out.
fn check_target(target: &Target, options: CheckOptions, json: bool, asked: Asked, only: bool) -> Outcome {
    let shown = target.path().display().to_string();
    let mut spool = None;
    let report = match target {
        Target::Unreadable { path, message } => Err(Failure::Load(format!("{}: {message}", path.display()))),
        // Loading is inside the guard too: a panic while checking one model must not take the other models down.
        Target::Model(path) => onnx_bcast::sys::panics::guard(|| match super::open_model(path) {
            Err(e) => Err(Failure::Load(format!("{shown}: cannot read standard input: {}", io_reason(&e)))),
            Ok(Err(e)) => Err(Failure::Load(e.to_string())),
            Ok(Ok(model)) => {
                if only {
                    // What the analysis holds at its end goes with the process, as the model does.
                    onnx_bcast::sys::end_with_this_work();
                }
                let report = check_model(&model, &shown, (options, json), asked, &mut spool);
                if only {
                    onnx_bcast::sys::exit_without_freeing(model);
                }
                report
            }
        })
        .unwrap_or_else(|panic| Err(Failure::Internal(panic))),
    };
    // A model that failed half way through has half an object in its spool: its error object replaces it.
    let json = spool.filter(|_| report.is_ok());
    Outcome { shown, report, json }
}

/// Checks one opened model, its JSON object (when `json`) written to `spool` as the sites are judged.
fn check_model(
    model: &Model,
    shown: &str,
    (options, json): (CheckOptions, bool),
    (request, witness): Asked,
    spool: &mut Option<Spool>,
) -> Result<onnx_bcast::check::Report, Failure> {
    onnx_bcast::sys::panics::test_point("check");
    let bad_request = |e: onnx_bcast::analysis::BindError| Failure::Load(format!("{shown}: {e}"));
    let (request, ranges) = prepare(model.proto(), request).map_err(bad_request)?;
    let judge = Judge::new(options, witness.is_some()).with_ranges(ranges);
    if json {
        let (report, written) = check_streaming(model, shown, judge, (&request, witness))?;
        *spool = Some(written);
        return Ok(report);
    }
    let mut judge = judge;
    // The judge counts the sites that hold without their records (`Judge`'s `Sites`).
    let analysis = analyze_model_sites(model, SITES_ONLY, &request, Some(&mut judge)).map_err(bad_request)?;
    let mut report = judge.finish(&analysis);
    write_witnesses(model, shown, &mut report, witness)?;
    Ok(report)
}

/// Checks a model writing its JSON object as the sites are judged.
fn check_streaming(
    model: &Model,
    shown: &str,
    mut judge: Judge,
    (request, witness): Asked,
) -> Result<(onnx_bcast::check::Report, Spool), Failure> {
    let spooling = |e: io::Error| Failure::Internal(format!("cannot hold the JSON report: {}", io_reason(&e)));
    let mut spool = Spool::default();
    render::write_json_model_start(&mut spool, shown).map_err(spooling)?;
    let mut sites = render::SiteWriter::default();
    let mut written: io::Result<()> = Ok(());
    let analysis = analyze_model_request(
        model,
        SITES_ONLY,
        request,
        Some(&mut |site| {
            judge.judge_with(site, |report| {
                if written.is_ok() {
                    written = sites.write(&mut spool, report);
                }
            })
        }),
    )
    .map_err(|e| Failure::Load(format!("{shown}: {e}")))?;
    written.map_err(spooling)?;
    let mut report = judge.finish(&analysis);
    write_witnesses(model, shown, &mut report, witness)?;
    render::write_json_model_end(&mut spool, &report).map_err(spooling)?;
    Ok((report, spool))
}

/// `--witness DIR`: the inputs of each failing site's witness, written under DIR (and, in `verify` builds, run).
fn write_witnesses(
    model: &Model,
    shown: &str,
    report: &mut onnx_bcast::check::Report,
    dir: Option<&std::path::Path>,
) -> Result<(), Failure> {
    let (Some(dir), Some(ranges)) = (dir, report.ranges.as_mut()) else { return Ok(()) };
    let inputs = onnx_bcast::rules::ranges::profile::model_inputs(model.proto());
    #[cfg(feature = "verify")]
    let tract = |tensors: &[onnx_bcast::onnx::pb::TensorProto], sizes: &onnx_bcast::rules::ranges::Sizes| {
        let sizes: Vec<(String, u64)> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        tract_says(onnx_bcast::check::verify::run_witness(model.bytes(), tensors, &sizes))
    };
    #[cfg(feature = "verify")]
    let runtime: Option<onnx_bcast::check::witness::Runtime> = Some(&tract);
    #[cfg(not(feature = "verify"))]
    let runtime = None;
    onnx_bcast::check::witness::write(&inputs, shown, ranges, dir, runtime)
        .map_err(|e| Failure::Load(format!("{shown}: --witness {}: {e}", dir.display())))
}

/// What tract's run of a witness says, for the report.
#[cfg(feature = "verify")]
fn tract_says(error: Option<String>) -> String {
    match error {
        Some(error) => format!("tract: {error}"),
        None => "tract runs the model at these sizes without an error".to_string(),
    }
}

/// The stack of the threads that check models: analysis recurses into subgraphs and function bodies, so they get
/// twice the 8 MiB a main thread usually has (the binary's main thread too, see [`main_on_check_stack`]).
const STACK: usize = 16 << 20;

/// The exit status one outcome asks for.
fn status_of(outcome: &Outcome) -> Status {
    match &outcome.report {
        Err(_) => Status::Failed,
        Ok(report) if report.failed() => Status::Findings,
        Ok(_) => Status::Clean,
    }
}

/// Checks the models on a pool of `jobs` threads (default: one per core) and emits each result in target order as
/// soon as the ones before it are out, so output streams and memory holds only results that arrived early. A
/// failure to write (a closed pipe) stops the remaining checks.
pub fn run_checks(
    targets: &[Target],
    options: CheckOptions,
    jobs: Option<std::num::NonZeroUsize>,
    mut sink: Reporter,
    asked: Asked,
) -> io::Result<Status> {
    // One model (or --jobs 1) needs no pool: a pool's threads, and finding out how many cores there are, cost more
    // than checking a small model does (bench/deploy_speed.py times whole processes on models of a few nodes).
    let pool = match (targets.len(), jobs.map(|n| n.get())) {
        (0 | 1, _) | (_, Some(1)) => None,
        _ => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(jobs.map_or(0, |n| n.get()))
                .stack_size(STACK)
                .thread_name(|i| format!("onnx-bcast-check-{i}"))
                .build()
                .map_err(io::Error::other)?,
        ),
    };
    let streams_json = sink.streams_json();
    let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
    let cancel = AtomicBool::new(false);
    let mut progress = Progress::new(targets);
    // Text for people in ASCII where the terminal is not UTF-8; JSON and SARIF as they are.
    let ascii = sink.is_for_people() && super::charset::stdout_ascii();
    let mut out = io::BufWriter::new(super::charset::Text::new(onnx_bcast::sys::stdout::locked(), ascii));
    let cancel = &cancel;
    let check = move |tx: &mut mpsc::Sender<(usize, Outcome)>, (i, target): (usize, &Target)| {
        if !cancel.load(Ordering::Relaxed) {
            let _ = tx.send((i, check_target(target, options, streams_json, asked, targets.len() == 1)));
        }
    };
    // One model on a thread with the stack a check needs, and no bar to draw while it is checked: checked on this
    // thread. A worker would start a heap of its own (mimalloc's heaps are per thread): fresh pages for its small
    // blocks beside the ones this thread filled parsing the command line, a 2 MiB huge page more to fault in.
    if targets.len() == 1 && progress.bar.is_none() && ON_CHECK_STACK.get() {
        let mut tx = tx;
        targets.iter().enumerate().for_each(|t| check(&mut tx, t));
        drop(tx);
        let emitted = emit_in_order(&rx, &mut progress, &mut sink, &mut out);
        return finish(emitted, progress, sink, out);
    }
    let result = std::thread::scope(|scope| {
        let worker = std::thread::Builder::new().stack_size(STACK).name("onnx-bcast-check".into());
        worker.spawn_scoped(scope, move || match pool {
            // par_bridge hands out targets in order, so results arrive roughly in order.
            Some(pool) => pool.install(|| targets.iter().enumerate().par_bridge().for_each_with(tx, check)),
            None => {
                let mut tx = tx;
                targets.iter().enumerate().for_each(|t| check(&mut tx, t))
            }
        })?;
        let emitted = emit_in_order(&rx, &mut progress, &mut sink, &mut out);
        if emitted.is_err() {
            cancel.store(true, Ordering::Relaxed);
        }
        drop(rx);
        emitted
    });
    finish(result, progress, sink, out)
}

/// Ends a run of checks whose results are all emitted (or one failed to be): the bar cleared, the sink's closing
/// part (totals, the JSON array's end) written.
fn finish(emitted: io::Result<Status>, progress: Progress, sink: Reporter, mut out: impl Write) -> io::Result<Status> {
    progress.finish();
    let worst = emitted?;
    sink.finish(&mut out)?;
    out.flush()?;
    Ok(worst)
}

thread_local! {
    /// Whether this thread's stack may grow to [`STACK`]: the main thread, where [`main_on_check_stack`] could let it.
    static ON_CHECK_STACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs the binary's `main` (`f`, called on the process's main thread), telling [`run_checks`] that this thread's
/// stack is the one checks need ([`STACK`]) where it may grow that far: a run that checks one model then checks it
/// here, on the thread (and in the heap) that parsed the command line, rather than on a worker of its own. Where the
/// stack may not grow that far, checks get their worker as before (running all of `main` on a thread of its own
/// would give every other command a second heap too: `expand` of a 20 MB model peaked 2.5 MiB higher).
pub fn main_on_check_stack<R>(f: impl FnOnce() -> R) -> R {
    if onnx_bcast::sys::platform::main_stack_may_grow_to(STACK) {
        ON_CHECK_STACK.set(true);
    }
    f()
}

/// Receives the outcomes as the workers send them and emits each in target order, as soon as the ones before it
/// are out; returns the worst status once every worker is done.
fn emit_in_order(
    rx: &mpsc::Receiver<(usize, Outcome)>,
    progress: &mut Progress,
    sink: &mut Reporter,
    out: &mut impl Write,
) -> io::Result<Status> {
    let stdout_is_terminal = io::stdout().is_terminal();
    // With a bar on the terminal, results on the terminal must be out before the bar is drawn again.
    let flush_each = progress.bar.is_some() && stdout_is_terminal;
    let mut worst = Status::Clean;
    let mut early = BTreeMap::new();
    let mut next = 0;
    loop {
        progress.tick();
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((i, outcome)) => {
                early.insert(i, outcome);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(worst),
        }
        let mut ready = Vec::new();
        while let Some(outcome) = early.remove(&next) {
            next += 1;
            worst = worst.max(status_of(&outcome));
            ready.push(outcome);
        }
        if ready.is_empty() {
            continue;
        }
        // Failures go to stderr, where the bar is.
        let interrupts = stdout_is_terminal || ready.iter().any(|o| o.report.is_err());
        progress.models_done(ready.len(), interrupts, || -> io::Result<()> {
            for outcome in ready {
                let shown = outcome.shown.clone();
                onnx_bcast::sys::panics::about(&shown, || {
                    onnx_bcast::sys::panics::test_point("render");
                    sink.emit(out, outcome)
                })?;
            }
            if flush_each {
                out.flush()?;
            }
            Ok(())
        })?;
    }
}
