"""Builds the deployment corpus of issue 24 (see corpus/README.md, "Deployment corpus").

    python corpus/export_deploy.py TORCH_MODELS OUT_DIR [--only TOOL ...]

Run by corpus/deploy_fetch.sh in its venv (the torch corpus venv's packages plus onnxruntime-genai). The models are
the forms that onnxruntime's own tools give the PyTorch exports of corpus/export_torch.py (TORCH_MODELS: its
models folder and manifest.json), and what onnxruntime-genai's model builder makes of small random-init Hugging
Face checkpoints saved to a local folder (no hub download: config, weights and a word-level tokenizer are written
here). One tool path per `tool` value of the manifest:

  optimizer         onnxruntime.transformers optimize_model (bert, gpt2, vit, t5, swin, clip, bart model types;
                    opt levels 0-2; with and without attention fusion)
  ort_basic, ort_extended, ort_all
                    offline optimization: an InferenceSession with optimized_model_filepath at ORT_ENABLE_BASIC,
                    ORT_ENABLE_EXTENDED and ORT_ENABLE_ALL (the com.microsoft.nchwc layout included)
  qdq, qoperator    quantize_static with a seeded random calibration reader, QuantFormat.QDQ and .QOperator
  dynamic           quantize_dynamic (QInt8 weights)
  int4              MatMulNBitsQuantizer (4 bits, block 32; Gather too on some: GatherBlockQuantized)
  fp16, fp16_io     onnxruntime.transformers.float16, keep_io_types=True (fp16) and False (fp16_io)
  decoder_past      a small decoder written here, exported by TorchScript with past key/values as inputs: symbols
                    batch, seq (current), past_seq, and total_seq for the attention mask over past + current
                    (also through the optimizer)
  genai             onnxruntime_genai.models.builder (-e cpu, fp32 and int4) on random-init Llama, Qwen2, Mistral,
                    Phi-3, Gemma and Phi configs

Writes OUT_DIR/manifest.json: {"models": [...], "failures": [...], "seconds", "versions", "python"}. Each model
entry has file, name, family, tool (as "exporter", which scripts/torch_models.py reads), source, opset, inputs
(name, dtype, shape with symbols, fill) and two bindings of its symbols. A step that fails is listed under
"failures" and the script goes on. Exit status: 0 when at least MIN_MODELS models from MIN_TOOLS tools were made.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
import warnings

MIN_MODELS = 60
MIN_TOOLS = 8
SEED = 0
VOCAB = 100

ELEM_DTYPE = {1: "float32", 10: "float16", 7: "int64", 6: "int32", 9: "bool", 2: "uint8", 3: "int8"}


# ------------------------------------------------------------------------------------------ manifest

def input_specs(model):
    """Input specs from a model's graph inputs: dims as sizes or symbols, fills by name and type."""
    inits = {t.name for t in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_param if d.dim_param else d.dim_value for d in tt.shape.dim]
        dtype = ELEM_DTYPE.get(tt.elem_type, f"elem{tt.elem_type}")
        name = vi.name.lower()
        if "mask" in name:
            fill = ["ones"]
        elif "position" in name:
            fill = ["int", 0, 16]
        elif dtype in ("int64", "int32"):
            fill = ["int", 0, VOCAB]
        else:
            fill = ["normal"]
        specs.append({"name": vi.name, "dtype": dtype, "shape": dims, "fill": fill})
    return specs


def entry(path, name, family, tool, source, bindings, notes=""):
    import onnx
    m = onnx.load(path, load_external_data=False)
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
    domains = sorted({n.domain or "ai.onnx" for n in m.graph.node})
    return {"file": os.path.basename(path), "name": name, "family": family, "exporter": tool, "tool": tool,
            "source": source, "opset": opset, "stripped": False, "inputs": input_specs(m), "bindings": bindings,
            "nodes": len(m.graph.node), "domains": domains, "notes": notes}


def feeds(inputs, binding, seed=SEED):
    import numpy as np
    rng = np.random.default_rng(seed)
    out = {}
    for spec in inputs:
        shape = [binding[d] if isinstance(d, str) else d for d in spec["shape"]]
        kind = spec["fill"][0]
        if kind == "int":
            out[spec["name"]] = rng.integers(spec["fill"][1], spec["fill"][2], size=shape).astype(spec["dtype"])
        elif kind == "ones":
            out[spec["name"]] = np.ones(shape, dtype=spec["dtype"])
        else:
            out[spec["name"]] = rng.standard_normal(shape).astype(spec["dtype"])
    return out


# ------------------------------------------------------------------------------------------ tools

def optimizer(src, out, model_type, opt_level, attention=True, mha=False):
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model
    opts = FusionOptions(model_type)
    opts.enable_attention = attention
    opts.use_multi_head_attention = mha
    # Every model of the torch corpus these come from has hidden size 32 and 2 heads (Swin: detected).
    heads, hidden = (0, 0) if model_type == "swin" else (2, 32)
    m = optimize_model(src, model_type=model_type, num_heads=heads, hidden_size=hidden, opt_level=opt_level,
                       optimization_options=opts, use_gpu=False)
    m.save_model_to_file(out)


def offline(src, out, level):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                   "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                                   "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
    so.optimized_model_filepath = out
    so.log_severity_level = 3
    ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


class Reader:
    """A seeded random calibration reader: four batches of inputs at the export binding."""

    def __init__(self, inputs, binding):
        self.batches = iter([feeds(inputs, binding, seed=SEED + i) for i in range(4)])

    def get_next(self):
        return next(self.batches, None)

    def rewind(self):
        pass


def static(src, out, inputs, binding, fmt):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class R(Reader, CalibrationDataReader):
        pass

    # onnxruntime's pre-processing (shape inference and basic optimization), as its quantization guide asks.
    from onnxruntime.quantization.shape_inference import quant_pre_process
    pre = out + ".pre.onnx"
    quant_pre_process(src, pre, skip_symbolic_shape=True)
    try:
        quantize_static(pre, out, R(inputs, binding),
                        quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=False)
    finally:
        if os.path.exists(pre):
            os.remove(pre)


def dynamic(src, out, symbolic=False):
    """quantize_dynamic; `symbolic`: after onnxruntime's symbolic shape inference (quant_pre_process), which a model
    with contrib ops needs (onnx's own shape inference gives their outputs no type)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process
    if not symbolic:
        quantize_dynamic(src, out, weight_type=QuantType.QInt8)
        return
    pre = out + ".pre.onnx"
    quant_pre_process(src, pre, skip_optimization=True, auto_merge=True)
    try:
        quantize_dynamic(pre, out, weight_type=QuantType.QInt8)
    finally:
        if os.path.exists(pre):
            os.remove(pre)


def int4(src, out, gather=False):
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer
    kw = {}
    if gather:
        kw["algo_config"] = DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True,
                                                         op_types_to_quantize=("MatMul", "Gather"),
                                                         quant_axes=(("MatMul", 0), ("Gather", 1)))
    q = MatMulNBitsQuantizer(onnx.load(src), block_size=32, is_symmetric=True, **kw)
    q.process()
    q.model.save_model_to_file(out, False)


def fp16(src, out, keep_io):
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16
    m = convert_float_to_float16(onnx.load(src), keep_io_types=keep_io)
    onnx.save(m, out)


# ------------------------------------------------------------------------------- decoder with past

def past_decoder(out, rms):
    """A two-layer decoder with past key/values as inputs, exported by TorchScript at opset 17."""
    import torch
    from torch import nn

    class Norm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return self.w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    class Decoder(nn.Module):
        def __init__(self, d=32, heads=2, layers=2):
            super().__init__()
            self.heads, self.hd = heads, d // heads
            self.emb = nn.Embedding(VOCAB, d)
            self.pos = nn.Embedding(64, d)
            norm = (lambda: Norm(d)) if rms else (lambda: nn.LayerNorm(d))
            self.n1 = nn.ModuleList([norm() for _ in range(layers)])
            self.n2 = nn.ModuleList([norm() for _ in range(layers)])
            self.qkv = nn.ModuleList([nn.Linear(d, 3 * d) for _ in range(layers)])
            self.proj = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])
            self.up = nn.ModuleList([nn.Linear(d, 37) for _ in range(layers)])
            self.down = nn.ModuleList([nn.Linear(37, d) for _ in range(layers)])
            self.head = nn.Linear(d, VOCAB)

        def forward(self, input_ids, attention_mask, *past):
            b, s = input_ids.shape
            p = past[0].shape[2]
            x = self.emb(input_ids) + self.pos(torch.arange(p, p + s, device=input_ids.device))
            m = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
            causal = torch.ones(s, p + s, dtype=torch.bool).tril(p)
            m = m + (~causal).to(x.dtype) * -10000.0
            presents = []
            for i in range(len(self.qkv)):
                h = self.n1[i](x)
                q, k, v = self.qkv[i](h).split(self.heads * self.hd, dim=-1)
                q, k, v = (t.reshape(b, s, self.heads, self.hd).transpose(1, 2) for t in (q, k, v))
                k = torch.cat([past[2 * i], k], dim=2)
                v = torch.cat([past[2 * i + 1], v], dim=2)
                presents += [k, v]
                a = torch.softmax(q @ k.transpose(-1, -2) / self.hd ** 0.5 + m, dim=-1) @ v
                x = x + self.proj[i](a.transpose(1, 2).reshape(b, s, self.heads * self.hd))
                x = x + self.down[i](torch.nn.functional.gelu(self.up[i](self.n2[i](x))))
            return (self.head(x), *presents)

    torch.manual_seed(SEED)
    model = Decoder().eval()
    b, s, p = 2, 3, 4
    ids = torch.randint(0, VOCAB, (b, s))
    mask = torch.ones(b, p + s, dtype=torch.int64)
    past = [torch.randn(b, 2, p, 16) for _ in range(4)]
    names = ["input_ids", "attention_mask"] + [f"past_{i // 2}_{'kv'[i % 2]}" for i in range(4)]
    outs = ["logits"] + [f"present_{i // 2}_{'kv'[i % 2]}" for i in range(4)]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total_seq"},
            "logits": {0: "batch", 1: "seq"}}
    axes.update({n: {0: "batch", 2: "past_seq"} for n in names[2:]})
    axes.update({n: {0: "batch", 2: "total_seq"} for n in outs[1:]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids, mask, *past), out, dynamo=False, opset_version=17, input_names=names,
                          output_names=outs, dynamic_axes=axes, do_constant_folding=True)


def eager_export(name, out):
    """BERT or ViT from the same small configs as the torch corpus, with transformers' eager attention (the
    default, SDPA, exports a graph the optimizer's attention fusion does not match), by TorchScript at opset 17:
    what the optimizer fuses into Attention, MultiHeadAttention and EmbedLayerNormalization."""
    import torch
    import transformers
    torch.manual_seed(SEED)
    if name == "bert":
        cfg = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=37, max_position_embeddings=64, attn_implementation="eager")
        model = transformers.BertModel(cfg).eval()
        args = (torch.randint(0, VOCAB, (2, 8)), torch.ones(2, 8, dtype=torch.int64))
        names, axes = ["input_ids", "attention_mask"], {"input_ids": {0: "batch", 1: "seq"},
                                                       "attention_mask": {0: "batch", 1: "seq"}}
    else:
        cfg = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=37, attn_implementation="eager")
        model = transformers.ViTModel(cfg).eval()
        args = (torch.randn(4, 3, 32, 32),)
        names, axes = ["pixel_values"], {"pixel_values": {0: "batch"}}

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            return self.model(**dict(zip(names, inputs)))[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Wrapped().eval(), args, out, dynamo=False, opset_version=17, input_names=names,
                          output_names=["output"], dynamic_axes={**axes, "output": {0: "batch"}},
                          do_constant_folding=True)


EAGER = {"bert": [{"batch": 2, "seq": 7}, {"batch": 3, "seq": 11}], "vit": [{"batch": 2}, {"batch": 3}]}
# Optimizer runs on the eager exports: (name, model type, opt level, attention fusion, MultiHeadAttention).
EAGER_OPTIMIZED = [("bert", "bert", 1, True, False), ("bert", "bert", 2, True, False), ("bert", "bert", 1, True, True),
                   ("vit", "vit", 1, True, False)]


PAST_BINDINGS = [{"batch": 2, "seq": 3, "past_seq": 5, "total_seq": 8},
                 {"batch": 3, "seq": 1, "past_seq": 9, "total_seq": 10}]


# ------------------------------------------------------------------------------------- genai builder

GENAI = {
    "llama": ("Llama", "LlamaConfig", "LlamaForCausalLM", dict(num_key_value_heads=1)),
    "qwen2": ("Qwen2", "Qwen2Config", "Qwen2ForCausalLM", dict(num_key_value_heads=1)),
    "mistral": ("Mistral", "MistralConfig", "MistralForCausalLM", dict(num_key_value_heads=1, sliding_window=None)),
    "phi3": ("Phi-3", "Phi3Config", "Phi3ForCausalLM", dict(num_key_value_heads=2, pad_token_id=0,
                                                            original_max_position_embeddings=64)),
    "gemma": ("Gemma", "GemmaConfig", "GemmaForCausalLM", dict(num_key_value_heads=1, head_dim=16)),
    # Rotary over the whole head: onnxruntime's GroupQueryAttention needs a cos cache of a multiple of 8 columns.
    "phi": ("Phi", "PhiConfig", "PhiForCausalLM", dict(partial_rotary_factor=1.0)),
}


def genai_checkpoint(kind, folder):
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers
    _, cfg_name, cls_name, extra = GENAI[kind]
    torch.manual_seed(SEED)
    cfg = getattr(transformers, cfg_name)(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                          intermediate_size=37, max_position_embeddings=64, bos_token_id=1,
                                          eos_token_id=2, **extra)
    getattr(transformers, cls_name)(cfg).save_pretrained(folder)
    vocab = {f"t{i}": i for i in range(VOCAB)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", bos_token="t1", eos_token="t2",
                                         pad_token="t0").save_pretrained(folder)


def genai(kind, precision, work, out):
    folder = os.path.join(work, f"hf-{kind}")
    if not os.path.isdir(folder):
        genai_checkpoint(kind, folder)
    dest = os.path.join(work, f"genai-{kind}-{precision}")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", folder, "-m", folder, "-o", dest,
           "-p", precision, "-e", "cpu", "-c", os.path.join(work, "hf-cache")]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"builder exited {p.returncode}: {p.stderr[-1500:]}")
    import onnx
    m = onnx.load(os.path.join(dest, "model.onnx"))  # weights are in model.onnx.data beside it: load them
    onnx.save(m, out)


def genai_bindings(kind):
    head = 16
    # GroupQueryAttention on the CPU takes a batch of one when a prompt (sequence_length > 1) follows a past.
    return [{"batch_size": 1, "sequence_length": 3, "past_sequence_length": 5, "total_sequence_length": 8,
             "kv_cache_dim": head},
            {"batch_size": 2, "sequence_length": 1, "past_sequence_length": 9, "total_sequence_length": 10,
             "kv_cache_dim": head}]


# ------------------------------------------------------------------------------------------- plan

# (tool, source name in the torch corpus, arguments): every model made from a torch export (torchscript17).
OPTIMIZED = [("bert", "bert", 0, True), ("bert", "bert", 1, True), ("bert", "bert", 2, True),
             ("bert", "bert", 1, False), ("distilbert", "bert", 1, True), ("roberta", "bert", 2, True),
             ("gpt2", "gpt2", 0, True), ("gpt2", "gpt2", 1, True), ("gpt2", "gpt2", 2, True),
             ("gpt2", "gpt2", 1, False), ("vit", "vit", 1, True), ("vit", "vit", 2, True),
             ("t5", "t5", 1, True), ("llama", "t5", 1, True), ("qwen2", "t5", 1, True),
             ("swin", "swin", 1, True), ("clip_text", "clip", 1, True), ("bart", "bart", 1, True)]
OFFLINE = ["resnet", "mobilenet_v3", "efficientnet", "convnext", "bert", "gpt2"]
STATIC = ["resnet", "mobilenet_v2", "mobilenet_v3", "vit", "bert"]
DYNAMIC = ["bert", "distilbert", "gpt2", "llama"]
INT4 = [("bert", False), ("gpt2", False), ("qwen2", False), ("phi", False)]
FP16 = [("bert", True), ("resnet", True), ("gpt2", True), ("vit", True), ("bert", False), ("resnet", False)]
# Tools applied to models of this corpus (a deployment pipeline of two steps): (tool, input file, function).
CHAINED = [("dynamic", "bert.optimizer_bert_opt1.onnx", lambda p, o: dynamic(p, o, True)),
           ("dynamic", "gpt2.optimizer_gpt2_opt1.onnx", lambda p, o: dynamic(p, o, True)),
           ("fp16", "bert.optimizer_bert_opt1.onnx", lambda p, o: fp16(p, o, True)),
           ("fp16", "gpt2.optimizer_gpt2_opt2.onnx", lambda p, o: fp16(p, o, True)),
           ("dynamic", "bert_eager.optimizer_bert_opt1.onnx", lambda p, o: dynamic(p, o, True)),
           ("fp16", "bert_eager.optimizer_bert_opt1.onnx", lambda p, o: fp16(p, o, True)),
           ("int4", "bert_eager.optimizer_bert_opt1.onnx", lambda p, o: int4(p, o)),
           ("int4", "llama.optimizer_t5_opt1.onnx", lambda p, o: int4(p, o)),
           # Embeddings too (GatherBlockQuantized): on the fused model, whose opset the quantizer may raise
           # (the unfused one keeps a ReduceMean with an `axes` attribute, which is then invalid).
           ("int4_gather", "qwen2.optimizer_t5_opt1.onnx", lambda p, o: int4(p, o, True)),
           ("int4", "decoder_rms.optimizer_t5_opt1.onnx", lambda p, o: int4(p, o))]
GENAI_BUILDS = [("llama", "fp32"), ("llama", "int4"), ("qwen2", "fp32"), ("qwen2", "int4"), ("mistral", "fp32"),
                ("phi3", "fp32"), ("phi3", "int4"), ("gemma", "fp32"), ("phi", "fp32")]


def plan(torch_models):
    """Steps: (tool, output file, family, source description, bindings, function making the file)."""
    with open(os.path.join(torch_models, "manifest.json"), encoding="utf-8") as f:
        tm = {e["file"]: e for e in json.load(f)["models"]}

    def src(name):
        e = tm.get(f"{name}.torchscript17.onnx")
        return (os.path.join(torch_models, e["file"]), e) if e else (None, None)

    steps = []
    for name, mtype, level, attention in OPTIMIZED:
        path, e = src(name)
        if e:
            suffix = f"opt{level}" + ("" if attention else "_noattn")
            steps.append(("optimizer", f"{name}.optimizer_{mtype}_{suffix}.onnx", e, path, e["bindings"],
                          lambda o, p=path, t=mtype, l=level, a=attention: optimizer(p, o, t, l, a)))
    for name in OFFLINE:
        path, e = src(name)
        for level in ("basic", "extended", "all"):
            if e:
                steps.append((f"ort_{level}", f"{name}.ort_{level}.onnx", e, path, e["bindings"],
                              lambda o, p=path, l=level: offline(p, o, l)))
    for name in STATIC:
        path, e = src(name)
        for fmt in ("qdq", "qoperator"):
            if e:
                steps.append((fmt, f"{name}.{fmt}.onnx", e, path, e["bindings"],
                              lambda o, p=path, i=e["inputs"], b=e["export_binding"], f=fmt: static(p, o, i, b, f)))
    for name in DYNAMIC:
        path, e = src(name)
        if e:
            steps.append(("dynamic", f"{name}.dynamic.onnx", e, path, e["bindings"], lambda o, p=path: dynamic(p, o)))
    for name, gather in INT4:
        path, e = src(name)
        if e:
            steps.append(("int4", f"{name}.int4{'_gather' if gather else ''}.onnx", e, path, e["bindings"],
                          lambda o, p=path, g=gather: int4(p, o, g)))
    for name, keep in FP16:
        path, e = src(name)
        if e:
            tool = "fp16" if keep else "fp16_io"
            steps.append((tool, f"{name}.{tool}.onnx", e, path, e["bindings"],
                          lambda o, p=path, k=keep: fp16(p, o, k)))
    return steps


# ------------------------------------------------------------------------------------------- main

def run_step(out_dir, entries, failures, tool, fname, family, name, source, bindings, make, notes=""):
    path = os.path.join(out_dir, fname)
    t = time.monotonic()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make(path)
        e = entry(path, name, family, tool, source, bindings, notes)
    except Exception as ex:  # noqa: BLE001  (recorded in the manifest; the other steps go on)
        failures.append({"file": fname, "tool": tool, "name": name, "family": family,
                         "error": f"{type(ex).__name__}: {str(ex)[:500]}", "traceback": traceback.format_exc()[-3000:]})
        if os.path.exists(path):
            os.remove(path)
        print(f"export_deploy.py: {fname}: FAILED {type(ex).__name__}: {str(ex)[:200]}", file=sys.stderr, flush=True)
        return
    e["seconds"] = round(time.monotonic() - t, 1)
    entries.append(e)
    print(f"export_deploy.py: {fname}: {e['nodes']} nodes, domains {e['domains']} ({e['seconds']} s)",
          file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("torch_models")
    ap.add_argument("out_dir")
    ap.add_argument("--only", action="append", default=[], help="make only the models of these tools")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    work = os.path.join(a.out_dir, ".work")
    os.makedirs(work, exist_ok=True)
    t = time.monotonic()
    entries, failures = [], []
    wanted = (lambda tool: not a.only or tool in a.only or tool.split("_")[0] in a.only)
    for tool, fname, e, path, bindings, make in plan(a.torch_models):
        if wanted(tool):
            run_step(a.out_dir, entries, failures, tool, fname, e["family"], e["name"], e["file"], bindings, make)
    if wanted("decoder_past"):
        for rms in (False, True):
            name = "decoder_rms" if rms else "decoder_ln"
            fname = f"{name}.decoder_past.onnx"
            run_step(a.out_dir, entries, failures, "decoder_past", fname, "Decoder-past", name, "export_deploy.py",
                     PAST_BINDINGS, lambda o, r=rms: past_decoder(o, r))
            src = os.path.join(a.out_dir, fname)
            if os.path.exists(src):
                mtype = "t5" if rms else "gpt2"
                run_step(a.out_dir, entries, failures, "optimizer", f"{name}.optimizer_{mtype}_opt1.onnx",
                         "Decoder-past", name, fname, PAST_BINDINGS, lambda o, p=src, m=mtype: optimizer(p, o, m, 1))
    if wanted("optimizer"):
        for name, bindings in EAGER.items():
            fname = f"{name}_eager.torchscript17.onnx"
            src = os.path.join(work, fname)
            try:
                eager_export(name, src)
            except Exception as ex:  # noqa: BLE001  (recorded; the other steps go on)
                failures.append({"file": fname, "tool": "optimizer", "name": name, "family": name,
                                 "error": f"{type(ex).__name__}: {str(ex)[:500]}"})
                continue
            for n, mtype, level, attention, mha in EAGER_OPTIMIZED:
                if n == name:
                    suffix = f"opt{level}" + ("_mha" if mha else "")
                    run_step(a.out_dir, entries, failures, "optimizer", f"{name}_eager.optimizer_{mtype}_{suffix}.onnx",
                             name, f"{name}_eager", "export_deploy.py (eager attention)", bindings,
                             lambda o, p=src, t=mtype, l=level, at=attention, m=mha: optimizer(p, o, t, l, at, m))
    made = {e["file"]: e for e in entries}
    for tool, src_file, make in CHAINED:
        e = made.get(src_file)
        if e and wanted(tool):
            fname = src_file[:-len(".onnx")] + f".{tool}.onnx"
            tool = tool.split("_")[0] if tool.startswith("int4") else tool
            run_step(a.out_dir, entries, failures, tool, fname, e["family"], e["name"], src_file, e["bindings"],
                     lambda o, p=os.path.join(a.out_dir, src_file), m=make: m(p, o))
    if wanted("genai"):
        for kind, precision in GENAI_BUILDS:
            run_step(a.out_dir, entries, failures, "genai", f"{kind}.genai_{precision}.onnx", GENAI[kind][0], kind,
                     f"onnxruntime_genai.models.builder -p {precision} -e cpu", genai_bindings(kind),
                     lambda o, k=kind, p=precision: genai(k, p, work, o))
    shutil.rmtree(work, ignore_errors=True)
    entries.sort(key=lambda e: e["file"])
    tools = sorted({e["tool"] for e in entries})
    manifest = {"models": entries, "failures": failures, "seconds": round(time.monotonic() - t, 1), "tools": tools,
                "versions": versions(), "python": sys.executable}
    with open(os.path.join(a.out_dir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    print(f"export_deploy.py: {len(entries)} models from {len(tools)} tools, {len(failures)} failed steps in "
          f"{manifest['seconds']} s", file=sys.stderr)
    for fl in failures:
        print(f"export_deploy.py: failed: {fl['file']}: {fl['error'][:300]}", file=sys.stderr)
    if a.only:
        return 0
    if len(entries) < MIN_MODELS or len(tools) < MIN_TOOLS:
        print(f"export_deploy.py: error: {len(entries)} models from {len(tools)} tools (at least {MIN_MODELS} from "
              f"{MIN_TOOLS} needed)", file=sys.stderr)
        return 1
    return 0


def versions():
    import onnx
    import onnxruntime
    import onnxruntime_genai
    import torch
    import transformers
    return {"onnxruntime": onnxruntime.__version__, "onnxruntime-genai": onnxruntime_genai.__version__,
            "torch": torch.__version__, "transformers": transformers.__version__, "onnx": onnx.__version__}


if __name__ == "__main__":
    sys.exit(main())
