//! Compiles `proto/onnx.proto` with protox (pure Rust, so a fresh machine needs no `protoc`) and prost-build.
//! Every `bytes` field becomes `bytes::Bytes`, so decoding from a memory map shares the mapping instead of copying.
//! `NodeProto` is the crate's own compact type (`src/onnx/pb/node.rs`); prost's generated one is written apart
//! (`reference/onnx.rs`) for the tests that prove the two encode and decode alike.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    let descriptors = protox::compile(["proto/onnx.proto"], ["proto"])?;
    prost_build::Config::new()
        .bytes(["."])
        .extern_path(".onnx.NodeProto", "crate::onnx::pb::node::NodeProto")
        .compile_fds(descriptors.clone())?;
    let reference = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("reference");
    std::fs::create_dir_all(&reference)?;
    prost_build::Config::new().bytes(["."]).out_dir(reference).compile_fds(descriptors)?;
    Ok(())
}
