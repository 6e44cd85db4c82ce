//! What a panic (a bug in onnx-bcast, never the user's fault) looks like to the user: one line,
//! `onnx-bcast: internal error: MODEL: MESSAGE (at FILE:LINE)`, and the run goes on with the next model.
//!
//! The hook records where a panic happened. Inside [`guard`] (around each model's work) it prints nothing and the
//! guard hands the message and place back to the caller, which reports it for its model (stderr, JSON, SARIF);
//! anywhere else (writing the output, say) the hook prints the line itself, naming the model set with
//! [`about`] if there is one.

use std::cell::RefCell;

thread_local! {
    /// Set while a [`guard`] runs on this thread.
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The last panic's message and place on this thread.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The model this thread works on outside a guard, for the hook's line.
    static MODEL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The panic's message and where it happened: `index out of bounds (at src/wire.rs:120)`.
fn describe(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unexpected failure".into());
    match info.location() {
        Some(at) => format!("{message} (at {}:{})", at.file(), at.line()),
        None => message,
    }
}

/// Installs the hook; see the module documentation.
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let described = describe(info);
        if GUARDED.with(|g| g.get()) {
            LAST.with(|l| *l.borrow_mut() = Some(described));
            return;
        }
        let model = MODEL.with(|m| m.borrow().clone());
        // The model's path and the panic's message may hold anything a file or a model names.
        let line = match model {
            Some(model) => format!("onnx-bcast: internal error: {model}: {described}"),
            None => format!("onnx-bcast: internal error: {described}"),
        };
        eprintln!("{}", crate::sys::escape::one_line(&line));
    }));
}

/// Runs `f`; a panic in it comes back as its message and place instead of unwinding further.
pub fn guard<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let was = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    result.map_err(|payload| {
        LAST.with(|l| l.borrow_mut().take()).unwrap_or_else(|| {
            payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unexpected failure".into())
        })
    })
}

/// Runs `f` with `model` named in the line of a panic outside any guard.
pub fn about<T>(model: &str, f: impl FnOnce() -> T) -> T {
    let was = MODEL.with(|m| m.replace(Some(model.to_string())));
    let result = f();
    MODEL.with(|m| *m.borrow_mut() = was);
    result
}

/// Panics on purpose when `ONNX_BCAST_TEST_PANIC` names `place`: the tests' way to prove that a panic there is
/// reported as promised. Costs one environment lookup.
pub fn test_point(place: &str) {
    if std::env::var_os("ONNX_BCAST_TEST_PANIC").is_some_and(|v| v == place) {
        panic!("test panic at {place}");
    }
}
