#!/usr/bin/env python3
"""Exports full-size transformers for bench/python_overhead.py: the library's default configs (BERT-base, 110 M
parameters; GPT-2 small, 124 M; T5-small, 60 M), random weights, seeded, nothing downloaded; TorchScript exporter
at opset 17 with dynamic batch and sequence, as a user's `torch.onnx.export` writes them.

    <torch venv>/bin/python bench/export_full_size.py OUT_DIR

(the venv corpus/torch_fetch.sh makes; `bench/run.sh python` runs it). Skips a model whose file exists.
"""

import sys
from pathlib import Path

import torch
import transformers

MODELS = {
    "bert_base": ("BertModel", "BertConfig", ["input_ids", "attention_mask"]),
    "gpt2_small": ("GPT2Model", "GPT2Config", ["input_ids", "attention_mask"]),
    "t5_small_encoder": ("T5EncoderModel", "T5Config", ["input_ids", "attention_mask"]),
}


class Wrapped(torch.nn.Module):
    """The model called by keyword, its last hidden state out (as corpus/export_torch.py wraps them)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    for name, (model_cls, config_cls, inputs) in MODELS.items():
        path = out / f"{name}.onnx"
        if path.exists():
            continue
        config = getattr(transformers, config_cls)()
        model = Wrapped(getattr(transformers, model_cls)(config)).eval()
        ids = torch.randint(0, 100, (2, 16))
        args = (ids, torch.ones_like(ids))
        dynamic = {i: {0: "batch", 1: "seq"} for i in inputs}
        with torch.no_grad():
            torch.onnx.export(model, args, str(path), input_names=inputs, dynamic_axes=dynamic, opset_version=17,
                              dynamo=False)
        print(f"{path}: {path.stat().st_size / 1e6:.0f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
