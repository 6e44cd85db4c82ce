//! The integration tests, one binary: each file beside this one is a module named after what it tests
//! (`cargo test --test it codes::` runs one of them). One binary links the crate and its test dependencies once,
//! where one binary per file linked them 45 times. `tests/memory.rs` stays apart: it measures a child's peak
//! memory, which counts its parent's.

mod common;
mod oracle;

/// `src/check/verify.rs`, compiled into `expand_battery` without the `verify` feature, names the crate's `onnx`
/// modules as `crate::onnx`: here they are.
mod onnx {
    pub use onnx_bcast::onnx::*;
}

mod backend_check;
mod broadcast_props;
mod cli;
mod codes;
mod completions;
mod config;
mod contradictions;
mod contrib;
mod contrib_requirements;
mod counted_sites;
mod crafted;
mod decode_paths;
mod deploy_models;
mod docs;
mod exit_codes;
mod expand_analysable;
mod expand_battery;
mod expand_conformance;
mod expand_functions;
mod external_data;
mod file_and_memory;
mod findings;
mod fixtures;
mod fold;
mod fold_corpus;
mod fuzz_regressions;
mod hostile;
mod hostile_names;
mod infer;
mod infer_corpus;
mod inference_patterns;
mod initializer_contents;
mod json_output;
mod layers;
mod malformed;
mod onnx_shape_tests;
mod pair_records;
mod python_package;
mod ranges;
mod ranges_corpus;
mod real_models;
mod robust;
mod roundtrip;
mod sarif;
mod shapes;
mod soundness;
mod spec_rules;
mod strict;
mod sym_props;
mod torch_models;
mod value_names;
mod walk_in_file_order;
