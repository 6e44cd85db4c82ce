"""ONNX's own shape-inference unit tests as conformance tests for `onnx-bcast shapes` (tests/it/onnx_shape_tests.rs).

    onnx_shape_tests.py BIN TESTS_DIR OUT_JSON --workdir DIR [--figures FILE]

TESTS_DIR is what scripts/onnx_tests.sh prints (the onnx sdist's shape_inference_test.py, data_propagation_test.py
and symbolic_shape_test.py, and a venv with that onnx); run this script with that venv's Python. It

1. runs the tests with pytest and scripts/onnx_shape_capture.py, which records each model a test infers with what
   the test expects inference to produce (`expect`, `symbolic`) or that inference must reject it (`fails`);
2. writes each model twice: as the test builds it, and with its initializers read as constants (the tests list every
   initializer as a graph input too, which from IR 4 makes it a default the caller may override);
3. runs `BIN shapes --format json` on both sets and judges every expected value: *precise* (element type, rank and
   every size as the test expects), *imprecise* (something left unknown, or a symbol where the test has a size),
   or *wrong* (a different element type, rank or size, or a value of another kind); a model `shapes` cannot analyse
   is a *crash* (a panic or signal) or *refused* (exit 2 with an error);
4. runs `BIN check --format json` on each model inference must reject, and records whether `check` has a finding;
   each such test is classified by why it expects a rejection (scripts/onnx_reject_classes.py), and the report
   gives the figures per class, every in-scope model without a finding, and tests the table does not know.

The JSON report holds the figures per set, every wrong value, crash and refusal, what is left imprecise by the op
that produces it, the expectations set aside (SET_ASIDE below: unsound ones, and those only a schema the test
registers could meet; they stay imprecise, are listed apart and leave the precise share's denominator), and the
rejected models with check's answer. --figures writes a Markdown summary.
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
from onnx_reject_classes import CLASSES, IN_SCOPE, OTHER_CODE_ONLY, SHAPE_CODES, Reason, classify, function_name

BATCH = 200

# Expectations set aside: they stay imprecise, are listed apart, and leave the precise share's denominator.
# (test id prefix, value name) -> why.
SET_ASIDE: dict[tuple[str, str], str] = {
    # Unsound: `axes` (`steps`) is an input whose contents nothing in the model gives (the output of a Reshape of
    # unknown data); the test takes it for the default, all axes (steps of 1). A runtime reads whatever it holds.
    ("shape_inference_test.py::TestShapeInference::test_slice_with_input_shape_steps", "y"): "unsound: unknown axes",
    ("shape_inference_test.py::TestShapeInference::test_slice_with_input_shape_axes", "y"): "unsound: unknown steps",
    # Unsound: STFT-17's `onesided` defaults to 1 (the schema; onnxruntime gives [2, 3, 3, 2]); onnx's inference
    # function reads 0 when the attribute is absent and the test expects its 5 bins.
    ("shape_inference_test.py::TestShapeInference::test_stft_reals", "output"): "unsound: onesided defaults to 1",
    # Unsound for the runtime: a size past 2**24 scaled in double precision. onnxruntime multiplies in single
    # precision (Resize of [1, 1, 1, 16777217] by 1.0 gives 16777216 there), so no size is claimed.
    ("shape_inference_test.py::TestShapeInference::test_resize_scale_precision_large_dim", "y"):
        "unsound: onnxruntime scales in single precision",
    ("shape_inference_test.py::TestShapeInference::test_resize_keep_aspect_ratio_precision_", "y"):
        "unsound: onnxruntime scales in single precision",
    # Not an op of any standard domain: the test registers the schema and its inference function at run time.
    ("shape_inference_test.py::TestCustomSchemaShapeInference::", "out0"): "custom schema registered by the test",
    ("shape_inference_test.py::TestCustomSchemaShapeInference::", "out1"): "custom schema registered by the test",
}


def capture(tests: Path, workdir: Path) -> list[dict]:
    out = workdir / "captured.jsonl"
    env = dict(os.environ, ONNX_SHAPE_CAPTURE_OUT=str(out), PYTHONPATH=str(Path(__file__).resolve().parent))
    files = ["shape_inference_test.py", "data_propagation_test.py", "symbolic_shape_test.py"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tests)]
        + ["-p", "onnx_shape_capture", *files],
        cwd=tests,
        env=env,
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        sys.exit(f"the onnx tests did not pass under the capture plugin ({run.returncode}):\n{run.stdout[-4000:]}")
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    print(f"captured {len(records)} cases from the onnx tests ({summary})")
    return records


def with_constant_initializers(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with every initializer left out of the graph inputs: a constant, not a default."""
    names = {t.name for t in model.graph.initializer}
    if not names.intersection(i.name for i in model.graph.input):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    kept = [i for i in copy.graph.input if i.name not in names]
    del copy.graph.input[:]
    copy.graph.input.extend(kept)
    return copy


def run_tool(binary: str, command: str, paths: list[Path]) -> dict[str, dict]:
    """`BIN COMMAND --format json` over `paths` in batches: each path's JSON report, or its failure."""
    results: dict[str, dict] = {}
    for start in range(0, len(paths), BATCH):
        batch = [str(p) for p in paths[start : start + BATCH]]
        run = subprocess.run([binary, command, "--format", "json", *batch], capture_output=True, text=True)
        reports = {}
        for line in run.stdout.splitlines():
            if line.strip():
                r = json.loads(line)
                # `check` reports a model it could not analyse as {"model", "error"}: run it alone to say how.
                if "error" not in r:
                    reports[r["model"]] = r
        if run.returncode < 0 or (run.returncode == 2 and len(batch) > 1 and len(reports) < len(batch)):
            # A signal, or some model refused: run those alone to say which and why.
            for p in batch:
                results[p] = {"report": reports[p]} if p in reports else alone(binary, command, p)
            continue
        for p in batch:
            results[p] = {"report": reports[p]} if p in reports else alone(binary, command, p)
    return results


def alone(binary: str, command: str, path: str) -> dict:
    run = subprocess.run([binary, command, "--format", "json", path], capture_output=True, text=True)
    reports = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    if run.returncode < 0 or "internal error" in run.stderr or "panicked" in run.stderr:
        return {"crash": f"exit {run.returncode}: {run.stderr.strip()[-500:]}"}
    if not reports or "error" in reports[0]:
        return {"refused": f"exit {run.returncode}: {run.stderr.strip()[-500:]}"}
    return {"report": reports[0]}


def elem_name(elem: int) -> str:
    return onnx.TensorProto.DataType.Name(elem).lower()


def judge_tensor(expected: onnx.TypeProto.Tensor, ours: dict, symbolic_any: bool) -> tuple[str, str]:
    """`precise`, `imprecise` or `wrong`, and why, for one tensor type (or a container's element type)."""
    got_elem = ours.get("elem_type")
    want_elem = elem_name(expected.elem_type) if expected.elem_type else None
    verdict, why = "precise", []
    if want_elem is not None:
        if got_elem is None:
            verdict, why = "imprecise", ["element type unknown"]
        elif got_elem != want_elem:
            return "wrong", f"element type {got_elem}, expected {want_elem}"
    if not expected.HasField("shape"):
        return verdict, "; ".join(why)
    want = expected.shape.dim
    got = ours.get("shape")
    if got is None:
        return "imprecise", "; ".join([*why, "rank unknown"])
    if len(got) != len(want):
        return "wrong", f"rank {len(got)} {got}, expected rank {len(want)}"
    for axis, (g, w) in enumerate(zip(got, want)):
        if w.HasField("dim_value") and not (symbolic_any and w.dim_value == -1):
            if isinstance(g, int):
                if g != w.dim_value:
                    return "wrong", f"size {g} on axis {axis}, expected {w.dim_value} ({got})"
            else:
                verdict = "imprecise"
                why.append(f"axis {axis} is {g}, expected {w.dim_value}")
        elif w.dim_param.startswith("unk__"):
            # A symbol onnx's inference made up for a size it does not know: no expectation.
            continue
        elif w.HasField("dim_param") or symbolic_any:
            # A symbol the test expects: that very name (or, in symbolic_shape_test, any symbol).
            if isinstance(g, int):
                return "wrong", f"size {g} on axis {axis}, expected the symbol {w.dim_param or '(any)'} ({got})"
            if g is None or (w.dim_param and g != w.dim_param):
                verdict = "imprecise"
                why.append(f"axis {axis} is {g}, expected {w.dim_param or 'a symbol'}")
    return verdict, "; ".join(why)


def judge(expected: onnx.TypeProto, ours: dict | None, symbolic_any: bool) -> tuple[str, str]:
    if ours is None:
        return "imprecise", "not reported"
    kind = ours.get("kind", "tensor")
    knows = ours.get("elem_type") is not None or ours.get("shape") is not None
    which = expected.WhichOneof("value")
    want_kind = {
        "tensor_type": "tensor",
        "sparse_tensor_type": "sparse_tensor",
        "sequence_type": "sequence",
        "optional_type": "optional",
        "map_type": "map",
    }.get(which)
    inner = expected
    if which == "sequence_type":
        inner = expected.sequence_type.elem_type
        if inner.WhichOneof("value") == "map_type":
            want_kind = "sequence_map"
    elif which == "optional_type":
        inner = expected.optional_type.elem_type
        if inner.WhichOneof("value") == "sequence_type":
            want_kind, inner = "optional_sequence", inner.sequence_type.elem_type
    if want_kind is None:
        return "precise", "the test expects no type"
    if want_kind in ("map", "sequence_map"):
        m = inner.map_type
        if kind != want_kind:
            return ("wrong", f"a {kind}, expected a {want_kind}") if knows else ("imprecise", "kind unknown")
        if ours.get("key_type") not in (None, elem_name(m.key_type)):
            return "wrong", f"key type {ours.get('key_type')}, expected {elem_name(m.key_type)}"
        inner = m.value_type
    elif kind != want_kind:
        # A tensor is what a sparse tensor's facts describe too.
        if not (want_kind == "sparse_tensor" and kind == "tensor"):
            return ("wrong", f"a {kind}, expected a {want_kind}") if knows else ("imprecise", "nothing known")
    which = inner.WhichOneof("value")
    if which == "tensor_type":
        return judge_tensor(inner.tensor_type, ours, symbolic_any)
    if which == "sparse_tensor_type":
        return judge_tensor(inner.sparse_tensor_type, ours, symbolic_any)
    return "precise", "no element type expected"


def producers(model: onnx.ModelProto) -> dict[str, str]:
    out = {}
    for node in model.graph.node:
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        for o in node.output:
            out[o] = op
    return out


def set_aside(test: str, name: str) -> str | None:
    for (prefix, value), why in SET_ASIDE.items():
        if test.startswith(prefix) and value == name:
            return why
    return None


def evaluate(binary: str, cases: list[dict], paths: list[Path]) -> dict:
    results = run_tool(binary, "shapes", paths)
    tally = collections.Counter()
    wrong, imprecise_by_op, crashes, refused, aside = [], collections.defaultdict(list), [], [], []
    for case, path in zip(cases, paths):
        r = results[str(path)]
        n = len(case["expected"])
        tally["models"] += 1
        tally["values"] += n
        if "crash" in r or "refused" in r:
            (crashes if "crash" in r else refused).append({"test": case["test"], "error": r.get("crash", r.get("refused"))})
            tally["crash" if "crash" in r else "refused"] += 1
            tally["imprecise"] += n
            continue
        graphs = r["report"].get("graphs", [])
        main = next((g for g in graphs if g["graph"] == "main"), {"values": []})
        ours = {v["name"]: v for v in main["values"]}
        model = case["proto"]
        made_by = producers(model)
        for vi in case["expected_vi"]:
            verdict, why = judge(vi.type, ours.get(vi.name), case["kind"] == "symbolic")
            entry = {"test": case["test"], "value": vi.name, "op": made_by.get(vi.name, "?"), "why": why}
            # An expectation set aside is judged apart, unless it is met anyway.
            reason = set_aside(case["test"], vi.name) if verdict != "precise" else None
            tally["set_aside" if reason else verdict] += 1
            if reason:
                aside.append({**entry, "set_aside": reason, "ours": ours.get(vi.name)})
            elif verdict == "wrong":
                wrong.append({**entry, "ours": ours.get(vi.name)})
            elif verdict == "imprecise":
                imprecise_by_op[entry["op"]].append(entry)
    judged = tally["values"] - tally["set_aside"]
    share = tally["precise"] / judged if judged else 0.0
    return {
        "models": tally["models"],
        "values": tally["values"],
        "precise": tally["precise"],
        "imprecise": tally["imprecise"],
        "wrong": tally["wrong"],
        "crashes": tally["crash"],
        "refused": tally["refused"],
        "set_aside": tally["set_aside"],
        "precise_share": round(share, 4),
        "wrong_values": wrong,
        "crash_list": crashes,
        "refused_list": refused,
        "set_aside_list": aside,
        "imprecise_by_op": {
            op: entries for op, entries in sorted(imprecise_by_op.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        },
    }


def rejected(binary: str, cases: list[dict], paths: list[Path]) -> dict:
    results = run_tool(binary, "check", paths)
    listed, found, refused, crashes = [], 0, 0, []
    for case, path in zip(cases, paths):
        r = results[str(path)]
        if "crash" in r:
            crashes.append({"test": case["test"], "error": r["crash"]})
        report = r.get("report") or {}
        findings = [f for f in report.get("findings", []) if f.get("severity") in ("error", "warning")]
        codes = sorted({f.get("code", "?") for f in findings})
        finding = bool(findings)
        found += finding
        refused += "refused" in r
        reason = classify(case["test"])
        entry = {
            "test": case["test"],
            "reason": reason.value if reason else None,
            "error": case["error"][:300],
            "codes": codes,
            "finding": finding,
        }
        if "refused" in r:
            entry["refused"] = r["refused"]
        listed.append(entry)
    return {
        "models": len(cases),
        "with_finding": found,
        "refused": refused,
        "crash_list": crashes,
        "list": listed,
        **by_reason(listed),
    }


def by_reason(listed: list[dict]) -> dict:
    """The rejected models per class: counts, codes, the in-scope ones without a finding of a shape code (or the
    other code OTHER_CODE_ONLY names for them), and what the table lacks."""
    classes = {r.value: {"models": 0, "with_finding": 0, "in_scope": r in IN_SCOPE, "codes": {}} for r in Reason}
    missing, unclassified = [], []
    for e in listed:
        if e["reason"] is None:
            unclassified.append(e["test"])
            continue
        c = classes[e["reason"]]
        c["models"] += 1
        c["with_finding"] += e["finding"]
        for code in e["codes"]:
            c["codes"][code] = c["codes"].get(code, 0) + 1
        allowed = SHAPE_CODES | {OTHER_CODE_ONLY.get(function_name(e["test"]), "")}
        if c["in_scope"] and not allowed.intersection(e["codes"]):
            missing.append({"test": e["test"], "reason": e["reason"], "error": e["error"], "codes": e["codes"]})
    used = {function_name(e["test"]) for e in listed}
    stale = sorted(name for name in {*CLASSES, *OTHER_CODE_ONLY} if name not in used)
    return {"classes": classes, "in_scope_without_finding": missing, "unclassified": unclassified, "stale": stale}


def figures_md(report: dict) -> str:
    lines = ["# ONNX's shape-inference tests (onnx %s sdist)" % report["onnx"], ""]
    lines.append(
        "| set | models | expected values | set aside | precise | imprecise | wrong | crashes | refused | precise share |"
    )
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in ("as_built", "constants"):
        s = report["sets"][name]
        lines.append(
            f"| {name} | {s['models']} | {s['values']} | {s['set_aside']} | {s['precise']} | {s['imprecise']} | {s['wrong']} | "
            f"{s['crashes']} | {s['refused']} | {100 * s['precise_share']:.1f}% |"
        )
    f = report["rejected"]
    lines += [
        "",
        f"Models inference must reject: {f['models']}; `check` has a finding on {f['with_finding']} and refuses "
        f"{f['refused']} (exit 2, the error named).",
        "",
        "| why the test expects a rejection | in scope | models | with a finding | codes |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for reason, c in f["classes"].items():
        codes = ", ".join(f"{code} {n}" for code, n in sorted(c["codes"].items()))
        lines.append(
            f"| {reason} | {'yes' if c['in_scope'] else 'no'} | {c['models']} | {c['with_finding']} | {codes} |"
        )
    lines.append("")
    for e in f["in_scope_without_finding"]:
        lines.append(f"- no finding ({e['reason']}): {e['test']}: {e['error'][:160]}")
    for t in f["unclassified"]:
        lines.append(f"- not classified: {t}")
    for t in f["stale"]:
        lines.append(f"- classified, but no such test rejects a model: {t}")
    lines.append("")
    lines += ["Set aside (initializers as constants):", ""]
    for e in report["sets"]["constants"]["set_aside_list"]:
        lines.append(f"- {e['test']} `{e['value']}`: {e['set_aside']}")
    lines += ["", "Imprecise values by the op that makes them (initializers as constants):", ""]
    for op, entries in report["sets"]["constants"]["imprecise_by_op"].items():
        lines.append(f"- {op}: {len(entries)}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("tests", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--figures", type=Path)
    args = ap.parse_args()
    tests = args.tests / "tests" if (args.tests / "tests").is_dir() else args.tests
    args.workdir.mkdir(parents=True, exist_ok=True)
    records = capture(tests, args.workdir)

    expect, fails = [], []
    for r in records:
        r["proto"] = onnx.ModelProto.FromString(base64.b64decode(r["model"]))
        if r["kind"] == "fails":
            fails.append(r)
        else:
            r["expected_vi"] = [onnx.ValueInfoProto.FromString(base64.b64decode(v)) for v in r["expected"]]
            expect.append(r)

    sets = {}
    for name, transform in (("as_built", lambda m: m), ("constants", with_constant_initializers)):
        folder = args.workdir / name
        folder.mkdir(exist_ok=True)
        paths = []
        for i, case in enumerate(expect):
            p = folder / f"{i:04d}.onnx"
            p.write_bytes(transform(case["proto"]).SerializeToString())
            paths.append(p)
        sets[name] = evaluate(args.binary, expect, paths)
    folder = args.workdir / "rejected"
    folder.mkdir(exist_ok=True)
    paths = []
    for i, case in enumerate(fails):
        p = folder / f"{i:04d}.onnx"
        p.write_bytes(case["proto"].SerializeToString())
        paths.append(p)
    report = {"onnx": onnx.__version__, "sets": sets, "rejected": rejected(args.binary, fails, paths)}
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    md = figures_md(report)
    if args.figures:
        args.figures.write_text(md, encoding="utf-8")
    print(md)


if __name__ == "__main__":
    main()
