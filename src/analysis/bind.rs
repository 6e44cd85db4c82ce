//! `--bind NAME=SIZE`: sizes given to the symbols the model's inputs name (`dim_param`s), before inference, so
//! that every size derived from them is worked out again (`min(128, seq)` at seq = 512 is 128). A binding must
//! name a symbol of the main graph's inputs (else an error, before any work); a size the model fixes elsewhere and
//! a binding contradicts (a declared `dim_value` that inference then finds to be another size) is a finding of its
//! own, `bind-contradiction`, one per value: never a silent choice.

use std::collections::BTreeMap;

use super::*;
use crate::sys::escape::name as shown;

/// How a `declared-shape-mismatch` says what is wrong; at the bound sizes, a `bind-contradiction` says it of them.
pub(super) const DECLARED_OTHERWISE: &str = "is declared with other facts than inference finds";

/// Sizes given to symbols, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    sizes: BTreeMap<String, u64>,
}

/// What an analysis is asked for beyond [`Options`].
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub bindings: Bindings,
    /// Also record the facts of each model-local function body, per call ([`GraphFacts`] at
    /// `[GraphStep::Function(i)]`, once per distinct call signature), as `infer` writes them into the body.
    pub function_facts: bool,
    /// Ops declared in the config file (`[ops]`): their shapes and types, or sites.
    pub custom_ops: std::sync::Arc<crate::infer::custom::CustomOps>,
    /// Ranges of sizes (`--range`, a TensorRT profile, `--safe-ranges`): matched to each model by [`prepare`],
    /// which binds the single sizes; the sites' conditions are decided over the others by the caller
    /// ([`crate::rules::ranges::Decider`]).
    pub ranges: crate::rules::ranges::RangeRequest,
    /// Also walk the graphs of `ModelProto.training_info` (`check` and `shapes` do; the rewrites leave them alone).
    pub training_graphs: bool,
    /// Integer inputs whose values the caller keeps within a range (`--range attention_mask=0..1`, set by
    /// [`prepare`]): the value ranges the walk starts them with.
    pub input_values: Vec<(std::sync::Arc<str>, crate::rules::ranges::SizeRange)>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    #[error("--bind {}={size}: {} is already bound to {earlier}", shown(.name), shown(.name))]
    Twice { name: String, size: u64, earlier: u64 },
    #[error("--bind {}={size}: the size is larger than ONNX allows (a dim is an int64)", shown(.name))]
    TooLarge { name: String, size: u64 },
    #[error("--bind {}: no input of the model has a dim named '{}' ({known})", shown(.name), shown(.name))]
    Unknown { name: String, known: String },
    /// The model contradicts the bindings: the first of the `bind-contradiction` findings, and how many there are.
    #[error("--bind contradicts the model (bind-contradiction): {first}{}", if *.count > 1 { format!(" (and {} more)", .count - 1) } else { String::new() })]
    Contradicts { first: String, count: usize },
    #[error(transparent)]
    Range(#[from] crate::rules::ranges::RangeRequestError),
    #[error("{} is given a size by --bind and a range by --range or the profile: give one", shown(.name))]
    BoundAndRanged { name: String },
}

impl BindError {
    /// The `bind-contradiction` findings of an analysis as one error, for a caller that cannot go on with them.
    pub fn contradictions(analysis: &Analysis) -> Option<BindError> {
        let mut found = analysis.notes.iter().filter(|n| n.code == Code::BindContradiction);
        let first = found.next()?;
        let at = crate::onnx::location::at(&first.graph, first.node.as_deref(), first.op.as_deref());
        Some(BindError::Contradicts { first: format!("{at}: {}", first.message), count: 1 + found.count() })
    }
}

impl Bindings {
    /// The bindings `NAME=SIZE` in command-line order; one name given two sizes is an error.
    pub fn new(pairs: &[(String, u64)]) -> Result<Bindings, BindError> {
        let mut sizes = BTreeMap::new();
        for (name, size) in pairs {
            if i64::try_from(*size).is_err() {
                return Err(BindError::TooLarge { name: name.clone(), size: *size });
            }
            match sizes.insert(name.clone(), *size) {
                Some(earlier) if earlier != *size => {
                    return Err(BindError::Twice { name: name.clone(), size: *size, earlier })
                }
                _ => {}
            }
        }
        Ok(Bindings { sizes })
    }

    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<u64> {
        self.sizes.get(name).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.sizes.iter().map(|(k, &v)| (k.as_str(), v))
    }

    fn size(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(|v| i64::try_from(v).ok())
    }

    /// A dim with the bound symbols replaced by their sizes.
    pub fn dim(&self, d: &Dim) -> Dim {
        let poly = match d {
            Dim::Known(_) | Dim::Unknown => return d.clone(),
            Dim::Sym(s) => return self.get(s).map_or_else(|| d.clone(), Dim::Known),
            Dim::Expr(p) => (**p).clone(),
            Dim::Broadcast(names) => crate::sizes::sym::Poly::broadcast(names.clone()),
        };
        match poly.substitute(&|name| self.size(name)) {
            Some(p) => Dim::from_poly(p),
            None => d.clone(),
        }
    }

    pub fn shape(&self, s: &Shape) -> Shape {
        Shape(s.dims().map(|dims| dims.iter().map(|d| self.dim(d)).collect()))
    }

    /// Facts with the bound symbols replaced, in the shape and in the contents.
    pub fn facts(&self, f: &ValueFacts) -> ValueFacts {
        if self.is_empty() {
            return f.clone();
        }
        let value = f
            .value
            .as_ref()
            .map(|v| v.iter().map(|x| x.as_ref().and_then(|p| p.substitute(&|name| self.size(name)))).collect());
        ValueFacts { shape: self.shape(&f.shape), value, ..f.clone() }
    }

    /// Every bound name is a symbol some input of the main graph declares.
    pub fn check_names(&self, model: &ModelProto) -> Result<(), BindError> {
        let named = input_symbols(model);
        for name in self.sizes.keys() {
            if !named.iter().any(|n| n == name) {
                let known = match named.is_empty() {
                    true => "its inputs name no size".to_string(),
                    false => {
                        let named: Vec<String> = named.iter().map(|n| shown(n).to_string()).collect();
                        format!("its inputs name {}", named.join(", "))
                    }
                };
                return Err(BindError::Unknown { name: name.clone(), known });
            }
        }
        Ok(())
    }
}

/// The `dim_param`s of the main graph's inputs, in order of appearance, each once.
pub fn input_symbols(model: &ModelProto) -> Vec<String> {
    use crate::onnx::pb::tensor_shape_proto::dimension::Value;
    let mut out: Vec<String> = Vec::new();
    let inputs = model.graph.iter().flat_map(|g| &g.input);
    let shapes = inputs.filter_map(|vi| vi.r#type.as_ref()?.tensor_type.as_ref()?.shape.as_ref());
    for dim in shapes.flat_map(|s| &s.dim) {
        if let Some(Value::DimParam(p)) = &dim.value {
            if !p.is_empty() && !p.starts_with('?') && !out.contains(p) {
                out.push(p.clone());
            }
        }
    }
    out
}

/// The request for one model: its ranges matched to the model's inputs, with each single size bound like `--bind`,
/// and those ranges (`None` when the request has none). A symbol both bound and given a range is an error.
pub fn prepare(
    model: &ModelProto,
    request: &Request,
) -> Result<(Request, Option<crate::rules::ranges::ModelRanges>), BindError> {
    if request.ranges.is_empty() {
        return Ok((request.clone(), None));
    }
    let mut ranges = request.ranges.resolve(model)?;
    let named = input_symbols(model);
    let mut pairs: Vec<(String, u64)> = request.bindings.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let names = ranges.ranges.iter().map(|(n, _)| n.to_string()).chain(ranges.points.iter().map(|(n, _)| n.clone()));
    for name in names {
        if request.bindings.get(&name).is_some() {
            return Err(BindError::BoundAndRanged { name: crate::rules::ranges::shown_name(&name) });
        }
    }
    // A size for a symbol only an expression names (`s0` of `2*s0`) stays a range of one size.
    let (bound, kept): (Vec<_>, Vec<_>) = ranges.points.drain(..).partition(|(n, _)| named.contains(n));
    for (name, size) in kept {
        ranges.ranges.insert(&name, crate::rules::ranges::SizeRange::point(size));
    }
    pairs.extend(bound.iter().cloned());
    ranges.points = bound;
    let bindings = Bindings::new(&pairs)?;
    let input_values = ranges.values.clone();
    let prepared = Request { bindings, ranges: Default::default(), input_values, ..request.clone() };
    Ok((prepared, Some(ranges)))
}

impl Analysis {
    /// Every value's facts simplified over ranges of sizes (`shapes --range`, `infer --range`): a size that is one
    /// number at every size of them is that number; nothing is kept that holds for part of them only.
    pub fn facts_within(&mut self, ranges: &crate::rules::ranges::Ranges) {
        for (_, facts) in self.graphs.iter_mut().flat_map(|g| g.values.iter_mut()) {
            *facts = crate::rules::ranges::within::facts_within(facts, ranges);
        }
    }
}

/// [`analyze_model_each`] or [`analyze_model_with`] (when `each_site` is `None`) with the bindings and records of
/// `request` (its ranges' single sizes bound: see [`prepare`]). A bound name no input declares is an error; a
/// declaration the bindings contradict is a note, `bind-contradiction` (see [`BindError::contradictions`]).
pub fn analyze_model_request(
    model: &crate::onnx::model::Model,
    options: Options,
    request: &Request,
    each_site: Option<&mut dyn FnMut(Site<'_>)>,
) -> Result<Analysis, BindError> {
    let mut each_site = each_site;
    analyze_model_sites(model, options, request, each_site.as_mut().map(|f| f as &mut dyn Sites))
}

/// [`analyze_model_request`], handing the sites to a taker that may count some of them only (see [`Sites`]).
pub fn analyze_model_sites(
    model: &crate::onnx::model::Model,
    options: Options,
    request: &Request,
    each_site: Option<&mut dyn Sites>,
) -> Result<Analysis, BindError> {
    let (request, _) = prepare(model.proto(), request)?;
    let request = &request;
    request.bindings.check_names(model.proto())?;
    let mut analysis = analyze_model_impl(model, options, request, each_site);
    let mismatch = |n: &&Note| n.code == Code::DeclaredShapeMismatch;
    if !request.bindings.is_empty() && analysis.notes.iter().any(|n| mismatch(&n)) {
        // A declaration that contradicts inference only at the bound sizes (`y: [4, 3]` of a `[N, 3]`, at N = 5)
        // is the binding's contradiction. Telling it from the model's own needs the unbound analysis, run only
        // when a contradiction is there to tell.
        let unbound = analyze_model_impl(model, Options { value_facts: false }, &Request::default(), None);
        let key = |n: &Note| (n.graph.clone(), n.node.clone());
        let own: Vec<_> = unbound.notes.iter().filter(mismatch).map(key).collect();
        for note in analysis.notes.iter_mut().filter(|n| n.code == Code::DeclaredShapeMismatch) {
            if !own.contains(&key(note)) {
                note.code = Code::BindContradiction;
                let at_bound = format!("{DECLARED_OTHERWISE} at the bound sizes");
                note.message = note.message.marked().replacen(DECLARED_OTHERWISE, &at_bound, 1).into();
            }
        }
    }
    Ok(analysis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_name_bound_twice_to_different_sizes_is_an_error() {
        let twice = [("seq".to_string(), 8), ("seq".to_string(), 9)];
        assert!(matches!(Bindings::new(&twice), Err(BindError::Twice { earlier: 8, .. })));
        let same = [("seq".to_string(), 8), ("seq".to_string(), 8)];
        assert_eq!(Bindings::new(&same).unwrap().get("seq"), Some(8));
    }

    #[test]
    fn a_bound_dim_is_its_size_and_derived_dims_follow() {
        let b = Bindings::new(&[("H".to_string(), 9)]).unwrap();
        assert_eq!(b.dim(&Dim::sym("H")), Dim::Known(9));
        assert_eq!(b.dim(&Dim::from_dim_param("floor((H - 1) / 2) + 1")), Dim::Known(5));
        assert_eq!(b.dim(&Dim::sym("W")), Dim::sym("W"));
    }
}
