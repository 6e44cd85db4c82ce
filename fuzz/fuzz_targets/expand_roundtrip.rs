//! Arbitrary bytes → decode → expand. For every model that decodes: expanding never panics, the rewritten bytes
//! decode again (as a model with a graph), the rewrite is deterministic (same input, same bytes), and expanding
//! the rewritten model again does not panic either (nor, when it succeeds, produce undecodable bytes). The body is
//! `oracle::models::expand_roundtrip`, which tests/it/fuzz_regressions.rs replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/oracle/mod.rs"]
mod oracle;

fuzz_target!(|data: &[u8]| oracle::models::expand_roundtrip(data));
