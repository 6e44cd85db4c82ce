"""`onnx_bcast.expand`: the command line's rewrite byte for byte, of the kind it was given, loadable by onnx and
computing the original's outputs in onnxruntime (ONNX `docs/Broadcasting.md`: the explicit `Expand` broadcasts
exactly as the implicit rule did)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import onnx
import onnxruntime as ort
import pytest

import onnx_bcast
from conftest import BINARY, FIXTURES, REPO

OK = FIXTURES / "multidirectional_add_ok.onnx"


def _conformance():
    """scripts/expand_conformance.py's loading of test data sets (the backend runner's way)."""
    # The script imports the harness package beside it, which it finds first on the path when run as a script.
    scripts = str(REPO / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    spec = importlib.util.spec_from_file_location("expand_conformance", REPO / "scripts" / "expand_conformance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli_expand(model, out, *flags):
    run = subprocess.run([str(BINARY), "expand", "--format", "json", *flags, str(model), str(out)],
                         capture_output=True, text=True)
    return run.returncode, (json.loads(run.stdout) if run.stdout.strip() else None)


def test_expand_returns_the_kind_it_was_given(tmp_path):
    data = OK.read_bytes()
    rewritten, summary = onnx_bcast.expand(data)
    assert isinstance(rewritten, bytes) and rewritten != data
    assert (summary.made_explicit, summary.expands_inserted, summary.left) == (1, 1, ())
    assert summary.actions[0].steps == ("B [3] -> Expand to [2, 3]",)
    proto, _ = onnx_bcast.expand(onnx.load(OK))
    assert isinstance(proto, onnx.ModelProto) and proto.SerializeToString() == rewritten
    from_path, _ = onnx_bcast.expand(OK)
    assert from_path == rewritten
    out = tmp_path / "explicit.onnx"
    written, summary = onnx_bcast.expand(OK, out)
    assert written == out and out.read_bytes() == rewritten and summary.output == str(out)
    assert onnx_bcast.check(rewritten, strict=True).ok


def test_expand_writes_what_the_command_line_writes_on_every_backend_model(backend, tmp_path):
    """Byte for byte the CLI's output, with its summary, on every backend model the CLI rewrites; and the rewrite
    loads in onnx (full check) and runs in onnxruntime with the original's outputs."""
    conformance = _conformance()
    from harness.compare import compare_all  # the backend runner's comparison, from the harness beside the script
    rewritten_models = compared = 0
    failures = []
    for path in backend:
        status, cli_summary = cli_expand(path, tmp_path / "cli.onnx")
        if status == 2:
            with pytest.raises(onnx_bcast.OnnxBcastError):
                onnx_bcast.expand(path)
            continue
        if status == 1 and cli_summary is None:  # refused: a broken model
            with pytest.raises(onnx_bcast.RefusedError):
                onnx_bcast.expand(path)
            continue
        data, summary = onnx_bcast.expand(path)
        assert data == (tmp_path / "cli.onnx").read_bytes(), path
        assert summary.made_explicit == cli_summary["made_explicit"], path
        if summary.made_explicit == 0 or "node" not in path.parts:
            continue
        rewritten_models += 1
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        original = onnx.load(path)
        try:
            sets = conformance.load_data_sets(original, str(path.parent))
            before = _run(path.read_bytes(), sets)
        except Exception:  # noqa: BLE001 - the original does not run here: nothing to compare the rewrite with
            continue
        after = _run(data, sets)
        for a, b in zip(before, after):
            try:
                compare_all(list(a), list(b))
            except AssertionError as e:
                failures.append(f"{path}: {e}")
        compared += 1
    assert not failures, failures[:5]
    # Since issue 28 an undecided site is left as it is, so fewer models are rewritten (287 at the time).
    assert rewritten_models > 280 and compared > 250, (rewritten_models, compared)


def _run(model: bytes, sets) -> list:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return [session.run(None, feeds) for _, feeds, _ in sets]


def test_materialize_constants_gives_the_command_lines_rewrite(tmp_path):
    model = FIXTURES / "bidirectional_expand_init_ok.onnx"
    for path in [model, OK]:
        status, cli_summary = cli_expand(path, tmp_path / "cli.onnx", "--materialize-constants")
        data, summary = onnx_bcast.expand(path, materialize_constants=True)
        assert data == (tmp_path / "cli.onnx").read_bytes()
        assert summary.materialized == cli_summary["materialized"]


def test_a_broken_model_is_refused_and_nothing_is_written(tmp_path):
    broken = FIXTURES / "crafted"
    candidates = sorted(broken.glob("*cycle*.onnx")) + sorted((FIXTURES / "malformed").glob("*undefined*.onnx"))
    assert candidates, "a fixture with a cycle or an undefined value"
    out = tmp_path / "out.onnx"
    refused = 0
    for path in candidates:
        try:
            onnx_bcast.expand(path, out)
        except onnx_bcast.RefusedError as e:
            assert "not rewritten" in str(e)
            refused += 1
    assert refused and not out.exists()
