//! Arbitrary bytes written to a file → `Model::open` (pread window, large fields as map views) against
//! `Model::from_bytes` (the bytes in memory): both must accept or both refuse, and decode to the same model. When
//! they decode, the expansion read through the file (header walk through the window, tensor data written from map
//! windows) must give the same bytes as the one read from memory. The body is `oracle::models::file_source`,
//! which tests/it/fuzz_regressions.rs replays.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/oracle/mod.rs"]
mod oracle;

/// One file per fuzzing process, rewritten for every input; on tmpfs when there is one.
fn scratch() -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    dir.join(format!("onnx-bcast-fuzz-{}.onnx", std::process::id()))
}

fuzz_target!(|data: &[u8]| oracle::models::file_source(data, &scratch()));
