//! The `onnx-bcast` command line: the definition is in `cli::args`, each command in a module of its own.

use std::io;
use std::process::ExitCode;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// For a large model, freed pages go back to the OS at once rather than after mimalloc's default second: decoding
/// leaves the decoder's spare list room behind (see `source::fit_name_lists`), and a chain of a million nodes (36
/// MB) then peaks at 493 MiB instead of 555 (503 at a 10 ms delay; the goal is under 500 MiB). Small models keep the
/// default: purging at once refaults pages that are reused straight after, and cost the 100,000-node check (7.6
/// MB) 15-25% of its time. `MIMALLOC_PURGE_DELAY` in the environment, mimalloc's own way to set it, still wins.
#[cfg(feature = "mimalloc")]
fn purge_freed_memory_at_once_for_large_models(command: &cli::args::Command) {
    use cli::args::Command;
    const LARGE: u64 = 32 << 20;
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    let paths: &[std::path::PathBuf] = match command {
        Command::Check(a) => &a.models,
        Command::Shapes(a) => &a.models,
        Command::Expand(a) => std::slice::from_ref(&a.input),
        _ => &[],
    };
    // Named files only: a folder's models are many and mostly small.
    let large = paths.iter().any(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > LARGE));
    if !large {
        return;
    }
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
    // A panic is a bug in onnx-bcast, never the user's fault: one `internal error` line names the model and the
    // place (see onnx_bcast::panics), and the run goes on with the next model or ends with exit 2.
    onnx_bcast::panics::install_hook();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    #[cfg(feature = "mimalloc")]
    purge_freed_memory_at_once_for_large_models(&cli.command);
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
