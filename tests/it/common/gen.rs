//! Dev-only, outside the library: large synthetic models for load, speed and memory tests, streamed to a writer.
//!
//! [`write_synthetic`] writes a model with gigabytes of initializers while holding only one tensor's worth of
//! data: it computes the graph's encoded length first (prost's `encoded_len` on the small parts; a large tensor's
//! length is arithmetic on its shared data, never a copy), then writes the `ModelProto` fields and the graph's
//! fields one by one. The bytes are exactly those prost's `encode_to_vec` gives for [`synthetic_model`].
//!
//! The graph is a chain of element-wise nodes (Add, Mul, Sub, Div) from the input `X` to the output `Y`: each
//! node combines the running value with one initializer, either a large one of the input's shape or a small one
//! that broadcasts along the last axis (`[d]` or `[1, …, 1, d]`). Every site broadcasts soundly, so the model is
//! clean. Names are deterministic (`X`, `Y`, `node_I`, `v_I`, `large_K`, `small_K`); the seed chooses the ops,
//! the operands and the tensor contents.

use std::io::{self, Write};

use bytes::Bytes;
use prost::Message;

use onnx_bcast::onnx::pb::{
    tensor_shape_proto::{dimension, Dimension},
    type_proto, DataType, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto,
    TypeProto, ValueInfoProto,
};

/// ONNX's FLOAT element type.
const FLOAT: i32 = DataType::Float as i32;

use onnx_bcast::onnx::pb::field::{graph, model, tensor, LEN};

/// The ops of the chain; all broadcast multidirectionally from opset 7 on.
const OPS: [&str; 4] = ["Add", "Mul", "Sub", "Div"];

/// What [`write_synthetic`] generates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// How many large float32 initializers (`large_0`, `large_1`, …) the graph holds, each of shape
    /// `large_dims`. They make up nearly all of the file: 200 × [1280, 1024] is 1000 MiB.
    pub large_initializers: usize,
    /// The shape of every large initializer, of the graph input `X` and of the graph output `Y`. At least one
    /// axis, every size at least 1.
    pub large_dims: Vec<u64>,
    /// How many element-wise nodes the chain from `X` to `Y` has (at least 1). Node `i` uses large initializer
    /// `i % large_initializers` or small initializer `i % small_initializers`, so every initializer is used once
    /// `nodes` is at least their number.
    pub nodes: usize,
    /// How many small float32 initializers (`small_0`, …) broadcast against the running value: the even ones of
    /// shape `[d]`, the odd ones `[1, …, 1, d]` at the rank of `large_dims`, where `d` is the last size of
    /// `large_dims`. About a quarter of the nodes use one (all of them when there is no large initializer).
    pub small_initializers: usize,
    /// Seeds the choice of op and operand order of every node and the tensor contents.
    pub seed: u64,
    /// The default-domain opset the model imports: 7 or later (multidirectional broadcasting). The IR version is
    /// the one ONNX released with that opset, at least 4 so that initializers need not be graph inputs.
    pub opset: i64,
}

impl SyntheticSpec {
    /// The 1 GB model of the memory test: 200 × [1280, 1024] float32, 20,000 nodes, 100 small initializers.
    pub fn gigabyte(seed: u64) -> SyntheticSpec {
        SyntheticSpec {
            large_initializers: 200,
            large_dims: vec![1280, 1024],
            nodes: 20_000,
            small_initializers: 100,
            seed,
            opset: 17,
        }
    }

    /// Bytes of data in one large initializer.
    pub fn large_tensor_bytes(&self) -> u64 {
        self.large_dims.iter().product::<u64>() * 4
    }

    /// Bytes of data in all the large initializers together (the file is slightly larger).
    pub fn large_bytes(&self) -> u64 {
        self.large_tensor_bytes() * self.large_initializers as u64
    }

    fn validate(&self) -> io::Result<()> {
        let invalid = |msg: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, format!("synthetic model: {msg}")));
        if self.large_dims.is_empty() {
            return invalid("large_dims needs at least one axis");
        }
        if self.large_dims.iter().any(|&d| d == 0 || d > i64::MAX as u64) {
            return invalid("every size in large_dims must be at least 1 and fit in an int64");
        }
        let bytes = self.large_dims.iter().try_fold(4u64, |acc, &d| acc.checked_mul(d));
        if bytes.is_none_or(|b| b > isize::MAX as u64 / 2) {
            return invalid("a large initializer of large_dims is too large to hold in memory");
        }
        if self.nodes == 0 {
            return invalid("nodes must be at least 1");
        }
        if self.large_initializers == 0 && self.small_initializers == 0 {
            return invalid("needs at least one initializer, large or small");
        }
        if self.opset < 7 {
            return invalid("opset must be 7 or later (multidirectional broadcasting)");
        }
        Ok(())
    }
}

/// The IR version ONNX released with `opset` (the default domain), at least 4.
pub fn ir_version_for(opset: i64) -> i64 {
    match opset {
        ..=9 => 4,
        10 => 5,
        11 => 6,
        12..=14 => 7,
        15..=18 => 8,
        19..=20 => 9,
        21..=22 => 10,
        23 => 11,
        24 => 12,
        _ => 13,
    }
}

/// Streams the model of `spec` to `out` and returns the number of bytes written. Holds one large tensor's data
/// (shared by every large initializer) and one node at a time, never the model. `out` gets large writes only;
/// wrapping it in a `BufWriter` gains little.
pub fn write_synthetic(spec: &SyntheticSpec, out: &mut impl Write) -> io::Result<u64> {
    spec.validate()?;
    let gen = Generator::new(spec);

    let graph_len = gen.graph_encoded_len();
    let mut sink = Sink { out, buf: Vec::with_capacity(SINK_CAPACITY), written: 0 };

    // ModelProto, in prost's order (by field number): ir_version (1), producer_name (2), graph (7), then
    // opset_import (8) after the graph.
    let mut head = gen.model_head();
    let opset_import = std::mem::take(&mut head.opset_import);
    head.encode(&mut sink.buf).expect("a Vec grows as needed");
    put_key(&mut sink.buf, model::GRAPH, LEN);
    put_varint(&mut sink.buf, graph_len);

    // GraphProto, in prost's order (by field number): node, name, initializer, input, output.
    for i in 0..spec.nodes {
        sink.message(graph::NODE, &gen.node(i))?;
    }
    put_key(&mut sink.buf, graph::NAME, LEN);
    put_varint(&mut sink.buf, GRAPH_NAME_STR.len() as u64);
    sink.buf.extend_from_slice(GRAPH_NAME_STR.as_bytes());
    for k in 0..spec.large_initializers {
        let mut tensor = gen.large(k);
        let len = tensor.encoded_len() as u64;
        // Of dims (1), data_type (2), name (8) and raw_data (9), prost writes raw_data last: write the others,
        // then the data straight from the shared buffer.
        let raw = tensor.raw_data.take().expect("large tensors hold raw_data");
        put_key(&mut sink.buf, graph::INITIALIZER, LEN);
        put_varint(&mut sink.buf, len);
        let head = sink.buf.len();
        tensor.encode(&mut sink.buf).expect("a Vec grows as needed");
        put_key(&mut sink.buf, tensor::RAW_DATA, LEN);
        put_varint(&mut sink.buf, raw.len() as u64);
        debug_assert_eq!((sink.buf.len() - head + raw.len()) as u64, len);
        sink.bytes(&raw)?;
    }
    for k in 0..spec.small_initializers {
        sink.message(graph::INITIALIZER, &gen.small(k))?;
    }
    sink.message(graph::INPUT, &gen.input())?;
    sink.message(graph::OUTPUT, &gen.output())?;
    let tail = ModelProto { opset_import, ..Default::default() };
    tail.encode(&mut sink.buf).expect("a Vec grows as needed");
    sink.flush()?;
    Ok(sink.written)
}

/// The model [`write_synthetic`] writes, built in memory: every large initializer shares one buffer, so this is
/// cheap even for gigabytes of weights, but encoding it (`encode_to_vec`) is not.
pub fn synthetic_model(spec: &SyntheticSpec) -> io::Result<ModelProto> {
    spec.validate()?;
    let gen = Generator::new(spec);
    let graph = GraphProto {
        node: (0..spec.nodes).map(|i| gen.node(i)).collect(),
        name: Some(GRAPH_NAME_STR.into()),
        initializer: (0..spec.large_initializers)
            .map(|k| gen.large(k))
            .chain((0..spec.small_initializers).map(|k| gen.small(k)))
            .collect(),
        input: vec![gen.input()],
        output: vec![gen.output()],
        ..Default::default()
    };
    Ok(ModelProto { graph: Some(graph), ..gen.model_head() })
}

const GRAPH_NAME_STR: &str = "synthetic";

/// Makes the parts of the model on demand, each the same every time it is asked for.
struct Generator<'s> {
    spec: &'s SyntheticSpec,
    /// The data of every large initializer.
    large_data: Bytes,
    /// The data of every small initializer.
    small_data: Bytes,
}

impl<'s> Generator<'s> {
    fn new(spec: &'s SyntheticSpec) -> Generator<'s> {
        let large_elems = spec.large_dims.iter().product::<u64>() as usize;
        let small_elems = *spec.large_dims.last().expect("validated") as usize;
        // One buffer per distinct size; an empty one when no initializer of that kind exists.
        let large_data = if spec.large_initializers > 0 { random_floats(spec.seed, large_elems) } else { Bytes::new() };
        let small_data = if spec.small_initializers == 0 {
            Bytes::new()
        } else if small_elems == large_elems && spec.large_initializers > 0 {
            large_data.clone()
        } else {
            random_floats(spec.seed, small_elems)
        };
        Generator { spec, large_data, small_data }
    }

    fn model_head(&self) -> ModelProto {
        ModelProto {
            ir_version: Some(ir_version_for(self.spec.opset)),
            opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(self.spec.opset) }],
            producer_name: Some("onnx-bcast synthetic".into()),
            ..Default::default()
        }
    }

    fn graph_encoded_len(&self) -> u64 {
        let nodes: u64 = (0..self.spec.nodes).map(|i| field_len(graph::NODE, self.node(i).encoded_len() as u64)).sum();
        let large: u64 = (0..self.spec.large_initializers)
            .map(|k| field_len(graph::INITIALIZER, self.large(k).encoded_len() as u64))
            .sum();
        let small: u64 = (0..self.spec.small_initializers)
            .map(|k| field_len(graph::INITIALIZER, self.small(k).encoded_len() as u64))
            .sum();
        nodes
            + field_len(graph::NAME, GRAPH_NAME_STR.len() as u64)
            + large
            + small
            + field_len(graph::INPUT, self.input().encoded_len() as u64)
            + field_len(graph::OUTPUT, self.output().encoded_len() as u64)
    }

    /// Node `i`: `v_i = OP(v_{i-1}, W)` (or `OP(W, v_{i-1})`), reading `X` first and writing `Y` last.
    fn node(&self, i: usize) -> NodeProto {
        let spec = self.spec;
        let h = splitmix64(spec.seed ^ splitmix64(i as u64));
        let op = OPS[(h & 3) as usize];
        let use_small = spec.small_initializers > 0 && (spec.large_initializers == 0 || (h >> 2) & 3 == 0);
        let weight =
            if use_small { small_name(i % spec.small_initializers) } else { large_name(i % spec.large_initializers) };
        let running = if i == 0 { "X".to_string() } else { value_name(i - 1) };
        let output = if i + 1 == spec.nodes { "Y".to_string() } else { value_name(i) };
        let input = if (h >> 4) & 1 == 0 { vec![running, weight] } else { vec![weight, running] };
        NodeProto {
            input: input.into_iter().map(Into::into).collect(),
            output: smallvec::smallvec![output.into()],
            name: Some(format!("node_{i}").into()),
            op_type: Some(op.into()),
            ..Default::default()
        }
    }

    fn large(&self, k: usize) -> TensorProto {
        TensorProto {
            dims: self.spec.large_dims.iter().map(|&d| d as i64).collect(),
            data_type: Some(FLOAT),
            name: Some(large_name(k)),
            raw_data: Some(self.large_data.clone()),
            ..Default::default()
        }
    }

    fn small(&self, k: usize) -> TensorProto {
        let last = *self.spec.large_dims.last().expect("validated") as i64;
        let dims = if k.is_multiple_of(2) {
            vec![last]
        } else {
            let mut dims = vec![1; self.spec.large_dims.len() - 1];
            dims.push(last);
            dims
        };
        TensorProto {
            dims,
            data_type: Some(FLOAT),
            name: Some(small_name(k)),
            raw_data: Some(self.small_data.clone()),
            ..Default::default()
        }
    }

    fn input(&self) -> ValueInfoProto {
        self.value_info("X")
    }

    fn output(&self) -> ValueInfoProto {
        self.value_info("Y")
    }

    fn value_info(&self, name: &str) -> ValueInfoProto {
        let dim = self
            .spec
            .large_dims
            .iter()
            .map(|&d| Dimension { value: Some(dimension::Value::DimValue(d as i64)), denotation: None })
            .collect();
        ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(TypeProto {
                tensor_type: Some(type_proto::Tensor { elem_type: Some(FLOAT), shape: Some(TensorShapeProto { dim }) }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

fn large_name(k: usize) -> String {
    format!("large_{k}")
}

fn small_name(k: usize) -> String {
    format!("small_{k}")
}

fn value_name(i: usize) -> String {
    format!("v_{i}")
}

/// `n` float32s in [0.5, 1.5) (never zero, so Div stays finite at run time), little-endian.
fn random_floats(seed: u64, n: usize) -> Bytes {
    let mut state = splitmix64(seed ^ 0x5eed_da7a ^ n as u64);
    let mut data = Vec::with_capacity(n * 4);
    for _ in 0..n {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let bits = splitmix64(state) >> 40; // 24 random bits
        let value = 0.5 + bits as f32 / (1u32 << 24) as f32;
        data.extend_from_slice(&value.to_le_bytes());
    }
    Bytes::from(data)
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn varint_len(v: u64) -> u64 {
    // One byte per started group of 7 bits; 0 still takes a byte.
    (64 - (v | 1).leading_zeros() as u64).div_ceil(7)
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn put_key(buf: &mut Vec<u8>, field: u32, wire_type: u32) {
    put_varint(buf, u64::from(field << 3 | wire_type));
}

/// Encoded length of a length-delimited field whose payload is `len` bytes.
fn field_len(field: u32, len: u64) -> u64 {
    varint_len(u64::from(field << 3 | LEN)) + varint_len(len) + len
}

const SINK_CAPACITY: usize = 1 << 20;

/// Gathers small parts into a buffer and writes them in large pieces; large data goes straight through.
struct Sink<'w, W: Write> {
    out: &'w mut W,
    buf: Vec<u8>,
    written: u64,
}

impl<W: Write> Sink<'_, W> {
    fn message(&mut self, field: u32, message: &impl Message) -> io::Result<()> {
        put_key(&mut self.buf, field, LEN);
        message.encode_length_delimited(&mut self.buf).expect("a Vec grows as needed");
        if self.buf.len() >= SINK_CAPACITY {
            self.flush()?;
        }
        Ok(())
    }

    fn bytes(&mut self, data: &[u8]) -> io::Result<()> {
        self.flush()?;
        self.out.write_all(data)?;
        self.written += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_spec() -> SyntheticSpec {
        SyntheticSpec {
            large_initializers: 5,
            large_dims: vec![3, 4],
            nodes: 40,
            small_initializers: 3,
            seed: 7,
            opset: 17,
        }
    }

    #[test]
    fn streamed_model_decodes_with_expected_contents() {
        let spec = small_spec();
        let mut out = Vec::new();
        let written = write_synthetic(&spec, &mut out).unwrap();
        assert_eq!(written, out.len() as u64);
        let model = ModelProto::decode(Bytes::from(out)).unwrap();
        let graph = model.graph.as_ref().unwrap();
        assert_eq!(graph.node.len(), 40);
        assert_eq!(graph.initializer.len(), 5 + 3);
        assert_eq!(graph.input.len(), 1);
        assert_eq!(graph.output.len(), 1);
        assert_eq!(graph.node.last().unwrap().output.as_slice(), ["Y"]);
        for t in &graph.initializer {
            let elems: i64 = t.dims.iter().product();
            assert_eq!(t.raw_data.as_ref().unwrap().len() as i64, elems * 4, "{}", t.name());
        }
        let small: Vec<&[i64]> = graph.initializer[5..].iter().map(|t| t.dims.as_slice()).collect();
        assert_eq!(small, [&[4][..], &[1, 4], &[4]]);
        assert!(graph.node.iter().any(|n| n.input.iter().any(|i| i.starts_with("small_"))));
        assert!(graph.node.iter().any(|n| n.input.iter().any(|i| i.starts_with("large_"))));
        assert_eq!(model.opset_import[0].version, Some(17));
        assert_eq!(model.ir_version, Some(8));
    }

    #[test]
    fn streamed_bytes_equal_prost_encoding() {
        let specs = [
            small_spec(),
            // Names of varying length, and lengths crossing varint boundaries.
            SyntheticSpec {
                large_initializers: 130,
                large_dims: vec![40],
                nodes: 300,
                small_initializers: 11,
                seed: 1,
                opset: 7,
            },
            SyntheticSpec {
                large_initializers: 0,
                large_dims: vec![2, 3, 5],
                nodes: 3,
                small_initializers: 2,
                seed: 2,
                opset: 23,
            },
            SyntheticSpec {
                large_initializers: 2,
                large_dims: vec![9],
                nodes: 1,
                small_initializers: 0,
                seed: 3,
                opset: 13,
            },
            SyntheticSpec {
                large_initializers: 1,
                large_dims: vec![70, 300],
                nodes: 2,
                small_initializers: 1,
                seed: 4,
                opset: 21,
            },
        ];
        for spec in specs {
            let mut out = Vec::new();
            let written = write_synthetic(&spec, &mut out).unwrap();
            let expected = synthetic_model(&spec).unwrap().encode_to_vec();
            assert_eq!(written, expected.len() as u64, "{spec:?}");
            assert!(out == expected, "{spec:?}: streamed bytes differ from prost's");
        }
    }

    #[test]
    fn same_seed_same_model_other_seed_other_model() {
        let spec = small_spec();
        let encode = |spec: &SyntheticSpec| {
            let mut out = Vec::new();
            write_synthetic(spec, &mut out).unwrap();
            out
        };
        assert_eq!(encode(&spec), encode(&spec));
        assert_ne!(encode(&spec), encode(&SyntheticSpec { seed: 8, ..spec.clone() }));
    }

    #[test]
    fn invalid_specs_are_refused() {
        let bad = [
            SyntheticSpec { large_dims: vec![], ..small_spec() },
            SyntheticSpec { large_dims: vec![0, 4], ..small_spec() },
            SyntheticSpec { nodes: 0, ..small_spec() },
            SyntheticSpec { large_initializers: 0, small_initializers: 0, ..small_spec() },
            SyntheticSpec { opset: 6, ..small_spec() },
        ];
        for spec in bad {
            let err = write_synthetic(&spec, &mut Vec::new()).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{spec:?}");
        }
    }

    #[test]
    fn varints() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            assert_eq!(buf.len() as u64, varint_len(v), "{v}");
            assert_eq!(buf.len(), prost::encoding::encoded_len_varint(v), "{v}");
        }
    }
}
