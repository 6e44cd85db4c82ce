"""The seeded generator of random valid models over symbolic batch, sequence and image dims (scripts/soundness.py's
generated set). Not the Rust tests' generator (tests/it/common/gen.rs), for a reason: that one streams large chains
of element-wise ops with gigabytes of initializers for load, speed and memory tests, all static and clean; this one
writes small graphs of shape-changing ops (Reshape, Concat, Slice, Conv, Resize, ...) over symbolic dims, valid
under two bindings at once, whose every inferred shape onnxruntime then judges."""

import math
import random

import numpy as np
from onnx import TensorProto, helper, numpy_helper


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
