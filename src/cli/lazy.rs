//! A subcommand's flags defined only once that subcommand is parsed, its help shown or the whole tree generated
//! (completions, the man page): clap's [`clap::Command::defer`] behind the derive's `Args`.
//!
//! Every run defined the flags of all eight subcommands before parsing its line, a fifth of a process's start-up
//! (`onnx-bcast --version`: 159 K of 881 K instructions), though it parses one of them at most. The top level keeps
//! each subcommand's name and help line, so `--help`, a misspelt subcommand and its suggestion read as before.

use std::ops::{Deref, DerefMut};

use clap::builder::{Resettable, StyledStr};
use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The arguments `T` of a subcommand, defined when clap builds that subcommand (see the module's doc).
pub struct Lazy<T>(pub T);

impl<T> Lazy<T> {
    /// The arguments themselves.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T: Args> Args for Lazy<T> {
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }

    fn augment_args(cmd: Command) -> Command {
        cmd.defer(keeping_help::<T, false>)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd.defer(keeping_help::<T, true>)
    }
}

/// `T`'s flags added to `cmd` (for an update when `UPDATE`), its help paragraphs kept. Eagerly the derive adds the
/// flags first and then sets the subcommand's help from its variant's doc comment; deferred, the flags come after,
/// and a flattened struct's own doc comment (`RangeArgs`'s) would replace the subcommand's help.
fn keeping_help<T: Args, const UPDATE: bool>(cmd: Command) -> Command {
    let kept = |text: Option<&StyledStr>| text.cloned().map_or(Resettable::Reset, Resettable::Value);
    let (about, long_about) = (kept(cmd.get_about()), kept(cmd.get_long_about()));
    let cmd = if UPDATE { T::augment_args_for_update(cmd) } else { T::augment_args(cmd) };
    cmd.about(about).long_about(long_about)
}

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Lazy)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

impl<T> Deref for Lazy<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Lazy<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::cli::args::Cli;

    /// Every subcommand reads the same help once clap has built it (its flags added late) as the top level lists
    /// for it before, and has its flags then: a flattened struct's doc comment (`RangeArgs`'s) does not become the
    /// help of `check`, `shapes`, `expand` or `infer`.
    #[test]
    fn deferred_flags_keep_each_subcommand_s_help() {
        let listed = Cli::command();
        let mut built = Cli::command();
        built.build();
        for (before, after) in listed.get_subcommands().zip(built.get_subcommands()) {
            let name = before.get_name();
            let text = |s: Option<&clap::builder::StyledStr>| s.map(|s| s.to_string());
            assert_eq!(text(before.get_about()), text(after.get_about()), "{name}");
            assert_eq!(text(before.get_long_about()), text(after.get_long_about()), "{name}");
            assert!(after.get_arguments().any(|a| a.get_id() != "help"), "{name} has its flags once built");
        }
    }
}
