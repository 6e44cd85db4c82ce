"""Ranges of input sizes over the corpora (issue 27): every claim of `check --range` tested in onnxruntime.

    python scripts/range_study.py BIN OUT_JSON [--torch DIR] [--corpus DIR] [--backend DIR] [--figures MD]
                                  [--only TEXT] [--timing-rounds N]

Run with a Python that has the pinned onnx, onnxruntime and numpy (the PyTorch corpus's venv, or
scripts/testdata.sh's). Model sets: --torch (corpus/torch_fetch.sh's models, manifest.json: inputs, fills and valid
sizes), --corpus (corpus/fetch.sh's real models), --backend (the ONNX backend tests). Every model whose fed inputs
name a symbol (a plain dim_param) is studied under three sets of ranges (RANGES: by what the symbol's name says it
is: a sequence, a batch, an image side, audio samples, anything else):

  * `BIN check --format json --range ... --witness DIR`: the site decisions (holds / fails / unproven) and the
    witnesses; `check --range` timed against `check` (the least wall time of each over eleven paired rounds; a
    release binary makes these figures, the test's debug one does not);
  * where every site holds over the ranges (and no `index-bound` finding is left: a Gather's computed indices within
    their table; nor a `conditional-shape`, `shape-contradiction` or `inexact-division` one: what an op requires of
    its sizes, GroupQueryAttention's cache head size): five sizes drawn inside them (seeded), the model run in onnxruntime on seeded inputs of those
    sizes; an error at a judged node (a broadcasting site, or a Gather with an index bound) is unsound, any other
    error (a convolution larger than its input) is reported as it is; a node with an op requirement's finding counts as
    judged. An integer input the manifest fills with ones
    (an attention mask) is given `--range NAME=0..1`, the values it holds;
  * every witness written: the model run on its tensors; it must fail (where it runs, the witness is unsound).

And the acceptance figures of the issue: for each PyTorch model whose manifest says `seq` is bounded by
max_position_embeddings, `check --safe-ranges` within seq 1..4096 (the safe seq range found), the witness of
`--range seq=1..4096` run in onnxruntime, and `--range seq=1..MAX` (every site must hold); for the real corpus's
YOLOv8 (nudenet) and PP-OCR detectors, `--safe-ranges` within 320..640 per side, its witness run, and
`320..640/32` proven.

Writes OUT_JSON and the figures as Markdown (--figures). Exits 0 whenever it could do all that; judging is the
caller's (tests/it/ranges_corpus.rs).
"""

import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

from harness.cli import run as run_command
from harness.corpus import load_manifest
from harness.graph import fed_inputs
from harness.ort import NUMERIC_NP_OF_ONNX
from harness.ort import session as ort_session

TIMEOUT = 600
SEED = 27
DRAWS = 5
# Three sets of ranges per kind of symbol: within what the models are made for, past it, and a stepped one.
RANGES = {
    "seq": ["1..64", "1..512", "8..128/8"],
    "batch": ["1..4", "1..16", "2..8/2"],
    "image": ["320..640/32", "320..640", "256..384/16"],
    "torch-image": ["32..224/32", "32..128", "64..160/16"],
    "samples": ["400..4000", "400..16000/160", "1000..2000"],
    "other": ["1..8", "1..64", "2..32/2"],
}
NP_OF_ONNX = NUMERIC_NP_OF_ONNX  # no string input is fed


def kind_of(symbol, model_set):
    s = symbol.lower()
    if s in ("seq", "dec_seq", "sequence", "seq_len", "sequence_length") or "seq" in s:
        return "seq"
    if "batch" in s or s in ("n", "b") or s.endswith("dimension.0"):
        return "batch"
    if s in ("height", "width", "h", "w") or s.endswith("dimension.1") or s.endswith("dimension.2"):
        return "torch-image" if model_set == "torch" else "image"
    if "sample" in s:
        return "samples"
    return "other"


def run(cmd):
    return run_command(cmd, TIMEOUT, digits=None, timeout_text="timed out")


TIMING_ROUNDS = [11]


def paired_times(a, b, rounds=None):
    """The least wall time of each command over rounds that run one after the other: on a loaded machine the least
    is the time the work takes, and pairing keeps both under the same load. A ratio above 1.5 is measured again
    with four times the rounds (a few-millisecond run is easily caught behind another process)."""
    rounds = rounds or TIMING_ROUNDS[0]
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, cmd in enumerate((a, b)):
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=TIMEOUT)
            best[i] = min(best[i], time.perf_counter() - t)
    if best[1] > 1.5 * best[0] and TIMING_ROUNDS[0] > 1 and rounds == TIMING_ROUNDS[0]:
        again = paired_times(a, b, rounds * 4)
        best = [min(best[0], again[0]), min(best[1], again[1])]
    return best


def plain(name):
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name) is not None


def input_symbols(model):
    out = []
    for i in fed_inputs(model):
        for d in i.type.tensor_type.shape.dim:
            if d.dim_param and plain(d.dim_param) and d.dim_param not in out:
                out.append(d.dim_param)
    return out


# ----------------------------------------------------------------------------------------------- running

def session(path):
    # onnxruntime as deployed: its default graph optimisation.
    return ort_session(path, optimize=True, intra=1, inter=None, severity=4)


def ort_error(path, feeds):
    """None when the model runs on the feeds, else onnxruntime's message."""
    try:
        session(path).run(None, feeds)
        return None
    except Exception as e:  # noqa: BLE001 (any failure is the runtime's answer)
        return str(e)


def failing_node(message):
    m = re.search(r"running (\w+) node\. Name:'([^']*)'", message or "")
    return (m.group(1), m.group(2)) if m else (None, None)


def feeds_at(model, sizes, fills, rng):
    """Seeded inputs with every symbol at its size: a manifest's fill where there is one, else floats normal,
    integers 0 or 1, booleans at random."""
    feeds = {}
    for i in fed_inputs(model):
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else sizes.get(d.dim_param, 1) for d in t.shape.dim]
        dtype = NP_OF_ONNX.get(t.elem_type)
        if dtype is None:
            return None
        fill = fills.get(i.name)
        if fill and fill[0] == "int":
            feeds[i.name] = rng.integers(fill[1], fill[2], size=shape).astype(dtype)
        elif fill and fill[0] == "ones":
            feeds[i.name] = np.ones(shape, dtype=dtype)
        elif dtype == np.bool_:
            feeds[i.name] = rng.random(shape) < 0.5
        elif np.issubdtype(dtype, np.integer):
            feeds[i.name] = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def value_args(model, fills):
    """`--range NAME=0..1` for each integer input the manifest fills with ones (an attention mask): a mask holds 0s
    and 1s, which bounds the position ids computed from it (OPT's `CumSum(attention_mask)`)."""
    out = []
    for i in fed_inputs(model):
        if (fills.get(i.name) or [None])[0] == "ones" and NP_OF_ONNX.get(i.type.tensor_type.elem_type) in (np.int64, np.int32):
            out += ["--range", f"{i.name}=0..1"]
    return out


def index_bounds(report):
    """The `index-bound` findings of a check report (a Gather's computed indices past their table), by severity."""
    out = {"error": 0, "warning": 0}
    for f in report.get("findings", []):
        if f.get("code") == "index-bound":
            out[f["severity"]] = out.get(f["severity"], 0) + 1
    return out


SHAPE_CODES = ("conditional-shape", "shape-contradiction", "inexact-division")


def shape_findings(report):
    """The findings of an op's requirements on sizes (GroupQueryAttention's `kv_cache_dim = 16`, a Reshape's
    `4 divides 6*N`), by severity: over ranges, a condition proven is no finding, one failing an error, one unproven
    a warning; any of them means the tool does not claim the model runs at every size of the ranges."""
    out = {"error": 0, "warning": 0}
    for f in report.get("findings", []):
        if f.get("code") in SHAPE_CODES:
            out[f["severity"]] = out.get(f["severity"], 0) + 1
    return out


def lattice(text):
    span, _, step = text.partition("/")
    lo, hi = (int(x) for x in span.split(".."))
    return list(range(lo, hi + 1, int(step or 1)))


# ----------------------------------------------------------------------------------------------- one model

def decisions(report):
    out = {"holds": 0, "fails": 0, "unproven": 0}
    for s in report.get("sites", []):
        if "over_ranges" in s:
            out[s["over_ranges"]["result"]] += 1
    return out


def study_ranges(binary, path, model, ranges, fills, work, sites):
    args = [a for name, text in ranges.items() for a in ("--range", f"{name}={text}")] + value_args(model, fills)
    wdir = tempfile.mkdtemp(dir=work)
    r = run([binary, "check", "--format", "json", path, "--witness", wdir] + args)
    rec = {"ranges": ranges, "rc": r["rc"]}
    try:
        report = json.loads(r["stdout"].splitlines()[0])
    except (IndexError, ValueError):
        rec["error"] = r["stderr"][-400:]
        return rec
    rec["decisions"] = decisions(report)
    rec["violations"] = report["summary"]["violations"]
    rec["index_bounds"] = index_bounds(report)
    rec["shape_findings"] = shape_findings(report)
    plain = [binary, "check", "--format", "json", path]
    rec["seconds_check"], rec["seconds_ranged"] = paired_times(plain, plain + args)
    every_site_holds = (rec["violations"] == 0 and rec["decisions"]["unproven"] == 0
                        and report["summary"]["conditional"] == 0 and sum(rec["index_bounds"].values()) == 0
                        and sum(rec["shape_findings"].values()) == 0)
    rec["every_site_holds"] = every_site_holds
    rng = np.random.default_rng(SEED)
    pick = random.Random(SEED)
    rec["draws"] = []
    if every_site_holds:
        for _ in range(DRAWS):
            sizes = {name: pick.choice(lattice(text)) for name, text in ranges.items()}
            feeds = feeds_at(model, sizes, fills, rng)
            err = None if feeds is None else ort_error(path, feeds)
            op, node = failing_node(err)
            rec["draws"].append({"sizes": sizes, "error": None if err is None else err[:300],
                                 "at_site": node in sites, "node": node, "op": op})
    rec["witnesses"] = []
    for w in report.get("ranges", {}).get("witnesses", []):
        feeds = {}
        for f in sorted(glob.glob(os.path.join(w["dir"], "input_*.pb"))):
            t = onnx.load_tensor(f)
            feeds[t.name] = onnx.numpy_helper.to_array(t)
        err = ort_error(path, feeds) if feeds else "no tensors written: " + str(w.get("error"))
        op, node = failing_node(err)
        rec["witnesses"].append({"sizes": w["sizes"], "sites": w["sites"], "fails": err is not None,
                                 "error": None if err is None else err[:300], "node": node, "op": op,
                                 "at_site": node in sites})
    return rec


def study(binary, path, model_set, entry, work):
    model = onnx.load(path, load_external_data=False)
    symbols = input_symbols(model)
    rec = {"model": os.path.relpath(path, work["root"]), "set": model_set, "symbols": symbols, "runs": []}
    if not symbols:
        return None
    fills = {i["name"]: i["fill"] for i in (entry or {}).get("inputs", [])}
    base = run([binary, "check", "--format", "json", path] + value_args(model, fills))
    try:
        report = json.loads(base["stdout"].splitlines()[0])
    except (IndexError, ValueError):
        rec["error"] = base["stderr"][-400:]
        return rec
    # The nodes judged: broadcasting sites, and Gathers whose computed indices are bounded (index-bound).
    sites = {s["node"] for s in report["sites"]}
    sites |= {f["node"] for f in report.get("findings", []) if f.get("code") == "index-bound"}
    sites |= {f["node"] for f in report.get("findings", []) if f.get("code") in SHAPE_CODES}
    for k in range(3):
        ranges = {s: RANGES[kind_of(s, model_set)][k] for s in symbols}
        rec["runs"].append(study_ranges(binary, path, model, ranges, fills, work["dir"], sites))
    return rec


# ----------------------------------------------------------------------------------------------- acceptance

def checked(binary, path, args, wdir=None):
    cmd = [binary, "check", "--format", "json", path] + args + (["--witness", wdir] if wdir else [])
    r = run(cmd)
    try:
        return json.loads(r["stdout"].splitlines()[0])
    except (IndexError, ValueError):
        return {"error": r["stderr"][-400:]}


def run_witnesses(path, report):
    out = []
    for w in report.get("ranges", {}).get("witnesses", []):
        feeds = {}
        for f in sorted(glob.glob(os.path.join(w["dir"], "input_*.pb"))):
            t = onnx.load_tensor(f)
            feeds[t.name] = onnx.numpy_helper.to_array(t)
        err = ort_error(path, feeds)
        op, node = failing_node(err)
        out.append({"sizes": w["sizes"], "sites": w["sites"], "fails": err is not None, "node": node, "op": op,
                    "error": None if err is None else err[:300]})
    return out


def all_hold(report):
    d = decisions(report)
    return ("error" not in report and d["fails"] == 0 and d["unproven"] == 0 and report["summary"]["violations"] == 0
            and sum(index_bounds(report).values()) == 0 and sum(shape_findings(report).values()) == 0)


def position_table(binary, path, entry, work):
    """A model whose manifest bounds seq by max_position_embeddings: its safe seq range within 1..4096, the
    witness of 1..4096 in onnxruntime, and 1..MAX proven."""
    table = int(re.search(r"1\.\.(\d+)", entry["valid_sizes"]["seq"]).group(1))
    model = onnx.load(path, load_external_data=False)
    fills = {i["name"]: i["fill"] for i in entry.get("inputs", [])}
    others = [a for s in input_symbols(model) if s != "seq"
              for a in ("--range", f"{s}={'1..4' if s == 'batch' else f'1..{table}'}")] + value_args(model, fills)
    wdir = tempfile.mkdtemp(dir=work)
    wide = checked(binary, path, ["--range", "seq=1..4096", "--safe-ranges"] + others, wdir)
    safe = ((wide.get("ranges") or {}).get("safe") or {}).get("symbols") or {}
    below = checked(binary, path, ["--range", f"seq=1..{table}"] + others)
    plain = checked(binary, path, value_args(model, fills))
    return {"model": os.path.basename(path), "family": entry.get("family"), "table": table, "safe_seq": safe.get("seq"),
            "exact": safe.get("seq") == {"min": 1, "max": table, "step": 1},
            "conditional_sites": sum(1 for s in wide.get("sites", []) if "over_ranges" in s),
            "index_bounds": index_bounds(plain)["warning"], "value_args": value_args(model, fills),
            "witnesses": run_witnesses(path, wide), "proven_below": all_hold(below),
            "decisions_below": decisions(below)}


def detector(binary, path, work):
    """YOLOv8 or a PP-OCR detector: the safe box within 320..640 per side, its witness in onnxruntime, and
    320..640/32 proven."""
    symbols = input_symbols(onnx.load(path, load_external_data=False))
    sides = [s for s in symbols if kind_of(s, "corpus") == "image"]
    rest = [a for s in symbols if s not in sides for a in ("--range", f"{s}=1..4")]
    wide_args = [a for s in sides for a in ("--range", f"{s}=320..640")] + rest
    wdir = tempfile.mkdtemp(dir=work)
    wide = checked(binary, path, wide_args + ["--safe-ranges"], wdir)
    safe = ((wide.get("ranges") or {}).get("safe") or {}).get("symbols") or {}
    stepped = checked(binary, path, [a for s in sides for a in ("--range", f"{s}=320..640/32")] + rest)
    profile = ((wide.get("ranges") or {}).get("safe") or {}).get("profile") or {}
    return {"model": os.path.relpath(path, os.path.dirname(os.path.dirname(path))), "sides": sides,
            "safe": {s: safe.get(s) for s in sides},
            "steps_of_32": all(safe.get(s) == {"min": 320, "max": 640, "step": 32} for s in sides),
            "trtexec": profile.get("trtexec"), "witnesses": run_witnesses(path, wide),
            "proven_stepped": all_hold(stepped), "decisions_stepped": decisions(stepped)}


# ----------------------------------------------------------------------------------------------- totals

def totals(records):
    t = {"models": 0, "runs": 0, "runs_all_hold": 0, "draws": 0, "draws_ok": 0, "draws_broadcast_error": 0,
         "draws_other_error": 0, "witnesses": 0, "witnesses_failing": 0, "witnesses_running": 0,
         "decisions": {"holds": 0, "fails": 0, "unproven": 0}, "index_bound_errors": 0, "index_bound_warnings": 0,
         "shape_errors": 0, "shape_warnings": 0, "draws_error_nodes": {},
         "worst_ratio": 0.0, "worst_ratio_model": None}
    for rec in records:
        t["models"] += 1
        for r in rec.get("runs", []):
            t["runs"] += 1
            t["runs_all_hold"] += bool(r.get("every_site_holds"))
            for k, v in r.get("decisions", {}).items():
                t["decisions"][k] += v
            t["index_bound_errors"] += r.get("index_bounds", {}).get("error", 0)
            t["index_bound_warnings"] += r.get("index_bounds", {}).get("warning", 0)
            t["shape_errors"] += r.get("shape_findings", {}).get("error", 0)
            t["shape_warnings"] += r.get("shape_findings", {}).get("warning", 0)
            for d in r.get("draws", []):
                t["draws"] += 1
                key = "draws_ok" if d["error"] is None else "draws_broadcast_error" if d["at_site"] else "draws_other_error"
                t[key] += 1
                if d["error"] is not None:
                    where = f"{d['op']} {rec['model']}"
                    t["draws_error_nodes"][where] = t["draws_error_nodes"].get(where, 0) + 1
            for w in r.get("witnesses", []):
                t["witnesses"] += 1
                t["witnesses_failing" if w["fails"] else "witnesses_running"] += 1
            if r.get("seconds_check") and r.get("seconds_ranged"):
                ratio = r["seconds_ranged"] / r["seconds_check"]
                if ratio > t["worst_ratio"]:
                    t["worst_ratio"], t["worst_ratio_model"] = round(ratio, 2), rec["model"]
    return t


def figures(out, sets, acceptance, seconds):
    lines = ["# Ranges of input sizes: figures", "",
             "Written by `scripts/range_study.py` with a release binary (corpus/README.md, \"Ranges of input sizes\"). Do not edit by hand.", "",
             f"Whole study: {seconds:.0f} s.", "", "## Position tables (PyTorch corpus)", "",
             "| model | table read by | table | safe seq (within 1..4096) | exact | witness | fails in onnxruntime at | "
             "1..table proven |",
             "|---|---|--:|---|---|---|---|---|"]
    for p in acceptance.get("position_tables", []):
        safe = p["safe_seq"]
        shown = "none" if safe is None else f"{safe['min']}..{safe['max']}" + (f"/{safe['step']}" if safe["step"] > 1 else "")
        w = p["witnesses"]
        wit = ", ".join(json.dumps(x["sizes"]) for x in w) or "none"
        at = ", ".join(f"{x['op']} {x['node']}" if x["fails"] else "RUNS" for x in w) or "-"
        how = ("a broadcast" if p["conditional_sites"] else "a Gather of computed ids" if p.get("index_bounds")
               else "nothing found")
        how += " (given " + ", ".join(p["value_args"][1::2]) + ")" if p.get("value_args") and p.get("index_bounds") else ""
        lines.append(f"| {p['model']} | {how} | {p['table']} | {shown} | {'yes' if p['exact'] else 'NO'} | {wit} | {at} | "
                     f"{'yes' if p['proven_below'] else 'NO'} |")
    lines += ["", "## Detectors (real-model corpus)", "",
              "| model | safe sides (within 320..640) | steps of 32 | witness | fails in onnxruntime at | 320..640/32 proven |",
              "|---|---|---|---|---|---|"]
    for d in acceptance.get("detectors", []):
        safe = ", ".join(f"{s} {v['min']}..{v['max']}/{v['step']}" if v else f"{s} none" for s, v in d["safe"].items())
        wit = ", ".join(json.dumps(x["sizes"]) for x in d["witnesses"]) or "none"
        at = ", ".join(f"{x['op']} {x['node']}" if x["fails"] else "RUNS" for x in d["witnesses"]) or "-"
        lines.append(f"| {d['model']} | {safe} | {'yes' if d['steps_of_32'] else 'NO'} | {wit} | {at} | "
                     f"{'yes' if d['proven_stepped'] else 'NO'} |")
    lines += ["", "## Soundness, three ranges per model with symbolic inputs", "",
              "| set | models | runs | every site holds | sizes drawn | ran | errors at a judged node | other errors | "
              "witnesses | failing | running | sites holds/fails/unproven | index-bound errors/warnings | "
              "op requirements errors/warnings | worst check --range / check |",
              "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|---|"]
    for name, t in sets.items():
        d = t["decisions"]
        lines.append(f"| {name} | {t['models']} | {t['runs']} | {t['runs_all_hold']} | {t['draws']} | {t['draws_ok']} | "
                     f"{t['draws_broadcast_error']} | {t['draws_other_error']} | {t['witnesses']} | "
                     f"{t['witnesses_failing']} | {t['witnesses_running']} | {d['holds']}/{d['fails']}/{d['unproven']} | "
                     f"{t['index_bound_errors']}/{t['index_bound_warnings']} | "
                     f"{t['shape_errors']}/{t['shape_warnings']} | "
                     f"{t['worst_ratio']}x ({t['worst_ratio_model']}) |")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("out_json")
    ap.add_argument("--torch")
    ap.add_argument("--corpus")
    ap.add_argument("--backend")
    ap.add_argument("--figures")
    ap.add_argument("--only", default="")
    ap.add_argument("--timing-rounds", type=int, default=11, help="paired rounds of check and check --range")
    a = ap.parse_args()
    TIMING_ROUNDS[0] = max(1, a.timing_rounds)
    start = time.monotonic()
    work = tempfile.mkdtemp(prefix="range-study-")
    records, acceptance = {}, {"position_tables": [], "detectors": []}
    sets = []
    if a.torch:
        manifest = load_manifest(a.torch)
        sets.append(("torch", a.torch, [(os.path.join(a.torch, e["file"]), e) for e in manifest["models"]]))
    if a.corpus:
        paths = sorted(glob.glob(os.path.join(a.corpus, "**", "*.onnx"), recursive=True))
        sets.append(("corpus", a.corpus, [(p, None) for p in paths]))
    if a.backend:
        paths = sorted(glob.glob(os.path.join(a.backend, "*", "*", "model.onnx")))
        sets.append(("backend", a.backend, [(p, None) for p in paths]))
    for name, root, models in sets:
        records[name] = []
        for path, entry in models:
            if a.only not in path:
                continue
            try:
                rec = study(a.binary, path, name, entry, {"root": root, "dir": work})
            except Exception as e:  # noqa: BLE001 (a model the study cannot handle is recorded, not fatal)
                rec = {"model": os.path.relpath(path, root), "set": name, "error": repr(e)[:400]}
            if rec is not None:
                records[name].append(rec)
                print(f"{name} {rec['model']}: {[r.get('decisions') for r in rec.get('runs', [])]}", file=sys.stderr)
            if entry and "max_position" in str(entry["valid_sizes"].get("seq", "")):
                acceptance["position_tables"].append(position_table(a.binary, path, entry, work))
            if name == "corpus" and re.search(r"nudenet|PP-OCR.*_det", path):
                acceptance["detectors"].append(detector(a.binary, path, work))
    set_totals = {name: totals(recs) for name, recs in records.items()}
    seconds = time.monotonic() - start
    with open(a.out_json, "w") as f:
        json.dump({"sets": set_totals, "records": records, "acceptance": acceptance, "seconds": seconds}, f, indent=1)
    if a.figures:
        figures(a.figures, set_totals, acceptance, seconds)
    for name, t in set_totals.items():
        print(name, json.dumps(t), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
