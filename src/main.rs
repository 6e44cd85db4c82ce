//! The `onnx-bcast` command line. The program is the library's `cli` module (the Python wheel runs the same code);
//! the binary adds the allocator.

use std::process::ExitCode;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(onnx_bcast::cli::main_from(std::env::args_os()))
}
