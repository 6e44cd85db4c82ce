//! `onnx-bcast completions SHELL` and `onnx-bcast man`: generated from the command line's definition. The bash
//! script clap_complete generates is repaired where it is wrong for this binary.

use std::io::{self, Write};
use std::path::Path;

use clap::CommandFactory;

use super::args::Cli;
use super::Status;

/// The binary's name, as the shell sees it.
const BIN: &str = "onnx-bcast";

/// `onnx-bcast completions SHELL`: the script on stdout.
pub fn completions(shell: clap_complete::Shell) -> io::Result<Status> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    write(shell, &mut Cli::command(), &mut out)?;
    out.flush()?;
    Ok(Status::Clean)
}

/// `onnx-bcast man`: onnx-bcast(1) on stdout, or with `out_dir` a page per subcommand there too.
pub fn man(out_dir: Option<&Path>) -> io::Result<Status> {
    let command = Cli::command();
    match out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            clap_mangen::generate_to(command, dir)?;
        }
        None => {
            let mut out = io::BufWriter::new(io::stdout().lock());
            clap_mangen::Man::new(command).render(&mut out)?;
            out.flush()?;
        }
    }
    Ok(Status::Clean)
}

/// Writes the completion script for `shell`.
pub fn write(shell: clap_complete::Shell, command: &mut clap::Command, out: &mut impl Write) -> io::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, command, BIN, &mut script);
    if shell == clap_complete::Shell::Bash {
        let text = String::from_utf8(script).map_err(io::Error::other)?;
        script = repair_bash(&text).into_bytes();
    }
    out.write_all(&script)
}

/// clap_complete's bash script escapes a hyphenated name in two ways (clap-rs/clap#6421): the loop over the words
/// sets `cmd="onnx__bcast__subcmd__check"` but the case labels read `onnx__subcmd__bcast__subcmd__check`, so
/// nothing completes after a subcommand. The labels are spelt the way the loop spells them; once clap_complete is
/// fixed there is nothing to replace.
fn repair_bash(script: &str) -> String {
    let loop_spelling = BIN.replace('-', "__");
    let label_spelling = BIN.replace('-', "__subcmd__");
    script.replace(&label_spelling, &loop_spelling)
}
