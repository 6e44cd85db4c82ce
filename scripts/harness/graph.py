"""Walks over a model's graphs, and shapes as `check --format json` states them (a list of int, str or null)."""

import onnx

ONNX_DOMAINS = ("", "ai.onnx")


def subgraphs(node):
    """(attribute, index, graph) for every graph a node's attributes hold."""
    for attr in node.attribute:
        for k, g in enumerate([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
            yield attr, k, g


def node_label(node, index):
    """check's name for a node: its name, else `#index (op)`."""
    return node.name if node.name else f"#{index} ({node.op_type})"


def bodies(model):
    """(label, GraphProto) for the main graph and every subgraph, depth first."""
    out = []

    def walk(g, label):
        out.append((label, g))
        for i, node in enumerate(g.node):
            for a, k, sub in subgraphs(node):
                walk(sub, f"{label}/{node.name or i}/{a.name}{k or ''}")

    walk(model.graph, "main")
    return out


def count_ops(model, ops):
    """Nodes of the default domain whose op is in `ops`, in every graph and at the top of every function body."""
    n = 0

    def walk(graph):
        nonlocal n
        for node in graph.node:
            n += node.op_type in ops and node.domain in ONNX_DOMAINS
            for _, _, g in subgraphs(node):
                walk(g)

    walk(model.graph)
    for f in model.functions:
        n += sum(1 for node in f.node if node.op_type in ops and node.domain in ONNX_DOMAINS)
    return n


def fed_inputs(model):
    """The graph inputs that are no initializer."""
    inits = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


# ----------------------------------------------------------------------------------------------- shapes

def onnx_shape(type_proto):
    """A TypeProto's tensor shape in check's JSON form (None: unknown rank or not a tensor); a negative
    dim_value is unknown."""
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def declared_dims(vi):
    """A ValueInfo's dims as declared (None: no tensor shape): dim_value as it stands, dim_param, or None."""
    if vi.type.WhichOneof("value") != "tensor_type" or not vi.type.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param if d.HasField("dim_param") and d.dim_param
                                                         else None) for d in vi.type.tensor_type.shape.dim]


def ort_symbolic(model):
    """onnxruntime's symbolic shape inference (it imports sympy, hence imported here: not every venv has it)."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    return SymbolicShapeInference.infer_shapes(model, int_max=2**31 - 1, auto_merge=True, guess_output_rank=False,
                                               verbose=0)


def onnx_data_prop(model):
    """onnx's shape inference with data propagation, lenient (no type check, not strict)."""
    return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)


def resolved(shape):
    """(fully resolved, static) for a shape as check's JSON gives it: null, or a list of int/str/null."""
    if shape is None:
        return False, False
    return all(d is not None for d in shape), all(isinstance(d, int) for d in shape)


def resolved_all(inputs):
    """resolved() of a site's inputs together."""
    flags = [resolved(i.get("shape")) for i in inputs]
    return all(r for r, _ in flags), all(s for _, s in flags)


def onnx_scopes(model):
    """graph path (check's naming: "main", "main/NODE/ATTR") -> (parent path, {value name: shape})."""
    scopes = {}

    def walk(graph, path, parent):
        values = {}
        for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
            shape = onnx_shape(vi.type)
            if shape is not None or vi.name not in values:
                values[vi.name] = shape
        for init in graph.initializer:
            values[init.name] = [int(d) for d in init.dims]
        scopes[path] = (parent, values)
        for i, node in enumerate(graph.node):
            for attr, _, g in subgraphs(node):
                walk(g, f"{path}/{node_label(node, i)}/{attr.name}", path)

    walk(model.graph, "main", None)
    return scopes


def onnx_lookup(scopes, path, name):
    """(found, shape) of a value seen from a graph: its own scope first, then the enclosing ones."""
    while path is not None and path in scopes:
        parent, values = scopes[path]
        if name in values:
            return True, values[name]
        path = parent
    return False, None


def site_shapes(scopes, site):
    """A check site's inputs as an inferred model states them ({"shape": ...} each; None where not found or in a
    function body, which no ModelProto scope covers)."""
    shapes = []
    for inp in site["inputs"]:
        found, shape = onnx_lookup(scopes, site["graph"], inp["name"]) if not site.get("functions") else (False, None)
        shapes.append({"shape": shape if found else None})
    return shapes


def full_check(path, limit=600):
    """"ok" when onnx's checker accepts the model with full_check (strict shape inference), else why not."""
    try:
        onnx.checker.check_model(path, full_check=True)
        return "ok"
    except Exception as ex:  # noqa: BLE001  (any failure is the checker's answer)
        return f"{type(ex).__name__}: {str(ex)[:limit]}"


# ----------------------------------------------------------------------------------------------- values

def producers(model):
    """value name -> the op that makes it ("graph input" / "initializer" for the others), over every graph."""
    out = {}

    def walk(graph):
        for vi in graph.input:
            out.setdefault(vi.name, "graph input")
        for t in graph.initializer:
            out[t.name] = "initializer"
        for node in graph.node:
            op = node.op_type if node.domain in ONNX_DOMAINS else f"{node.domain}.{node.op_type}"
            for o in node.output:
                out[o] = op
            for _, _, g in subgraphs(node):
                walk(g)

    walk(model.graph)
    return out


def external_locations(model):
    """Relative paths of the external data files a model's initializers (in any graph) point to."""
    found = set()

    def walk(graph):
        for t in graph.initializer:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                found.update(e.value for e in t.external_data if e.key == "location")
        for node in graph.node:
            for _, _, g in subgraphs(node):
                walk(g)

    walk(model.graph)
    return sorted(found)
