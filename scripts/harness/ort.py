"""onnxruntime: sessions, and seeded inputs for a model at given sizes (every symbolic dim bound)."""

import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

DEFAULT_DIM = 2  # the size of a symbolic or unknown dim nothing else fixes

NP_OF_ONNX = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.INT8: np.int8, onnx.TensorProto.INT16: np.int16, onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT64: np.int64, onnx.TensorProto.UINT8: np.uint8, onnx.TensorProto.UINT16: np.uint16,
    onnx.TensorProto.UINT32: np.uint32, onnx.TensorProto.UINT64: np.uint64, onnx.TensorProto.BOOL: np.bool_,
    onnx.TensorProto.STRING: np.object_,
}
NUMERIC_NP_OF_ONNX = {k: v for k, v in NP_OF_ONNX.items() if v is not np.object_}


# ---------------------------------------------------------------------------------------------- sessions

def session_options(optimize=False, intra=2, inter=1, severity=3):
    """Graph optimisation off unless asked (a model is run as written, so a fusion cannot make a numeric
    difference that is not the rewrite's); None leaves onnxruntime's default for a thread count."""
    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if intra is not None:
        so.intra_op_num_threads = intra
    if inter is not None:
        so.inter_op_num_threads = inter
    so.log_severity_level = severity
    return so


def session(source, **options):
    """A CPU session of a model path, its bytes or a ModelProto; `options` as session_options takes them."""
    if isinstance(source, onnx.ModelProto):
        source = source.SerializeToString()
    return ort.InferenceSession(source, session_options(**options), providers=["CPUExecutionProvider"])


def outputs(path, feeds, **options):
    """(output names, values) of one run."""
    sess = session(path, **options)
    names = [o.name for o in sess.get_outputs()]
    return names, sess.run(names, feeds)


# ------------------------------------------------------------------------------------------------ inputs

def generate(rng, shape, values, dtype):
    """An array of `shape`: values "true" (all true), ("normal", scale), ("uniform",), ("int", lo, hi),
    ("const", value), ("choice", [...]) for strings, ("bool",)."""
    if values == "true":
        return np.ones(shape, dtype=np.bool_)
    kind = values[0]
    if kind == "normal":
        return (rng.standard_normal(shape) * values[1]).astype(dtype)
    if kind == "uniform":
        return rng.random(shape).astype(dtype)
    if kind == "int":
        return rng.integers(values[1], values[2], size=shape).astype(dtype)
    if kind == "const":
        return np.full(shape, values[1], dtype=dtype)
    if kind == "choice":
        return rng.choice(np.array(values[1], dtype=object), size=shape).astype(object)
    if kind == "bool":
        return rng.random(shape) < 0.5
    raise ValueError(f"unknown value kind {values!r}")


def default_values(dtype):
    """Floats standard normal, integers in [0, 4), bools at random, strings from a small set."""
    if dtype == np.object_:
        return ("choice", ["a", "b", "c"])
    if dtype == np.bool_:
        return ("bool",)
    if np.issubdtype(dtype, np.integer):
        return ("int", 0, 4)
    return ("normal", 1.0)


def model_feeds(model, spec, sizes, seed=0):
    """Seeded inputs of a model: an input `spec` lists gets its (shape, values); the others their declared dims,
    a named dim `sizes[name]`, an unnamed one `sizes[None]` (else DEFAULT_DIM), values by default_values."""
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dtype = NP_OF_ONNX.get(tt.elem_type)
        if vi.type.WhichOneof("value") != "tensor_type" or dtype is None:
            raise ValueError(f"input {vi.name}: no generator for type {vi.type}")
        if vi.name in spec:
            shape, values = spec[vi.name]
        else:
            shape = []
            for d in tt.shape.dim:
                if d.HasField("dim_value") and d.dim_value > 0:
                    shape.append(int(d.dim_value))
                elif d.HasField("dim_param") and d.dim_param:
                    shape.append(sizes.get(d.dim_param, DEFAULT_DIM))
                else:
                    shape.append(sizes.get(None, DEFAULT_DIM))
            values = default_values(dtype)
        feeds[vi.name] = generate(rng, shape, values, dtype)
    return feeds


def manifest_feeds(entry, binding, seed=0):
    """Seeded inputs for an export manifest's entry at one binding of its symbols, each of the dtype its spec
    names (int64 for integer fills and float32 for normal ones where it names none)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in entry["inputs"]:
        shape = [binding[d] if isinstance(d, str) else d for d in spec["shape"]]
        kind = spec["fill"][0]
        if kind == "int":
            dtype = np.dtype(spec.get("dtype", "int64"))
            feeds[spec["name"]] = rng.integers(spec["fill"][1], spec["fill"][2], size=shape).astype(dtype)
        elif kind == "ones":
            feeds[spec["name"]] = np.ones(shape, dtype=np.dtype(spec.get("dtype", "int64")))
        else:
            feeds[spec["name"]] = rng.standard_normal(shape).astype(np.dtype(spec.get("dtype", "float32")))
    return feeds


# ------------------------------------------------------------------------------------- backend test data

def load_pb(path, type_proto):
    """A test_data_set .pb read by the graph input's type, as onnx's backend runner reads it."""
    which = type_proto.WhichOneof("value")
    with open(path, "rb") as f:
        data = f.read()
    if which == "sequence_type":
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return numpy_helper.to_list(s)
    if which == "optional_type":
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        return numpy_helper.to_optional(o)
    if which == "tensor_type":
        t = onnx.TensorProto()
        t.ParseFromString(data)
        return numpy_helper.to_array(t)
    raise NotImplementedError(f"{path}: unsupported value type (map or sparse tensor)")


def backend_feeds(model, test_dir, allow_missing=True):
    """The inputs of a backend test's test_data_set_0, by position among the inputs that are no initializer; a
    missing file is an optional input left out (with allow_missing; else an error)."""
    inits = {t.name for t in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in inits]
    feeds = {}
    for i, vi in enumerate(inputs):
        p = os.path.join(test_dir, "test_data_set_0", f"input_{i}.pb")
        if allow_missing and not os.path.exists(p):
            continue
        feeds[vi.name] = load_pb(p, vi.type)
    return feeds
