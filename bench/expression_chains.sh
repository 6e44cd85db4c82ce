#!/usr/bin/env bash
# Time, memory and output size of onnx-bcast on chains of size arithmetic that double their expression at each
# step (fixtures/crafted/expression_{minmax,floor}_STEPS.pb, 10 to 1,000 steps, from fixtures/crafted/generate.py).
# Without the expression budget (src/sym/budget.rs) 24 steps cost 23 s and 2.4 GB, and `infer` wrote a
# 12.8-million-character dim_param. Goals: `check` under 0.5 s and 100 MiB at every length; `infer` adds no
# dim_param over 1,024 bytes, so its output grows by the declarations of the chain's values and nothing more.
#
#   bench/expression_chains.sh            # release build, then the table into bench/EXPRESSIONS.txt
#   BENCH_BIN=path/to/onnx-bcast bench/expression_chains.sh
#
# Each `check` runs RUNS times (default 5): the median wall time and the largest peak RSS (GNU time). For `infer`,
# the growth of the file, how many value_info it added, and the total and longest dim_param text it wrote
# (PYTHON: a Python with onnx, default the testdata venv).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo"
RUNS="${RUNS:-5}"
PYTHON="${PYTHON:-${ONNX_BCAST_CACHE:-$repo/.cache}/venv/bin/python}"
if [[ -z "${BENCH_BIN:-}" ]]; then
    cargo build --release --quiet
    BENCH_BIN="$repo/target/release/onnx-bcast"
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
report="$repo/bench/EXPRESSIONS.txt"
{
    echo "# bench/expression_chains.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD)$(git diff --quiet -- src || echo +dirty), load $(cut -d' ' -f1 /proc/loadavg)"
    printf '%-8s %6s %9s %12s %10s %12s %11s %13s %13s\n' chain steps "bytes" "check_s(med)" "check_MiB" "infer_grow" "value_info" "dim_param_sum" "dim_param_max"
} > "$report"
for kind in minmax floor; do
    for steps in 10 30 100 300 1000; do
        model="fixtures/crafted/expression_${kind}_${steps}.pb"
        times=() rss=0
        for _ in $(seq "$RUNS"); do
            /usr/bin/time -f '%e %M' -o "$out/time" "$BENCH_BIN" check --no-config "$model" > /dev/null || [[ $? == 1 ]]
            read -r t m < "$out/time"
            times+=("$t")
            ((m > rss)) && rss=$m
        done
        median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p")
        "$BENCH_BIN" infer "$model" "$out/inferred.onnx" > /dev/null
        stats=$("$PYTHON" - "$model" "$out/inferred.onnx" <<'PY'
import os, sys
import onnx
before, after = sys.argv[1], sys.argv[2]
m, n = onnx.load(before), onnx.load(after)
params = [d.dim_param for vi in list(n.graph.value_info) + list(n.graph.output)
          for d in vi.type.tensor_type.shape.dim if d.HasField("dim_param")]
print(os.path.getsize(after) - os.path.getsize(before), len(n.graph.value_info) - len(m.graph.value_info),
      sum(map(len, params)), max(map(len, params), default=0))
PY
)
        read -r grow infos psum pmax <<< "$stats"
        printf '%-8s %6s %9s %12s %10.1f %12s %11s %13s %13s\n' "$kind" "$steps" "$(stat -c %s "$model")" "$median" \
            "$(echo "$rss / 1024" | bc -l)" "$grow" "$infos" "$psum" "$pmax" >> "$report"
    done
done
cat "$report"
