"""`onnx-bcast check` against onnxruntime's symbolic shape inference on the deployment corpus (issue 24).

    python bench/deploy_speed.py BIN MODELS_DIR [--repeat 3] [--out bench/DEPLOY_SPEED.txt] [--decode DECODE_BIN]
        [--baseline OLD_BIN] [--api]

Run with the deployment venv's python (corpus/deploy_fetch.sh) and a release build of BIN. For every model of the
manifest: the wall time of `BIN check --format json MODEL` as a whole process (start-up, reading and decoding
the file included), and the time of `SymbolicShapeInference.infer_shapes(model, auto_merge=True)` in process, on a
model already loaded (its loading not counted); the best of `--repeat` runs of each. A crash of onnxruntime's
inference is timed to the crash and listed. Prints per-tool and total figures and the ratio per model.

Two more figures say what a per-model ratio can be. The floor of any whole process: `/bin/true` started the same
way, best of the same runs (a model on which onnxruntime takes less than ten times that cannot be checked ten times
faster by any process). And, with `--api` (the `onnx_bcast` package importable, e.g. the wheel of
scripts/python_wheel.sh on PYTHONPATH), `onnx_bcast.check(model)` in process on the same loaded ModelProto: both
tools in process, nothing else counted.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import onnx


def best(f, repeat):
    times, error = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        try:
            f()
        except Exception as ex:  # noqa: BLE001  (onnxruntime's inference crashes on some models: timed, listed)
            error = f"{type(ex).__name__}: {str(ex)[:120]}"
        times.append(time.perf_counter() - t)
    return min(times), error


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("models_dir")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--decode", default=None, help="examples/decode_model built beside BIN: the floor, decoding alone")
    ap.add_argument("--baseline", default=None, help="another onnx-bcast binary, timed the same way in the same run")
    ap.add_argument("--api", action="store_true", help="also time onnx_bcast.check(ModelProto) in process")
    a = ap.parse_args()
    a.binary, a.models_dir = os.path.abspath(a.binary), os.path.abspath(a.models_dir)
    if a.out:
        a.out = os.path.abspath(a.out)
    # onnxruntime's symbolic shape inference leaves temporary `*.data` files in the current folder.
    os.chdir(tempfile.mkdtemp(prefix="deploy-speed-"))
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    with open(os.path.join(a.models_dir, "manifest.json"), encoding="utf-8") as f:
        entries = json.load(f)["models"]
    api = __import__("onnx_bcast") if a.api else None
    rows = []
    for e in entries:
        path = os.path.join(a.models_dir, e["file"])
        def process(*argv):
            return best(lambda: subprocess.run(list(argv), capture_output=True, check=False), a.repeat)[0]

        ours = process(a.binary, "check", "--format", "json", path)
        decode = process(os.path.abspath(a.decode), path) if a.decode else None
        before = process(os.path.abspath(a.baseline), "check", "--format", "json", path) if a.baseline else None
        model = onnx.load(path)
        infer = (lambda m: SymbolicShapeInference.infer_shapes(m, int_max=2**31 - 1, auto_merge=True,
                                                               guess_output_rank=False, verbose=0))
        theirs, error = best(lambda: infer(model), a.repeat)
        loading, _ = best(lambda: infer(onnx.load(path)), a.repeat)
        in_process = best(lambda: api.check(model), a.repeat)[0] if api else None
        floor = process("/bin/true")
        rows.append({"model": e["file"], "tool": e["tool"], "check": ours, "ort": theirs, "ort_load": loading,
                     "ort_error": error, "decode": decode, "before": before, "api": in_process, "floor": floor})
        print(f"{e['file']}: check {ours * 1000:.1f} ms, ORT {theirs * 1000:.1f} ms"
              f"{' (crashed)' if error else ''}, {theirs / ours:.1f}x", file=sys.stderr, flush=True)
    lines = [f"bench/deploy_speed.py on {len(rows)} models (best of {a.repeat}); check: whole process; ORT "
             "symbolic_shape_infer(auto_merge=True): in process, model loaded", ""]
    lines.append(f"{'tool':14} {'models':>6} {'check ms':>9} {'ORT ms':>7} {'ORT+load ms':>12} {'median ratio':>13} "
                 f"{'with load':>10}")
    tools = sorted({r["tool"] for r in rows})
    for tool in tools + ["all"]:
        rs = [r for r in rows if tool in ("all", r["tool"])]
        mean = (lambda k: sum(r[k] for r in rs) / len(rs) * 1000)  # noqa: E731
        ratio = statistics.median(r["ort"] / r["check"] for r in rs)
        with_load = statistics.median(r["ort_load"] / r["check"] for r in rs)
        lines.append(f"{tool:14} {len(rs):6} {mean('check'):9.1f} {mean('ort'):7.1f} {mean('ort_load'):12.1f} "
                     f"{ratio:12.1f}x {with_load:9.1f}x")
    runs = [r for r in rows if not r["ort_error"]]
    total = (lambda k: sum(r[k] for r in runs))  # noqa: E731
    lines += ["", f"where ORT runs ({len(runs)} models): check {total('check'):.2f} s, ORT {total('ort'):.2f} s "
              f"({total('ort') / total('check'):.1f}x), ORT with onnx.load {total('ort_load'):.2f} s "
              f"({total('ort_load') / total('check'):.1f}x); per model the ratio is at least "
              f"{min(r['ort'] / r['check'] for r in runs):.1f}x (median "
              f"{statistics.median(r['ort'] / r['check'] for r in runs):.1f}x; with load: at least "
              f"{min(r['ort_load'] / r['check'] for r in runs):.1f}x, median "
              f"{statistics.median(r['ort_load'] / r['check'] for r in runs):.1f}x)",
              f"ORT crashes on {len(rows) - len(runs)}: " + ", ".join(r["model"] for r in rows if r["ort_error"])]
    for key, what in (("decode", "decoding alone (the floor)"), ("before", f"the baseline binary ({a.baseline})")):
        if rows and rows[0][key] is not None:
            theirs = sum(r[key] for r in rows)
            lines.append(f"{what}: {theirs:.2f} s on all {len(rows)} models against check's "
                         f"{sum(r['check'] for r in rows):.2f} s; per model, check ÷ it: median "
                         f"{statistics.median(r['check'] / r[key] for r in rows):.2f}x")
    lines += per_model_bounds(runs)
    lines += one_process(a, runs)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def per_model_bounds(runs):
    """Where the per-model ratio falls under 10x, and what bounds it: the floor of any process, in-process time."""
    if not runs:
        return []
    floor = min(r["floor"] for r in runs)
    lines = ["", f"a process that does nothing (/bin/true, started the same way): {floor * 1000:.2f} ms at best"]
    under = sorted((r for r in runs if r["ort"] / r["check"] < 10), key=lambda r: r["ort"] / r["check"])
    bound = [r for r in runs if r["ort"] < 10 * floor]
    lines.append(f"per model, whole process under 10x: {len(under)} of {len(runs)}; on {len(bound)} of them "
                 "onnxruntime takes less than 10x the do-nothing process, so no process can be 10x faster there")
    decoded = [r for r in runs if r["decode"] is not None and r["ort"] < 10 * r["decode"]]
    if runs[0]["decode"] is not None:
        lines.append(f"on {len(decoded)} of them onnxruntime takes less than 10x a process that only decodes the "
                     "model (examples/decode_model), so no process that reads the model can be 10x faster there")
    api = [r for r in runs if r["api"] is not None]
    if api:
        ratios = [r["ort"] / r["api"] for r in api]
        lines.append(f"in process (onnx_bcast.check(ModelProto) against symbolic_shape_infer, same loaded model): "
                     f"per model at least {min(ratios):.1f}x, median {statistics.median(ratios):.1f}x; under 10x: "
                     f"{sum(x < 10 for x in ratios)} of {len(api)}")
    lines.append("")
    lines.append(f"{'model (whole process under 10x)':44} {'check ms':>9} {'ORT ms':>7} {'ratio':>6} "
                 f"{'floor ms':>9} {'API ms':>7} {'API ratio':>10}")
    for r in under:
        in_process = (f"{r['api'] * 1000:7.2f} {r['ort'] / r['api']:9.1f}x" if r["api"] is not None
                      else f"{'-':>7} {'-':>10}")
        lines.append(f"{r['model'][:44]:44} {r['check'] * 1000:9.2f} {r['ort'] * 1000:7.2f} "
                     f"{r['ort'] / r['check']:5.1f}x {r['floor'] * 1000:9.2f} {in_process}")
    return lines


def one_process(a, runs):
    """The models where onnxruntime runs, checked by one process (`check M1 M2 ...`), on one thread and on the
    default pool: the whole process's time per model against onnxruntime's mean time per model in process."""
    if not runs:
        return []
    paths = [os.path.join(a.models_dir, r["model"]) for r in runs]
    ort = sum(r["ort"] for r in runs) / len(runs)
    lines = [""]
    for jobs, what in (("1", "one thread (--jobs 1)"), (None, "the default pool (one thread per core)")):
        argv = [a.binary, "check", "--format", "json", *(["--jobs", jobs] if jobs else []), *paths]
        took = best(lambda: subprocess.run(argv, capture_output=True, check=False), a.repeat)[0]
        lines.append(f"one process checking the {len(runs)} models, {what}: {took:.3f} s, "
                     f"{took / len(runs) * 1000:.2f} ms a model against onnxruntime's {ort * 1000:.2f} ms a model "
                     f"in process: {ort * len(runs) / took:.1f}x")
    return lines


if __name__ == "__main__":
    sys.exit(main())
