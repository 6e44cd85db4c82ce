#!/usr/bin/env bash
# The write path of `onnx-bcast expand` against `cp`, paired runs: on the 1 GB `big` model of
# bench/run.sh, each round runs `cp M OUT` and `expand M OUT` back to back into a fresh OUT (then, for the replace
# case, `expand M OUT` over an existing OUT, which adds an fsync), and the report gives the medians of wall and
# system time and of the per-round ratios. Pairing puts a burst of load from other work on both contenders.
#
#   bash bench/write_path.sh                         # ROUNDS=11 rounds, the default copy strategy
#   STRATEGIES="map pread kernel" bash bench/write_path.sh   # each copy strategy of src/copy.rs in turn
#
# Needs a release build (cargo build --release; the script builds it) and GNU time. Writes nothing under git.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
BENCH_DIR="${BENCH_DIR:-$repo/target/bench}"
ROUNDS="${ROUNDS:-11}"
STRATEGIES="${STRATEGIES:-default}"
mkdir -p "$BENCH_DIR"/{models,out}
[[ -n "${BENCH_NO_BUILD:-}" ]] || cargo build --release --quiet --bin onnx-bcast --example generate_model
BIN="${WRITE_PATH_BIN:-$repo/target/release/onnx-bcast}"
M="$BENCH_DIR/models/big.onnx"
ARGS="--tensors 200 --dims 1280,1024 --nodes 20000 --small 100 --seed 1 --opset 17"
if [[ ! -f "$M" || "$(cat "$BENCH_DIR/models/big.args" 2>/dev/null)" != "$ARGS" ]]; then
    # shellcheck disable=SC2086
    target/release/examples/generate_model $ARGS "$M"
    echo "$ARGS" >"$BENCH_DIR/models/big.args"
fi
O="$BENCH_DIR/out/write_path.onnx"
cat "$M" >/dev/null   # the input cached as read() leaves it

# timed CMD...: prints "wall sys user" of one run.
timed() { /usr/bin/time -f '%e %S %U' -o "$BENCH_DIR/out/time" "$@" >/dev/null 2>&1; cat "$BENCH_DIR/out/time"; }

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

# shellcheck source=bench/page_reporting.sh
source "$repo/bench/page_reporting.sh"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); free page reporting: $page_reporting"
for strategy in $STRATEGIES; do
    env_strategy=()
    [[ "$strategy" == default ]] || env_strategy=(env "ONNX_BCAST_COPY=$strategy")
    rows=()
    for _ in $(seq "$ROUNDS"); do
        rm -f "$O"; sync
        read -r cw cs cu < <(timed cp "$M" "$O")
        rm -f "$O"; sync
        read -r ew es eu < <(timed "${env_strategy[@]}" "$BIN" expand "$M" "$O")
        read -r rw rs _ < <(timed "${env_strategy[@]}" "$BIN" expand "$M" "$O")
        rows+=("$cw $cs $ew $es $rw $rs $(awk -v a="$cs" -v b="$cu" 'BEGIN { print a + b }') $(awk -v a="$es" -v b="$eu" 'BEGIN { print a + b }')")
    done
    col() { printf '%s\n' "${rows[@]}" | awk -v c="$1" '{print $c}' | median; }
    ratio() { printf '%s\n' "${rows[@]}" | awk -v a="$1" -v b="$2" '{ if ($b > 0) print $a / $b; else print "inf" }' | median; }
    printf '%s: cp wall %s sys %s | expand (fresh OUT) wall %s sys %s | ratio wall %.2f sys %.2f cpu (user+sys) %.2f | expand replacing OUT (fsync) wall %s sys %s (wall ratio %.2f)\n' \
        "$strategy" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(ratio 3 1)" "$(ratio 4 2)" "$(ratio 8 7)" "$(col 5)" "$(col 6)" "$(ratio 5 1)"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); KiB reported to the host while it ran: $(($(reported_kib) - reported_at_start))"
rm -f "$O"
