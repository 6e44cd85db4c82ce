"""Issue 28, the Python API a newcomer expects: `infer`, `fold` and `explain` as the command line's; `check` on a
folder gives a report per model, as `onnx-bcast check FOLDER` does; a missing file is a `FileNotFoundError` that is
also a `ModelError`; a wrong argument is a `TypeError` or `ValueError` naming it; exceptions show as
`onnx_bcast.ModelError`; `dir(onnx_bcast)` is the public names only; a `bind` the model contradicts is a finding of
`check`, and an error of `shapes` and `expand`."""

from __future__ import annotations

import json
import shutil
import subprocess
import traceback

import onnx
import pytest

import onnx_bcast
from conftest import BINARY, FIXTURES, cli_json

OK = FIXTURES / "multidirectional_add_ok.onnx"
BIND_DECLARED = FIXTURES / "contradiction" / "bind_declared.onnx"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True)


def test_infer_writes_the_command_lines_bytes_and_summary(tmp_path, fixtures):
    for path in fixtures[:40]:
        cli_out, api_out = tmp_path / "cli.onnx", tmp_path / "api.onnx"
        run = _cli("infer", "--format", "json", path, cli_out)
        if run.returncode == 2:
            with pytest.raises(onnx_bcast.OnnxBcastError):
                onnx_bcast.infer(path, api_out)
            continue
        if run.returncode == 1 and not cli_out.exists():
            with pytest.raises(onnx_bcast.RefusedError):
                onnx_bcast.infer(path, api_out)
            continue
        written, summary = onnx_bcast.infer(path, api_out)
        assert written == api_out and api_out.read_bytes() == cli_out.read_bytes(), path
        expected = json.loads(run.stdout)
        assert (summary.values, summary.resolved, len(summary.mismatches)) == (
            expected["values"], expected["resolved"], len(expected["mismatches"])), path
    model, summary = onnx_bcast.infer(onnx.load(str(OK)))
    assert isinstance(model, onnx.ModelProto) and summary.output is None


def test_fold_undoes_expand_as_the_command_line_does(tmp_path):
    explicit, _ = onnx_bcast.expand(OK.read_bytes())
    folded, summary = onnx_bcast.fold(explicit)
    assert folded == OK.read_bytes(), "fold undoes expand byte for byte"
    assert summary.candidates == len(summary.folded) + len(summary.removed_with) + len(summary.kept)
    kept = FIXTURES / "fold" / "graph_output_kept.pb"
    run = _cli("fold", "--format", "json", "--dry-run", kept)
    _, summary = onnx_bcast.fold(kept)
    assert [k["reason"]["kind"] for k in summary.kept] == [k["reason"]["kind"] for k in json.loads(run.stdout)["kept"]]


def test_explain_is_the_command_lines_text():
    assert onnx_bcast.explain("broadcast-violation") == _cli("explain", "broadcast-violation").stdout
    assert onnx_bcast.explain() == _cli("explain").stdout
    with pytest.raises(ValueError, match="^code: unknown code 'nope'"):
        onnx_bcast.explain("nope")


def test_check_on_a_folder_gives_a_report_per_model_like_the_command_line(tmp_path):
    folder = tmp_path / "models"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(OK, folder / "a.onnx")
    shutil.copy(FIXTURES / "multidirectional_add_bad.onnx", folder / "sub" / "b.onnx")
    (folder / "c.onnx").write_bytes(b"not a model")
    reports = onnx_bcast.check(folder)
    assert isinstance(reports, list) and [r.model for r in reports] == [
        str(folder / "a.onnx"), str(folder / "c.onnx"), str(folder / "sub" / "b.onnx")]
    expected = cli_json(folder)
    for report in reports:
        assert json.loads(report.to_json()) == expected[report.model], report.model
    ok, unreadable, bad = reports
    assert ok.ok and not bad.ok and bad.findings[0].code == "broadcast-violation"
    assert not unreadable.ok and unreadable.error.endswith("not a binary ONNX model (looks like text)")
    assert unreadable.findings == [] and "could not be checked" in repr(unreadable)


def test_a_missing_file_is_a_file_not_found_error_and_a_model_error(tmp_path):
    missing = tmp_path / "missing.onnx"
    for call in (onnx_bcast.check, onnx_bcast.shapes, onnx_bcast.expand, onnx_bcast.infer, onnx_bcast.fold):
        with pytest.raises(FileNotFoundError) as raised:
            call(missing)
        assert isinstance(raised.value, onnx_bcast.ModelError), call
        assert raised.value.filename == str(missing)
        assert str(raised.value) == cli_json(missing)[str(missing)]["error"]
    with pytest.raises(onnx_bcast.ModelError):
        onnx_bcast.check(missing)


def test_wrong_arguments_raise_type_and_value_errors_naming_them(tmp_path):
    cases = [
        (lambda: onnx_bcast.check(OK, strict="yes"), TypeError, "^strict: "),
        (lambda: onnx_bcast.check(OK, deny=3), TypeError, "^deny: "),
        (lambda: onnx_bcast.check(OK, warn=[3]), TypeError, "^warn: "),
        (lambda: onnx_bcast.check(OK, allow=["no-such-code"]), ValueError, "^allow: "),
        (lambda: onnx_bcast.check(42), TypeError, "^model: "),
        (lambda: onnx_bcast.expand(OK, 42), TypeError, "^out: "),
        (lambda: onnx_bcast.expand(OK, max_materialize_bytes=-1), ValueError, "^max_materialize_bytes: "),
        (lambda: onnx_bcast.expand(OK, inline_external_below="1KiB"), TypeError, "^inline_external_below: "),
        (lambda: onnx_bcast.expand(OK, materialize_constants=1), TypeError, "^materialize_constants: "),
        (lambda: onnx_bcast.infer(OK, overwrite_declared="no"), TypeError, "^overwrite_declared: "),
        (lambda: onnx_bcast.fold(OK, materialized=None), TypeError, "^materialized: "),
        (lambda: onnx_bcast.explain(1), TypeError, "^code: "),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()


def test_exceptions_are_shown_by_the_package_name():
    for name in ("OnnxBcastError", "ModelError", "ModelNotFoundError", "RefusedError", "BindError", "InternalError"):
        error = getattr(onnx_bcast, name)
        assert f"{error.__module__}.{error.__qualname__}" == f"onnx_bcast.{name}", name
    try:
        onnx_bcast.check(b"not a model")
    except onnx_bcast.ModelError:
        shown = traceback.format_exc()
    assert "onnx_bcast.ModelError: <bytes>: not a binary ONNX model" in shown, shown
    assert "_native" not in shown.splitlines()[-1]


def test_the_namespace_is_the_public_names_only():
    assert dir(onnx_bcast) == sorted([*onnx_bcast.__all__, "__version__"])
    for name in onnx_bcast.__all__:
        assert hasattr(onnx_bcast, name), name
    for helper in ("Any", "Dict", "json", "os", "dataclass"):
        assert not hasattr(onnx_bcast, helper), helper


def test_a_contradicting_bind_is_a_finding_of_check_and_an_error_of_shapes_and_expand():
    report = onnx_bcast.check(BIND_DECLARED, bind={"N": 5})
    assert not report.ok and {f.code for f in report.findings} == {"bind-contradiction"}
    assert len(report.findings) == 5
    run = _cli("check", "--format", "json", "--bind", "N=5", BIND_DECLARED)
    assert json.loads(report.to_json()) == json.loads(run.stdout)
    for call in (onnx_bcast.shapes, onnx_bcast.expand, onnx_bcast.infer):
        with pytest.raises(onnx_bcast.BindError, match="bind-contradiction"):
            call(BIND_DECLARED, bind={"N": 5})
