"""The soundness judge: shapes as `onnx-bcast shapes` infers them (known sizes, symbols, expressions such as
`3*N + 1` or `floor((H - 1) / 2) + 1`) against the shapes onnxruntime computes (scripts/soundness.py's docstring
says how a claim is judged)."""

import math
import re
from fractions import Fraction

from onnx import TensorProto

from harness.graph import subgraphs

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

    def _binary(self, operand, ops):
        """operand (op operand)*, left-associative, for the operators `ops`."""
        node = operand()
        while self._peek() in [("op", o) for o in ops]:
            op = self._take()[1]
            node = (op, node, operand())
        return node

    def _expr(self):
        return self._binary(self._term, "+-")

    def _term(self):
        return self._binary(self._unary, "*/")

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
            for _, _, g in subgraphs(node):
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
    judge_expressions(deferred, env, stats, bad)


def judge_expressions(deferred, env, stats, bad):
    """The expression claims (value, axis, expr, actual size): evaluated where their symbols are bound; one unbound
    symbol with a unique solution binds it (and may unblock others); what stays unsolved is counted unchecked."""
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
