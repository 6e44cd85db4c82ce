"""Measures onnx-bcast on the PyTorch export corpus (corpus/README.md, "PyTorch export corpus").

    python scripts/torch_models.py BIN MODELS_DIR OUT_JSON [--figures corpus/TORCH_FIGURES.md] [--only TEXT]

Run with the python of the torch corpus venv (corpus/torch_fetch.sh: it has onnx, onnxruntime, numpy, sympy).
MODELS_DIR holds the exports and the manifest.json of corpus/export_torch.py. For every model the manifest lists:

  * `BIN check --format json`: sites, verdicts, violations (every model runs, so any is a false positive),
    conditional sites with their messages; a site is *resolved* when every input has a known rank and no unknown
    dim (symbols and expressions count);
  * the same sites looked up after onnxruntime's `SymbolicShapeInference.infer_shapes(auto_merge=True)` and after
    `onnx.shape_inference.infer_shapes(data_prop=True)` (as scripts/real_models.py looks them up), with the time
    each took; a crash of either is recorded (0 resolved);
  * soundness: every value of the main graph that `BIN shapes --format json` gives a shape is compared with the
    shape onnxruntime computes, at the two bindings of the manifest (scripts/soundness.py's judge);
  * `BIN expand --format json`: exit code, the rewritten model's outputs against the original's at both
    bindings (rtol 1e-4, atol 1e-5), `BIN check --strict` on it (exit code, error findings), a second expand
    (byte-identical?), `Shape` nodes (all graphs) before and after, Expand nodes inserted.

Writes OUT_JSON ({"models": [...], "totals": {...}, "export": {...}}) and the figures as Markdown. Exits 0 whenever
it could do that (findings included: judging is tests/it/torch_models.rs's job), 2 on a usage or setup error.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402  (run, json_line, sha256, resolved_all, onnx_scopes, onnx_lookup, session, compare)
import soundness  # noqa: E402  (infer_shapes, check_model, binding_from_feeds, placeholder_patterns, Stats)

JOBS = 2
SEED = 0
VARIANTS = ["torchscript14", "torchscript17", "dynamo18", "dynamo18_novi"]
TOOLS = ["tool", "ort", "onnx"]
TOOL_NAMES = {"tool": "onnx-bcast", "ort": "ORT symbolic_shape_infer", "onnx": "onnx data_prop"}


def variant(entry):
    return f"{entry['exporter']}{entry['opset']}" + ("_novi" if entry["stripped"] else "")


# ------------------------------------------------------------------------------------------- inputs

def feeds_for(entry, binding, seed=SEED):
    """Seeded inputs for a manifest entry at one binding of its symbols."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in entry["inputs"]:
        shape = [binding[d] if isinstance(d, str) else d for d in spec["shape"]]
        kind = spec["fill"][0]
        if kind == "int":
            feeds[spec["name"]] = rng.integers(spec["fill"][1], spec["fill"][2], size=shape).astype(np.int64)
        elif kind == "ones":
            feeds[spec["name"]] = np.ones(shape, dtype=np.int64)
        else:
            feeds[spec["name"]] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [vi.name for vi in model.graph.input if vi.name not in inits]


# ------------------------------------------------------------------------------------- resolution

def onnx_resolved(model, sites):
    """Per site: whether its inputs are resolved as an inferred ModelProto states them, and whether one of them
    has a dim named `unk__N` (onnxruntime's name for a dim it could not infer: a fresh symbol, counted resolved)."""
    scopes = real_models.onnx_scopes(model)
    out, fresh = [], []
    for s in sites:
        shapes = []
        for inp in s["inputs"]:
            found, shape = (real_models.onnx_lookup(scopes, s["graph"], inp["name"])
                            if not s.get("functions") else (False, None))
            shapes.append({"shape": shape if found else None})
        out.append(real_models.resolved_all(shapes)[0])
        fresh.append(any(isinstance(d, str) and d.startswith("unk__") for x in shapes for d in (x["shape"] or [])))
    return out, fresh


def ort_symbolic(path):
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    return SymbolicShapeInference.infer_shapes(onnx.load(path), int_max=2**31 - 1, auto_merge=True,
                                               guess_output_rank=False, verbose=0)


def onnx_data_prop(path):
    return onnx.shape_inference.infer_shapes(onnx.load(path), check_type=False, strict_mode=False, data_prop=True)


def peer_resolution(path, sites, tool):
    """Resolved flags per site after one peer tool, its time, and its error if it crashed."""
    t = time.monotonic()
    try:
        inferred = ort_symbolic(path) if tool == "ort" else onnx_data_prop(path)
        if inferred is None:
            raise RuntimeError("infer_shapes returned None")
        secs = round(time.monotonic() - t, 2)
        flags, fresh = onnx_resolved(inferred, sites)
        return flags, sum(fresh), secs, None
    except Exception as ex:  # noqa: BLE001  (a crash of the peer counts as nothing resolved)
        secs = round(time.monotonic() - t, 2)
        return [False] * len(sites), 0, secs, f"{type(ex).__name__}: {str(ex)[:300]}"


# ------------------------------------------------------------------------------------------ one model

def count_ops(model, op):
    n = 0

    def walk(graph):
        nonlocal n
        for node in graph.node:
            n += node.op_type == op and node.domain in ("", "ai.onnx")
            for attr in node.attribute:
                for g in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                    walk(g)

    walk(model.graph)
    for f in model.functions:
        n += sum(1 for node in f.node if node.op_type == op and node.domain in ("", "ai.onnx"))
    return n


def site_label(s):
    return f"{s.get('graph')}/{s.get('node')} ({s.get('op')})"


def study_check(binary, path, rec):
    c = real_models.run([binary, "check", "--format", "json", path])
    rec["check"] = {"rc": c["rc"], "seconds": c["seconds"], "stderr": real_models.tail(c["stderr"])}
    report = real_models.json_line(c["stdout"])
    if report.get("error"):
        raise RuntimeError(f"check could not read the model: {report['error']}")
    sites = report.get("sites", [])
    rec["sites"] = len(sites)
    rec["verdicts"] = {v: sum(1 for s in sites if s.get("verdict") == v) for v in real_models.VERDICTS}
    rec["violations"] = [{"site": site_label(s), "inputs": s.get("inputs"), "message": s.get("message")}
                         for s in sites if s.get("verdict") == "violation"]
    rec["conditional"] = [{"site": site_label(s), "inputs": s.get("inputs"), "message": s.get("message"),
                           "conditions": s.get("conditions")} for s in sites if s.get("verdict") == "conditional"]
    rec["findings"] = [{"code": f.get("code"), "node": f.get("node"), "message": f.get("message")}
                       for f in report.get("findings", [])]
    return sites


def study_resolution(path, sites, rec):
    tool = [real_models.resolved_all(s["inputs"])[0] for s in sites]
    res = {"tool": sum(tool), "seconds": {"tool": rec["check"]["seconds"]}, "errors": {}, "unk_dims": {}}
    flags = {"tool": tool}
    for peer in ("ort", "onnx"):
        f, fresh, secs, err = peer_resolution(path, sites, peer)
        flags[peer] = f
        res[peer] = sum(f)
        res["unk_dims"][peer] = fresh
        res["seconds"][peer] = secs
        if err:
            res["errors"][peer] = err
    res["only_ort"] = [site_label(s) for s, t, o in zip(sites, tool, flags["ort"]) if o and not t][:20]
    res["only_ort_count"] = sum(1 for t, o in zip(tool, flags["ort"]) if o and not t)
    res["unresolved"] = [{"site": site_label(s), "inputs": s["inputs"]} for s, t in zip(sites, tool) if not t][:10]
    rec["resolved"] = res


def study_soundness(binary, path, model, entry, rec, log):
    values, _ = soundness.infer_shapes(binary, path)
    placeholders = soundness.placeholder_patterns(model)
    sound = rec["soundness"] = {"runs": [], "mismatches": [], "type_mismatches": []}
    total = soundness.Stats()
    for i, b in enumerate(entry["bindings"]):
        feeds = feeds_for(entry, b)
        binding, conflicts = soundness.binding_from_feeds(model, feeds)
        stats, mm, tmm = soundness.Stats(), [], []
        try:
            note = soundness.check_model(entry["file"], path, model, values, feeds, binding, placeholders, stats, mm,
                                         tmm, log, f"binding {i + 1}")
        except Exception as ex:  # noqa: BLE001
            sound["runs"].append({"binding": b, "error": f"{type(ex).__name__}: {str(ex)[:400]}"})
            continue
        sound["runs"].append({"binding": b, "symbols": binding, "note": note, "conflicts": conflicts,
                              "stats": stats.as_dict()})
        sound["mismatches"] += mm[:50]
        sound["type_mismatches"] += tmm[:20]
        total.add(stats)
    sound["stats"] = total.as_dict()


def run_outputs(path, feeds):
    sess = real_models.session(path)
    names = [o.name for o in sess.get_outputs()]
    return names, sess.run(names, feeds)


def study_expand(binary, path, model, entry, rec, work):
    out = os.path.join(work, "expanded.onnx")
    e = real_models.run([binary, "expand", "--format", "json", path, out])
    ex = rec["expand"] = {"rc": e["rc"], "seconds": e["seconds"], "stderr": real_models.tail(e["stderr"]),
                          "shape_nodes_before": count_ops(model, "Shape"),
                          "expand_nodes_before": count_ops(model, "Expand")}
    try:
        summary = real_models.json_line(e["stdout"])
        ex["summary"] = {k: summary.get(k) for k in ("sites", "made_explicit", "expands_inserted", "expands_shared",
                                                     "materialized", "nodes_added", "left")}
    except Exception as err:  # noqa: BLE001
        ex["error"] = f"cannot read expand's JSON: {err}; stdout: {e['stdout'][:300]}"
    ex["written"] = os.path.isfile(out)
    if not ex["written"]:
        return
    rewritten = onnx.load(out)
    ex["shape_nodes_after"] = count_ops(rewritten, "Shape")
    ex["expand_nodes_after"] = count_ops(rewritten, "Expand")
    del rewritten
    # onnxruntime: rewritten against original at both bindings.
    ex["ort"] = []
    for b in entry["bindings"]:
        feeds = feeds_for(entry, b)
        try:
            names, want = run_outputs(path, feeds)
        except Exception as err:  # noqa: BLE001
            ex["ort"].append({"binding": b, "status": "original does not run", "error": str(err)[:400]})
            continue
        try:
            names2, got = run_outputs(out, feeds)
        except Exception as err:  # noqa: BLE001
            ex["ort"].append({"binding": b, "status": "rewritten does not run", "error": str(err)[:400]})
            continue
        diffs = [m for n, a, g in zip(names, want, got) for m in real_models.compare(a, g, n)]
        if names != names2:
            diffs.append(f"output names {names} vs {names2}")
        ex["ort"].append({"binding": b, "status": "same" if not diffs else "different", "diffs": diffs[:10],
                          "max_abs_diff": max((real_models.max_abs_diff(a, g) for a, g in zip(want, got)),
                                              default=0.0)})
    ex["ort_equal"] = len(ex["ort"]) == len(entry["bindings"]) and all(r["status"] == "same" for r in ex["ort"])
    st = real_models.run([binary, "check", "--strict", "--format", "json", out])
    ex["strict_rc"] = st["rc"]
    try:
        srep = real_models.json_line(st["stdout"])
        errors = [f for f in srep.get("findings", []) if f.get("severity") == "error"]
        ex["strict_findings"] = len(errors)
        ex["strict_codes"] = {}
        for f in errors:
            ex["strict_codes"][f.get("code")] = ex["strict_codes"].get(f.get("code"), 0) + 1
        ex["strict_examples"] = [f"{f.get('code')} {f.get('graph')}/{f.get('node')} ({f.get('op')}): "
                                 f"{f.get('message')}" for f in errors[:5]]
    except Exception as err:  # noqa: BLE001
        ex["strict_findings"] = None
        ex["strict_examples"] = [f"cannot read strict check's JSON: {err}; stderr: {real_models.tail(st['stderr'])}"]
    out2 = os.path.join(work, "expanded2.onnx")
    e2 = real_models.run([binary, "expand", "--format", "json", out, out2])
    ex["second_rc"] = e2["rc"]
    ex["idempotent"] = os.path.isfile(out2) and real_models.sha256(out2) == real_models.sha256(out)
    if not ex["idempotent"]:
        ex["second_stdout"] = e2["stdout"][:600]


def study(binary, models_dir, entry):
    path = os.path.join(models_dir, entry["file"])
    rec = {"model": entry["file"], "name": entry["name"], "family": entry["family"], "exporter": entry["exporter"],
           "opset": entry["opset"], "stripped": entry["stripped"], "variant": variant(entry)}
    notes = []
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="torch-models-") as work:
        try:
            model = onnx.load(path)
            rec["nodes"] = len(model.graph.node)
            sites = study_check(binary, path, rec)
            study_resolution(path, sites, rec)
            study_soundness(binary, path, model, entry, rec, notes.append)
            study_expand(binary, path, model, entry, rec, work)
        except Exception:  # noqa: BLE001  (a crash of the study itself is recorded, not hidden)
            rec["crash"] = traceback.format_exc()[-3000:]
    rec["notes"] = notes
    rec["seconds"] = round(time.monotonic() - t, 1)
    return rec


# --------------------------------------------------------------------------------------------- totals

def pct(n, d):
    return "–" if not d else f"{100.0 * n / d:.1f}%"


def total(records):
    t = {"models": len(records), "sites": sum(r["sites"] for r in records),
         "verdicts": {v: sum(r["verdicts"][v] for r in records) for v in real_models.VERDICTS},
         "resolved": {k: sum(r["resolved"][k] for r in records) for k in TOOLS},
         "seconds": {k: round(sum(r["resolved"]["seconds"][k] for r in records), 1) for k in TOOLS},
         "peer_errors": {k: sum(1 for r in records if k in r["resolved"]["errors"]) for k in ("ort", "onnx")},
         "ort_unk_sites": sum(r["resolved"]["unk_dims"]["ort"] for r in records),
         "models_below_ort": sum(1 for r in records if r["resolved"]["tool"] < r["resolved"]["ort"]),
         "violations": sum(len(r["violations"]) for r in records),
         "conditional": sum(len(r["conditional"]) for r in records),
         "soundness_mismatches": sum(r["soundness"]["stats"]["mismatches"] for r in records),
         "soundness_claims": sum(r["soundness"]["stats"]["claims"] for r in records),
         "soundness_values": sum(r["soundness"]["stats"]["values"] for r in records),
         "soundness_runs_failed": sum(1 for r in records for x in r["soundness"]["runs"] if "error" in x),
         "expand_nonzero": sum(1 for r in records if r["expand"]["rc"] != 0),
         "ort_equal": sum(1 for r in records if r["expand"].get("ort_equal")),
         "strict_clean": sum(1 for r in records if r["expand"].get("strict_rc") == 0),
         "strict_findings": sum(r["expand"].get("strict_findings") or 0 for r in records),
         "idempotent": sum(1 for r in records if r["expand"].get("idempotent")),
         "shape_nodes_before": sum(r["expand"]["shape_nodes_before"] for r in records),
         "shape_nodes_after": sum(r["expand"].get("shape_nodes_after", 0) for r in records),
         "expands_inserted": sum((r["expand"].get("summary") or {}).get("expands_inserted") or 0 for r in records),
         "made_explicit": sum((r["expand"].get("summary") or {}).get("made_explicit") or 0 for r in records),
         "families": sorted({r["family"] for r in records})}
    return t


def totals(records):
    out = total(records)
    out["per_variant"] = {v: total([r for r in records if r["variant"] == v]) for v in VARIANTS
                          if any(r["variant"] == v for r in records)}
    for v in out["per_variant"].values():
        v.pop("families")
    return out


# -------------------------------------------------------------------------------------------- figures

def figures(records, t, manifest, crashed, seconds):
    lines = [
        "# PyTorch export corpus: figures",
        "",
        "Written by `scripts/torch_models.py` (run by `tests/it/torch_models.rs`); the corpus is described in",
        "`corpus/README.md` (\"PyTorch export corpus\"). Do not edit by hand.",
        "",
        f"Exported with {', '.join(f'{k} {v}' for k, v in manifest.get('versions', {}).items())}; "
        f"{t['models']} models studied, {len(t['families'])} families, in {seconds:.0f} s.",
        "",
        "## Resolved broadcasting sites",
        "",
        "A site is *resolved* when every input shape has a known rank and no unknown dim (symbols and expressions",
        "count). *onnx-bcast*: `check --format json`. *ORT*: onnxruntime's",
        "`SymbolicShapeInference.infer_shapes(auto_merge=True)`. *onnx*: `onnx.shape_inference.infer_shapes(",
        "data_prop=True)`. Both looked up on the same sites (value_info, graph inputs/outputs, initializers).",
        f"ORT names a dim it cannot infer `unk__N`; counted as resolved (a fresh symbol): {t['ort_unk_sites']} sites.",
        "",
        "| exporter | models | sites | onnx-bcast | ORT | onnx | models below ORT | seconds (ours / ORT / onnx) |",
        "|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for name, v in list(t["per_variant"].items()) + [("**all**", t)]:
        r = v["resolved"]
        lines.append(f"| {name} | {v['models']} | {v['sites']} | {r['tool']} ({pct(r['tool'], v['sites'])}) | "
                     f"{r['ort']} ({pct(r['ort'], v['sites'])}) | {r['onnx']} ({pct(r['onnx'], v['sites'])}) | "
                     f"{v['models_below_ort']} | {v['seconds']['tool']} / {v['seconds']['ort']} / "
                     f"{v['seconds']['onnx']} |")
    lines += [
        "",
        "## Every model",
        "",
        "*verdicts*: same / broadcast / violation / conditional / unknown. *sound*: claims checked against",
        "onnxruntime at the two bindings / disagreements. *expand*: exit code. *ORT =*: the rewritten model's",
        "outputs equal the original's at both bindings. *strict*: `check --strict` on the rewritten model (exit",
        "code, error findings). *idem*: a second expand changes no byte. *Shape*: `Shape` nodes before → after.",
        "",
        "| model | sites | onnx-bcast | ORT | onnx | verdicts | sound | expand | Expands | ORT = | strict | idem | Shape |",
        "|---|--:|--:|--:|--:|---|---|--:|--:|---|---|---|---|",
    ]
    for r in records:
        s, x, ex = r["sites"], r["resolved"], r["expand"]
        v = r["verdicts"]
        peer = {k: ("crash" if k in x["errors"] else f"{x[k]} ({pct(x[k], s)})") for k in ("ort", "onnx")}
        st = r["soundness"]["stats"]
        lines.append(
            f"| {r['model']} | {s} | {x['tool']} ({pct(x['tool'], s)}) | {peer['ort']} | {peer['onnx']} | "
            f"{v['same']}/{v['broadcast']}/{v['violation']}/{v['conditional']}/{v['unknown']} | "
            f"{st['claims']}/{st['mismatches']} | {ex['rc']} | "
            f"{(ex.get('summary') or {}).get('expands_inserted', '–')} | "
            f"{'yes' if ex.get('ort_equal') else 'NO'} | {ex.get('strict_rc', '–')}/{ex.get('strict_findings', '–')} | "
            f"{'yes' if ex.get('idempotent') else 'NO'} | {ex['shape_nodes_before']} → {ex.get('shape_nodes_after', '–')} |")
    lines += [
        f"| **total** | **{t['sites']}** | **{t['resolved']['tool']} ({pct(t['resolved']['tool'], t['sites'])})** | "
        f"**{t['resolved']['ort']} ({pct(t['resolved']['ort'], t['sites'])})** | "
        f"**{t['resolved']['onnx']} ({pct(t['resolved']['onnx'], t['sites'])})** | "
        f"{'/'.join(str(t['verdicts'][k]) for k in real_models.VERDICTS)} | "
        f"{t['soundness_claims']}/{t['soundness_mismatches']} | {t['expand_nonzero']} ≠ 0 | {t['expands_inserted']} | "
        f"{t['ort_equal']} yes | {t['strict_clean']} clean, {t['strict_findings']} findings | {t['idempotent']} yes | "
        f"{t['shape_nodes_before']} → {t['shape_nodes_after']} |",
        "",
        "## Conditional sites",
        "",
    ]
    conds = [f"- {r['model']}: {c['site']}: {c['message']}" for r in records for c in r["conditional"]]
    lines += conds or ["None."]
    lines += ["", "## Problems", ""]
    problems = problem_lines(records)
    lines += [f"- {p}" for p in problems] or ["None."]
    lines += ["", "## Exports that failed", ""]
    fails = [f"- {f['name']} ({f['family']}), {f['exporter']} {f['opset'] or ''}: {f['error']}"
             for f in manifest.get("failures", [])]
    lines += fails or ["None."]
    if crashed:
        lines += ["", "## Models the script could not study", ""]
        lines += [f"- {r['model']}: {r['crash'].strip().splitlines()[-1]}" for r in crashed]
    return "\n".join(lines) + "\n"


def problem_lines(records):
    out = []
    for r in records:
        name = r["model"]
        for v in r["violations"]:
            out.append(f"{name}: violation at {v['site']}: {v['message']}")
        for m in r["soundness"]["mismatches"][:3]:
            out.append(f"{name}: soundness: {m['model']} {m['value']}: inferred {m['inferred']}, actual "
                       f"{m['actual']}: {m['why']}")
        for x in r["soundness"]["runs"]:
            if "error" in x:
                out.append(f"{name}: soundness run at {x['binding']} failed: {x['error'][:300]}")
        ex = r["expand"]
        if ex["rc"] != 0:
            out.append(f"{name}: expand exits {ex['rc']}: {json.dumps((ex.get('summary') or {}).get('left'))[:300]} "
                       f"{ex['stderr'][:300]}")
        for o in ex.get("ort", []):
            if o["status"] != "same":
                out.append(f"{name}: ORT at {o['binding']}: {o['status']}: {o.get('error') or '; '.join(o['diffs'])}"
                           [:500])
        if ex.get("written") and not ex.get("idempotent"):
            out.append(f"{name}: a second expand changes the rewritten model (exit {ex.get('second_rc')})")
        if r["resolved"]["tool"] < r["resolved"]["ort"]:
            out.append(f"{name}: onnx-bcast resolves {r['resolved']['tool']} sites, ORT {r['resolved']['ort']}; "
                       f"ORT only: {', '.join(r['resolved']['only_ort'][:5])}")
        for k, e in r["resolved"]["errors"].items():
            out.append(f"{name}: {TOOL_NAMES[k]} failed: {e[:200]}")
    return out


# ----------------------------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("models_dir")
    ap.add_argument("out_json")
    ap.add_argument("--figures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus",
                                                      "TORCH_FIGURES.md"))
    ap.add_argument("--only", action="append", default=[], help="study only models whose file name contains this")
    ap.add_argument("--jobs", type=int, default=JOBS)
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    models_dir = os.path.abspath(args.models_dir)
    mpath = os.path.join(models_dir, "manifest.json")
    try:
        with open(mpath, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as ex:
        print(f"torch_models.py: error: cannot read {mpath}: {ex}", file=sys.stderr)
        return 2
    if not os.access(binary, os.X_OK):
        print(f"torch_models.py: error: {binary} is not an executable", file=sys.stderr)
        return 2
    entries = [e for e in manifest["models"] if not args.only or any(o in e["file"] for o in args.only)]
    if not entries:
        print(f"torch_models.py: error: no models listed in {mpath}", file=sys.stderr)
        return 2
    t = time.monotonic()
    records = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, min(JOBS, args.jobs))) as pool:
        futures = {pool.submit(study, binary, models_dir, e): e for e in entries}
        for fut in concurrent.futures.as_completed(futures):
            e = futures[fut]
            try:
                rec = fut.result()
            except Exception:  # noqa: BLE001  (the worker process itself died)
                rec = {"model": e["file"], "family": e["family"], "crash": traceback.format_exc()[-2000:]}
            records.append(rec)
            print(f"torch_models.py: {rec['model']}: {rec.get('sites', '?')} sites, resolved "
                  f"{rec.get('resolved', {}).get('tool', '?')} / ORT {rec.get('resolved', {}).get('ort', '?')}, "
                  f"{'CRASH' if 'crash' in rec else 'ok'} ({rec.get('seconds', '?')} s)", file=sys.stderr, flush=True)
    seconds = time.monotonic() - t
    records.sort(key=lambda r: r["model"])
    crashed = [r for r in records if "crash" in r]
    ok = [r for r in records if "crash" not in r]
    tot = totals(ok)
    tot["crashed"] = [r["model"] for r in crashed]
    tot["seconds_total"] = round(seconds, 1)
    report = {"models": records, "totals": tot,
              "export": {k: manifest.get(k) for k in ("failures", "seconds", "families", "versions")}}
    with open(args.out_json, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, default=str)
    text = figures(ok, tot, manifest, crashed, seconds)
    with open(args.figures, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
