"""A generated set of static models whose ops' inputs break what the op's specification requires of them (issue 26,
"inference as a validator"), each with a valid twin that differs in one size, type or attribute; run through
`onnx-bcast check` and onnxruntime.

    python scripts/contradictions.py BIN OUT_DIR OUT_JSON

Run with the project venv (scripts/testdata.sh: pinned onnx, onnxruntime, numpy). Every model is written to OUT_DIR
(a few hundred models of a few hundred bytes; nothing is committed). For each: `BIN check --format json` (flagged:
exit 1, with its error codes) and onnxruntime (refused: the session cannot be made, or a run on seeded random
inputs fails). Writes OUT_JSON: {"models": [{"name", "kind": "bad"|"good", "flagged", "codes", "messages",
"refused", "ort_error"}], "totals": {...}}. The caller (tests/it/contradictions.rs) judges: every model flagged is
refused and every model not flagged runs.
"""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

FLOAT, DOUBLE, INT32, INT64, BOOL = T.FLOAT, T.DOUBLE, T.INT32, T.INT64, T.BOOL
MODELS = []  # (name, kind, ModelProto)


def vi(name, shape, elem=FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def ints(name, values):
    return nh.from_array(np.array(values, dtype=np.int64), name)


def add(name, kind, nodes, inputs, outputs, inits=(), opset=17):
    graph = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="onnx-bcast-contradictions")
    m.ir_version = 8
    MODELS.append((name, kind, m))


def pair(name, make, bad, good):
    """A contradictory model and its valid twin, made by `make` from two sets of keyword arguments."""
    add(name + "_bad", "bad", *make(**bad))
    add(name + "_good", "good", *make(**good))


def y(n=1):
    return [vi("y" if n == 1 else f"y{i}", None) for i in range(n)]


# --------------------------------------------------------------------------------------------------------------
# Matrix products


def matmul(a, b, ea=FLOAT, eb=FLOAT):
    return [h.make_node("MatMul", ["a", "b"], ["y"])], [vi("a", a, ea), vi("b", b, eb)], y()


for i, (a, b, good_b) in enumerate([
    ([2, 3], [4, 5], [3, 5]), ([2, 3], [2, 3], [3, 2]), ([4, 2, 3], [4, 4, 5], [4, 3, 5]), ([3], [4, 5], [3, 5]),
    ([2, 3], [4], [3]), ([1, 7], [6, 1], [7, 1]), ([5, 2, 8], [9, 3], [8, 3]), ([2, 3, 4], [3, 4, 5], [1, 4, 5]),
    ([2, 1, 3, 4], [5, 4, 2], [5, 4, 2]),
]):
    if a == [2, 1, 3, 4]:
        pair(f"matmul_{i}", matmul, dict(a=a, b=[5, 3, 2]), dict(a=a, b=good_b))
    else:
        pair(f"matmul_{i}", matmul, dict(a=a, b=b), dict(a=a, b=good_b))
pair("matmul_types", matmul, dict(a=[2, 3], b=[3, 4], eb=DOUBLE), dict(a=[2, 3], b=[3, 4]))


def gemm(a, b, ta=0, tb=0):
    node = h.make_node("Gemm", ["a", "b"], ["y"], transA=ta, transB=tb)
    return [node], [vi("a", a), vi("b", b)], y()


for i, (a, b, ta, tb, good_b) in enumerate([
    ([2, 3], [4, 5], 0, 0, [3, 5]), ([3, 2], [4, 5], 1, 0, [3, 5]), ([2, 3], [5, 4], 0, 1, [5, 3]),
    ([3, 2], [5, 4], 1, 1, [5, 3]), ([2, 3], [2, 3], 0, 0, [3, 3]),
]):
    pair(f"gemm_{i}", gemm, dict(a=a, b=b, ta=ta, tb=tb), dict(a=a, b=good_b, ta=ta, tb=tb))

# --------------------------------------------------------------------------------------------------------------
# Concat, Split, Reshape and the other layout ops


def concat(shapes, axis, elems=None):
    names = [f"x{i}" for i in range(len(shapes))]
    elems = elems or [FLOAT] * len(shapes)
    node = h.make_node("Concat", names, ["y"], axis=axis)
    return [node], [vi(n, s, e) for n, s, e in zip(names, shapes, elems)], y()


for i, (shapes, good, axis) in enumerate([
    ([[2, 5], [2, 7]], [[2, 5], [3, 5]], 0), ([[2, 3], [4, 3]], [[2, 3], [2, 4]], 1),
    ([[2, 3, 4], [2, 5, 4], [2, 3, 5]], [[2, 3, 4], [2, 5, 4], [2, 1, 4]], 1), ([[1, 2], [1, 2, 3]], [[1, 2], [1, 3]], 1),
    ([[2, 3], [2, 3]], [[2, 3], [2, 3]], 2), ([[2, 3], [2, 3]], [[2, 3], [2, 3]], -3), ([[6], [7]], [[6], [7]], 1),
    ([[3, 4, 5], [3, 4, 6]], [[3, 4, 5], [3, 4, 6]], -2),
]):
    good_axis = {2: 1, -3: -2, 1: 0 if shapes == [[6], [7]] else 1, -2: -1}.get(axis, axis) if good == shapes else axis
    pair(f"concat_{i}", concat, dict(shapes=shapes, axis=axis), dict(shapes=good, axis=good_axis))
pair("concat_types", concat, dict(shapes=[[2], [3]], axis=0, elems=[INT32, INT64]), dict(shapes=[[2], [3]], axis=0))


def reshape(x, target, allowzero=None):
    attrs = {} if allowzero is None else {"allowzero": allowzero}
    node = h.make_node("Reshape", ["x", "shape"], ["y"], **attrs)
    return [node], [vi("x", x)], y(), [ints("shape", target)]


for i, (x, bad, good) in enumerate([
    ([2, 3], [4, 2], [3, 2]), ([2, 3], [4, -1], [3, -1]), ([6, 4], [5, -1], [8, -1]), ([2, 3, 4], [-1, 5], [-1, 6]),
    ([2, 3], [-1, -1], [-1, 2]), ([2, 3], [2, -2], [2, 3]), ([2, 3], [0, 0, 0], [0, 0]), ([4, 4], [3, 0], [4, 0]),
    ([5, 7], [7, 6], [7, 5]), ([2, 2, 2], [3, 3], [4, 2]), ([1, 10], [3, 0, -1], [1, 0, -1]), ([12], [5, 2], [6, 2]),
]):
    pair(f"reshape_{i}", reshape, dict(x=x, target=bad), dict(x=x, target=good))


def split13(x, sizes, outputs, axis=0):
    inputs = ["x", "split"] if sizes is not None else ["x"]
    inits = [ints("split", sizes)] if sizes is not None else []
    node = h.make_node("Split", inputs, [f"y{i}" for i in range(outputs)], axis=axis)
    return [node], [vi("x", x)], y(outputs), inits, 13


for i, (x, bad, good, outputs, axis) in enumerate([
    ([5], [2, 2], [2, 3], 2, 0), ([4, 6], [2, 3], [3, 3], 2, 1), ([4, 6], [1, 1, 1], [2, 1, 1], 3, 0),
    ([5], None, None, 2, 0), ([7, 2], None, None, 3, 0), ([6], [2, 2, 2], [3, 3], 2, 0), ([6, 3], [3, 3], [3, 3], 2, 2),
]):
    good_x = {3: [6], 4: [6, 2]}.get(i, x)
    good_axis = 0 if axis == 2 else axis
    pair(f"split_{i}", split13, dict(x=x, sizes=bad, outputs=outputs, axis=axis),
         dict(x=good_x, sizes=good, outputs=outputs, axis=good_axis))


def split18(x, num_outputs, outputs):
    attrs = {} if num_outputs is None else {"num_outputs": num_outputs}
    node = h.make_node("Split", ["x"], [f"y{i}" for i in range(outputs)], axis=0, **attrs)
    return [node], [vi("x", x)], y(outputs), [], 18


# (A `num_outputs` other than the number of outputs is not here: onnxruntime's inference splits by `num_outputs`, its
# kernel by the outputs, and with fewer `num_outputs` than outputs the process aborts.)
pair("split18_none", split18, dict(x=[6], num_outputs=None, outputs=2), dict(x=[6], num_outputs=2, outputs=2))


def gather(x, indices, axis=0, op="Gather"):
    node = h.make_node(op, ["x", "i"], ["y"], axis=axis)
    return [node], [vi("x", x)], y(), [ints("i", indices)]


for i, (x, bad, good, axis) in enumerate([
    ([3, 2], [3], [2], 0), ([3, 2], [-4], [-3], 0), ([3, 5], [0, 5], [0, 4], 1), ([4], [[1, 9]], [[1, 3]], 0),
    ([3, 2], [0], [0], 2), ([2, 2], [[0, 7]], [[0, 1]], -1),
]):
    pair(f"gather_{i}", gather, dict(x=x, indices=bad, axis=axis), dict(x=x, indices=good, axis=min(axis, 1)))
pair("gather_elements_range", gather, dict(x=[2, 2], indices=[[0, 2], [1, 0]], axis=1, op="GatherElements"),
     dict(x=[2, 2], indices=[[0, 1], [1, 0]], axis=1, op="GatherElements"))
pair("gather_elements_rank", gather, dict(x=[2, 2], indices=[0, 1], axis=0, op="GatherElements"),
     dict(x=[2, 2], indices=[[0, 1]], axis=0, op="GatherElements"))


def axes_op(op, x, axes, opset=13):
    node = h.make_node(op, ["x", "axes"], ["y"])
    return [node], [vi("x", x)], y(), [ints("axes", axes)], opset


for i, (op, x, bad, good) in enumerate([
    ("Squeeze", [3, 2], [0], [0]), ("Squeeze", [1, 2, 1], [1], [2]), ("Squeeze", [1, 2], [2], [0]),
    ("Unsqueeze", [3, 2], [0, 0], [0, 1]), ("Unsqueeze", [3, 2], [3], [2]), ("Unsqueeze", [3], [-3], [-2]),
    ("ReduceSum", [3, 4], [2], [1]), ("ReduceSum", [3, 4], [-3], [-2]),
]):
    good_x = [1, 2] if (op, i) == ("Squeeze", 0) else x
    pair(f"{op.lower()}_{i}", lambda op, x, axes: axes_op(op, x, axes), dict(op=op, x=x, axes=bad),
         dict(op=op, x=good_x, axes=good))


def single(op, x, opset=17, **attrs):
    out = [vi("y", None, INT64 if op == "ArgMax" else FLOAT)]
    return [h.make_node(op, ["x"], ["y"], **attrs)], [vi("x", x)], out, [], opset


for i, (op, x, bad, good, opset) in enumerate([
    ("Transpose", [2, 3], dict(perm=[0, 0]), dict(perm=[1, 0]), 17),
    ("Transpose", [2, 3], dict(perm=[-1, 0]), dict(perm=[1, 0]), 17),
    ("Transpose", [2, 3, 4], dict(perm=[2, 1]), dict(perm=[2, 1, 0]), 17),
    ("Flatten", [3, 4], dict(axis=3), dict(axis=2), 17), ("Flatten", [3, 4], dict(axis=-3), dict(axis=-2), 17),
    ("ArgMax", [3, 4], dict(axis=2), dict(axis=1), 17), ("Softmax", [3, 4], dict(axis=2), dict(axis=1), 17),
    ("LogSoftmax", [3, 4], dict(axis=-3), dict(axis=-2), 17),
    ("DepthToSpace", [1, 5, 2, 2], dict(blocksize=2), dict(blocksize=1), 17),
    ("DepthToSpace", [1, 18, 2, 2], dict(blocksize=4), dict(blocksize=3), 17),
    ("SpaceToDepth", [1, 1, 3, 4], dict(blocksize=2), dict(blocksize=1), 17),
    ("SpaceToDepth", [1, 2, 6, 9], dict(blocksize=2), dict(blocksize=3), 17),
    ("MaxPool", [1, 1, 5, 5], dict(kernel_shape=[2]), dict(kernel_shape=[2, 2]), 17),
    ("MaxPool", [1, 1, 5, 5], dict(kernel_shape=[2, 2], strides=[1]), dict(kernel_shape=[2, 2], strides=[1, 1]), 17),
    ("AveragePool", [1, 1, 5, 5], dict(kernel_shape=[2, 2], pads=[1, 1]), dict(kernel_shape=[2, 2], pads=[1, 1, 1, 1]),
     17),
]):
    pair(f"{op.lower()}_{i}", single, dict(op=op, x=x, opset=opset, **bad), dict(op=op, x=x, opset=opset, **good))


def with_list(op, x, values, name="r", opset=17, **attrs):
    node = h.make_node(op, ["x", name], ["y"], **attrs)
    return [node], [vi("x", x)], y(), [ints(name, values)], opset


pair("tile_len", with_list, dict(op="Tile", x=[3, 4], values=[2]), dict(op="Tile", x=[3, 4], values=[2, 1]))
pair("tile_len3", with_list, dict(op="Tile", x=[3], values=[2, 2]), dict(op="Tile", x=[3], values=[2]))
pair("pad_len", with_list, dict(op="Pad", x=[3, 4], values=[1, 1]), dict(op="Pad", x=[3, 4], values=[1, 1, 1, 1]))
pair("pad_len3", with_list, dict(op="Pad", x=[3], values=[1, 1, 1]), dict(op="Pad", x=[3], values=[1, 1]))


def topk(x, k, axis=-1):
    node = h.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis)
    return [node], [vi("x", x)], [vi("v", None), vi("i", None, INT64)], [ints("k", [k])]


pair("topk_k", topk, dict(x=[3, 4], k=5), dict(x=[3, 4], k=4))
pair("topk_axis", topk, dict(x=[3, 4], k=2, axis=2), dict(x=[3, 4], k=2, axis=1))


def slice_(x, starts, ends, axes, steps):
    node = h.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
    inits = [ints("s", starts), ints("e", ends), ints("a", axes), ints("t", steps)]
    return [node], [vi("x", x)], y(), inits


pair("slice_step0", slice_, dict(x=[3, 4], starts=[0], ends=[2], axes=[0], steps=[0]),
     dict(x=[3, 4], starts=[0], ends=[2], axes=[0], steps=[1]))
pair("slice_axes_twice", slice_, dict(x=[3, 4], starts=[0, 1], ends=[2, 3], axes=[0, 0], steps=[1, 1]),
     dict(x=[3, 4], starts=[0, 1], ends=[2, 3], axes=[0, 1], steps=[1, 1]))
pair("slice_axis_range", slice_, dict(x=[3, 4], starts=[0], ends=[2], axes=[2], steps=[1]),
     dict(x=[3, 4], starts=[0], ends=[2], axes=[1], steps=[1]))
pair("slice_lengths", slice_, dict(x=[3, 4], starts=[0, 0], ends=[2], axes=[0], steps=[1]),
     dict(x=[3, 4], starts=[0], ends=[2], axes=[0], steps=[1]))

# --------------------------------------------------------------------------------------------------------------
# Convolutions and normalizations


def conv(x, w, b=None, op="Conv", ew=FLOAT, **attrs):
    names = ["x", "w"] + (["b"] if b is not None else [])
    inputs = [vi("x", x), vi("w", w, ew)] + ([vi("b", b)] if b is not None else [])
    return [h.make_node(op, names, ["y"], **attrs)], inputs, y()


for i, (x, bad, good) in enumerate([
    ([1, 3, 8, 8], dict(w=[4, 2, 3, 3]), dict(w=[4, 3, 3, 3])),
    ([1, 4, 8, 8], dict(w=[4, 4, 3, 3], group=2), dict(w=[4, 2, 3, 3], group=2)),
    ([1, 4, 8, 8], dict(w=[3, 2, 3, 3], group=2), dict(w=[2, 2, 3, 3], group=2)),
    ([1, 3, 8, 8], dict(w=[4, 3, 3, 3], b=[5]), dict(w=[4, 3, 3, 3], b=[4])),
    ([1, 3, 8, 8], dict(w=[4, 3, 3, 3], kernel_shape=[2, 2]), dict(w=[4, 3, 3, 3], kernel_shape=[3, 3])),
    ([1, 1, 2, 2], dict(w=[1, 1, 3, 3]), dict(w=[1, 1, 2, 2])),
    ([1, 1, 2, 2], dict(w=[1, 1, 3, 3], auto_pad="VALID"), dict(w=[1, 1, 3, 3], auto_pad="SAME_UPPER")),
    ([1, 1, 4, 4], dict(w=[1, 1, 3, 3], dilations=[2, 2]), dict(w=[1, 1, 3, 3], dilations=[2, 2], pads=[1, 1, 1, 1])),
    ([1, 1, 5, 5], dict(w=[1, 1, 3, 3], strides=[1]), dict(w=[1, 1, 3, 3], strides=[1, 1])),
    ([1, 1, 5, 5], dict(w=[1, 1, 3]), dict(w=[1, 1, 3, 3])),
    ([1, 2, 5], dict(w=[3, 1, 3]), dict(w=[3, 2, 3])),
    ([1, 3, 8, 8], dict(w=[4, 3, 3, 3], ew=DOUBLE), dict(w=[4, 3, 3, 3])),
    ([1, 2, 6, 6], dict(w=[2, 2, 3, 3], op="ConvTranspose"), dict(w=[2, 2, 3, 3], op="ConvTranspose")),
]):
    if i == 12:
        pair(f"conv_{i}", conv, dict(x=[1, 3, 6, 6], **bad), dict(x=x, **good))
    else:
        pair(f"conv_{i}", conv, dict(x=x, **bad), dict(x=x, **good))


def norm(op, x, params, opset=17, **attrs):
    names = ["x"] + [f"p{i}" for i in range(len(params))]
    inputs = [vi("x", x)] + [vi(f"p{i}", p) for i, p in enumerate(params)]
    return [h.make_node(op, names, ["y"], **attrs)], inputs, y(), [], opset


for i, (op, x, bad, good, opset, attrs) in enumerate([
    ("BatchNormalization", [1, 3, 2, 2], [[4], [3], [3], [3]], [[3], [3], [3], [3]], 15, {}),
    ("BatchNormalization", [1, 3, 2, 2], [[3], [3], [3], [2]], [[3], [3], [3], [3]], 15, {}),
    ("InstanceNormalization", [1, 3, 2, 2], [[4], [3]], [[3], [3]], 17, {}),
    ("InstanceNormalization", [1, 3, 2, 2], [[3], [3, 1]], [[3], [3]], 17, {}),
    ("LayerNormalization", [2, 3], [[4]], [[3]], 17, {}),
    ("LayerNormalization", [2, 3], [[2]], [[1]], 17, {}),
    ("LayerNormalization", [2, 3, 4], [[3, 5]], [[3, 4]], 17, dict(axis=1)),
    ("LayerNormalization", [2, 3], [[3], [5]], [[3], [3]], 17, {}),
    ("LayerNormalization", [2, 3], [[3]], [[3]], 17, dict(axis=2)),
    ("GroupNormalization", [1, 3, 2, 2], [[2], [2]], [[3], [3]], 18, dict(num_groups=2)),
    ("GroupNormalization", [1, 4, 2, 2], [[3], [3]], [[2], [2]], 18, dict(num_groups=2)),
]):
    good_attrs = dict(attrs, axis=1) if attrs.get("axis") == 2 else attrs
    if op == "GroupNormalization" and i == 9:
        good_attrs = dict(num_groups=3)
    pair(f"{op.lower()}_{i}", norm, dict(op=op, x=x, params=bad, opset=opset, **attrs),
         dict(op=op, x=x, params=good, opset=opset, **good_attrs))


def einsum(equation, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    return [h.make_node("Einsum", names, ["y"], equation=equation)], [vi(n, s) for n, s in zip(names, shapes)], y()


for i, (eq, bad, good) in enumerate([
    ("ij,jk->ik", [[2, 3], [4, 5]], [[2, 3], [3, 5]]), ("ij,jk->ik", [[2, 3, 1], [3, 5]], [[2, 3], [3, 5]]),
    ("ij,jk", [[2, 3]], [[2, 3], [3, 4]]), ("ii->i", [[2, 3]], [[3, 3]]), ("ij->ik", [[2, 3]], [[2, 3]]),
    ("bij,bjk->bik", [[2, 3, 4], [3, 4, 5]], [[2, 3, 4], [2, 4, 5]]),
]):
    good_eq = "ij->ji" if eq == "ij->ik" else eq
    pair(f"einsum_{i}", lambda eq, shapes: einsum(eq, shapes), dict(eq=eq, shapes=bad), dict(eq=good_eq, shapes=good))

# --------------------------------------------------------------------------------------------------------------
# Initializers that contradict their graph input's declaration


def initializer(declared, data, elem=FLOAT):
    node = h.make_node("Relu", ["x"], ["y"])
    return [node], [vi("x", declared, elem)], y(), [nh.from_array(data, "x")]


for i, (declared, bad, elem) in enumerate([
    ([4, 3], np.ones((8, 7), np.float32), FLOAT), ([4, 3], np.ones(12, np.float32), FLOAT),
    ([4, 3], np.ones((4, 3), np.float32), DOUBLE), ([2], np.ones(3, np.float32), FLOAT),
    ([2, 2, 2], np.ones((2, 2), np.float32), FLOAT),
]):
    good = np.ones(declared, np.float32)
    pair(f"initializer_{i}", initializer, dict(declared=declared, data=bad, elem=elem),
         dict(declared=declared, data=good, elem=FLOAT))


# --------------------------------------------------------------------------------------------------------------
# Sweeps: the commonest contradictions again over other sizes, so that no size happens to slip through.

for i, (m, k1, k2, n) in enumerate([(1, 2, 3, 1), (3, 4, 2, 5), (8, 16, 15, 4), (2, 5, 6, 2), (7, 1, 2, 3),
                                    (4, 3, 1, 4), (6, 9, 8, 2), (2, 64, 32, 2), (3, 10, 11, 1), (5, 7, 14, 5)]):
    pair(f"sweep_matmul_{i}", matmul, dict(a=[m, k1], b=[k2, n]), dict(a=[m, k1], b=[k1, n]))
for i, (m, k1, k2, n, ta, tb) in enumerate([(2, 3, 2, 4, 0, 1), (4, 4, 5, 1, 1, 0), (1, 8, 4, 8, 1, 1),
                                            (6, 2, 3, 6, 0, 0), (3, 7, 6, 3, 0, 1), (5, 5, 4, 4, 1, 0)]):
    a = [k1, m] if ta else [m, k1]
    b, good_b = ([n, k2], [n, k1]) if tb else ([k2, n], [k1, n])
    pair(f"sweep_gemm_{i}", gemm, dict(a=a, b=b, ta=ta, tb=tb), dict(a=a, b=good_b, ta=ta, tb=tb))
for i, (a, b) in enumerate([(3, 4), (5, 2), (1, 6), (8, 7), (2, 9), (4, 1), (10, 3), (6, 5)]):
    pair(f"sweep_concat_{i}", concat, dict(shapes=[[2, a, 3], [2, b, 4]], axis=2),
         dict(shapes=[[2, a, 3], [2, a, 4]], axis=2))
for i, (x, bad, good) in enumerate([([3, 4], [5, 3], [6, 2]), ([2, 2, 3], [4, 4], [4, 3]), ([9], [2, 4], [3, 3]),
                                    ([5, 5], [24], [25]), ([7, 3], [3, 8], [3, 7]), ([8, 2], [-1, 3], [-1, 4]),
                                    ([10], [3, -1], [5, -1]), ([3, 3, 3], [2, -1], [3, -1]), ([6, 7], [4, -1], [7, -1]),
                                    ([11, 2], [-1, 4], [-1, 2])]):
    pair(f"sweep_reshape_{i}", reshape, dict(x=x, target=bad), dict(x=x, target=good))
for i, (n, bad, good) in enumerate([(2, 2, 1), (5, 5, 4), (4, -5, -4), (7, 10, 6), (1, 1, 0), (3, -4, -1)]):
    pair(f"sweep_gather_{i}", gather, dict(x=[n, 3], indices=[bad]), dict(x=[n, 3], indices=[good]))
for i, (c, wc, group) in enumerate([(3, 1, 1), (6, 2, 2), (8, 3, 2), (4, 3, 1), (2, 4, 1), (9, 2, 3)]):
    good_wc = c // group
    pair(f"sweep_conv_channels_{i}", conv, dict(x=[1, c, 6, 6], w=[group * 2, wc, 3, 3], group=group),
         dict(x=[1, c, 6, 6], w=[group * 2, good_wc, 3, 3], group=group))
for i, (size, k) in enumerate([(3, 4), (4, 7), (1, 2), (5, 6)]):
    pair(f"sweep_conv_kernel_{i}", conv, dict(x=[1, 1, size, size], w=[1, 1, k, k]),
         dict(x=[1, 1, size, size], w=[1, 1, size, size]))
for i, (n, sizes, outputs) in enumerate([(8, [3, 3], 2), (9, [4, 4], 2), (10, [2, 3, 4], 3), (7, [1, 1], 2)]):
    good = sizes[:-1] + [n - sum(sizes[:-1])]
    pair(f"sweep_split_{i}", split13, dict(x=[n], sizes=sizes, outputs=outputs),
         dict(x=[n], sizes=good, outputs=outputs))
for i, (n, outputs) in enumerate([(7, 2), (8, 3), (10, 4), (11, 5)]):
    pair(f"sweep_split_equal_{i}", split13, dict(x=[n], sizes=None, outputs=outputs),
         dict(x=[n - n % outputs], sizes=None, outputs=outputs))
for i, (x, scale) in enumerate([([2, 5], [4]), ([3, 4, 6], [5]), ([2, 8], [3, 8]), ([4, 7], [6]), ([1, 3], [9])]):
    good = [1] * (len(scale) - 1) + [x[-1]]
    pair(f"sweep_layernorm_{i}", norm, dict(op="LayerNormalization", x=x, params=[scale]),
         dict(op="LayerNormalization", x=x, params=[good]))
for i, (x, axis) in enumerate([([2, 3], 0), ([3, 2, 4], 2), ([5, 1], 0), ([2, 2, 1], 1), ([4], 0)]):
    good_x = [1 if a == axis else d for a, d in enumerate(x)]
    pair(f"sweep_squeeze_{i}", lambda x, axes: axes_op("Squeeze", x, axes), dict(x=x, axes=[axis]),
         dict(x=good_x, axes=[axis]))
for i, (c, b) in enumerate([(6, 2), (12, 3), (7, 2), (20, 3)]):
    good_c = c - c % (b * b) if c % (b * b) else c
    pair(f"sweep_depth_to_space_{i}", single, dict(op="DepthToSpace", x=[1, c, 2, 2], blocksize=b),
         dict(op="DepthToSpace", x=[1, good_c or b * b, 2, 2], blocksize=b))
for i, (hgt, b) in enumerate([(5, 2), (7, 3), (10, 4), (9, 2)]):
    pair(f"sweep_space_to_depth_{i}", single, dict(op="SpaceToDepth", x=[1, 1, hgt, b * 2], blocksize=b),
         dict(op="SpaceToDepth", x=[1, 1, hgt - hgt % b, b * 2], blocksize=b))
for i, (shape_a, shape_b) in enumerate([([3, 4], [5, 2]), ([2, 6], [7, 3]), ([5, 5], [4, 5])]):
    pair(f"sweep_einsum_{i}", lambda eq, shapes: einsum(eq, shapes), dict(eq="ij,jk->ik", shapes=[shape_a, shape_b]),
         dict(eq="ij,jk->ik", shapes=[shape_a, [shape_a[1], shape_b[1]]]))
for i, (declared, data) in enumerate([([3], (4,)), ([2, 5], (5, 2)), ([1, 4], (4,)), ([6, 1], (6, 2))]):
    pair(f"sweep_initializer_{i}", initializer, dict(declared=declared, data=np.ones(data, np.float32)),
         dict(declared=declared, data=np.ones(declared, np.float32)))

# --------------------------------------------------------------------------------------------------------------
# Indexing, signal and the rank requirements of single ops (onnxruntime 1.31 checked for each bad/good pair)


def op_model(op, specs, opset=17, n_out=1, attrs=None):
    """One `op` node; `specs` per input: a shape (float graph input), (shape, elem), an array (an initializer), or
    None (absent)."""
    names, inputs, inits = [], [], []
    for i, spec in enumerate(specs):
        name = f"i{i}" if spec is not None else ""
        names.append(name)
        if isinstance(spec, np.ndarray):
            inits.append(nh.from_array(spec, name))
        elif spec is not None:
            shape, elem = spec if isinstance(spec, tuple) else (spec, FLOAT)
            inputs.append(vi(name, shape, elem))
    outs = ["y"] if n_out == 1 else [f"y{k}" for k in range(n_out)]
    outputs = y(n_out)
    if op == "SplitToSequence":
        outputs = [h.make_value_info("y", h.make_sequence_type_proto(h.make_tensor_type_proto(FLOAT, None)))]
    return [h.make_node(op, names, outs, **(attrs or {}))], inputs, outputs, inits, opset


def f32(v):
    return np.array(v, np.float32)


def i64(v):
    return np.array(v, np.int64)


for name, op, opset, attrs, bad, good in [
    ("scatter_elements_longer", "ScatterElements", 13, {"axis": 0},
     [[2, 3], ([2, 4], INT64), [2, 4]], [[2, 3], ([2, 2], INT64), [2, 2]]),
    ("scatter_elements_updates", "ScatterElements", 13, {"axis": 0},
     [[2, 3], ([2, 2], INT64), [2, 3]], [[2, 3], ([2, 2], INT64), [2, 2]]),
    ("scatter_nd_updates", "ScatterND", 13, {}, [[4, 3], ([2, 1], INT64), [2, 4]], [[4, 3], ([2, 1], INT64), [2, 3]]),
    ("scatter_nd_depth", "ScatterND", 13, {}, [[4, 3], ([2, 3], INT64), [2]], [[4, 3], ([2, 2], INT64), [2]]),
    ("gather_nd_depth", "GatherND", 13, {}, [[4, 3], ([2, 3], INT64)], [[4, 3], ([2, 2], INT64)]),
    ("one_hot_negative_depth", "OneHot", 11, {}, [([2, 2], INT64), i64(-3), f32([0, 1])],
     [([2, 2], INT64), i64(3), f32([0, 1])]),
    ("one_hot_zero_depth", "OneHot", 11, {}, [([2, 2], INT64), i64(0), f32([0, 1])],
     [([2, 2], INT64), i64(2), f32([0, 1])]),
    ("one_hot_values", "OneHot", 11, {}, [([2, 2], INT64), i64(3), f32([0, 1, 2])],
     [([2, 2], INT64), i64(3), f32([0, 1])]),
    ("range_vector", "Range", 11, {}, [f32([0, 1]), f32(5), f32(1)], [f32(0), f32(5), f32(1)]),
    ("range_zero_step", "Range", 11, {}, [f32(0), f32(5), f32(0)], [f32(0), f32(5), f32(2)]),
    ("col2im_channels", "Col2Im", 18, {}, [[1, 11, 5], i64([5, 5]), i64([1, 5])], [[1, 10, 5], i64([5, 5]), i64([1, 5])]),
    ("col2im_blocks", "Col2Im", 18, {}, [[1, 10, 12], i64([5, 5]), i64([1, 5])], [[1, 10, 5], i64([5, 5]), i64([1, 5])]),
    ("softmax_scalar", "Softmax", 13, {}, [[]], [[3]]),
    ("log_softmax_scalar", "LogSoftmax", 13, {}, [[]], [[3]]),
    ("hardmax_scalar", "Hardmax", 13, {}, [[]], [[3]]),
    ("batch_norm_scale_rank", "BatchNormalization", 15, {}, [[2, 3], [1, 3], [3], [3], [3]],
     [[2, 3], [3], [3], [3], [3]]),
    ("max_unpool_indices", "MaxUnpool", 11, {"kernel_shape": [2, 2], "strides": [2, 2]},
     [[1, 1, 2, 2], ([], INT64)], [[1, 1, 2, 2], ([1, 1, 2, 2], INT64)]),
    ("nll_target", "NegativeLogLikelihoodLoss", 13, {"reduction": "none"}, [[3, 4, 5], ([3, 6], INT64)],
     [[3, 4, 5], ([3, 5], INT64)]),
    ("dft_onesided_complex", "DFT", 17, {"onesided": 1}, [[2, 5, 2]], [[2, 5, 1]]),
    ("dft_components", "DFT", 17, {}, [[2, 5, 3]], [[2, 5, 2]]),
    ("dft_last_axis", "DFT", 20, {}, [[2, 5, 1], None, i64(2)], [[2, 5, 1], None, i64(1)]),
    ("einsum_ellipsis_vector", "Einsum", 13, {"equation": "...,...->..."}, [[3], [2, 3]], [[1, 3], [2, 3]]),
    ("einsum_ellipsis_scalar", "Einsum", 13, {"equation": "...,...->..."}, [[2, 3], []], [[2, 3], [2, 3]]),
    ("grid_sample_batch", "GridSample", 16, {}, [[1, 1, 4, 4], [2, 3, 3, 2]], [[1, 1, 4, 4], [1, 3, 3, 2]]),
    ("grid_sample_coordinates", "GridSample", 16, {}, [[1, 1, 4, 4], [1, 3, 3, 3]], [[1, 1, 4, 4], [1, 3, 3, 2]]),
    ("grid_sample_rank", "GridSample", 20, {}, [[1, 1, 4, 4], [1, 3, 2]], [[1, 1, 4, 4], [1, 3, 3, 2]]),
    ("grid_sample_3d", "GridSample", 20, {}, [[1, 1, 4, 4, 4], [1, 2, 2, 2, 2]], [[1, 1, 4, 4, 4], [1, 2, 2, 2, 3]]),
    ("affine_grid_batch", "AffineGrid", 20, {}, [[2, 2, 3], i64([1, 1, 4, 4])], [[1, 2, 3], i64([1, 1, 4, 4])]),
    ("affine_grid_theta", "AffineGrid", 20, {}, [[1, 3, 4], i64([1, 1, 4, 4])], [[1, 3, 4], i64([1, 1, 2, 4, 4])]),
    ("center_crop_pad_sizes", "CenterCropPad", 18, {}, [[4, 5], i64([3])], [[4, 5], i64([3, 3])]),
    ("det_square", "Det", 11, {}, [[3, 4]], [[3, 3]]),
    ("det_rank", "Det", 11, {}, [[5]], [[2, 2]]),
    ("tensor_scatter_heads", "TensorScatter", 24, {}, [[2, 3, 5, 4], [2, 2, 1, 4]], [[2, 3, 5, 4], [2, 3, 1, 4]]),
    ("rotary_caches", "RotaryEmbedding", 23, {}, [[1, 2, 3, 8], [8, 3], [8, 4], ([1, 3], INT64)],
     [[1, 2, 3, 8], [8, 4], [8, 4], ([1, 3], INT64)]),
    ("split_to_sequence_sizes", "SplitToSequence", 11, {}, [[6, 4], i64([2, 3])], [[6, 4], i64([2, 4])]),
]:
    pair(name, lambda specs, op=op, opset=opset, attrs=attrs: op_model(op, specs, opset, 1, attrs),
         dict(specs=bad), dict(specs=good))
# Window attributes out of range (the attribute class of ONNX's rejected tests).
for i, (op, x, w, bad, good) in enumerate([
    ("Conv", [1, 1, 5, 5], [1, 1, 3, 3], dict(strides=[0, 1]), dict(strides=[2, 1])),
    ("Conv", [1, 1, 5, 5], [1, 1, 3, 3], dict(dilations=[1, -1]), dict(dilations=[1, 2])),
    ("Conv", [1, 1, 5, 5], [1, 1, 3, 3], dict(pads=[0, -1, 0, 0]), dict(pads=[0, 1, 0, 0])),
    ("ConvTranspose", [1, 1, 5, 5], [1, 1, 3, 3], dict(strides=[0, 0]), dict(strides=[1, 1])),
    ("ConvTranspose", [1, 1, 5, 5], [1, 1, 3, 3], dict(strides=[2, 2], output_padding=[-1, 0]),
     dict(strides=[2, 2], output_padding=[1, 0])),
    ("Conv", [1, 1, 5, 5], [1, 1, 3, 3], dict(pads=[0, 0, 0, 0], auto_pad="VALID"), dict(auto_pad="VALID")),
    ("ConvTranspose", [1, 1, 5, 5], [1, 1, 3, 3], dict(pads=[1, 1, 1, 1], auto_pad="SAME_UPPER"),
     dict(auto_pad="SAME_UPPER")),
]):
    pair(f"window_{op.lower()}_{i}", conv, dict(x=x, w=w, op=op, **bad), dict(x=x, w=w, op=op, **good))
for i, (op, bad, good) in enumerate([
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[0, 1]), dict(kernel_shape=[2, 2], strides=[1, 1])),
    ("MaxPool", dict(kernel_shape=[0, 2]), dict(kernel_shape=[1, 2])),
    ("MaxPool", dict(kernel_shape=[2, 2], dilations=[-1, 1]), dict(kernel_shape=[2, 2], dilations=[2, 1])),
    ("AveragePool", dict(kernel_shape=[2, 2], pads=[-1, 0, 0, 0]), dict(kernel_shape=[2, 2], pads=[1, 0, 0, 0])),
    ("AveragePool", dict(kernel_shape=[2, 2], strides=[-2, 1]), dict(kernel_shape=[2, 2], strides=[2, 1])),
    # A pool given both pads and auto_pad runs in onnxruntime (auto_pad wins): both twins are valid.
    ("MaxPool", dict(kernel_shape=[2, 2], pads=[2, 2, 2, 2], strides=[0, 1]),
     dict(kernel_shape=[2, 2], pads=[1, 1, 1, 1], auto_pad="SAME_UPPER")),
]):
    pair(f"window_{op.lower()}_{i}", single, dict(op=op, x=[1, 1, 5, 5], **bad), dict(op=op, x=[1, 1, 5, 5], **good))
pair("compress_axis", lambda axis: op_model("Compress", [[2, 3], np.array([True, False])], 11, 1, {"axis": axis}),
     dict(axis=2), dict(axis=0))

# --------------------------------------------------------------------------------------------------------------
# Running them


def feeds(session):
    rng = np.random.default_rng(0)
    out = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 2 for d in i.shape]
        if "int" in i.type:
            out[i.name] = rng.integers(0, 2, size=shape).astype(np.int64 if "int64" in i.type else np.int32)
        elif "double" in i.type:
            out[i.name] = rng.standard_normal(shape)
        else:
            out[i.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def run_ort(path):
    """None when onnxruntime runs the model, else why not."""
    ort.set_default_logger_severity(4)
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        session.run(None, feeds(session))
        return None
    except Exception as e:  # noqa: BLE001: any refusal counts
        return str(e).replace("\n", " ")[:300]


def run_ort_all(paths):
    """`run_ort` of each path, in a child process so that a runtime that aborts takes only its model down: a batch
    whose child dies is run again one model per child, and a model whose own child dies was refused."""
    def child(batch):
        out = subprocess.run([sys.executable, __file__, "--ort", *batch], capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            return None
        return [json.loads(line) for line in out.stdout.splitlines()]

    results = {}
    for start in range(0, len(paths), 50):
        batch = paths[start:start + 50]
        got = child(batch)
        if got is None:
            got = [(child([p]) or [f"the process died (exit {p})"])[0] for p in batch]
        results.update(zip(batch, got))
    return results


def main():
    binary, out_dir, out_json = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, kind, m in MODELS:
        path = os.path.join(out_dir, name + ".onnx")
        onnx.save(m, path)
        paths.append(path)
    checked = {}
    for start in range(0, len(paths), 100):
        batch = paths[start:start + 100]
        out = subprocess.run([binary, "check", "--no-config", "--format", "json", *batch], capture_output=True,
                             text=True, timeout=600)
        for line in filter(str.strip, out.stdout.splitlines()):
            report = json.loads(line)
            checked[report["model"]] = report
    refusals = run_ort_all(paths)
    records = []
    for (name, kind, _), path in zip(MODELS, paths):
        report = checked.get(path, {})
        errors = [f for f in report.get("findings", []) if f["severity"] == "error"]
        error = refusals[path]
        records.append({
            "name": name, "kind": kind, "checked": bool(report), "flagged": bool(errors),
            "codes": sorted({f["code"] for f in errors}), "messages": [f["message"] for f in errors],
            "refused": error is not None, "ort_error": error,
        })
    totals = {
        "models": len(records),
        "bad": sum(r["kind"] == "bad" for r in records),
        "good": sum(r["kind"] == "good" for r in records),
        "flagged": sum(r["flagged"] for r in records),
        "refused": sum(r["refused"] for r in records),
        "flagged_and_refused": sum(r["flagged"] and r["refused"] for r in records),
        "unflagged_and_run": sum(not r["flagged"] and not r["refused"] for r in records),
        "bad_flagged": sum(r["flagged"] for r in records if r["kind"] == "bad"),
        "good_flagged": sum(r["flagged"] for r in records if r["kind"] == "good"),
    }
    with open(out_json, "w") as f:
        json.dump({"models": records, "totals": totals}, f, indent=1)
    print(json.dumps(totals))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ort"]:
        for model in sys.argv[2:]:
            print(json.dumps(run_ort(model)), flush=True)
    else:
        main()
