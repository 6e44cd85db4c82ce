#!/usr/bin/env bash
# Builds the deployment corpus of issue 24 (corpus/README.md, "Deployment corpus") and prints the absolute path of
# its models directory as the only line on stdout.
#
#   1. the PyTorch export corpus (corpus/torch_fetch.sh: its venv and its models, built or found cached);
#   2. a small venv beside it that sees the torch venv's packages (a .pth file naming its site-packages) and adds
#      the pinned onnxruntime-genai wheel (PINS below; its requirements, numpy and onnxruntime, are the torch venv's);
#   3. corpus/export_deploy.py run in it: onnxruntime's own tools (transformers optimizer, offline optimization,
#      static/dynamic/int4 quantization, fp16), a decoder with past key/values, and onnxruntime-genai's model
#      builder on random-init configs saved to a local folder, with OUT/manifest.json describing every model.
#
# Everything lives in the cache OUTSIDE the clone that corpus/torch_fetch.sh uses, so fresh clones (CI) on the same
# machine reuse it:
#   $root/deploy-venv-<hash of PINS and the torch venv's path>/
#   $root/deploy-<hash of PINS, export_deploy.py and the torch corpus folder>/models/
# with $root = ${ONNX_BCAST_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-bcast}. Old hashes are left in place.
#
# Idempotent: a marker written last holds the fingerprint; when it matches and the manifest's files are there the
# path is printed at once, without starting Python. Concurrent callers wait on a lock (flock). Any failure exits
# non-zero with a message on stderr; nothing but the path goes to stdout. No model is ever committed.
set -euo pipefail

PINS="onnxruntime-genai==0.18.0"

die() { echo "corpus/deploy_fetch.sh: error: $*" >&2; exit 1; }
say() { echo "corpus/deploy_fetch.sh: $*" >&2; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
exporter="$repo/corpus/export_deploy.py"
[[ -f "$exporter" ]] || die "missing $exporter"
command -v sha256sum >/dev/null 2>&1 || die "sha256sum not found"

torch_models="$(bash "$repo/corpus/torch_fetch.sh")" || die "corpus/torch_fetch.sh failed (see above)"
[[ -f "$torch_models/manifest.json" ]] || die "$torch_models has no manifest.json"
torch_python="$(grep -o '"python": "[^"]*"' "$torch_models/manifest.json" | sed 's/^"python": "//; s/"$//')"
[[ -x "$torch_python" ]] || die "the torch corpus names python '$torch_python', which is not there"
torch_venv="$(cd "$(dirname "$torch_python")/.." && pwd -P)"

root="${ONNX_BCAST_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-bcast}"
mkdir -p "$root" || die "cannot create cache directory $root"
root="$(cd "$root" && pwd -P)"
venv_key="$(printf '%s\n%s\n' "$PINS" "$torch_venv")"
venv="$root/deploy-venv-$(printf '%s\n' "$venv_key" | sha256sum | cut -c1-12)"
vmarker="$venv/.onnx-bcast-pins"
corpus_hash="$({ printf '%s\n%s\n' "$venv_key" "$torch_models"; cat "$exporter"; } | sha256sum | cut -c1-12)"
dir="$root/deploy-$corpus_hash"
models="$dir/models"
marker="$dir/.complete"

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
    [[ -f "$vmarker" && "$(cat "$vmarker")" == "$venv_key" ]] || return 1
    files_present || return 1
    printf '%s\n' "$models"
}
ready && exit 0

exec 9>"$root/.deploy.lock" || die "cannot open lock file $root/.deploy.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $root/.deploy.lock"
fi
ready && exit 0   # another caller finished while we waited

start=$SECONDS
# 1. The venv: the torch venv's packages through a .pth file, plus the pinned wheels without dependencies.
if [[ ! -f "$vmarker" || "$(cat "$vmarker")" != "$venv_key" ]]; then
    say "making the deployment venv $venv"
    rm -rf "$venv" || die "cannot remove stale venv $venv"
    "$torch_python" -m venv --without-pip "$venv" >&2 || die "cannot create the venv $venv"
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    torch_site="$("$torch_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    printf '%s\n' "$torch_site" > "$site/torch-venv.pth"
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-deps $PINS >&2 \
        || die "pip install of $PINS failed (see pip's output above)"
    "$venv/bin/python" -c "import onnxruntime_genai, onnxruntime.transformers, onnxruntime.quantization, torch" >&2 \
        || die "the deployment venv does not import its packages"
    printf '%s' "$venv_key" > "$vmarker"   # written last: the install completed
fi

# 2. The models, into a fresh directory renamed into place.
t=$SECONDS
rm -f "$marker"
mkdir -p "$dir" || die "cannot create $dir"
rm -rf "$models.tmp" "$models"
say "making the deployment models into $models (a few minutes)"
nice -n 5 "$venv/bin/python" "$exporter" "$torch_models" "$models.tmp" >&2 || die "corpus/export_deploy.py failed (see above)"
mv "$models.tmp" "$models" || die "cannot move $models.tmp to $models"
printf '%s' "$corpus_hash" > "$marker"   # written last: its presence means the corpus is complete
ready >/dev/null || die "the corpus is incomplete after the export (a file the manifest lists is missing)"
say "done in $((SECONDS - start)) s (models $((SECONDS - t)) s): $(grep -c '"file": ' "$models/manifest.json") models, $(du -sh "$models" | cut -f1) under $models"
printf '%s\n' "$models"
