"""A pytest plugin that records, while ONNX's shape-inference tests run, each model they infer and what they expect.

Loaded by scripts/onnx_shape_tests.py as `pytest -p onnx_shape_capture` in the folder of the onnx sdist's tests;
writes one JSON line per case to $ONNX_SHAPE_CAPTURE_OUT. Nothing of the tests is changed: their helpers are wrapped,
and each wrapper calls the original, so the tests pass or fail as they would.

  expect    `TestShapeInferenceHelper._assert_inferred(graph_or_model, inferred_value_infos, **kwargs)` that
            returns: the model as `_inferred` builds it, and the value infos the test expects inference to produce
            (dims as written: a `dim_param` there means that very symbol);
  symbolic  `TestSymbolicShape._assert_valueinfo_shape(inferred, value_infos)`: the model given to the
            `infer_shapes` call that returned `inferred`, and the value infos (a dim -1 there means "some symbol");
  fails     an `onnx.shape_inference.infer_shapes` call that raised in a test that passed: the test expects
            inference to reject that model.

Records of a test that did not pass are dropped.
"""

from __future__ import annotations

import base64
import json
import os

import pytest

import onnx
import onnx.shape_inference

_records: list[dict] = []
_results: dict[int, bytes] = {}  # id(inferred model) -> the model given to infer_shapes
_out = None


def _b64(message) -> str:
    return base64.b64encode(message.SerializeToString()).decode()


def _as_model(model) -> onnx.ModelProto | None:
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.ModelProto.FromString(bytes(model))
    return None


def _wrap_infer_shapes(original):
    def infer_shapes(model, *args, **kwargs):
        given = _as_model(model)
        try:
            result = original(model, *args, **kwargs)
        except Exception as e:
            if given is not None:
                _records.append({"kind": "fails", "model": _b64(given), "error": f"{type(e).__name__}: {e}"[:2000]})
            raise
        if given is not None:
            _results[id(result)] = given.SerializeToString()
        return result

    return infer_shapes


def _wrap_assert_inferred(original):
    def _assert_inferred(self, graph_or_model, inferred_value_infos, **kwargs):
        if isinstance(graph_or_model, onnx.GraphProto):
            # As `_inferred` builds it.
            model_kwargs = {k: v for k, v in kwargs.items() if k != "data_prop"}
            model_kwargs["producer_name"] = "onnx-test"
            model = onnx.helper.make_model(graph_or_model, **model_kwargs)
        else:
            model = graph_or_model
        record = {
            "kind": "expect",
            "model": _b64(model),
            "expected": [_b64(v) for v in inferred_value_infos],
            "data_prop": bool(kwargs.get("data_prop", False)),
        }
        # Only an expectation the test holds: one inside `pytest.raises` is a model inference must reject.
        result = original(self, graph_or_model, inferred_value_infos, **kwargs)
        _records.append(record)
        return result

    return _assert_inferred


def _wrap_assert_valueinfo_shape(original):
    def _assert_valueinfo_shape(self, onnx_model, value_infos):
        given = _results.get(id(onnx_model))
        result = original(self, onnx_model, value_infos)
        if given is not None:
            _records.append(
                {
                    "kind": "symbolic",
                    "model": base64.b64encode(given).decode(),
                    "expected": [_b64(v) for v in value_infos],
                    "data_prop": False,
                }
            )
        return result

    return _assert_valueinfo_shape


def pytest_configure(config):
    global _out
    path = os.environ.get("ONNX_SHAPE_CAPTURE_OUT")
    if not path:
        raise pytest.UsageError("ONNX_SHAPE_CAPTURE_OUT is not set")
    _out = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed at unconfigure)
    onnx.shape_inference.infer_shapes = _wrap_infer_shapes(onnx.shape_inference.infer_shapes)


def pytest_unconfigure(config):
    if _out is not None:
        _out.close()


def pytest_collection_finish(session):
    import sys

    helper = sys.modules.get("shape_inference_test")
    symbolic = sys.modules.get("symbolic_shape_test")
    if helper is None or symbolic is None:
        raise pytest.UsageError("shape_inference_test and symbolic_shape_test were not collected")
    cls = helper.TestShapeInferenceHelper
    cls._assert_inferred = _wrap_assert_inferred(cls._assert_inferred)
    cls = symbolic.TestSymbolicShape
    cls._assert_valueinfo_shape = _wrap_assert_valueinfo_shape(cls._assert_valueinfo_shape)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "setup":
        _records.clear()
        _results.clear()
    if call.when != "call":
        return
    report = outcome.get_result()
    if report.passed and not hasattr(report, "wasxfail"):
        for n, r in enumerate(_records):
            r["test"] = item.nodeid
            r["index"] = n
            _out.write(json.dumps(r) + "\n")
    _records.clear()
    _results.clear()
