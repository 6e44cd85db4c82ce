//! The binary's parts: the command line's definition (`args`), one module per command (`check` with its runner
//! `run`, where results go `sink` and the `progress` bar; `shapes`, `expand`, `explain`, and `completions` with the
//! man page).

pub mod args;
pub mod check;
pub mod completions;
pub mod expand;
pub mod explain;
pub mod progress;
pub mod run;
pub mod shapes;
pub mod sink;

use std::io;

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

/// Runs the command the line names.
pub fn run(cli: Cli, matches: &clap::ArgMatches) -> io::Result<Status> {
    match cli.command {
        Command::Check(args) => {
            let check_matches = matches.subcommand_matches("check").expect("the check subcommand was parsed");
            check::command(&args, check_matches)
        }
        Command::Shapes(args) => shapes::command(&args),
        Command::Expand(args) => expand::command(args),
        Command::Explain(args) => explain::command(&args),
        Command::Completions { shell } => completions::completions(shell),
        Command::Man { out_dir } => completions::man(out_dir.as_deref()),
    }
}
