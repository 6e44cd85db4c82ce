"""The Python examples of README.md and docs/python.md, run as they are written (issue 28: none can go stale), in
a folder holding `model.onnx` (a model with a `seq ≤ 64` condition) and the repository's `fixtures/`. A block that
defines `test_…` functions has them called, with a `tmp_path`."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from conftest import FIXTURES, REPO

PAGES = [REPO / "README.md", REPO / "docs" / "python.md"]


def _blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        for k, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S)):
            found.append((page.name, k, block))
    return found


@pytest.mark.parametrize("page,index,code", _blocks(), ids=[f"{page}-{k}" for page, k, _ in _blocks()])
def test_the_python_examples_run_as_written(page, index, code, tmp_path, monkeypatch):
    shutil.copy(FIXTURES / "inference" / "slice_buffer_to_sequence.onnx", tmp_path / "model.onnx")
    os.symlink(FIXTURES, tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, f"{page} python block {index}", "exec"), namespace)
    for name, function in list(namespace.items()):
        if name.startswith("test_") and callable(function):
            scratch = tmp_path / name
            scratch.mkdir()
            function(scratch)


def test_every_page_has_python_examples():
    assert {page for page, _, _ in _blocks()} == {p.name for p in PAGES}
