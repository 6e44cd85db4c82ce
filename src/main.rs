//! The `onnx-bcast` command line: the definition is in `cli::args`, each command in a module of its own.

use std::io;
use std::process::ExitCode;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
