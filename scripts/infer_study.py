"""`onnx-bcast infer` judged by onnx's checker and onnxruntime, and `infer --bind` / `check --bind` over the corpora.

    python scripts/infer_study.py BIN OUT_JSON [--backend DATA_DIR] [--corpus MODELS_DIR] [--torch MODELS_DIR]
                                  [--workdir DIR] [--only TEXT] [--figures FILE]

Run with a python that has the pinned onnx, onnxruntime and numpy (the project venv, scripts/testdata.sh, or the
torch corpus venv). Model sets, each optional:

  backend  the ONNX backend tests (DATA_DIR/{node,simple,pytorch-converted,pytorch-operator}/*/model.onnx) with
           their own inputs (test_data_set_0), one run;
  corpus   every .onnx under MODELS_DIR (corpus/fetch.sh), inputs as scripts/soundness.py builds them: distinct
           sizes for the named dims, then other sizes where the model has sizes to vary (two runs);
  torch    the PyTorch export corpus (corpus/torch_fetch.sh: MODELS_DIR/manifest.json), at the manifest's two
           bindings.

For every model: `BIN infer --format json IN OUT`; `BIN check` gives the same verdicts on OUT as on IN (writing the
shapes loses nothing); `onnx.checker.check_model(OUT, full_check=True)` (ONNX's strict shape inference over the
written shapes); the original and OUT run in onnxruntime on the same inputs, outputs
compared (rtol 1e-4, atol 1e-5, as scripts/real_models.py); every shape OUT declares in its main graph (value_info
and outputs) is compared with the shape onnxruntime computes (scripts/soundness.py's judge: known dims equal,
symbols one size everywhere, expressions evaluated under the binding). How many node outputs (all graphs) have a
fully resolved declaration (a rank, every dim a dim_value or a dim_param) before and after is counted.

For every model with symbolic inputs (corpus and torch sets), at the first binding: `BIN infer --bind NAME=SIZE`
for every dim_param of the inputs; the static model must have no dim_param left in any declaration (all graphs and
function bodies), run in onnxruntime at exactly those sizes with the original's outputs, and `BIN check --bind` on
the original must give the same verdicts, site by site, as `BIN check` on the static model.

Writes OUT_JSON ({"sets": {...}, "models": [...]}) and the figures as Markdown (stdout, and FILE with --figures).
Exits 0 whenever it could do that (findings included: judging is tests/it/infer_corpus.rs's job), 2 on a usage error.
"""

import argparse
import concurrent.futures
import json
import os
import re
import sys
import time
import traceback

import onnx

from harness.cli import json_line, run
from harness.compare import compare
from harness.corpus import ALT_SPECS, backend_tests, corpus_feeds, distinct_sizes, load_manifest, onnx_files
from harness.expose import binding_from_feeds, check_model
from harness.graph import bodies, declared_dims, full_check
from harness.judge import NAME_OF_ELEM, Stats, placeholder_patterns
from harness.ort import backend_feeds, manifest_feeds, outputs

JOBS = 2
TIMEOUT = 600


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- onnx-bcast

def infer(binary, src, dst, binds=(), overwrite=False):
    r = run([binary, "infer", "--format", "json", src, dst] + [f"--bind={b}" for b in binds]
            + (["--overwrite-declared"] if overwrite else []), TIMEOUT, digits=3, raise_timeout=True)
    return r["rc"], (json_line(r["stdout"]) if r["rc"] != 2 else None), r["stderr"], r["seconds"]


def verdicts(binary, path, binds=()):
    r = run([binary, "check", "--format", "json", "--no-config", path] + [f"--bind={b}" for b in binds], TIMEOUT,
            digits=3, raise_timeout=True)
    data = json_line(r["stdout"])
    if r["rc"] == 2 or data is None:
        raise RuntimeError(f"check exited {r['rc']}: {r['stderr'][-400:]}")
    return sorted((s["graph"], s["node"], s["verdict"]) for s in data["sites"])


def verdict_diff(before, after):
    """The first few sites whose verdicts differ ("site count" when the sites differ); None when all agree."""
    if before == after:
        return None
    return [f"{a} vs {b}" for a, b in zip(before, after) if a != b][:5] or "site count"


# ----------------------------------------------------------------------------------------- declarations

def resolution(model):
    """Node outputs of every graph, and how many of them have a declaration with a rank and every dim a size or a
    dim_param (resolved), or every dim a size (static)."""
    total = resolved = static = 0
    for _, g in bodies(model):
        decl = {}
        for vi in list(g.value_info) + list(g.output):
            d = declared_dims(vi)
            if d is not None and all(x is not None for x in d):
                decl[vi.name] = d
        for node in g.node:
            for o in node.output:
                if not o:
                    continue
                total += 1
                if o in decl:
                    resolved += 1
                    static += all(isinstance(x, int) for x in decl[o])
    return {"values": total, "resolved": resolved, "static": static}


def leftover(model):
    """dim_params and empty (or `?`) dims left in any declaration (every graph's inputs, outputs and value_info, and every
    function body's value_info)."""
    params, empty = [], 0
    decls = [(label, vi) for label, g in bodies(model) for vi in list(g.input) + list(g.output) + list(g.value_info)]
    decls += [(f"function {f.name}", vi) for f in model.functions for vi in f.value_info]
    for label, vi in decls:
        for d in declared_dims(vi) or []:
            # Paddle's `?` names no size (onnx-bcast reads it as unnamed, and cannot bind it): an empty dim.
            if isinstance(d, str) and d.startswith("?"):
                empty += 1
            elif isinstance(d, str):
                params.append(f"{label}/{vi.name}: {d}")
            elif d is None:
                empty += 1
    return params, empty


def written_values(model, original):
    """The main graph's declarations that `infer` wrote or changed (a declaration of the original model kept as it
    was is the model's claim, not infer's), as scripts/soundness.py's judge reads inferred values."""
    before = {(vi.name, vi.type.SerializeToString()) for vi in list(original.graph.value_info) + list(original.graph.output)}
    out = []
    for vi in list(model.graph.value_info) + list(model.graph.output):
        if vi.type.WhichOneof("value") != "tensor_type" or (vi.name, vi.type.SerializeToString()) in before:
            continue
        elem = vi.type.tensor_type.elem_type
        out.append({"name": vi.name, "elem_type": NAME_OF_ELEM.get(elem) if elem else None,
                    "shape": declared_dims(vi)})
    return out


# ----------------------------------------------------------------------------------------- onnxruntime

def run_outputs(path, feeds):
    return outputs(path, feeds)[1]


def compare_outputs(orig, new):
    return [m for i, (a, b) in enumerate(zip(orig, new)) for m in compare(a, b, f"output {i}")]


# ----------------------------------------------------------------------------------------- one model

def safe(label):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)


def study(binary, label, path, runs, work):
    """`infer`, the checker, and each run (how, make_feeds): outputs and declared shapes against onnxruntime."""
    rec = {"model": label, "runs": [], "refused": [], "problems": [], "mismatches": []}
    out = os.path.join(work, safe(label) + ".inferred.onnx")
    code, summary, err, secs = infer(binary, path, out)
    rec.update(infer_exit=code, infer_seconds=secs, summary=summary)
    if code == 2 or not os.path.exists(out):
        rec["problems"].append(f"infer exited {code}, nothing written: {err[-600:]}")
        return rec
    rec["reported"] = (summary or {}).get("mismatches", [])
    rec["checker"] = full_check(out, 500)
    if rec["checker"] != "ok":
        original = full_check(path, 300)
        if original == "ok":
            rec["problems"].append(f"checker: {rec['checker']}")
        else:  # the original fails it too: not infer's doing
            rec["checker_original"] = original

    # The written model is as analysable as the original: `check` gives the same verdicts, site by site.
    try:
        diff = verdict_diff(verdicts(binary, path), verdicts(binary, out))
        rec["verdicts_kept"] = diff is None
        if diff is not None:
            rec["problems"].append(f"check of the written model gives other verdicts: {diff}")
    except Exception as ex:  # noqa: BLE001
        rec["problems"].append(f"check: {str(ex)[:400]}")
    orig = onnx.load(path)
    written = onnx.load(out)
    rec["before"], rec["after"] = resolution(orig), resolution(written)
    values = written_values(written, orig)
    placeholders = placeholder_patterns(orig)
    for how, make in runs:
        try:
            feeds = make()
            expected = run_outputs(path, feeds)
        except Exception as ex:  # noqa: BLE001  (the original does not run at these sizes: not infer's doing)
            rec["refused"].append(f"{how}: {str(ex)[:300]}")
            continue
        try:
            got = run_outputs(out, feeds)
        except Exception as ex:  # noqa: BLE001
            rec["problems"].append(f"{how}: the written model fails where the original runs: {str(ex)[:400]}")
            continue
        diffs = compare_outputs(expected, got)
        rec["problems"] += [f"{how}: {d}" for d in diffs]
        binding, _ = binding_from_feeds(orig, feeds)
        stats, mm, tmm = Stats(), [], []
        try:
            check_model(label, out, written, values, feeds, binding, placeholders, stats, mm, tmm,
                                  lambda m: None, how)
        except Exception as ex:  # noqa: BLE001
            rec["problems"].append(f"{how}: cannot expose the written values: {str(ex)[:300]}")
        rec["mismatches"] += mm + tmm
        rec["runs"].append({"how": how, "binding": binding, "outputs_equal": not diffs, "stats": stats.as_dict()})
    if not rec["runs"] and not rec["problems"]:
        rec["excluded"] = "; ".join(rec["refused"]) or "no run"
    return rec


def study_bind(binary, label, path, make, work):
    """`infer --bind` every input symbol at the first binding: a static model, run at those sizes; `check --bind`
    against `check` of the static model."""
    rec = {"model": label, "problems": []}
    orig = onnx.load(path, load_external_data=False)
    feeds = make()
    binding, _ = binding_from_feeds(orig, feeds)
    if not binding:
        return None
    # Paddle's `?` names no size (onnx-bcast reads it as unnamed), so it is not bound.
    binds = [f"{k}={v}" for k, v in sorted(binding.items()) if not k.startswith("?")]
    if not binds:
        return None
    rec["binds"] = binds
    out = os.path.join(work, safe(label) + ".static.onnx")
    # A declaration of the model that contradicts inference (reported by the plain run) is replaced, so that the
    # model can be static.
    code, summary, err, secs = infer(binary, path, out, binds, overwrite=True)
    rec.update(infer_exit=code, infer_seconds=secs, summary=summary)
    if code == 2 or not os.path.exists(out):
        rec["problems"].append(f"infer --bind exited {code}: {err[-600:]}")
        return rec
    params, empty = leftover(onnx.load(out, load_external_data=False))
    rec["params_left"], rec["empty_dims_left"] = params[:20], empty
    if params:
        rec["problems"].append(f"{len(params)} dim_params left, e.g. {params[:3]}")
    try:
        diffs = compare_outputs(run_outputs(path, feeds), run_outputs(out, feeds))
        rec["outputs_equal"] = not diffs
        rec["problems"] += diffs
    except Exception as ex:  # noqa: BLE001
        rec["problems"].append(f"onnxruntime: {str(ex)[:400]}")
    try:
        bound = verdicts(binary, path, binds)
        diff = verdict_diff(bound, verdicts(binary, out))
        rec["sites"] = len(bound)
        rec["verdicts_equal"] = diff is None
        if diff is not None:
            rec["problems"].append(f"check --bind and check of the static model differ: {diff}")
    except Exception as ex:  # noqa: BLE001
        rec["problems"].append(f"check: {str(ex)[:400]}")
    return rec


# ----------------------------------------------------------------------------------------- model sets

def backend_jobs(data):
    jobs = []
    for test in backend_tests(data):
        test_dir = os.path.join(data, test)
        path = os.path.join(test_dir, "model.onnx")
        make = (lambda p=path, t=test_dir: backend_feeds(onnx.load(p), t))
        jobs.append((test, path, [("test data", make)], None))
    return jobs


def corpus_jobs(models_dir):
    jobs = []
    for rel in onnx_files(models_dir):
        path = os.path.join(models_dir, rel)

        def sizes(rel=rel, path=path, shift=0, alt=None):
            model = onnx.load(path, load_external_data=False)
            s = {k: v + shift for k, v in distinct_sizes(model, rel).items()}
            return corpus_feeds(model, rel, {**s, None: 3 + 2 * (shift > 0)}, alt)

        runs = [("distinct sizes", sizes),
                ("other sizes", lambda rel=rel, s=sizes: s(shift=3, alt=ALT_SPECS.get(rel)))]
        jobs.append((f"corpus/{rel}", path, runs, sizes))
    return jobs


def torch_jobs(models_dir):
    jobs = []
    for entry in load_manifest(models_dir)["models"]:
        path = os.path.join(models_dir, entry["file"])
        runs = [(f"binding {b}", lambda e=entry, b=b: manifest_feeds(e, b)) for b in entry["bindings"]]
        jobs.append((f"torch/{entry['file']}", path, runs, runs[0][1]))
    return jobs


def one(binary, job, work):
    label, path, runs, bind_feeds = job
    t = time.monotonic()
    try:
        rec = study(binary, label, path, runs, work)
    except Exception:  # noqa: BLE001
        rec = {"model": label, "problems": ["crash: " + traceback.format_exc()[-1200:]]}
    if bind_feeds is not None:
        try:
            rec["bind"] = study_bind(binary, label, path, bind_feeds, work)
        except Exception:  # noqa: BLE001
            rec["bind"] = {"model": label, "problems": ["crash: " + traceback.format_exc()[-1200:]]}
    rec["seconds"] = round(time.monotonic() - t, 2)
    return rec


# ----------------------------------------------------------------------------------------- figures

def totals(records):
    t = {"models": len(records), "verdicts_kept": 0, "written": 0, "checker_ok": 0, "checker_fails_original_too": 0, "reported": 0, "ran": 0, "outputs_equal": 0, "excluded": 0,
         "claims": 0, "mismatches": 0, "values": 0, "resolved_before": 0, "resolved_after": 0, "static_after": 0,
         "infer_seconds": 0.0, "problems": 0, "bind_models": 0, "bind_static": 0, "bind_outputs_equal": 0,
         "bind_verdicts_equal": 0, "bind_sites": 0, "bind_problems": 0}
    for r in records:
        t["written"] += "after" in r
        t["verdicts_kept"] += bool(r.get("verdicts_kept"))
        t["checker_ok"] += r.get("checker") == "ok"
        t["checker_fails_original_too"] += "checker_original" in r
        t["reported"] += len(r.get("reported", []))
        t["ran"] += bool(r.get("runs"))
        t["outputs_equal"] += bool(r.get("runs")) and all(x["outputs_equal"] for x in r["runs"])
        t["excluded"] += "excluded" in r
        t["claims"] += sum(x["stats"]["claims"] for x in r.get("runs", []))
        t["mismatches"] += len(r.get("mismatches", []))
        t["problems"] += bool(r.get("problems"))
        t["infer_seconds"] += r.get("infer_seconds", 0.0)
        if "after" in r:
            t["values"] += r["after"]["values"]
            t["resolved_before"] += r["before"]["resolved"]
            t["resolved_after"] += r["after"]["resolved"]
            t["static_after"] += r["after"]["static"]
        b = r.get("bind")
        if b:
            t["bind_models"] += 1
            t["bind_static"] += "params_left" in b and not b["params_left"]
            t["bind_outputs_equal"] += bool(b.get("outputs_equal"))
            t["bind_verdicts_equal"] += bool(b.get("verdicts_equal"))
            t["bind_sites"] += b.get("sites", 0)
            t["bind_problems"] += bool(b.get("problems"))
    t["infer_seconds"] = round(t["infer_seconds"], 2)
    return t


def figures(sets):
    lines = ["# `infer` and `--bind` over the corpora", "",
             "Written by scripts/infer_study.py (tests/it/infer_corpus.rs). A value is a node output of any graph; "
             "*resolved*: declared with a rank and every dim a dim_value or dim_param.", "",
             "| set | models | written | checker ok | checker fails the original too | ran in ORT | outputs equal | "
             "excluded | shape claims | mismatches | declared-shape-mismatch reported | values | resolved before | "
             "resolved after | static after | infer s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
             "| ---: |"]
    for name, t in sets.items():
        lines.append(f"| {name} | {t['models']} | {t['written']} | {t['checker_ok']} | "
                     f"{t['checker_fails_original_too']} | {t['ran']} | {t['outputs_equal']} | {t['excluded']} | "
                     f"{t['claims']} | {t['mismatches']} | {t['reported']} | {t['values']} | "
                     f"{t['resolved_before']} | {t['resolved_after']} | {t['static_after']} | {t['infer_seconds']} |")
    lines += ["", "`infer --bind` every input symbol (first binding):", "",
              "| set | models | no dim_param left | outputs equal | check --bind = check of static (models) | sites |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, t in sets.items():
        if t["bind_models"]:
            lines.append(f"| {name} | {t['bind_models']} | {t['bind_static']} | {t['bind_outputs_equal']} | "
                         f"{t['bind_verdicts_equal']} | {t['bind_sites']} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("out_json")
    ap.add_argument("--backend")
    ap.add_argument("--corpus")
    ap.add_argument("--torch")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--figures")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    if not os.path.isfile(binary):
        print(f"infer_study.py: no binary {binary}", file=sys.stderr)
        sys.exit(2)
    work = os.path.abspath(args.workdir or os.path.join(os.path.dirname(os.path.abspath(args.out_json)), "infer-study"))
    os.makedirs(work, exist_ok=True)
    sets = {}
    if args.backend:
        sets["backend"] = backend_jobs(args.backend)
    if args.corpus:
        sets["corpus"] = corpus_jobs(args.corpus)
    if args.torch:
        sets["torch"] = torch_jobs(args.torch)
    report = {"sets": {}, "models": []}
    for name, jobs in sets.items():
        jobs = [j for j in jobs if not args.only or any(o in j[0] for o in args.only)]
        t = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
            records = list(pool.map(lambda j: one(binary, j, work), jobs))
        for r in records:
            r["set"] = name
            if r.get("problems") or (r.get("bind") or {}).get("problems"):
                log(f"{r['model']}: {(r.get('problems') or [])[:2]} {((r.get('bind') or {}).get('problems') or [])[:2]}")
        report["models"] += records
        report["sets"][name] = dict(totals(records), seconds=round(time.monotonic() - t, 1))
        log(f"{name}: {report['sets'][name]}")
    text = figures(report["sets"])
    print(text)
    if args.figures:
        with open(args.figures, "w") as f:
            f.write(text)
    with open(args.out_json, "w") as f:
        json.dump(report, f, indent=1, default=str)


if __name__ == "__main__":
    main()
