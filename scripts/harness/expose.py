"""Runs a model in onnxruntime with every inferred value of its main graph exposed as an output, and hands the
actual shapes to the judge."""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from harness.judge import ELEM_OF_NAME, NAME_OF_ELEM, judge
from harness.ort import session_options as _session_options


def session_options():
    """No graph optimisation, one thread each, only fatal messages."""
    return _session_options(intra=1, inter=1, severity=4)


def np_elem_name(arr):
    try:
        return NAME_OF_ELEM.get(helper.np_dtype_to_tensor_dtype(arr.dtype))
    except Exception:  # noqa: BLE001
        return None


def exposed_model(model, names, types, typed):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n in have:
            continue
        elem = ELEM_OF_NAME.get(types.get(n) or "")
        if typed and elem:
            vi = helper.make_tensor_value_info(n, elem, None)
        else:
            vi = onnx.ValueInfoProto()
            vi.name = n
        m.graph.output.append(vi)
    return m


NUMPY_ELEMS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.INT16,
               TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32,
               TensorProto.UINT64, TensorProto.BOOL, TensorProto.STRING}
SAME_SIZE_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def ort_feeds(model, feeds):
    """Feeds as OrtValues when every one is a tensor (element types numpy lacks, such as bfloat16 and float8, are
    reinterpreted from same-sized integers), else None (sequences and optionals go through InferenceSession.run)."""
    if not all(isinstance(f, np.ndarray) and f.dtype != np.object_ for f in feeds.values()):
        return None
    elem = {vi.name: vi.type.tensor_type.elem_type for vi in model.graph.input
            if vi.type.WhichOneof("value") == "tensor_type"}
    out = {}
    for n, f in feeds.items():
        e = elem.get(n, 0)
        f = f if f.flags.c_contiguous else f.copy(order="C")  # (np.ascontiguousarray makes scalars 1-D)
        if e and e not in NUMPY_ELEMS and f.dtype.itemsize in SAME_SIZE_UINT:
            out[n] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(f.view(SAME_SIZE_UINT[f.dtype.itemsize]), e)
        else:
            out[n] = ort.OrtValue.ortvalue_from_numpy(f)
    return out


def run_exposed(model, names, types, feeds, typed=True):
    """{name: shape tuple or "non-tensor ..."}, {name: elem name} for the names ORT could give; raises on failure."""
    m = exposed_model(model, names, types, typed)
    sess = ort.InferenceSession(m.SerializeToString(), session_options(), providers=["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    shapes, dtypes = {}, {}
    ov = ort_feeds(model, feeds)
    if ov is not None:
        for n, r in zip(outs, sess.run_with_ort_values(outs, ov)):
            if r.is_tensor():
                shapes[n] = tuple(int(x) for x in r.shape())
                t = r.data_type()
                dtypes[n] = t[len("tensor("):-1] if t.startswith("tensor(") else None
            else:
                shapes[n] = "non-tensor (" + ("sequence" if r.is_tensor_sequence() else
                                              "empty optional" if not r.has_value() else "other") + ")"
                dtypes[n] = None
        return shapes, dtypes
    for n, r in zip(outs, sess.run(outs, feeds)):
        if isinstance(r, np.ndarray):
            shapes[n] = tuple(int(x) for x in r.shape)
            dtypes[n] = np_elem_name(r)
        else:
            shapes[n] = f"non-tensor ({type(r).__name__})"
            dtypes[n] = None
    return shapes, dtypes


def run_model(model, names, types, feeds, log):
    """Runs with every name exposed; on refusal, without types, then bisects the names. (shapes, dtypes, note)."""
    errors = []
    for typed in (True, False):
        try:
            s, d = run_exposed(model, names, types, feeds, typed)
            return s, d, None if typed else "exposed without elem types"
        except Exception as ex:  # noqa: BLE001
            errors.append(str(ex).splitlines()[0][:300] if str(ex) else type(ex).__name__)
    # Does the model run at all with these inputs?
    try:
        run_exposed(model, [], types, feeds, False)
    except Exception as ex:  # noqa: BLE001
        raise RuntimeError(f"onnxruntime cannot run the model: {str(ex)[:400]}") from None
    shapes, dtypes = {}, {}

    def bisect(group, depth):
        try:
            s, d = run_exposed(model, group, types, feeds, False)
            shapes.update(s)
            dtypes.update(d)
            return
        except Exception:  # noqa: BLE001
            if len(group) == 1 or depth > 12:
                return
        half = len(group) // 2
        bisect(group[:half], depth + 1)
        bisect(group[half:], depth + 1)

    bisect(list(names), 0)
    log(f"  exposing all values failed ({errors[0]}); bisected: {len(shapes)} of {len(names)} exposed")
    return shapes, dtypes, f"bisected ({len(shapes)} of {len(names)} exposed): {errors[0]}"


def check_model(label, model_path, model, values, feeds, binding, placeholders, stats, mismatches, type_mm,
                log, run_label=""):
    """Runs one model with `feeds` and judges every inferred value of the main graph."""
    inits = {t.name for t in model.graph.initializer}
    input_names = [vi.name for vi in model.graph.input if vi.name not in inits]
    types = {v["name"]: v.get("elem_type") for v in values if v.get("kind", "tensor") == "tensor"}
    expose = [v["name"] for v in values
              if v["shape"] is not None and v["name"] not in inits and v["name"] not in feeds and v["name"]]
    shapes, dtypes, note = run_model(model, expose, types, feeds, log)
    actual = dict(shapes)
    for n in input_names:
        if n in feeds:
            f = feeds[n]
            actual[n] = tuple(f.shape) if isinstance(f, np.ndarray) else f"non-tensor ({type(f).__name__})"
            if isinstance(f, np.ndarray):
                dtypes[n] = np_elem_name(f)
    for t in model.graph.initializer:
        actual[t.name] = tuple(int(d) for d in t.dims)
        dtypes[t.name] = NAME_OF_ELEM.get(t.data_type)
    judge(label, values, actual, dtypes, binding, placeholders, inits, stats, mismatches, type_mm, run_label)
    return note


def binding_from_feeds(model, feeds):
    """dim_param -> size from the graph inputs; a conflict (a param with two sizes) is returned separately."""
    binding, conflicts = {}, []
    for vi in model.graph.input:
        f = feeds.get(vi.name)
        if not isinstance(f, np.ndarray) or vi.type.WhichOneof("value") != "tensor_type":
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims) != f.ndim:
            continue
        for d, n in zip(dims, f.shape):
            if d.HasField("dim_param") and d.dim_param:
                if binding.setdefault(d.dim_param, int(n)) != int(n):
                    conflicts.append(f"{d.dim_param}: {binding[d.dim_param]} and {n}")
    # A dim_param the inputs give two sizes (Paddle's "?") binds nothing: its claims are judged on first sight.
    for c in conflicts:
        binding.pop(c.split(": ")[0], None)
    return binding, conflicts
