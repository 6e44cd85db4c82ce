"""Soundness of shape inference: every shape `onnx-bcast shapes` infers must agree with what onnxruntime computes.

    python scripts/soundness.py BIN OUT_JSON --corpus MODELS_DIR --backend DATA_DIR [--generated N] [--only TEXT]

Run with the project venv (scripts/testdata.sh: pinned onnx, onnxruntime, numpy). Three model sets:

  corpus     every .onnx under MODELS_DIR (corpus/fetch.sh), inputs built as scripts/real_models.py builds them
             (SPECS in harness/corpus.py, for the sizes a model needs); named dims not fixed there get distinct
             sizes (4, 5, ...), unnamed ones 3, falling back to real_models.py's own inputs (every free dim 2) if
             onnxruntime refuses; then a second run with other sizes (ALT_SPECS, free dims +3/5) where the model
             has sizes to vary (a refusal of that second binding is recorded, not a failure);
  generated  N models (default 30) from a seeded generator (harness/gen.py): chains of Reshape, Transpose,
             Concat, Slice, Gather, Shape arithmetic, Conv, pooling, MatMul, Squeeze/Unsqueeze, Split, Pad, Resize,
             Expand, Tile and broadcasting arithmetic over symbolic batch/sequence (and image) dims, each run under
             two bindings;
  backend    the ONNX backend tests (DATA_DIR/{node,simple,pytorch-converted,pytorch-operator}/*) with their own
             inputs (test_data_set_0/input_*.pb);
             a test onnxruntime cannot run as shipped is left out and counted.

For each model: `BIN shapes --format json`, main graph only. Every value of the main graph with a shape claim is
made a graph output (a ValueInfo with the name and the inferred elem type; without the type if onnxruntime
refuses it), the model is run with graph optimisations off, and each inferred shape is compared with the actual
one: a known dim must be equal; a symbol (model dim_param or fresh `?k`) is bound by the graph inputs or on first
sight and must then be the same size everywhere; an expression (`3*N + 1`, `floor((H - 1) / 2) + 1`, `max`,
`min`, `broadcast(...)`) evaluated under the binding must be equal. An unknown dim or rank is no claim: counted,
not checked. A value whose first claim is an expression of a symbol not yet bound binds it when the equation has
exactly one solution; otherwise the claim is counted as unchecked.

Writes OUT_JSON ({"sets": {...}, "totals": {...}, "mismatches": [...], ...}) and prints a summary. Exits 0 when it
could do all that (mismatches included: judging is tests/it/soundness.rs's job), 2 on a usage or setup error.
"""

import argparse
import concurrent.futures
import json
import os
import sys
import tempfile
import time
import traceback

import numpy as np
import onnx
import onnxruntime as ort

from harness.cli import main_values
from harness.corpus import (ALT_SPECS, BACKEND_FOLDERS, backend_tests, corpus_feeds, distinct_sizes, has_free_dims,
                            make_inputs, onnx_files)
from harness.expose import binding_from_feeds, check_model, session_options
from harness.gen import Gen
from harness.judge import Stats, placeholder_patterns
from harness.ort import backend_feeds

TIMEOUT = 300


def infer_shapes(binary, path):
    return main_values(binary, path, TIMEOUT)


# ------------------------------------------------------------------------------------- corpus models

def study_corpus(binary, models_dir, rel, log):
    """One or two runs: the first binding onnxruntime accepts, then (if the model has sizes to vary) a second one."""
    path = os.path.join(models_dir, rel)
    model = onnx.load(path)  # external data in memory: the exposed model is handed to onnxruntime as bytes
    values, opaque = infer_shapes(binary, path)
    placeholders = placeholder_patterns(model)
    sizes = distinct_sizes(model, rel)
    first = [("distinct sizes", lambda: corpus_feeds(model, rel, {**sizes, None: 3})),
             ("real_models.py inputs", lambda: make_inputs(path, rel))]
    second = []
    if rel in ALT_SPECS or has_free_dims(model, rel):
        sizes2 = {k: v + 3 for k, v in sizes.items()}
        second.append(("alternative sizes", lambda: corpus_feeds(model, rel, {**sizes2, None: 5}, ALT_SPECS.get(rel))))
    rec = {"model": rel, "runs": [], "refused": [], "mismatches": [], "type_mismatches": [], "opaque_ops": opaque}
    total = Stats()
    for group in (first, second):
        for how, make in group:
            feeds = make()
            binding, conflicts = binding_from_feeds(model, feeds)
            stats, mm, tmm = Stats(), [], []
            try:
                note = check_model(rel, path, model, values, feeds, binding, placeholders, stats, mm, tmm, log,
                                   "" if not rec["runs"] else how)
            except Exception as ex:  # noqa: BLE001
                rec["refused"].append(f"{how}: {str(ex)[:400]}")
                continue
            rec["runs"].append({"how": how, "binding": binding, "note": note, "dim_param_conflicts": conflicts,
                                "inputs": {k: list(np.shape(v)) for k, v in feeds.items()}, "stats": stats.as_dict()})
            rec["mismatches"] += mm
            rec["type_mismatches"] += tmm
            total.add(stats)
            break
        if not rec["runs"]:
            return {"model": rel, "error": "; ".join(rec["refused"])}
    total.models = 1
    rec["stats"] = total.as_dict()
    return rec


# ---------------------------------------------------------------------------------- generated models

GEN_BINDINGS = [{"B": 2, "S": 5, "H": 9, "W": 7}, {"B": 3, "S": 8, "H": 12, "W": 10}]


def generated_models(count, workdir, log):
    """(path, model, feeds per binding) for `count` seeded models that onnx accepts and onnxruntime runs."""
    out, rejected, seed = [], [], 1000
    while len(out) < count and seed < 1000 + 20 * count:
        seed += 1
        try:
            g = Gen(seed, GEN_BINDINGS)
            m = g.build()
            path = os.path.join(workdir, f"gen_{seed}.onnx")
            onnx.save(m, path)
            rng = np.random.default_rng(seed)
            runs = []
            for bnd in GEN_BINDINGS:
                feeds = {vi.name: rng.standard_normal([bnd[g.logical[d.dim_param]] if d.dim_param else d.dim_value
                                                       for d in vi.type.tensor_type.shape.dim]).astype(np.float32)
                         for vi in m.graph.input}
                sess = ort.InferenceSession(path, session_options(), providers=["CPUExecutionProvider"])
                sess.run(None, feeds)
                runs.append((bnd, feeds))
            out.append((f"gen_{seed}.onnx", path, m, runs, sorted(set(g.used_ops))))
        except Exception as ex:  # noqa: BLE001
            rejected.append(f"seed {seed}: {type(ex).__name__}: {str(ex).splitlines()[0][:200] if str(ex) else ''}")
    return out, rejected


# -------------------------------------------------------------------------------------------- driver

def new_set(report, name):
    report["sets"][name] = {"stats": Stats(), "models": [], "seconds": 0.0}
    return report["sets"][name]


def corpus_set(binary, models_dir, wanted, report, log):
    """(a) every model of the real-model corpus, one or two runs each."""
    s = new_set(report, "corpus")
    t = time.monotonic()
    for rel in onnx_files(models_dir):
        if not wanted(rel):
            continue
        t1 = time.monotonic()
        try:
            rec = study_corpus(binary, models_dir, rel, log)
        except Exception:  # noqa: BLE001
            rec = {"model": rel, "error": traceback.format_exc()[-1500:]}
        rec["seconds"] = round(time.monotonic() - t1, 2)
        if "error" in rec:
            report["errors"].append(f"corpus/{rel}: {rec['error']}")
            log(f"corpus {rel}: ERROR {rec['error'][:300]}")
        else:
            st = Stats()
            for k, v in rec["stats"].items():
                setattr(st, k, v)
            s["stats"].add(st)
            report["mismatches"] += [dict(m, set="corpus") for m in rec["mismatches"]]
            report["type_mismatches"] += [dict(m, set="corpus") for m in rec["type_mismatches"]]
            log(f"corpus {rel}: {' + '.join(r['how'] for r in rec['runs'])}, {st.values} values, {st.claims} "
                f"claims, {st.unknown_dims} unknown dims, {st.unknown_ranks} unknown ranks, {st.mismatches} "
                f"mismatches ({rec['seconds']} s)" + "".join(f" [{r['note']}]" for r in rec["runs"] if r["note"])
                + "".join(f" [refused: {r[:150]}]" for r in rec["refused"]))
        s["models"].append(rec)
    s["seconds"] = round(time.monotonic() - t, 1)


def generated_set(binary, count, keep, wanted, report, log):
    """(b) `count` generated models, each run under both bindings."""
    s = new_set(report, "generated")
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="soundness-gen-") as work:
        workdir = keep or work
        os.makedirs(workdir, exist_ok=True)
        models, rejected = generated_models(count, workdir, log)
        s["rejected_by_generator"] = rejected
        for name, path, model, runs, ops in models:
            if not wanted(name):
                continue
            rec = {"model": name, "ops": ops, "runs": []}
            st = Stats()
            try:
                values, opaque = infer_shapes(binary, path)
                placeholders = placeholder_patterns(model)
                for bnd, feeds in runs:
                    mm, tmm = [], []
                    binding, _ = binding_from_feeds(model, feeds)
                    label = ",".join(f"{k}={v}" for k, v in sorted(binding.items()))
                    note = check_model(name, path, model, values, feeds, binding, placeholders, st, mm, tmm,
                                       log, label)
                    rec["runs"].append({"binding": binding, "note": note})
                    report["mismatches"] += [dict(m, set="generated") for m in mm]
                    report["type_mismatches"] += [dict(m, set="generated") for m in tmm]
                st.models = 1
                s["stats"].add(st)
                rec["stats"] = st.as_dict()
                log(f"generated {name}: {st.values} values, {st.claims} claims, {st.unknown_dims} unknown dims, "
                    f"{st.mismatches} mismatches; ops {' '.join(ops)}")
            except Exception:  # noqa: BLE001
                rec["error"] = traceback.format_exc()[-1500:]
                report["errors"].append(f"generated/{name}: {rec['error']}")
                log(f"generated {name}: ERROR {rec['error'][-300:]}")
            s["models"].append(rec)
    s["seconds"] = round(time.monotonic() - t, 1)


def backend_set(binary, data_dir, wanted, report, log):
    """(c) the backend tests with their own inputs; a test onnxruntime cannot run is left out and counted."""
    s = new_set(report, "backend")
    t = time.monotonic()
    for folder in BACKEND_FOLDERS:
        fdir = os.path.join(data_dir, folder)
        if not os.path.isdir(fdir):
            print(f"soundness.py: no backend folder {fdir}", file=sys.stderr)
            sys.exit(2)
    tests = [d for d in backend_tests(data_dir) if wanted(d)]
    excluded = report["excluded"]
    # onnx-bcast runs ahead of onnxruntime on a second thread (subprocess waits release the GIL).
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futs = {d: pool.submit(infer_shapes, binary, os.path.join(data_dir, d, "model.onnx")) for d in tests}
        for d in tests:
            test_dir = os.path.join(data_dir, d)
            path = os.path.join(test_dir, "model.onnx")
            rec = {"model": d}
            try:
                values, opaque = futs.pop(d).result()
            except Exception as ex:  # noqa: BLE001
                report["errors"].append(f"backend/{d}: {str(ex)[:400]}")
                rec["error"] = str(ex)[:400]
                s["models"].append(rec)
                continue
            try:
                model = onnx.load(path)
                feeds = backend_feeds(model, test_dir)
                binding, _ = binding_from_feeds(model, feeds)
                st, mm, tmm = Stats(), [], []
                note = check_model(d, path, model, values, feeds, binding, placeholder_patterns(model), st,
                                   mm, tmm, lambda m: None)
            except Exception as ex:  # noqa: BLE001
                if isinstance(ex, RuntimeError) and str(ex).startswith("onnxruntime cannot run"):
                    excluded[d] = str(ex)[len("onnxruntime cannot run the model: "):][:200]
                    continue
                rec["error"] = traceback.format_exc()[-1200:]
                report["errors"].append(f"backend/{d}: {rec['error']}")
                s["models"].append(rec)
                continue
            st.models = 1
            s["stats"].add(st)
            rec["stats"] = st.as_dict()
            if note:
                rec["note"] = note
            report["mismatches"] += [dict(m, set="backend") for m in mm]
            report["type_mismatches"] += [dict(m, set="backend") for m in tmm]
            s["models"].append(rec)
    s["excluded_count"] = len(excluded)
    s["tests"] = len(tests)
    s["seconds"] = round(time.monotonic() - t, 1)
    log(f"backend: {s['stats'].models} of {len(tests)} backend tests compared, {len(excluded)} do not run in "
        f"onnxruntime, {s['stats'].mismatches} mismatches ({s['seconds']} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("out_json")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--generated", type=int, default=30)
    ap.add_argument("--only", action="append", default=[], help="only models whose name contains this")
    ap.add_argument("--sets", default="corpus,generated,backend")
    ap.add_argument("--keep-generated", help="directory to keep the generated models in")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    if not os.path.isfile(binary):
        print(f"soundness.py: no binary {binary}", file=sys.stderr)
        sys.exit(2)
    for d in (args.corpus, args.backend):
        if not os.path.isdir(d):
            print(f"soundness.py: no directory {d}", file=sys.stderr)
            sys.exit(2)
    sets = args.sets.split(",")
    t0 = time.monotonic()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    def wanted(name):
        return not args.only or any(o in name for o in args.only)

    report = {"sets": {}, "mismatches": [], "type_mismatches": [], "errors": [], "excluded": {}}
    if "corpus" in sets:
        corpus_set(binary, os.path.abspath(args.corpus), wanted, report, log)
    if "generated" in sets:
        generated_set(binary, args.generated, args.keep_generated, wanted, report, log)
    if "backend" in sets:
        backend_set(binary, os.path.abspath(args.backend), wanted, report, log)
    total = Stats()
    for s in report["sets"].values():
        total.add(s["stats"])
        s["stats"] = s["stats"].as_dict()
    report["totals"] = total.as_dict()
    report["seconds"] = round(time.monotonic() - t0, 1)
    with open(args.out_json, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, default=str)
    print_summary(report)


def print_summary(report):
    """One line of figures per set and for all, then every mismatch, type mismatch and error (the first few)."""
    lines = ["set        models  values  ranked  claims  (known/symbol/expr)  bindings  unknown dims  unknown ranks  "
             "unchecked  not exposed  type mism.  mismatches"]
    for name, s in list(report["sets"].items()) + [("total", {"stats": report["totals"]})]:
        x = s["stats"]
        lines.append(f"{name:<10} {x['models']:>6}  {x['values']:>6}  {x['values_ranked']:>6}  {x['claims']:>6}  "
                     f"({x['claims_known']}/{x['claims_symbol']}/{x['claims_expr']})  {x['bindings']:>8}  "
                     f"{x['unknown_dims']:>12}  {x['unknown_ranks']:>13}  {x['unchecked']:>9}  {x['not_exposed']:>11}  "
                     f"{x['type_mismatches']:>10}  {x['mismatches']:>10}")
    print("\n".join(lines))
    for m in report["mismatches"][:200]:
        print(f"MISMATCH {m['set']} {m['model']}: {m['value']}: inferred {m['inferred']}, actual {m['actual']}: {m['why']}")
    for m in report["type_mismatches"][:50]:
        print(f"TYPE MISMATCH {m['set']} {m['model']}: {m['value']}: inferred {m['inferred']}, actual {m['actual']}")
    for e in report["errors"][:50]:
        print(f"ERROR {e.splitlines()[0][:300] if e else e}")
    print(f"seconds: {report['seconds']}")


if __name__ == "__main__":
    main()
