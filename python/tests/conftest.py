"""The pytest suite of the Python package, run against the INSTALLED wheel by scripts/python_wheel.sh (which sets the
environment below). Every input it needs is required: a missing one fails the run, nothing is skipped."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise pytest.UsageError(f"{name} is not set: run the suite through scripts/python_wheel.sh")
    return value


REPO = Path(_required("ONNX_BCAST_REPO"))
BACKEND = Path(_required("ONNX_BCAST_BACKEND_DATA"))
BINARY = Path(_required("ONNX_BCAST_BINARY"))
WHEEL = Path(_required("ONNX_BCAST_WHEEL"))
FIXTURES = REPO / "fixtures"
#: The wheel's own `onnx-bcast` command, beside the venv's python.
COMMAND = Path(sys.executable).parent / "onnx-bcast"


def backend_models() -> list[Path]:
    """Every model of the ONNX backend test data (node, light, simple, real, pytorch-converted, pytorch-operator)."""
    models = sorted(Path(p) for p in glob.glob(str(BACKEND / "**" / "*.onnx"), recursive=True))
    assert len(models) > 1000, f"{BACKEND}: only {len(models)} models"
    return models


def fixture_models() -> list[Path]:
    """The repository's small models, crafted and inference ones included (not the malformed ones)."""
    models = sorted(p for p in FIXTURES.rglob("*.onnx") if "malformed" not in p.parts)
    assert len(models) > 50, f"{FIXTURES}: only {len(models)} models"
    return models


def cli_json(*args: str | os.PathLike, binary: Path = BINARY) -> dict[str, dict]:
    """`onnx-bcast check --format json ARGS...` of the Rust binary: each model's object by its path."""
    run = subprocess.run([str(binary), "check", "--format", "json", "--no-config", *map(str, args)],
                         capture_output=True, text=True)
    assert run.returncode in (0, 1, 2), run.stderr
    objects = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    return {o["model"]: o for o in objects}


@pytest.fixture(scope="session")
def backend() -> list[Path]:
    return backend_models()


@pytest.fixture(scope="session")
def fixtures() -> list[Path]:
    return fixture_models()
