#!/usr/bin/env python3
"""What the Python API costs over the command line, and what it saves over onnx's own shape inference.

    target/wheel-test-venv/bin/python bench/python_overhead.py --binary BIN [--model NODES_100000.onnx] \
        [--exports DIR] [--corpus DIR] [--rounds 7]

(The venv is the one scripts/python_wheel.sh installs the wheel into; BIN is a release `onnx-bcast`, e.g.
target/bench/bin/onnx-bcast from bench/run.sh; DIR holds PyTorch exports, e.g. the corpus corpus/torch_fetch.sh
makes.) `bench/run.sh python` runs it with those defaults.

1. `onnx_bcast.check(path)` in this process against `onnx-bcast check PATH` as a command (its process start
   included, as a user pays it), rounds interleaved, medians compared; also the API in a fresh interpreter
   (`python -c "import onnx_bcast; onnx_bcast.check(path)"`), which pays Python's start and the import.
2. On each transformer export: `onnx_bcast.check(model_proto)` (serialization included) against
   `onnx.shape_inference.infer_shapes(model_proto)` on the same loaded object.
3. With `--corpus DIR` (the PyTorch corpus of corpus/torch_fetch.sh), per model: `check(model_proto)` against
   `infer_shapes(model_proto)`, and `check(path)` in process against the `onnx-bcast check` command on the same
   file, all four interleaved round by round (a burst of load from other work falls on every contender), medians;
   and what check(ModelProto) pays before any work of its own, alone: the model serialized (`SerializeToString()`;
   over 8 MiB of weights, a copy without them, serialized): infer_shapes divided by it is the most check(ModelProto)
   could be faster ("bound"), were decoding and checking free. Beside it, the library decoding those bytes in this
   process (`_native._decode`, the bench's entry: the model opened as `check` opens it, on the calling thread with no
   worker handover, and dropped): infer_shapes divided by serialization plus decoding is the most check(ModelProto)
   could be faster were only checking free ("floor"); below 10x, no work on the analysis can reach the goal.
   Goals of issue 29: check(ModelProto) at least 10x faster than infer_shapes on every model, check(path) within
   1.2x of the command.

Prints a table; exit 0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import onnx

import onnx_bcast
from onnx_bcast import _native
from onnx_bcast._api import _analysable


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def cli_overhead(binary: str, model: str, rounds: int) -> None:
    onnx_bcast.check(model)  # page cache warm for both
    cli, api, fresh = [], [], []
    for _ in range(rounds):
        cli.append(timed(lambda: subprocess.run([binary, "check", model], stdout=subprocess.DEVNULL)))
        api.append(timed(lambda: onnx_bcast.check(model)))
        fresh.append(timed(lambda: subprocess.run(
            [sys.executable, "-c", "import sys, onnx_bcast; onnx_bcast.check(sys.argv[1])", model])))
    c, a, f = (statistics.median(x) for x in (cli, api, fresh))
    load = os.getloadavg()[0]
    print(f"## check of {Path(model).name}, {rounds} interleaved rounds (median, min; load average {load:.1f})\n")
    print("| | median | min | vs CLI |")
    print("|---|--:|--:|--:|")
    print(f"| `onnx-bcast check` (command) | {c:.3f} s | {min(cli):.3f} s | 1.00× |")
    print(f"| `onnx_bcast.check(path)` in process | {a:.3f} s | {min(api):.3f} s | {a / c:.2f}× |")
    print(f"| fresh `python -c` import + check | {f:.3f} s | {min(fresh):.3f} s | {f / c:.2f}× |")
    print()


def against_infer_shapes(exports: list[Path], rounds: int) -> None:
    print(f"## check(ModelProto) against onnx.shape_inference.infer_shapes, {rounds} rounds (median)\n")
    print("| export | nodes | MB | infer_shapes | check(ModelProto) | faster |")
    print("|---|--:|--:|--:|--:|--:|")
    ratios = []
    for path in exports:
        model = onnx.load(str(path))
        ours = statistics.median(timed(lambda: onnx_bcast.check(model)) for _ in range(rounds))
        theirs = statistics.median(timed(lambda: onnx.shape_inference.infer_shapes(model)) for _ in range(rounds))
        ratios.append(theirs / ours)
        mb = model.ByteSize() / 1e6
        print(f"| {path.name} | {len(model.graph.node)} | {mb:.1f} | {theirs * 1e3:.1f} ms | {ours * 1e3:.1f} ms "
              f"| {theirs / ours:.1f}× |")
    print(f"\nmedian {statistics.median(ratios):.1f}×, least {min(ratios):.1f}× faster over {len(ratios)} exports\n")


def timed_cpu(f) -> tuple[float, float]:
    """Wall time and this process's CPU time (every thread's) of one call."""
    cpu, start = time.process_time(), time.perf_counter()
    f()
    return time.perf_counter() - start, time.process_time() - cpu


def against_corpus(binary: str, folder: Path, rounds: int) -> None:
    models = sorted(folder.glob("*.onnx"))
    assert models, f"no .onnx in {folder}"
    print(f"## Per model of {folder.name}: check(ModelProto) against infer_shapes, check(path) against the command; "
          f"{rounds} interleaved rounds (median wall time; CPU time of this process beside, which a loaded machine "
          "leaves alone)\n")
    print("| model | nodes | MB | infer_shapes | check(ModelProto) | faster | CPU: infer_shapes | check | faster "
          "| serialize | bound | decode | floor | command | check(path) | vs command |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    faster, faster_cpu, versus, bounds, floors, floors_cpu = [], [], [], [], [], []
    for path in models:
        model = onnx.load(str(path))
        onnx_bcast.check(model), onnx.shape_inference.infer_shapes(model)  # first calls (imports, caches) untimed
        # The bytes check(ModelProto) hands the extension, made once: decoding is timed on its own.
        native, _, left_out = _analysable(model)
        times: dict[str, list[tuple[float, float]]] = {
            "theirs": [], "ours": [], "ser": [], "dec": [], "cli": [], "api": []}
        for _ in range(rounds):
            times["theirs"].append(timed_cpu(lambda: onnx.shape_inference.infer_shapes(model)))
            times["ours"].append(timed_cpu(lambda: onnx_bcast.check(model)))
            times["ser"].append(timed_cpu(lambda: _analysable(model)))
            times["dec"].append(timed_cpu(lambda: _native._decode(native, left_out=left_out)))
            times["cli"].append(timed_cpu(
                lambda: subprocess.run([binary, "check", str(path)], stdout=subprocess.DEVNULL)))
            times["api"].append(timed_cpu(lambda: onnx_bcast.check(str(path))))
        theirs, ours, ser, dec, cli, api = (
            statistics.median(w for w, _ in times[k]) for k in ("theirs", "ours", "ser", "dec", "cli", "api"))
        theirs_cpu, ours_cpu, ser_cpu, dec_cpu = (
            statistics.median(c for _, c in times[k]) for k in ("theirs", "ours", "ser", "dec"))
        faster.append((theirs / ours, path.name))
        faster_cpu.append((theirs_cpu / ours_cpu, path.name))
        versus.append((api / cli, path.name))
        bounds.append((theirs / ser, path.name))
        floors.append((theirs / (ser + dec), path.name))
        floors_cpu.append((theirs_cpu / (ser_cpu + dec_cpu), path.name))
        print(f"| {path.name} | {len(model.graph.node)} | {path.stat().st_size / 1e6:.1f} | {theirs * 1e3:.2f} ms "
              f"| {ours * 1e3:.2f} ms | {theirs / ours:.1f}× | {theirs_cpu * 1e3:.2f} ms | {ours_cpu * 1e3:.2f} ms "
              f"| {theirs_cpu / ours_cpu:.1f}× | {ser * 1e3:.2f} ms | {theirs / ser:.0f}× | {dec * 1e3:.2f} ms "
              f"| {theirs / (ser + dec):.1f}× | {cli * 1e3:.2f} ms "
              f"| {api * 1e3:.2f} ms | {api / cli:.2f}× |")
    for label, ratios in (("wall", faster), ("CPU", faster_cpu)):
        least = min(ratios)
        print(f"\ncheck(ModelProto) against infer_shapes ({label}): median "
              f"{statistics.median(r for r, _ in ratios):.1f}×, least {least[0]:.1f}× ({least[1]}); "
              f"{sum(r >= 10 for r, _ in ratios)} of {len(ratios)} models at least 10×")
    print(f"\nserialization alone against infer_shapes (the bound): median {statistics.median(r for r, _ in bounds):.0f}×, "
          f"least {min(bounds)[0]:.1f}× ({min(bounds)[1]}); {sum(r < 10 for r, _ in bounds)} of {len(bounds)} models "
          "under 10× even with decoding and checking free")
    for label, ratios in (("wall", floors), ("CPU", floors_cpu)):
        print(f"\nserialization and decoding against infer_shapes (the floor, {label}): median "
              f"{statistics.median(r for r, _ in ratios):.1f}×, least {min(ratios)[0]:.1f}× ({min(ratios)[1]}); "
              f"{sum(r >= 10 for r, _ in ratios)} of {len(ratios)} models could reach 10× at best (only checking free)")
    worst = max(versus)
    print(f"\ncheck(path) against the command: median {statistics.median(r for r, _ in versus):.2f}×, most "
          f"{worst[0]:.2f}× ({worst[1]}); {sum(r <= 1.2 for r, _ in versus)} of {len(versus)} models within 1.2×; "
          f"load average {os.getloadavg()[0]:.1f}\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", help="the 100,000-node benchmark model")
    parser.add_argument("--exports", help="a folder of transformer exports")
    parser.add_argument("--corpus", help="the PyTorch corpus' models folder: a per-model table")
    parser.add_argument("--pattern", default="*.torchscript17.onnx")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if args.model:
        cli_overhead(args.binary, args.model, args.rounds)
    if args.exports:
        exports = sorted(Path(args.exports).glob(args.pattern))
        assert exports, f"no {args.pattern} in {args.exports}"
        against_infer_shapes(exports, args.rounds)
    if args.corpus:
        against_corpus(args.binary, Path(args.corpus), args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
