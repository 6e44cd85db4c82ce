//! Shape inference for ops that do not broadcast: a per-op table, opset-aware, split by op family.
//!
//! Each family module answers for the ops it knows and returns `None` for the rest; an op no module knows gets
//! outputs of unknown type and shape, never an error. Broadcasting ops get their output shapes from the broadcast
//! rules themselves (see `analysis`), and their values, when they compute shapes, from `values::broadcast_value`.

pub mod attention;
pub mod bodies;
pub mod contrib;
pub mod custom;
mod dispatch;
pub mod einsum;
pub mod elementwise;
pub mod image;
pub mod image_checks;
pub mod indexing;
pub mod layout;
pub mod math;
pub mod ml;
pub mod nn;
pub mod norm;
pub mod reduce;
pub mod require;
mod require_condition;
mod require_text;
pub mod reshape;
pub mod resize;
pub mod sequence;
pub mod signal;
pub mod slice;
pub mod text;
pub mod training;
pub mod valops;
pub mod value_range;
pub mod values;
pub mod window;

use crate::onnx::attr::Attrs;
use crate::onnx::tensor::{IntValue, ValueFacts};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

pub use require::{At, Contradiction, Detail, Malformed, Operand, RankNeed, Requirement, Verdict, Whence};

/// Everything an op's rule may look at.
pub struct Ctx<'a, 'm> {
    pub op: &'a str,
    /// Default-domain opset the node is evaluated at.
    pub opset: i64,
    pub attrs: Attrs<'m>,
    /// Facts of each input position (`None`: absent optional input, or nothing known).
    pub inputs: &'a [Option<&'a ValueFacts>],
    /// Number of outputs the node declares.
    pub outputs: usize,
    /// Output facts of each graph attribute (If branches, Loop/Scan bodies), by attribute name.
    pub subgraphs: &'a [(&'m str, Vec<ValueFacts>)],
    /// Makes a symbol that names no other size: for data-dependent sizes and sizes nothing determines.
    pub fresh: &'a mut dyn FnMut() -> Dim,
    /// What the op's specification requires and the inputs break, as the rule reports it ([`require`]).
    pub contradictions: std::cell::RefCell<Vec<Contradiction>>,
}

impl<'a, 'm> Ctx<'a, 'm> {
    pub fn input(&self, i: usize) -> Option<&'a ValueFacts> {
        self.inputs.get(i).copied().flatten()
    }

    /// Whether input `i` is given (present, even if nothing is known of it).
    pub fn has_input(&self, i: usize) -> bool {
        self.inputs.get(i).is_some_and(Option::is_some)
    }

    pub fn shape(&self, i: usize) -> Shape {
        self.input(i).map_or_else(Shape::unranked, |f| f.shape.clone())
    }

    pub fn dims(&self, i: usize) -> Option<&'a [Dim]> {
        self.input(i).and_then(|f| f.shape.dims())
    }

    pub fn rank(&self, i: usize) -> Option<usize> {
        self.dims(i).map(<[Dim]>::len)
    }

    pub fn elem(&self, i: usize) -> Option<i32> {
        self.input(i).and_then(|f| f.elem)
    }

    /// The contents of input `i`, when it is a small integer tensor.
    pub fn value(&self, i: usize) -> Option<&'a [IntValue]> {
        self.input(i).and_then(|f| f.value.as_deref())
    }

    /// The contents of input `i` when every element is a known constant.
    pub fn ints(&self, i: usize) -> Option<Vec<i64>> {
        self.value(i)?.iter().map(|v| v.as_ref()?.as_constant()).collect()
    }

    pub fn floats(&self, i: usize) -> Option<&'a [f64]> {
        self.input(i).and_then(|f| f.floats.as_deref())
    }

    pub fn fresh(&mut self) -> Dim {
        (self.fresh)()
    }

    /// The outputs of the graph attribute `name`.
    pub fn subgraph(&self, name: &str) -> Option<&'a [ValueFacts]> {
        self.subgraphs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_slice())
    }

    /// Integer attribute with a default.
    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.attrs.int(name).unwrap_or(default)
    }

    /// Axes from an attribute (before the opset that moved them to an input) or from input `input`.
    pub fn axes(&self, name: &str, input: usize) -> Option<Vec<i64>> {
        match self.attrs.ints(name) {
            Some(a) => Some(a.to_vec()),
            None if self.has_input(input) => self.ints(input),
            None => None,
        }
    }
}

/// An axis in `0..rank` from a possibly negative one.
pub fn normalize_axis(axis: i64, rank: usize) -> Option<usize> {
    let r = i64::try_from(rank).ok()?;
    let a = if axis < 0 { axis + r } else { axis };
    (0..r).contains(&a).then_some(a as usize)
}

/// An axis in `0..=rank` (an insertion point) from a possibly negative one.
pub fn normalize_insert_axis(axis: i64, rank: usize) -> Option<usize> {
    let r = i64::try_from(rank).ok()?;
    let a = if axis < 0 { axis + r + 1 } else { axis };
    (0..=r).contains(&a).then_some(a as usize)
}

/// A constant size.
pub(crate) fn c(n: i64) -> Poly {
    Poly::constant(n)
}

pub(crate) fn dim_of(p: Option<Poly>) -> Dim {
    p.map_or(Dim::Unknown, Dim::from_poly)
}

/// Dim `i` of `dims`, unknown when the rank is unknown or too small.
pub(crate) fn dim_at(dims: Option<&[Dim]>, i: usize) -> Dim {
    dims.and_then(|d| d.get(i).cloned()).unwrap_or(Dim::Unknown)
}

pub(crate) fn output_dtype(ctx: &Ctx<'_, '_>) -> Option<i32> {
    elem_attr(ctx, "output_dtype")
}

/// An element-type attribute (`to`, `dtype`, `stash_type`): `None` when absent, and when present but 0 (UNDEFINED,
/// which a field left unset reads as) or no type at all.
pub(crate) fn elem_attr(ctx: &Ctx<'_, '_>, name: &str) -> Option<i32> {
    ctx.attrs.int(name).filter(|&t| t > 0).and_then(|t| i32::try_from(t).ok())
}

/// A non-empty int list attribute.
pub(crate) fn ints_attr<'m>(ctx: &Ctx<'_, 'm>, name: &str) -> Option<&'m [i64]> {
    ctx.attrs.ints(name).filter(|v| !v.is_empty())
}

/// Checks what a broadcasting op requires beyond its broadcast, which its rule judges: Gemm's inner sizes.
pub fn validate_broadcasting(ctx: &Ctx<'_, '_>) {
    if requires_beyond_broadcasting(ctx.op) {
        nn::gemm_requirements(ctx);
    }
}

/// Whether [`validate_broadcasting`] has anything to check for a broadcasting op of the default domain: a walk
/// then skips the call for the others (most broadcasting nodes).
pub fn requires_beyond_broadcasting(op: &str) -> bool {
    op == "Gemm"
}

/// Infers the outputs of a non-broadcasting node; `None` when no rule knows the op.
pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let mut result = answer(ctx)?;
    result.resize_with(ctx.outputs, ValueFacts::unknown);
    result.truncate(ctx.outputs);
    Some(result)
}

/// The outputs the first op family that knows the op gives, as many as it gives: the families are asked in turn,
/// from the op's own when [`dispatch`] knows it.
fn answer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    dispatch::FAMILIES[dispatch::first_family(ctx.op)..].iter().find_map(|rule| rule(ctx))
}

/// Infers the outputs of a non-broadcasting node of `domain`: the default domain (then the few contrib ops
/// onnxruntime registers there, `SimplifiedLayerNormalization`), `ai.onnx.ml`, `ai.onnx.preview.training`,
/// `ai.onnx.preview`, and onnxruntime's contrib domains (`com.microsoft`, `com.microsoft.nchwc`); `None` when no
/// rule knows the op.
pub fn infer_in(domain: &str, ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let mut result: Vec<ValueFacts> = match domain {
        _ if crate::rules::ops::is_default_domain(domain) => {
            answer(ctx).or_else(|| contrib::infer(contrib::Domain::Onnx, ctx))
        }
        "ai.onnx.ml" => ml::infer(ctx),
        "ai.onnx.preview.training" => training::infer(ctx),
        "ai.onnx.preview" => attention::infer_preview(ctx),
        _ => contrib::infer(contrib::Domain::of(domain)?, ctx),
    }?;
    // Most rules give one output per output the node declares.
    if result.len() != ctx.outputs {
        result.resize_with(ctx.outputs, ValueFacts::unknown);
    }
    Some(result)
}

/// Whether some rule infers the outputs of `op` of `domain` at default-domain opset `opset`: a broadcasting op's
/// rule, or an inference rule of this module.
pub fn has_rule(domain: &str, op: &str, opset: i64) -> bool {
    if crate::rules::ops::broadcast_op(domain, op, opset).is_some() {
        return true;
    }
    with_bare_ctx(op, opset, |ctx| infer_in(domain, ctx).is_some())
}

/// `ask` of a context for `op` at `opset` with no attributes, no inputs and one output: what a rule answers when
/// it knows the op by name alone.
fn with_bare_ctx<R>(op: &str, opset: i64, ask: impl FnOnce(&mut Ctx<'_, '_>) -> R) -> R {
    let node = crate::onnx::pb::NodeProto::default();
    let mut fresh = || Dim::Unknown;
    let mut ctx = Ctx {
        op,
        opset,
        attrs: Attrs::new(&node, None),
        inputs: &[],
        outputs: 1,
        subgraphs: &[],
        fresh: &mut fresh,
        contradictions: Default::default(),
    };
    ask(&mut ctx)
}

#[cfg(test)]
mod attr_tests;
#[cfg(test)]
mod require_tests;
#[cfg(test)]
mod validate_tests;

/// Helpers for the op families' unit tests: attributes, input facts, and running one rule on them.
#[cfg(test)]
pub(crate) mod test_support {
    use super::Ctx;
    use crate::onnx::attr::Attrs;
    use crate::onnx::pb::{AttributeProto, NodeProto};
    use crate::onnx::tensor::ValueFacts;
    use crate::sizes::shape::Dim;

    /// A tensor of element type `elem` and these sizes, as an input to a rule.
    pub fn tensor(elem: i32, dims: &[u64]) -> Option<ValueFacts> {
        Some(ValueFacts::tensor(Some(elem), crate::sizes::shape::Shape::known(dims)))
    }

    pub fn ints(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto { name: Some(name.into()), ints: v.to_vec(), r#type: Some(7), ..Default::default() }
    }

    pub fn int(name: &str, v: i64) -> AttributeProto {
        AttributeProto { name: Some(name.into()), i: Some(v), r#type: Some(2), ..Default::default() }
    }

    /// An attribute that is present, of type `ty`, with its value field left unset.
    pub fn unset(name: &str, ty: crate::onnx::pb::attribute_proto::AttributeType) -> AttributeProto {
        AttributeProto { name: Some(name.into()), r#type: Some(ty as i32), ..Default::default() }
    }

    pub fn string(name: &str, v: &str) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            s: Some(bytes::Bytes::copy_from_slice(v.as_bytes())),
            r#type: Some(3),
            ..Default::default()
        }
    }

    /// Runs `rule` on a node of `op` with these attributes and inputs; fresh symbols are `?1`, `?2`, …
    pub fn run_rule(
        rule: fn(&mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>>,
        op: &str,
        opset: i64,
        attrs: Vec<AttributeProto>,
        inputs: &[Option<ValueFacts>],
        outputs: usize,
    ) -> Vec<ValueFacts> {
        run_rule_checked(rule, op, opset, attrs, inputs, outputs).0
    }

    /// [`run_rule`], with what the rule reported as broken or conditional.
    pub fn run_rule_checked(
        rule: fn(&mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>>,
        op: &str,
        opset: i64,
        attrs: Vec<AttributeProto>,
        inputs: &[Option<ValueFacts>],
        outputs: usize,
    ) -> (Vec<ValueFacts>, Vec<super::Contradiction>) {
        let node = NodeProto { op_type: Some(op.into()), attribute: attrs, ..Default::default() };
        let refs: Vec<Option<&ValueFacts>> = inputs.iter().map(Option::as_ref).collect();
        let mut counter = 0;
        let mut fresh = || {
            counter += 1;
            Dim::sym(&format!("?{counter}"))
        };
        let mut ctx = Ctx {
            op,
            opset,
            attrs: Attrs::new(&node, None),
            inputs: &refs,
            outputs,
            subgraphs: &[],
            fresh: &mut fresh,
            contradictions: Default::default(),
        };
        let mut out = rule(&mut ctx).expect("op is handled");
        out.resize_with(outputs, ValueFacts::unknown);
        out.truncate(outputs);
        (out, ctx.contradictions.into_inner())
    }
}
