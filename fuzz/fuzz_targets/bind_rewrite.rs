//! Arbitrary bytes read as a model by `--bind`: what must hold is `oracle::rewrites::bind_rewrite` (shared with the
//! replay of the regressions in tests/it/fuzz_regressions.rs); this file only hands the fuzzer's bytes over.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/oracle/mod.rs"]
mod oracle;

fuzz_target!(|data: &[u8]| oracle::rewrites::bind_rewrite(data));
