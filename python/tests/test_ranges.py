"""Ranges of input sizes through the API (`ranges=`, a TensorRT profile, `safe_ranges=`): the same decisions as
`onnx-bcast check --range`, on the models of fixtures/ranges/ (a position table of 64 rows; a feature pyramid
that needs multiples of 4)."""

from __future__ import annotations

import json
import subprocess

import pytest

import onnx_bcast
from conftest import BINARY, FIXTURES

POSITIONS = FIXTURES / "ranges" / "position_table.onnx"
PYRAMID = FIXTURES / "ranges" / "feature_pyramid.onnx"


def test_a_range_decides_the_position_table_as_the_command_line_does():
    report = onnx_bcast.check(POSITIONS, ranges={"seq": range(1, 513)})
    assert not report.ok
    [finding] = [f for f in report.findings if f.code == "broadcast-violation"]
    assert finding.message.startswith("fails at seq = 65 (it needs seq ≤ 64)")
    assert finding.site.over_ranges == {"result": "fails", "witness": {"seq": 65}, "smaller_unproven": False}
    run = subprocess.run([str(BINARY), "check", "--format", "json", "--range", "seq=1..512", str(POSITIONS)],
                         capture_output=True, text=True)
    assert json.loads(report.to_json()) == json.loads(run.stdout)
    assert report.ranges["failures"][0]["witness"] == {"seq": 65}


def test_every_spelling_of_a_range_is_the_same_range():
    for spelled in ("1..64", (1, 64), range(1, 65), (1, 64, 1)):
        report = onnx_bcast.check(POSITIONS, ranges={"seq": spelled})
        assert report.ok and report.ranges["symbols"]["seq"] == {"min": 1, "max": 64, "step": 1}, spelled
    with pytest.raises(ValueError, match="larger than MAX"):
        onnx_bcast.check(POSITIONS, ranges={"seq": "9..1"})
    with pytest.raises(ValueError, match="empty"):
        onnx_bcast.check(POSITIONS, ranges={"seq": range(5, 1)})
    with pytest.raises(onnx_bcast.BindError, match="no input of the model has a dim named height"):
        onnx_bcast.check(POSITIONS, ranges={"height": (1, 8)})


def test_safe_ranges_come_back_as_python_ranges_with_their_profiles():
    report = onnx_bcast.check(PYRAMID, ranges={"height": (8, 64), "width": (8, 64), "batch": (1, 2)},
                              safe_ranges=True)
    assert report.safe_ranges == {"batch": range(1, 3), "height": range(8, 65, 4), "width": range(8, 65, 4)}
    profile = report.ranges["safe"]["profile"]
    assert profile["trtexec"] == ("--minShapes=image:1x3x8x8 --optShapes=image:2x3x64x64 "
                                  "--maxShapes=image:2x3x64x64")
    assert profile["onnxruntime"]["trt_profile_max_shapes"] == "image:2x3x64x64"
    assert onnx_bcast.check(POSITIONS).safe_ranges is None


def test_a_tensorrt_profile_is_given_per_input():
    report = onnx_bcast.check(POSITIONS, min_shapes={"input_ids": (1, 1), "attention_mask": (1, 1)},
                              max_shapes="input_ids:8x128,attention_mask:8x128")
    assert report.ranges["symbols"] == {"batch": {"min": 1, "max": 8, "step": 1},
                                        "seq": {"min": 1, "max": 128, "step": 1}}
    assert report.summary.violations == 1
    with pytest.raises(ValueError, match="both min_shapes and max_shapes"):
        onnx_bcast.check(POSITIONS, max_shapes="input_ids:8x128")


def test_shapes_and_expand_over_ranges():
    over = onnx_bcast.shapes(POSITIONS, ranges={"seq": (64, 512)})
    assert over["main"]["position_embeddings"].shape == (1, 64, 8)
    assert onnx_bcast.shapes(POSITIONS)["main"]["position_embeddings"].shape == (1, "min(64, seq)", 8)
    _, summary = onnx_bcast.expand(POSITIONS.read_bytes(), ranges={"seq": (1, 512)})
    assert [left.reason.split(" (")[0] for left in summary.left] == ["fails at seq = 65 within the ranges"]
    _, summary = onnx_bcast.expand(POSITIONS.read_bytes(), ranges={"seq": (1, 64)})
    assert summary.left == () and all(a.conditions == () for a in summary.actions)
