"""examples/python/dask_check.py on a local Dask cluster (two worker processes): the backend models checked through
the engine give the command line's reports, model for model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from dask.distributed import Client, LocalCluster

from conftest import REPO, cli_json

EXAMPLE = REPO / "examples" / "python" / "dask_check.py"


def _example():
    spec = importlib.util.spec_from_file_location("dask_check", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dask_example_gives_the_command_lines_reports_on_the_backend_models(backend):
    example = _example()
    paths = [str(p) for p in backend]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        reports = example.check_models(client, paths)
        workers = len(client.scheduler_info()["workers"])
    assert workers == 2
    expected = cli_json(*paths)
    assert [r["model"] for r in reports] == paths
    differ = [r["model"] for r in reports if r != expected[r["model"]]]
    assert not differ, f"{len(differ)} differ: {differ[:5]}"


def test_the_dask_example_runs_as_a_script(tmp_path):
    folder = REPO / "fixtures"
    out = tmp_path / "reports.jsonl"
    run = subprocess.run([sys.executable, str(EXAMPLE), str(folder / "multidirectional_add_bad.onnx"),
                          str(folder / "multidirectional_add_ok.onnx"), "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr
    reports = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["summary"]["violations"] for r in reports] == [1, 0]
