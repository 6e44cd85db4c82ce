//! What walking model-local function calls may cost.
//!
//! A function body is walked once per call, with that call's input facts, because its shapes depend on them. A
//! function that calls another twice, K levels deep, is 2^K walks of the innermost body (a 2 KB model at K = 24
//! took minutes and gigabytes). Two defences:
//!
//! - **Memoisation**: a call with the same function, attributes, opset and input facts as one walked before gives
//!   the same output facts, so the body is walked once per distinct signature. (Findings inside the body are then
//!   reported for the first such call only; they are the same findings.) A call whose walk made fresh symbols is
//!   not memoised: those symbols stand for that call's sizes, and sharing them would equate sizes without proof.
//! - **A budget**: at most [`MAX_CALL_NODES`] function-body nodes are walked in all; past it, further calls are
//!   not followed (their outputs are unknown) and one `nesting-too-deep` finding says so.

use crate::onnx::pb::{FunctionProto, NodeProto};
use crate::onnx::tensor::ValueFacts;
use rustc_hash::FxHashMap as HashMap;

/// Function-body nodes walked through calls, at most.
pub const MAX_CALL_NODES: usize = 100_000;

#[derive(Default)]
pub struct Calls {
    /// Output facts by call signature.
    pub memo: HashMap<String, Vec<ValueFacts>>,
    walked: usize,
    exhausted: bool,
}

/// Whether a call may be walked.
pub enum Spend {
    Walk,
    /// Not walked; the message the first time only.
    Stop(Option<String>),
}

impl Calls {
    /// Counts the walk of `f`'s body, or refuses it once the budget has run out.
    pub fn spend(&mut self, f: &FunctionProto) -> Spend {
        if self.exhausted {
            return Spend::Stop(None);
        }
        self.walked += f.node.len().max(1);
        if self.walked <= MAX_CALL_NODES {
            return Spend::Walk;
        }
        self.exhausted = true;
        Spend::Stop(Some(format!(
            "model-local function calls unfold into more than {MAX_CALL_NODES} nodes; {} and the calls after it are not checked",
            crate::sys::escape::name(&format!("{}.{}", f.domain(), f.name()))
        )))
    }
}

/// The signature of a call, when it can be memoised: not when an attribute refers to the enclosing function's
/// (its value then depends on the outer call).
pub fn memo_key(function: usize, node: &NodeProto, opset: i64, inputs: &[Option<ValueFacts>]) -> Option<String> {
    let attributes = crate::onnx::attr::call_signature(node)?;
    Some(format!("{function}|{opset}|{attributes}|{inputs:?}"))
}
