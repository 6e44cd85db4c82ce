//! The command line's parts that are not its definition: each in its own module, so that `main.rs` stays the
//! definition and the dispatch.

pub mod check;
pub mod completions;
pub mod progress;
pub mod run;
pub mod sink;

use clap::builder::{PossibleValue, PossibleValuesParser};

use onnx_bcast::diagnostic::Code;

/// `check` and `expand` read sites, not the facts of every value.
pub const SITES_ONLY: onnx_bcast::analysis::Options = onnx_bcast::analysis::Options { value_facts: false };

/// Exit statuses, ordered so that the worst of several models wins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Clean = 0,
    Findings = 1,
    Failed = 2,
}

/// `all` and every diagnostic code (without `all` for `explain`), each with its summary for completions.
pub fn code_parser(with_all: bool) -> PossibleValuesParser {
    let all = with_all.then(|| PossibleValue::new("all").help("every code"));
    let codes = Code::ALL.iter().map(|&c| PossibleValue::new(c.as_str()).help(onnx_bcast::explain::summary(c)));
    PossibleValuesParser::new(all.into_iter().chain(codes))
}

pub fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unexpected failure".into())
}
