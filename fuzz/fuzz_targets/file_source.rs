//! Arbitrary bytes written to a file → `Model::open` (pread window, large fields as map views) against
//! `Model::from_bytes` (the bytes in memory): both must accept or both refuse, and decode to the same model. When
//! they decode, the expansion read through the file (header walk through the window, tensor data written from map
//! windows) must give the same bytes as the one read from memory.
#![no_main]

use std::io::{Read, Seek, Write};
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use onnx_bcast::expand::{expand_model, ExpandOptions};
use onnx_bcast::model::Model;
use prost::Message;

/// One file per fuzzing process, rewritten for every input; on tmpfs when there is one.
fn scratch() -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    dir.join(format!("onnx-bcast-fuzz-{}.onnx", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    std::fs::File::create(&path).and_then(|mut f| f.write_all(data)).expect("write the scratch file");
    let from_file = Model::open(&path);
    let in_memory = Model::from_bytes(&path, bytes::Bytes::copy_from_slice(data));
    let (from_file, in_memory) = match (from_file, in_memory) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(_), Err(_)) => return,
        (a, b) => panic!("file and memory disagree: {:?} against {:?}", a.err(), b.err()),
    };
    // Compared encoded: a NaN in a tensor or attribute is not equal to itself.
    assert!(
        from_file.proto().encode_to_vec() == in_memory.proto().encode_to_vec(),
        "file and memory decode to different models"
    );

    let Ok((_, pieces)) = expand_model(&from_file, ExpandOptions::default()) else { return };
    let through_file = pieces.to_vec(from_file.source()).expect("read the scratch file");
    assert_eq!(through_file, pieces.to_vec(in_memory.bytes()).unwrap(), "reading through the window differs");
    let mut out = tempfile::tempfile().expect("a temporary file");
    pieces.write_to_file(from_file.source(), &mut out).expect("write the expansion");
    let mut written = Vec::new();
    out.rewind().and_then(|_| out.read_to_end(&mut written)).expect("read the expansion back");
    assert_eq!(written, through_file, "write_to_file differs from to_vec");
});
