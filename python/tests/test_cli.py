"""The wheel's `onnx-bcast` command and `python -m onnx_bcast`: the same program as the Rust binary, with the same
output and exit codes (0 clean, 1 findings, 2 could not do its job)."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile

import onnx_bcast
from conftest import BINARY, COMMAND, FIXTURES, WHEEL

CASES = [
    ["check", str(FIXTURES / "multidirectional_add_ok.onnx")],
    ["check", str(FIXTURES / "multidirectional_add_bad.onnx")],
    ["check", "--format", "json", str(FIXTURES / "symbolic_batch.onnx")],
    ["check", str(FIXTURES / "malformed" / "empty.onnx")],
    ["check", "--no-such-flag"],
    ["shapes", str(FIXTURES / "symbolic_batch.onnx")],
    ["explain", "broadcast-violation"],
    ["--version"],
    ["--help"],
]


def _run(command: list[str], args: list[str]) -> tuple[int, str, str]:
    run = subprocess.run([*command, *args], capture_output=True, text=True)
    return run.returncode, run.stdout, run.stderr


def test_the_command_on_path_is_the_binary_with_the_same_output_and_exit_codes():
    statuses = set()
    for args in CASES:
        expected = _run([str(BINARY)], args)
        assert _run([str(COMMAND)], args) == expected, args
        assert _run([sys.executable, "-m", "onnx_bcast"], args) == expected, args
        statuses.add(expected[0])
    assert statuses == {0, 1, 2}


def test_expand_through_the_command_writes_the_binarys_bytes(tmp_path):
    model = FIXTURES / "multidirectional_add_ok.onnx"
    assert _run([str(BINARY)], ["expand", str(model), str(tmp_path / "a.onnx")])[0] == 0
    assert _run([str(COMMAND)], ["expand", str(model), str(tmp_path / "b.onnx")])[0] == 0
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


def test_a_closed_pipe_is_not_an_error():
    models = [str(p) for p in sorted(FIXTURES.glob("*.onnx"))]
    run = subprocess.run(f"'{COMMAND}' check {' '.join(models)} | head -n 1", shell=True, capture_output=True,
                         text=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert len(run.stdout.splitlines()) == 1


def test_the_wheel_is_one_abi3_file_with_stubs_and_py_typed():
    assert "-cp39-abi3-manylinux2014_x86_64" in WHEEL.name, WHEEL.name
    names = zipfile.ZipFile(WHEEL).namelist()
    for needed in ["onnx_bcast/__init__.py", "onnx_bcast/__main__.py", "onnx_bcast/_native.pyi",
                   "onnx_bcast/py.typed"]:
        assert needed in names, needed
    assert any(n.startswith("onnx_bcast/_native.") and n.endswith(".so") for n in names), names
    assert not any("tests/" in n for n in names), names


def test_the_stubs_declare_everything_the_extension_exports():
    import pathlib
    stub = pathlib.Path(onnx_bcast._native.__file__).with_name("_native.pyi")
    declared = {n.name for n in ast.parse(stub.read_text()).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {t.target.id for t in ast.parse(stub.read_text()).body if isinstance(t, ast.AnnAssign)}
    exported = {n for n in dir(onnx_bcast._native) if not n.startswith("_") or n == "__version__"}
    assert exported == declared, exported ^ declared
