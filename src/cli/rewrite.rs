//! What `expand`, `fold` and `infer` share on the command line: the model opened with OUT judged before any work,
//! the plan made under the panic guard, and the result written through the library's one write entry
//! ([`onnx_bcast::rewrite::driver::write`]).

use std::io::{self, Write};
use std::path::Path;

use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::wire::Pieces;
use onnx_bcast::rewrite::driver::{self, Rewrite, Target};

use super::args::Format;
use super::Status;

/// A model and its rewrite, planned and laid out.
pub struct Planned<R: Rewrite> {
    pub model: Model,
    pub plan: R::Plan,
    pub pieces: Pieces,
}

/// The model at `input` and its plan by `command`; `Err` with the exit status once the reason is printed. OUT is
/// judged before the plan unless `dry_run` (which needs none). `between` runs once the plan is made, before its
/// splice (see [`driver::rewrite_planned_then`]).
pub fn plan<R: Rewrite>(
    command: &R,
    (input, output): (&Path, Option<&Path>),
    dry_run: bool,
    between: impl FnOnce(&Model),
) -> Result<Planned<R>, Status> {
    let shown = input.display().to_string();
    let model = open(input, output, dry_run)?;
    let rewrite = || driver::rewrite_planned_then(command, &model, || between(&model));
    let (plan, pieces) = planned(&shown, R::VERB, rewrite, R::broken)?;
    Ok(Planned { model, plan, pieces })
}

/// Writes the rewrite to `output` (`None`: a dry run, nothing written): the path as shown, or the exit status
/// once the reason is printed.
pub fn write<R: Rewrite>(planned: &Planned<R>, input: &Path, output: Option<&Path>) -> Result<Option<String>, Status> {
    let Some(output) = output else { return Ok(None) };
    let Planned { model, plan, pieces } = planned;
    if let Err(e) = driver::write::<R>(model, plan, pieces, Some(input), Target::File(output)) {
        say!("onnx-bcast: error: {e}");
        return Err(Status::Failed);
    }
    Ok(Some(output.display().to_string()))
}

/// [`plan`] then [`write`], for the commands with nothing between them (`fold`, `infer`): the plan and the path
/// written, as shown.
pub fn plan_and_write<R: Rewrite>(
    command: &R,
    input: &Path,
    output: Option<&Path>,
    dry_run: bool,
) -> Result<(Planned<R>, Option<String>), Status> {
    let output = output.filter(|_| !dry_run);
    let planned = plan(command, (input, output), dry_run, |_| {})?;
    let written = write(&planned, input, output)?;
    Ok((planned, written))
}

/// Where a rewriting command's summary goes: stdout, unless the model itself went there (OUT `-`), then stderr;
/// text for people in ASCII where the terminal is not UTF-8, JSON as it is.
pub fn summary_out(written: Option<&str>, format: Format) -> Box<dyn Write> {
    let text = format == Format::Text;
    if written == Some("-") {
        let ascii = text && super::charset::stderr_ascii();
        Box::new(super::charset::Text::new(io::stderr().lock(), ascii))
    } else {
        let ascii = text && super::charset::stdout_ascii();
        let stdout = super::charset::Text::new(onnx_bcast::sys::stdout::locked(), ascii);
        Box::new(io::BufWriter::with_capacity(SUMMARY_BUFFER, stdout))
    }
}

/// How much of a summary is gathered per write to stdout: a summary of 100,000 sites is megabytes (`expand`'s text,
/// 10 MB, went out in 1,265 writes through the default 8 KiB buffer, in 160 through this one; it now gathers its
/// lines itself, `render::expand`, and its chunks pass through uncopied), as are the JSON forms and `fold`'s text.
/// (At most 64 KiB: a block of the allocator's medium pages, see `cli::alloc`.)
const SUMMARY_BUFFER: usize = 64 << 10;

/// A rewriting command's input (`expand`, `fold`, `infer`): the model at `input`, with OUT judged before any work
/// (unless `dry_run`, which needs no OUT), so that a bad OUT costs nothing and is named in the message; `Err` with
/// the exit status once the reason is printed.
fn open(input: &Path, output: Option<&Path>, dry_run: bool) -> Result<Model, Status> {
    let model = Model::open(input).map_err(|e| {
        say!("onnx-bcast: error: {e}");
        Status::Failed
    })?;
    if let (false, Some(output)) = (dry_run, output) {
        if let Err(e) = onnx_bcast::onnx::save::destination(output) {
            say!("onnx-bcast: error: {e}");
            return Err(Status::Failed);
        }
    }
    Ok(model)
}

/// A rewriting command's plan (`expand`, `fold`, `infer`), run under the panic guard: the plan, or the exit status
/// once the reason is printed. A model `check` reports as broken gets its findings and exit 1 (`not VERB: ...`);
/// another error, or a panic, one line and exit 2.
fn planned<T, E: std::fmt::Display>(
    shown: &str,
    verb: &str,
    plan: impl FnOnce() -> Result<T, E>,
    broken: impl FnOnce(&E) -> Option<&[onnx_bcast::analysis::Note]>,
) -> Result<T, Status> {
    match onnx_bcast::sys::panics::guard(plan) {
        Ok(Ok(planned)) => Ok(planned),
        Ok(Err(e)) => match broken(&e) {
            Some(notes) => {
                super::print_notes(shown, notes);
                say!("onnx-bcast: {shown}: not {verb}: `check` reports the model as broken; nothing was written");
                Err(Status::Findings)
            }
            None => {
                say!("onnx-bcast: error: {shown}: {e}");
                Err(Status::Failed)
            }
        },
        Err(panic) => {
            say!("onnx-bcast: internal error: {shown}: {panic}");
            Err(Status::Failed)
        }
    }
}
