#!/usr/bin/env bash
# Fetches the ONNX backend test data (shipped inside the `onnx` wheel) and the reference executor
# (onnxruntime) into a private virtualenv, and prints the absolute path of the wheel's
# onnx/backend/test/data directory as the only line on stdout.
#
#   ONNX_BCAST_CACHE  cache directory (default: <repo>/.cache); the venv is $ONNX_BCAST_CACHE/venv
#   ONNX_BCAST_PYTHON python interpreter used to create the venv (default: python3)
#
# Idempotent: when the venv holds the pinned versions (recorded in a marker file written only after a
# successful install) it prints the path and exits at once. Changing a pin below reinstalls from scratch.
# Any failure exits non-zero with a message on stderr; nothing but the path ever goes to stdout.
set -euo pipefail

PINS="onnx==1.22.0 onnxruntime==1.31.1 numpy==2.4.6"

die() { echo "scripts/testdata.sh: error: $*" >&2; exit 1; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cache="${ONNX_BCAST_CACHE:-$repo/.cache}"
mkdir -p "$cache" || die "cannot create cache directory $cache"
cache="$(cd "$cache" && pwd -P)"
venv="$cache/venv"
marker="$venv/.onnx-bcast-pins"
datafile="$venv/.onnx-bcast-data-dir"

# Fast path: no lock, no Python start-up.
ready() {
    [[ -f "$marker" && -f "$datafile" ]] || return 1
    [[ "$(cat "$marker")" == "$PINS" ]] || return 1
    local data
    data="$(cat "$datafile")"
    [[ -d "$data/node" ]] || return 1
    printf '%s\n' "$data"
}
ready && exit 0

# Slow path: serialize concurrent callers (parallel test binaries, two terminals) on a lock file.
exec 9>"$cache/.venv.lock" || die "cannot open lock file $cache/.venv.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $cache/.venv.lock"
fi
ready && exit 0   # someone else finished the install while we waited

python="${ONNX_BCAST_PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || die "python interpreter '$python' not found (set ONNX_BCAST_PYTHON)"

echo "scripts/testdata.sh: installing $PINS into $venv (one-time, needs network access to PyPI)" >&2
rm -rf "$venv" || die "cannot remove stale venv $venv"
"$python" -m venv "$venv" >&2 || die "'$python -m venv $venv' failed"
vpy="$venv/bin/python"
[[ -x "$vpy" ]] || die "venv has no $vpy"
# shellcheck disable=SC2086
"$vpy" -m pip install --quiet --disable-pip-version-check --no-input $PINS >&2 \
    || die "pip install $PINS failed (see pip's output above)"

data="$("$vpy" - <<'PY'
import os, sys
import onnx, onnxruntime, numpy  # all three must import
d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
missing = [s for s in ("node", "simple", "pytorch-converted", "pytorch-operator") if not os.path.isdir(os.path.join(d, s))]
if missing:
    sys.exit(f"onnx {onnx.__version__} wheel has no backend test data folders {missing} under {d}")
print(os.path.realpath(d))
PY
)" || die "the installed packages do not import, or the wheel lacks the backend test data (see above)"
[[ -n "$data" && -d "$data/node" ]] || die "backend test data directory '$data' is missing"

count="$(find "$data" -name model.onnx | wc -l)"
[[ "$count" -gt 1000 ]] || die "only $count model.onnx files under $data; the onnx wheel looks incomplete"

printf '%s\n' "$data" > "$datafile"
printf '%s' "$PINS" > "$marker"   # written last: its presence means the install completed
echo "scripts/testdata.sh: done, $count backend models under $data" >&2
printf '%s\n' "$data"
