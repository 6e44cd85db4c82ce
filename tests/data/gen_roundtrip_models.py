"""Writes small ONNX models exercising schema features the backend test data lacks.

Usage: python gen_roundtrip_models.py OUT_DIR
Writes OUT_DIR/<case>.onnx for every case below and prints the case names, one per line, on stdout.
Models are serialized with protobuf directly (SerializeToString), never through onnx.save, so nothing
(external data handling, checks) touches them on the way out. They need not be valid for onnx.checker:
the point is the wire format.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper as h

out_dir = sys.argv[1]
cases = {}


def case(fn):
    cases[fn.__name__] = fn
    return fn


def vi(name, elem=TensorProto.FLOAT, shape=(2, 3)):
    return h.make_tensor_value_info(name, elem, list(shape))


def model(nodes, inputs=None, outputs=None, name="g", **graph_kw):
    g = h.make_graph(nodes, name, inputs or [vi("X")], outputs or [vi("Y")], **graph_kw)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)], producer_name="onnx-bcast-tests")


def meta(m, **kv):
    for k, v in kv.items():
        e = m.metadata_props.add()
        e.key, e.value = k, v


@case
def external_data():
    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2, 3])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "4096"), ("length", "24"), ("checksum", "abc")):
        e = w.external_data.add()
        e.key, e.value = k, v
    return model([h.make_node("Add", ["X", "W"], ["Y"])], initializer=[w])


@case
def external_data_default_location_explicit():
    # data_location explicitly set to DEFAULT (0): presence must survive.
    w = h.make_tensor("W", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    w.data_location = TensorProto.DEFAULT
    return model([h.make_node("Add", ["X", "W"], ["Y"])], initializer=[w])


@case
def sparse_initializer():
    values = h.make_tensor("S", TensorProto.FLOAT, [3], [1.5, -2.0, 3.25])
    indices = h.make_tensor("S_indices", TensorProto.INT64, [3], [0, 4, 5])
    sp = h.make_sparse_tensor(values, indices, [2, 3])
    indices2d = h.make_tensor("T_indices", TensorProto.INT64, [2, 2], [0, 1, 1, 2])
    sp2 = h.make_sparse_tensor(h.make_tensor("T", TensorProto.INT32, [2], [7, -8]), indices2d, [2, 3])
    return model([h.make_node("Add", ["X", "S"], ["Y"])], sparse_initializer=[sp, sp2])


@case
def local_functions():
    body = [
        h.make_node("Constant", [], ["c"], value_float=1.0),
        h.make_node("Mul", ["x", "c"], ["t"]),
        h.make_node("LeakyRelu", ["t"], ["y"]),
    ]
    body[2].attribute.append(h.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT))
    attr_default = h.make_attribute("alpha", 0.25)
    fn = h.make_function(
        "custom.domain", "ScaledLeaky", ["x"], ["y"], body,
        [h.make_opsetid("", 21)],
        attributes=["unused"], attribute_protos=[attr_default],
        doc_string="a model-local function", overload="v2",
        value_info=[vi("t"), vi("c", shape=())],
    )
    meta(fn, owner="tests")
    node = h.make_node("ScaledLeaky", ["X"], ["Y"], domain="custom.domain", alpha=0.5)
    node.overload = "v2"
    m = model([node])
    m.opset_import.append(h.make_opsetid("custom.domain", 1))
    m.functions.append(fn)
    return m


@case
def training_info():
    m = model([h.make_node("Add", ["X", "W"], ["Y"])],
              initializer=[h.make_tensor("W", TensorProto.FLOAT, [2, 3], [0.0] * 6)])
    init = h.make_graph([h.make_node("RandomNormal", [], ["W_init"], shape=[2, 3])], "init", [], [vi("W_init")])
    algo = h.make_graph([h.make_node("Sub", ["W", "G"], ["W_new"])], "algo", [vi("G")], [vi("W_new")])
    ti = h.make_training_info(algo, [("W", "W_new")], init, [("W", "W_init")])
    m.training_info.append(ti)
    m.training_info.append(h.make_training_info(algo, [("W", "W_new")], None, None))
    return m


@case
def metadata_props_everywhere():
    node = h.make_node("Relu", ["X"], ["Y"], name="relu0", doc_string="node doc")
    meta(node, source="layer1", line="12")
    x = vi("X")
    meta(x, unit="m/s")
    x.doc_string = "input doc"
    m = model([node], inputs=[x], doc_string="graph doc", value_info=[vi("unused_vi")])
    meta(m.graph, graph_key="graph_value")
    meta(m, model_key="model_value", empty="")
    m.doc_string = "model doc"
    m.domain = "org.example"
    m.model_version = 7
    m.producer_version = "1.0"
    t = h.make_tensor("W", TensorProto.FLOAT, [1], [1.0])
    meta(t, tensor_key="tensor_value")
    m.graph.initializer.append(t)
    return m


def _types_model(extra_types):
    inputs = [vi("X")]
    for i, tp in enumerate(extra_types):
        inputs.append(h.make_value_info(f"in{i}", tp))
    return model([h.make_node("Identity", ["X"], ["Y"])], inputs=inputs)


@case
def types_containers_and_dims():
    tensor_sym = h.make_tensor_type_proto(TensorProto.FLOAT, ["batch", 3, None, "seq"], ["N", "C", "", "T"])
    tensor_sym.denotation = "IMAGE"
    seq = h.make_sequence_type_proto(h.make_tensor_type_proto(TensorProto.INT64, [None]))
    mp = h.make_map_type_proto(TensorProto.STRING, h.make_tensor_type_proto(TensorProto.DOUBLE, []))
    opt = h.make_optional_type_proto(h.make_sequence_type_proto(h.make_tensor_type_proto(TensorProto.BOOL, None)))
    sparse = h.make_sparse_tensor_type_proto(TensorProto.FLOAT, [10, "n"])
    seq_den = h.make_sequence_type_proto(h.make_tensor_type_proto(TensorProto.UINT8, [2]))
    seq_den.denotation = "SEQ"  # sequence_type = 4 < denotation = 6
    map_den = h.make_map_type_proto(TensorProto.INT64, h.make_tensor_type_proto(TensorProto.FLOAT, [1]))
    map_den.denotation = "MAP"  # map_type = 5 < denotation = 6
    no_shape = h.make_tensor_type_proto(TensorProto.FLOAT16, None)
    scalar = h.make_tensor_type_proto(TensorProto.BFLOAT16, [])
    return _types_model([tensor_sym, seq, mp, opt, sparse, seq_den, map_den, no_shape, scalar])


@case
def type_denotation_on_optional():
    # optional_type is field 9, denotation field 6: upstream writes 6 before 9.
    tp = h.make_optional_type_proto(h.make_tensor_type_proto(TensorProto.FLOAT, [1]))
    tp.denotation = "OPT"
    return _types_model([tp])


@case
def type_denotation_on_sparse_tensor():
    # sparse_tensor_type is field 8, denotation field 6: upstream writes 6 before 8.
    tp = h.make_sparse_tensor_type_proto(TensorProto.FLOAT, [4, 4])
    tp.denotation = "SPARSE"
    return _types_model([tp])


@case
def type_opaque():
    # TypeProto.opaque_type (field 7) is declared in onnx-ml.proto, which the onnx wheel is built from.
    tp = onnx.TypeProto()
    tp.opaque_type.domain = "ai.onnx.ml"
    tp.opaque_type.name = "Handle"
    tp.denotation = "HANDLE"  # opaque_type = 7 > denotation = 6
    return _types_model([tp])


@case
def tensor_data_fields():
    ts = []
    ts.append(h.make_tensor("f", TensorProto.FLOAT, [4], [0.0, -1.5, 3.4e38, float("inf")]))
    ts.append(h.make_tensor("d", TensorProto.DOUBLE, [3], [1e-300, -0.0, 2.5]))
    ts.append(h.make_tensor("u64", TensorProto.UINT64, [3], [0, 1, 2**64 - 1]))
    ts.append(h.make_tensor("u32", TensorProto.UINT32, [2], [0, 2**32 - 1]))
    ts.append(h.make_tensor("i64", TensorProto.INT64, [3], [-(2**63), -1, 2**63 - 1]))
    ts.append(h.make_tensor("i32", TensorProto.INT32, [3], [-(2**31), -1, 2**31 - 1]))
    ts.append(h.make_tensor("i8", TensorProto.INT8, [2], [-128, 127]))
    ts.append(h.make_tensor("b", TensorProto.BOOL, [3], [True, False, True]))
    ts.append(h.make_tensor("f16", TensorProto.FLOAT16, [2], np.array([1.0, -2.0], dtype=np.float16)))
    ts.append(h.make_tensor("c64", TensorProto.COMPLEX64, [2], [1 + 2j, -3j]))
    ts.append(h.make_tensor("s", TensorProto.STRING, [3], [b"", b"hello", "\u00e9\u4e2d".encode()]))
    ts.append(h.make_tensor("raw", TensorProto.FLOAT, [2, 2], np.arange(4, dtype=np.float32).tobytes(), raw=True))
    ts.append(h.make_tensor("empty", TensorProto.FLOAT, [0, 3], []))
    scalar = h.make_tensor("scalar", TensorProto.INT64, [], [42])
    scalar.doc_string = "a scalar"
    ts.append(scalar)
    seg = h.make_tensor("seg", TensorProto.FLOAT, [2], [1.0, 2.0])
    seg.segment.begin = 10
    seg.segment.end = 12
    ts.append(seg)
    seg0 = h.make_tensor("seg0", TensorProto.FLOAT, [1], [1.0])
    seg0.segment.begin = 0  # explicit zero: presence must survive
    ts.append(seg0)
    bare = TensorProto(name="bare")  # no data_type, no dims
    ts.append(bare)
    return model([h.make_node("Identity", ["X"], ["Y"])], initializer=ts)


@case
def attributes_of_every_kind():
    sub = h.make_graph([h.make_node("Identity", ["a"], ["b"])], "sub", [vi("a")], [vi("b")])
    sparse = h.make_sparse_tensor(h.make_tensor("v", TensorProto.FLOAT, [1], [9.0]),
                                  h.make_tensor("i", TensorProto.INT64, [1], [2]), [4])
    tp = h.make_tensor_type_proto(TensorProto.FLOAT, [1, "n"])
    node = h.make_node(
        "Custom", ["X"], ["Y"], domain="test.attrs", name="n0", doc_string="every attribute type",
        f=0.5, f0=0.0, i=-7, i0=0, s="text", s_empty="", t=h.make_tensor("t", TensorProto.INT32, [2], [1, 2]),
        g=sub, sp=sparse, tp=tp,
        floats=[1.0, -2.5, 0.0], ints=[-1, 0, 2**40], strings=[b"a", b"", b"c"],
        tensors=[h.make_tensor("t1", TensorProto.FLOAT, [1], [1.0]), h.make_tensor("t2", TensorProto.DOUBLE, [1], [2.0])],
        graphs=[sub, sub], sparse_tensors=[sparse], type_protos=[tp, h.make_sequence_type_proto(tp)],
    )
    node.attribute.append(h.make_attribute("ints_empty", [], attr_type=onnx.AttributeProto.INTS))
    node.attribute.append(h.make_attribute("floats_empty", [], attr_type=onnx.AttributeProto.FLOATS))
    a = node.attribute.add()
    a.name = "with_doc"
    a.doc_string = "attribute doc"
    a.type = onnx.AttributeProto.INT
    a.i = 3
    m = model([node])
    m.opset_import.append(h.make_opsetid("test.attrs", 1))
    return m


@case
def quantization_annotation():
    m = model([h.make_node("Relu", ["X"], ["Y"])])
    qa = m.graph.quantization_annotation.add()
    qa.tensor_name = "Y"
    for k, v in (("SCALE_TENSOR", "y_scale"), ("ZERO_POINT_TENSOR", "y_zp")):
        e = qa.quant_parameter_tensor_names.add()
        e.key, e.value = k, v
    return m


@case
def device_configurations():
    node = h.make_node("Relu", ["X"], ["Y"])
    dc = node.device_configurations.add()
    dc.configuration_id = "cfg"
    dc.pipeline_stage = 1
    ss = dc.sharding_spec.add()
    ss.tensor_name = "X"
    ss.device.extend([0, 1, -1])
    m_ = ss.index_to_device_group_map.add()
    m_.key = 0
    m_.value.extend([0, 1])
    sd = ss.sharded_dim.add()
    sd.axis = -1
    s1 = sd.simple_sharding.add()
    s1.dim_value = 6
    s1.num_shards = 2
    s2 = sd.simple_sharding.add()
    s2.dim_param = "n"
    s2.num_shards = 3
    m = model([node])
    m.ir_version = 11
    c = m.configuration.add()
    c.name = "cfg"
    c.num_devices = 2
    c.device.extend(["cuda:0", "cuda:1"])
    return m


@case
def nested_subgraphs_with_value_info():
    then_g = h.make_graph([h.make_node("Add", ["X", "one"], ["t"])], "then", [], [vi("t")],
                          initializer=[h.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
                          value_info=[vi("t")])
    else_g = h.make_graph([h.make_node("Neg", ["X"], ["e"])], "else", [], [vi("e", shape=("a", "b"))])
    cond = vi("cond", TensorProto.BOOL, ())
    return model([h.make_node("If", ["cond"], ["Y"], then_branch=then_g, else_branch=else_g)],
                 inputs=[vi("X"), cond])


@case
def empty_and_default_fields():
    # Explicit empty strings and zeros on optional fields: proto2 keeps their presence on the wire.
    node = h.make_node("Relu", ["X"], ["Y"], name="", domain="")
    node.doc_string = ""
    m = model([node])
    m.graph.doc_string = ""
    m.domain = ""
    m.model_version = 0
    m.doc_string = ""
    d = m.graph.input[0].type.tensor_type.shape.dim.add()
    d.dim_value = 0
    d2 = m.graph.input[0].type.tensor_type.shape.dim.add()
    d2.dim_param = ""
    d2.denotation = ""
    return m


os.makedirs(out_dir, exist_ok=True)
for name, fn in cases.items():
    m = fn()
    with open(os.path.join(out_dir, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())
    print(name)
