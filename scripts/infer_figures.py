"""How many values `onnx-bcast infer` resolves, against onnxruntime's and onnx's shape inference, and how fast.

    python scripts/infer_figures.py BIN OUT_MD [--corpus MODELS_DIR] [--torch MODELS_DIR] [--backend DATA_DIR]

Not part of `cargo test`: it needs onnxruntime's `symbolic_shape_infer`, which imports sympy, and the project venv
has none. To reproduce, use the PyTorch corpus venv, which has the pinned onnx 1.22.0 and onnxruntime 1.31.1 and
sympy (`bash corpus/torch_fetch.sh` builds it and prints the models folder; its `manifest.json` names the python):

    cargo build --release
    PY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["python"])' "$(bash corpus/torch_fetch.sh)/manifest.json")
    $PY scripts/infer_figures.py target/release/onnx-bcast target/infer-figures.md \\
        --corpus .cache/corpus/models --torch "$(bash corpus/torch_fetch.sh)"

For every model, three tools write shapes into it:

  onnx-bcast  `BIN infer IN OUT` (the whole process, reading and writing the file included);
  ORT         `SymbolicShapeInference.infer_shapes(model, int_max=2**31 - 1, auto_merge=True)` (the call only);
  onnx        `onnx.shape_inference.infer_shapes(model, data_prop=True)` (the call only).

A value is a node output of any graph (main graph and subgraphs; function bodies are not counted, since only
onnx-bcast writes them). It is *resolved* when the written model declares it with a rank and every dim a dim_value
or a dim_param, *resolved, no made-up name* when none of those dim_params is a name the tool made up for a size it
could not infer (onnxruntime's `unk__N`; onnx-bcast leaves such a dim empty instead), and *static* when every dim is
a dim_value. A crash counts nothing resolved and is listed.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import onnx

from harness.corpus import backend_tests, load_manifest
from harness.graph import bodies, declared_dims, onnx_data_prop, ort_symbolic

TOOLS = ["onnx-bcast", "ORT symbolic_shape_infer", "onnx infer_shapes(data_prop)"]


def count(model):
    total = resolved = named = static = 0
    for _, g in bodies(model):
        decl = {}
        for vi in list(g.value_info) + list(g.output):
            d = declared_dims(vi)
            if d is not None and all(x is not None and x != "" for x in d):
                decl[vi.name] = d
        for node in g.node:
            for o in filter(None, node.output):
                total += 1
                if o in decl:
                    resolved += 1
                    named += not any(isinstance(x, str) and x.startswith("unk__") for x in decl[o])
                    static += all(isinstance(x, int) for x in decl[o])
    return {"values": total, "resolved": resolved, "named": named, "static": static}


def run_tool(tool, binary, path, work):
    t = time.monotonic()
    try:
        if tool == "onnx-bcast":
            out = os.path.join(work, "out.onnx")
            p = subprocess.run([binary, "infer", path, out], capture_output=True, timeout=1800)
            secs = time.monotonic() - t
            if p.returncode == 2 or not os.path.exists(out):
                raise RuntimeError(p.stderr.decode()[-300:])
            model = onnx.load(out, load_external_data=False)
        else:
            model = onnx.load(path)
            t = time.monotonic()
            model = (ort_symbolic if tool.startswith("ORT") else onnx_data_prop)(model)
            if model is None:
                raise RuntimeError("infer_shapes returned None")
            secs = time.monotonic() - t
        return dict(count(model), seconds=round(secs, 3), crash=None)
    except Exception as ex:  # noqa: BLE001
        return {"values": 0, "resolved": 0, "named": 0, "static": 0, "seconds": round(time.monotonic() - t, 3),
                "crash": f"{type(ex).__name__}: {str(ex)[:200]}"}


def models_of(args):
    out = []
    if args.corpus:
        for d, _, fs in sorted(os.walk(args.corpus)):
            out += [("corpus", os.path.join(d, f)) for f in sorted(fs) if f.endswith(".onnx")]
    if args.torch:
        out += [("torch", os.path.join(args.torch, e["file"])) for e in load_manifest(args.torch)["models"]]
    if args.backend:
        out += [("backend", os.path.join(args.backend, t, "model.onnx")) for t in backend_tests(args.backend)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("out_md")
    ap.add_argument("--corpus")
    ap.add_argument("--torch")
    ap.add_argument("--backend")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    sums = {}
    crashes = []
    with tempfile.TemporaryDirectory() as work:
        for group, path in models_of(args):
            before = count(onnx.load(path, load_external_data=False))
            s = sums.setdefault(group, {"models": 0, "values": 0, "declared before": 0})
            s["models"] += 1
            s["values"] += before["values"]
            s["declared before"] += before["resolved"]
            for tool in TOOLS:
                r = run_tool(tool, binary, path, work)
                t = s.setdefault(tool, {"resolved": 0, "named": 0, "static": 0, "seconds": 0.0, "crashes": 0})
                for k in ("resolved", "named", "static", "seconds"):
                    t[k] += r[k]
                if r["crash"]:
                    t["crashes"] += 1
                    crashes.append(f"{tool}: {os.path.basename(path)}: {r['crash']}")
            print(f"{group} {os.path.basename(path)}: done", file=sys.stderr, flush=True)
    lines = ["# Values with a fully resolved shape after each tool", "",
             "Written by scripts/infer_figures.py (see its docstring for what is counted and how to reproduce).", "",
             "| set | models | values | declared before | tool | resolved | resolved, no made-up name | static | "
             "crashes | seconds |", "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    pct = lambda a, b: f"{a} ({100 * a / b:.1f}%)" if b else str(a)  # noqa: E731
    for group, s in sums.items():
        for tool in TOOLS:
            t = s[tool]
            lines.append(f"| {group} | {s['models']} | {s['values']} | {s['declared before']} | {tool} | "
                         f"{pct(t['resolved'], s['values'])} | {pct(t['named'], s['values'])} | "
                         f"{pct(t['static'], s['values'])} | {t['crashes']} | {t['seconds']:.1f} |")
    lines += ["", "Crashes:", ""] + [f"- {c}" for c in crashes]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out_md, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
