//! The command line's parts that are not its definition: each in its own module, so that `main.rs` stays the
//! definition and the dispatch.

pub mod completions;
