//! A broadcasting site as evaluated: the node, its kind and resolved attributes, its inputs' shapes and types,
//! the rule it follows and the rule's verdict. `analysis` makes sites; `check` words them and `expand` rewrites
//! them.
//!
//! A site borrows its names and its inputs' shapes from the model and the walk (`Site<'a>`): a walk of a hundred
//! thousand sites that are judged and dropped one by one then copies no name and no shape. What keeps a site beyond
//! the walk (an [`crate::analysis::Analysis`], a report that lists its sites) keeps [`Site::into_owned`]'s copy,
//! a `Site<'static>`.

use std::borrow::Cow;

use super::{Rule, Verdict, ViolationKind};
use crate::onnx::attr::Attrs;
use crate::onnx::model::NodeLoc;
use crate::rules::ops::SiteKind;
use crate::sizes::shape::Shape;
use crate::sys::escape::name;

/// One broadcasting node, evaluated.
#[derive(Clone, Debug)]
pub struct Site<'a> {
    /// The broadcasting node itself (inside a function body: in the body, not at the call).
    pub loc: NodeLoc,
    /// The graph the site is reported in: "main", or "main/NODE/ATTR" for a subgraph.
    pub graph: Cow<'a, str>,
    /// The reported node's name, or `#INDEX (OP)` for an unnamed one. Inside a function: the calling node.
    pub node: Cow<'a, str>,
    /// Position of the node in its graph's node list (the calling node's, inside a function).
    pub node_index: usize,
    pub op: Cow<'a, str>,
    /// How the node binds to its rule (plain numpy, Gemm's C, PRelu's slope, the legacy form, …), from the op table.
    pub kind: SiteKind,
    pub rule: Rule,
    /// Every present input of the node, in order (inline for the two of most ops).
    pub inputs: smallvec::SmallVec<[SiteInput<'a>; 2]>,
    /// The shape the rule broadcasts towards, when it is not an input: Gemm's (M, N), Expand's target value.
    pub target: Option<Shape>,
    pub output_shape: Cow<'a, Shape>,
    pub verdict: Verdict,
    /// Maps the rule's input positions to positions in `inputs` (`None`: the target, not an input).
    pub rule_inputs: super::RuleInputs,
    pub type_mismatch: Option<TypeMismatch>,
    /// The chain of model-local function calls the site sits in, outermost first.
    pub functions: Vec<FunctionFrame<'a>>,
    /// Default-domain opset the op was evaluated at.
    pub opset: i64,
    /// The attributes a rewrite of the site reads, resolved at this evaluation (inside a function, through the
    /// call's attributes).
    pub attrs: SiteAttrs,
}

/// Gemm's `transA`/`transB` and the legacy `axis` of a site, as evaluated: a function body's attribute references
/// are followed to the calling node, so two calls of one function may differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteAttrs {
    pub trans_a: bool,
    pub trans_b: bool,
    pub axis: Option<i64>,
}

impl SiteAttrs {
    pub fn of(attrs: Attrs<'_>) -> SiteAttrs {
        // Most broadcasting nodes have no attribute: three lookups found nothing.
        if attrs.is_empty() {
            return SiteAttrs { trans_a: false, trans_b: false, axis: None };
        }
        SiteAttrs {
            trans_a: attrs.int("transA").unwrap_or(0) != 0,
            trans_b: attrs.int("transB").unwrap_or(0) != 0,
            axis: attrs.int("axis"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SiteInput<'a> {
    pub name: Cow<'a, str>,
    pub shape: Cow<'a, Shape>,
    pub elem: Option<i32>,
}

/// Two inputs sharing a type variable with different element types (positions in `Site::inputs`).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeMismatch {
    pub input: usize,
    pub found: i32,
    pub against: usize,
    pub expected: i32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionFrame<'a> {
    /// `domain.name` of the function.
    pub function: Cow<'a, str>,
    /// The node inside the function body (at the innermost frame: the broadcasting node itself).
    pub node: Cow<'a, str>,
}

/// How a message writes the names it mentions: marked ([`crate::sys::escape::name`]) for the renderers that escape
/// and shorten them, or plain, as the model spells them (the text JSON output holds, made without the marks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameForm {
    Marked,
    Plain,
}

impl NameForm {
    /// Writes `text`, a name, in this form.
    pub fn write(self, out: &mut impl std::fmt::Write, text: &str) -> std::fmt::Result {
        match self {
            NameForm::Marked => write!(out, "{}", name(text)),
            NameForm::Plain => out.write_str(text),
        }
    }
}

/// A borrowed text or shape made independent of what it borrowed from.
fn owned<T: ToOwned + ?Sized>(c: Cow<'_, T>) -> Cow<'static, T> {
    Cow::Owned(c.into_owned())
}

impl Site<'_> {
    /// The site with its names and shapes copied: one that outlives the model and the walk.
    pub fn into_owned(self) -> Site<'static> {
        Site {
            loc: self.loc,
            graph: owned(self.graph),
            node: owned(self.node),
            node_index: self.node_index,
            op: owned(self.op),
            kind: self.kind,
            rule: self.rule,
            inputs: self.inputs.into_iter().map(SiteInput::into_owned).collect(),
            target: self.target,
            output_shape: owned(self.output_shape),
            verdict: self.verdict,
            rule_inputs: self.rule_inputs,
            type_mismatch: self.type_mismatch,
            functions: self.functions.into_iter().map(FunctionFrame::into_owned).collect(),
            opset: self.opset,
            attrs: self.attrs,
        }
    }

    /// The site borrowing what this one holds (a kept site judged again).
    pub fn borrowed(&self) -> Site<'_> {
        Site {
            loc: self.loc.clone(),
            graph: Cow::Borrowed(&self.graph),
            node: Cow::Borrowed(&self.node),
            node_index: self.node_index,
            op: Cow::Borrowed(&self.op),
            kind: self.kind,
            rule: self.rule,
            inputs: self.inputs.iter().map(SiteInput::borrowed).collect(),
            target: self.target.clone(),
            output_shape: Cow::Borrowed(&self.output_shape),
            verdict: self.verdict.clone(),
            rule_inputs: self.rule_inputs.clone(),
            type_mismatch: self.type_mismatch.clone(),
            functions: self.functions.iter().map(FunctionFrame::borrowed).collect(),
            opset: self.opset,
            attrs: self.attrs,
        }
    }
}

impl SiteInput<'_> {
    pub fn into_owned(self) -> SiteInput<'static> {
        SiteInput { name: owned(self.name), shape: owned(self.shape), elem: self.elem }
    }

    fn borrowed(&self) -> SiteInput<'_> {
        SiteInput { name: Cow::Borrowed(&self.name), shape: Cow::Borrowed(&self.shape), elem: self.elem }
    }
}

impl FunctionFrame<'_> {
    pub fn into_owned(self) -> FunctionFrame<'static> {
        FunctionFrame { function: owned(self.function), node: owned(self.node) }
    }

    fn borrowed(&self) -> FunctionFrame<'_> {
        FunctionFrame { function: Cow::Borrowed(&self.function), node: Cow::Borrowed(&self.node) }
    }
}

impl Site<'_> {
    /// The offending input (position in `inputs`) of a violation.
    pub fn offending_input(&self) -> Option<usize> {
        match &self.verdict {
            Verdict::Violation(v) if !matches!(v.kind, ViolationKind::Unsatisfiable { .. }) => {
                self.rule_inputs.get(v.input).copied().flatten()
            }
            Verdict::Violation(_) => None,
            _ => self.type_mismatch.as_ref().map(|m| m.input),
        }
    }
}

/// How sites are named in messages (names marked, see [`crate::sys::escape`]); the words of each rule's own messages are
/// in its file.
impl Site<'_> {
    /// The inputs in words: `A [2, 3] and B [4]`; Expand's data and its target shape.
    pub fn list_inputs(&self) -> String {
        let mut out = String::new();
        let _ = self.write_inputs(&mut out, NameForm::Marked);
        out
    }

    /// Writes [`Site::list_inputs`]'s words to `out`, the names in `form`, without a String of its own (a message
    /// built in place).
    pub fn write_inputs(&self, out: &mut impl std::fmt::Write, form: NameForm) -> std::fmt::Result {
        if let (Rule::Bidirectional, Some(data), Some(target)) = (self.rule, self.inputs.first(), &self.target) {
            form.write(out, &data.name)?;
            return write!(out, " {} and the target shape {target}", data.shape);
        }
        // A numpy site names the inputs it broadcasts (QLinearAdd's A and B, not its scales and zero points).
        let shown: smallvec::SmallVec<[&SiteInput; 4]> = match self.rule {
            Rule::Multidirectional => self.rule_inputs.iter().flatten().map(|&i| &self.inputs[i]).collect(),
            _ => self.inputs.iter().collect(),
        };
        if shown.is_empty() {
            return out.write_str("no inputs");
        }
        for (k, input) in shown.iter().enumerate() {
            match k {
                0 => {}
                _ if k + 1 == shown.len() => out.write_str(" and ")?,
                _ => out.write_str(", ")?,
            }
            form.write(out, &input.name)?;
            out.write_char(' ')?;
            input.shape.write_to(out)?;
        }
        Ok(())
    }

    /// The name (marked) and shape of rule input `input` (the offender of a violation).
    pub fn offender(&self, input: usize) -> (String, Shape) {
        self.rule_inputs
            .get(input)
            .copied()
            .flatten()
            .map(|i| (name(&self.inputs[i].name).to_string(), self.inputs[i].shape.clone().into_owned()))
            .unwrap_or_else(|| ("?".into(), Shape::unranked()))
    }

    /// [`Site::rule_input_name`] for a message: an input's name marked, or the target's label.
    pub fn rule_input_shown(&self, rule_input: usize) -> String {
        match self.rule_inputs.get(rule_input).copied().flatten() {
            Some(i) => name(&self.inputs[i].name).to_string(),
            None => super::unidirectional::target_name(self).into(),
        }
    }

    /// The name of rule input `rule_input`: an input's name, or the target when it is not an input.
    pub fn rule_input_name(&self, rule_input: usize) -> String {
        match self.rule_inputs.get(rule_input).copied().flatten() {
            Some(i) => self.inputs[i].name.to_string(),
            None => super::unidirectional::target_name(self).into(),
        }
    }
}

impl Site<'_> {
    /// What keeps a site undecided, input by input: `P's dims 0 and 2, X's rank`.
    pub fn unknown_parts(&self) -> String {
        let mut shapes: Vec<(String, &Shape)> =
            self.inputs.iter().map(|i| (name(&i.name).to_string(), &*i.shape)).collect();
        if let (Rule::Bidirectional, Some(target)) = (self.rule, &self.target) {
            shapes.truncate(1);
            shapes.push(("the target shape".into(), target));
        }
        let parts: Vec<String> = shapes
            .iter()
            .filter_map(|(name, shape)| match shape.dims() {
                None => Some(format!("{name}'s rank")),
                Some(dims) => {
                    let axes: Vec<String> = (0..dims.len())
                        .filter(|&a| matches!(dims[a], crate::sizes::shape::Dim::Unknown))
                        .map(|a| a.to_string())
                        .collect();
                    match axes.len() {
                        0 => None,
                        1 => Some(format!("{name}'s dim {}", axes[0])),
                        n => Some(format!("{name}'s dims {} and {}", axes[..n - 1].join(", "), axes[n - 1])),
                    }
                }
            })
            .collect();
        if parts.is_empty() {
            "some sizes".into()
        } else {
            parts.join(", ")
        }
    }

    /// Whose unknown dim an `UnknownOneOf` condition on rule input `input` is about, and on which axis of that value's
    /// own shape (the condition's `axis` counts from the left of the broadcast output): the input's name, or `None`
    /// for the target (Expand's shape value, Gemm's (M, N)).
    pub fn unknown_dim_owner(&self, input: usize, axis: usize) -> (Option<String>, usize) {
        let own = self
            .rule_inputs
            .get(input)
            .copied()
            .flatten()
            .filter(|_| !(self.rule == Rule::Bidirectional && input == 1));
        let (name, shape) = match (own, &self.target) {
            (Some(i), _) => (Some(self.inputs[i].name.to_string()), &*self.inputs[i].shape),
            (None, Some(target)) => (None, target),
            (None, None) => (Some(self.rule_input_name(input)), &*self.output_shape),
        };
        let rank = |s: &Shape| s.rank().unwrap_or(0);
        (name, (axis + rank(shape)).saturating_sub(rank(&self.output_shape)))
    }
}
