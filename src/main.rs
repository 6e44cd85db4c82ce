//! The `onnx-bcast` command line. The program is the library's `cli` module (the Python wheel runs the same code);
//! the binary adds the allocator.

use std::process::ExitCode;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: onnx_bcast::cli::alloc::Mimalloc = onnx_bcast::cli::alloc::Mimalloc;

fn main() -> ExitCode {
    // This process exits once its command is done: what it holds at the end need not be freed one block at a time.
    onnx_bcast::sys::this_process_is_one_command();
    #[cfg(feature = "mimalloc")]
    no_huge_pages_for_small_models();
    // A run of one command: a fresh huge page per size class of mimalloc's large pages costs more than pages of
    // their own (see `cli::alloc`).
    #[cfg(feature = "mimalloc")]
    onnx_bcast::cli::alloc::large_page_blocks_get_pages_of_their_own();
    // With the stack checks need, so that a check of one model runs here rather than on a thread of its own.
    ExitCode::from(onnx_bcast::cli::run::main_on_check_stack(|| onnx_bcast::cli::main_from(std::env::args_os())))
}

/// mimalloc asks for transparent huge pages on its arena, so each first touch of 2 MiB of heap clears all of it. A
/// run on a small model touches a few hundred KiB: clearing whole huge pages took up to a third of such a run's CPU
/// time (`bench/deploy_speed.py` times whole processes on models of a few KiB), while a large model's check gains
/// from them (fewer faults). So a run whose files are all small asks the kernel for no more huge pages; the one
/// mimalloc touched before `main` stays. Only the binary does this: the Python wheel runs in its host's process.
#[cfg(feature = "mimalloc")]
fn no_huge_pages_for_small_models() {
    const SMALL: u64 = 2 << 20;
    let mut files = std::env::args_os().skip(1).filter_map(|a| std::fs::metadata(a).ok());
    // A folder holds models of any size: leave it as it is.
    if files.all(|m| m.is_file() && m.len() <= SMALL) {
        onnx_bcast::sys::platform::no_more_huge_pages();
    }
}
