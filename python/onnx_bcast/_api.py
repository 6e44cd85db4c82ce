"""onnx-bcast: make broadcasting in ONNX models visible, checked and explicit.

The Python API of the ``onnx-bcast`` command line, in the shape ONNX users already call
(``onnx.checker.check_model``, ``onnx.shape_inference.infer_shapes``, ``onnxsim.simplify``)::

    import onnx_bcast

    report = onnx_bcast.check("model.onnx")            # a path, bytes, or an onnx.ModelProto
    assert report.ok, report                           # the repr lists the findings
    model, summary = onnx_bcast.expand(model_proto)    # returns the kind it was given
    onnx_bcast.shapes("model.onnx")["main"]["logits"]  # TensorType(elem_type='float', shape=('batch', 10))

A model given as a path is memory-mapped, exactly as the command line maps it; an ``onnx.ModelProto`` is taken
through ``SerializeToString()``, so ``onnx`` is not a dependency (``check`` and ``shapes`` leave the data of large
initializers out of what they serialize: only its length matters to them). Every call releases the GIL while it works. An
unreadable model raises :class:`ModelError` with the command line's one-line message.
"""

from __future__ import annotations

import json
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
    "shapes",
    "Report",
    "Finding",
    "Site",
    "Input",
    "Summary",
    "Expanded",
    "ExpandSummary",
    "Action",
    "LeftSite",
    "TensorType",
    "OnnxBcastError",
    "ModelError",
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
    raise TypeError(f"a model is a path, bytes or an onnx.ModelProto, not {type(model).__name__}")


#: Analysis reads the values of a tensor of at most this many elements (the length of the data of any other).
_VALUES_READ_UP_TO = 64


def _analysable(model: ModelLike) -> Tuple[Union[str, bytes], str, List[Tuple[int, int]]]:
    """As `_native_model`, but a ModelProto is serialized without the data of its large main-graph initializers (over
    64 elements), whose values analysis never reads: the weights of a model are not serialized to check it. Returns
    those initializers as (index, data length); the extension stands in for their data with untouched zero pages."""
    graph = getattr(model, "graph", None)
    initializers = getattr(graph, "initializer", None)
    if initializers is None or isinstance(model, (str, os.PathLike, bytes, bytearray, memoryview)):
        return (*_native_model(model), [])
    large = {i for i, t in enumerate(initializers) if _elements(t.dims) > _VALUES_READ_UP_TO and t.HasField("raw_data")}
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
        # The exact length: a tensor whose data has the wrong size is a finding (tensor-data-mismatch).
        left_out.append((i, len(tensor.raw_data)))
    return skeleton.SerializeToString(), "proto", left_out


def _elements(dims: Sequence[int]) -> int:
    count = 1
    for d in dims:
        if d < 0:
            return 0
        count *= d
    return count


def _copy_fields(source: Any, target: Any, skip: str, by_descriptor: bool = False) -> None:
    """Every field set in `source` but `skip`, into `target`. `by_descriptor` walks the schema rather than
    `ListFields()`, which would make a Python copy of the skipped field's value (a tensor's data) on the way."""
    if by_descriptor:
        fields = [(f, None) for f in source.DESCRIPTOR.fields if f.name != skip]
    else:
        fields = [(f, v) for f, v in source.ListFields() if f.name != skip]
    for field, value in fields:
        repeated = getattr(field, "is_repeated", None)
        if repeated is None:
            repeated = field.label == field.LABEL_REPEATED
        if by_descriptor and not repeated and not source.HasField(field.name):
            continue
        value = getattr(source, field.name) if value is None else value
        if repeated:
            getattr(target, field.name).extend(value)
        elif field.message_type is not None:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


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
        where = "/".join(p for p in (self.graph, self.node) if p)
        op = f" ({self.op})" if self.op else ""
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

    def to_json(self) -> str:
        """Exactly the object ``onnx-bcast check --format json`` writes for this model."""
        return self._native.to_json()

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(self.to_json())

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        # A process pool sends reports back pickled: the native object's answers travel as strings.
        native = self._native
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
    return Report(_Answers(*answers), model)


def check(
    model: ModelLike,
    *,
    strict: bool = False,
    deny: Sequence[str] = (),
    warn: Sequence[str] = (),
    allow: Sequence[str] = (),
    bind: Optional[Mapping[str, int]] = None,
) -> Report:
    """Infers shapes through the whole model and judges every broadcasting site by its rule, like
    ``onnx-bcast check``. ``strict``: every implicit broadcast and every conditional site is an error. ``deny``,
    ``warn``, ``allow``: codes (or ``"all"``) whose findings become errors, warnings or nothing; ``"all"`` applies
    first and named codes over it, so ``deny=["all"], allow=["negative-dim"]`` works as the flags do. ``bind``: sizes
    for the symbols of the inputs (``{"seq": 512}``, as ``--bind seq=512``), given before inference, so that every
    size derived from them is worked out again; :class:`BindError` for a name no input declares or a size the model
    contradicts. No config file is read: the arguments are the whole configuration."""
    native, kind, left_out = _analysable(model)
    name = _shown(kind)
    report = _native.check(
        native, name=name, strict=strict, deny=_names(deny), warn=_names(warn), allow=_names(allow),
        left_out=left_out, bind=_bindings(bind),
    )
    return Report(report, native if kind == "path" else name)


def _bindings(bind: Optional[Mapping[str, int]]) -> List[Tuple[str, int]]:
    return [] if bind is None else [(str(name), int(size)) for name, size in bind.items()]


def _names(codes: Sequence[str]) -> List[str]:
    if isinstance(codes, str):
        return [codes]
    return list(codes)


@dataclass(frozen=True)
class TensorType:
    """A value's inferred element type (``"float"``, ``"int64"``, ...; ``None`` if unknown) and shape."""

    elem_type: Optional[str]
    shape: Shape


def shapes(model: ModelLike, *, bind: Optional[Mapping[str, int]] = None) -> Dict[str, Dict[str, TensorType]]:
    """Every value's inferred element type and shape, by graph (``"main"``, then subgraphs and function bodies as
    ``onnx-bcast shapes`` names them) and value name. Symbols and expressions over them are strings; ``bind`` as
    for :func:`check`."""
    native, kind, left_out = _analysable(model)
    name = _shown(kind)
    found = json.loads(_native.shapes(native, name=name, left_out=left_out, bind=_bindings(bind)))
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
) -> Expanded:
    """Rewrites every implicit broadcast into explicit ops (``Expand`` of ``Shape`` values, or a constant written
    out at its broadcast shape with ``materialize_constants``), everything else byte for byte as it was.

    With ``out``, writes the model there (atomically, with its external data, as ``onnx-bcast expand IN OUT``
    does) and returns ``out``; without, returns the rewritten model as the kind it was given: ``bytes`` for bytes,
    a new ``ModelProto`` for a ``ModelProto``, and ``bytes`` for a path (its external data, if any, stays where the
    input's is). ``bind`` as for :func:`check` (``expand --bind``: the inputs take those sizes too). Raises
    :class:`RefusedError` for a model ``check`` reports as broken."""
    native, kind = _native_model(model)
    name = _shown(kind)
    options = {
        "materialize_constants": materialize_constants,
        "max_materialize_bytes": max_materialize_bytes,
        "inline_external_below": inline_external_below,
        "gather_external_data": gather_external_data,
    }
    written = None if out is None else os.fsdecode(out)
    rewritten, summary_json = _native.expand(native, written, options, name=name, bind=_bindings(bind))
    summary = ExpandSummary._from_json(json.loads(summary_json))
    if out is not None:
        return Expanded(out, summary)
    if kind == "proto":
        return Expanded(type(model).FromString(rewritten), summary)
    return Expanded(rewritten, summary)
