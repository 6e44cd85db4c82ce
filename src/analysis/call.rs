//! Calls of model-local functions: the body walked at each call site, memoised by signature and bounded.

use super::scope::{Body, CallContext, Env};
use super::walker::Walker;
use super::*;
use crate::onnx::location::node_label;
use crate::sys::escape::name as shown;

/// `domain.name` of a function, as messages name it.
fn qualified(f: &FunctionProto) -> String {
    format!("{}.{}", f.domain(), f.name())
}

/// A node that calls a model-local function: its position and the function's.
#[derive(Clone, Copy)]
pub(super) struct Call<'m> {
    pub index: usize,
    pub node: &'m NodeProto,
    pub function_index: usize,
    pub f: &'m FunctionProto,
}

impl<'m> Walker<'m, '_> {
    /// Walks a model-local function's body with the facts of this call's inputs.
    pub(super) fn call(
        &mut self,
        env: &Env<'m, '_>,
        call: Call<'m>,
        inputs: Vec<Option<ValueFacts>>,
    ) -> Vec<ValueFacts> {
        let Call { index, node, function_index, f } = call;
        let memo_key = crate::analysis::calls::memo_key(function_index, node, env.opset, &inputs);
        if let Some(outputs) = memo_key.as_ref().and_then(|k| self.calls.memo.get(k)) {
            return outputs.clone();
        }
        if let crate::analysis::calls::Spend::Stop(message) = self.calls.spend(f) {
            if let Some(msg) = message {
                self.note(env, Code::NestingTooDeep, Some((node, index)), msg);
            }
            return vec![ValueFacts::unknown(); node.output.len()];
        }
        let fresh_before = self.fresh;
        let outputs = self.walk_call(env, call, inputs);
        // Outputs that hold symbols made during this call stand for this call's sizes only: never reused.
        if let (Some(k), true) = (memo_key, self.fresh == fresh_before) {
            self.calls.memo.insert(k, outputs.clone());
        }
        outputs
    }

    /// Walks a function body for [`Walker::call`], which memoises and budgets the walks.
    fn walk_call(&mut self, env: &Env<'m, '_>, call: Call<'m>, inputs: Vec<Option<ValueFacts>>) -> Vec<ValueFacts> {
        let Call { index, node, function_index, f } = call;
        let key = (f.domain(), f.name());
        let unknown = || vec![ValueFacts::unknown(); node.output.len()];
        if self.active.contains(&key) {
            let msg = format!("function {} calls itself; its body is not followed again", shown(&qualified(f)));
            self.note(env, Code::RecursiveFunction, Some((node, index)), msg);
            return unknown();
        }
        if env.depth >= MAX_NESTING {
            let msg = format!(
                "function calls and subgraphs nest deeper than {MAX_NESTING} levels; the body of {} is not checked here",
                shown(&qualified(f))
            );
            self.note(env, Code::NestingTooDeep, Some((node, index)), msg);
            return unknown();
        }
        let qualified =
            if f.domain().is_empty() { f.name().to_string() } else { format!("{}.{}", f.domain(), f.name()) };
        let context = match env.call {
            Some(outer) => CallContext {
                attrs: CallSite::of(node, &f.attribute_proto),
                graph: outer.graph.clone(),
                node: outer.node.clone(),
                node_index: outer.node_index,
                frames: outer.frames.iter().cloned().chain([qualified]).collect(),
                inner_nodes: outer.inner_nodes.iter().cloned().chain([node_label(node, index)]).collect(),
            },
            None => CallContext {
                attrs: CallSite::of(node, &f.attribute_proto),
                graph: env.path.clone(),
                node: node_label(node, index),
                node_index: index,
                frames: vec![qualified],
                inner_nodes: Vec::new(),
            },
        };
        let body = Body {
            nodes: &f.node,
            inputs: f
                .input
                .iter()
                .zip(inputs.into_iter().chain(std::iter::repeat(None)))
                .map(|(name, facts)| (name.as_str(), facts.unwrap_or_default()))
                .collect(),
            initializers: &[],
            sparse_initializers: &[],
            declared: f.value_info.iter().collect(),
            declared_inputs: 0,
            outputs: f.output.iter().map(String::as_str).collect(),
            // A function body's facts depend on the call: recorded per call only when asked (`infer`).
            record: self.function_facts,
        };
        let opset = default_opset(&f.opset_import).unwrap_or(env.opset);
        let inner = Env {
            path: format!("{}/{}", env.path, node_label(node, index)),
            loc: vec![GraphStep::Function(function_index)],
            outer: &[],
            opset,
            call: Some(&context),
            depth: env.depth + 1,
        };
        self.active.push(key);
        let outputs = self.body(&inner, body);
        self.active.pop();
        let mut outputs = outputs;
        outputs.resize_with(node.output.len(), ValueFacts::unknown);
        outputs
    }
}
