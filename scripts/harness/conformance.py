"""What scripts/expand_conformance.py runs on each backend test: the test's data sets, the evaluators that judge
a model against them (onnxruntime, onnx's ReferenceEvaluator, version_converter then onnxruntime, the checker), and
onnx-bcast's expand and check --strict with the reading of their JSON."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import warnings
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx.reference import ReferenceEvaluator

from harness.compare import compare_all
from harness.graph import ONNX_DOMAINS
from harness.ort import load_pb, session

BROADCAST_OPS = frozenset(
    """Add Sub Mul Div Pow Mod BitShift And Or Xor Equal Greater Less GreaterOrEqual LessOrEqual
    BitwiseAnd BitwiseOr BitwiseXor Where Max Min Mean Sum Gemm PRelu Expand""".split()
)
CONVERT_TO_OPSET = 13
MAX_REASON = 600

ort.set_default_logger_severity(4)  # errors come back as exceptions; keep stderr quiet

# --------------------------------------------------------------------------------------------------- helpers


STRIP_PREFIXES: list[tuple[str, str]] = []  # the data and work directories, shown as <data> and <work> in messages


def short(text: str, limit: int = MAX_REASON) -> str:
    text = " ".join(str(text).split())
    # onnxruntime prefixes its messages with the C++ source location and function signature: noise here.
    text = re.sub(r"/onnxruntime_src/\S+:\d+ .*?\) ", "", text)
    for prefix, label in STRIP_PREFIXES:
        text = text.replace(prefix, label)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_text(e: BaseException) -> str:
    return short(f"{type(e).__name__}: {e}")


def all_nodes(graph):
    """Nodes of a graph (or a function body) and of every subgraph below it."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.HasField("g"):
                yield from all_nodes(a.g)
            for g in a.graphs:
                yield from all_nodes(g)


def model_nodes(model):
    """Nodes of every graph and of every function body (a FunctionProto's nodes are walked as a graph's)."""
    yield from all_nodes(model.graph)
    for f in model.functions:
        yield from all_nodes(f)


def broadcast_ops(model) -> list[str]:
    return sorted({n.op_type for n in model_nodes(model) if n.op_type in BROADCAST_OPS and n.domain in ONNX_DOMAINS})


def onnx_opset(model) -> int | None:
    for o in model.opset_import:
        if o.domain in ONNX_DOMAINS:
            return o.version
    return None



def load_data_sets(model, model_dir: str):
    """[(name, feeds, expected outputs)] for every test_data_set of a model, in the backend runner's way."""
    sets = []
    for d in sorted(glob.glob(os.path.join(model_dir, "test_data_set*"))):
        n_in = len(glob.glob(os.path.join(d, "input_*.pb")))
        n_out = len(glob.glob(os.path.join(d, "output_*.pb")))
        feeds = {}
        for i in range(n_in):
            gi = model.graph.input[i]
            feeds[gi.name] = load_pb(os.path.join(d, f"input_{i}.pb"), gi.type)
        expected = [load_pb(os.path.join(d, f"output_{i}.pb"), model.graph.output[i].type) for i in range(n_out)]
        sets.append((os.path.basename(d), feeds, expected))
    if not sets:
        raise FileNotFoundError(f"{model_dir}: no test_data_set*")
    return sets




# ----------------------------------------------------------------------------------------------- evaluators


def judge_runs(evaluator: str, run, data_sets) -> str | None:
    """None when `run(feeds)` gives every data set's expected outputs (as onnx's backend runner compares them),
    else the reason."""
    for name, feeds, expected in data_sets:
        try:
            actual = run(feeds)
        except Exception as e:  # noqa: BLE001
            return f"{name}: {evaluator} run failed: " + error_text(e)
        try:
            compare_all(expected, list(actual))
        except AssertionError as e:
            return f"{name}: mismatch: " + error_text(e)
    return None


def run_ort(model_or_path, data_sets) -> str | None:
    """None when every data set matches in onnxruntime, else the reason."""
    try:
        # onnxruntime's default graph optimisation, as its backend test runner has it.
        sess = session(model_or_path, optimize=True, intra=1, inter=1, severity=4)
    except Exception as e:  # noqa: BLE001
        return "onnxruntime cannot load it: " + error_text(e)
    return judge_runs("onnxruntime", lambda feeds: sess.run(None, feeds), data_sets)


def run_reference(model, data_sets) -> str | None:
    """None when every data set matches in onnx.reference.ReferenceEvaluator, else the reason."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = ReferenceEvaluator(model)
    except Exception as e:  # noqa: BLE001
        return "ReferenceEvaluator cannot load it: " + error_text(e)

    def evaluate(feeds):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return ref.run(None, feeds)

    return judge_runs("ReferenceEvaluator", evaluate, data_sets)


def reference_outputs(model, feeds) -> list:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return list(ReferenceEvaluator(model).run(None, feeds))


def legacy_axis_mismatches(model) -> list[str]:
    """Legacy `broadcast=1` nodes whose `axis` puts B somewhere numpy's right alignment would not (or whose ranks
    are unknown): ReferenceEvaluator ignores `axis`, so it cannot compute those nodes faithfully."""
    legacy = [n for n in model.graph.node if any(a.name == "broadcast" and a.i == 1 for a in n.attribute)]
    if not legacy:
        return []
    inferred = onnx.shape_inference.infer_shapes(model)
    ranks = {}
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        if vi.type.tensor_type.HasField("shape"):
            ranks[vi.name] = len(vi.type.tensor_type.shape.dim)
    for t in model.graph.initializer:
        ranks[t.name] = len(t.dims)
    for n in model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    ranks[n.output[0]] = len(a.t.dims)
    bad = []
    for n in legacy:
        axis = next((a.i for a in n.attribute if a.name == "axis"), None)
        if axis is None or n.op_type == "Gemm":
            continue  # suffix alignment (Gemm's C broadcast is unidirectional, numpy-style)
        ra, rb = ranks.get(n.input[0]), ranks.get(n.input[1])
        if ra is None or rb is None or axis != ra - rb:
            bad.append(f"{n.op_type} node {n.name or n.output[0]!r}: axis={axis}, rank(A)={ra}, rank(B)={rb}")
    return bad


def degenerate(data_sets) -> bool:
    """Whether a test's stored float data is uninitialized memory (denormals next to 1e+200s, as in most of
    pytorch-operator/): with rtol=1e-3 such data cannot tell a + b from a - b, nor a right broadcast from a wrong one.
    """
    for _, feeds, _ in data_sets:
        for v in feeds.values():
            if isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.size:
                a = np.abs(v[np.isfinite(v)].astype(np.float64))
                nz = a[a > 0]
                if nz.size and (nz.min() < 1e-30 or nz.max() > 1e30):
                    return True
    return False


def fresh_inputs(name: str, data_sets) -> dict:
    """The first data set's feeds with every float tensor replaced by standard-normal values of its shape and dtype
    (seeded by the test's name); other inputs (indices, ints) are kept."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    feeds = {}
    for k, v in data_sets[0][1].items():
        if isinstance(v, np.ndarray) and v.dtype.kind == "f":
            feeds[k] = rng.standard_normal(v.shape).astype(v.dtype)
        else:
            feeds[k] = v
    return feeds


def run_converted_ort(model, data_sets) -> str | None:
    """Converts to opset 13 with onnx.version_converter, then runs in onnxruntime."""
    try:
        converted = onnx.version_converter.convert_version(model, CONVERT_TO_OPSET)
    except Exception as e:  # noqa: BLE001
        return f"version_converter to opset {CONVERT_TO_OPSET} failed: " + error_text(e)
    return run_ort(converted, data_sets)


def run_checker(path: str) -> str | None:
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as e:  # noqa: BLE001
        return error_text(e)
    return None


# ----------------------------------------------------------------------------------------------- onnx-bcast


class Tool:
    def __init__(self, binary: str):
        self.binary = binary

    def _run(self, args: list[str]):
        p = subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def expand(self, src: str, dst: str, materialize: bool = False) -> dict:
        args = ["expand", src, dst, "--format", "json"]
        if materialize:
            args.append("--materialize-constants")
        code, out, err = self._run(args)
        summary = None
        lines = [l for l in out.splitlines() if l.strip()]
        if lines:
            try:
                summary = json.loads(lines[-1])
            except json.JSONDecodeError:
                summary = None
        written = os.path.isfile(dst) and code in (0, 1)
        return {"exit": code, "summary": summary, "stderr": short(err), "written": written}

    def check_strict(self, path: str) -> dict:
        code, out, err = self._run(["check", "--strict", "--format", "json", path])
        messages = []
        errors = []
        try:
            report = json.loads(out.strip().splitlines()[-1])
            for f in report.get("findings", []):
                if f.get("severity") == "error":
                    errors.append((f.get("code"), f.get("message") or ""))
                    messages.append(f"{f.get('graph')}/{f.get('node')} ({f.get('op')}): [{f.get('code')}] {f.get('message')}")
            for s in report.get("sites", []):
                if s.get("verdict") in ("conditional", "violation", "unknown") or s.get("code"):
                    m = f"{s.get('graph')}/{s.get('node')} ({s.get('op')}): {s.get('verdict')}: {s.get('message')}"
                    if m not in messages:
                        messages.append(m)
        except (json.JSONDecodeError, IndexError):
            messages.append("no JSON report; stderr: " + short(err))
        return {"exit": code, "messages": messages, "errors": errors}


def new_strict_errors(rewritten: dict, original: dict) -> list:
    """Strict errors of a rewritten model that its original does not have: strict means proof, so a conditional
    site stays conditional when `expand` makes it explicit (the same condition), and an undecided one undecided."""
    def condition(message):
        rest = message.split("holds only if ", 1)
        return rest[1].split(": ", 1)[0] if len(rest) == 2 else None
    def unnamed(message):  # a condition only on sizes inference named itself (?3): as good as undecided
        c = condition(message)
        return c is not None and re.search(r"\?[0-9]", c) is not None
    conditions = {condition(m) for c, m in original["errors"] if c == "conditional-broadcast"}
    undecided = any(c == "undecided-broadcast" or (c == "conditional-broadcast" and unnamed(m))
                    for c, m in original["errors"])
    # An op no rule knows stays unknown in the rewritten model: its opaque-node findings are the original's.
    opaque = {m for c, m in original["errors"] if c == "opaque-node"}
    return [(c, m) for c, m in rewritten["errors"]
            if not ((c == "conditional-broadcast" and condition(m) in conditions)
                    or (c == "undecided-broadcast" and undecided)
                    or (c == "opaque-node" and m in opaque)
                    or (c == "conditional-broadcast" and unnamed(m) and undecided))]


def left_text(summary: dict | None) -> list[str]:
    if not summary:
        return []
    return [f"{l.get('graph')}/{l.get('node')} ({l.get('op')}): {l.get('reason')}" for l in summary.get("left", [])]


def expand_failure(res: dict) -> str:
    return f"expand exited {res['exit']} and wrote nothing: {res['stderr']}"


def judge_strict(tool: Tool, name: str, rewritten: str, original: str, fig: dict, fail: dict) -> dict:
    """check --strict on a rewritten model: counted ok (exit 0), inherited (only the original's own findings), or
    a failure with its sites."""
    st = tool.check_strict(rewritten)
    if st["exit"] == 0:
        fig["strict_ok"] += 1
    elif not new_strict_errors(st, tool.check_strict(original)):
        fig["strict_inherited"] += 1
    else:
        fail["strict"].append({"test": name, "reason": f"check --strict exited {st['exit']}", "sites": st["messages"]})
    return st
