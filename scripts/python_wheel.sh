#!/usr/bin/env bash
# The Python package's test: builds the wheel with maturin (from PyPI, pinned), installs it into a fresh venv with
# the pinned test requirements (binary wheels only: installing needs no compiler), and runs the pytest suite
# (python/tests) against the installed package. tests/it/python_package.rs runs this from `cargo test`.
#
#   ONNX_BCAST_CACHE   cache directory (default: <repo>/.cache): the maturin venv (the fresh test venv is in
#                      <repo>/target, one per clone)
#   ONNX_BCAST_BINARY  the Rust `onnx-bcast` binary the suite compares the wheel's command with (default: built
#                      here with `cargo build`; the cargo test passes its own)
#   PYTEST_ARGS        extra arguments for pytest (e.g. `-k expand`)
#
# Exit status: pytest's, or 1 when a step before it fails (with a message on stderr).
set -euo pipefail

# zig links the extension against glibc 2.17 symbols, so the wheel is manylinux2014: it installs on any Linux
# with glibc 2.17 or later, not only on systems as new as the build machine (manylinux_2_34 without it).
MATURIN_PINS="maturin==1.16.0 ziglang==0.17.1"
TEST_PINS="onnx==1.22.0 onnxruntime==1.31.1 numpy==2.4.6 pytest==9.2.0 dask==2026.8.0 distributed==2026.8.0 pre-commit==4.7.0"

die() { echo "scripts/python_wheel.sh: error: $*" >&2; exit 1; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cache="${ONNX_BCAST_CACHE:-$repo/.cache}"
mkdir -p "$cache"
py="${ONNX_BCAST_PYTHON:-python3}"

# The ONNX backend test data (and the venv that holds it) come from the shared script.
backend="$(bash "$repo/scripts/testdata.sh")" || die "cannot fetch the ONNX backend test data"

# maturin, in a venv of its own, kept while its pin holds.
tools="$cache/maturin-venv"
if [[ "$(cat "$tools/.pin" 2>/dev/null)" != "$MATURIN_PINS" ]]; then
    rm -rf "$tools"
    "$py" -m venv "$tools" || die "cannot create $tools"
    # shellcheck disable=SC2086
    "$tools/bin/pip" install -q --disable-pip-version-check $MATURIN_PINS || die "cannot install $MATURIN_PINS"
    echo "$MATURIN_PINS" > "$tools/.pin"
fi

# The wheel, into an empty folder so that exactly one file is there. Its own target folder: `cargo test` may hold
# the lock of the default one while this runs.
wheels="$repo/target/wheels"
rm -rf "$wheels"
echo "==> maturin build --release --locked --zig --compatibility manylinux2014" >&2
# maturin finds zig as `python3 -m ziglang` of the python3 first on PATH: the tools venv's.
PATH="$tools/bin:$PATH" CARGO_TARGET_DIR="$repo/target/wheel" "$tools/bin/maturin" build --release --locked --quiet \
    --zig --compatibility manylinux2014 --out "$wheels" --manifest-path "$repo/python/Cargo.toml" >&2 \
    || die "maturin build failed"
shopt -s nullglob
built=("$wheels"/*.whl)
[[ ${#built[@]} -eq 1 ]] || die "expected one wheel in $wheels, found ${#built[@]}"
wheel="${built[0]}"
echo "==> built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)" >&2

# A fresh venv every run, the wheel and the test requirements from binary wheels only. It lives in this clone's
# target folder, not in the shared cache: two clones testing at once (CI beside a developer's run) would otherwise
# install their wheels into one venv, each testing the other's package.
venv="$repo/target/wheel-test-venv"
"$py" -m venv --clear "$venv" || die "cannot create $venv"
"$venv/bin/pip" install -q --disable-pip-version-check --only-binary :all: "$wheel" $TEST_PINS \
    || die "cannot install the wheel and the test requirements"
echo "==> installed into a fresh venv: $("$venv/bin/pip" show onnx-bcast | grep -E '^(Name|Version)' | tr '\n' ' ')" >&2

binary="${ONNX_BCAST_BINARY:-}"
if [[ -z "$binary" ]]; then
    (cd "$repo" && cargo build --locked --quiet --bin onnx-bcast) || die "cannot build the onnx-bcast binary"
    binary="$repo/target/debug/onnx-bcast"
fi

# From outside the repository, so that `import onnx_bcast` is the installed package, not python/onnx_bcast.
cd "$cache"
export ONNX_BCAST_CACHE="$cache" ONNX_BCAST_REPO="$repo" ONNX_BCAST_BACKEND_DATA="$backend" ONNX_BCAST_WHEEL="$wheel" ONNX_BCAST_BINARY="$binary"
# shellcheck disable=SC2086
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$repo/python/tests" "$repo/python/tests" ${PYTEST_ARGS:-}
