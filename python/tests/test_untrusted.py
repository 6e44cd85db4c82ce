"""Untrusted input through the Python API (issue 25): `bind` takes integer sizes and nothing else, a long call
stops at Ctrl-C (nothing written), and exception messages show model-controlled names escaped."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest

import onnx_bcast
from conftest import FIXTURES, REPO

SYMBOLIC = FIXTURES / "symbolic_batch.onnx"  # A: [N, 3] + B: [2, 3]
#: 500 Adds: with ONNX_BCAST_TEST_SLOW_MS=50 a call on it lasts 25 s unless it is stopped.
LONG = REPO / "fixtures" / "crafted" / "chain_500.pb"


def test_bind_takes_integer_sizes_only():
    for bad in [4.9, 4.0, "4", None, True, [4]]:
        with pytest.raises(TypeError, match="a size is an int"):
            onnx_bcast.check(SYMBOLIC, bind={"N": bad})
    with pytest.raises(TypeError, match="a symbol name is a str"):
        onnx_bcast.check(SYMBOLIC, bind={3: 4})
    with pytest.raises(TypeError, match="mapping"):
        onnx_bcast.shapes(SYMBOLIC, bind=[("N", 4)])
    with pytest.raises(onnx_bcast.BindError, match="at least 0"):
        onnx_bcast.check(SYMBOLIC, bind={"N": -1})
    with pytest.raises(onnx_bcast.BindError, match="larger than ONNX allows"):
        onnx_bcast.expand(SYMBOLIC.read_bytes(), bind={"N": 2**63})
    # What is an integer exactly is one: numpy's integers, and 2**63 - 1.
    expected = onnx_bcast.check(SYMBOLIC, bind={"N": 2}).to_json()
    assert onnx_bcast.check(SYMBOLIC, bind={"N": np.int64(2)}).to_json() == expected
    assert onnx_bcast.check(SYMBOLIC, bind={"N": 2**63 - 1}).summary.violations == 1
    assert onnx_bcast.check(SYMBOLIC, bind={"N": 0}).summary.violations == 1


def _interrupted(code: str, *args: str) -> str:
    """Runs `code` in a Python of its own with every node 50 ms slower, presses Ctrl-C (SIGINT) a second after it
    says `start`, and returns what it printed."""
    import os
    env = {**os.environ, "ONNX_BCAST_TEST_SLOW_MS": "50"}
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout.readline().strip() == "start"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    return out


# Python raises KeyboardInterrupt at SIGINT only if SIGINT was not ignored when it started; a test run in the
# background (`cargo test &`, a CI runner's job) hands its children SIGINT ignored, so the child sets the handler.
CALL = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import onnx_bcast
print("start", flush=True)
began = time.monotonic()
try:
    {call}
    print("finished")
except KeyboardInterrupt:
    print(f"interrupted after {{time.monotonic() - began:.2f}} s")
"""


@pytest.mark.parametrize("call", ["onnx_bcast.check(sys.argv[1])", "onnx_bcast.shapes(sys.argv[1])"])
def test_ctrl_c_stops_a_long_call(call):
    out = _interrupted(CALL.format(call=call), str(LONG))
    assert out.startswith("interrupted after"), out
    assert float(out.split()[2]) < 3.0, out


@pytest.mark.parametrize("rewrite", ["expand", "infer", "fold"])
def test_ctrl_c_stops_a_rewrite_before_it_writes(tmp_path, rewrite):
    written = tmp_path / "out.onnx"
    call = f"onnx_bcast.{rewrite}(sys.argv[1], sys.argv[2])"
    out = _interrupted(CALL.format(call=call), str(LONG), str(written))
    assert out.startswith("interrupted after"), out
    assert not written.exists() and list(tmp_path.iterdir()) == []


def test_exception_messages_show_names_escaped(tmp_path):
    """A model refused for a node output defined twice: the message names the value, escaped, whole."""
    from onnx import TensorProto, helper
    evil = "v\x1b[31m\n::error::pwned"
    nodes = [helper.make_node("Relu", ["A"], [evil], name="a"), helper.make_node("Neg", ["A"], [evil], name="b"),
             helper.make_node("Add", [evil, "A"], ["C"], name="add")]
    graph = helper.make_graph(nodes, "main", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("C", TensorProto.FLOAT, None)])
    path = tmp_path / "evil.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(onnx_bcast.RefusedError) as caught:
        onnx_bcast.expand(path.read_bytes())
    message = str(caught.value)
    assert "\x1b" not in message and "\n::" not in message, message
    assert "v\\u{1b}[31m\\n::error::pwned" in message, message
    # The data keeps the name as the model spells it.
    [finding] = [f for f in onnx_bcast.check(path).findings if f.code == "duplicate-value"]
    assert evil in finding.message
