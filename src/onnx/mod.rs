//! Layer 2, the ONNX model and its bytes: the generated schema ([`pb`]), reading a file's fields without touching
//! tensor data ([`source`], [`model`], the hot messages fast: [`decode`], lists sized first: [`presize`]), attributes ([`attr`]), element types and what tensors say ([`tensor`]),
//! external data ([`external`]), where a node is in words ([`location`]), names too long to read refused before
//! decoding ([`long_fields`]), and the way back to bytes: an edit
//! spliced into the original ([`wire`]) and written atomically beside its output ([`save`]).

pub mod attr;
pub mod decode;
pub mod external;
pub mod location;
pub mod long_fields;
pub mod model;
pub mod pb;
pub mod presize;
pub mod save;
pub mod source;
pub mod tensor;
pub mod wire;
