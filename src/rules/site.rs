//! A broadcasting site as evaluated: the node, its kind and resolved attributes, its inputs' shapes and types,
//! the rule it follows and the rule's verdict. `analysis` makes sites; `check` words them and `expand` rewrites
//! them.

use super::{Rule, Verdict, ViolationKind};
use crate::onnx::attr::Attrs;
use crate::onnx::model::NodeLoc;
use crate::rules::ops::SiteKind;
use crate::sizes::shape::Shape;
use crate::sys::escape::name;

/// One broadcasting node, evaluated.
#[derive(Clone, Debug)]
pub struct Site {
    /// The broadcasting node itself (inside a function body: in the body, not at the call).
    pub loc: NodeLoc,
    /// The graph the site is reported in: "main", or "main/NODE/ATTR" for a subgraph.
    pub graph: String,
    /// The reported node's name, or `#INDEX (OP)` for an unnamed one. Inside a function: the calling node.
    pub node: String,
    /// Position of the node in its graph's node list (the calling node's, inside a function).
    pub node_index: usize,
    pub op: String,
    /// How the node binds to its rule (plain numpy, Gemm's C, PRelu's slope, the legacy form, …), from the op table.
    pub kind: SiteKind,
    pub rule: Rule,
    /// Every present input of the node, in order.
    pub inputs: Vec<SiteInput>,
    /// The shape the rule broadcasts towards, when it is not an input: Gemm's (M, N), Expand's target value.
    pub target: Option<Shape>,
    pub output_shape: Shape,
    pub verdict: Verdict,
    /// Maps the rule's input positions to positions in `inputs` (`None`: the target, not an input).
    pub rule_inputs: Vec<Option<usize>>,
    pub type_mismatch: Option<TypeMismatch>,
    /// The chain of model-local function calls the site sits in, outermost first.
    pub functions: Vec<FunctionFrame>,
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
        SiteAttrs {
            trans_a: attrs.int("transA").unwrap_or(0) != 0,
            trans_b: attrs.int("transB").unwrap_or(0) != 0,
            axis: attrs.int("axis"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SiteInput {
    pub name: String,
    pub shape: Shape,
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
pub struct FunctionFrame {
    /// `domain.name` of the function.
    pub function: String,
    /// The node inside the function body (at the innermost frame: the broadcasting node itself).
    pub node: String,
}

impl Site {
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
impl Site {
    /// The inputs in words: `A [2, 3] and B [4]`; Expand's data and its target shape.
    pub fn list_inputs(&self) -> String {
        if let (Rule::Bidirectional, Some(data), Some(target)) = (self.rule, self.inputs.first(), &self.target) {
            return format!("{} {} and the target shape {target}", name(&data.name), data.shape);
        }
        // A numpy site names the inputs it broadcasts (QLinearAdd's A and B, not its scales and zero points).
        let shown: Vec<&SiteInput> = match self.rule {
            Rule::Multidirectional => self.rule_inputs.iter().flatten().map(|&i| &self.inputs[i]).collect(),
            _ => self.inputs.iter().collect(),
        };
        let parts: Vec<String> = shown.iter().map(|i| format!("{} {}", name(&i.name), i.shape)).collect();
        match parts.len() {
            0 => "no inputs".into(),
            1 => parts[0].clone(),
            n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
        }
    }

    /// The name (marked) and shape of rule input `input` (the offender of a violation).
    pub fn offender(&self, input: usize) -> (String, Shape) {
        self.rule_inputs
            .get(input)
            .copied()
            .flatten()
            .map(|i| (name(&self.inputs[i].name).to_string(), self.inputs[i].shape.clone()))
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
            Some(i) => self.inputs[i].name.clone(),
            None => super::unidirectional::target_name(self).into(),
        }
    }
}

impl Site {
    /// What keeps a site undecided, input by input: `P's dims 0 and 2, X's rank`.
    pub fn unknown_parts(&self) -> String {
        let mut shapes: Vec<(String, &Shape)> =
            self.inputs.iter().map(|i| (name(&i.name).to_string(), &i.shape)).collect();
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
            (Some(i), _) => (Some(self.inputs[i].name.clone()), &self.inputs[i].shape),
            (None, Some(target)) => (None, target),
            (None, None) => (Some(self.rule_input_name(input)), &self.output_shape),
        };
        let rank = |s: &Shape| s.rank().unwrap_or(0);
        (name, (axis + rank(shape)).saturating_sub(rank(&self.output_shape)))
    }
}
