//! onnx-bcast: make broadcasting in ONNX models visible, checked and explicit.

pub mod model;

pub mod proto {
    //! The ONNX wire schema, generated from `proto/onnx.proto`. Only the loader and writer touch it directly.
    #![allow(clippy::all, missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
}
pub mod analysis;
pub mod attr;
pub mod broadcast;
pub mod check;
pub mod diagnostic;
pub mod dot;
pub mod expand;
pub mod external;
pub mod gen;
pub mod infer;
pub mod materialize;
pub mod ops;
pub mod render;
pub mod shape;
pub mod sym;
pub mod tensor;
#[cfg(feature = "verify")]
pub mod verify;
pub mod wire;
