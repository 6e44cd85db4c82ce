#!/usr/bin/env bash
# Benchmark of onnx-bcast against the ONNX Python tools and cp, on seeded synthetic models.
#
#   bench/run.sh [PART...]     PART: all (default) | big | nodes | parallel | hostile | write | cold | infer | python
#
#   big       the 1 GB model (200 float32 tensors of 1280x1024, 20,000 broadcasting element-wise nodes):
#             every contender, warm page cache
#   nodes     the node-count curve (12,500 to 800,000 nodes, each size twice the one before, and 1,000,000; 10,000
#             small initializers, no large ones): check and decoding alone on every size, every contender on the
#             100,000-node model, infer_shapes_path up to 100,000 nodes
#   parallel  two 100,000-node models in one `onnx-bcast check a b` against one after the other
#   hostile   limits on hostile input: a 1M-node chain (check --format json), a 200k-node ring (expand refuses it),
#             the function fan-out at K = 40
#   write     expand's write path against cp in paired rounds (bench/write_path.sh; report in bench/WRITE_PATH.txt)
#   cold      the 1 GB model again with the page cache dropped before every run (needs root; skipped otherwise)
#   infer     `onnx-bcast infer` on the 100,000-node and the 1 GB models against infer_shapes_path and onnxruntime's
#             symbolic_shape_infer(auto_merge=True) (load, infer, save; needs sympy: ORT_PYTHON)
#   python    the Python API (bench/python_overhead.py; report in bench/PYTHON.txt): check(path) against the command
#             on the 100,000-node model, check(ModelProto) against onnx.shape_inference.infer_shapes on full-size
#             transformer exports (bench/export_full_size.py, in the PyTorch corpus venv of corpus/torch_fetch.sh),
#             and per model of the PyTorch corpus: check(ModelProto) against infer_shapes, check(path) against the
#             command.
#             Needs the wheel installed by scripts/python_wheel.sh (target/wheel-test-venv). Not part of `all`.
#
# Every part times decoding alone beside the commands (`decode only (floor)`: examples/decode_model.rs, the loader
# the commands use, with the binary's allocator, and nothing else): the floor the commands' cost is a ratio of.
#
# Each measurement runs RUNS times (default 3); the table shows the median wall time and the median peak RSS
# (`/usr/bin/time -f '%e %M'`; wall time at 0.1 ms resolution from bash's EPOCHREALTIME around the same call: the
# 100,000-node rows take tens of milliseconds, where a millisecond's rounding moved a ratio by 0.07).
# Warm runs: before each model's contenders the page cache is dropped (when permitted) and the input read once
# with cat, so every warm run finds the whole file cached the way read() leaves it (as after cp, a download, or
# onnx.load). That matters on Linux 6.x: read-ahead fills the cache with large folios, and one mmap fault then maps
# a whole folio (up to 2 MiB), so a process that touches only the headers of memory-mapped tensors still shows up
# to ~2 MiB of file-backed RSS per tensor. Cold runs drop the cache before every run. Every run first deletes its
# output and syncs, so write-back from one run does not land in the next. Results go to bench/results.tsv (one block per part; a part
# that is run again replaces its block) and are rendered to bench/RESULTS.md by bench/report.py.
#
# Environment:
#   BENCH_DIR   scratch folder for models, outputs and logs (default: target/bench; several GB)
#   RUNS        repetitions per measurement (default 3)
#   CURVE_RUNS  rounds of the node-count curve's `onnx-bcast check` runs (default 11, at least RUNS)
#   BENCH_BIN   use this onnx-bcast binary instead of building it with `cargo build --release`
#   DECODE_BIN  likewise for the decoding floor (examples/decode_model.rs), e.g. the one built beside BENCH_BIN
#   BENCH_NO_BUILD=1  reuse the binaries a previous run copied into BENCH_DIR/bin (no cargo at all)
#   PYTHON      Python with onnx (default: .cache/venv/bin/python, made by scripts/testdata.sh)
#   ORT_PYTHON  Python with onnx, onnxruntime and sympy for the `infer` part's onnxruntime contender (default: PYTHON;
#               the PyTorch corpus venv has all three, see scripts/infer_figures.py)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo"
BENCH_DIR="${BENCH_DIR:-$repo/target/bench}"
RUNS="${RUNS:-3}"
CURVE_RUNS="${CURVE_RUNS:-11}"
if ((CURVE_RUNS < RUNS)); then CURVE_RUNS=$RUNS; fi
results="$repo/bench/results.tsv"
die() { echo "bench/run.sh: error: $*" >&2; exit 1; }
say() { echo "bench/run.sh: $*" >&2; }

parts=("$@")
[[ ${#parts[@]} -gt 0 ]] || parts=(all)
if [[ " ${parts[*]} " == *" all "* ]]; then parts=(big nodes parallel hostile write cold infer); fi
for p in "${parts[@]}"; do
    case "$p" in big | nodes | parallel | hostile | write | cold | infer | python) ;; *) die "unknown part '$p' (all, big, nodes, parallel, hostile, write, cold, infer, python)" ;; esac
done

[[ -x /usr/bin/time ]] || die "/usr/bin/time (GNU time) is needed"
mkdir -p "$BENCH_DIR"/{bin,models,out,log}

# --- Tools ----------------------------------------------------------------------------------------------------
# The binaries are copied into BENCH_DIR/bin, so that a rebuild by someone else during the run changes nothing.
if [[ -n "${BENCH_NO_BUILD:-}" && -x "$BENCH_DIR/bin/onnx-bcast" && -x "$BENCH_DIR/bin/generate_model" \
    && -x "$BENCH_DIR/bin/decode_model" ]]; then
    say "BENCH_NO_BUILD: using the binaries in $BENCH_DIR/bin"
else
    say "building (cargo build --release)"
    cargo build --release --quiet --example generate_model --example decode_model || die "cannot build the examples"
    cp target/release/examples/generate_model "$BENCH_DIR/bin/generate_model"
    cp "${DECODE_BIN:-target/release/examples/decode_model}" "$BENCH_DIR/bin/decode_model"
    if [[ -n "${BENCH_BIN:-}" ]]; then
        cp "$BENCH_BIN" "$BENCH_DIR/bin/onnx-bcast"
    else
        cargo build --release --quiet --bin onnx-bcast || die "cannot build onnx-bcast"
        cp target/release/onnx-bcast "$BENCH_DIR/bin/onnx-bcast"
    fi
fi
BIN="$BENCH_DIR/bin/onnx-bcast"
GEN="$BENCH_DIR/bin/generate_model"
DECODE="$BENCH_DIR/bin/decode_model"
PYTHON="${PYTHON:-$repo/.cache/venv/bin/python}"
if [[ ! -x "$PYTHON" ]]; then
    bash scripts/testdata.sh >/dev/null || die "cannot set up the Python venv (scripts/testdata.sh)"
fi
"$PYTHON" -c 'import onnx' || die "$PYTHON cannot import onnx"
onnx_version="$("$PYTHON" -c 'import onnx; print(onnx.__version__)')"
bin_sha="$(sha256sum "$BIN" | cut -c1-12)"
git_rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD -- src Cargo.toml 2>/dev/null || git_rev="$git_rev+dirty"

# --- Models ---------------------------------------------------------------------------------------------------
# gen NAME ARGS...: writes BENCH_DIR/models/NAME.onnx unless it exists from the same arguments.
gen() {
    local name="$1"; shift
    local model="$BENCH_DIR/models/$name.onnx" stamp="$BENCH_DIR/models/$name.args"
    if [[ -f "$model" && -f "$stamp" && "$(cat "$stamp")" == "$*" ]]; then return; fi
    say "generating $name.onnx ($*)"
    rm -f "$model" "$stamp"
    "$GEN" "$@" "$model" 2>>"$BENCH_DIR/log/generate.log" || die "cannot generate $name.onnx"
    echo "$*" >"$stamp"
}
BIG_ARGS=(--tensors 200 --dims 1280,1024 --nodes 20000 --small 100 --seed 1 --opset 17)
nodes_args() { echo "--tensors 0 --dims 8,64 --nodes $1 --small 10000 --seed $2 --opset 17"; }
NODE_COUNTS=(12500 25000 50000 100000 200000 400000 800000 1000000)
# The curve's fixed part: one node and the same 10,000 small initializers, measured in the same rounds. The report
# gives each doubling of the time above it beside the doubling of the whole time (which start-up and the
# initializers keep under 2× at the small sizes).
FIXED_NODES=1
# The size whose expand is measured in the curve's rounds too (fresh OUT each run), beside check of the same model:
# issue 29 judges expand ÷ check there, and a ratio of two medians taken minutes apart carried the machine's drift.
CURVE_EXPAND_NODES=100000
# The sizes every Python contender runs on (they take seconds a size beyond these).
PY_NODE_COUNTS=(12500 25000 50000 100000)
DECODE_ROW="decode only (floor)"

# --- Measuring ------------------------------------------------------------------------------------------------
can_drop=no
if (sync && echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then can_drop=yes; fi

# The VM's free page reporting held off while the bench runs: see bench/page_reporting.sh.
# shellcheck source=bench/page_reporting.sh
source "$repo/bench/page_reporting.sh"

CACHE=warm    # warm | cold, for the runs that follow
PREP_IN=()    # inputs to warm up before each run
PREP_OUT=()   # outputs to delete before each run
ROWS=()       # rows of the current part

prep() {
    local f
    for f in "${PREP_OUT[@]}"; do rm -f "$f"; done
    rm -f "$BENCH_DIR"/out/.onnx-bcast-*.tmp
    sync
    if [[ $CACHE == cold ]]; then
        echo 3 >/proc/sys/vm/drop_caches
    else
        for f in "${PREP_IN[@]}"; do cat "$f" >/dev/null; done
    fi
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run_once LOG CMD...: runs CMD once (after prep) and sets WALL, RSS and RC.
run_once() {
    local log="$1"; shift
    local t0 t1 line tf="$BENCH_DIR/log/time.out"
    prep
    t0=$EPOCHREALTIME
    RC=0
    /usr/bin/time -f '%e %M' -o "$tf" -- "$@" >"$log.out" 2>"$log.err" || RC=$?
    t1=$EPOCHREALTIME
    line="$(tail -n 1 "$tf")"
    WALL="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')"
    RSS="${line#* }"
}

# record PART MODEL CONTENDER WALLS RSSS RCS: adds a row with the medians (the lists are comma-separated).
record() {
    local part="$1" model="$2" contender="$3" walls="$4" rsss="$5" rcs="$6" w r ws rs
    IFS=, read -ra ws <<<"$walls"
    IFS=, read -ra rs <<<"$rsss"
    w="$(median "${ws[@]}")"
    r="$(median "${rs[@]}")"
    ROWS+=("$part	$CACHE	$model	$contender	$w	$r	$walls	$rsss	$rcs")
    say "$(printf '%-9s %-5s %-14s %-40s %9.4f s %8d KiB  (runs %s; exit %s)' "$part" "$CACHE" "$model" "$contender" "$w" "$r" "$walls" "$rcs")"
}

# measure PART MODEL CONTENDER CMD...: runs CMD RUNS times and records the medians.
measure() {
    local part="$1" model="$2" contender="$3"; shift 3
    local walls=() rsss=() rcs=() i
    local log="$BENCH_DIR/log/$part.$model.${contender//[^A-Za-z0-9_.-]/_}"
    for ((i = 1; i <= RUNS; i++)); do
        run_once "$log.$i" "$@"
        walls+=("$WALL") rsss+=("$RSS") rcs+=("$RC")
    done
    local IFS=,
    record "$part" "$model" "$contender" "${walls[*]}" "${rsss[*]}" "${rcs[*]}"
}

# curve_run WHAT N CMD...: one run of the curve's round i (measure_curve's variables), added to WHAT's lists for size N.
curve_run() {
    local what="$1" n="$2"; shift 2
    local k="$what$n" name="$what"
    [[ $what == check || $what == expand ]] && name="onnx-bcast_$what"
    run_once "$BENCH_DIR/log/$part.nodes_$n.$name.$i" "$@"
    walls[$k]+="${walls[$k]:+,}$WALL" rsss[$k]+="${rsss[$k]:+,}$RSS" rcs[$k]+="${rcs[$k]:+,}$RC"
}

# measure_curve PART: `onnx-bcast check` and decoding alone on every nodes_N model, CURVE_RUNS rounds that each run
# every size once; and expand of CURVE_EXPAND_NODES in the same rounds.
# The runs are short (tens of milliseconds), and noise on this VM comes in bursts (a host that is slow to back
# fresh memory): going round the sizes spreads a burst over all of them instead of skewing one size's median.
measure_curve() {
    local part="$1" n i s
    local sizes=("$FIXED_NODES" "${NODE_COUNTS[@]}")
    declare -A walls=() rsss=() rcs=()
    for ((i = 1; i <= CURVE_RUNS; i++)); do
        # Each round starts one size further on, and check and decoding swap places every other round: every size
        # then follows every other as often. A run finds what the one before it left (its freed memory, the caches
        # it filled), and in a fixed order the fixed part always came after decoding the largest model.
        s=$(((i - 1) % ${#sizes[@]}))
        for n in "${sizes[@]:s}" "${sizes[@]:0:s}"; do
            local m="$BENCH_DIR/models/nodes_$n.onnx"
            PREP_IN=("$m") PREP_OUT=()
            if ((i % 2)); then
                curve_run check "$n" "$BIN" check "$m"
                curve_run decode "$n" "$DECODE" "$m"
            else
                curve_run decode "$n" "$DECODE" "$m"
                curve_run check "$n" "$BIN" check "$m"
            fi
            if [[ $n == "$CURVE_EXPAND_NODES" ]]; then
                PREP_OUT=("$BENCH_DIR/out/nodes_$n.out.onnx")
                curve_run expand "$n" "$BIN" expand "$m" "${PREP_OUT[0]}"
                rm -f "${PREP_OUT[0]}"
            fi
        done
    done
    for n in "$FIXED_NODES" "${NODE_COUNTS[@]}"; do
        record "$part" "nodes_$n" "onnx-bcast check" "${walls[check$n]}" "${rsss[check$n]}" "${rcs[check$n]}"
        record "$part" "nodes_$n" "$DECODE_ROW" "${walls[decode$n]}" "${rsss[decode$n]}" "${rcs[decode$n]}"
        if [[ $n == "$CURVE_EXPAND_NODES" ]]; then
            record "$part" "nodes_$n" "onnx-bcast expand" "${walls[expand$n]}" "${rsss[expand$n]}" "${rcs[expand$n]}"
        fi
    done
}

# save PART: replaces PART's block in results.tsv with the current rows.
save() {
    local part="$1" tmp="$results.tmp"
    {
        echo "#part	cache	model	contender	wall_s	rss_kib	walls	rss_kibs	exit"
        [[ -f "$results" ]] && grep -v -e '^#part' -e "^$part	" -e "^@$part	" "$results" || true
        echo "@$part	$(date -u +%Y-%m-%dT%H:%M:%SZ)	rev=$git_rev	bin=$bin_sha	onnx=$onnx_version	runs=$RUNS	cores=$(nproc)	drop_caches=$can_drop	page_reporting=$page_reporting	reported_kib=$(($(reported_kib) - reported_at_start))	load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)"
        printf '%s\n' "${ROWS[@]}"
    } >"$tmp"
    mv "$tmp" "$results"
    ROWS=()
}

PY_INFER='import sys, onnx
m = onnx.load(sys.argv[1])
onnx.shape_inference.infer_shapes(m, data_prop=True)'
PY_INFER_PATH='import sys, onnx
onnx.shape_inference.infer_shapes_path(sys.argv[1], sys.argv[2])'
PY_LOAD_SAVE='import sys, onnx
onnx.save(onnx.load(sys.argv[1]), sys.argv[2])'
# symbolic_shape_infer writes temporary files into the current folder for large models: run it in OUT's folder.
PY_ORT_SYMBOLIC='import os, sys, onnx
os.chdir(os.path.dirname(os.path.abspath(sys.argv[2])))
from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
m = SymbolicShapeInference.infer_shapes(onnx.load(sys.argv[1]), int_max=2**31 - 1, auto_merge=True)
onnx.save(m, sys.argv[2])'
ORT_PYTHON="${ORT_PYTHON:-$PYTHON}"

# settle FILE...: the warm state: the cache dropped (when permitted), then the files read once with cat.
settle() {
    sync
    if [[ $can_drop == yes ]]; then echo 3 >/proc/sys/vm/drop_caches; fi
    cat "$@" >/dev/null
}

# contenders PART MODEL [subset [check]]: measures the contenders on BENCH_DIR/models/MODEL.onnx (`onnx-bcast
# check` only when the fourth argument is not "no-check").
contenders() {
    local part="$1" name="$2" which="${3:-all}" check="${4:-check}"
    local m="$BENCH_DIR/models/$name.onnx" o="$BENCH_DIR/out/$name.out.onnx"
    PREP_IN=("$m")
    PREP_OUT=("$o")
    if [[ $CACHE == warm ]]; then settle "$m"; fi
    if [[ $check != no-check ]]; then
        measure "$part" "$name" "onnx-bcast check" "$BIN" check "$m"
        measure "$part" "$name" "$DECODE_ROW" "$DECODE" "$m"
    fi
    if [[ $which == all || $which == cold ]]; then
        # The nodes part measured this expand already, in the curve's rounds.
        if [[ $part != nodes || $name != "nodes_$CURVE_EXPAND_NODES" ]]; then
            measure "$part" "$name" "onnx-bcast expand" "$BIN" expand "$m" "$o"
        fi
        measure "$part" "$name" "cp" cp "$m" "$o"
        measure "$part" "$name" "cp + fsync" sh -c 'cp "$1" "$2" && sync "$2"' sh "$m" "$o"
    fi
    measure "$part" "$name" "infer_shapes_path" "$PYTHON" -c "$PY_INFER_PATH" "$m" "$o"
    if [[ $which == all ]]; then
        measure "$part" "$name" "load + infer_shapes(data_prop)" "$PYTHON" -c "$PY_INFER" "$m"
        measure "$part" "$name" "load + save" "$PYTHON" -c "$PY_LOAD_SAVE" "$m" "$o"
        PREP_IN=()
        measure "$part" "$name" "python -c 'import onnx' (start-up)" "$PYTHON" -c 'import onnx'
    fi
    rm -f "$o"
}

for part in "${parts[@]}"; do
    case "$part" in
    big)
        gen big "${BIG_ARGS[@]}"
        CACHE=warm
        contenders big big all
        ;;
    nodes)
        for n in "$FIXED_NODES" "${NODE_COUNTS[@]}"; do
            # shellcheck disable=SC2046
            gen "nodes_$n" $(nodes_args "$n" 1)
        done
        CACHE=warm
        curve_models=()
        # The files are small: all of them stay cached together, so the curve's rounds find each of them warm.
        for n in "$FIXED_NODES" "${NODE_COUNTS[@]}"; do curve_models+=("$BENCH_DIR/models/nodes_$n.onnx"); done
        settle "${curve_models[@]}"
        measure_curve nodes
        for n in "${PY_NODE_COUNTS[@]}"; do
            if [[ $n == 100000 ]]; then contenders nodes "nodes_$n" all no-check; else contenders nodes "nodes_$n" curve no-check; fi
        done
        ;;
    parallel)
        # shellcheck disable=SC2046
        gen nodes_100000 $(nodes_args 100000 1)
        # shellcheck disable=SC2046
        gen nodes_100000_b $(nodes_args 100000 2)
        a="$BENCH_DIR/models/nodes_100000.onnx" b="$BENCH_DIR/models/nodes_100000_b.onnx"
        CACHE=warm
        PREP_IN=("$a" "$b")
        PREP_OUT=()
        settle "$a" "$b"
        measure parallel "two 100k-node" "check a; check b (sequential)" \
            sh -c '"$0" check "$1"; "$0" check "$2"' "$BIN" "$a" "$b"
        measure parallel "two 100k-node" "check a b (one invocation)" "$BIN" check "$a" "$b"
        # The machine's ceiling: two processes at once, nothing shared; no in-process parallelism can beat it.
        measure parallel "two 100k-node" "check a & check b (two processes at once)" \
            sh -c '"$0" check "$1" & "$0" check "$2"; wait' "$BIN" "$a" "$b"
        if "$BIN" check --help 2>/dev/null | grep -q -- '--jobs'; then
            measure parallel "two 100k-node" "check --jobs 1 a b" "$BIN" check --jobs 1 "$a" "$b"
        fi
        ;;
    hostile)
        # Limits on hostile input: the 1M-node chain checked with --format json (peak RSS < 500 MiB), the 200k-node ring
        # refused by expand (< 1 s, exit 1), the function fan-out at K = 40 (< 1 s).
        say "generating the hostile models (bench/hostile_models.py)"
        "$PYTHON" bench/hostile_models.py "$BENCH_DIR/models" || die "cannot generate the hostile models"
        CACHE=warm
        chain="$BENCH_DIR/models/chain_1000000.onnx" ring="$BENCH_DIR/models/ring_200000.onnx"
        PREP_IN=("$chain") PREP_OUT=()
        measure hostile chain_1000000 "check --format json" "$BIN" check --format json "$chain"
        measure hostile chain_1000000 "check" "$BIN" check "$chain"
        measure hostile chain_1000000 "$DECODE_ROW" "$DECODE" "$chain"
        PREP_IN=("$ring") PREP_OUT=("$BENCH_DIR/out/ring.onnx")
        measure hostile ring_200000 "expand (refused)" "$BIN" expand "$ring" "$BENCH_DIR/out/ring.onnx"
        PREP_IN=("$repo/fixtures/crafted/fanout_40.pb") PREP_OUT=()
        measure hostile fanout_40 "check" "$BIN" check "$repo/fixtures/crafted/fanout_40.pb"
        ;;
    write)
        # The write path in paired rounds against cp (bench/write_path.sh); its report goes to bench/WRITE_PATH.txt.
        gen big "${BIG_ARGS[@]}"
        BENCH_NO_BUILD=1 WRITE_PATH_BIN="$BIN" ROUNDS="${WRITE_ROUNDS:-7}" bash "$repo/bench/write_path.sh" \
            | tee "$repo/bench/WRITE_PATH.txt" || die "bench/write_path.sh failed"
        continue
        ;;
    infer)
        # Writing the inferred shapes into the model: onnx-bcast infer against the Python tools that do the same.
        gen big "${BIG_ARGS[@]}"
        # shellcheck disable=SC2046
        gen nodes_100000 $(nodes_args 100000 1)
        CACHE=warm
        for name in nodes_100000 big; do
            m="$BENCH_DIR/models/$name.onnx" o="$BENCH_DIR/out/$name.out.onnx"
            PREP_IN=("$m") PREP_OUT=("$o")
            settle "$m"
            measure infer "$name" "onnx-bcast infer" "$BIN" infer "$m" "$o"
            measure infer "$name" "cp" cp "$m" "$o"
            measure infer "$name" "infer_shapes_path" "$PYTHON" -c "$PY_INFER_PATH" "$m" "$o"
            if "$ORT_PYTHON" -c 'import onnxruntime, sympy' 2>/dev/null; then
                measure infer "$name" "ORT symbolic_shape_infer (load, infer, save)" "$ORT_PYTHON" -c "$PY_ORT_SYMBOLIC" "$m" "$o"
            else
                say "infer: $ORT_PYTHON has no onnxruntime or sympy: set ORT_PYTHON to measure symbolic_shape_infer"
            fi
            rm -f "$o"
        done
        ;;
    python)
        wheel_python="$repo/target/wheel-test-venv/bin/python"
        [[ -x $wheel_python ]] || die "python: no $wheel_python; run scripts/python_wheel.sh first"
        torch_models="$(bash "$repo/corpus/torch_fetch.sh")" || die "python: cannot make the PyTorch corpus venv"
        torch_python="$("$wheel_python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["python"])' \
            "$torch_models/manifest.json")"
        gen nodes_100000 $(nodes_args 100000 1)
        "$torch_python" "$repo/bench/export_full_size.py" "$BENCH_DIR/models/full" || die "python: export failed"
        "$wheel_python" "$repo/bench/python_overhead.py" --binary "$BIN" --model "$BENCH_DIR/models/nodes_100000.onnx" \
            --exports "$BENCH_DIR/models/full" --pattern '*.onnx' --corpus "$torch_models" \
            --rounds "${PYTHON_ROUNDS:-7}" \
            | tee "$repo/bench/PYTHON.txt" || die "bench/python_overhead.py failed"
        continue
        ;;
    cold)
        if [[ $can_drop != yes ]]; then
            say "cold: cannot drop the page cache (echo 3 > /proc/sys/vm/drop_caches refused); skipped"
            continue
        fi
        gen big "${BIG_ARGS[@]}"
        CACHE=cold
        contenders cold big cold
        CACHE=warm
        ;;
    esac
    save "$part"
done

"$PYTHON" "$repo/bench/report.py" "$results" "$repo/bench/RESULTS.md"
say "wrote bench/RESULTS.md"
