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
    shape onnxruntime computes, at the two bindings of the manifest (scripts/soundness.py's judge, harness/judge.py);
  * `BIN expand --format json`: exit code, the rewritten model's outputs against the original's at both
    bindings (rtol 1e-4, atol 1e-5), `BIN check --strict` on it (exit code, error findings), a second expand
    (byte-identical?), `Shape` nodes (all graphs) before and after, Expand nodes inserted.

Writes OUT_JSON ({"models": [...], "totals": {...}, "export": {...}}) and the figures as Markdown. Exits 0 whenever
it could do that (findings included: judging is tests/it/torch_models.rs's job), 2 on a usage or setup error.
"""

import os
import sys
import tempfile
import time
import traceback

import onnx

from harness import exports
from harness.cli import VERDICTS
from harness.corpus import figures_head, variant, versions
from harness.exports import (pct, problem_lines, study_check, study_expand, study_resolution, study_soundness,
                             total, totals_by)

VARIANTS = ["torchscript14", "torchscript17", "dynamo18", "dynamo18_novi"]


# ------------------------------------------------------------------------------------------ one model

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

def totals(records):
    out = total(records)
    out["per_variant"] = totals_by(records, "variant", VARIANTS)
    return out


# -------------------------------------------------------------------------------------------- figures

def figures(records, t, manifest, crashed, seconds):
    lines = [
        *figures_head("PyTorch export corpus: figures", "torch_models", "PyTorch export corpus"),
        f"Exported with {versions(manifest)}; "
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
        f"{'/'.join(str(t['verdicts'][k]) for k in VERDICTS)} | "
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


# ----------------------------------------------------------------------------------------------- main

def main():
    return exports.main("torch_models.py", __doc__, "TORCH_FIGURES.md", study, totals, figures, ["family"],
                        ["failures", "seconds", "families", "versions"], max_jobs=exports.JOBS)


if __name__ == "__main__":
    sys.exit(main())
