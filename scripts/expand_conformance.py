#!/usr/bin/env python3
"""Conformance of `onnx-bcast expand` against the ONNX backend test data.

Run by the venv's python (scripts/testdata.sh makes it) with the onnx-bcast binary and the backend data dir:

    .cache/venv/bin/python scripts/expand_conformance.py BIN DATA_DIR --report REPORT.json [--workdir DIR]

It measures, in one process:

 1. node/* tests whose model holds a broadcasting op (main graph, subgraphs or model-local functions): the ORIGINAL
    model runs in onnxruntime on every test_data_set and is compared with the expected outputs the way onnx's
    backend runner does (rtol=1e-3, atol=1e-7 for floats, exact for ints/bools/strings, recursing into
    sequences, optionals may be None). For every test the original passes, the model rewritten by
    `onnx-bcast expand` must pass too.
 2. onnx.checker.check_model(rewritten, full_check=True) on every rewritten node model.
 3. `onnx-bcast check --strict` exits 0 on every rewritten node model whose expand exited 0.
 4. A second `expand` of a rewritten node model reproduces it byte for byte.
 5. pytorch-converted/ and pytorch-operator/ (mostly opset 6, some with legacy `broadcast=1`): onnxruntime refuses
    opset < 7, so every model is evaluated with onnx.reference.ReferenceEvaluator (the primary figure) before and
    after the rewrite. It loads opset 6 models, but implements legacy Add/Sub/Mul/Div/... with plain numpy
    broadcasting and ignores `axis` (an opset 6 Add of [2,3] and [2] with axis=0 raises "Issues with types");
    so for every legacy `broadcast=1` node the script checks that its `axis` places B where numpy alignment
    would (then the evaluator computes the original faithfully); a model where it does not would be an evaluator
    exclusion, listed with that evidence (none occurs in onnx 1.22.0's data). Because the stored data of the
    pytorch-operator add tests is uninitialized memory (denormals beside 1e+200s, where rtol=1e-3 cannot tell
    a + b from a - b), every model expand changed is also run on fresh standard-normal inputs, original vs.
    rewritten, in ReferenceEvaluator (differential figure). As a cross-check, original and rewritten are also
    converted with onnx.version_converter to opset 13 and run in onnxruntime.
 6. `expand --materialize-constants` over the node tests of point 1, outputs verified again in onnxruntime.

Evaluator exclusions: a test whose ORIGINAL model does not compute its expected outputs in an evaluator says nothing
about the rewrite, so it is not a rewrite failure; it is counted and listed (with the evaluator's own error as
evidence) under "original fails" for that evaluator. No test is excluded on any other ground. In particular a
rewritten model that fails while its original passes is always a failure, whatever the evaluator.

Exclusions seen with onnx 1.22.0 / onnxruntime 1.31.1 (all decided by the rule above, none hard-coded):
 - node/: 47 tests whose original model onnxruntime 1.31.1 cannot load: no kernel (RandomUniformLike-22,
   BitShift on uint16, Max/Min on int16/uint16, Pow float32^uint32/uint64), an opset still under development
   (the *_expanded causal_conv_with_state, linear_attention and range tests), or the ai.onnx.preview
   FlexAttention op. Each one's error is listed under "original fails in onnxruntime" in the report.
 - pytorch-converted/test_PReLU_{1d,2d,3d}_multiparam, cross-check only: onnx.version_converter lifts the opset 6
   PRelu (per-channel 1-D slope [C]) to opset 13 without reshaping the slope to [C, 1, ...], so onnxruntime
   fails on the converted ORIGINAL ("Attempting to broadcast an axis by a dimension other than 1. 3 by 4").
   ReferenceEvaluator runs the same originals at opset 6 correctly, and the primary figure covers them.

Writes a JSON report (figures, failures per point, per-test details, a human summary) and prints the summary.
Exit status: 0 when the report was written (whatever it says), 2 on a setup error.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

import numpy as np
import onnx
import onnxruntime as ort

from harness.conformance import (CONVERT_TO_OPSET, STRIP_PREFIXES, Tool, broadcast_ops, degenerate, error_text,
                                 expand_failure, fresh_inputs, judge_strict, left_text, legacy_axis_mismatches,
                                 load_data_sets, model_nodes, onnx_opset, reference_outputs, run_checker,
                                 run_converted_ort, run_ort, run_reference, short)

PYTORCH_FOLDERS = ("pytorch-converted", "pytorch-operator")


def tally(outcome, name: str, fig: dict, passed: str, failures: list):
    """An evaluator's outcome (None: it passed) counted in fig[passed], or listed with its reason in failures;
    returns the outcome."""
    if outcome is None:
        fig[passed] += 1
    else:
        failures.append({"test": name, "reason": outcome})
    return outcome


# ----------------------------------------------------------------------------------------------- the suite


def node_suite(tool: Tool, data: str, work: str, report: dict) -> None:
    tests = []
    for model_path in sorted(glob.glob(os.path.join(data, "node", "*", "model.onnx"))):
        model = onnx.load(model_path)
        ops = broadcast_ops(model)
        if ops:
            tests.append((os.path.basename(os.path.dirname(model_path)), model_path, model, ops))

    fig = {
        "node_tests_total": len(glob.glob(os.path.join(data, "node", "*", "model.onnx"))),
        "tests_with_broadcast_op": len(tests),
        "original_passes_ort": 0,
        "original_fails_ort": 0,
        "expand_exit": {"0": 0, "1": 0, "2": 0, "other": 0},
        "models_made_explicit": 0,
        "sites_made_explicit": 0,
        "rewritten_passes_ort": 0,
        "checker_ok": 0,
        "original_fails_checker": 0,
        "strict_checked": 0,
        "strict_ok": 0,
        "strict_inherited": 0,
        "idempotence_checked": 0,
        "idempotent": 0,
        "materialize_expand_exit": {"0": 0, "1": 0, "2": 0, "other": 0},
        "materialize_models_with_materialized": 0,
        "materialize_constants_materialized": 0,
        "materialize_checked_ort": 0,
        "materialize_passes_ort": 0,
        "materialize_checker_ok": 0,
    }
    fail = {k: [] for k in ("ort", "checker", "strict", "idempotence", "materialize", "materialize_checker")}
    info = {"original_fails_ort": [], "original_fails_checker": [], "expand_left_sites": [], "ops": {}}
    details = []

    for name, model_path, model, ops in tests:
        details.append(node_test(tool, work, name, model_path, model, ops, fig, fail, info))

    # -- 6. --materialize-constants
    for name, model_path, model, ops in tests:
        node_materialize(tool, work, name, model_path, model, next(x for x in details if x["test"] == name), fig,
                         fail)
    report["node"] = {"figures": fig, "failures": fail, "info": info, "details": details}


def node_test(tool: Tool, work: str, name: str, model_path: str, model, ops: list, fig: dict, fail: dict,
              info: dict) -> dict:
    """Points 1 to 4 on one node test: the test's details."""
    tdir = os.path.join(work, "node", name)
    os.makedirs(tdir, exist_ok=True)
    out1, out2, outm = (os.path.join(tdir, f) for f in ("expanded.onnx", "expanded_again.onnx", "materialized.onnx"))
    for op in ops:
        info["ops"][op] = info["ops"].get(op, 0) + 1
    d = {"test": name, "ops": ops, "opset": onnx_opset(model)}

    try:
        data_sets = load_data_sets(model, os.path.dirname(model_path))
        orig = run_ort(model_path, data_sets)
    except Exception as e:  # noqa: BLE001
        data_sets, orig = None, "cannot load the test data: " + error_text(e)
    d["original_ort"] = orig or "pass"
    if orig is None:
        fig["original_passes_ort"] += 1
    else:
        fig["original_fails_ort"] += 1
        info["original_fails_ort"].append({"test": name, "reason": orig})

    # -- expand
    res = tool.expand(model_path, out1)
    d["expand_exit"] = res["exit"]
    fig["expand_exit"][str(res["exit"]) if res["exit"] in (0, 1, 2) else "other"] += 1
    s = res["summary"] or {}
    d["made_explicit"] = s.get("made_explicit")
    if s.get("made_explicit"):
        fig["models_made_explicit"] += 1
        fig["sites_made_explicit"] += s["made_explicit"]
    if res["exit"] == 1:
        info["expand_left_sites"].append({"test": name, "left": left_text(s)})
    if not res["written"]:
        reason = expand_failure(res)
        fail["checker"].append({"test": name, "reason": reason})
        if orig is None:
            fail["ort"].append({"test": name, "reason": reason})
        d["rewritten"] = reason
        return d

    # -- 1. the rewritten model runs like the original
    if orig is None:
        r = tally(run_ort(out1, data_sets), name, fig, "rewritten_passes_ort", fail["ort"])
        d["rewritten_ort"] = r or "pass"

    # -- 2. the checker accepts it
    c = run_checker(out1)
    d["checker"] = c or "ok"
    if c is None:
        fig["checker_ok"] += 1
    else:
        co = run_checker(model_path)
        if co is not None:
            fig["original_fails_checker"] += 1
            info["original_fails_checker"].append({"test": name, "reason": co})
        fail["checker"].append({"test": name, "reason": c, "original_passes_checker": co is None})

    # -- 3. strict check passes when expand claimed success
    if res["exit"] == 0:
        fig["strict_checked"] += 1
        d["strict_exit"] = judge_strict(tool, name, out1, model_path, fig, fail)["exit"]

    # -- 4. idempotence
    fig["idempotence_checked"] += 1
    res2 = tool.expand(out1, out2)
    same = res2["written"] and open(out1, "rb").read() == open(out2, "rb").read()
    d["idempotent"] = same
    if same:
        fig["idempotent"] += 1
    else:
        s2 = res2["summary"] or {}
        why = (expand_failure(res2) if not res2["written"] else
               f"second expand changed the model (exit {res2['exit']}, made_explicit {s2.get('made_explicit')}, "
               f"nodes_added {s2.get('nodes_added')}, sizes {os.path.getsize(out1)} -> {os.path.getsize(out2)}; "
               f"actions {short(json.dumps(s2.get('actions', [])), 300)})")
        fail["idempotence"].append({"test": name, "reason": why})
    return d


def node_materialize(tool: Tool, work: str, name: str, model_path: str, model, d: dict, fig: dict,
                     fail: dict) -> None:
    """Point 6 on one node test (`d`: its details)."""
    tdir = os.path.join(work, "node", name)
    outm = os.path.join(tdir, "materialized.onnx")
    res = tool.expand(model_path, outm, materialize=True)
    fig["materialize_expand_exit"][str(res["exit"]) if res["exit"] in (0, 1, 2) else "other"] += 1
    s = res["summary"] or {}
    if s.get("materialized"):
        fig["materialize_models_with_materialized"] += 1
        fig["materialize_constants_materialized"] += s["materialized"]
    d["materialize_exit"] = res["exit"]
    d["materialized"] = s.get("materialized")
    if not res["written"]:
        fail["materialize"].append({"test": name, "reason": expand_failure(res)})
        return
    c = run_checker(outm)
    if c is None:
        fig["materialize_checker_ok"] += 1
    elif d.get("checker") == "ok":  # the plain rewrite passed the checker: this one is the option's doing
        fail["materialize_checker"].append({"test": name, "reason": c})
    if d["original_ort"] != "pass":
        return
    fig["materialize_checked_ort"] += 1
    data_sets = load_data_sets(model, os.path.dirname(model_path))
    r = run_ort(outm, data_sets)
    if r is None:
        fig["materialize_passes_ort"] += 1
    else:
        fail["materialize"].append({"test": name, "reason": r, "materialized": s.get("materialized")})


def pytorch_suite(tool: Tool, data: str, work: str, report: dict) -> None:
    fig = {
        "models": 0,
        "models_with_broadcast_op": 0,
        "models_with_sites": 0,
        "models_with_implicit_broadcast": 0,
        "models_made_explicit": 0,
        "models_with_legacy_broadcast_attr": 0,
        "legacy_broadcast_attr_dropped": 0,
        "expand_exit": {"0": 0, "1": 0, "2": 0, "other": 0},
        "strict_ok": 0,
        "strict_inherited": 0,
        "idempotent": 0,
        "checker_ok": 0,
        # primary: onnx.reference.ReferenceEvaluator
        "reference_original_passes": 0,
        "reference_rewritten_checked": 0,
        "reference_rewritten_passes": 0,
        "reference_made_explicit_and_passes": 0,
        # the stored data of many of these tests cannot tell a wrong rewrite from a right one (see degenerate_data)
        "degenerate_data": 0,
        "legacy_nodes_axis_as_numpy": 0,
        "reference_differential_checked": 0,
        "reference_differential_agree": 0,
        # cross-check: version_converter -> opset 13 -> onnxruntime
        "converted_ort_original_passes": 0,
        "converted_ort_rewritten_checked": 0,
        "converted_ort_rewritten_passes": 0,
        "opsets": {},
    }
    fail = {k: [] for k in ("expand", "reference", "reference_differential", "converted_ort", "strict", "idempotence",
                            "checker")}
    info = {"reference_original_fails": [], "converted_ort_original_fails": [], "expand_left_sites": [],
            "degenerate_data": [], "reference_differential_original_fails": [], "reference_axis_exclusions": []}
    details = []
    for folder in PYTORCH_FOLDERS:
        for model_path in sorted(glob.glob(os.path.join(data, folder, "*", "model.onnx"))):
            details.append(pytorch_test(tool, work, folder, model_path, fig, fail, info))
    report["pytorch"] = {"figures": fig, "failures": fail, "info": info, "details": details}


def pytorch_test(tool: Tool, work: str, folder: str, model_path: str, fig: dict, fail: dict, info: dict) -> dict:
    """Point 5 on one pytorch-converted or pytorch-operator test: the test's details."""
    name = f"{folder}/{os.path.basename(os.path.dirname(model_path))}"
    model = onnx.load(model_path)
    fig["models"] += 1
    opset = onnx_opset(model)
    fig["opsets"][str(opset)] = fig["opsets"].get(str(opset), 0) + 1
    ops = broadcast_ops(model)
    legacy = sum(1 for n in model_nodes(model) if any(a.name == "broadcast" for a in n.attribute))
    d = {"test": name, "opset": opset, "ops": ops, "legacy_broadcast_nodes": legacy}
    if ops:
        fig["models_with_broadcast_op"] += 1
    if legacy:
        fig["models_with_legacy_broadcast_attr"] += 1
    tdir = os.path.join(work, folder, os.path.basename(os.path.dirname(model_path)))
    os.makedirs(tdir, exist_ok=True)
    out1, out2 = os.path.join(tdir, "expanded.onnx"), os.path.join(tdir, "expanded_again.onnx")
    res = tool.expand(model_path, out1)
    fig["expand_exit"][str(res["exit"]) if res["exit"] in (0, 1, 2) else "other"] += 1
    s = res["summary"] or {}
    d.update(expand_exit=res["exit"], sites=s.get("sites"), made_explicit=s.get("made_explicit"))
    if s.get("sites"):
        fig["models_with_sites"] += 1
    if res["exit"] == 1:
        info["expand_left_sites"].append({"test": name, "left": left_text(s)})
        fail["expand"].append({"test": name, "reason": "sites left implicit: " + "; ".join(left_text(s))})
    if s.get("made_explicit"):
        fig["models_made_explicit"] += 1
    data_sets = load_data_sets(model, os.path.dirname(model_path))
    if degenerate(data_sets):
        fig["degenerate_data"] += 1
        info["degenerate_data"].append(name)

    ref_orig, conv_orig, axis_bad = pytorch_original(name, model, data_sets, legacy, d, fig, info)

    if not res["written"]:
        fail["expand"].append({"test": name, "reason": expand_failure(res)})
        return d
    rewritten = onnx.load(out1)
    # Did the rewrite make an implicit broadcast explicit (vs. sites that were already the same shape)?
    if s.get("made_explicit"):
        fig["models_with_implicit_broadcast"] += 1
    if legacy and not any(any(a.name == "broadcast" for a in n.attribute) for n in model_nodes(rewritten)):
        fig["legacy_broadcast_attr_dropped"] += 1

    if ref_orig is None:
        fig["reference_rewritten_checked"] += 1
        r = run_reference(rewritten, data_sets)
        d["reference_rewritten"] = r or "pass"
        if r is None:
            fig["reference_rewritten_passes"] += 1
            if s.get("made_explicit"):
                fig["reference_made_explicit_and_passes"] += 1
        else:
            fail["reference"].append({"test": name, "reason": r})
    # Differential: fresh well-conditioned inputs, rewritten vs. original, both in ReferenceEvaluator.
    if s.get("made_explicit") and not axis_bad:
        fresh = fresh_inputs(name, data_sets)
        try:
            want = reference_outputs(model, fresh)
        except Exception as e:  # noqa: BLE001
            info["reference_differential_original_fails"].append({"test": name, "reason": error_text(e)})
        else:
            fig["reference_differential_checked"] += 1
            tally(run_reference(rewritten, [("fresh random inputs", fresh, want)]), name, fig,
                  "reference_differential_agree", fail["reference_differential"])
    if conv_orig is None:
        fig["converted_ort_rewritten_checked"] += 1
        r = tally(run_converted_ort(rewritten, data_sets), name, fig, "converted_ort_rewritten_passes",
                  fail["converted_ort"])
        d["converted_ort_rewritten"] = r or "pass"

    pytorch_rewrite_checks(tool, name, model_path, out1, out2, res["exit"], fig, fail)
    return d


def pytorch_original(name: str, model, data_sets, legacy: int, d: dict, fig: dict, info: dict):
    """The original model in ReferenceEvaluator (unless a legacy axis makes it unfaithful) and after
    version_converter in onnxruntime: (reference outcome, converted outcome, legacy axis mismatches)."""
    ref_orig = run_reference(model, data_sets)
    axis_bad = legacy_axis_mismatches(model)
    if axis_bad:
        # Evaluator exclusion: ReferenceEvaluator would compute the original with numpy alignment.
        ref_orig = "ReferenceEvaluator ignores the legacy axis of: " + "; ".join(axis_bad)
        info["reference_axis_exclusions"].append({"test": name, "reason": ref_orig})
    elif legacy:
        fig["legacy_nodes_axis_as_numpy"] += 1
    conv_orig = run_converted_ort(model, data_sets)
    d["reference_original"] = ref_orig or "pass"
    d["converted_ort_original"] = conv_orig or "pass"
    tally(ref_orig, name, fig, "reference_original_passes", info["reference_original_fails"])
    tally(conv_orig, name, fig, "converted_ort_original_passes", info["converted_ort_original_fails"])
    return ref_orig, conv_orig, axis_bad


def pytorch_rewrite_checks(tool: Tool, name: str, model_path: str, out1: str, out2: str, exit_code: int, fig: dict,
                           fail: dict) -> None:
    """The checker, check --strict (when expand exited 0) and a second expand on a rewritten pytorch test."""
    c = run_checker(out1)
    if c is None:
        fig["checker_ok"] += 1
    elif run_checker(model_path) is None:
        fail["checker"].append({"test": name, "reason": c})
    if exit_code == 0:
        judge_strict(tool, name, out1, model_path, fig, fail)
    res2 = tool.expand(out1, out2)
    if res2["written"] and open(out1, "rb").read() == open(out2, "rb").read():
        fig["idempotent"] += 1
    else:
        fail["idempotence"].append({"test": name, "reason": f"second expand exit {res2['exit']}, output differs"})



# ------------------------------------------------------------------------------------------------- summary


def summarize(report: dict) -> str:
    n, nf, nx = report["node"]["figures"], report["node"]["failures"], report["node"]["info"]
    p, pf, px = report["pytorch"]["figures"], report["pytorch"]["failures"], report["pytorch"]["info"]
    L = []
    L.append(f"onnx-bcast expand conformance (onnx {onnx.__version__}, onnxruntime {ort.__version__}, "
             f"numpy {np.__version__}; {report['elapsed_seconds']:.0f}s)")
    L.append("")
    L.append(f"node/: {n['node_tests_total']} tests, {n['tests_with_broadcast_op']} with a broadcasting op")
    L.append(f"  expand exit codes: {n['expand_exit']}; {n['models_made_explicit']} models had sites made explicit "
             f"({n['sites_made_explicit']} sites)")
    L.append(f"  [1] onnxruntime: original passes {n['original_passes_ort']} / {n['tests_with_broadcast_op']} "
             f"(fails {n['original_fails_ort']}); rewritten passes {n['rewritten_passes_ort']} / "
             f"{n['original_passes_ort']}; failures {len(nf['ort'])}")
    L.append(f"  [2] checker (full_check): {n['checker_ok']} / {n['tests_with_broadcast_op']} rewritten models "
             f"accepted; failures {len(nf['checker'])} (of which the original also fails: {n['original_fails_checker']})")
    L.append(f"  [3] check --strict: {n['strict_ok']} / {n['strict_checked']} rewritten models (expand exit 0), "
             f"{n['strict_inherited']} more fail only with the original's own conditional or undecided sites or opaque nodes; "
             f"exit 0; failures {len(nf['strict'])}")
    L.append(f"  [4] idempotence: {n['idempotent']} / {n['idempotence_checked']} byte-identical; failures "
             f"{len(nf['idempotence'])}")
    L.append(f"  [6] --materialize-constants: expand exit codes {n['materialize_expand_exit']}; "
             f"{n['materialize_models_with_materialized']} models with {n['materialize_constants_materialized']} "
             f"constants materialized; onnxruntime passes {n['materialize_passes_ort']} / "
             f"{n['materialize_checked_ort']}; failures {len(nf['materialize'])}; checker accepts "
             f"{n['materialize_checker_ok']} (failures where the plain rewrite passed: {len(nf['materialize_checker'])})")
    L.append("")
    L.append(f"pytorch-converted + pytorch-operator: {p['models']} models (ONNX opsets {p['opsets']}), "
             f"{p['models_with_broadcast_op']} with a broadcasting op, {p['models_with_sites']} with broadcasting "
             f"sites per expand, {p['models_with_legacy_broadcast_attr']} with legacy broadcast=1")
    L.append(f"  [5] expand exit codes {p['expand_exit']}; made explicit in {p['models_made_explicit']} models; legacy "
             f"broadcast attribute dropped in {p['legacy_broadcast_attr_dropped']} / "
             f"{p['models_with_legacy_broadcast_attr']}")
    L.append(f"  [5] ReferenceEvaluator (primary, runs opset 6 natively): original passes "
             f"{p['reference_original_passes']} / {p['models']}; rewritten passes {p['reference_rewritten_passes']} / "
             f"{p['reference_rewritten_checked']} (of the models made explicit: {p['reference_made_explicit_and_passes']} "
             f"/ {p['models_made_explicit']}); failures {len(pf['reference'])}")
    L.append(f"  [5] legacy broadcast=1 models ReferenceEvaluator (which ignores axis) computes faithfully "
             f"(no axis, or axis = rank(A) - rank(B)): {p['legacy_nodes_axis_as_numpy']} / {p['models_with_legacy_broadcast_attr']}"
             f"; excluded: {len(px['reference_axis_exclusions'])}")
    L.append(f"  [5] differential, ReferenceEvaluator on fresh random inputs (the stored data of "
             f"{p['degenerate_data']} / {p['models']} models is uninitialized memory, too weak to catch a wrong "
             f"broadcast): rewritten agrees with original {p['reference_differential_agree']} / "
             f"{p['reference_differential_checked']} models made explicit; failures {len(pf['reference_differential'])}")
    L.append(f"  [5] cross-check version_converter->opset {CONVERT_TO_OPSET}->onnxruntime: original passes "
             f"{p['converted_ort_original_passes']} / {p['models']}; rewritten passes "
             f"{p['converted_ort_rewritten_passes']} / {p['converted_ort_rewritten_checked']}; failures "
             f"{len(pf['converted_ort'])}")
    L.append(f"  [5] also: check --strict exit 0 on {p['strict_ok']}, idempotent {p['idempotent']}, checker accepts "
             f"{p['checker_ok']} (failures: strict {len(pf['strict'])}, idempotence {len(pf['idempotence'])}, "
             f"checker {len(pf['checker'])}, expand {len(pf['expand'])})")

    def listing(title, items):
        if not items:
            return
        L.append("")
        L.append(f"{title} ({len(items)}):")
        for it in items:
            extra = ""
            if it.get("sites"):
                extra = " | " + " | ".join(it["sites"][:4])
            if "left" in it:
                extra = " | " + " | ".join(it["left"])
            L.append(f"  {it['test']}: {it.get('reason', '')}{extra}")

    listing("FAIL [1] rewritten model differs in onnxruntime", nf["ort"])
    listing("FAIL [2] checker rejects the rewritten model", nf["checker"])
    listing("FAIL [3] check --strict fails on the rewritten model", nf["strict"])
    listing("FAIL [4] not idempotent", nf["idempotence"])
    listing("FAIL [6] --materialize-constants output differs", nf["materialize"])
    listing("FAIL [6] checker rejects the --materialize-constants model", nf["materialize_checker"])
    listing("FAIL [5] ReferenceEvaluator: rewritten differs", pf["reference"])
    listing("FAIL [5] ReferenceEvaluator on fresh inputs: rewritten differs from original", pf["reference_differential"])
    listing("FAIL [5] version_converter+onnxruntime: rewritten differs", pf["converted_ort"])
    listing("FAIL [5] expand left sites / failed", pf["expand"])
    listing("FAIL [5] check --strict", pf["strict"])
    listing("FAIL [5] idempotence", pf["idempotence"])
    listing("FAIL [5] checker", pf["checker"])
    listing("node/: expand left sites (exit 1)", nx["expand_left_sites"])
    listing("node/: original fails in onnxruntime (not counted against the rewrite)", nx["original_fails_ort"])
    listing("pytorch: original fails in ReferenceEvaluator (evaluator exclusion)", px["reference_original_fails"])
    listing("pytorch: ReferenceEvaluator cannot judge (legacy axis differs from numpy alignment)",
            px["reference_axis_exclusions"])
    listing("pytorch: original fails in ReferenceEvaluator on fresh inputs (evaluator exclusion)",
            px["reference_differential_original_fails"])
    listing("pytorch: original fails after version_converter+onnxruntime (evaluator exclusion)",
            px["converted_ort_original_fails"])
    return "\n".join(L) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("data_dir")
    ap.add_argument("--report", required=True, help="where to write the JSON report")
    ap.add_argument("--workdir", help="where rewritten models go (wiped first; default: a temporary directory)")
    args = ap.parse_args()
    if not os.access(args.binary, os.X_OK):
        print(f"expand_conformance.py: {args.binary} is not an executable", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(args.data_dir, "node")):
        print(f"expand_conformance.py: {args.data_dir} is not the backend test data", file=sys.stderr)
        return 2
    STRIP_PREFIXES.append((os.path.abspath(args.data_dir), "<data>"))
    tmp = None
    if args.workdir:
        work = args.workdir
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="expand-conformance-")
        work = tmp.name
    STRIP_PREFIXES.append((os.path.abspath(work), "<work>"))
    start = time.time()
    tool = Tool(os.path.abspath(args.binary))
    report = {"binary": args.binary, "data_dir": args.data_dir, "workdir": work,
              "versions": {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__}}
    try:
        node_suite(tool, args.data_dir, work, report)
        pytorch_suite(tool, args.data_dir, work, report)
    except Exception:  # noqa: BLE001
        print("expand_conformance.py: the suite itself crashed:\n" + traceback.format_exc(), file=sys.stderr)
        return 2
    report["elapsed_seconds"] = time.time() - start
    report["summary_text"] = summarize(report)
    with open(args.report, "w") as f:
        json.dump(report, f, indent=1)
    sys.stdout.write(report["summary_text"])
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
