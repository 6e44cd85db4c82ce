//! Layer 7, the rewrites: [`expand`] makes implicit broadcasts explicit, [`fold`] removes explicit ones a consumer
//! performs anyway, [`annotate`] declares every inferred shape (`infer`). Each analyses the model, refuses a
//! broken one ([`refuse`]), plans an edit and hands it to [`crate::onnx::save`]; [`materialize`] writes a
//! constant at its broadcast shape for `expand` and `fold`.

pub mod annotate;
pub mod expand;
pub mod fold;
pub mod materialize;
pub mod refuse;
