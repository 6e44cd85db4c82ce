#!/usr/bin/env bash
# Fetches ONNX's own shape-inference unit tests (tests/python/shape_inference_test.py, data_propagation_test.py and
# symbolic_shape_test.py of the onnx sdist on PyPI) and a venv with the onnx they were written for, and prints the
# absolute path of the folder holding both as the only line on stdout:
#
#   $dir/venv/           onnx ($ONNX_VERSION) with pytest and numpy: the whole dependency closure, pinned
#   $dir/tests/          the three test files, unpacked from the sdist as they are (never copied into the repository)
#
# with $dir = $root/onnx-tests-<hash of the pins>, $root = ${ONNX_BCAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-bcast}.
# scripts/onnx_shape_tests.py runs the tests in that venv and compares onnx-bcast with what they expect
# (tests/it/onnx_shape_tests.rs).
#
#   ONNX_BCAST_PYTHON  python interpreter used to create the venv (default: python3)
#
# Idempotent: a marker written last holds the pins; when it matches, the path is printed at once. Concurrent callers
# wait on a lock (flock). Any failure exits non-zero with a message on stderr; nothing but the path goes to stdout.
set -euo pipefail

ONNX_VERSION="1.23.2"
PINS="onnx==$ONNX_VERSION numpy==2.4.6 protobuf==7.36.2 ml_dtypes==0.6.0 typing_extensions==4.16.0 pytest==9.2.0 \
iniconfig==2.3.1 packaging==26.4 pluggy==1.7.0 Pygments==2.21.0"
TESTS="shape_inference_test.py data_propagation_test.py symbolic_shape_test.py"

die() { echo "scripts/onnx_tests.sh: error: $*" >&2; exit 1; }
say() { echo "scripts/onnx_tests.sh: $*" >&2; }

command -v sha256sum >/dev/null 2>&1 || die "sha256sum not found"
root="${ONNX_BCAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-bcast}"
mkdir -p "$root" || die "cannot create cache directory $root"
root="$(cd "$root" && pwd -P)"
dir="$root/onnx-tests-$(printf '%s\n%s\n' "$PINS" "$TESTS" | sha256sum | cut -c1-12)"
marker="$dir/.complete"

ready() {
    [[ -f "$marker" && "$(cat "$marker")" == "$PINS" ]] || return 1
    local t
    for t in $TESTS; do [[ -f "$dir/tests/$t" ]] || return 1; done
    printf '%s\n' "$dir"
}
ready && exit 0

exec 9>"$root/.onnx-tests.lock" || die "cannot open lock file $root/.onnx-tests.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $root/.onnx-tests.lock"
fi
ready && exit 0   # another caller finished while we waited

start=$SECONDS
python="${ONNX_BCAST_PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || die "python interpreter '$python' not found (set ONNX_BCAST_PYTHON)"
say "installing onnx $ONNX_VERSION and its tests into $dir (one-time, needs PyPI)"
rm -rf "$dir" || die "cannot remove stale $dir"
mkdir -p "$dir/download" "$dir/tests" || die "cannot create $dir"
"$python" -m venv "$dir/venv" >&2 || die "'$python -m venv $dir/venv' failed"
vpy="$dir/venv/bin/python"
# shellcheck disable=SC2086
"$vpy" -m pip install --quiet --disable-pip-version-check --no-input $PINS >&2 \
    || die "pip install $PINS failed (see pip's output above)"
# The sdist only (no build): the tests are plain files in it.
"$vpy" -m pip download --quiet --disable-pip-version-check --no-input --no-deps --no-binary onnx \
    "onnx==$ONNX_VERSION" -d "$dir/download" >&2 || die "pip download of the onnx $ONNX_VERSION sdist failed"
sdist="$dir/download/onnx-$ONNX_VERSION.tar.gz"
[[ -f "$sdist" ]] || die "pip download left no $sdist"
members=()
for t in $TESTS; do members+=("onnx-$ONNX_VERSION/tests/python/$t"); done
tar -xzf "$sdist" -C "$dir/tests" --strip-components=3 "${members[@]}" || die "the sdist lacks ${members[*]}"
rm -rf "$dir/download"
"$vpy" -c "import onnx, numpy, pytest; assert onnx.__version__ == '$ONNX_VERSION', onnx.__version__" >&2 \
    || die "the venv does not import onnx $ONNX_VERSION, numpy and pytest"
printf '%s' "$PINS" > "$marker"   # written last: its presence means the install completed
say "done in $((SECONDS - start)) s"
ready || die "incomplete after the install"
