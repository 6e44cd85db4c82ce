//! Ops a user declares in the config file (`[ops."DOMAIN.OP"]` of `onnx-bcast.toml`): a team's own kernels or
//! TensorRT plugins, which no built-in rule knows. The vocabulary is small on purpose; each output of a declared op
//! gets
//!
//! - a shape: the same shape as input K (`"input K"`), the numpy broadcast of inputs I..J (`"broadcast I..J"`,
//!   inclusive: the node is then a broadcasting site like `Add`, judged by the multidirectional rule), or nothing
//!   known (`"opaque"`);
//! - an element type: input K's (`"input K"`), a fixed one (`"float"`, `"int64"`, …), or nothing known
//!   (`"opaque"`). Without one, an output takes the type of the first input its shape names.
//!
//! An op declared `opaque` is one the user has looked at: its outputs are unknown, but it is not reported as an
//! opaque node (the sites that depend on it still are undecided, so `--strict` stays proof).

use rustc_hash::FxHashMap as HashMap;

use super::Ctx;
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::Shape;

/// How a declared op's outputs are shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeRule {
    /// The shape of input K.
    Input(usize),
    /// numpy broadcasting of inputs `first..=last`: a broadcasting site.
    Broadcast { first: usize, last: usize },
    /// Nothing is known.
    Opaque,
}

/// The element type of a declared op's outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeRule {
    /// Input K's element type.
    Input(usize),
    /// This ONNX element type.
    Elem(i32),
    /// Nothing is known.
    Opaque,
}

/// One declared op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpDecl {
    pub shape: ShapeRule,
    pub elem: TypeRule,
}

/// The declared ops, by domain and op type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomOps {
    ops: HashMap<(String, String), OpDecl>,
}

/// Why a declaration cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeclError {
    #[error("`{0}` names no op: write \"DOMAIN.OP\" (the domain may itself contain dots)")]
    Name(String),
    #[error("shape `{0}`: expected \"input K\", \"broadcast I..J\" (I < J) or \"opaque\"")]
    Shape(String),
    #[error("type `{0}`: expected \"input K\", an element type (float, int64, ...) or \"opaque\"")]
    Type(String),
}

impl CustomOps {
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Declares `DOMAIN.OP` (split at its last dot: `com.example.Plugin` is op `Plugin` of `com.example`).
    pub fn declare(&mut self, name: &str, decl: OpDecl) -> Result<(), DeclError> {
        let (domain, op) = name.rsplit_once('.').ok_or_else(|| DeclError::Name(name.to_string()))?;
        if domain.is_empty() || op.is_empty() {
            return Err(DeclError::Name(name.to_string()));
        }
        let domain = if domain == "ai.onnx" { "" } else { domain };
        self.ops.insert((domain.to_string(), op.to_string()), decl);
        Ok(())
    }

    pub fn get(&self, domain: &str, op: &str) -> Option<&OpDecl> {
        if self.ops.is_empty() {
            return None;
        }
        let domain = if domain == "ai.onnx" { "" } else { domain };
        self.ops.get(&(domain.to_string(), op.to_string()))
    }
}

impl ShapeRule {
    /// Reads `input K`, `broadcast I..J` or `opaque`.
    pub fn parse(text: &str) -> Result<ShapeRule, DeclError> {
        let bad = || DeclError::Shape(text.to_string());
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["opaque"] => Ok(ShapeRule::Opaque),
            ["input", k] => k.parse().map(ShapeRule::Input).map_err(|_| bad()),
            ["broadcast", range] => {
                let (i, j) = range.split_once("..").ok_or_else(bad)?;
                let (first, last) = (i.parse().map_err(|_| bad())?, j.parse().map_err(|_| bad())?);
                if first < last && last < 64 {
                    Ok(ShapeRule::Broadcast { first, last })
                } else {
                    Err(bad())
                }
            }
            _ => Err(bad()),
        }
    }

    /// The first input the rule names.
    fn first_input(self) -> Option<usize> {
        match self {
            ShapeRule::Input(k) => Some(k),
            ShapeRule::Broadcast { first, .. } => Some(first),
            ShapeRule::Opaque => None,
        }
    }
}

impl TypeRule {
    /// Reads `input K`, an element type's name (as `onnx-bcast shapes` prints it) or `opaque`.
    pub fn parse(text: &str) -> Result<TypeRule, DeclError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["opaque"] => Ok(TypeRule::Opaque),
            ["input", k] => k.parse().map(TypeRule::Input).map_err(|_| DeclError::Type(text.to_string())),
            [name] => (1..=23)
                .find(|&e| crate::onnx::tensor::elem_type_name(e) == *name)
                .map(TypeRule::Elem)
                .ok_or_else(|| DeclError::Type(text.to_string())),
            _ => Err(DeclError::Type(text.to_string())),
        }
    }
}

impl OpDecl {
    /// The input positions a declared broadcast judges (a bit per position), when it is one.
    pub fn broadcast_inputs(&self) -> Option<u64> {
        match self.shape {
            ShapeRule::Broadcast { first, last } => Some((first..=last).fold(0u64, |m, i| m | 1 << i)),
            _ => None,
        }
    }

    /// The element type of the outputs, given the node's inputs.
    pub fn elem(&self, inputs: &[Option<&ValueFacts>]) -> Option<i32> {
        let of = |k: usize| inputs.get(k).copied().flatten().and_then(|f| f.elem);
        match self.elem {
            TypeRule::Input(k) => of(k),
            TypeRule::Elem(e) => Some(e),
            TypeRule::Opaque => None,
        }
        .or_else(|| match self.elem {
            TypeRule::Opaque => None,
            _ => self.shape.first_input().and_then(of),
        })
    }

    /// The outputs of a node of a declared op that is not a broadcast (a broadcast is a site: `analysis` judges
    /// it). `Some` always: a declared op is never an unknown one.
    pub fn infer(&self, ctx: &Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
        let shape = match self.shape {
            ShapeRule::Input(k) => ctx.shape(k),
            ShapeRule::Broadcast { .. } | ShapeRule::Opaque => Shape::unranked(),
        };
        Some(vec![ValueFacts::tensor(self.elem(ctx.inputs), shape); ctx.outputs])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_reads_input_broadcast_opaque_and_element_types() {
        assert_eq!(ShapeRule::parse("input 2"), Ok(ShapeRule::Input(2)));
        assert_eq!(ShapeRule::parse("broadcast 0..2"), Ok(ShapeRule::Broadcast { first: 0, last: 2 }));
        assert_eq!(ShapeRule::parse("opaque"), Ok(ShapeRule::Opaque));
        assert!(ShapeRule::parse("broadcast 2..1").is_err());
        assert!(ShapeRule::parse("same").is_err());
        assert_eq!(TypeRule::parse("float"), Ok(TypeRule::Elem(1)));
        assert_eq!(TypeRule::parse("int64"), Ok(TypeRule::Elem(7)));
        assert_eq!(TypeRule::parse("input 1"), Ok(TypeRule::Input(1)));
        assert!(TypeRule::parse("floaty").is_err());
    }

    #[test]
    fn an_op_is_named_by_its_domain_and_type_split_at_the_last_dot() {
        let mut ops = CustomOps::default();
        let decl = OpDecl { shape: ShapeRule::Input(0), elem: TypeRule::Opaque };
        ops.declare("com.example.Plugin", decl).unwrap();
        assert_eq!(ops.get("com.example", "Plugin"), Some(&decl));
        assert_eq!(ops.get("com.example.Plugin", ""), None);
        assert!(ops.declare("Plugin", decl).is_err());
        assert_eq!(
            OpDecl { shape: ShapeRule::Broadcast { first: 1, last: 3 }, elem: TypeRule::Opaque }.broadcast_inputs(),
            Some(0b1110)
        );
    }
}
