//! The graphs of `ModelProto.training_info` (ONNX `onnx.proto`, `TrainingInfoProto`: an `initialization` graph and
//! an `algorithm` graph per training step), walked for `check` and `shapes` after the main graph, under the paths
//! `training_info[I].initialization` and `training_info[I].algorithm`. They read the main graph's values by name
//! (its initializers, the tensors they update; `algorithm` may call the main graph as an op named after it), so
//! each is walked inside a scope holding every value the main graph defines: its initializers with their facts,
//! its inputs and node outputs as unknown values. A name neither defines is still an undefined value. The
//! rewrites (`expand`, `fold`, `infer`) leave these graphs as they are.

use super::scope::{Body, Env, Scope};
use super::walker::Walker;
use super::*;

impl<'m> Walker<'m, '_> {
    /// Walks every training graph of `model`, after its main graph.
    pub(super) fn training_graphs(&mut self, model: &'m ModelProto, opset: i64) {
        if model.training_info.is_empty() {
            return;
        }
        let main = model.graph.as_ref();
        let mut outer = Scope::unordered(0);
        if let Some(g) = main {
            for vi in &g.input {
                outer.define(vi.name(), ValueFacts::unknown());
            }
            for node in &g.node {
                node.output.iter().filter(|o| !o.is_empty()).for_each(|o| outer.define(o, ValueFacts::unknown()));
            }
            for t in &g.initializer {
                outer.define(t.name(), tensor::facts_from_tensor(t));
            }
        }
        for (info, t) in model.training_info.iter().enumerate() {
            for (algorithm, graph) in [(false, &t.initialization), (true, &t.algorithm)] {
                let Some(graph) = graph else { continue };
                let label = if algorithm { "algorithm" } else { "initialization" };
                let env = Env {
                    path: format!("training_info[{info}].{label}"),
                    loc: vec![GraphStep::Training { info, algorithm }],
                    outer: &[&outer],
                    opset,
                    call: None,
                    depth: 0,
                };
                self.body(&env, Body::graph(graph));
            }
        }
    }
}
