//! The floor of every command: opens and decodes models with the loader the commands use ([`Model::open`]: the file
//! mapped, headers read by `pread`, tensor data left in the map) and does nothing else. `bench/run.sh` times it
//! beside `check`, `expand` and the Python tools, so that what the analysis costs on top of decoding is a ratio of
//! two figures from the same run.
//!
//! ```text
//! cargo run --release --example decode_model -- MODEL...
//! ```
//!
//! It is an example rather than a (hidden) subcommand so that the command line's surface stays what the docs say,
//! and it uses the binary's allocator so that the floor is measured under the same conditions as the commands.

use std::process::ExitCode;

use onnx_bcast::onnx::model::Model;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: onnx_bcast::cli::alloc::Mimalloc = onnx_bcast::cli::alloc::Mimalloc;

fn main() -> ExitCode {
    // As the binary: one run, and the process exits after it.
    onnx_bcast::sys::this_process_is_one_command();
    let mut status = ExitCode::SUCCESS;
    let paths: Vec<_> = std::env::args_os().skip(1).collect();
    let only = paths.len() == 1;
    for path in paths {
        match Model::open(&path) {
            // The node count shows the model was decoded, and keeps the decoded model alive until it is known.
            Ok(model) => {
                println!("{}: {} nodes", model.path().display(), nodes(&model));
                // As `check` does with its only model: the process ends here, and freeing is not decoding.
                if only {
                    onnx_bcast::sys::exit_without_freeing(model);
                }
            }
            Err(e) => {
                eprintln!("decode_model: {e}");
                status = ExitCode::from(2);
            }
        }
    }
    status
}

fn nodes(model: &Model) -> usize {
    model.proto().graph.as_ref().map_or(0, |g| g.node.len())
}
