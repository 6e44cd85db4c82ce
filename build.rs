//! Compiles `proto/onnx.proto` with protox (pure Rust, so a fresh machine needs no `protoc`) and prost-build.
//! Every `bytes` field becomes `bytes::Bytes`, so decoding from a memory map shares the mapping instead of copying.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    let descriptors = protox::compile(["proto/onnx.proto"], ["proto"])?;
    prost_build::Config::new().bytes(["."]).compile_fds(descriptors)?;
    Ok(())
}
