#!/usr/bin/env python3
"""`onnx-bcast fold` over a set of models: what it removes, that it never changes what a model computes, and that
it undoes `expand`. tests/it/fold_corpus.rs runs it over the ONNX backend data, the real-model corpus, the PyTorch
export corpus and fixtures/fold/, and judges the JSON report.

    python scripts/fold_study.py BIN KIND DIR OUT_JSON [--workdir W]

KIND is `backend` (DIR: onnx/backend/test/data; node/, simple/, pytorch-converted/, pytorch-operator/), `corpus`
(every .onnx below DIR; inputs as scripts/real_models.py makes them), `torch` (DIR holds the export corpus'
manifest.json; inputs at the first binding of each entry) or `fixtures` (every .pb below DIR; random inputs).

Per model M, with F = fold(M):
- fold exits 0 or 1, never 2 (2 is a model it could not read: those are counted apart, and must also be models
  `check` cannot read);
- F folded nothing: F is M byte for byte; else F passes `onnx.checker.check_model(full_check=True)` when M does,
  onnxruntime gives F the outputs of M on the same inputs (when M runs; exact, NaN equal to NaN), and `check` gives
  the same exit code and the same errors and warnings (code, graph, node);
- a second fold changes no byte of F;
- round trip: E = expand(M), then fold(E) has the same nodes as M up to node names (op, domain, inputs and outputs
  in order, in every graph and function body); each model where it does not is an exception, listed with the
  reasons fold gave for what it kept in E.
- the same round trip with `expand --materialize-constants` and `fold --materialized` (a figure: constants over
  the size limit, or of size 0, stay written out).
Figures: Expand and Tile nodes in M and F.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import time
import traceback

import numpy as np
import onnx

from harness.cli import json_line, run, tail
from harness.compare import exact_diffs
from harness.corpus import backend_tests, load_manifest, make_inputs
from harness.ort import backend_feeds, manifest_feeds, outputs

JOBS = 2


def models_of(kind, root):
    """(relative name, path, input maker) for every model of the set."""
    out = []
    if kind == "backend":
        for test in backend_tests(root):
            path = os.path.join(root, test, "model.onnx")
            out.append((os.path.relpath(path, root), path, backend_inputs(os.path.dirname(path))))
    elif kind == "torch":
        for entry in load_manifest(root)["models"]:
            out.append((entry["file"], os.path.join(root, entry["file"]), torch_inputs(entry)))
    else:
        ext = ".onnx" if kind == "corpus" else ".pb"
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(ext):
                    path = os.path.join(dirpath, f)
                    rel = os.path.relpath(path, root)
                    out.append((rel, path, lambda p, rel=rel: arrays(make_inputs(p, rel))))
    return sorted(out, key=lambda t: t[0])


def arrays(feeds):
    # A scalar input comes back from numpy's generators as a numpy scalar, which onnxruntime does not take.
    return {k: np.asarray(v) for k, v in feeds.items()}


def backend_inputs(test_dir):
    # Every input's file must be there: a test that leaves an optional input out is not run.
    return lambda path: backend_feeds(onnx.load(path, load_external_data=False), test_dir, allow_missing=False)


def torch_inputs(entry):
    return lambda _path: manifest_feeds(entry, entry["bindings"][0])


def node_list(model):
    """Every node of every graph and function body, without node names, in order."""
    out = []

    def graph(g, where):
        for n in g.node:
            out.append((where, n.domain or "", n.op_type, tuple(n.input), tuple(n.output)))
            for a in n.attribute:
                subs = ([a.g] if a.HasField("g") else []) + list(a.graphs)
                for k, sub in enumerate(subs):
                    graph(sub, f"{where}/{n.output[0] if n.output else n.op_type}/{a.name}/{k}")

    graph(model.graph, "main")
    for f in model.functions:
        for n in f.node:
            out.append((f"{f.domain}.{f.name}", n.domain or "", n.op_type, tuple(n.input), tuple(n.output)))
    return out


def count_ops(model, ops):
    return sum(1 for (_, _, op, _, _) in node_list(model) if op in ops)


def full_check(path):
    try:
        onnx.checker.check_model(path, full_check=True)
        return None
    except Exception as e:  # noqa: BLE001
        return str(e).splitlines()[0][:200] if str(e) else type(e).__name__


def check_findings(binary, path):
    r = run([binary, "check", "--format", "json", path])
    try:
        report = json_line(r["stdout"])
    except Exception:  # noqa: BLE001
        return r["rc"], None
    models = report.get("models", [report]) if isinstance(report, dict) else report
    keys = set()
    for m in models:
        for f in m.get("findings", []):
            if f.get("severity") not in ("error", "warning"):
                continue
            # A site that holds only under a condition is said by its condition: folding an explicit broadcast
            # of one into its reader moves the finding to the reader, with the same condition.
            message = f.get("message") or ""
            if f.get("code") == "conditional-broadcast" and message.startswith("holds only if "):
                keys.add((f.get("code"), f.get("graph"), message.split(": ", 1)[0]))
            else:
                keys.add((f.get("code"), f.get("graph"), f.get("node")))
    return r["rc"], sorted(keys)


def fold(binary, src, dst):
    r = run([binary, "fold", "--format", "json", src, dst])
    summary = None
    if r["rc"] in (0, 1):
        summary = json_line(r["stdout"])
    return r, summary


def outputs_kept(rec, path, folded_path, make_inputs):
    """onnxruntime's outputs of the folded model against the original's."""
    try:
        feeds = make_inputs(path)
        names, before = outputs(path, feeds)
    except Exception as e:  # noqa: BLE001
        rec["ort"] = "original does not run: " + (str(e).splitlines() or ["?"])[0][:160]
        return
    try:
        names2, after = outputs(folded_path, feeds)
    except Exception as e:  # noqa: BLE001
        rec["failures"].append("folded model does not run in onnxruntime: " + str(e).splitlines()[0][:200])
        return
    rec["ort"] = "equal"
    diffs = exact_diffs(before, after) + ([] if names == names2 else [f"output names {names} vs {names2}"])
    if diffs:
        rec["ort"] = "differs"
        rec["failures"].append("outputs differ: " + "; ".join(diffs[:3]))


def study(binary, rel, path, make_inputs, work):
    rec = {"model": rel, "failures": []}
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    folded = os.path.join(work, "folded.onnx")
    r, summary = fold(binary, path, folded)
    rec["rc"] = r["rc"]
    if summary is None:
        rec["unreadable"] = r["rc"] == 2
        if r["rc"] == 2:
            crc, _ = check_findings(binary, path)
            if crc != 2:
                rec["failures"].append(f"fold exit 2 where check exits {crc}: " + tail(r["stderr"], 3))
        else:
            rec["failures"].append(f"fold exit {r['rc']}: " + tail(r["stderr"], 3))
        return rec
    rec["folded"] = summary["folded_count"]
    rec["kept"] = [k["reason"]["kind"] for k in summary["kept"]]
    rec["forms"] = [f["form"] for f in summary["folded"]]
    original = onnx.load(path, load_external_data=False)
    rec["expand_tile_before"] = count_ops(original, {"Expand", "Tile"})
    changed = open(path, "rb").read() != open(folded, "rb").read()
    if not changed:
        rec["expand_tile_after"] = rec["expand_tile_before"]
        if rec["folded"]:
            rec["failures"].append("fold reported removals but wrote the input unchanged")
    else:
        if not rec["folded"]:
            rec["failures"].append("nothing folded, yet the output differs from the input")
        result = onnx.load(folded, load_external_data=False)
        rec["expand_tile_after"] = count_ops(result, {"Expand", "Tile"})
        before_check, after_check = full_check(path), full_check(folded)
        if before_check is None and after_check is not None:
            rec["failures"].append(f"full_check fails on the folded model: {after_check}")
        if check_findings(binary, path) != check_findings(binary, folded):
            rec["failures"].append(f"check differs: {check_findings(binary, path)} vs {check_findings(binary, folded)}")
        outputs_kept(rec, path, folded, make_inputs)
        again = os.path.join(work, "again.onnx")
        fold(binary, folded, again)
        if open(again, "rb").read() != open(folded, "rb").read():
            rec["failures"].append("a second fold changes the model")
    round_trip(binary, rec, path, original, work)
    materialized_round_trip(binary, rec, path, original, work)
    return rec


def round_trip(binary, rec, path, original, work):
    expanded, back = os.path.join(work, "expanded.onnx"), os.path.join(work, "back.onnx")
    e = run([binary, "expand", "--quiet", path, expanded])
    if e["rc"] not in (0, 1) or not os.path.isfile(expanded):
        rec["round_trip"] = "expand refused"
        return
    r, summary = fold(binary, expanded, back)
    if summary is None:
        rec["failures"].append(f"fold of the expanded model exits {r['rc']}: " + tail(r["stderr"], 3))
        return
    nodes = node_list(onnx.load(back, load_external_data=False))
    same = nodes == node_list(original)
    # A model with explicit broadcasts of its own loses them too: then fold(expand(M)) is compared with fold(M).
    folded = os.path.join(work, "folded.onnx")
    same_as_folded = not same and os.path.isfile(folded) and nodes == node_list(onnx.load(folded, load_external_data=False))
    rec["round_trip"] = "same nodes" if same else "same as fold" if same_as_folded else "differs"
    if not (same or same_as_folded):
        rec["round_trip_kept"] = sorted({k["reason"]["kind"] for k in summary["kept"]})
        opsets = [o.version for o in original.opset_import if o.domain in ("", "ai.onnx")]
        rec["round_trip_opset"] = opsets[0] if opsets else None


def materialized_round_trip(binary, rec, path, original, work):
    """fold --materialized (expand --materialize-constants (M)) against M (or fold --materialized (M))."""
    expanded, back = os.path.join(work, "expanded-m.onnx"), os.path.join(work, "back-m.onnx")
    e = run([binary, "expand", "--quiet", "--materialize-constants", path, expanded])
    if e["rc"] not in (0, 1) or not os.path.isfile(expanded):
        return
    r = run([binary, "fold", "--quiet", "--materialized", expanded, back])
    if r["rc"] not in (0, 1):
        rec["failures"].append(f"fold --materialized exits {r['rc']}: " + tail(r["stderr"], 3))
        return
    nodes = node_list(onnx.load(back, load_external_data=False))
    if nodes == node_list(original):
        rec["materialized_round_trip"] = "same nodes"
        return
    direct = os.path.join(work, "folded-m.onnx")
    run([binary, "fold", "--quiet", "--materialized", path, direct])
    same = os.path.isfile(direct) and nodes == node_list(onnx.load(direct, load_external_data=False))
    rec["materialized_round_trip"] = "same as fold" if same else "differs"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("kind", choices=["backend", "corpus", "torch", "fixtures"])
    ap.add_argument("root")
    ap.add_argument("out")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    work = args.workdir or os.path.join(os.path.dirname(os.path.abspath(args.out)), f"fold-{args.kind}")
    models = models_of(args.kind, args.root)

    def one(k):
        rel, path, make_inputs = models[k]
        try:
            # Each model in its own folder: two run at once (the runs are processes; the time is theirs).
            start = time.monotonic()
            rec = study(args.binary, rel, path, make_inputs, os.path.join(work, f"m{k % JOBS}-{k}"))
            rec["seconds"] = round(time.monotonic() - start, 2)
            return rec
        except Exception:  # noqa: BLE001
            return {"model": rel, "failures": ["study crashed: " + traceback.format_exc().splitlines()[-1]]}
        finally:
            shutil.rmtree(os.path.join(work, f"m{k % JOBS}-{k}"), ignore_errors=True)

    with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        records = list(pool.map(one, range(len(models))))
    figures = {
        "models": len(records),
        "unreadable": sum(1 for r in records if r.get("unreadable")),
        "changed": sum(1 for r in records if r.get("folded")),
        "folded": sum(r.get("folded", 0) for r in records),
        "kept": sum(len(r.get("kept", [])) for r in records),
        "ort_equal": sum(1 for r in records if r.get("ort") == "equal"),
        "expand_tile_before": sum(r.get("expand_tile_before", 0) for r in records),
        "expand_tile_after": sum(r.get("expand_tile_after", 0) for r in records),
        "round_trip_same": sum(1 for r in records if r.get("round_trip") == "same nodes"),
        "round_trip_same_as_fold": sum(1 for r in records if r.get("round_trip") == "same as fold"),
        "round_trip_differs": sum(1 for r in records if r.get("round_trip") == "differs"),
        "round_trip_expand_refused": sum(1 for r in records if r.get("round_trip") == "expand refused"),
        "materialized_round_trip_same": sum(1 for r in records if r.get("materialized_round_trip") == "same nodes"),
        "materialized_round_trip_same_as_fold":
            sum(1 for r in records if r.get("materialized_round_trip") == "same as fold"),
        "materialized_round_trip_differs": sum(1 for r in records if r.get("materialized_round_trip") == "differs"),
        "failures": sum(1 for r in records if r.get("failures")),
    }
    with open(args.out, "w") as f:
        json.dump({"figures": figures, "models": records}, f, indent=1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
