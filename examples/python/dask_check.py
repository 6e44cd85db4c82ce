#!/usr/bin/env python3
"""Check a large set of ONNX models on a Dask cluster, gathering one JSON report per model.

Each model is checked where it lies: workers are handed paths (on a shared file system), open them memory-mapped and
send back only the report, the same object `onnx-bcast check --format json` prints for that model (or its
`{"model", "error"}` object when it cannot be read). Models go to the workers in batches, so that scheduling costs
little beside the check itself.

    pip install onnx-bcast "dask[distributed]"
    python dask_check.py MODELS_DIR [MORE ...] [--scheduler tcp://HOST:8786] [--strict] [--out reports.jsonl]

Without --scheduler a local cluster is started (one worker process per core). Exit status: 0 when every model is
clean, 1 when one has an error-level finding, 2 when one could not be read, as the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable, List

BATCH = 16


def model_paths(roots: Iterable[str]) -> List[str]:
    """The .onnx files named, and those under the folders named, sorted."""
    paths: List[str] = []
    for root in map(Path, roots):
        paths += [str(p) for p in sorted(root.rglob("*.onnx"))] if root.is_dir() else [str(root)]
    return paths


def check_batch(paths: List[str], strict: bool) -> List[dict]:
    """Runs on a worker: each model's report as the command line's JSON object."""
    import onnx_bcast

    reports = []
    for path in paths:
        try:
            reports.append(json.loads(onnx_bcast.check(path, strict=strict).to_json()))
        except onnx_bcast.OnnxBcastError as e:
            reports.append({"model": path, "error": str(e)})
    return reports


def check_models(client, paths: List[str], *, strict: bool = False, batch: int = BATCH) -> List[dict]:
    """Maps `check` over `paths` on the cluster behind `client`; the reports come back in the order of `paths`."""
    batches = [paths[i : i + batch] for i in range(0, len(paths), batch)]
    futures = client.map(check_batch, batches, strict=strict, pure=False)
    return [report for reports in client.gather(futures) for report in reports]


def exit_status(reports: List[dict]) -> int:
    if any("error" in r for r in reports):
        return 2
    return 1 if any(r["summary"]["errors"] for r in reports) else 0


def main() -> int:
    from dask.distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="model files and folders")
    parser.add_argument("--scheduler", help="address of a running Dask scheduler (default: a local cluster)")
    parser.add_argument("--strict", action="store_true", help="every implicit broadcast is an error")
    parser.add_argument("--out", help="write the reports here, one JSON object per line (default: stdout)")
    args = parser.parse_args()
    paths = model_paths(args.models)
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        client = Client(LocalCluster(threads_per_worker=1, dashboard_address=None))
    with client:
        reports = check_models(client, paths, strict=args.strict)
    out = open(args.out, "w") if args.out else sys.stdout
    with out if args.out else open(1, "w", closefd=False) as stream:
        for report in reports:
            stream.write(json.dumps(report) + "\n")
    return exit_status(reports)


if __name__ == "__main__":
    sys.exit(main())
