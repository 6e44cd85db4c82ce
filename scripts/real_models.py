"""Runs onnx-bcast over the real-model corpus (corpus/README.md) and records what it did.

    python scripts/real_models.py BIN MODELS_DIR OUT_JSON [--figures FIGURES_MD]

Run with the project venv (scripts/testdata.sh: pinned onnx, onnxruntime, numpy). For every .onnx under
MODELS_DIR (sorted by relative path):

  * `BIN check --format json`: exit code, the verdict split, every violation (these models work, so any
    violation is a false positive unless proven otherwise);
  * `BIN expand --format json` into a temporary directory: exit code and summary;
  * on the rewritten model: `onnx.checker.check_model(full_check=True)`, `BIN check --strict`, and a second
    expand, whose output must be byte-identical to its input;
  * when the original runs in onnxruntime: seeded random inputs (symbolic/unknown dims bound to small sizes,
    or to the sizes a model needs, see SPECS), original and rewritten run on the same inputs, outputs compared
    (floats: rtol 1e-4, atol 1e-5, NaN equal to NaN; everything else exactly);
  * resolved input shapes: the share of broadcasting sites whose every input shape is fully resolved (a known rank, no
    unknown dim; symbols count as resolved), once from `check --format json` and once from ONNX's
    `onnx.shape_inference.infer_shapes(model, data_prop=True)` (value_info, graph inputs/outputs and
    initializers of the site's graph and the graphs enclosing it). "static" additionally needs every dim to
    be a number.

Writes OUT_JSON ({"models": [...], "totals": {...}}) and the figures as Markdown (default corpus/FIGURES.md).
Exits 0 whenever it could do all that; judging the results is the caller's job (tests/it/real_models.rs).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

import onnx

from harness.cli import VERDICTS, error_findings, finding_text, json_line, run, sha256, tail
from harness.compare import ATOL, RTOL, max_abs_diff, named_diffs
from harness.corpus import figures_head, make_inputs, onnx_files
from harness.graph import (external_locations, full_check, onnx_data_prop, onnx_scopes, producers, resolved,
                           resolved_all, site_shapes)
from harness.ort import outputs, session


# ----------------------------------------------------------------------------------------- one model

def study(binary, models_dir, rel, work):
    path = os.path.join(models_dir, rel)
    rec = {"model": rel, "package": rel.split("/")[0], "bytes": os.path.getsize(path), "sha256": sha256(path)}
    m = onnx.load(path, load_external_data=False)
    rec["producer"] = (m.producer_name + " " + m.producer_version).strip() or "(none)"
    rec["opsets"] = {(o.domain or "ai.onnx"): o.version for o in m.opset_import}
    rec["nodes"] = len(m.graph.node)
    rec["external_data"] = external_locations(m)
    # The rewritten models are written to `work`; their external data references are relative, so the
    # files go beside them (onnx-bcast keeps the references as they are and copies no data file).
    for loc in rec["external_data"]:
        src = os.path.join(os.path.dirname(path), loc)
        dst = os.path.join(work, loc)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.exists(src) and not os.path.exists(dst):
            shutil.copyfile(src, dst)  # not a symlink: onnx and onnxruntime refuse data outside the model's dir
    sites = study_check(binary, path, rec)
    study_resolution(path, m, sites, rec)
    out, written = study_expand(binary, path, rec, work)
    study_ort(path, rel, out, written, rec)
    return rec


def study_check(binary, path, rec):
    """check's exit code, summary, findings, violations and verdict split; returns its sites."""
    c = run([binary, "check", "--format", "json", path])
    rec["check"] = {"rc": c["rc"], "seconds": c["seconds"], "stderr": tail(c["stderr"])}
    sites = []
    try:
        report = json_line(c["stdout"])
        rec["check"]["summary"] = report.get("summary")
        rec["check"]["error"] = report.get("error")
        sites = report.get("sites", [])
        rec["check"]["findings"] = error_findings(report)
        rec["check"]["warnings"] = sorted({f.get("code", "?") for f in report.get("findings", [])
                                           if f.get("severity") != "error"})
    except Exception as e:  # noqa: BLE001
        rec["check"]["error"] = f"cannot read check's JSON: {e}; stdout: {c['stdout'][:500]}"
    rec["check"]["violations"] = [
        {k: s.get(k) for k in ("graph", "node", "op", "rule", "inputs", "message", "axis", "offending_input")}
        for s in sites if s.get("verdict") == "violation"]
    rec["verdicts"] = {v: sum(1 for s in sites if s.get("verdict") == v) for v in VERDICTS}
    rec["sites"] = len(sites)
    return sites


def study_resolution(path, m, sites, rec):
    """Resolved input shapes, onnx-bcast vs ONNX shape inference."""
    tool = [resolved_all(s["inputs"]) for s in sites]
    rec["resolved"] = {"tool": sum(r for r, _ in tool), "tool_static": sum(st for _, st in tool)}
    try:
        inferred = onnx_data_prop(onnx.load(path))
        scopes = onnx_scopes(inferred)
        ours = [resolved_all(site_shapes(scopes, s)) for s in sites]
        rec["resolved"]["onnx"] = sum(r for r, _ in ours)
        rec["resolved"]["onnx_static"] = sum(st for _, st in ours)
        # Sites where one side knows every input shape and the other does not.
        rec["resolved"]["only_onnx"] = sum(1 for t, o in zip(tool, ours) if o[0] and not t[0])
        rec["resolved"]["only_tool"] = sum(1 for t, o in zip(tool, ours) if t[0] and not o[0])
        # Which ops make the inputs that ONNX resolves and onnx-bcast does not (the direct producer only).
        made_by = producers(m)
        hist = {}
        for s, t, o in zip(sites, tool, ours):
            if o[0] and not t[0]:
                for inp in s["inputs"]:
                    if not resolved(inp.get("shape"))[0]:
                        op = made_by.get(inp["name"], "?") if not s.get("functions") else "(function body)"
                        hist[op] = hist.get(op, 0) + 1
        rec["resolved"]["only_onnx_producers"] = dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))
        del inferred
    except Exception as e:  # noqa: BLE001
        rec["resolved"]["onnx_error"] = f"{type(e).__name__}: {str(e)[:300]}"


def study_expand(binary, path, rec, work):
    """expand, checks of the rewritten model, idempotence; returns the rewritten model's path, and whether it
    was written."""
    out = os.path.join(work, "expanded.onnx")
    e = run([binary, "expand", "--format", "json", path, out])
    rec["expand"] = {"rc": e["rc"], "seconds": e["seconds"], "stderr": tail(e["stderr"])}
    try:
        summary = json_line(e["stdout"])
        rec["expand"]["summary"] = {k: summary.get(k) for k in
                                    ("sites", "made_explicit", "expands_inserted", "expands_shared", "materialized",
                                     "nodes_added", "left", "written")}
    except Exception as ex:  # noqa: BLE001
        rec["expand"]["error"] = f"cannot read expand's JSON: {ex}; stdout: {e['stdout'][:500]}"
    written = os.path.isfile(out)
    rec["expand"]["written"] = written
    rec["rewritten"] = {}
    if written:
        rw = rec["rewritten"]
        rw["bytes"] = os.path.getsize(out)
        rw["identical_to_input"] = sha256(out) == rec["sha256"]
        rw["full_check"] = full_check(out)
        # The original's full_check, so a failure the rewrite inherits is told apart from one it introduced.
        rw["original_full_check"] = full_check(path)
        # --strict on the rewritten model, and on the original: a conditional or undecided site of the original
        # stays one when made explicit (strict means proof), so the judge tells inherited findings from new ones.
        for key, target in (("strict", out), ("original_strict", path)):
            st = run([binary, "check", "--strict", "--format", "json", target])
            rw[f"{key}_rc"] = st["rc"]
            try:
                srep = json_line(st["stdout"])
                rw[f"{key}_errors"] = [finding_text(f) for f in error_findings(srep)][:200]
                rw[f"{key}_summary"] = srep.get("summary")
            except Exception as ex:  # noqa: BLE001
                rw[f"{key}_errors"] = [f"cannot read strict check's JSON: {ex}; stderr: {tail(st['stderr'])}"]
        out2 = os.path.join(work, "expanded2.onnx")
        e2 = run([binary, "expand", "--format", "json", out, out2])
        rw["second_expand_rc"] = e2["rc"]
        rw["idempotent"] = os.path.isfile(out2) and sha256(out2) == sha256(out)
        if not rw["idempotent"]:
            try:
                again = json_line(e2["stdout"])
                acts = again.get("actions", [])
                unknown_rank = sum(1 for a in acts if any("[unknown rank]" in st for st in a.get("steps", [])))
                rw["second_expand"] = (f"it rewrites {again.get('made_explicit')} site(s) again, "
                                       f"{unknown_rank} with an input of unknown rank; first: "
                                       + "; ".join(f"{a['graph']}/{a['node']} ({a['op']}): {' | '.join(a['steps'])}"
                                                   for a in acts[:2]))
            except Exception:  # noqa: BLE001
                rw["second_expand"] = tail(e2["stdout"], 3)[:1500] + tail(e2["stderr"], 5)
    return out, written


def study_ort(path, rel, out, written, rec):
    """onnxruntime: the original's and the rewritten model's outputs on the same seeded inputs."""
    r = rec["ort"] = {}
    try:
        feeds = make_inputs(path, rel)
        r["inputs"] = {k: list(v.shape) for k, v in feeds.items()}
    except Exception as ex:  # noqa: BLE001
        r.update(status="no inputs", error=f"{type(ex).__name__}: {str(ex)[:400]}")
        return
    try:
        names, want = outputs(path, feeds)
    except Exception as ex:  # noqa: BLE001
        r.update(status="original does not run", error=f"{type(ex).__name__}: {str(ex)[:600]}")
        return
    if not written:
        r["status"] = "no rewritten model"
        return
    try:
        got = session(out).run(names, feeds)  # by the original's output names
    except Exception as ex:  # noqa: BLE001
        r.update(status="rewritten does not run", error=f"{type(ex).__name__}: {str(ex)[:600]}")
        return
    diffs = named_diffs(names, want, got)
    r["status"] = "same" if not diffs else "different"
    r["max_abs_diff"] = max((max_abs_diff(a, b) for a, b in zip(want, got)), default=0.0)
    if diffs:
        r["diffs"] = diffs[:20]


# ------------------------------------------------------------------------------------------- figures

def pct(n, d):
    return "–" if d == 0 else f"{100.0 * n / d:.0f}%"


def figures(records, totals):
    lines = [
        *figures_head("Real-model corpus: figures", "real_models"),
        "## onnx-bcast on each model",
        "",
        "Sites split by verdict (same / broadcast / violation / conditional / unknown). *expand*: exit code,",
        "sites made explicit, Expand nodes inserted, sites left. *ORT*: the rewritten model's outputs against the",
        f"original's on seeded random inputs (rtol {RTOL:g}, atol {ATOL:g}). *check*: `onnx.checker` full_check",
        "of the rewritten model. *strict*: exit code of `check --strict` on it. *idem*: a second expand changes",
        "no byte.",
        "",
        "| model | exporter | sites | same/bc/viol/cond/unk | check rc | expand rc | explicit | Expands | left | ORT | check | strict | idem |",
        "|---|---|--:|---|--:|--:|--:|--:|--:|---|---|--:|---|",
    ]
    for r in records:
        v = r["verdicts"]
        ex = r["expand"].get("summary") or {}
        rw = r.get("rewritten", {})
        ort_status = r["ort"].get("status", "?")
        if ort_status == "same":
            ort_status = f"same (max diff {r['ort'].get('max_abs_diff', 0):.1g})"
        fc = rw.get("full_check", "–")
        fc = "ok" if fc == "ok" else ("fails (as original)" if rw.get("original_full_check", "ok") != "ok" else "FAILS")
        lines.append(
            f"| {r['model']} | {r['producer']} | {r['sites']} | "
            f"{v['same']}/{v['broadcast']}/{v['violation']}/{v['conditional']}/{v['unknown']} | "
            f"{r['check']['rc']} | {r['expand']['rc']} | {ex.get('made_explicit', '–')} | "
            f"{ex.get('expands_inserted', '–')} | {len(ex.get('left') or [])} | {ort_status} | {fc} | "
            f"{rw.get('strict_rc', '–')} | {'yes' if rw.get('idempotent') else 'NO'} |")
    t = totals
    lines += [
        f"| **total ({t['models']} models)** | | **{t['sites']}** | "
        f"{t['verdicts']['same']}/{t['verdicts']['broadcast']}/{t['verdicts']['violation']}/"
        f"{t['verdicts']['conditional']}/{t['verdicts']['unknown']} | {t['check_nonzero']} ≠ 0 | "
        f"{t['expand_nonzero']} ≠ 0 | {t['made_explicit']} | {t['expands_inserted']} | {t['left']} | "
        f"{t['ort_same']} same, {t['ort_different']} different, {t['ort_not_run']} not run | "
        f"{t['full_check_ok']} ok | {t['strict_nonzero']} ≠ 0 | {t['idempotent']} yes |",
        "",
        "## Resolved input shapes: how many sites have them fully",
        "",
        "A site counts as *resolved* when every input has a known rank and no unknown dim (symbols count as",
        "resolved), *static* when every dim is a number. *onnx-bcast*: the input shapes in `check --format json`.",
        "*ONNX*: `onnx.shape_inference.infer_shapes(model, data_prop=True)`, each input looked up in the",
        "inferred value_info, graph inputs/outputs and initializers of the site's graph and its enclosing graphs.",
        "*only ONNX* / *only onnx-bcast*: sites one side resolves and the other does not.",
        "",
        "| model | sites | onnx-bcast resolved | ONNX resolved | onnx-bcast static | ONNX static | only ONNX | only onnx-bcast |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in records:
        s, x = r["sites"], r["resolved"]
        if "onnx_error" in x:
            onnx_cells = ["error", "error", "–", "–"]
        else:
            onnx_cells = [f"{x['onnx']} ({pct(x['onnx'], s)})", f"{x['onnx_static']} ({pct(x['onnx_static'], s)})",
                          str(x["only_onnx"]), str(x["only_tool"])]
        lines.append(f"| {r['model']} | {s} | {x['tool']} ({pct(x['tool'], s)}) | {onnx_cells[0]} | "
                     f"{x['tool_static']} ({pct(x['tool_static'], s)}) | {onnx_cells[1]} | {onnx_cells[2]} | {onnx_cells[3]} |")
    rt = t["resolved"]
    lines += [
        f"| **total** | **{t['sites']}** | **{rt['tool']} ({pct(rt['tool'], t['sites'])})** | "
        f"**{rt['onnx']} ({pct(rt['onnx'], t['sites'])})** | {rt['tool_static']} ({pct(rt['tool_static'], t['sites'])}) | "
        f"{rt['onnx_static']} ({pct(rt['onnx_static'], t['sites'])}) | {rt['only_onnx']} | {rt['only_tool']} |",
        "",
    ]
    hist = rt.get("only_onnx_producers", {})
    if hist:
        lines += [
            "Inputs that ONNX resolves and onnx-bcast does not, by the op that makes them (the direct producer,",
            "over all models; an input counted once per site it feeds):",
            "",
            "| producer op | inputs |",
            "|---|--:|",
        ] + [f"| {op} | {n} |" for op, n in hist.items()] + [""]
    problems = problem_lines(records)
    lines += ["## Problems", ""] + ([f"- {p}" for p in problems] if problems else ["None."]) + [""]
    return "\n".join(lines)


def problem_lines(records):
    out = []
    for r in records:
        name = r["model"]
        if r["check"]["rc"] != 0:
            out.append(f"{name}: check exit {r['check']['rc']} {r['check'].get('error') or ''} {r['check']['stderr'][:300]}")
        for v in r["check"]["violations"]:
            out.append(f"{name}: violation at {v['graph']}/{v['node']} ({v['op']}): {v['message']}")
        if r["expand"]["rc"] != 0:
            left = (r["expand"].get("summary") or {}).get("left") or []
            out.append(f"{name}: expand exit {r['expand']['rc']}, left {json.dumps(left)[:600]} {r['expand']['stderr'][:300]}")
        rw = r.get("rewritten", {})
        if rw and rw.get("full_check") != "ok" and rw.get("original_full_check") == "ok":
            out.append(f"{name}: rewritten model fails full_check: {rw['full_check'][:400]}")
        if rw and rw.get("strict_rc") != 0:
            out.append(f"{name}: check --strict on the rewritten model exits {rw.get('strict_rc')}: "
                       f"{'; '.join(rw.get('strict_errors', [])[:3])[:600]}")
        if rw and not rw.get("idempotent"):
            out.append(f"{name}: a second expand changes the rewritten model: {rw.get('second_expand', '')[:500]}")
        st = r["ort"].get("status")
        if st not in ("same", None):
            out.append(f"{name}: ORT {st}: {(r['ort'].get('error') or '; '.join(r['ort'].get('diffs', [])))[:600]}")
        if "onnx_error" in r["resolved"]:
            out.append(f"{name}: ONNX shape inference failed: {r['resolved']['onnx_error'][:300]}")
    return out


def total(records):
    t = {"models": len(records), "sites": sum(r["sites"] for r in records),
         "verdicts": {v: sum(r["verdicts"][v] for r in records) for v in VERDICTS},
         "check_nonzero": sum(r["check"]["rc"] != 0 for r in records),
         "expand_nonzero": sum(r["expand"]["rc"] != 0 for r in records),
         "made_explicit": sum((r["expand"].get("summary") or {}).get("made_explicit") or 0 for r in records),
         "expands_inserted": sum((r["expand"].get("summary") or {}).get("expands_inserted") or 0 for r in records),
         "left": sum(len((r["expand"].get("summary") or {}).get("left") or []) for r in records),
         "ort_same": sum(r["ort"].get("status") == "same" for r in records),
         "ort_different": sum(r["ort"].get("status") in ("different", "rewritten does not run") for r in records),
         "ort_not_run": sum(r["ort"].get("status") not in ("same", "different", "rewritten does not run") for r in records),
         "full_check_ok": sum(r.get("rewritten", {}).get("full_check") == "ok" for r in records),
         "strict_nonzero": sum(r.get("rewritten", {}).get("strict_rc") != 0 for r in records),
         "idempotent": sum(bool(r.get("rewritten", {}).get("idempotent")) for r in records),
         "bytes": sum(r["bytes"] for r in records),
         "producers": sorted({r["producer"].split(" ")[0] for r in records})}
    keys = ["tool", "tool_static", "onnx", "onnx_static", "only_onnx", "only_tool"]
    t["resolved"] = {k: sum(r["resolved"].get(k, 0) for r in records) for k in keys}
    hist = {}
    for r in records:
        for op, n in r["resolved"].get("only_onnx_producers", {}).items():
            hist[op] = hist.get(op, 0) + n
    t["resolved"]["only_onnx_producers"] = dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("models_dir")
    ap.add_argument("out_json")
    ap.add_argument("--figures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus",
                                                      "FIGURES.md"))
    ap.add_argument("--only", action="append", default=[], help="study only models whose path contains this")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    models_dir = os.path.abspath(args.models_dir)
    rels = onnx_files(models_dir)
    if args.only:
        rels = [r for r in rels if any(o in r for o in args.only)]
    if not rels:
        sys.exit(f"no .onnx files under {models_dir}")
    records = []
    for rel in rels:
        t = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="real-models-") as work:
            try:
                rec = study(binary, models_dir, rel, work)
            except Exception:  # noqa: BLE001  (a crash of the study itself is recorded, not hidden)
                rec = {"model": rel, "crash": traceback.format_exc()}
        rec["seconds"] = round(time.monotonic() - t, 1)
        records.append(rec)
        print(f"real_models.py: {rel}: {rec.get('sites', '?')} sites, check {rec.get('check', {}).get('rc')}, "
              f"expand {rec.get('expand', {}).get('rc')}, ORT {rec.get('ort', {}).get('status')} "
              f"({rec['seconds']} s)", file=sys.stderr, flush=True)
    crashed = [r for r in records if "crash" in r]
    ok = [r for r in records if "crash" not in r]
    totals = total(ok)
    totals["crashed"] = [r["model"] for r in crashed]
    with open(args.out_json, "w", encoding="utf-8") as f:
        json.dump({"models": records, "totals": totals}, f, indent=1, default=str)
    text = figures(ok, totals)
    if crashed:
        text += "\n## Models the script could not study\n\n" + "\n".join(
            f"- {r['model']}: {r['crash'].strip().splitlines()[-1]}" for r in crashed) + "\n"
    with open(args.figures, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
