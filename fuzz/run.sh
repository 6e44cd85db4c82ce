#!/usr/bin/env bash
# Runs one fuzz target with the project's settings: one process (the machine has 2 cores), overflow checks on,
# 4 GiB RSS limit, 120 s per input (FUZZ_TIMEOUT). The corpus grows in fuzz/corpus/TARGET; crashes land in
# fuzz/artifacts/TARGET.
#
#   fuzz/run.sh TARGET [SECONDS]     (default 1800)
#
# libFuzzer's log (with the final `#N ... cov: ft:` lines) is fuzz/logs/TARGET-<time>.log.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
target="${1:?usage: run.sh TARGET [SECONDS]}"
seconds="${2:-1800}"
# A hang is an input over this many seconds. The sanitizer build runs 5-10x slower than release, and a crafted
# function fan-out that reaches the call budget (fixtures/crafted/fanout_fresh_26.pb: 0.5 s in release) went over 30 s
# when the fuzzer shared two busy cores.
timeout="${FUZZ_TIMEOUT:-120}"
cd "$here"
[[ -d "corpus/$target" ]] || ./seed.sh >/dev/null
mkdir -p logs "artifacts/$target"
dict=()
case "$target" in broadcast_algebra | expression_algebra) ;; *) dict=(-dict="$here/onnx.dict") ;; esac
log="logs/$target-$(date +%Y%m%d-%H%M%S).log"
# -jobs=1 makes libFuzzer write its output to fuzz-0.log in the current folder; it is moved to $log afterwards.
# One folder per target, so that two targets running at once (one per core) do not write the same fuzz-0.log.
mkdir -p "logs/$target.run"
cd "logs/$target.run"
# FUZZ_FORK=1: libFuzzer's fork mode, which records a timeout (or an out-of-memory) as an artifact and goes on
# fuzzing, where the default mode stops at the first one; a crash still stops it. Its log is the .outer file.
processes=(-jobs=1 -workers=1)
[[ -n "${FUZZ_FORK:-}" ]] && processes=(-fork=1 -ignore_timeouts=1 -ignore_ooms=1 -ignore_crashes=0)
set +e
cargo +nightly fuzz run --fuzz-dir "$here" -O -a "$target" "$here/corpus/$target" -- \
    "${processes[@]}" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout="$timeout" -max_len=65536 \
    -artifact_prefix="$here/artifacts/$target/" -print_final_stats=1 "${dict[@]}" > "$here/$log.outer" 2>&1
status=$?
set -e
[[ -f fuzz-0.log ]] && mv fuzz-0.log "$here/$log"
echo "exit $status; log $here/$log"
exit $status
