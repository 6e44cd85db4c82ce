//! Ops whose inputs break what their specification requires (or meet it only under conditions), as the walk meets
//! them: the inference rule reports it ([`crate::infer::require`]), the walk records where, and a certain
//! contradiction makes the node's outputs [`ValueFacts::contradicted`], so that nothing is derived through it.

use super::scope::Env;
use super::site::reported_owned;
use super::walker::Walker;
use super::*;
use crate::infer::{Contradiction, Operand};

/// A contradiction at one node, where `check` reports it.
#[derive(Clone, Debug)]
pub struct ShapeFinding {
    /// The graph it is reported in ("main", "main/NODE/ATTR"); inside a function, the calling node's graph.
    pub graph: String,
    /// The node's name or `#INDEX (OP)`; inside a function, the calling node.
    pub node: String,
    pub node_index: usize,
    pub op: String,
    /// The chain of model-local function calls the node sits in, outermost first.
    pub functions: Vec<FunctionFrame<'static>>,
    /// Every input of the node by position (an absent optional input with an empty name).
    pub inputs: Vec<Operand>,
    pub contradiction: Contradiction,
}

impl ShapeFinding {
    pub fn code(&self) -> Code {
        self.contradiction.code()
    }

    /// The finding's message: inside a function, the functions and nodes it is in first.
    pub fn message(&self) -> crate::sys::escape::Message {
        use crate::sys::escape::name;
        let prefix: String = self
            .functions
            .iter()
            .map(|f| format!("in function {} (node {}): ", name(&f.function), name(&f.node)))
            .collect();
        crate::sys::escape::Message::from(prefix + &self.contradiction.message(&self.inputs))
    }
}

/// An inference rule, or a check of what an op requires, run on a node's [`infer::Ctx`].
pub(super) type Rule = fn(&mut infer::Ctx<'_, '_>) -> Option<Vec<ValueFacts>>;

impl<'m> Walker<'m, '_> {
    /// Runs `rule` on a node: the outputs it infers, and what it found broken or conditional.
    pub(super) fn run_rule(
        &mut self,
        env: &Env<'m, '_>,
        (node, attrs): (&'m NodeProto, Attrs<'m>),
        refs: &[Option<&ValueFacts>],
        subgraphs: &[(&'m str, Vec<ValueFacts>)],
        rule: impl FnOnce(&mut infer::Ctx<'_, '_>) -> Option<Vec<ValueFacts>>,
    ) -> (Option<Vec<ValueFacts>>, Vec<Contradiction>) {
        let mut fresh = || super::walker::fresh_symbol(&mut self.fresh);
        let mut ctx = infer::Ctx {
            op: node.op_type(),
            opset: env.opset,
            attrs,
            inputs: refs,
            outputs: node.output.len(),
            subgraphs,
            fresh: &mut fresh,
            contradictions: Default::default(),
        };
        let inferred = rule(&mut ctx);
        (inferred, ctx.contradictions.into_inner())
    }

    /// `outputs`, or after a certain contradiction among `found` (which is recorded) facts that say only that.
    pub(super) fn checked(
        &mut self,
        env: &Env<'m, '_>,
        index: usize,
        node: &'m NodeProto,
        refs: &[Option<&ValueFacts>],
        found: Vec<Contradiction>,
        outputs: Vec<ValueFacts>,
    ) -> Vec<ValueFacts> {
        match self.record_contradictions(env, index, node, refs, found) {
            true => vec![ValueFacts::contradicted(); node.output.len()],
            false => outputs,
        }
    }

    /// Records what a node's rule found broken or conditional; whether any of it is certain (then the node's
    /// outputs are contradicted).
    pub(super) fn record_contradictions(
        &mut self,
        env: &Env<'m, '_>,
        index: usize,
        node: &'m NodeProto,
        inputs: &[Option<&ValueFacts>],
        found: Vec<Contradiction>,
    ) -> bool {
        if found.is_empty() {
            return false;
        }
        let certain = found.iter().any(Contradiction::is_certain);
        let (graph, node_name, node_index, functions) = reported_owned(env, node, index);
        let operands: Vec<Operand> = node
            .input
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let facts = inputs.get(i).copied().flatten();
                Operand {
                    name: name.to_string(),
                    shape: facts.map_or_else(Shape::unranked, |f| f.shape.clone()),
                    value: facts.and_then(|f| f.value.clone()),
                }
            })
            .collect();
        // A certain contradiction says it all: the conditions found beside it are about a node that never runs.
        let kept = found.into_iter().filter(|c| !certain || c.is_certain());
        for contradiction in kept {
            self.out.contradictions.push(ShapeFinding {
                graph: graph.clone(),
                node: node_name.clone(),
                node_index,
                op: node.op_type().to_string(),
                functions: functions.clone(),
                inputs: operands.clone(),
                contradiction,
            });
        }
        certain
    }

    /// A graph input whose initializer (its default) contradicts its declared element type, rank or a size: the
    /// note, and whether the value is then contradicted.
    pub(super) fn initializer_contradicts(
        &mut self,
        env: &Env<'m, '_>,
        name: &str,
        declared: Option<&ValueInfoProto>,
        from_tensor: &ValueFacts,
    ) -> bool {
        let Some(vi) = declared else { return false };
        // As written: a size `--bind` gives the input is the caller's override of the default, not a contradiction.
        let written = tensor::facts_from_type(vi.r#type.as_ref(), &mut Vec::new(), false);
        if tensor::contradiction(from_tensor, &written).is_none() {
            return false;
        }
        let elem = |e: Option<i32>| e.map_or_else(|| "?".to_string(), tensor::elem_type_name);
        let msg = format!(
            "input '{name}' is declared {} {} where its initializer is {} {}",
            elem(written.elem),
            written.shape,
            elem(from_tensor.elem),
            from_tensor.shape
        );
        self.note(env, Code::InitializerMismatch, None, msg);
        true
    }
}
