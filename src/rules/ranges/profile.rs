//! TensorRT's spelling of ranges: an optimization profile's min, opt and max shape per input
//! (`--min-shapes images:1x3x320x320,mask:1x320`, as trtexec's `--minShapes` takes them), mapped to the symbols of
//! the model's inputs; and a safe box printed back in trtexec's and onnxruntime's TensorRT provider's spellings.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::{shown_name, Ranges, SizeRange};
use crate::onnx::pb::tensor_shape_proto::dimension::Value as DimValue;
use crate::onnx::pb::ModelProto;
use crate::sizes::shape::Dim;

/// One shape per input: `name:1x3x320x320`, comma-separated; a name with `:` or `,` in single quotes, as trtexec
/// takes it (`'input:0':1x3`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shapes(pub Vec<(String, Vec<u64>)>);

/// An optimization profile: the smallest and largest shape of each dynamic input, and the one to optimize for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    pub min: Shapes,
    pub opt: Shapes,
    pub max: Shapes,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    #[error("'{0}' is not NAME:DxDx…[,NAME:DxDx…] (e.g. images:1x3x320x320)")]
    Syntax(String),
    #[error("--{flag}: the model has no input named {name}")]
    NoInput { flag: &'static str, name: String },
    #[error("--{flag} gives no shape for input {name}, which --{other} names")]
    Missing { flag: &'static str, other: &'static str, name: String },
    #[error("--{flag} {name}: {given} dims where the input has {rank}")]
    Rank { flag: &'static str, name: String, given: usize, rank: usize },
    #[error("input {name} axis {axis} is {size} in the model, but the profile gives {min}..{max}")]
    Fixed { name: String, axis: usize, size: u64, min: u64, max: u64 },
    #[error("input {name} axis {axis}: the profile's min {min} is larger than its max {max}")]
    Order { name: String, axis: usize, min: u64, max: u64 },
    #[error("input {name} axis {axis}: the opt size {opt} is outside {min}..{max}")]
    Opt { name: String, axis: usize, opt: u64, min: u64, max: u64 },
    #[error("input {name} axis {axis} is {dim} in the model: a profile can only give ranges to dims with a plain name; give --range for its symbols")]
    NotASymbol { name: String, axis: usize, dim: String },
    #[error("{symbol} gets {first} from one input and {second} from another")]
    Disagree { symbol: String, first: SizeRange, second: SizeRange },
    #[error(transparent)]
    Range(#[from] super::RangeError),
}

impl Shapes {
    /// Parses one `--min-shapes`/`--opt-shapes`/`--max-shapes` value (several flags add up).
    pub fn parse(text: &str) -> Result<Shapes, ProfileError> {
        let syntax = || ProfileError::Syntax(text.to_string());
        let mut out = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            let (name, after) = match rest.strip_prefix('\'') {
                Some(quoted) => {
                    let end = quoted.find('\'').ok_or_else(syntax)?;
                    (&quoted[..end], quoted[end + 1..].strip_prefix(':').ok_or_else(syntax)?)
                }
                None => rest.split_once(':').ok_or_else(syntax)?,
            };
            let (dims, next) = after.split_once(',').unwrap_or((after, ""));
            let dims = match dims.trim() {
                "" => Vec::new(),
                d => d.split('x').map(|n| n.trim().parse::<u64>().map_err(|_| syntax())).collect::<Result<_, _>>()?,
            };
            if name.trim().is_empty() {
                return Err(syntax());
            }
            out.push((name.trim().to_string(), dims));
            rest = next.trim();
        }
        Ok(Shapes(out))
    }

    fn get(&self, name: &str) -> Option<&[u64]> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, d)| d.as_slice())
    }
}

/// A graph input the caller feeds (not an initializer), with its declared dims.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    pub name: String,
    /// `None` for an input whose rank is not declared.
    pub dims: Option<Vec<Dim>>,
    /// The declared element type (`TensorProto.DataType`).
    pub elem: Option<i32>,
}

/// The main graph's fed inputs (initializers with a default excluded), in order.
pub fn model_inputs(model: &ModelProto) -> Vec<Input> {
    let Some(graph) = &model.graph else { return Vec::new() };
    let init: HashSet<&str> = graph.initializer.iter().map(|t| t.name()).collect();
    let declared = |vi: &crate::onnx::pb::ValueInfoProto| {
        let shape = vi.r#type.as_ref()?.tensor_type.as_ref()?.shape.as_ref()?;
        Some(
            shape
                .dim
                .iter()
                .map(|d| match &d.value {
                    Some(DimValue::DimValue(v)) => u64::try_from(*v).map_or(Dim::Unknown, Dim::Known),
                    Some(DimValue::DimParam(p)) if !p.is_empty() => Dim::from_dim_param(p),
                    _ => Dim::Unknown,
                })
                .collect(),
        )
    };
    graph
        .input
        .iter()
        .filter(|vi| !init.contains(vi.name()))
        .map(|vi| Input {
            name: vi.name().to_string(),
            dims: declared(vi),
            elem: vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.elem_type),
        })
        .collect()
}

/// Every symbol the fed inputs' dims name, expressions included (`s0` of `2*s0`).
pub fn input_symbols(inputs: &[Input]) -> Vec<Arc<str>> {
    let mut out: Vec<Arc<str>> = Vec::new();
    for dim in inputs.iter().filter_map(|i| i.dims.as_ref()).flatten() {
        for s in dim.to_poly().map(|p| p.symbols()).unwrap_or_default() {
            if !s.starts_with('?') && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

impl Profile {
    /// The ranges the profile gives the inputs' symbols (from each symbolic dim's min to its max), and the opt size
    /// of each (the max where no opt shape is given).
    pub fn ranges(&self, inputs: &[Input]) -> Result<(Ranges, BTreeMap<Arc<str>, u64>), ProfileError> {
        for (flag, shapes) in [("min-shapes", &self.min), ("opt-shapes", &self.opt), ("max-shapes", &self.max)] {
            if let Some((name, _)) = shapes.0.iter().find(|(n, _)| !inputs.iter().any(|i| &i.name == n)) {
                return Err(ProfileError::NoInput { flag, name: name.clone() });
            }
        }
        let mut ranges = Ranges::default();
        let mut opt = BTreeMap::new();
        for (flag, other, a, b) in
            [("max-shapes", "min-shapes", &self.max, &self.min), ("min-shapes", "max-shapes", &self.min, &self.max)]
        {
            if let Some((name, _)) = b.0.iter().find(|(n, _)| a.get(n).is_none()) {
                return Err(ProfileError::Missing { flag, other, name: name.clone() });
            }
        }
        for (name, min) in &self.min.0 {
            let input = inputs.iter().find(|i| &i.name == name).expect("checked above");
            let max = self.max.get(name).expect("checked above");
            let rank = input.dims.as_ref().map_or(min.len(), Vec::len);
            for (flag, given) in [("min-shapes", min.len()), ("max-shapes", max.len())] {
                if given != rank {
                    return Err(ProfileError::Rank { flag, name: name.clone(), given, rank });
                }
            }
            let opts = self.opt.get(name);
            if let Some(o) = opts.filter(|o| o.len() != rank) {
                return Err(ProfileError::Rank { flag: "opt-shapes", name: name.clone(), given: o.len(), rank });
            }
            let dims = input.dims.clone().unwrap_or_else(|| vec![Dim::Unknown; rank]);
            for (axis, dim) in dims.iter().enumerate() {
                let (lo, hi) = (min[axis], max[axis]);
                if lo > hi {
                    return Err(ProfileError::Order { name: name.clone(), axis, min: lo, max: hi });
                }
                if let Some(&o) = opts.map(|o| &o[axis]).filter(|&&o| !(lo..=hi).contains(&o)) {
                    return Err(ProfileError::Opt { name: name.clone(), axis, opt: o, min: lo, max: hi });
                }
                match dim {
                    Dim::Known(n) if lo == *n && hi == *n => {}
                    Dim::Known(n) => {
                        return Err(ProfileError::Fixed { name: name.clone(), axis, size: *n, min: lo, max: hi })
                    }
                    Dim::Sym(s) if !s.starts_with('?') => {
                        let range = SizeRange::new(lo, hi, 1)?;
                        match ranges.insert(s, range) {
                            Some(first) if first != range => {
                                return Err(ProfileError::Disagree { symbol: shown_name(s), first, second: range })
                            }
                            _ => {}
                        }
                        opt.insert(s.clone(), opts.map_or(hi, |o| o[axis]));
                    }
                    other => {
                        let dim = if matches!(other, Dim::Unknown | Dim::Sym(_)) {
                            "unnamed".to_string()
                        } else {
                            other.to_string()
                        };
                        return Err(ProfileError::NotASymbol { name: name.clone(), axis, dim });
                    }
                }
            }
        }
        Ok((ranges, opt))
    }
}

/// A safe box as an optimization profile: the min, opt and max shape of every input with a symbolic dim.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileShapes {
    pub profile: Profile,
    /// Inputs left out: a dim no size of the box gives (an unnamed dim, a symbol without a range).
    pub left_out: Vec<String>,
}

/// The profile of a safe box for `inputs`: each symbol at its range's first size (min), at `opt` where that is in
/// the box, else at its last (opt), and at its last (max); a dim that is an expression of symbols at the sizes
/// that make it smallest and largest over the box.
pub fn profile_of(inputs: &[Input], safe: &Ranges, opt: &BTreeMap<Arc<str>, u64>) -> ProfileShapes {
    let mut out = ProfileShapes::default();
    for input in inputs {
        let Some(dims) = &input.dims else {
            out.left_out.push(input.name.clone());
            continue;
        };
        if dims.iter().all(|d| matches!(d, Dim::Known(_))) {
            continue;
        }
        let at = |pick: &dyn Fn(&str, SizeRange) -> u64| -> Option<Vec<u64>> {
            dims.iter().map(|d| dim_at(d, safe, pick)).collect()
        };
        let opt_of = |s: &str, r: SizeRange| opt.get(s).copied().filter(|&v| r.contains(v)).unwrap_or(r.last());
        match (at(&|_, r| r.first()), at(&opt_of), at(&|_, r| r.last())) {
            (Some(min), Some(o), Some(max)) => {
                out.profile.min.0.push((input.name.clone(), min));
                out.profile.opt.0.push((input.name.clone(), o));
                out.profile.max.0.push((input.name.clone(), max));
            }
            _ => out.left_out.push(input.name.clone()),
        }
    }
    out
}

/// A dim's size when each symbol takes the size `pick` chooses from its range; `None` when some symbol has none.
fn dim_at(dim: &Dim, safe: &Ranges, pick: &dyn Fn(&str, SizeRange) -> u64) -> Option<u64> {
    if let Dim::Known(n) = dim {
        return Some(*n);
    }
    let poly = dim.to_poly()?;
    let value = poly.substitute(&|s| safe.get(s).and_then(|r| i64::try_from(pick(s, r)).ok()))?;
    u64::try_from(value.as_constant()?).ok()
}

impl Shapes {
    /// As trtexec takes it: `name:1x3x320x320,other:1x320`, a name with `:`, `,` or `'` in single quotes.
    pub fn spelled(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(name, dims)| {
                let name = if name.contains([':', ',', '\'']) { format!("'{name}'") } else { name.clone() };
                let dims: Vec<String> = dims.iter().map(u64::to_string).collect();
                format!("{name}:{}", dims.join("x"))
            })
            .collect();
        parts.join(",")
    }
}

impl Profile {
    /// trtexec's flags, each quoted for a POSIX shell where it needs it.
    pub fn trtexec(&self) -> String {
        let flag = |name: &str, shapes: &Shapes| shell_word(&format!("--{name}={}", shapes.spelled()));
        format!("{} {} {}", flag("minShapes", &self.min), flag("optShapes", &self.opt), flag("maxShapes", &self.max))
    }

    /// onnxruntime's TensorRT execution provider options, as a Python dict (JSON).
    pub fn onnxruntime(&self) -> String {
        serde_json::json!({
            "trt_profile_min_shapes": self.min.spelled(),
            "trt_profile_opt_shapes": self.opt.spelled(),
            "trt_profile_max_shapes": self.max.spelled(),
        })
        .to_string()
    }
}

/// A word a POSIX shell reads back as itself: bare when it is made of safe characters, else in single quotes.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-.,:=/+@%".contains(c);
    if word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests;
