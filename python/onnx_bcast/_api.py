"""The implementation of the ``onnx_bcast`` package (its ``__init__`` re-exports the public names).

A model given as a path is memory-mapped, exactly as the command line maps it; an ``onnx.ModelProto`` is taken
through ``SerializeToString()``, so ``onnx`` is not a dependency (``check`` and ``shapes`` leave the data of large
initializers out of what they serialize: only its length matters to them). Every call releases the GIL while it works.
An unreadable model raises :class:`ModelError` with the command line's one-line message; a missing file
:class:`ModelNotFoundError`, which is a ``FileNotFoundError`` too. A wrong argument raises ``TypeError`` or
``ValueError`` naming it.
"""

from __future__ import annotations

import errno
import functools
import json
import math
import operator
import os
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _native
from ._native import BindError, InternalError, ModelError, OnnxBcastError, RefusedError

__version__: str = _native.__version__

__all__ = [
    "check",
    "expand",
    "infer",
    "fold",
    "shapes",
    "explain",
    "Report",
    "Finding",
    "Site",
    "Input",
    "Summary",
    "Expanded",
    "ExpandSummary",
    "Action",
    "LeftSite",
    "Inferred",
    "InferSummary",
    "Mismatch",
    "Folded",
    "FoldSummary",
    "TensorType",
    "RangeLike",
    "ShapesLike",
    "OnnxBcastError",
    "ModelError",
    "ModelNotFoundError",
    "RefusedError",
    "BindError",
    "InternalError",
]

#: A dim: a known size, a symbol or expression over symbols (``"N"``, ``"min(512, seq)"``), or unknown (``None``).
Dim = Union[int, str, None]
#: A shape: its dims, or ``None`` when even the rank is unknown.
Shape = Optional[Tuple[Dim, ...]]
#: What every function takes as a model: a path, the bytes of a model, or anything with ``SerializeToString()``
#: (an ``onnx.ModelProto``).
ModelLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


class ModelNotFoundError(ModelError, FileNotFoundError):
    """The model's file does not exist: a :class:`ModelError` and a ``FileNotFoundError``, so that either catch
    works. ``filename`` is the path, ``errno`` ``ENOENT``; the message is the command line's."""

    def __init__(self, message: str, filename: str) -> None:
        FileNotFoundError.__init__(self, errno.ENOENT, message, filename)

    def __str__(self) -> str:
        return str(self.strerror)


ModelNotFoundError.__module__ = "onnx_bcast"


def _native_model(model: ModelLike) -> Tuple[Union[str, bytes], str]:
    """The model as the extension takes it (a path or bytes), and its kind: ``"path"``, ``"bytes"`` or ``"proto"``."""
    if isinstance(model, (str, os.PathLike)):
        return os.fsdecode(model), "path"
    if isinstance(model, bytes):
        return model, "bytes"
    if isinstance(model, (bytearray, memoryview)):
        return bytes(model), "bytes"
    serialize = getattr(model, "SerializeToString", None)
    if callable(serialize):
        return serialize(), "proto"
    raise TypeError(f"model: a path, bytes or an onnx.ModelProto, not {type(model).__name__}")


def _calling(native: Any, kind: str, call: Any) -> Any:
    """Runs `call()`, a missing model file raised as :class:`ModelNotFoundError` (both catches work)."""
    try:
        return call()
    except ModelError as e:
        if kind == "path" and not os.path.lexists(native):
            raise ModelNotFoundError(str(e), native) from None
        raise


def _flag(argument: str, value: Any) -> bool:
    """A keyword argument that is True or False, or a ``TypeError`` naming it."""
    if not isinstance(value, bool):
        raise TypeError(f"{argument}: True or False, not {value!r}")
    return value


def _size(argument: str, value: Any, optional: bool = False) -> Optional[int]:
    """A keyword argument that is a number of bytes (an int, at least 0), or an error naming it."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument}: a number of bytes (an int), not {value!r}")
    if value < 0:
        raise ValueError(f"{argument}: a number of bytes is at least 0, not {value}")
    return value


def _out(out: Any) -> Optional[str]:
    """`out`: where to write, a path (``str`` or path-like), or None to get the model back."""
    if out is None:
        return None
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out: a path (str or os.PathLike) or None, not {type(out).__name__}")
    return os.fsdecode(out)


#: Analysis reads the values of a tensor of at most this many elements (the length of the data of any other).
_VALUES_READ_UP_TO = 64


#: A ModelProto whose large initializers hold up to about this many bytes of data (4 an element) is serialized whole:
#: below it, one `SerializeToString()` in C costs less than building a copy of the model without the data in Python
#: (measured on the PyTorch corpus: 0.1 ms against 1.3 ms for T5's 891 nodes and 0.1 MB, 0.7 against 1.4 ms for
#: 6 MB; at 16-20 MB serializing takes 9-40 ms against 7 ms, as the serialized copy gets fresh memory).
_SERIALIZED_WHOLE_UP_TO = 8 << 20


def _analysable(model: ModelLike) -> Tuple[Union[str, bytes], str, List[Tuple[int, int]]]:
    """As `_native_model`, but a ModelProto with more than `_SERIALIZED_WHOLE_UP_TO` bytes of data in its large
    main-graph initializers (over 64 elements, whose values analysis never reads) is serialized without that data:
    the weights of a model are not serialized to check it. Returns those initializers as (index, data length); the
    extension stands in for their data with untouched zero pages."""
    graph = getattr(model, "graph", None)
    initializers = getattr(graph, "initializer", None)
    if initializers is None or isinstance(model, (str, os.PathLike, bytes, bytearray, memoryview)):
        return (*_native_model(model), [])
    # One pass of C calls per initializer; a negative dim makes a count that is sorted out below.
    counts = [math.prod(t.dims) for t in initializers]
    if sum(n for n in counts if n > _VALUES_READ_UP_TO) * 4 <= _SERIALIZED_WHOLE_UP_TO:
        return (*_native_model(model), [])
    large = {
        i
        for i, n in enumerate(counts)
        if n > _VALUES_READ_UP_TO and min(initializers[i].dims) >= 0 and initializers[i].HasField("raw_data")
    }
    if not large:
        return (*_native_model(model), [])
    skeleton = type(model)()
    _copy_fields(model, skeleton, skip="graph")
    _copy_fields(graph, skeleton.graph, skip="initializer")
    left_out = []
    for i, tensor in enumerate(initializers):
        if i not in large:
            skeleton.graph.initializer.add().CopyFrom(tensor)
            continue
        _copy_fields(tensor, skeleton.graph.initializer.add(), skip="raw_data", by_descriptor=True)
        # The exact length: a tensor whose data has the wrong size is a finding (tensor-data-mismatch). upb has no
        # way to read a bytes field's length without copying it: one copy of each tensor, one at a time.
        left_out.append((i, len(tensor.raw_data)))
    return skeleton.SerializeToString(), "proto", left_out


def _copy_fields(source: Any, target: Any, skip: str, by_descriptor: bool = False) -> None:
    """Every field set in `source` but `skip`, into `target`. `by_descriptor` walks the schema rather than
    `ListFields()`, which would make a Python copy of the skipped field's value (a tensor's data) on the way."""
    if by_descriptor:
        # Per tensor left out: the fields it has, found from a plan made once per message type (making the list of
        # fields again, and extending every empty repeated field, took half of a 16 MB model's skeleton).
        for name, repeated, message in _schema(source.DESCRIPTOR, skip):
            if repeated:
                values = getattr(source, name)
                if values:
                    getattr(target, name).extend(values)
            elif source.HasField(name):
                _set_field(target, name, message, getattr(source, name))
        return
    for field, value in source.ListFields():
        if field.name != skip:
            if _is_repeated(field):
                getattr(target, field.name).extend(value)
            else:
                _set_field(target, field.name, field.message_type is not None, value)


def _set_field(target: Any, name: str, message: bool, value: Any) -> None:
    if message:
        getattr(target, name).CopyFrom(value)
    else:
        setattr(target, name, value)


def _is_repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)
    return field.label == field.LABEL_REPEATED if repeated is None else repeated


@functools.lru_cache(maxsize=None)
def _schema(descriptor: Any, skip: str) -> Tuple[Tuple[str, bool, bool], ...]:
    """The fields of a message type but `skip`: (name, repeated, a message)."""
    return tuple(
        (f.name, _is_repeated(f), f.message_type is not None) for f in descriptor.fields if f.name != skip)


def _shown(kind: str) -> Optional[str]:
    """How messages name a model given in memory (a path names itself)."""
    return {"path": None, "bytes": "<bytes>", "proto": "<ModelProto>"}[kind]


def _shape(value: Optional[List[Dim]]) -> Shape:
    return None if value is None else tuple(value)


@dataclass(frozen=True)
class Input:
    """One input of a broadcasting site: its value's name and inferred shape."""

    name: str
    shape: Shape


@dataclass(frozen=True)
class Site:
    """One broadcasting site, judged by its rule (``multidirectional``, ``unidirectional``, ...)."""

    graph: str
    node: str
    op: str
    rule: str
    inputs: Tuple[Input, ...]
    output_shape: Shape
    #: ``same``, ``broadcast``, ``violation``, ``conditional`` or ``unknown``.
    verdict: str
    message: str
    code: Optional[str]
    axis: Optional[int]
    offending_input: Optional[str]
    conditions: Tuple[str, ...]
    #: The structured conditions, as the command line's JSON gives them.
    constraints: Tuple[Dict[str, Any], ...]
    #: The function calls the site is reached through, outermost first: ``{"function", "node"}``.
    functions: Tuple[Dict[str, str], ...]
    #: With ranges of sizes, what the conditions come to over them: ``{"result": "holds" | "fails" | "unproven",
    #: ...}`` with the ``witness`` sizes of a failure (``{"seq": 65}``), as the command line's JSON gives it.
    over_ranges: Optional[Dict[str, Any]] = None

    @classmethod
    def _from_json(cls, s: Dict[str, Any]) -> "Site":
        return cls(
            graph=s["graph"],
            node=s["node"],
            op=s["op"],
            rule=s["rule"],
            inputs=tuple(Input(i["name"], _shape(i["shape"])) for i in s["inputs"]),
            output_shape=_shape(s["output_shape"]),
            verdict=s["verdict"],
            message=s["message"],
            code=s["code"],
            axis=s["axis"],
            offending_input=s["offending_input"],
            conditions=tuple(s["conditions"]),
            constraints=tuple(s["constraints"]),
            functions=tuple(s["functions"]),
            over_ranges=s.get("over_ranges"),
        )


@dataclass(frozen=True)
class Finding:
    """Something wrong or worth knowing, at a node: a diagnostic code (``onnx-bcast explain CODE``) and severity."""

    code: str
    #: ``error`` (fails the check) or ``warning``.
    severity: str
    graph: str
    node: Optional[str]
    op: Optional[str]
    message: str
    #: The axis at fault, for a site's finding.
    axis: Optional[int]
    #: The site's inputs with their names and shapes (empty for a finding about the model).
    inputs: Tuple[Input, ...]
    #: The site the finding is about, or ``None`` for one about the model (an undefined value, a cycle).
    site: Optional[Site]

    def __str__(self) -> str:
        # As the command line names a place: the graph, then the node after ` › ` (node names hold `/` too).
        where = " › ".join(p for p in (self.graph, self.node) if p)
        op = f" ({self.op})" if self.op and not (self.node or "").endswith(f" ({self.op})") else ""
        return f"{self.severity}[{self.code}] {where}{op}: {self.message}"


@dataclass(frozen=True)
class Summary:
    """The totals of one model's check."""

    sites: int
    same: int
    broadcast: int
    violations: int
    conditional: int
    unknown: int
    errors: int
    warnings: int
    opaque_nodes: int


class Report:
    """One model's check. ``ok`` is what the command line's exit status says (no error-level finding); ``findings``,
    ``sites`` and ``to_json()`` are read on demand, so a large model costs nothing more until they are."""

    def __init__(self, native: Any, model: str) -> None:
        self._native = native
        #: The model as messages name it: its path, or ``<bytes>`` / ``<ModelProto>``.
        self.model = model

    @property
    def ok(self) -> bool:
        return not self._native.failed()

    @property
    def error(self) -> Optional[str]:
        """Why the model could not be checked (one of a folder's models, say), or None: the command line's line for
        it. Such a report is not ``ok``, has no findings, and ``to_json()`` is ``{"model", "error"}``."""
        return getattr(self._native, "error", None)

    @cached_property
    def summary(self) -> Summary:
        return Summary(**json.loads(self._native.summary_json()))

    @cached_property
    def findings(self) -> List[Finding]:
        findings = []
        for f in json.loads(self._native.findings_json()):
            site = None if f["site"] is None else Site._from_json(f["site"])
            findings.append(
                Finding(
                    code=f["code"],
                    severity=f["severity"],
                    graph=f["graph"],
                    node=f["node"],
                    op=f["op"],
                    message=f["message"],
                    axis=None if site is None else site.axis,
                    inputs=() if site is None else site.inputs,
                    site=site,
                )
            )
        return findings

    @cached_property
    def sites(self) -> List[Site]:
        return [Site._from_json(s) for s in self.to_dict()["sites"]]

    @cached_property
    def ranges(self) -> Optional[Dict[str, Any]]:
        """With ranges of sizes: the command line's JSON ``ranges`` object (the ranges, the failing sites with their
        witnesses, and with ``safe_ranges`` the safe box and its TensorRT profiles); ``None`` without."""
        return self.to_dict().get("ranges")

    @cached_property
    def safe_ranges(self) -> Optional[Dict[str, range]]:
        """With ``safe_ranges=True``: the largest box where every site holds, each symbol's sizes as a ``range``
        (``{"seq": range(1, 65)}``); ``None`` when nothing is safe or it was not asked for."""
        safe = (self.ranges or {}).get("safe") or {}
        symbols = safe.get("symbols")
        if symbols is None:
            return None
        return {name: range(r["min"], r["max"] + 1, r["step"]) for name, r in symbols.items()}

    def to_json(self) -> str:
        """Exactly the object ``onnx-bcast check --format json`` writes for this model."""
        return self._native.to_json()

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(self.to_json())

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        # A process pool sends reports back pickled: the native object's answers travel as strings.
        native = self._native
        if self.error is not None:
            return (_unpickle_report, ((self.error,), self.model))
        answers = (native.failed(), native.summary_json(), native.summary_text(), native.findings_json(),
                   native.to_json())
        return (_unpickle_report, (answers, self.model))

    def __repr__(self) -> str:
        head = f"<Report {self.model}: {'ok' if self.ok else 'failed'}; {self._native.summary_text()}"
        shown = self.findings[:10]
        lines = [head + (">" if not shown else "")]
        lines += [f"  {f}" for f in shown]
        if len(self.findings) > len(shown):
            lines.append(f"  ... and {len(self.findings) - len(shown)} more")
        if shown:
            lines[-1] += ">"
        return "\n".join(lines)


class _Answers:
    """A report's native answers, kept as strings: what an unpickled `Report` reads instead of the extension."""

    def __init__(self, failed: bool, summary_json: str, summary_text: str, findings_json: str, to_json: str) -> None:
        self._answers = (failed, summary_json, summary_text, findings_json, to_json)

    def failed(self) -> bool:
        return self._answers[0]

    def summary_json(self) -> str:
        return self._answers[1]

    def summary_text(self) -> str:
        return self._answers[2]

    def findings_json(self) -> str:
        return self._answers[3]

    def to_json(self) -> str:
        return self._answers[4]


def _unpickle_report(answers: Tuple[Any, ...], model: str) -> Report:
    if len(answers) == 1:
        return Report(_Unreadable(model, answers[0]), model)
    return Report(_Answers(*answers), model)


class _Unreadable:
    """The answers of a model that could not be checked, as the command line reports it among the others."""

    def __init__(self, model: str, error: str) -> None:
        self.error = error
        self._model = model

    def failed(self) -> bool:
        return True

    def summary_json(self) -> str:
        fields = ("sites", "same", "broadcast", "violations", "conditional", "unknown", "errors", "warnings",
                  "opaque_nodes")
        return json.dumps({f: 0 for f in fields})

    def summary_text(self) -> str:
        return f"could not be checked: {self.error}"

    def findings_json(self) -> str:
        return "[]"

    def to_json(self) -> str:
        return json.dumps({"model": self._model, "error": self.error}, ensure_ascii=False)


def check(
    model: ModelLike,
    *,
    strict: bool = False,
    deny: Sequence[str] = (),
    warn: Sequence[str] = (),
    allow: Sequence[str] = (),
    bind: Optional[Mapping[str, int]] = None,
    ranges: Optional[Mapping[str, "RangeLike"]] = None,
    min_shapes: Optional["ShapesLike"] = None,
    opt_shapes: Optional["ShapesLike"] = None,
    max_shapes: Optional["ShapesLike"] = None,
    safe_ranges: bool = False,
) -> Union[Report, List[Report]]:
    """Infers shapes through the whole model and judges every broadcasting site by its rule, like
    ``onnx-bcast check``. ``strict``: every implicit broadcast, every conditional site and every undecided one is an
    error. ``deny``, ``warn``, ``allow``: codes (or ``"all"``) whose findings become errors, warnings or nothing;
    ``"all"`` applies first and named codes over it, so ``deny=["all"], allow=["negative-dim"]`` works as the flags
    do. ``bind``: sizes for the symbols of the inputs (``{"seq": 512}``, as ``--bind seq=512``), given before
    inference, so that every size derived from them is worked out again; :class:`BindError` for a name no input
    declares; a size the model contradicts is a finding, ``bind-contradiction``. ``ranges``: sizes to decide every
    conditional site over, per symbol (``{"seq": range(1, 513)}``, ``{"h": "320..640/32"}``, ``{"seq": (1, 512)}``
    with both ends included, as ``--range``); ``min_shapes``, ``opt_shapes``, ``max_shapes``: a TensorRT profile per
    input (``{"images": (1, 3, 320, 320)}`` or trtexec's ``"images:1x3x320x320"``); ``safe_ranges``: also find the
    largest box where every site holds (:attr:`Report.safe_ranges`). No config file is read: the arguments are the
    whole configuration.

    A folder gives a list of reports, one per ``.onnx`` file below it in path order (hidden and ignored paths left
    out), as ``onnx-bcast check FOLDER`` reports them; a model among them that cannot be read is a report whose
    ``error`` says why."""
    options = dict(strict=_flag("strict", strict), deny=_names("deny", deny), warn=_names("warn", warn),
                   allow=_names("allow", allow), bind=_bindings(bind), ranges=_ranges(ranges),
                   profile=_profile(min_shapes, opt_shapes, max_shapes), safe_ranges=_flag("safe_ranges", safe_ranges))
    if isinstance(model, (str, os.PathLike)) and os.path.isdir(model):
        return [_check_one(path, options, error) for path, error in _native.find_models(os.fsdecode(model))]
    native, kind, left_out = _analysable(model)
    name = _shown(kind)
    report = _calling(native, kind, lambda: _native.check(native, name=name, left_out=left_out, **options))
    return Report(report, native if kind == "path" else name)


def _check_one(path: str, options: Dict[str, Any], error: Optional[str]) -> Report:
    """One model of a folder: its report, or one that says why it could not be checked."""
    if error is None:
        try:
            return Report(_native.check(path, **options), path)
        except (ModelError, InternalError) as e:
            error = str(e)
    return Report(_Unreadable(path, error), path)


#: The largest size a dim can have: ONNX dims are int64.
_MAX_SIZE = 2**63 - 1


def _bindings(bind: Optional[Mapping[str, int]]) -> List[Tuple[str, int]]:
    """``bind`` as ``--bind NAME=SIZE`` takes it: names are ``str``, sizes integers (``int`` or anything that is one
    exactly, such as ``numpy.int64``; not ``bool``, not ``float``) from 0 to 2**63 - 1. A name or size of another
    type is a :class:`TypeError`, a size out of range a :class:`BindError`; nothing is rounded."""
    if bind is None:
        return []
    if not isinstance(bind, Mapping):
        raise TypeError(f"bind takes a mapping of symbol names to sizes, not {type(bind).__name__}")
    pairs = []
    for name, size in bind.items():
        if not isinstance(name, str):
            raise TypeError(f"bind: a symbol name is a str, not {type(name).__name__} ({name!r})")
        if isinstance(size, bool):
            raise TypeError(f"bind[{name!r}]: a size is an int, not bool ({size!r})")
        try:
            value = operator.index(size)
        except TypeError:
            raise TypeError(f"bind[{name!r}]: a size is an int, not {type(size).__name__} ({size!r})") from None
        if value < 0:
            raise BindError(f"--bind {name}={value}: a size is at least 0")
        if value > _MAX_SIZE:
            raise BindError(f"--bind {name}={value}: the size is larger than ONNX allows (a dim is an int64)")
        pairs.append((name, value))
    return pairs


#: A symbol's sizes: ``"1..512"``, ``"320..640/32"``, ``range(1, 513)``, ``(1, 512)`` or ``(320, 640, 32)`` (both
#: ends included), or one size.
RangeLike = Union[str, range, int, Tuple[int, int], Tuple[int, int, int]]
#: A TensorRT profile's shapes per input: ``{"images": (1, 3, 320, 320)}``, or trtexec's ``"images:1x3x320x320"``.
ShapesLike = Union[str, Mapping[str, Sequence[int]]]


def _ranges(ranges: Optional[Mapping[str, RangeLike]]) -> List[Tuple[str, str]]:
    """The ranges as ``--range`` spells them: ``(name, "MIN..MAX/STEP")``."""
    out = []
    for name, r in (ranges or {}).items():
        if isinstance(r, str):
            text = r
        elif isinstance(r, range):
            if len(r) == 0 or r.step < 1:
                raise ValueError(f"ranges[{name!r}]: {r!r} is empty or runs downwards")
            text = f"{r[0]}..{r[-1]}/{r.step}"
        elif isinstance(r, int):
            text = str(r)
        elif len(tuple(r)) in (2, 3):
            t = tuple(int(x) for x in r)
            text = f"{t[0]}..{t[1]}" + (f"/{t[2]}" if len(t) == 3 else "")
        else:
            raise ValueError(f"ranges[{name!r}]: {r!r} is not (MIN, MAX), (MIN, MAX, STEP), a range or 'MIN..MAX'")
        out.append((str(name), text))
    return out


def _shapes_text(shapes: Optional[ShapesLike]) -> str:
    """Shapes as trtexec spells them: ``name:1x3x320x320``, comma-separated, a name with ``:`` or ``,`` quoted."""
    if shapes is None:
        return ""
    if isinstance(shapes, str):
        return shapes
    parts = []
    for name, dims in shapes.items():
        shown = f"'{name}'" if any(c in name for c in ":,") else name
        parts.append(f"{shown}:{'x'.join(str(int(d)) for d in dims)}")
    return ",".join(parts)


def _profile(min_shapes: Optional[ShapesLike], opt_shapes: Optional[ShapesLike],
             max_shapes: Optional[ShapesLike]) -> Optional[Tuple[str, str, str]]:
    if min_shapes is None and opt_shapes is None and max_shapes is None:
        return None
    if min_shapes is None or max_shapes is None:
        raise ValueError("a TensorRT profile needs both min_shapes and max_shapes")
    return (_shapes_text(min_shapes), _shapes_text(opt_shapes), _shapes_text(max_shapes))


def _names(argument: str, codes: Union[str, Sequence[str]]) -> List[str]:
    """`deny`, `warn` or `allow`: a code, or codes (an unknown one is the extension's ``ValueError``, naming the
    argument)."""
    if isinstance(codes, str):
        return [codes]
    try:
        names = list(codes)
    except TypeError:
        raise TypeError(f"{argument}: a code or a list of codes, not {type(codes).__name__}") from None
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{argument}: a code is a str (such as 'broadcast-violation'), not {name!r}")
    return names


@dataclass(frozen=True)
class TensorType:
    """A value's inferred element type (``"float"``, ``"int64"``, ...; ``None`` if unknown) and shape."""

    elem_type: Optional[str]
    shape: Shape


def shapes(
    model: ModelLike,
    *,
    bind: Optional[Mapping[str, int]] = None,
    ranges: Optional[Mapping[str, RangeLike]] = None,
    min_shapes: Optional[ShapesLike] = None,
    opt_shapes: Optional[ShapesLike] = None,
    max_shapes: Optional[ShapesLike] = None,
) -> Dict[str, Dict[str, TensorType]]:
    """Every value's inferred element type and shape, by graph (``"main"``, then subgraphs and function bodies as
    ``onnx-bcast shapes`` names them) and value name. Symbols and expressions over them are strings; ``bind`` as
    for :func:`check`; with ``ranges`` (or a profile, as for :func:`check`) every size that is one number at all
    of them is that number."""
    native, kind, left_out = _analysable(model)
    name = _shown(kind)
    found = json.loads(_calling(native, kind, lambda: _native.shapes(
        native, name=name, left_out=left_out, bind=_bindings(bind), ranges=_ranges(ranges),
        profile=_profile(min_shapes, opt_shapes, max_shapes))))
    return {
        g["graph"]: {v["name"]: TensorType(v["elem_type"], _shape(v["shape"])) for v in g["values"]}
        for g in found["graphs"]
    }


@dataclass(frozen=True)
class Action:
    """A site made explicit: one step per input (``B [3] -> Expand to [2, 3]``) and the conditions on symbols it
    still holds only under."""

    graph: str
    node: str
    op: str
    steps: Tuple[str, ...]
    conditions: Tuple[str, ...]


@dataclass(frozen=True)
class LeftSite:
    """A site left implicit, and why."""

    graph: str
    node: str
    op: str
    reason: str


@dataclass(frozen=True)
class ExpandSummary:
    """What ``expand`` made explicit: the same fields as ``onnx-bcast expand --format json``."""

    sites: int
    made_explicit: int
    expands_inserted: int
    expands_shared: int
    materialized: int
    nodes_added: int
    actions: Tuple[Action, ...]
    left: Tuple[LeftSite, ...]
    #: The output path, when one was written.
    output: Optional[str]

    @classmethod
    def _from_json(cls, s: Dict[str, Any]) -> "ExpandSummary":
        return cls(
            sites=s["sites"],
            made_explicit=s["made_explicit"],
            expands_inserted=s["expands_inserted"],
            expands_shared=s["expands_shared"],
            materialized=s["materialized"],
            nodes_added=s["nodes_added"],
            actions=tuple(
                Action(a["graph"], a["node"], a["op"], tuple(a["steps"]), tuple(a["conditions"]))
                for a in s["actions"]
            ),
            left=tuple(LeftSite(l["graph"], l["node"], l["op"], l["reason"]) for l in s["left"]),
            output=s["output"],
        )


class Expanded(NamedTuple):
    """``expand``'s result: the rewritten model, of the kind it was given (or the path it was written to), and the
    summary. Unpacks like ``onnxsim.simplify``'s: ``model, summary = onnx_bcast.expand(model)``."""

    model: Any
    summary: ExpandSummary


def expand(
    model: ModelLike,
    out: Union[str, "os.PathLike[str]", None] = None,
    *,
    materialize_constants: bool = False,
    max_materialize_bytes: int = 16 << 20,
    inline_external_below: Optional[int] = None,
    gather_external_data: Optional[str] = None,
    bind: Optional[Mapping[str, int]] = None,
    ranges: Optional[Mapping[str, RangeLike]] = None,
    min_shapes: Optional[ShapesLike] = None,
    opt_shapes: Optional[ShapesLike] = None,
    max_shapes: Optional[ShapesLike] = None,
) -> Expanded:
    """Rewrites every implicit broadcast into explicit ops (``Expand`` of ``Shape`` values, or a constant written
    out at its broadcast shape with ``materialize_constants``), everything else byte for byte as it was.

    With ``out``, writes the model there (atomically, with its external data, as ``onnx-bcast expand IN OUT``
    does) and returns ``out``; without, returns the rewritten model as the kind it was given: ``bytes`` for bytes,
    a new ``ModelProto`` for a ``ModelProto``, and ``bytes`` for a path (its external data, if any, stays where the
    input's is). ``bind`` as for :func:`check` (``expand --bind``: the inputs take those sizes too); ``ranges`` and
    a profile as for :func:`check` (``expand --range``: a site that holds at every size of them states no
    condition, one that fails somewhere in them is left). Raises :class:`RefusedError` for a model ``check``
    reports as broken."""
    native, kind = _native_model(model)
    name = _shown(kind)
    if gather_external_data is not None and not isinstance(gather_external_data, str):
        raise TypeError(f"gather_external_data: a file name (str) or None, not {type(gather_external_data).__name__}")
    options = {
        "materialize_constants": _flag("materialize_constants", materialize_constants),
        "max_materialize_bytes": _size("max_materialize_bytes", max_materialize_bytes),
        "inline_external_below": _size("inline_external_below", inline_external_below, optional=True),
        "gather_external_data": gather_external_data,
    }
    written = _out(out)
    rewritten, summary_json = _calling(
        native, kind, lambda: _native.expand(
            native, written, options, name=name, bind=_bindings(bind), ranges=_ranges(ranges),
            profile=_profile(min_shapes, opt_shapes, max_shapes)))
    summary = ExpandSummary._from_json(json.loads(summary_json))
    if out is not None:
        return Expanded(out, summary)
    if kind == "proto":
        return Expanded(type(model).FromString(rewritten), summary)
    return Expanded(rewritten, summary)


@dataclass(frozen=True)
class Mismatch:
    """A declaration that contradicts inference (``declared-shape-mismatch``): kept, or replaced."""

    graph: str
    value: str
    message: str
    replaced: bool


@dataclass(frozen=True)
class InferSummary:
    """What ``infer`` wrote: the same fields as ``onnx-bcast infer --format json``."""

    values: int
    declared: int
    completed: int
    kept: int
    resolved: int
    static: int
    inputs_bound: int
    functions_skipped: int
    mismatches: Tuple[Mismatch, ...]
    #: The output path, when one was written.
    output: Optional[str]

    @classmethod
    def _from_json(cls, s: Dict[str, Any]) -> "InferSummary":
        fields = ("values", "declared", "completed", "kept", "resolved", "static", "inputs_bound", "functions_skipped")
        mismatches = tuple(Mismatch(m["graph"], m["value"], m["message"], m["replaced"]) for m in s["mismatches"])
        return cls(**{f: s[f] for f in fields}, mismatches=mismatches, output=s["output"])


class Inferred(NamedTuple):
    """``infer``'s result: the annotated model, of the kind it was given (or the path it was written to), and the
    summary."""

    model: Any
    summary: InferSummary


def infer(
    model: ModelLike,
    out: Union[str, "os.PathLike[str]", None] = None,
    *,
    overwrite_declared: bool = False,
    bind: Optional[Mapping[str, int]] = None,
) -> Inferred:
    """Writes every value's inferred element type and shape into the model, as ``value_info`` and the graph outputs'
    declarations (in subgraphs and function bodies too), everything else byte for byte: ``onnx-bcast infer``. A
    declaration that contradicts inference is kept (listed in ``summary.mismatches``) unless
    ``overwrite_declared``. With ``bind`` for every input symbol, a static model. ``out`` and the result's kind as for
    :func:`expand`; :class:`RefusedError` for a model ``check`` reports as broken, :class:`BindError` for sizes it
    contradicts."""
    native, kind = _native_model(model)
    name = _shown(kind)
    written = _out(out)
    overwrite = _flag("overwrite_declared", overwrite_declared)
    rewritten, summary_json = _calling(
        native, kind, lambda: _native.infer(native, written, overwrite, name=name, bind=_bindings(bind)))
    summary = InferSummary._from_json(json.loads(summary_json))
    return Inferred(_result(model, kind, out, rewritten), summary)


@dataclass(frozen=True)
class FoldSummary:
    """What ``fold`` removed and kept: the same fields as ``onnx-bcast fold --format json`` (each broadcast
    folded, removed with the nodes that alone read it, or kept with its reason, as dicts)."""

    candidates: int
    folded: Tuple[Dict[str, Any], ...]
    removed_with: Tuple[Dict[str, Any], ...]
    kept: Tuple[Dict[str, Any], ...]
    nodes_removed: int
    initializers_removed: int
    constants_shrunk: int
    #: The output path, when one was written.
    output: Optional[str]

    @classmethod
    def _from_json(cls, s: Dict[str, Any]) -> "FoldSummary":
        counts = ("candidates", "nodes_removed", "initializers_removed", "constants_shrunk")
        lists = {k: tuple(s[k]) for k in ("folded", "removed_with", "kept")}
        return cls(**{k: s[k] for k in counts}, **lists, output=s["output"])


class Folded(NamedTuple):
    """``fold``'s result: the folded model, of the kind it was given (or the path it was written to), and the
    summary."""

    model: Any
    summary: FoldSummary


def fold(
    model: ModelLike,
    out: Union[str, "os.PathLike[str]", None] = None,
    *,
    materialized: bool = False,
) -> Folded:
    """Removes the explicit broadcasts (``Expand``, size-1 ``Tile``, ``Mul`` by ones, ...) that every consumer
    performs anyway under its own rule, where that is proved: ``onnx-bcast fold``, the inverse of :func:`expand`.
    ``materialized``: also write constants that are expanded copies of smaller ones small again. ``out`` and the
    result's kind as for :func:`expand`; :class:`RefusedError` for a model ``check`` reports as broken."""
    native, kind = _native_model(model)
    name = _shown(kind)
    written = _out(out)
    small = _flag("materialized", materialized)
    rewritten, summary_json = _calling(native, kind, lambda: _native.fold(native, written, small, name=name))
    return Folded(_result(model, kind, out, rewritten), FoldSummary._from_json(json.loads(summary_json)))


def _result(model: Any, kind: str, out: Any, rewritten: Optional[bytes]) -> Any:
    """What a rewrite returns as its model: `out` when it wrote there, else the kind it was given."""
    if out is not None:
        return out
    if kind == "proto":
        return type(model).FromString(rewritten)
    return rewritten


def explain(code: Optional[str] = None) -> str:
    """What a diagnostic code means, which document its rule comes from, an example and a fix: the text of
    ``onnx-bcast explain CODE``; without a code, the list of codes with their severity and summary."""
    if code is not None and not isinstance(code, str):
        raise TypeError(f"code: a code such as 'broadcast-violation' (str) or None, not {type(code).__name__}")
    text = _native.explain(code)
    if text is None:
        raise ValueError(f"code: unknown code {code!r}; onnx_bcast.explain() lists them")
    return text
