#!/usr/bin/env bash
# Builds the PyTorch export corpus of issue 12 (corpus/README.md, "PyTorch export corpus") and prints the absolute
# path of its models directory as the only line on stdout.
#
#   1. a venv with pinned torch, torchvision, transformers, onnxscript, onnx, onnxruntime, numpy, sympy and their
#      whole dependency closure (PINS below; PyPI's Linux torch pulls its CUDA libraries, ~6 GB, once);
#   2. corpus/export_torch.py run in it: small random-init models exported by TorchScript (opsets 14, 17) and
#      dynamo (opset 18, plus copies with value_info stripped), with OUT/manifest.json describing them.
#
# Both live in a cache OUTSIDE the clone, so fresh clones (CI) on the same machine reuse them:
#   $root/torch-venv-<hash of PINS>/         the venv (scripts/torch_models.py runs with its bin/python)
#   $root/torch-<hash of PINS + export script>/models/
# with $root = ${ONNX_BCAST_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-bcast}. Editing the export script
# re-exports (minutes) without reinstalling; changing a pin reinstalls. Old hashes are left in place.
#
#   ONNX_BCAST_TORCH_CACHE  the cache root above
#   ONNX_BCAST_PYTHON       interpreter that creates the venv (default: python3; torch needs >= 3.10)
#
# Idempotent: a marker written last holds the fingerprint; when it matches and the manifest's files are there the
# path is printed at once, without starting Python. Concurrent callers wait on a lock (flock). Any failure exits
# non-zero with a message on stderr; nothing but the path goes to stdout. No model is ever committed.
set -euo pipefail

# The complete dependency closure, so the install is the same on every machine (pip resolves nothing new).
PINS="torch==2.15.0 torchvision==0.29.2 transformers==5.23.0 onnxscript==0.7.2 onnx==1.22.0 onnxruntime==1.31.1 \
numpy==2.4.6 sympy==1.14.0 onnx-ir==1.1.0 ml_dtypes==0.6.0 protobuf==7.36.2 packaging==26.3 \
typing_extensions==4.16.0 filelock==4.2.11 fsspec==2026.9.0 Jinja2==3.1.6 MarkupSafe==3.0.4 mpmath==1.3.0 \
networkx==3.6.1 setuptools==84.2.1 triton==3.9.0 pillow==13.0.0 flatbuffers==25.12.19 huggingface_hub==2.4.0 \
hf-xet==1.8.0 PyYAML==6.0.3 regex==2026.11.15 safetensors==0.8.0 tokenizers==0.23.3 tqdm==4.70.1 \
annotated-doc==0.0.7 annotated-types==0.8.0 anyio==4.16.0 click==8.5.1 h11==0.16.0 httpcore2==2.16.2 \
httpx2==2.16.2 idna==3.20 markdown-it-py==4.3.0 mdurl==0.1.2 pydantic==2.14.3 pydantic_core==2.50.4 \
Pygments==2.21.0 rich==15.0.0 shellingham==1.5.4 truststore==0.10.5 typer==0.29.2 typing-inspection==0.4.5 \
cuda-bindings==13.5.0 cuda-pathfinder==1.9.0 cuda-toolkit==13.2.2 nvidia-cublas==13.4.1.3 \
nvidia-cuda-cccl==13.3.5.0.6 nvidia-cuda-cupti==13.2.86 nvidia-cuda-nvrtc==13.2.86 nvidia-cuda-runtime==13.2.86 \
nvidia-cudnn-cu13==9.26.0.51 nvidia-cufft==12.2.0.57 nvidia-cufile==1.17.1.22 nvidia-cusolver==12.2.0.11 \
nvidia-cusparse==12.7.10.12 nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.30.7 nvidia-nvjitlink==13.5.37 \
nvidia-nvshmem-cu13==3.7.2 nvidia-nvtx==13.2.86"

die() { echo "corpus/torch_fetch.sh: error: $*" >&2; exit 1; }
say() { echo "corpus/torch_fetch.sh: $*" >&2; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
exporter="$repo/corpus/export_torch.py"
[[ -f "$exporter" ]] || die "missing $exporter"
command -v sha256sum >/dev/null 2>&1 || die "sha256sum not found"

root="${ONNX_BCAST_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-bcast}"
mkdir -p "$root" || die "cannot create cache directory $root"
root="$(cd "$root" && pwd -P)"
pin_hash="$(printf '%s\n' "$PINS" | sha256sum | cut -c1-12)"
corpus_hash="$({ printf '%s\n' "$PINS"; cat "$exporter"; } | sha256sum | cut -c1-12)"
venv="$root/torch-venv-$pin_hash"
vmarker="$venv/.onnx-bcast-pins"
dir="$root/torch-$corpus_hash"
models="$dir/models"
marker="$dir/.complete"

# Every file the manifest lists is there (a plain grep: no Python start-up on the fast path).
files_present() {
    [[ -f "$models/manifest.json" ]] || return 1
    local f n=0
    while IFS= read -r f; do
        [[ -f "$models/$f" ]] || return 1
        n=$((n + 1))
    done < <(grep -o '"file": "[^"]*"' "$models/manifest.json" | sed 's/^"file": "//; s/"$//')
    [[ $n -gt 0 ]]
}
ready() {
    [[ -f "$marker" && "$(cat "$marker")" == "$corpus_hash" ]] || return 1
    [[ -f "$vmarker" && "$(cat "$vmarker")" == "$PINS" ]] || return 1
    files_present || return 1
    printf '%s\n' "$models"
}
ready && exit 0

exec 9>"$root/.torch.lock" || die "cannot open lock file $root/.torch.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $root/.torch.lock"
fi
ready && exit 0   # another caller finished while we waited

start=$SECONDS
# 1. The venv, reinstalled from scratch when the pins change.
if [[ ! -f "$vmarker" || "$(cat "$vmarker")" != "$PINS" ]]; then
    python="${ONNX_BCAST_PYTHON:-python3}"
    command -v "$python" >/dev/null 2>&1 || die "python interpreter '$python' not found (set ONNX_BCAST_PYTHON)"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
        || die "'$python' is older than Python 3.10, which torch needs (set ONNX_BCAST_PYTHON)"
    say "installing the torch venv $venv (one-time: ~6 GB from PyPI, several minutes)"
    rm -rf "$venv" || die "cannot remove stale venv $venv"
    "$python" -m venv "$venv" >&2 || die "'$python -m venv $venv' failed"
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input $PINS >&2 \
        || die "pip install of the torch pins failed (see pip's output above)"
    "$venv/bin/python" -c "import torch, torchvision, transformers, onnxscript, onnx, onnxruntime, numpy, sympy" >&2 \
        || die "the torch venv does not import its packages"
    printf '%s' "$PINS" > "$vmarker"   # written last: the install completed
    say "venv installed in $((SECONDS - start)) s"
fi

# 2. The export, into a fresh directory renamed into place.
t=$SECONDS
rm -f "$marker"
mkdir -p "$dir" || die "cannot create $dir"
rm -rf "$models.tmp" "$models"
say "exporting the models into $models (a few minutes)"
"$venv/bin/python" "$exporter" "$models.tmp" >&2 || die "corpus/export_torch.py failed (see above)"
mv "$models.tmp" "$models" || die "cannot move $models.tmp to $models"
printf '%s' "$corpus_hash" > "$marker"   # written last: its presence means the corpus is complete
ready >/dev/null || die "the corpus is incomplete after the export (a file the manifest lists is missing)"
say "done in $((SECONDS - start)) s (export $((SECONDS - t)) s): $(grep -c '"file": ' "$models/manifest.json") models, $(du -sh "$models" | cut -f1) under $models"
printf '%s\n' "$models"
