"""Builds docs/demo.onnx, a small model with one broadcasting site of each verdict, for the README's picture.

Run: .cache/venv/bin/python docs/make_picture.py && onnx-bcast shapes --format dot docs/demo.onnx | dot -Tsvg > docs/broadcast-sites.svg
"""
import os

import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))
f = TensorProto.FLOAT
inputs = [
    helper.make_tensor_value_info("image", f, ["N", 3, 8, 8]),
    helper.make_tensor_value_info("bias", f, [3, 1, 1]),
    helper.make_tensor_value_info("scale", f, [3, 8, 8]),
    helper.make_tensor_value_info("mask", f, ["M", 8, 8]),
    helper.make_tensor_value_info("offset", f, [4, 8]),
]
nodes = [
    # same: no broadcast at all.
    helper.make_node("Relu", ["image"], ["r"], name="relu"),
    helper.make_node("Mul", ["r", "r"], ["squared"], name="square"),
    # broadcast: bias [3, 1, 1] to [N, 3, 8, 8].
    helper.make_node("Add", ["squared", "bias"], ["biased"], name="add_bias"),
    # broadcast: scale [3, 8, 8] to [N, 3, 8, 8].
    helper.make_node("Mul", ["biased", "scale"], ["scaled"], name="scale"),
    # conditional: M must be 1 or 3.
    helper.make_node("Mul", ["scaled", "mask"], ["masked"], name="apply_mask"),
    # violation: offset [4, 8] against [.., 8, 8].
    helper.make_node("Sub", ["masked", "offset"], ["out"], name="sub_offset"),
]
graph = helper.make_graph(nodes, "demo", inputs, [helper.make_tensor_value_info("out", f, None)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnx-bcast docs")
onnx.save(model, os.path.join(here, "demo.onnx"))
