"""Exports the PyTorch corpus of issue 12 (see corpus/README.md, "PyTorch export corpus").

    python corpus/export_torch.py OUT_DIR [--only NAME ...] [--jobs N]

Run by corpus/torch_fetch.sh in its pinned venv (torch, torchvision, transformers, onnxscript, onnx, ...).
Every model is built from a small config written here (random weights, seeded; nothing is downloaded), put in
eval mode and exported with dynamic batch and sequence (and image height/width where the architecture allows):

  <name>.torchscript14.onnx   torch.onnx.export(dynamo=False, opset_version=14), dynamic_axes
  <name>.torchscript17.onnx   the same at opset 17
  <name>.dynamo18.onnx        torch.onnx.export(dynamo=True, opset_version=18), dynamic_shapes (named Dims)
  <name>.dynamo18_novi.onnx   the dynamo export with graph.value_info cleared

Writes OUT_DIR/manifest.json: {"models": [...], "failures": [...], "seconds": ..., "python": the interpreter
that ran the export (the venv's, which scripts/torch_models.py needs)}. Each model entry gives the
file, name, family, exporter, opset, whether value_info was stripped, its inputs (name, dtype, shape with the
symbols of the dynamic axes, how to fill it) and two bindings of those symbols to concrete sizes that the model
accepts (both differ from the size the export was traced with), so a measurement can run it at two sizes. An
export that fails is listed under "failures" with the exception, and the script goes on. Exit status: 0 when
every exporter produced at least MIN_MODELS distinct models, 1 otherwise; progress goes to stderr.
"""

import argparse
import json
import multiprocessing
import os
import sys
import time
import traceback
import warnings

MIN_MODELS = 25
SEED = 0
VOCAB = 100
MAX_POS = 64

# Sizes: the export traces with EXPORT_BINDING; the measurement runs BINDINGS (two other sizes).
TEXT_BINDINGS = [{"batch": 2, "seq": 7}, {"batch": 3, "seq": 11}]
TEXT_EXPORT = {"batch": 2, "seq": 8}
S2S_BINDINGS = [{"batch": 2, "seq": 7, "dec_seq": 5}, {"batch": 3, "seq": 11, "dec_seq": 9}]
S2S_EXPORT = {"batch": 2, "seq": 8, "dec_seq": 6}
IMAGE_BINDINGS = [{"batch": 2, "height": 64, "width": 64}, {"batch": 3, "height": 96, "width": 64}]
IMAGE_EXPORT = {"batch": 2, "height": 64, "width": 64}
BATCH_BINDINGS = [{"batch": 2}, {"batch": 3}]
BATCH_EXPORT = {"batch": 4}
AUDIO_BINDINGS = [{"batch": 2, "samples": 400}, {"batch": 3, "samples": 640}]
AUDIO_EXPORT = {"batch": 2, "samples": 480}

# Bounds of the named Dims of the dynamo export (a Dim never below 2, so 0/1 specialisation cannot happen).
DIM_BOUNDS = {"batch": (2, 64), "seq": (2, MAX_POS), "dec_seq": (2, MAX_POS), "height": (32, 512),
              "width": (32, 512), "samples": (400, 16000)}
# What the measurement may bind, for the manifest (documentation of the valid sizes).
VALID = {"batch": "any >= 1", "seq": f"1..{MAX_POS} (max_position_embeddings)", "dec_seq": f"1..{MAX_POS}",
         "height": "multiple of 32, >= 32", "width": "multiple of 32, >= 32", "samples": ">= 400"}

EXPORTS = [("torchscript", 14), ("torchscript", 17), ("dynamo", 18)]


# ------------------------------------------------------------------------------------------- inputs

def ids(name, dims, hi=VOCAB):
    return {"name": name, "dtype": "int64", "shape": dims, "fill": ["int", 0, hi]}


def mask(name, dims):
    return {"name": name, "dtype": "int64", "shape": dims, "fill": ["ones"]}


def floats(name, dims):
    return {"name": name, "dtype": "float32", "shape": dims, "fill": ["normal"]}


TEXT = [ids("input_ids", ["batch", "seq"]), mask("attention_mask", ["batch", "seq"])]
S2S = TEXT + [ids("decoder_input_ids", ["batch", "dec_seq"])]
IMAGE = [floats("pixel_values", ["batch", 3, "height", "width"])]


def static_image(size):
    return [floats("pixel_values", ["batch", 3, size, size])]


# ------------------------------------------------------------------------------------------- models

def hf(cls_name, cfg_name, **cfg):
    def build():
        import transformers
        config = getattr(transformers, cfg_name)(**cfg)
        return getattr(transformers, cls_name)(config)
    return build


def whisper_encoder():
    import transformers
    cfg = transformers.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=32, encoder_layers=2,
                                     encoder_attention_heads=2, encoder_ffn_dim=37, decoder_layers=1,
                                     decoder_attention_heads=2, decoder_ffn_dim=37, max_source_positions=32,
                                     max_target_positions=MAX_POS, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                     decoder_start_token_id=0)
    return transformers.WhisperModel(cfg).get_encoder()


def tv(builder, **kw):
    def build():
        import torchvision
        return getattr(torchvision.models, builder)(weights=None, **kw)
    return build


def densenet_small():
    from torchvision.models.densenet import DenseNet
    return DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, num_classes=10)


def resnet_small():
    from torchvision.models.resnet import BasicBlock, ResNet
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)


BERTISH = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
               max_position_embeddings=MAX_POS)
DECODER = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
               max_position_embeddings=MAX_POS)

# name -> (family, builder, inputs, bindings, export binding, extra forward kwargs)
MODELS = {
    "bert": ("BERT", hf("BertModel", "BertConfig", **BERTISH), TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "distilbert": ("DistilBERT", hf("DistilBertModel", "DistilBertConfig", vocab_size=VOCAB, dim=32, n_layers=2,
                                    n_heads=2, hidden_dim=37, max_position_embeddings=MAX_POS),
                   TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    # RoBERTa-style position ids start after the padding index: max_position_embeddings = 64 + 2.
    "roberta": ("RoBERTa", hf("RobertaModel", "RobertaConfig", **{**BERTISH, "max_position_embeddings": MAX_POS + 2}),
                TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "xlm_roberta": ("XLM-RoBERTa", hf("XLMRobertaModel", "XLMRobertaConfig",
                                      **{**BERTISH, "max_position_embeddings": MAX_POS + 2}),
                    TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "albert": ("ALBERT", hf("AlbertModel", "AlbertConfig", embedding_size=16, **BERTISH),
               TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "electra": ("ELECTRA", hf("ElectraModel", "ElectraConfig", embedding_size=16, **BERTISH),
                TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "mpnet": ("MPNet", hf("MPNetModel", "MPNetConfig", relative_attention_num_buckets=32,
                          **{**BERTISH, "max_position_embeddings": MAX_POS + 2}),
              TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "deberta_v2": ("DeBERTa-v2", hf("DebertaV2Model", "DebertaV2Config", relative_attention=True,
                                    position_buckets=32, pos_att_type=["p2c", "c2p"], **BERTISH),
                   TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "deberta": ("DeBERTa", hf("DebertaModel", "DebertaConfig", relative_attention=True,
                              pos_att_type=["p2c", "c2p"], **BERTISH),
                TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "gpt2": ("GPT-2", hf("GPT2Model", "GPT2Config", vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2,
                         n_positions=MAX_POS), TEXT, TEXT_BINDINGS, TEXT_EXPORT, {"use_cache": False}),
    "gpt_neo": ("GPT-Neo", hf("GPTNeoModel", "GPTNeoConfig", vocab_size=VOCAB, hidden_size=32, num_layers=2,
                              num_heads=2, attention_types=[[["global", "local"], 1]], window_size=16,
                              intermediate_size=37, max_position_embeddings=MAX_POS),
                TEXT, TEXT_BINDINGS, TEXT_EXPORT, {"use_cache": False}),
    "opt": ("OPT", hf("OPTModel", "OPTConfig", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, ffn_dim=37,
                      num_attention_heads=2, max_position_embeddings=MAX_POS, word_embed_proj_dim=32),
            TEXT, TEXT_BINDINGS, TEXT_EXPORT, {"use_cache": False}),
    "llama": ("Llama", hf("LlamaModel", "LlamaConfig", num_key_value_heads=1, **DECODER),
              TEXT, TEXT_BINDINGS, TEXT_EXPORT, {"use_cache": False}),
    "qwen2": ("Qwen2", hf("Qwen2Model", "Qwen2Config", num_key_value_heads=1, **DECODER),
              TEXT, TEXT_BINDINGS, TEXT_EXPORT, {"use_cache": False}),
    "mistral": ("Mistral", hf("MistralModel", "MistralConfig", num_key_value_heads=1, sliding_window=16, **DECODER),
                TEXT, TEXT_BINDINGS, TEXT_EXPORT, {"use_cache": False}),
    "phi": ("Phi", hf("PhiModel", "PhiConfig", partial_rotary_factor=0.5, **DECODER),
            TEXT, TEXT_BINDINGS, TEXT_EXPORT, {"use_cache": False}),
    "falcon": ("Falcon", hf("FalconModel", "FalconConfig", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=2, max_position_embeddings=MAX_POS),
               TEXT, TEXT_BINDINGS, TEXT_EXPORT, {"use_cache": False}),
    "clip_text": ("CLIP-text", hf("CLIPTextModel", "CLIPTextConfig", eos_token_id=2, **BERTISH),
                  TEXT, TEXT_BINDINGS, TEXT_EXPORT, {}),
    "t5": ("T5", hf("T5Model", "T5Config", vocab_size=VOCAB, d_model=32, d_kv=16, d_ff=37, num_layers=2,
                    num_heads=2, relative_attention_num_buckets=8, decoder_start_token_id=0),
           S2S, S2S_BINDINGS, S2S_EXPORT, {"use_cache": False}),
    "bart": ("BART", hf("BartModel", "BartConfig", vocab_size=VOCAB, d_model=32, encoder_layers=2,
                        decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=37,
                        decoder_ffn_dim=37, max_position_embeddings=MAX_POS),
             S2S, S2S_BINDINGS, S2S_EXPORT, {"use_cache": False}),
    # Vision transformers with learned position embeddings: the image size is fixed, the batch is dynamic.
    "vit": ("ViT", hf("ViTModel", "ViTConfig", image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=37), static_image(32), BATCH_BINDINGS,
            BATCH_EXPORT, {}),
    "deit": ("DeiT", hf("DeiTModel", "DeiTConfig", image_size=32, patch_size=8, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2, intermediate_size=37), static_image(32),
             BATCH_BINDINGS, BATCH_EXPORT, {}),
    "swin": ("Swin", hf("SwinModel", "SwinConfig", image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                        num_heads=[1, 2], window_size=4), static_image(32), BATCH_BINDINGS, BATCH_EXPORT, {}),
    "convnext": ("ConvNeXt", hf("ConvNextModel", "ConvNextConfig", hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1]),
                 IMAGE, IMAGE_BINDINGS, IMAGE_EXPORT, {}),
    "whisper_encoder": ("Whisper-encoder", whisper_encoder, [floats("input_features", ["batch", 16, 64])],
                        BATCH_BINDINGS, BATCH_EXPORT, {}),
    "wav2vec2": ("Wav2Vec2", hf("Wav2Vec2Model", "Wav2Vec2Config", vocab_size=VOCAB, hidden_size=32,
                                num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, conv_dim=(16, 16),
                                conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                num_conv_pos_embedding_groups=2),
                 [floats("input_values", ["batch", "samples"])], AUDIO_BINDINGS, AUDIO_EXPORT, {}),
    "resnet": ("ResNet", resnet_small, IMAGE, IMAGE_BINDINGS, IMAGE_EXPORT, {}),
    "mobilenet_v2": ("MobileNetV2", tv("mobilenet_v2", width_mult=0.5, num_classes=10), IMAGE, IMAGE_BINDINGS,
                     IMAGE_EXPORT, {}),
    "mobilenet_v3": ("MobileNetV3", tv("mobilenet_v3_small", num_classes=10), IMAGE, IMAGE_BINDINGS,
                     IMAGE_EXPORT, {}),
    "efficientnet": ("EfficientNet", tv("efficientnet_b0", num_classes=10), IMAGE, IMAGE_BINDINGS, IMAGE_EXPORT, {}),
    "squeezenet": ("SqueezeNet", tv("squeezenet1_1", num_classes=10), IMAGE, IMAGE_BINDINGS, IMAGE_EXPORT, {}),
    "densenet": ("DenseNet", densenet_small, IMAGE, IMAGE_BINDINGS, IMAGE_EXPORT, {}),
    "shufflenet": ("ShuffleNetV2", tv("shufflenet_v2_x0_5", num_classes=10), IMAGE, IMAGE_BINDINGS,
                   IMAGE_EXPORT, {}),
    "regnet": ("RegNet", tv("regnet_y_400mf", num_classes=10), IMAGE, IMAGE_BINDINGS, IMAGE_EXPORT, {}),
}


# ------------------------------------------------------------------------------------------- export

def example(inputs, binding):
    """Seeded example tensors for the export, at the export binding."""
    import torch
    g = torch.Generator().manual_seed(SEED)
    out = []
    for spec in inputs:
        shape = [binding[d] if isinstance(d, str) else d for d in spec["shape"]]
        kind = spec["fill"][0]
        if kind == "int":
            out.append(torch.randint(spec["fill"][1], spec["fill"][2], shape, generator=g, dtype=torch.int64))
        elif kind == "ones":
            out.append(torch.ones(shape, dtype=torch.int64))
        else:
            out.append(torch.randn(shape, generator=g))
    return tuple(out)


def wrap(model, names, kwargs, positional):
    """A module with positional inputs returning the model's first output (last_hidden_state or logits)."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            out = self.model(*args) if positional else self.model(**dict(zip(names, args)), **kwargs)
            if isinstance(out, torch.Tensor):
                return out
            return out[0]

    return Wrapped().eval()


def export_model(name, out_dir):
    """Exports one model every way; returns (manifest entries, failures)."""
    import onnx
    import torch
    from torch.export import Dim

    family, build, inputs, bindings, export_binding, kwargs = MODELS[name]
    torch.manual_seed(SEED)
    model = build().eval()
    names = [i["name"] for i in inputs]
    module = wrap(model, names, kwargs, positional=not hasattr(model, "config"))  # torchvision: positional
    args = example(inputs, export_binding)
    with torch.no_grad():
        module(*args)  # the model runs at the export size, or the config is wrong
    dyn_axes = {i["name"]: {a: d for a, d in enumerate(i["shape"]) if isinstance(d, str)} for i in inputs}
    entries, failures = [], []
    base = {"name": name, "family": family, "inputs": inputs, "bindings": bindings, "export_binding": export_binding,
            "valid_sizes": {s: VALID[s] for s in sorted({d for i in inputs for d in i["shape"] if isinstance(d, str)})}}
    for exporter, opset in EXPORTS:
        fname = f"{name}.{exporter}{opset}.onnx"
        path = os.path.join(out_dir, fname)
        t = time.monotonic()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if exporter == "torchscript":
                    torch.onnx.export(module, args, path, dynamo=False, opset_version=opset, input_names=names,
                                      output_names=["output"], dynamic_axes=dyn_axes, do_constant_folding=True)
                else:
                    dims = {s: Dim(s, min=DIM_BOUNDS[s][0], max=DIM_BOUNDS[s][1]) for a in dyn_axes.values()
                            for s in a.values()}
                    # Keyed by the wrapper's one parameter, `*args`: a tuple matching the positional inputs.
                    shapes = {"args": tuple({a: dims[s] for a, s in dyn_axes[n].items()} for n in names)}
                    torch.onnx.export(module, args, path, dynamo=True, opset_version=opset, input_names=names,
                                      output_names=["output"], dynamic_shapes=shapes, external_data=False)
            m = onnx.load(path)
            onnx.checker.check_model(m)
        except Exception as ex:  # noqa: BLE001  (recorded in the manifest; the other exports go on)
            failures.append({"name": name, "family": family, "exporter": exporter, "opset": opset,
                             "error": summary(ex),
                             "traceback": traceback.format_exc()[-3000:]})
            if os.path.exists(path):
                os.remove(path)
            print(f"export_torch.py: {fname}: FAILED {type(ex).__name__}", file=sys.stderr, flush=True)
            continue
        secs = round(time.monotonic() - t, 1)
        entries.append({**base, "file": fname, "exporter": exporter, "opset": opset, "stripped": False,
                        "seconds": secs, "nodes": len(m.graph.node), "value_info": len(m.graph.value_info)})
        print(f"export_torch.py: {fname}: {len(m.graph.node)} nodes ({secs} s)", file=sys.stderr, flush=True)
        if exporter == "dynamo":
            del m.graph.value_info[:]
            sname = f"{name}.{exporter}{opset}_novi.onnx"
            onnx.save(m, os.path.join(out_dir, sname))
            entries.append({**base, "file": sname, "exporter": exporter, "opset": opset, "stripped": True,
                            "seconds": 0.0, "nodes": len(m.graph.node), "value_info": 0})
    return entries, failures


def summary(ex):
    """One line saying why an export failed (torch.onnx puts the cause under "## Exception summary")."""
    text = str(ex).strip()
    lines = [l for l in text.splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if line.startswith("## Exception summary") and i + 1 < len(lines):
            return lines[i + 1][:500]
    return f"{type(ex).__name__}: {lines[0][:500] if lines else ''}"


def worker(args):
    name, out_dir = args
    import torch
    torch.set_num_threads(1)
    try:
        return export_model(name, out_dir)
    except Exception as ex:  # noqa: BLE001  (the model itself could not be built or run)
        family = MODELS[name][0]
        return [], [{"name": name, "family": family, "exporter": "all", "opset": None,
                     "error": f"{type(ex).__name__}: {str(ex)[:400]}", "traceback": traceback.format_exc()[-3000:]}]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", action="append", default=[], help="export only these model names")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    names = [n for n in MODELS if not a.only or n in a.only]
    t = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    entries, failures = [], []
    with ctx.Pool(max(1, a.jobs), maxtasksperchild=4) as pool:
        for e, f in pool.imap(worker, [(n, a.out_dir) for n in names]):
            entries += e
            failures += f
    entries.sort(key=lambda e: e["file"])
    per_exporter = {}
    for e in entries:
        if not e["stripped"]:
            per_exporter.setdefault(e["exporter"], set()).add(e["family"])
    manifest = {"models": entries, "failures": failures, "seconds": round(time.monotonic() - t, 1),
                "families": {k: sorted(v) for k, v in sorted(per_exporter.items())},
                "versions": versions(), "python": sys.executable}
    with open(os.path.join(a.out_dir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    counts = {k: len(v) for k, v in per_exporter.items()}
    print(f"export_torch.py: {len(entries)} files, {len(failures)} failed exports, families per exporter {counts} "
          f"in {manifest['seconds']} s", file=sys.stderr)
    for fl in failures:
        print(f"export_torch.py: failed: {fl['name']} {fl['exporter']} {fl['opset']}: {fl['error']}", file=sys.stderr)
    if a.only:
        return 0
    short = [k for k in ("torchscript", "dynamo") if counts.get(k, 0) < MIN_MODELS]
    if short:
        print(f"export_torch.py: error: fewer than {MIN_MODELS} models for {short}", file=sys.stderr)
        return 1
    return 0


def versions():
    import onnx
    import onnxscript
    import torch
    import torchvision
    import transformers
    return {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "transformers": transformers.__version__, "onnxscript": onnxscript.__version__, "onnx": onnx.__version__}


if __name__ == "__main__":
    sys.exit(main())
