"""Measures onnx-bcast on the deployment corpus (corpus/README.md, "Deployment corpus").

    python scripts/deploy_models.py BIN MODELS_DIR OUT_JSON [--figures corpus/DEPLOY_FIGURES.md] [--only TEXT]

Run with the python of the deployment venv (corpus/deploy_fetch.sh; the manifest names it). For every model it
does what scripts/torch_models.py does (check's sites and how many are resolved, against onnxruntime's
`symbolic_shape_infer(auto_merge=True)` and onnx's `data_prop`, with their times and crashes; soundness of every
inferred shape against onnxruntime at the two bindings of the manifest; expand: outputs at both bindings, check
--strict on it, idempotence), and besides:

  * opaque nodes (`summary.opaque_nodes`, `opaque_ops`) and the sites of contrib ops, by op; whether every
    QLinearAdd, QLinearMul and QGemm node is a site;
  * `check --strict` on the original, so that the codes expand's output has and the original lacks are known;
  * `fold` on expand's output: the ops (domain, type, count) it gives back against the original's;
  * `infer`: the written model declares a shape for every output of every contrib node, runs in onnxruntime,
    and gives the original's outputs at both bindings.

Writes OUT_JSON and the figures. Exits 0 whenever it could do that, 2 on a usage or setup error.
"""

import collections
import json
import os
import sys
import tempfile
import time
import traceback

import onnx

from harness import exports
from harness.cli import error_findings, json_line, run, tail
from harness.compare import ATOL, RTOL, named_diffs
from harness.exports import (pct, study_check, study_expand, study_resolution, study_soundness,
                             total, totals_by)
from harness.corpus import figures_head, versions
from harness.graph import resolved_all
from harness.ort import manifest_feeds, outputs

CONTRIB_SITES = {"QLinearAdd", "QLinearMul", "QGemm", "FusedGemm", "SkipLayerNormalization", "Attention",
                 "MultiHeadAttention", "GroupQueryAttention",
                 "SkipSimplifiedLayerNormalization"}
MUST_BE_SITES = {"QLinearAdd", "QLinearMul", "QGemm"}


def op_counts(model):
    c = collections.Counter()
    for n in model.graph.node:
        c[f"{n.domain or 'ai.onnx'}.{n.op_type}"] += 1
    return c


def study_contrib(binary, path, model, rec):
    c = run([binary, "check", "--format", "json", path])
    report = json_line(c["stdout"])
    sites = report.get("sites", [])
    rec["opaque_nodes"] = report.get("summary", {}).get("opaque_nodes")
    rec["opaque_ops"] = report.get("opaque_ops", {})
    contrib = collections.Counter(s["op"] for s in sites if s["op"] in CONTRIB_SITES)
    rec["contrib_sites"] = dict(contrib)
    nodes = collections.Counter(n.op_type for n in model.graph.node if n.domain == "com.microsoft")
    rec["qlinear_nodes"] = {op: nodes[op] for op in MUST_BE_SITES if nodes[op]}
    rec["qlinear_not_sites"] = {op: nodes[op] - contrib[op] for op in MUST_BE_SITES if nodes[op] != contrib[op]}
    rec["contrib_resolved"] = sum(1 for s in sites if s["op"] in CONTRIB_SITES
                                  and resolved_all(s["inputs"])[0])
    s = run([binary, "check", "--strict", "--format", "json", path])
    strict = json_line(s["stdout"])
    rec["strict_original"] = {"rc": s["rc"], "codes": dict(collections.Counter(
        f["code"] for f in error_findings(strict)))}


def study_fold(binary, path, model, rec, work):
    """fold(expand(m)) against m's ops; where m has explicit broadcasts of its own (TorchScript's
    `Expand(mask, Where(Equal(shape, -1), ...))`), fold removes those too, so also against fold(m)'s ops."""
    expanded = os.path.join(work, "expanded.onnx")
    if not os.path.isfile(expanded):
        rec["fold"] = {"error": "no expanded model"}
        return
    out = os.path.join(work, "folded.onnx")
    f = run([binary, "fold", "--format", "json", expanded, out])
    fold = rec["fold"] = {"rc": f["rc"], "stderr": tail(f["stderr"])}
    if not os.path.isfile(out):
        return
    got, want = op_counts(onnx.load(out)), op_counts(model)
    fold["same_ops"] = got == want
    fold["ops_diff"] = {k: got[k] - want[k] for k in set(got) | set(want) if got[k] != want[k]}
    own = os.path.join(work, "folded_original.onnx")
    run([binary, "fold", path, own])
    if os.path.isfile(own):
        folded_m = op_counts(onnx.load(own))
        fold["same_as_fold_m"] = got == folded_m
        fold["diff_fold_m"] = {k: got[k] - folded_m[k] for k in set(got) | set(folded_m) if got[k] != folded_m[k]}
    try:
        kept = json_line(f["stdout"]).get("kept") or []
        fold["kept"] = [f"{k.get('node')}: {k.get('reason')}" for k in kept][:5]
    except Exception:  # noqa: BLE001
        pass


def study_infer(binary, path, model, entry, rec, work, rtol, atol):
    out = os.path.join(work, "inferred.onnx")
    r = run([binary, "infer", path, out])
    inf = rec["infer"] = {"rc": r["rc"], "stderr": tail(r["stderr"])}
    if not os.path.isfile(out):
        return
    written = onnx.load(out)
    declared = {vi.name: vi for vi in list(written.graph.value_info) + list(written.graph.output)}
    missing = []
    for n in written.graph.node:
        if n.domain in ("", "ai.onnx") and n.op_type != "SimplifiedLayerNormalization":
            continue
        for o in n.output:
            vi = declared.get(o)
            if o and (vi is None or not vi.type.tensor_type.HasField("shape")):
                missing.append(f"{n.op_type}:{o}")
    inf["contrib_outputs_undeclared"] = missing[:20]
    inf["contrib_outputs_undeclared_count"] = len(missing)
    inf["ort"] = []
    for b in entry["bindings"]:
        feeds = manifest_feeds(entry, b)
        try:
            names, want = outputs(path, feeds)
            names2, got = outputs(out, feeds)
        except Exception as err:  # noqa: BLE001
            inf["ort"].append({"binding": b, "status": "does not run", "error": str(err)[:400]})
            continue
        diffs = named_diffs(names, want, got, rtol, atol)
        inf["ort"].append({"binding": b, "status": "same" if not diffs else "different", "diffs": diffs[:5]})
    inf["ort_equal"] = all(x["status"] == "same" for x in inf["ort"]) and len(inf["ort"]) == len(entry["bindings"])


def study(binary, models_dir, entry):
    path = os.path.join(models_dir, entry["file"])
    rec = {"model": entry["file"], "name": entry["name"], "family": entry["family"], "tool": entry["tool"],
           "exporter": entry["tool"], "opset": entry["opset"], "stripped": False, "variant": entry["tool"]}
    notes = []
    t = time.monotonic()
    # Computed in float16: a broadcast and an element-wise kernel may round one ulp apart (2^-9 near 1).
    half = "fp16" in entry["file"]
    rtol, atol = (1e-3, 4e-3) if half else (RTOL, ATOL)
    rec["tolerance"] = {"rtol": rtol, "atol": atol}
    with tempfile.TemporaryDirectory(prefix="deploy-models-") as work:
        # onnxruntime's symbolic shape inference leaves temporary `*.data` files in the current folder.
        cwd = os.getcwd()
        os.chdir(work)
        try:
            model = onnx.load(path)
            rec["nodes"] = len(model.graph.node)
            sites = study_check(binary, path, rec)
            study_resolution(path, sites, rec)
            study_contrib(binary, path, model, rec)
            study_soundness(binary, path, model, entry, rec, notes.append)
            study_expand(binary, path, model, entry, rec, work, rtol, atol)
            study_fold(binary, path, model, rec, work)
            study_infer(binary, path, model, entry, rec, work, rtol, atol)
        except Exception:  # noqa: BLE001  (a crash of the study itself is recorded, not hidden)
            rec["crash"] = traceback.format_exc()[-3000:]
        finally:
            os.chdir(cwd)
    rec["notes"] = notes
    rec["seconds"] = round(time.monotonic() - t, 1)
    return rec


# --------------------------------------------------------------------------------------------- figures

def totals(records):
    tools = sorted({r["tool"] for r in records})
    out = total(records)
    out["per_tool"] = totals_by(records, "tool", tools)
    ort_runs = [r for r in records if "ort" not in r["resolved"]["errors"]]
    out["ort_runs"] = len(ort_runs)
    out["ort_crashes"] = [r["model"] for r in records if "ort" in r["resolved"]["errors"]]
    out["resolved_where_ort_runs"] = {k: sum(r["resolved"][k] for r in ort_runs) for k in ("tool", "ort")}
    out["sites_where_ort_runs"] = sum(r["sites"] for r in ort_runs)
    out["opaque_nodes"] = sum(r.get("opaque_nodes") or 0 for r in records)
    out["opaque_ops"] = dict(sum((collections.Counter(r.get("opaque_ops", {})) for r in records),
                                 collections.Counter()))
    out["contrib_sites"] = dict(sum((collections.Counter(r.get("contrib_sites", {})) for r in records),
                                    collections.Counter()))
    out["contrib_resolved"] = sum(r.get("contrib_resolved", 0) for r in records)
    out["qlinear_not_sites"] = sum(sum(r.get("qlinear_not_sites", {}).values()) for r in records)
    out["fold_same_ops"] = sum(1 for r in records if r.get("fold", {}).get("same_ops"))
    out["fold_same_as_fold_m"] = sum(1 for r in records if r.get("fold", {}).get("same_ops")
                                     or r.get("fold", {}).get("same_as_fold_m"))
    out["infer_ort_equal"] = sum(1 for r in records if r.get("infer", {}).get("ort_equal"))
    out["infer_undeclared"] = sum(r.get("infer", {}).get("contrib_outputs_undeclared_count", 0) for r in records)
    out["check_seconds"] = round(sum(r["check"]["seconds"] for r in records), 2)
    out["ort_seconds"] = round(sum(r["resolved"]["seconds"]["ort"] for r in ort_runs), 2)
    out["check_seconds_where_ort_runs"] = round(sum(r["check"]["seconds"] for r in ort_runs), 2)
    return out


def figures(records, t, manifest, crashed, seconds):
    lines = [
        *figures_head("Deployment corpus: figures", "deploy_models", "Deployment corpus"),
        f"Made with {versions(manifest)}; {t['models']} models "
        f"from {len(t['per_tool'])} tool paths, studied in {seconds:.0f} s.",
        "",
        "## Resolved broadcasting sites, by tool path",
        "",
        "A site is *resolved* when every input shape has a known rank and no unknown dim. *ORT*: onnxruntime's",
        "`SymbolicShapeInference.infer_shapes(auto_merge=True)` on the same sites (a crash resolves nothing).",
        "*seconds*: `check` as a whole process per model / ORT's inference in process.",
        "",
        "| tool | models | sites | onnx-bcast | ORT | ORT crashes | models below ORT | seconds (ours / ORT) |",
        "|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for name, v in list(t["per_tool"].items()) + [("**all**", t)]:
        r = v["resolved"]
        lines.append(f"| {name} | {v['models']} | {v['sites']} | {r['tool']} ({pct(r['tool'], v['sites'])}) | "
                     f"{r['ort']} ({pct(r['ort'], v['sites'])}) | {v['peer_errors']['ort']} | "
                     f"{v['models_below_ort']} | {v['seconds']['tool']} / {v['seconds']['ort']} |")
    wr = t["resolved_where_ort_runs"]
    lines += [
        "",
        f"Where ORT's symbolic inference runs ({t['ort_runs']} models, {t['sites_where_ort_runs']} sites): "
        f"onnx-bcast {pct(wr['tool'], t['sites_where_ort_runs'])}, ORT {pct(wr['ort'], t['sites_where_ort_runs'])}; "
        f"`check` {t['check_seconds_where_ort_runs']} s (whole processes) against ORT {t['ort_seconds']} s "
        f"(in process). It crashes on {len(t['ort_crashes'])}: {', '.join(t['ort_crashes']) or 'none'}.",
        "",
        f"Opaque nodes: {t['opaque_nodes']} ({json.dumps(t['opaque_ops'])}). Contrib sites: "
        f"{json.dumps(t['contrib_sites'])}, {t['contrib_resolved']} resolved. QLinearAdd/QLinearMul/QGemm nodes that "
        f"are not sites: {t['qlinear_not_sites']}.",
        "",
        "## Every model",
        "",
        "*verdicts*: same / broadcast / violation / conditional / unknown. *sound*: claims checked against",
        "onnxruntime at the two bindings / disagreements. *expand*: exit code; *ORT =*: outputs equal at both",
        "bindings; *strict*: codes of `check --strict` on the expanded model that the original lacks; *idem*: a",
        "second expand changes no byte; *fold*: fold(expand(m)) has m's ops (*fold(m)*: those of fold(m), where m",
        "has explicit broadcasts of its own that fold removes too); *infer*: the written model runs with",
        "equal outputs (contrib outputs left undeclared).",
        "",
        "| model | tool | sites | onnx-bcast | ORT | verdicts | opaque | contrib sites | sound | expand | ORT = | "
        "new strict | idem | fold | infer |",
        "|---|---|--:|--:|--:|---|--:|---|---|--:|---|---|---|---|---|",
    ]
    for r in records:
        s, x, ex, v = r["sites"], r["resolved"], r["expand"], r["verdicts"]
        ort = "crash" if "ort" in x["errors"] else f"{x['ort']} ({pct(x['ort'], s)})"
        st = r["soundness"]["stats"]
        new = new_strict_codes(r)
        fold, inf = r.get("fold", {}), r.get("infer", {})
        lines.append(
            f"| {r['model']} | {r['tool']} | {s} | {x['tool']} ({pct(x['tool'], s)}) | {ort} | "
            f"{v['same']}/{v['broadcast']}/{v['violation']}/{v['conditional']}/{v['unknown']} | "
            f"{r.get('opaque_nodes')} | {json.dumps(r.get('contrib_sites', {}))} | "
            f"{st['claims']}/{st['mismatches']} | {ex['rc']} | {'yes' if ex.get('ort_equal') else 'NO'} | "
            f"{', '.join(new) or '–'} | {'yes' if ex.get('idempotent') else 'NO'} | "
            f"{'yes' if fold.get('same_ops') else 'fold(m)' if fold.get('same_as_fold_m') else 'NO'} | "
            f"{'yes' if inf.get('ort_equal') else 'NO'} ({inf.get('contrib_outputs_undeclared_count', '?')}) |")
    lines += ["", "## Problems", ""]
    problems = problem_lines(records)
    lines += [f"- {p}" for p in problems] or ["None."]
    lines += ["", "## Steps that failed while making the corpus", ""]
    lines += [f"- {f['file']} ({f['tool']}): {f['error'][:300]}" for f in manifest.get("failures", [])] or ["None."]
    if crashed:
        lines += ["", "## Models the script could not study", ""]
        lines += [f"- {r['model']}: {r['crash'].strip().splitlines()[-1]}" for r in crashed]
    return "\n".join(lines) + "\n"


def new_strict_codes(r):
    before = r.get("strict_original", {}).get("codes", {})
    after = r["expand"].get("strict_codes") or {}
    return sorted(c for c in after if c not in before)


def problem_lines(records):
    out = exports.problem_lines(records)
    for r in records:
        name = r["model"]
        if r.get("opaque_nodes"):
            out.append(f"{name}: opaque nodes {r['opaque_ops']}")
        if r.get("qlinear_not_sites"):
            out.append(f"{name}: QLinear nodes that are not sites: {r['qlinear_not_sites']}")
        if new_strict_codes(r):
            out.append(f"{name}: check --strict on the expanded model adds {new_strict_codes(r)}")
        fold = r.get("fold", {})
        if not fold.get("same_ops") and not fold.get("same_as_fold_m"):
            out.append(f"{name}: fold(expand(m)) ops differ from m's and fold(m)'s: {fold.get('diff_fold_m')}; "
                       f"kept: {fold.get('kept')}")
        inf = r.get("infer", {})
        if not inf.get("ort_equal"):
            out.append(f"{name}: infer: {inf.get('ort') or inf.get('stderr')}"[:400])
        if inf.get("contrib_outputs_undeclared_count"):
            out.append(f"{name}: infer leaves contrib outputs undeclared: {inf['contrib_outputs_undeclared']}")
    return out


def finish_totals(tot):
    tot["tools"] = sorted(tot["per_tool"])


def main():
    return exports.main("deploy_models.py", __doc__, "DEPLOY_FIGURES.md", study, totals, figures, ["tool"],
                        ["failures", "seconds", "tools", "versions"], finish_totals=finish_totals)


if __name__ == "__main__":
    sys.exit(main())
