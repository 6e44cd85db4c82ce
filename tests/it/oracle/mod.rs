//! What must hold, shared by the tests and the fuzz targets (`fuzz/fuzz_targets/*.rs` include this folder with
//! `#[path]`), so that a fuzz target and the replay of its regressions (tests/it/fuzz_regressions.rs) cannot drift
//! apart: `rules` for the broadcast rules, `models` for bytes read as a model, `rewrites` for bytes read by `infer`,
//! `fold` and `--bind`, `sym` for the symbolic size algebra.
#![allow(dead_code)]

pub mod models;
pub mod rewrites;
pub mod rules;
pub mod sym;
