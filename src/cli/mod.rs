//! The command line: its definition (`args`), one module per command (`check` with its runner `run`, where results
//! go `sink` and the `progress` bar; `shapes`, `expand`, `fold`, `explain`, and `completions` with the man page), and
//! [`main_from`], the whole program behind `main`. It is part of the library so that the Python wheel's
//! `onnx-bcast` command runs this very code, with the same flags, output and exit codes as the binary.

/// `eprintln!` for the command line's own messages, which name paths and models' names: the line as one-line
/// formats show text ([`onnx_bcast::sys::escape::one_line`]), so nothing a model or a file name holds reaches the
/// terminal or a CI log raw; as the terminal can show it (see [`charset`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::charset::eprint_line(&onnx_bcast::sys::escape::one_line(&format!($($arg)*)))
    };
}

/// [`say!`] for a line made of parts already shown as one-line formats show them (a [`onnx_bcast::render::brief`] line):
/// escaping it again would double its backslashes.
macro_rules! say_shown {
    ($($arg:tt)*) => {
        $crate::cli::charset::eprint_line(&format!($($arg)*))
    };
}

/// [`say!`] on stdout.
#[allow(unused_macros)]
macro_rules! tell {
    ($($arg:tt)*) => {
        println!("{}", onnx_bcast::sys::escape::one_line(&format!($($arg)*)))
    };
}

#[cfg(feature = "mimalloc")]
pub mod alloc;
pub mod args;
pub mod charset;
pub mod check;
pub mod completions;
pub mod config;
pub mod expand;
pub mod explain;
pub mod fold;
pub mod infer;
pub mod lazy;
pub mod progress;
pub mod rewrite;
pub mod run;
pub mod shapes;
pub mod sink;

use std::ffi::OsString;
use std::io;

use clap::{CommandFactory, FromArgMatches};

use args::{Cli, Command};

/// `check` and `expand` read sites, not the facts of every value.
pub const SITES_ONLY: onnx_bcast::analysis::Options = onnx_bcast::analysis::Options { value_facts: false };

/// Exit statuses, ordered so that the worst of several models wins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Clean = 0,
    Findings = 1,
    Failed = 2,
}

/// Opens the model at `path`, or reads one from standard input for `-` (`check -`, `shapes -`).
pub fn open_model(
    path: &std::path::Path,
) -> io::Result<Result<onnx_bcast::onnx::model::Model, onnx_bcast::onnx::model::LoadError>> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut io::stdin().lock(), &mut bytes)?;
        Ok(onnx_bcast::onnx::model::Model::from_bytes("-", bytes.into()))
    } else {
        Ok(onnx_bcast::onnx::model::Model::open(path))
    }
}

/// The findings that make a model broken (or a `--bind` contradicted), one line each on stderr, as `check` prints
/// them: the short names a line uses defined after it, and a flood of one code cut to its first few.
pub fn print_notes(shown: &str, notes: &[onnx_bcast::analysis::Note]) {
    let severity = |n: &onnx_bcast::analysis::Note| (n.code, n.code.default_severity());
    let (notes, more) = onnx_bcast::render::shown(notes, severity);
    for note in notes {
        let (line, legend) = onnx_bcast::render::brief::fit("", &onnx_bcast::rewrite::refuse::line(note));
        say_shown!("onnx-bcast: {}: {line}", onnx_bcast::sys::escape::text(shown));
        for line in legend {
            say_shown!("{line}");
        }
    }
    for (code, severity, n) in more {
        say!("onnx-bcast: {shown}: {}[{code}] {}", severity.as_str(), onnx_bcast::render::more_line(n));
    }
}

/// Runs the command the line names.
pub fn run(cli: Cli, matches: &clap::ArgMatches) -> io::Result<Status> {
    match cli.command {
        Command::Check(args) => {
            let check_matches = matches.subcommand_matches("check").expect("the check subcommand was parsed");
            check::command(&args, check_matches)
        }
        Command::Shapes(args) => shapes::command(&args),
        Command::Expand(args) => expand::command(args.into_inner()),
        Command::Infer(args) => infer::command(&args),
        Command::Fold(args) => fold::command(&args),
        Command::Explain(args) => explain::command(&args),
        Command::Completions { shell } => completions::completions(shell),
        Command::Man { out_dir } => completions::man(out_dir.as_deref()),
    }
}

/// The whole command line: parses `args` (the program name first), runs the command and returns the exit status.
/// Help, `--version` and usage errors print as clap prints them and return clap's status (0 or 2) rather than
/// exiting the process, so a host (the Python wheel) can flush its own buffers before it exits.
pub fn main_from<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // A panic is a bug in onnx-bcast, never the user's fault: one `internal error` line names the model and the
    // place (see crate::sys::panics), and the run goes on with the next model or ends with exit 2.
    crate::sys::panics::install_hook();
    let matches = match Cli::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(e) => return clap_exit(&e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    #[cfg(feature = "mimalloc")]
    purge_freed_memory_at_once_for_large_models(&cli.command);
    // A panic outside every per-model guard (writing the output, say) has printed its line: exit 2, not 101.
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli, &matches)));
    let Ok(ran) = ran else { return Status::Failed as u8 };
    match ran {
        Ok(status) => status as u8,
        // A reader that stopped listening (`| head`) is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            say!("onnx-bcast: error: {}", onnx_bcast::sys::platform::io_reason(&e));
            Status::Failed as u8
        }
    }
}

/// Prints a clap outcome (help, version or a usage error) and returns the status `Error::exit` would have used.
fn clap_exit(e: &clap::Error) -> u8 {
    let printed = e.print();
    if printed.as_ref().is_err_and(|e| e.kind() != io::ErrorKind::BrokenPipe) {
        return Status::Failed as u8;
    }
    u8::try_from(e.exit_code()).unwrap_or(Status::Failed as u8)
}

/// For a large model, freed pages go back to the OS at once rather than after mimalloc's default second: decoding
/// leaves the decoder's spare list room behind (see `source::fit_name_lists`), and a chain of a million nodes (36
/// MB) then peaks at 493 MiB instead of 555 (503 at a 10 ms delay; the goal is under 500 MiB). Smaller models keep
/// the default: purging at once refaults pages that are reused straight after, and cost the 100,000-node check (7.6
/// MB) 15-25% of its time (`expand` hands freed memory back once instead: see
/// [`hand_back_freed_memory_of_large_models`]). `MIMALLOC_PURGE_DELAY` in the environment, mimalloc's own way to
/// set it, still wins. It only matters where mimalloc is the global allocator (the binary, the Python extension).
#[cfg(feature = "mimalloc")]
fn purge_freed_memory_at_once_for_large_models(command: &Command) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    let paths: &[std::path::PathBuf] = match command {
        Command::Check(a) => &a.models,
        Command::Shapes(a) => &a.models,
        Command::Expand(a) => std::slice::from_ref(&a.input),
        Command::Infer(a) => std::slice::from_ref(&a.input),
        Command::Fold(a) => std::slice::from_ref(&a.input),
        _ => &[],
    };
    // Named files only: a folder's models are many and mostly small.
    let any_large = paths.iter().any(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > LARGE));
    if !any_large {
        return;
    }
    // `mi_option_purge_delay` in mimalloc 3's `mi_option_t` (libmimalloc-sys 0.1.49 names no constant for it).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: sets one of mimalloc's numeric options; any value is valid, and options may be set at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

/// A model this large (32 MB) has freed pages go back to the OS at once, whatever the command.
#[cfg(feature = "mimalloc")]
const LARGE: u64 = 32 << 20;

/// `expand` of a model over 4 MB, once its plan is made and before the splice: the pages the analysis and the
/// planner freed (their tables, the walk's records) go back to the OS in one call rather than after mimalloc's purge
/// delay, so that they do not count at the command's peak again with the output's pieces (nodes_100000: 124 MiB,
/// against 137 with the delay). Purging at every free did the same (1c7ea76) for 10-18% more time, most of it in the
/// kernel refaulting pages reused straight after; one purge here costs nothing measurable (sys time as with the
/// delay). `MIMALLOC_PURGE_DELAY` in the environment still wins: nothing is handed back early then.
pub fn hand_back_freed_memory_of_large_models(model: &onnx_bcast::onnx::model::Model) {
    #[cfg(feature = "mimalloc")]
    {
        const LARGE_TO_EXPAND: u64 = 4 << 20;
        if (model.bytes().len() as u64) <= LARGE_TO_EXPAND || std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: asks mimalloc to free what it holds unused now; nothing in use is touched.
        unsafe { libmimalloc_sys::mi_collect(true) }
    }
    #[cfg(not(feature = "mimalloc"))]
    let _ = model;
}
