"""The pre-commit hook installed from the wheel (`language: python`, the wheel as its only dependency): pre-commit
makes its own venv and pip installs the wheel there, nothing is compiled; the hook fails on a staged model with a
broadcast violation and passes on a clean one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, WHEEL

CONFIG = """\
repos:
  - repo: local
    hooks:
      - id: onnx-bcast-check
        name: onnx-bcast check
        entry: onnx-bcast check --force-exclude
        language: python
        additional_dependencies: ["{wheel}"]
        files: \\.onnx$
        require_serial: true
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_the_pre_commit_hook_installs_from_the_wheel_and_judges_staged_models(tmp_path):
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(CONFIG.format(wheel=WHEEL))
    shutil.copy(FIXTURES / "multidirectional_add_ok.onnx", repo / "ok.onnx")
    _git(repo, "add", ".")
    pre_commit = [sys.executable, "-m", "pre_commit", "run", "--all-files"]
    # No cargo on PATH: installing the hook must not compile anything.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "cargo").exists())
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PATH": path}
    clean = subprocess.run(pre_commit, cwd=repo, env=env, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    shutil.copy(FIXTURES / "multidirectional_add_bad.onnx", repo / "bad.onnx")
    _git(repo, "add", "bad.onnx")
    failing = subprocess.run(pre_commit, cwd=repo, env=env, capture_output=True, text=True)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "bad.onnx: error[broadcast-violation] main/add (Add)" in failing.stdout
    installed = list((tmp_path / "cache").rglob("onnx_bcast/_native*.so"))
    assert installed, "the hook's venv holds the wheel's extension"
