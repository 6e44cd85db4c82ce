//! `expand --verify`: runs the original and the rewritten model with tract-onnx on the same seeded random inputs
//! and compares every output. Compiled only with the `verify` feature.
//!
//! Symbolic input dims (a `dim_param`, or a dim with neither value nor param) are bound to small sizes, the same
//! symbol to the same size in both models; the declared shapes of both models are rewritten with the binding
//! before tract sees them (dims whose symbol is not bound become unknown), so a rewritten model that declares a
//! wrong shape fails to load. When the original model does not run under one binding (its symbols must be equal,
//! or 1), a few others are tried. A model that tract cannot load or run is an error, never a pass.
//!
//! Inputs by element type: floats are multiples of 1/8 of magnitude 0.5 to 2.5 with a random sign (exact in every
//! float type, never zero), integers 1 to 5 (no division by zero in `Div` or `Mod`, no overflow in `BitShift` of
//! `uint8`), booleans at random, strings from {"a", "b", "c"}. Integer, boolean and string outputs must be equal;
//! float outputs may differ by a relative 1e-5 (NaN matches NaN).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::{bail, Context};
use prost::Message;
use tract_onnx::prelude::*;

use crate::onnx::pb::{tensor_shape_proto::dimension::Value as DimValue, GraphProto, ModelProto, ValueInfoProto};

/// Which of the two models something is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Original,
    Rewritten,
}

impl fmt::Display for Which {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Which::Original => "original",
            Which::Rewritten => "rewritten",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("the {which} model is not a valid ONNX model: {message}")]
    Decode { which: Which, message: String },
    #[error("the two models have different interfaces: {0}")]
    Interface(String),
    #[error("cannot make a value for input `{name}`: {reason}")]
    Input { name: String, reason: String },
    #[error(
        "tract cannot run the original model ({tried} symbol binding(s) tried), so nothing was verified: {message}"
    )]
    Original { message: String, tried: usize },
    #[error("tract runs the original model but not the rewritten one (binding {binding}): {message}")]
    Rewritten { message: String, binding: String },
}

/// One input as fed to both models.
#[derive(Clone, Debug, PartialEq)]
pub struct InputFed {
    pub name: String,
    pub datum_type: String,
    pub shape: Vec<usize>,
}

/// One output of both models, compared.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputCompared {
    pub name: String,
    pub datum_type: String,
    pub shape: Vec<usize>,
    /// What differs, when something does.
    pub difference: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VerifyReport {
    /// The size each symbol was bound to, in order of first appearance.
    pub binding: Vec<(String, usize)>,
    /// Bindings tried before one ran (1 when the first did).
    pub bindings_tried: usize,
    pub inputs: Vec<InputFed>,
    pub outputs: Vec<OutputCompared>,
}

impl VerifyReport {
    /// True when some output differs.
    pub fn differs(&self) -> bool {
        self.outputs.iter().any(|o| o.difference.is_some())
    }

    /// One line per output that differs: `name: what differs`.
    pub fn differences(&self) -> Vec<String> {
        self.outputs.iter().filter_map(|o| o.difference.as_ref().map(|d| format!("output `{}`: {d}", o.name))).collect()
    }

    /// The binding as `N=2, M=3`, or `no symbols`.
    pub fn binding_text(&self) -> String {
        binding_text(&self.binding)
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outputs = self.outputs.len();
        let differing = self.outputs.iter().filter(|o| o.difference.is_some()).count();
        if differing == 0 {
            write!(f, "{outputs} output(s) match")?;
        } else {
            write!(f, "{differing} of {outputs} output(s) differ")?;
        }
        write!(f, " on {} seeded input(s) ({})", self.inputs.len(), self.binding_text())
    }
}

fn binding_text(binding: &[(String, usize)]) -> String {
    if binding.is_empty() {
        return "no symbols".into();
    }
    binding.iter().map(|(s, v)| format!("{s}={v}")).collect::<Vec<_>>().join(", ")
}

/// Runs `original` and `rewritten` (ONNX model bytes) on the same inputs, made from `seed`, and compares outputs.
pub fn verify(original: &[u8], rewritten: &[u8], seed: u64) -> Result<VerifyReport, VerifyError> {
    verify_with(original, rewritten, seed, &[])
}

/// [`verify`], with the symbols named in `sizes` bound to the given sizes in every binding tried (`expand
/// --verify-size N=32`, for models that only run at some sizes, like multiples of 32).
pub fn verify_with(
    original: &[u8],
    rewritten: &[u8],
    seed: u64,
    sizes: &[(String, usize)],
) -> Result<VerifyReport, VerifyError> {
    let decode = |which, bytes: &[u8]| {
        ModelProto::decode(bytes).map_err(|e| VerifyError::Decode { which, message: e.to_string() })
    };
    let original = decode(Which::Original, original)?;
    let rewritten = decode(Which::Rewritten, rewritten)?;
    let graph = |m: &ModelProto, which| {
        m.graph.clone().ok_or_else(|| VerifyError::Decode { which, message: "the model has no graph".into() })
    };
    let (og, rg) = (graph(&original, Which::Original)?, graph(&rewritten, Which::Rewritten)?);

    let inputs = fed_inputs(&og);
    same_interface(&og, &rg)?;

    let symbols = symbols_of(&inputs);
    let candidates = candidates(&symbols, sizes);
    let mut first_failure = None;
    for (tried, binding) in candidates.iter().enumerate() {
        let feeds = make_inputs(&inputs, binding, seed)?;
        let shapes: HashMap<String, Vec<usize>> = feeds.iter().map(|(n, t)| (n.clone(), t.shape().to_vec())).collect();
        let values: HashMap<&str, usize> = binding.iter().map(|(s, v)| (s.as_str(), *v)).collect();
        let expected = match run(&bind_model(&original, &shapes, &values), &feeds) {
            Ok(outputs) => outputs,
            Err(message) => {
                first_failure.get_or_insert(message);
                continue;
            }
        };
        let got = run(&bind_model(&rewritten, &shapes, &values), &feeds)
            .map_err(|message| VerifyError::Rewritten { message, binding: binding_text(binding) })?;
        let names = out_names(&og);
        if expected.len() != names.len() || got.len() != names.len() {
            return Err(VerifyError::Interface(format!(
                "tract produced {} and {} outputs for {} declared",
                expected.len(),
                got.len(),
                names.len()
            )));
        }
        let outputs = names
            .into_iter()
            .zip(expected.iter().zip(&got))
            .map(|(name, (e, g))| OutputCompared {
                name,
                datum_type: format!("{:?}", e.datum_type()),
                shape: e.shape().to_vec(),
                difference: compare(e, g),
            })
            .collect();
        return Ok(VerifyReport {
            binding: binding.clone(),
            bindings_tried: tried + 1,
            inputs: feeds
                .iter()
                .map(|(name, t)| InputFed {
                    name: name.clone(),
                    datum_type: format!("{:?}", t.datum_type()),
                    shape: t.shape().to_vec(),
                })
                .collect(),
            outputs,
        });
    }
    Err(VerifyError::Original {
        message: first_failure.unwrap_or_else(|| "no binding to try".into()),
        tried: candidates.len(),
    })
}

/// The names of a graph's outputs.
fn out_names(g: &GraphProto) -> Vec<String> {
    g.output.iter().map(|o| o.name().to_string()).collect()
}

/// Whether the two graphs take the same inputs (names and element types) and give the same outputs (names).
fn same_interface(og: &GraphProto, rg: &GraphProto) -> Result<(), VerifyError> {
    let signature = |g: &GraphProto| -> Vec<(String, Option<i32>)> {
        fed_inputs(g).iter().map(|i| (i.name().to_string(), elem_type(i))).collect()
    };
    if signature(og) != signature(rg) {
        return Err(VerifyError::Interface(format!("inputs {:?} and {:?}", signature(og), signature(rg))));
    }
    if out_names(og) != out_names(rg) {
        return Err(VerifyError::Interface(format!("outputs {:?} and {:?}", out_names(og), out_names(rg))));
    }
    Ok(())
}

/// The bindings of `symbols` to try, in order, with the sizes given in `sizes` fixed; each binding once.
fn candidates(symbols: &[String], sizes: &[(String, usize)]) -> Vec<Vec<(String, usize)>> {
    bindings(symbols)
        .into_iter()
        .map(|b| {
            b.into_iter()
                .map(|(s, v)| {
                    let given = sizes.iter().find(|(name, _)| *name == s).map(|&(_, size)| size);
                    (s, given.unwrap_or(v))
                })
                .collect()
        })
        .fold(Vec::new(), |mut unique, b| {
            if !unique.contains(&b) {
                unique.push(b);
            }
            unique
        })
}

/// Graph inputs that take a value at run time (not those an initializer of the same name fills).
fn fed_inputs(g: &GraphProto) -> Vec<&ValueInfoProto> {
    let init: HashSet<&str> = g.initializer.iter().map(|t| t.name()).collect();
    g.input.iter().filter(|i| !init.contains(i.name())).collect()
}

fn elem_type(vi: &ValueInfoProto) -> Option<i32> {
    vi.r#type.as_ref()?.tensor_type.as_ref()?.elem_type
}

/// The symbol of a dim of a fed input, when it is not a plain size.
fn dim_symbol(input: &str, axis: usize, value: Option<&DimValue>) -> Option<String> {
    match value {
        Some(DimValue::DimValue(v)) if *v >= 0 => None,
        Some(DimValue::DimParam(p)) if !p.is_empty() && p != "?" => Some(p.clone()),
        _ => Some(format!("{input}[{axis}]")),
    }
}

fn symbols_of(inputs: &[&ValueInfoProto]) -> Vec<String> {
    let mut seen = Vec::new();
    for vi in inputs {
        let Some(shape) = vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref()) else {
            continue;
        };
        for (axis, d) in shape.dim.iter().enumerate() {
            if let Some(s) = dim_symbol(vi.name(), axis, d.value.as_ref()) {
                if !seen.contains(&s) {
                    seen.push(s);
                }
            }
        }
    }
    seen
}

/// Bindings to try, best first: distinct sizes (so that a rewrite mixing two symbols up shows), then all 3, then
/// all 2 (for models whose symbols must be equal, or equal to a static 3 or 2).
fn bindings(symbols: &[String]) -> Vec<Vec<(String, usize)>> {
    let mut out: Vec<Vec<(String, usize)>> = Vec::new();
    let distinct = symbols.iter().enumerate().map(|(k, s)| (s.clone(), 2 + k % 4)).collect();
    let all = |v: usize| symbols.iter().map(|s| (s.clone(), v)).collect();
    for b in [distinct, all(3), all(2)] {
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// A small seeded generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The tract type of an ONNX element type that verify can feed.
fn datum_type(elem: i32) -> Option<DatumType> {
    Some(match elem {
        1 => DatumType::F32,
        2 => DatumType::U8,
        3 => DatumType::I8,
        4 => DatumType::U16,
        5 => DatumType::I16,
        6 => DatumType::I32,
        7 => DatumType::I64,
        8 => DatumType::String,
        9 => DatumType::Bool,
        10 => DatumType::F16,
        11 => DatumType::F64,
        12 => DatumType::U32,
        13 => DatumType::U64,
        _ => return None,
    })
}

fn make_inputs(
    inputs: &[&ValueInfoProto],
    binding: &[(String, usize)],
    seed: u64,
) -> Result<Vec<(String, Tensor)>, VerifyError> {
    let mut rng = Rng(seed);
    let sizes: HashMap<&str, usize> = binding.iter().map(|(s, v)| (s.as_str(), *v)).collect();
    let mut out = Vec::new();
    for vi in inputs {
        let name = vi.name().to_string();
        let fail = |reason: &str| VerifyError::Input { name: name.clone(), reason: reason.to_string() };
        let tensor_type =
            vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).ok_or_else(|| fail("not a tensor"))?;
        let elem = tensor_type.elem_type.ok_or_else(|| fail("no element type"))?;
        let dt = datum_type(elem).ok_or_else(|| {
            fail(&format!("element type {} is not supported", crate::onnx::tensor::elem_type_name(elem)))
        })?;
        let shape_proto = tensor_type.shape.as_ref().ok_or_else(|| fail("no shape (its rank is needed)"))?;
        let shape: Vec<usize> = shape_proto
            .dim
            .iter()
            .enumerate()
            .map(|(axis, d)| match dim_symbol(&name, axis, d.value.as_ref()) {
                None => match d.value {
                    Some(DimValue::DimValue(v)) => v as usize,
                    _ => unreachable!("a dim without symbol has a size"),
                },
                Some(s) => sizes[s.as_str()],
            })
            .collect();
        let len: usize = shape.iter().product();
        let tensor = match dt {
            DatumType::Bool => {
                let v: Vec<bool> = (0..len).map(|_| rng.next() & 1 == 1).collect();
                tensor_of(&shape, v)
            }
            DatumType::String => {
                let v: Vec<String> = (0..len).map(|_| ["a", "b", "c"][(rng.next() % 3) as usize].to_string()).collect();
                tensor_of(&shape, v)
            }
            DatumType::F16 | DatumType::F32 | DatumType::F64 => {
                let v: Vec<f64> = (0..len)
                    .map(|_| {
                        let r = rng.next();
                        let magnitude = (4 + (r >> 1) % 17) as f64 / 8.0;
                        if r & 1 == 1 {
                            -magnitude
                        } else {
                            magnitude
                        }
                    })
                    .collect();
                tensor_of(&shape, v).and_then(|t| Ok(t.cast_to_dt(dt)?.into_owned()))
            }
            _ => {
                let v: Vec<i64> = (0..len).map(|_| 1 + (rng.next() % 5) as i64).collect();
                tensor_of(&shape, v).and_then(|t| Ok(t.cast_to_dt(dt)?.into_owned()))
            }
        }
        .map_err(|e| fail(&format!("{e:#}")))?;
        out.push((name, tensor));
    }
    Ok(out)
}

/// Runs the model (its bytes) with tract on the tensors of a `--witness` (the declared shapes bound to the witness's
/// `sizes` first, as `--verify` binds them): tract's error, or `None` when it runs.
pub fn run_witness(model: &[u8], tensors: &[crate::onnx::pb::TensorProto], sizes: &[(String, u64)]) -> Option<String> {
    let proto = match ModelProto::decode(model) {
        Ok(proto) => proto,
        Err(e) => return Some(format!("the model does not decode: {e}")),
    };
    let fed: HashMap<String, Vec<usize>> =
        tensors.iter().map(|t| (t.name().to_string(), t.dims.iter().map(|&d| d as usize).collect())).collect();
    let bound: HashMap<&str, usize> = sizes.iter().map(|(n, v)| (n.as_str(), *v as usize)).collect();
    let model = bind_model(&proto, &fed, &bound);
    let mut feeds = Vec::new();
    for t in tensors {
        let shape: Vec<usize> = t.dims.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect();
        let raw: &[u8] = t.raw_data.as_deref().unwrap_or(&[]);
        macro_rules! le {
            ($ty:ty, $n:expr) => {
                tensor_of(
                    &shape,
                    raw.chunks_exact($n).map(|c| <$ty>::from_le_bytes(c.try_into().expect("chunk"))).collect(),
                )
            };
        }
        let tensor = match t.data_type() {
            1 => le!(f32, 4),
            11 => le!(f64, 8),
            7 => le!(i64, 8),
            6 => le!(i32, 4),
            5 => le!(i16, 2),
            3 => le!(i8, 1),
            2 => le!(u8, 1),
            10 => tensor_of(
                &shape,
                raw.chunks_exact(2).map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]]))).collect(),
            ),
            9 => tensor_of(&shape, raw.iter().map(|&b| b != 0).collect()),
            other => return Some(format!("input `{}`: element type {other} is not fed to tract", t.name())),
        };
        match tensor {
            Ok(tensor) => feeds.push((t.name().to_string(), tensor)),
            Err(e) => return Some(format!("input `{}`: {e}", t.name())),
        }
    }
    run(&model, &feeds).err()
}

fn tensor_of<T: Datum>(shape: &[usize], values: Vec<T>) -> TractResult<Tensor> {
    Ok(tract_ndarray::ArrayD::from_shape_vec(shape.to_vec(), values)?.into())
}

/// The model with fed inputs declared at their concrete shapes and every other declared shape's symbols replaced
/// by their bound size (unbound symbols become unknown dims), in the graph and its subgraphs.
fn bind_model(model: &ModelProto, fed: &HashMap<String, Vec<usize>>, sizes: &HashMap<&str, usize>) -> Vec<u8> {
    use crate::onnx::pb::tensor_shape_proto::Dimension;
    fn bind_vi(vi: &mut ValueInfoProto, sizes: &HashMap<&str, usize>) {
        let Some(shape) = vi.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()).and_then(|t| t.shape.as_mut()) else {
            return;
        };
        for d in &mut shape.dim {
            if let Some(DimValue::DimParam(p)) = &d.value {
                d.value = sizes.get(p.as_str()).map(|&v| DimValue::DimValue(v as i64));
            }
        }
    }
    fn bind_graph(g: &mut GraphProto, sizes: &HashMap<&str, usize>) {
        for vi in g.input.iter_mut().chain(&mut g.output).chain(&mut g.value_info) {
            bind_vi(vi, sizes);
        }
        for n in &mut g.node {
            for sub in crate::onnx::attr::subgraphs_mut(n) {
                bind_graph(sub, sizes);
            }
        }
    }
    let mut model = model.clone();
    if let Some(g) = model.graph.as_mut() {
        bind_graph(g, sizes);
        for vi in &mut g.input {
            let Some(dims) = fed.get(vi.name()) else { continue };
            if let Some(shape) = vi.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()).and_then(|t| t.shape.as_mut())
            {
                shape.dim = dims
                    .iter()
                    .map(|&d| Dimension { value: Some(DimValue::DimValue(d as i64)), denotation: None })
                    .collect();
            }
        }
    }
    model.encode_to_vec()
}

/// Loads `bytes` with tract and runs it on `feeds` (by input name). Panics inside tract are errors too.
fn run(bytes: &[u8], feeds: &[(String, Tensor)]) -> Result<Vec<Tensor>, String> {
    let attempt = || -> TractResult<Vec<Tensor>> {
        let model = tract_onnx::onnx().model_for_read(&mut &bytes[..]).context("loading")?;
        // Not decluttered: its rewrites are tract's own optimisations, and each typed op evaluates as written.
        let model = model.into_typed().context("analysing")?;
        let mut values = Vec::new();
        for outlet in model.input_outlets()? {
            let name = &model.node(outlet.node).name;
            let Some((_, t)) = feeds.iter().find(|(n, _)| n == name) else {
                bail!("tract wants a value for `{name}`, which is not a graph input");
            };
            values.push(t.clone().into_tvalue());
        }
        let plan = model.into_runnable().context("planning")?;
        let outputs = plan.run(values.into()).context("running")?;
        Ok(outputs.into_iter().map(|v| v.into_tensor()).collect())
    };
    match catch_unwind(AssertUnwindSafe(attempt)) {
        Ok(Ok(outputs)) => Ok(outputs),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(panic) => Err(format!(
            "tract panicked: {}",
            panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default()
        )),
    }
}

/// What differs between an expected and an actual output, if anything.
fn compare(expected: &Tensor, got: &Tensor) -> Option<String> {
    // tract may carry shapes as TDim inside; compare those as the int64 ONNX has.
    let norm = |t: &Tensor| -> Tensor {
        if t.datum_type() == DatumType::TDim {
            t.cast_to_dt(DatumType::I64).map(|c| c.into_owned()).unwrap_or_else(|_| t.clone())
        } else {
            t.clone()
        }
    };
    let (e, g) = (norm(expected), norm(got));
    if e.datum_type() != g.datum_type() {
        return Some(format!("element type {:?} became {:?}", e.datum_type(), g.datum_type()));
    }
    if e.shape() != g.shape() {
        return Some(format!("shape {:?} became {:?}", e.shape(), g.shape()));
    }
    if e.datum_type().is_float() {
        let (Ok(ev), Ok(gv)) = (e.cast_to_dt(DatumType::F64), g.cast_to_dt(DatumType::F64)) else {
            return Some("the float values cannot be compared".into());
        };
        let values = |t: &Tensor| -> Vec<f64> {
            t.to_plain_array_view::<f64>().map(|v| v.iter().copied().collect()).unwrap_or_default()
        };
        let (ev, gv) = (values(&ev), values(&gv));
        let close = |a: f64, b: f64| {
            (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1e-3)
        };
        let bad: Vec<usize> = (0..ev.len()).filter(|&k| !close(ev[k], gv[k])).collect();
        let k = *bad.first()?;
        return Some(format!(
            "{} of {} values differ (first at flat index {k}: expected {}, got {})",
            bad.len(),
            ev.len(),
            ev[k],
            gv[k]
        ));
    }
    if e == g {
        return None;
    }
    let as_strings = |t: &Tensor| -> Vec<String> {
        match t.cast_to_dt(DatumType::String) {
            Ok(s) => s.to_plain_array_view::<String>().map(|v| v.iter().cloned().collect()).unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    };
    let (ev, gv) = (as_strings(&e), as_strings(&g));
    let bad: Vec<usize> = (0..ev.len().min(gv.len())).filter(|&k| ev[k] != gv[k]).collect();
    match bad.first() {
        Some(&k) => Some(format!(
            "{} of {} values differ (first at flat index {k}: expected {}, got {})",
            bad.len(),
            ev.len(),
            ev[k],
            gv[k]
        )),
        None => Some("the values differ".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture's ids and mask at `seq` (batch 1): ids 0, mask 1.
    fn position_table_inputs(seq: i64) -> Vec<crate::onnx::pb::TensorProto> {
        let int64 = |name: &str, value: i64| crate::onnx::pb::TensorProto {
            name: Some(name.to_string()),
            dims: vec![1, seq],
            data_type: Some(7),
            raw_data: Some((0..seq).flat_map(|_| value.to_le_bytes()).collect::<Vec<u8>>().into()),
            ..Default::default()
        };
        vec![int64("input_ids", 0), int64("attention_mask", 1)]
    }

    #[test]
    fn a_witness_past_the_position_table_fails_in_tract_and_one_inside_runs() {
        let model = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/ranges/position_table.onnx")).unwrap();
        let at = |seq: i64| {
            run_witness(&model, &position_table_inputs(seq), &[("batch".into(), 1), ("seq".into(), seq as u64)])
        };
        let error = at(65).expect("seq = 65 is past the table");
        assert!(error.contains("broadcast"), "{error}");
        assert_eq!(at(64), None);
    }
}
