#!/usr/bin/env bash
# Seeds fuzz/corpus/{decode_check,expand_roundtrip,file_source,infer_roundtrip,fold_roundtrip,bind_rewrite} from every
# fixture (shipped, malformed, crafted), the fuzz
# regression inputs, and the backend models listed in backend_seeds.txt (fetched once by scripts/testdata.sh).
# broadcast_algebra and expression_algebra take structured input and start from an empty corpus. Idempotent: files are named by content.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(dirname "$here")"
data="$(bash "$root/scripts/testdata.sh")"
models=(decode_check expand_roundtrip file_source infer_roundtrip fold_roundtrip bind_rewrite)
for target in "${models[@]}"; do
    dir="$here/corpus/$target"
    mkdir -p "$dir"
    add() { cp "$1" "$dir/$(sha1sum "$1" | cut -c1-40)"; }
    # bind_rewrite reads a byte that picks the sizes before the model: each seed gets one (3: sizes 3, 1 << 40, 2).
    if [[ "$target" == bind_rewrite ]]; then
        add() { { printf '\x03'; cat "$1"; } > "$dir/$(sha1sum "$1" | cut -c1-40)"; }
    fi
    # Every fixture: the shipped models, the malformed corpus, the crafted battery (fixtures/crafted/*.pb) and the
    # inference patterns, so that the fuzzer starts from each shape of graph the tests know.
    while IFS= read -r -d '' f; do
        add "$f"
    done < <(find "$root/fixtures" -type f \( -name '*.onnx' -o -name '*.pb' \) -print0)
    for f in "$root"/tests/fuzz_regressions/*; do
        [[ -f "$f" ]] && add "$f"
    done
    grep -v '^#' "$here/backend_seeds.txt" | while read -r name; do
        [[ -n "$name" ]] && add "$data/node/$name/model.onnx"
    done
done
mkdir -p "$here/corpus/broadcast_algebra" "$here/corpus/expression_algebra"
for t in "${models[@]}"; do echo "$t: $(ls "$here/corpus/$t" | wc -l) seeds"; done
