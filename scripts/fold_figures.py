#!/usr/bin/env python3
"""How many Expand and Tile nodes `onnx-bcast fold` removes from the PyTorch export corpus as exported, against
onnxsim and onnxruntime's offline optimizer on the same models. Not part of `cargo test` (onnxsim is no test
dependency); it writes corpus/FOLD_FIGURES.md.

Reproduce (the study venv lives outside the repository):

    python3 -m venv ~/.cache/onnx-bcast/study-venv
    ~/.cache/onnx-bcast/study-venv/bin/pip install onnx==1.22.0 onnxruntime==1.31.1 numpy==2.4.6 onnxsim==0.8.1
    cargo build --release
    ~/.cache/onnx-bcast/study-venv/bin/python scripts/fold_figures.py target/release/onnx-bcast \\
        "$(bash corpus/torch_fetch.sh)" corpus/FOLD_FIGURES.md

Per model (every file of the corpus' manifest, dynamic axes as exported):
- `fold`: `onnx-bcast fold` (the dynamic axes stay dynamic; only proved broadcasts go);
- `onnxsim`: `onnxsim.simplify` on the model as exported (dynamic axes kept);
- `onnxsim static`: `onnxsim.simplify` with every input fixed to the entry's first binding (a different model:
  its sizes are frozen, which is what onnxsim's folding needs);
- `ort extended` / `ort all`: the model onnxruntime writes with `SessionOptions.optimized_model_filepath` at
  `ORT_ENABLE_EXTENDED` / `ORT_ENABLE_ALL` (CPU provider; dynamic axes kept).
A column counts the Expand and Tile nodes left in every graph and function body (default domain).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import onnx
import onnxruntime as ort

from harness.corpus import load_manifest, variant
from harness.graph import count_ops

try:
    import onnxsim
except ImportError:  # pragma: no cover
    sys.exit("onnxsim is not installed: see this script's docstring for the study venv")

OPS = {"Expand", "Tile"}
COLUMNS = ["input", "fold", "onnxsim", "onnxsim static", "ort extended", "ort all"]


def count(model):
    return count_ops(model, OPS)


def with_fold(binary, path, work):
    out = os.path.join(work, "folded.onnx")
    r = subprocess.run([binary, "fold", "--quiet", path, out], capture_output=True, timeout=600)
    if r.returncode not in (0, 1):
        return None, r.stderr.decode()[-200:]
    return count(onnx.load(out, load_external_data=False)), None


def with_onnxsim(path, shapes=None):
    try:
        model = onnx.load(path)
        simplified, ok = onnxsim.simplify(model, overwrite_input_shapes=shapes) if shapes else onnxsim.simplify(model)
        return (count(simplified), None) if ok else (None, "onnxsim's check failed")
    except Exception as e:  # noqa: BLE001
        return None, (str(e).splitlines() or ["?"])[0][:200]


def with_ort(path, level, work):
    out = os.path.join(work, f"ort-{level}.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.optimized_model_filepath = out
    so.log_severity_level = 3
    try:
        ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        return count(onnx.load(out, load_external_data=False)), None
    except Exception as e:  # noqa: BLE001
        return None, (str(e).splitlines() or ["?"])[0][:200]


def study(binary, root, entry, work):
    path = os.path.join(root, entry["file"])
    binding = entry["bindings"][0]
    shapes = {s["name"]: [binding[d] if isinstance(d, str) else d for d in s["shape"]] for s in entry["inputs"]}
    row, errors = {"input": count(onnx.load(path, load_external_data=False))}, {}
    for column, (value, error) in [
        ("fold", with_fold(binary, path, work)),
        ("onnxsim", with_onnxsim(path)),
        ("onnxsim static", with_onnxsim(path, shapes)),
        ("ort extended", with_ort(path, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, work)),
        ("ort all", with_ort(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, work)),
    ]:
        row[column] = value
        if error:
            errors[column] = error
    return row, errors


def table(rows):
    lines = ["| set | models | " + " | ".join(COLUMNS) + " |", "| --- | ---: | " + " | ".join("---:" for _ in COLUMNS) + " |"]
    for name, group in rows:
        cells = []
        for c in COLUMNS:
            values = [r[c] for r in group if r.get(c) is not None]
            failed = len(group) - len(values)
            cells.append(f"{sum(values)}" + (f" ({failed} failed)" if failed else ""))
        lines.append(f"| {name} | {len(group)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("root")
    ap.add_argument("out")
    args = ap.parse_args()
    manifest = load_manifest(args.root)
    rows, by_variant, failures = [], collections.defaultdict(list), []
    with tempfile.TemporaryDirectory() as work:
        for entry in manifest["models"]:
            row, errors = study(args.binary, args.root, entry, work)
            row["model"] = entry["file"]
            rows.append(row)
            by_variant[variant(entry)].append(row)
            failures += [f"{entry['file']}: {c}: {e}" for c, e in errors.items()]
            print(json.dumps(row), file=sys.stderr)
    groups = sorted(by_variant.items()) + [("all", rows)]
    text = [
        "# fold on the PyTorch export corpus: Expand and Tile nodes left",
        "",
        "Generated by `scripts/fold_figures.py` (see its docstring to reproduce); the corpus is described in",
        "corpus/README.md. Each column counts the Expand and Tile nodes left in every graph and function body of the",
        "models as exported (`input`), after `onnx-bcast fold`, after `onnxsim.simplify` (dynamic axes kept, and with",
        "every input fixed to a static size), and in onnxruntime's offline-optimized model at ORT_ENABLE_EXTENDED and",
        "ORT_ENABLE_ALL.",
        "",
        table(groups),
        "",
        "Per model:",
        "",
        "| model | " + " | ".join(COLUMNS) + " |",
        "| --- | " + " | ".join("---:" for _ in COLUMNS) + " |",
    ]
    for r in rows:
        text.append(f"| {r['model']} | " + " | ".join("failed" if r[c] is None else str(r[c]) for c in COLUMNS) + " |")
    if failures:
        text += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    with open(args.out, "w") as f:
        f.write("\n".join(text) + "\n")
    print(table(groups))


if __name__ == "__main__":
    main()
