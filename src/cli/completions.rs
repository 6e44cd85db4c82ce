//! `onnx-bcast completions SHELL`: the script clap_complete generates, repaired where it is wrong for this binary.

use std::io::{self, Write};

/// The binary's name, as the shell sees it.
const BIN: &str = "onnx-bcast";

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
