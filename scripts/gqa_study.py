"""GroupQueryAttention's requirements on the deployment corpus's onnxruntime-genai models, run in onnxruntime (issue
27, soundness; scripts/range_study.py's three ranges per model never meet kv_cache_dim = 16 with lengths that agree):

    python scripts/gqa_study.py BIN MODELS_DIR > OUT.json

Per model: boxes where every requirement holds (kv_cache_dim = 16; one new token after a past of 0, 7 or 63; a
first prompt of 2, 8 or 64; a prompt of batch 1 after a past), each checked by `BIN check --range` (no finding may
be left) and run at three drawn sizes with the attention mask all ones (it must run); and two boxes that fail (a
total past the rotary cache's 64 rows, a cache head size of 8..32), whose witnesses must fail in onnxruntime.
Needs the pinned onnx, onnxruntime and numpy (scripts/range_study.py's Python)."""
import glob, json, os, random, sys, tempfile

import numpy as np
import onnx

# Run as `python scripts/gqa_study.py`, this folder is first on the path: range_study and the harness import as
# they do for every script here.
import range_study as rs

binary = sys.argv[1]
models = sorted(glob.glob(os.path.join(sys.argv[2], "*genai*.onnx")))
fills = {"attention_mask": ("ones",)}
out = {"boxes": 0, "holds": 0, "draws": 0, "ran": 0, "errors": [], "witness_boxes": 0, "witnesses": 0, "witnesses_failing": 0}
rng = np.random.default_rng(27); pick = random.Random(27)
for path in models:
    model = onnx.load(path, load_external_data=False)
    boxes = []
    for p in (0, 7, 63):
        boxes.append({"kv_cache_dim": "16", "batch_size": "1..4", "sequence_length": "1", "past_sequence_length": str(p), "total_sequence_length": str(p + 1)})
    for s in (2, 8, 64):
        boxes.append({"kv_cache_dim": "16", "batch_size": "1..4", "sequence_length": str(s), "past_sequence_length": "0", "total_sequence_length": str(s)})
    for p, s in ((5, 3), (60, 4)):
        boxes.append({"kv_cache_dim": "16", "batch_size": "1", "sequence_length": str(s), "past_sequence_length": str(p), "total_sequence_length": str(p + s)})
    for box in boxes:
        out["boxes"] += 1
        args = [a for k, v in box.items() for a in ("--range", f"{k}={v}")]
        r = rs.checked(binary, path, args)
        shape = rs.shape_findings(r); ib = rs.index_bounds(r)
        holds = rs.all_hold(r) and r["summary"]["conditional"] == 0
        if not holds:
            out["errors"].append({"model": os.path.basename(path), "box": box, "not_holds": [f["message"][:200] for f in r.get("findings", [])]})
            continue
        out["holds"] += 1
        for _ in range(3):
            sizes = {k: pick.choice(rs.lattice(v if ".." in v else f"{v}..{v}")) for k, v in box.items()}
            feeds = rs.feeds_at(model, sizes, fills, rng)
            err = rs.ort_error(path, feeds)
            out["draws"] += 1
            if err is None:
                out["ran"] += 1
            else:
                out["errors"].append({"model": os.path.basename(path), "sizes": sizes, "error": err[:300]})
    # Past the rotary table: total 60..65 with past 64 and one new token; and kv_cache_dim 8..32.
    for box in ({"kv_cache_dim": "16", "batch_size": "1", "sequence_length": "1", "past_sequence_length": "64", "total_sequence_length": "60..65"},
                {"kv_cache_dim": "8..32", "batch_size": "1", "sequence_length": "1", "past_sequence_length": "3", "total_sequence_length": "4"}):
        out["witness_boxes"] += 1
        wdir = tempfile.mkdtemp()
        args = [a for k, v in box.items() for a in ("--range", f"{k}={v}")]
        r = rs.checked(binary, path, args, wdir)
        for w in rs.run_witnesses(path, r):
            out["witnesses"] += 1
            out["witnesses_failing"] += bool(w["fails"])
            if not w["fails"]:
                out["errors"].append({"model": os.path.basename(path), "witness runs": w["sizes"]})
            else:
                out.setdefault("witness_errors", set()).add((os.path.basename(path), json.dumps(w["sizes"]), (w["error"] or "")[-120:]))
out["witness_errors"] = sorted(out.get("witness_errors", []))
print(json.dumps(out, indent=1, default=list))
