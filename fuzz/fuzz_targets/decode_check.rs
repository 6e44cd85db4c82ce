//! Arbitrary bytes → decode → analyze → check → render, as `onnx-bcast check` and `shapes` do. Nothing may
//! panic: decoding may refuse the bytes, everything after a successful decode must finish with a report. The body
//! is `oracle::models::decode_check`, which tests/it/fuzz_regressions.rs replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/oracle/mod.rs"]
mod oracle;

fuzz_target!(|data: &[u8]| oracle::models::decode_check(data));
