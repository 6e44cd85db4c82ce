//! `onnx_bcast._native`, the compiled half of the Python package: the command line (`run_cli`, the same program as
//! the `onnx-bcast` binary) and `check`, `expand`, `infer`, `fold` and `shapes` on a model given as a path or as
//! bytes, `explain`, and `find_models` (a folder's models, as `check` walks it). The Python half
//! (`python/onnx_bcast/`) turns `onnx.ModelProto` and path-likes into these two, and the results into objects.
//!
//! Every call lets go of the GIL while Rust works, so threads scale; a path is memory-mapped exactly as the command
//! line maps it, and bytes are borrowed from their Python object, not copied. Errors come back as the package's
//! exceptions with the command line's one-line message; a panic (a bug) becomes `InternalError`, never a crash.

use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use onnx_bcast::analysis::{self, analyze_model_request, Bindings, Request};
use onnx_bcast::check::{CheckOptions, Level, RuleSelection, Selector};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::wire::Pieces;
use onnx_bcast::render;
use onnx_bcast::rewrite::annotate::{Annotate, InferError};
use onnx_bcast::rewrite::driver;
use onnx_bcast::rewrite::expand::{Expand, ExpandError, ExpandOptions};
use onnx_bcast::rewrite::fold::Fold;

mod inline;
mod report;
mod worker;
use worker::without_gil;

#[global_allocator]
static GLOBAL: onnx_bcast::cli::alloc::Mimalloc = onnx_bcast::cli::alloc::Mimalloc;

// The exceptions are named as the package shows them: `onnx_bcast.ModelError`, not `_native.ModelError`.
create_exception!(onnx_bcast, OnnxBcastError, PyException, "Any error onnx-bcast reports.");
create_exception!(
    onnx_bcast,
    ModelError,
    OnnxBcastError,
    "The model cannot be read: not a file, not ONNX, undecodable."
);
create_exception!(
    onnx_bcast,
    RefusedError,
    OnnxBcastError,
    "`expand` will not rewrite a model that `check` reports as broken (a cycle, an undefined value, ...)."
);
create_exception!(
    onnx_bcast,
    BindError,
    OnnxBcastError,
    "A `bind` size or a range names no symbol of the model's inputs, is too large, or contradicts the model."
);
create_exception!(onnx_bcast, InternalError, OnnxBcastError, "A bug in onnx-bcast: please report it.");

/// A model as the Python half hands it over: a file, or the bytes of one (named for messages). A clone shares the
/// bytes: work run again on the worker ([`inline::run`]) opens the same ones.
#[derive(Clone)]
enum Input {
    Path(PathBuf),
    /// The bytes (borrowed from their Python object), their name, and the main-graph initializers whose data the
    /// Python half left out (index, bytes).
    Bytes(bytes::Bytes, String, Vec<(usize, usize)>),
}

impl Input {
    fn from_py(model: &Bound<'_, PyAny>, name: Option<String>, left_out: Vec<(usize, usize)>) -> PyResult<Input> {
        if let Ok(bytes) = model.cast::<PyBytes>() {
            let name = name.unwrap_or_else(|| "<bytes>".to_string());
            let bytes = bytes::Bytes::from_owner(PyBackedBytes::from(bytes.clone()));
            return Ok(Input::Bytes(bytes, name, left_out));
        }
        Ok(Input::Path(model.extract::<PathBuf>()?))
    }

    fn shown(&self) -> String {
        match self {
            Input::Path(path) => path.display().to_string(),
            Input::Bytes(_, name, _) => name.clone(),
        }
    }

    /// The model's size: its bytes', or its file's (0 when the file cannot be read: opening it fails at once).
    fn size(&self) -> u64 {
        match self {
            Input::Path(path) => std::fs::metadata(path).map_or(0, |m| m.len()),
            Input::Bytes(bytes, _, _) => bytes.len() as u64,
        }
    }

    /// The file the model comes from, if it comes from one.
    fn path(&self) -> Option<PathBuf> {
        match self {
            Input::Path(path) => Some(path.clone()),
            _ => None,
        }
    }

    fn open(self) -> Result<Model, Failure> {
        self.opened().map(|(model, _)| model)
    }

    /// The model, and for bytes the bytes themselves (shared with the model, not copied) and the initializers
    /// left out of them.
    fn opened(self) -> Result<(Model, Option<Held>), Failure> {
        let opened = match self {
            Input::Path(path) => Model::open(path).map(|model| (model, None)),
            Input::Bytes(bytes, name, left_out) => {
                let model = Model::from_bytes(name, bytes.clone());
                let model = match left_out.is_empty() {
                    true => model,
                    false => model.and_then(|m| onnx_bcast::onnx::tensor::with_placeholder_data(m, &left_out)),
                };
                model.map(|model| (model, Some((bytes, left_out))))
            }
        };
        opened.map_err(|e| Failure::Model(e.to_string()))
    }
}

/// A model's bytes as the caller gave them, and the main-graph initializers whose data was left out of them.
type Held = (bytes::Bytes, Vec<(usize, usize)>);

/// What went wrong, decided without the GIL and turned into an exception with it.
enum Failure {
    Model(String),
    Bind(String),
    /// One line per note, then the verdict.
    Refused(Vec<String>),
    Other(String),
    Internal(String),
}

impl From<Failure> for PyErr {
    /// The message as the command line's, escaped (a traceback reaches a terminal too) with every name whole
    /// ([`onnx_bcast::sys::escape::escaped`]).
    fn from(failure: Failure) -> PyErr {
        use onnx_bcast::sys::escape::escaped;
        match failure {
            Failure::Model(m) => ModelError::new_err(escaped(&m)),
            Failure::Bind(m) => BindError::new_err(escaped(&m)),
            Failure::Refused(lines) => {
                RefusedError::new_err(lines.iter().map(|l| escaped(l)).collect::<Vec<_>>().join("\n"))
            }
            Failure::Other(m) => OnnxBcastError::new_err(escaped(&m)),
            Failure::Internal(m) => InternalError::new_err(format!("internal error: {}", escaped(&m))),
        }
    }
}

/// Whether the caller asked the work to stop: then nothing is written, and what was made is discarded.
fn interrupted() -> Result<(), Failure> {
    match onnx_bcast::sys::interrupt::requested() {
        true => Err(Failure::Other("interrupted".into())),
        false => Ok(()),
    }
}

/// The rule selection of `deny`, `warn` and `allow`: `all` in any of them first, then the codes they name, so that
/// `deny=["all"], allow=["negative-dim"]` carves an exception out as the flags do in that order. A code named at two
/// levels is an error (the flags would let the later one win; keyword arguments have no order).
fn selection(deny: &[String], warn: &[String], allow: &[String]) -> PyResult<RuleSelection> {
    let levels = [(deny, Level::Deny, "deny"), (warn, Level::Warn, "warn"), (allow, Level::Allow, "allow")];
    let mut parsed: Vec<(Selector, Level, &str)> = Vec::new();
    for (names, level, argument) in levels {
        for name in names {
            let selector = Selector::parse(name).map_err(|e| PyValueError::new_err(format!("{argument}: {e}")))?;
            if let Some((_, _, other)) = parsed.iter().find(|(s, l, _)| *s == selector && *l != level) {
                return Err(PyValueError::new_err(format!("`{name}` is given both to {other} and to {argument}")));
            }
            parsed.push((selector, level, argument));
        }
    }
    let mut rules = RuleSelection::default();
    let (all, codes): (Vec<_>, Vec<_>) = parsed.into_iter().partition(|(s, _, _)| *s == Selector::All);
    for (selector, level, _) in all.into_iter().chain(codes) {
        rules.select(selector, level);
    }
    Ok(rules)
}

/// `bind`'s sizes, as `--bind NAME=SIZE` takes them.
fn bindings(bind: &[(String, u64)]) -> PyResult<Request> {
    let bindings = Bindings::new(bind).map_err(|e| PyErr::from(Failure::Bind(e.to_string())))?;
    // check and shapes walk the training graphs too, as the command line's do (expand ignores this request).
    Ok(Request { bindings, training_graphs: true, ..Default::default() })
}

/// The sizes asked about: `bind`'s sizes, `ranges` as `--range NAME=MIN..MAX[/STEP]` takes them (name, text), a
/// TensorRT profile's min, opt and max shapes as trtexec spells them, and `--safe-ranges`.
fn requested(
    bind: &[(String, u64)],
    ranges: &[(String, String)],
    profile: Option<(String, String, String)>,
    safe_ranges: bool,
) -> PyResult<Request> {
    use onnx_bcast::rules::ranges::profile::{Profile, Shapes};
    let mut request = bindings(bind)?;
    for (name, text) in ranges {
        let range = onnx_bcast::rules::ranges::SizeRange::parse(text)
            .map_err(|e| PyValueError::new_err(format!("ranges[{name:?}]: {e}")))?;
        request.ranges.ranges.push((name.clone(), range));
    }
    if let Some((min, opt, max)) = profile {
        let shapes =
            |key: &str, text: &str| Shapes::parse(text).map_err(|e| PyValueError::new_err(format!("{key}: {e}")));
        request.ranges.profile = Profile {
            min: shapes("min_shapes", &min)?,
            opt: shapes("opt_shapes", &opt)?,
            max: shapes("max_shapes", &max)?,
        };
    }
    request.ranges.safe_ranges = safe_ranges;
    Ok(request)
}

#[pyfunction]
#[pyo3(signature = (model, name=None, strict=false, deny=Vec::new(), warn=Vec::new(), allow=Vec::new(), left_out=Vec::new(), bind=Vec::new(), ranges=Vec::new(), profile=None, safe_ranges=false))]
#[allow(clippy::too_many_arguments)]
fn check(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    name: Option<String>,
    strict: bool,
    deny: Vec<String>,
    warn: Vec<String>,
    allow: Vec<String>,
    left_out: Vec<(usize, usize)>,
    bind: Vec<(String, u64)>,
    ranges: Vec<(String, String)>,
    profile: Option<(String, String, String)>,
    safe_ranges: bool,
) -> PyResult<report::NativeReport> {
    let input = Input::from_py(model, name, left_out)?;
    let options = CheckOptions { strict, rules: selection(&deny, &warn, &allow)? };
    let request = requested(&bind, &ranges, profile, safe_ranges)?;
    let (shown, size) = (input.shown(), input.size());
    inline::run(py, &shown, size, move || report::check(input.clone(), options, request.clone()))
}

/// Every value's inferred element type and shape: the JSON of `onnx-bcast shapes --format json`.
#[pyfunction]
#[pyo3(signature = (model, name=None, left_out=Vec::new(), bind=Vec::new(), ranges=Vec::new(), profile=None))]
fn shapes(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    name: Option<String>,
    left_out: Vec<(usize, usize)>,
    bind: Vec<(String, u64)>,
    ranges: Vec<(String, String)>,
    profile: Option<(String, String, String)>,
) -> PyResult<String> {
    let input = Input::from_py(model, name, left_out)?;
    let request = requested(&bind, &ranges, profile, false)?;
    let shown = input.shown();
    without_gil(py, &shown.clone(), move || {
        let model = input.open()?;
        let bad = |e: analysis::BindError| Failure::Bind(format!("{shown}: {e}"));
        let (request, ranges) = analysis::prepare(model.proto(), &request).map_err(bad)?;
        let mut analysis = analyze_model_request(&model, analysis::Options::default(), &request, None).map_err(bad)?;
        // Shapes at sizes the model contradicts are no answer: the binding's error (`check` reports each one).
        if let Some(e) = analysis::BindError::contradictions(&analysis) {
            return Err(bad(e));
        }
        if let Some(ranges) = &ranges {
            analysis.facts_within(&ranges.ranges);
        }
        Ok(render::shapes_json(&shown, &analysis).to_string())
    })
}

/// `expand`'s options as the Python keyword arguments give them.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct ExpandArgs {
    materialize_constants: bool,
    max_materialize_bytes: u64,
    inline_external_below: Option<u64>,
    gather_external_data: Option<String>,
}

/// Rewrites every implicit broadcast; writes `out` when given (atomically, with its external data, as the command
/// line does) and returns `(None, summary JSON)`, or returns `(the rewritten bytes, summary JSON)`.
#[pyfunction]
#[pyo3(signature = (model, out, options, name=None, bind=Vec::new(), ranges=Vec::new(), profile=None))]
#[allow(clippy::too_many_arguments)]
fn expand(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    out: Option<PathBuf>,
    options: ExpandArgs,
    name: Option<String>,
    bind: Vec<(String, u64)>,
    ranges: Vec<(String, String)>,
    profile: Option<(String, String, String)>,
) -> PyResult<(Option<Py<PyBytes>>, String)> {
    let input = Input::from_py(model, name, Vec::new())?;
    let request = requested(&bind, &ranges, profile, false)?;
    let options = ExpandOptions {
        materialize_constants: options.materialize_constants,
        max_materialize_bytes: options.max_materialize_bytes,
        inline_external_below: options.inline_external_below,
        gather_external: options.gather_external_data,
    };
    rewritten::<Expand<'static>>(
        py,
        input,
        out,
        move |model| driver::rewrite(&Expand { options, request: &request }, model),
        |e| matches!(e, ExpandError::Bind(_)),
        |shown, written, plan| onnx_bcast::render::expand::expand_json(shown, written, &plan.summary).to_string(),
    )
}

/// A model a rewrite refuses, with `check`'s findings: `BindError` when they are all `bind-contradiction` (the
/// model is fine, the sizes are not), else `RefusedError`.
fn broken(shown: &str, notes: &[onnx_bcast::analysis::Note], verb: &str) -> Failure {
    let mut lines: Vec<String> =
        notes.iter().map(|n| format!("{shown}: {}", onnx_bcast::rewrite::refuse::line(n))).collect();
    if notes.iter().all(|n| n.code == onnx_bcast::diagnostic::Code::BindContradiction) {
        lines.push(format!("{shown}: not {verb}: the bind sizes contradict the model"));
        return Failure::Bind(lines.join("\n"));
    }
    lines.push(format!("{shown}: not {verb}: `check` reports the model as broken"));
    Failure::Refused(lines)
}

/// What `expand`, `infer` and `fold` hand back: the rewritten bytes (unless written to `out`) and the summary JSON.
type Rewritten = (Option<Py<PyBytes>>, String);

/// What the three rewrites share, as the command line does it: the model opened and OUT judged before any work,
/// the plan made (`plan`; a refusal is `check`'s findings, a `BindError` where `is_bind` says so, else one line),
/// nothing written when the caller asked the work to stop (a plan from a stopped analysis is incomplete), then
/// the bytes written to `out` or laid out in memory through the library's one write entry, [`driver::write`], and
/// the summary JSON by `summary`. (`R` names the command's type only: `plan` makes the command itself, which may
/// borrow what the closure owns.)
fn rewritten<R: driver::Rewrite + 'static>(
    py: Python<'_>,
    input: Input,
    out: Option<PathBuf>,
    plan: impl FnOnce(&Model) -> Result<(R::Plan, Pieces), R::Error> + Send + 'static,
    is_bind: fn(&R::Error) -> bool,
    summary: impl FnOnce(&str, Option<&str>, &R::Plan) -> String + Send + 'static,
) -> PyResult<Rewritten> {
    let shown = input.shown();
    let path = input.path();
    let (bytes, summary) = without_gil(py, &shown.clone(), move || {
        let model = input.open()?;
        if let Some(out) = &out {
            onnx_bcast::onnx::save::destination(out).map_err(|e| Failure::Other(e.to_string()))?;
        }
        let (plan, pieces) = plan(&model).map_err(|e| match R::broken(&e) {
            Some(notes) => broken(&shown, notes, R::VERB),
            None if is_bind(&e) => Failure::Bind(format!("{shown}: {e}")),
            None => Failure::Other(format!("{shown}: {e}")),
        })?;
        interrupted()?;
        let target = out.as_deref().map_or(driver::Target::Memory, driver::Target::File);
        let bytes = match driver::write::<R>(&model, &plan, &pieces, path.as_deref(), target) {
            Ok(driver::Written::Bytes(bytes)) => Some(bytes),
            Ok(_) => None,
            Err(driver::WriteError::Layout(e)) => return Err(Failure::Other(format!("{shown}: {e}"))),
            Err(e) => return Err(Failure::Other(e.to_string())),
        };
        let written = out.as_ref().map(|p| p.display().to_string());
        Ok((bytes, summary(&shown, written.as_deref(), &plan)))
    })?;
    Ok((bytes.map(|b| PyBytes::new(py, &b).unbind()), summary))
}

/// Writes every inferred shape into the model (`onnx-bcast infer`); `out` as for `expand`.
#[pyfunction]
#[pyo3(signature = (model, out, overwrite_declared, name=None, bind=Vec::new()))]
fn infer(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    out: Option<PathBuf>,
    overwrite_declared: bool,
    name: Option<String>,
    bind: Vec<(String, u64)>,
) -> PyResult<Rewritten> {
    let input = Input::from_py(model, name, Vec::new())?;
    let options = onnx_bcast::rewrite::annotate::InferOptions {
        bindings: bindings(&bind)?.bindings,
        overwrite_declared,
        ranges: Default::default(),
    };
    rewritten::<Annotate<'static>>(
        py,
        input,
        out,
        move |model| driver::rewrite(&Annotate(&options), model),
        |e| matches!(e, InferError::Bind(_)),
        |shown, written, plan| onnx_bcast::render::infer::infer_json(shown, written, &plan.summary).to_string(),
    )
}

/// Removes the explicit broadcasts every consumer performs anyway (`onnx-bcast fold`); `out` as for `expand`.
#[pyfunction]
#[pyo3(signature = (model, out, materialized, name=None))]
fn fold(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    out: Option<PathBuf>,
    materialized: bool,
    name: Option<String>,
) -> PyResult<Rewritten> {
    let input = Input::from_py(model, name, Vec::new())?;
    let options = onnx_bcast::rewrite::fold::FoldOptions { materialized };
    rewritten::<Fold>(
        py,
        input,
        out,
        move |model| driver::rewrite(&Fold(options), model),
        |_| false,
        |shown, written, plan| onnx_bcast::render::fold::fold_json(shown, written, &plan.summary).to_string(),
    )
}

/// The text of `onnx-bcast explain CODE`, or of the list of codes without one; `None` for a name that is no code.
#[pyfunction]
#[pyo3(signature = (code=None))]
fn explain(code: Option<&str>) -> Option<String> {
    match code {
        None => Some(onnx_bcast::render::explain::list()),
        Some(name) => onnx_bcast::diagnostic::Code::from_name(name).map(onnx_bcast::render::explain::text),
    }
}

/// The models `onnx-bcast check FOLDER` checks, in its order (every `.onnx` file below it, hidden and ignored paths
/// left out); a folder that cannot be read is an `(path, message)` pair in its place.
#[pyfunction]
fn find_models(py: Python<'_>, folder: PathBuf) -> Vec<(String, Option<String>)> {
    py.detach(|| {
        let (targets, _) = onnx_bcast::cli::config::find_models(
            &[folder],
            &onnx_bcast::cli::config::Exclude::default(),
            onnx_bcast::cli::config::Walk::default(),
        );
        targets
            .into_iter()
            .map(|t| match t {
                onnx_bcast::cli::config::Target::Model(path) => (path.display().to_string(), None),
                onnx_bcast::cli::config::Target::Unreadable { path, message } => {
                    (path.display().to_string(), Some(format!("{}: {message}", path.display())))
                }
            })
            .collect()
    })
}

/// The bench's (bench/python_overhead.py), not the package's (`onnx_bcast` does not export it): `model` opened as
/// `check` opens it (bytes with the initializers the Python half left out, or a path), then dropped; returns the
/// main graph's node count. It runs on the calling thread without the GIL, with no worker handover, so that it
/// times the library's decoding alone: the floor of `check(ModelProto)` is the serialization and this.
#[pyfunction]
#[pyo3(name = "_decode", signature = (model, left_out=Vec::new()))]
fn decode_only(py: Python<'_>, model: &Bound<'_, PyAny>, left_out: Vec<(usize, usize)>) -> PyResult<usize> {
    let input = Input::from_py(model, None, left_out)?;
    let nodes = py.detach(|| input.open().map(|m| m.proto().graph.as_ref().map_or(0, |g| g.node.len())))?;
    Ok(nodes)
}

/// The command line: `argv` as `sys.argv` gives it; returns the exit status. The GIL is let go, so the Python
/// process does nothing else meanwhile but can still exit cleanly afterwards.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| onnx_bcast::cli::main_from(argv))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    onnx_bcast::sys::panics::install_hook();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<report::NativeReport>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(shapes, m)?)?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    m.add_function(wrap_pyfunction!(infer, m)?)?;
    m.add_function(wrap_pyfunction!(fold, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(find_models, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(decode_only, m)?)?;
    let py = m.py();
    m.add("OnnxBcastError", py.get_type::<OnnxBcastError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("RefusedError", py.get_type::<RefusedError>())?;
    m.add("BindError", py.get_type::<BindError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}
