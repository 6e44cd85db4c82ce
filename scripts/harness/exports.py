"""The per-model studies of the PyTorch export corpus (scripts/torch_models.py) that the deployment corpus
(scripts/deploy_models.py) runs too, and the command line both share: check's sites, how many are resolved against
onnxruntime's and onnx's own shape inference, soundness at the manifest's bindings, expand."""

import argparse
import concurrent.futures
import json
import os
import sys
import time
import traceback

import onnx

from harness.cli import VERDICTS, error_findings, finding_text, json_line, main_values, run, sha256, tail
from harness.compare import ATOL, RTOL, max_abs_diff, named_diffs
from harness.corpus import load_manifest
from harness.expose import binding_from_feeds, check_model
from harness.graph import count_ops, onnx_data_prop, onnx_scopes, ort_symbolic, resolved_all, site_shapes
from harness.judge import Stats, placeholder_patterns
from harness.ort import manifest_feeds, outputs

JOBS = 2
TOOLS = ["tool", "ort", "onnx"]  # who resolves a site's input shapes: onnx-bcast, onnxruntime, onnx
TOOL_NAMES = {"tool": "onnx-bcast", "ort": "ORT symbolic_shape_infer", "onnx": "onnx data_prop"}


def pct(n, d):
    return "–" if not d else f"{100.0 * n / d:.1f}%"


# ------------------------------------------------------------------------------------- resolution

def onnx_resolved(model, sites):
    """Per site: whether its inputs are resolved as an inferred ModelProto states them, and whether one of them
    has a dim named `unk__N` (onnxruntime's name for a dim it could not infer: a fresh symbol, counted resolved)."""
    scopes = onnx_scopes(model)
    out, fresh = [], []
    for s in sites:
        shapes = site_shapes(scopes, s)
        out.append(resolved_all(shapes)[0])
        fresh.append(any(isinstance(d, str) and d.startswith("unk__") for x in shapes for d in (x["shape"] or [])))
    return out, fresh


def peer_resolution(path, sites, tool):
    """Resolved flags per site after one peer tool, its time, and its error if it crashed."""
    t = time.monotonic()
    try:
        inferred = (ort_symbolic if tool == "ort" else onnx_data_prop)(onnx.load(path))
        if inferred is None:
            raise RuntimeError("infer_shapes returned None")
        secs = round(time.monotonic() - t, 2)
        flags, fresh = onnx_resolved(inferred, sites)
        return flags, sum(fresh), secs, None
    except Exception as ex:  # noqa: BLE001  (a crash of the peer counts as nothing resolved)
        secs = round(time.monotonic() - t, 2)
        return [False] * len(sites), 0, secs, f"{type(ex).__name__}: {str(ex)[:300]}"


def site_label(s):
    return f"{s.get('graph')}/{s.get('node')} ({s.get('op')})"


def study_check(binary, path, rec):
    c = run([binary, "check", "--format", "json", path])
    rec["check"] = {"rc": c["rc"], "seconds": c["seconds"], "stderr": tail(c["stderr"])}
    report = json_line(c["stdout"])
    if report.get("error"):
        raise RuntimeError(f"check could not read the model: {report['error']}")
    sites = report.get("sites", [])
    rec["sites"] = len(sites)
    rec["verdicts"] = {v: sum(1 for s in sites if s.get("verdict") == v) for v in VERDICTS}
    rec["violations"] = [{"site": site_label(s), "inputs": s.get("inputs"), "message": s.get("message")}
                         for s in sites if s.get("verdict") == "violation"]
    rec["conditional"] = [{"site": site_label(s), "inputs": s.get("inputs"), "message": s.get("message"),
                           "conditions": s.get("conditions")} for s in sites if s.get("verdict") == "conditional"]
    rec["findings"] = [{"code": f.get("code"), "node": f.get("node"), "message": f.get("message")}
                       for f in report.get("findings", [])]
    return sites


def study_resolution(path, sites, rec):
    tool = [resolved_all(s["inputs"])[0] for s in sites]
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
    values, _ = main_values(binary, path)
    placeholders = placeholder_patterns(model)
    sound = rec["soundness"] = {"runs": [], "mismatches": [], "type_mismatches": []}
    total = Stats()
    for i, b in enumerate(entry["bindings"]):
        feeds = manifest_feeds(entry, b)
        binding, conflicts = binding_from_feeds(model, feeds)
        stats, mm, tmm = Stats(), [], []
        try:
            note = check_model(entry["file"], path, model, values, feeds, binding, placeholders, stats, mm,
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


def study_expand(binary, path, model, entry, rec, work, rtol=RTOL, atol=ATOL):
    """expand; the rewritten model's outputs against the original's at every binding (within rtol, atol), check
    --strict on it, a second expand (byte-identical?), Shape and Expand nodes before and after."""
    out = os.path.join(work, "expanded.onnx")
    e = run([binary, "expand", "--format", "json", path, out])
    ex = rec["expand"] = {"rc": e["rc"], "seconds": e["seconds"], "stderr": tail(e["stderr"]),
                          "shape_nodes_before": count_ops(model, {"Shape"}),
                          "expand_nodes_before": count_ops(model, {"Expand"})}
    try:
        summary = json_line(e["stdout"])
        ex["summary"] = {k: summary.get(k) for k in ("sites", "made_explicit", "expands_inserted", "expands_shared",
                                                     "materialized", "nodes_added", "left")}
    except Exception as err:  # noqa: BLE001
        ex["error"] = f"cannot read expand's JSON: {err}; stdout: {e['stdout'][:300]}"
    ex["written"] = os.path.isfile(out)
    if not ex["written"]:
        return
    rewritten = onnx.load(out)
    ex["shape_nodes_after"] = count_ops(rewritten, {"Shape"})
    ex["expand_nodes_after"] = count_ops(rewritten, {"Expand"})
    del rewritten
    # onnxruntime: rewritten against original at both bindings.
    ex["ort"] = []
    for b in entry["bindings"]:
        feeds = manifest_feeds(entry, b)
        try:
            names, want = outputs(path, feeds)
        except Exception as err:  # noqa: BLE001
            ex["ort"].append({"binding": b, "status": "original does not run", "error": str(err)[:400]})
            continue
        try:
            names2, got = outputs(out, feeds)
        except Exception as err:  # noqa: BLE001
            ex["ort"].append({"binding": b, "status": "rewritten does not run", "error": str(err)[:400]})
            continue
        diffs = named_diffs(names, want, got, rtol, atol)
        if names != names2:
            diffs.append(f"output names {names} vs {names2}")
        ex["ort"].append({"binding": b, "status": "same" if not diffs else "different", "diffs": diffs[:10],
                          "max_abs_diff": max((max_abs_diff(a, g) for a, g in zip(want, got)),
                                              default=0.0)})
    ex["ort_equal"] = len(ex["ort"]) == len(entry["bindings"]) and all(r["status"] == "same" for r in ex["ort"])
    st = run([binary, "check", "--strict", "--format", "json", out])
    ex["strict_rc"] = st["rc"]
    try:
        srep = json_line(st["stdout"])
        errors = error_findings(srep)
        ex["strict_findings"] = len(errors)
        ex["strict_codes"] = {}
        for f in errors:
            ex["strict_codes"][f.get("code")] = ex["strict_codes"].get(f.get("code"), 0) + 1
        ex["strict_examples"] = [finding_text(f) for f in errors[:5]]
    except Exception as err:  # noqa: BLE001
        ex["strict_findings"] = None
        ex["strict_examples"] = [f"cannot read strict check's JSON: {err}; stderr: {tail(st['stderr'])}"]
    out2 = os.path.join(work, "expanded2.onnx")
    e2 = run([binary, "expand", "--format", "json", out, out2])
    ex["second_rc"] = e2["rc"]
    ex["idempotent"] = os.path.isfile(out2) and sha256(out2) == sha256(out)
    if not ex["idempotent"]:
        ex["second_stdout"] = e2["stdout"][:600]


# ------------------------------------------------------------------------------------------ summaries

def total(records):
    t = {"models": len(records), "sites": sum(r["sites"] for r in records),
         "verdicts": {v: sum(r["verdicts"][v] for r in records) for v in VERDICTS},
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


def totals_by(records, key, values):
    """total() of the records of each of `values` of `key` that has any (without the families list)."""
    out = {v: total([r for r in records if r[key] == v]) for v in values if any(r[key] == v for r in records)}
    for v in out.values():
        v.pop("families")
    return out


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


# ----------------------------------------------------------------------------------------- command line

def parse_args(doc, default_figures, max_jobs):
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("models_dir")
    ap.add_argument("out_json")
    ap.add_argument("--figures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                      "corpus", default_figures))
    ap.add_argument("--only", action="append", default=[], help="study only models whose file name contains this")
    ap.add_argument("--jobs", type=int, default=JOBS)
    args = ap.parse_args()
    args.jobs = max(1, min(max_jobs, args.jobs) if max_jobs else args.jobs)
    return args


def study_all(prog, binary, models_dir, entries, study, jobs, crash_keys):
    """Every entry's study, `jobs` processes at a time; a worker that dies is recorded as the model's crash."""
    records = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(study, binary, models_dir, e): e for e in entries}
        for fut in concurrent.futures.as_completed(futures):
            e = futures[fut]
            try:
                rec = fut.result()
            except Exception:  # noqa: BLE001  (the worker process itself died)
                rec = {"model": e["file"], **{k: e[k] for k in crash_keys}, "crash": traceback.format_exc()[-2000:]}
            records.append(rec)
            print(f"{prog}: {rec['model']}: {rec.get('sites', '?')} sites, resolved "
                  f"{rec.get('resolved', {}).get('tool', '?')} / ORT {rec.get('resolved', {}).get('ort', '?')}, "
                  f"{'CRASH' if 'crash' in rec else 'ok'} ({rec.get('seconds', '?')} s)", file=sys.stderr, flush=True)
    return sorted(records, key=lambda r: r["model"])


def main(prog, doc, default_figures, study, totals, figures, crash_keys, export_keys, max_jobs=None,
         finish_totals=None):
    """The command line of a corpus script over an export manifest (`doc` its docstring): BIN MODELS_DIR OUT_JSON
    [--figures F] [--only TEXT] [--jobs N, at most max_jobs]. `study(binary, models_dir, entry)` makes a model's
    record, `totals(records)` and `finish_totals(totals)` the totals, `figures(...)` the Markdown; a worker that
    dies leaves a record of `crash_keys` from the entry. Writes OUT_JSON and the figures; 0 when it could, 2 on a
    usage or setup error."""
    args = parse_args(doc, default_figures, max_jobs)
    binary = os.path.abspath(args.binary)
    models_dir = os.path.abspath(args.models_dir)
    mpath = os.path.join(models_dir, "manifest.json")
    try:
        manifest = load_manifest(models_dir)
    except (OSError, ValueError) as ex:
        print(f"{prog}: error: cannot read {mpath}: {ex}", file=sys.stderr)
        return 2
    if not os.access(binary, os.X_OK):
        print(f"{prog}: error: {binary} is not an executable", file=sys.stderr)
        return 2
    entries = [e for e in manifest["models"] if not args.only or any(o in e["file"] for o in args.only)]
    if not entries:
        print(f"{prog}: error: no models listed in {mpath}", file=sys.stderr)
        return 2
    t = time.monotonic()
    records = study_all(prog, binary, models_dir, entries, study, args.jobs, crash_keys)
    seconds = time.monotonic() - t
    crashed = [r for r in records if "crash" in r]
    ok = [r for r in records if "crash" not in r]
    tot = totals(ok)
    tot["crashed"] = [r["model"] for r in crashed]
    tot["seconds_total"] = round(seconds, 1)
    if finish_totals:
        finish_totals(tot)
    report = {"models": records, "totals": tot, "export": {k: manifest.get(k) for k in export_keys}}
    with open(args.out_json, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, default=str)
    text = figures(ok, tot, manifest, crashed, seconds)
    with open(args.figures, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 0
