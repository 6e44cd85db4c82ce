//! The `onnx-bcast` command line: the definition is in `cli::args`, each command in a module of its own.

use std::io;
use std::process::ExitCode;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Freed pages go back to the OS at once rather than after mimalloc's default 10 ms: decoding a large model
/// leaves the decoder's spare list room behind (see `source::fit_name_lists`), and a chain of a million nodes
/// then peaks at 493 MiB instead of 503 (the goal is under 500 MiB); the 100,000-node check is no slower.
#[cfg(feature = "mimalloc")]
fn purge_freed_memory_at_once() {
    // `mi_option_purge_delay` in mimalloc 3's `mi_option_t` (libmimalloc-sys 0.1.49 names no constant for it).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: sets one of mimalloc's numeric options; any value is valid, and options may be set at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

use clap::{CommandFactory, FromArgMatches};

mod cli;

use cli::args::Cli;
use cli::Status;

fn main() -> ExitCode {
    #[cfg(feature = "mimalloc")]
    purge_freed_memory_at_once();
    // A panic is a bug in onnx-bcast, never the user's fault: one `internal error` line names the model and the
    // place (see onnx_bcast::panics), and the run goes on with the next model or ends with exit 2.
    onnx_bcast::panics::install_hook();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // A panic outside every per-model guard (writing the output, say) has printed its line: exit 2, not 101.
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cli::run(cli, &matches)));
    let Ok(ran) = ran else { return ExitCode::from(Status::Failed as u8) };
    match ran {
        Ok(status) => ExitCode::from(status as u8),
        // A reader that stopped listening (`| head`) is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("onnx-bcast: error: {e}");
            ExitCode::from(Status::Failed as u8)
        }
    }
}
