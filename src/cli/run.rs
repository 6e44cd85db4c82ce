//! Checking the models on a pool of threads, each result emitted in argument order as soon as the ones before it
//! are out.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rayon::iter::{ParallelBridge, ParallelIterator};

use onnx_bcast::analysis::{analyze_model_request, Request};
use onnx_bcast::check::{CheckOptions, Judge};
use onnx_bcast::config::Target;
use onnx_bcast::model::Model;
use onnx_bcast::platform::io_reason;
use onnx_bcast::render;

use super::progress::Progress;
use super::sink::{Failure, Outcome, Reporter, Spool};
use super::{Status, SITES_ONLY};

/// Checks one model on a worker thread: each site is judged and dropped as the analysis reaches it. For JSON
/// output (`json`) each site is written to the model's spool as it is judged, so memory does not grow with the
/// number of sites.
fn check_target(target: &Target, options: CheckOptions, json: bool, request: &Request) -> Outcome {
    let shown = target.path().display().to_string();
    let mut spool = None;
    let report = match target {
        Target::Unreadable { path, message } => Err(Failure::Load(format!("{}: {message}", path.display()))),
        // Loading is inside the guard too: a panic on a worker thread must not take the other models down.
        Target::Model(path) => onnx_bcast::panics::guard(|| match super::open_model(path) {
            Err(e) => Err(Failure::Load(format!("{shown}: cannot read standard input: {}", io_reason(&e)))),
            Ok(Err(e)) => Err(Failure::Load(e.to_string())),
            Ok(Ok(model)) => check_model(&model, &shown, options, json, request, &mut spool),
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
    options: CheckOptions,
    json: bool,
    request: &Request,
    spool: &mut Option<Spool>,
) -> Result<onnx_bcast::check::Report, Failure> {
    onnx_bcast::panics::test_point("check");
    if json {
        let (report, written) = check_streaming(model, shown, options, request)?;
        *spool = Some(written);
        return Ok(report);
    }
    let mut judge = Judge::new(options, false);
    let analysis = analyze_model_request(model, SITES_ONLY, request, Some(&mut |site| judge.judge(site)))
        .map_err(|e| Failure::Load(format!("{shown}: {e}")))?;
    Ok(judge.finish(&analysis))
}

/// Checks a model writing its JSON object as the sites are judged.
fn check_streaming(
    model: &Model,
    shown: &str,
    options: CheckOptions,
    request: &Request,
) -> Result<(onnx_bcast::check::Report, Spool), Failure> {
    let spooling = |e: io::Error| Failure::Internal(format!("cannot hold the JSON report: {}", io_reason(&e)));
    let mut spool = Spool::default();
    render::write_json_model_start(&mut spool, shown).map_err(spooling)?;
    let mut judge = Judge::new(options, false);
    let mut first = true;
    let mut written: io::Result<()> = Ok(());
    let analysis = analyze_model_request(
        model,
        SITES_ONLY,
        request,
        Some(&mut |site| {
            judge.judge_with(site, |report| {
                if written.is_ok() {
                    written = render::write_json_site(&mut spool, report, first);
                    first = false;
                }
            })
        }),
    )
    .map_err(|e| Failure::Load(format!("{shown}: {e}")))?;
    written.map_err(spooling)?;
    let report = judge.finish(&analysis);
    render::write_json_model_end(&mut spool, &report).map_err(spooling)?;
    Ok((report, spool))
}

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
    request: &Request,
) -> io::Result<Status> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.map_or(0, |n| n.get()))
        // Analysis recurses into subgraphs and function bodies: as much stack as the main thread has.
        .stack_size(16 << 20)
        .thread_name(|i| format!("onnx-bcast-check-{i}"))
        .build()
        .map_err(io::Error::other)?;
    let streams_json = sink.streams_json();
    let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
    let cancel = AtomicBool::new(false);
    let mut progress = Progress::new(targets);
    let stdout = io::stdout();
    // Text for people in ASCII where the terminal is not UTF-8; JSON and SARIF as they are.
    let ascii = sink.is_for_people() && super::charset::stdout_ascii();
    let mut out = io::BufWriter::new(super::charset::Text::new(stdout.lock(), ascii));
    let result = std::thread::scope(|scope| {
        let cancel = &cancel;
        scope.spawn(move || {
            pool.install(|| {
                // par_bridge hands out targets in order, so results arrive roughly in order.
                targets.iter().enumerate().par_bridge().for_each_with(tx, |tx, (i, target)| {
                    if !cancel.load(Ordering::Relaxed) {
                        let _ = tx.send((i, check_target(target, options, streams_json, request)));
                    }
                });
            })
        });
        let emitted = emit_in_order(&rx, &mut progress, &mut sink, &mut out);
        if emitted.is_err() {
            cancel.store(true, Ordering::Relaxed);
        }
        drop(rx);
        emitted
    });
    progress.finish();
    let worst = result?;
    sink.finish(&mut out)?;
    out.flush()?;
    Ok(worst)
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
                onnx_bcast::panics::about(&shown, || {
                    onnx_bcast::panics::test_point("render");
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
