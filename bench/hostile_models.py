"""The hostile-input models of issue 14's acceptance, too large to commit, for bench/run.sh's `hostile` part.

    python bench/hostile_models.py OUT_DIR

writes chain_1000000.onnx (a chain of a million Adds, 36 MB: `check --format json` must stay under 500 MiB peak
RSS) and ring_200000.onnx (200,000 Adds in a cycle: `expand` must refuse it in under 1 s). The function fan-out
model (K = 40) is small and committed: fixtures/crafted/fanout_40.pb, from fixtures/crafted/generate.py.
"""

import os
import sys

from onnx import TensorProto, helper


def chain(n):
    nodes = [
        helper.make_node("Add", ["X" if i == 0 else f"v{i - 1}", "B"], ["Y" if i == n - 1 else f"v{i}"], name=f"n{i}")
        for i in range(n)
    ]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3]),
              helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])]
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])]
    return helper.make_model(helper.make_graph(nodes, "chain", inputs, outputs),
                             opset_imports=[helper.make_opsetid("", 17)])


def ring(n):
    nodes = [helper.make_node("Add", [f"r{(i - 1) % n}", "A"], [f"r{i}"], name=f"ring{i}") for i in range(n)]
    inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3])]
    outputs = [helper.make_tensor_value_info("r0", TensorProto.FLOAT, [2, 3])]
    return helper.make_model(helper.make_graph(nodes, "ring", inputs, outputs),
                             opset_imports=[helper.make_opsetid("", 17)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make in [("chain_1000000", lambda: chain(1_000_000)), ("ring_200000", lambda: ring(200_000))]:
        path = os.path.join(out, f"{name}.onnx")
        if not os.path.exists(path):
            with open(path + ".tmp", "wb") as f:
                f.write(make().SerializeToString())
            os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
