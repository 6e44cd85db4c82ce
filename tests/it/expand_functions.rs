//! `expand` inside model-local functions: every attribute it reads (Gemm's `transA`/`transB`, the legacy
//! `broadcast`/`axis`) may be a reference to an attribute of the calling node, and must be read through it.
//! The rewritten models are run with onnxruntime against the originals (the venv of `scripts/testdata.sh`).

use crate::common;

use std::path::Path;
use std::process::Command;

/// Runs IN and OUT in onnxruntime on the same seeded random inputs (symbolic dims bound to `dims`) and compares
/// the outputs; returns the script's failure message, if any.
fn run_both(original: &Path, rewritten: &Path, dims: &str) -> Result<(), String> {
    const SCRIPT: &str = r#"
import sys, json
import numpy as np
import onnxruntime as ort
original, rewritten, dims = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
rng = np.random.default_rng(7)
def feeds(session):
    out = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else dims[d] for d in i.shape]
        out[i.name] = rng.standard_normal(shape).astype(np.float32)
    return out
a = ort.InferenceSession(original)
inputs = feeds(a)
expected = a.run(None, inputs)
try:
    got = ort.InferenceSession(rewritten).run(None, inputs)
except Exception as e:
    sys.exit(f"the rewritten model fails in onnxruntime: {e}")
for x, y in zip(expected, got):
    if x.shape != y.shape or not np.allclose(x, y, atol=1e-5):
        sys.exit(f"outputs differ: {x.shape} vs {y.shape}")
"#;
    let out = Command::new(common::venv_python())
        .arg("-c")
        .arg(SCRIPT)
        .arg(original)
        .arg(rewritten)
        .arg(dims)
        .output()
        .expect("the venv's python runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn expand(input: &Path, output: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_onnx-bcast")).arg("expand").arg(input).arg(output).output().unwrap()
}

/// ONNX IR: an attribute with `ref_attr_name` inside a function body takes the calling node's attribute of that
/// name. `G(a, b, c) = Gemm(a, b, c, transA = @tA)` called with `tA = 1` on A [4, M]: (M, N) is (A's axis 1, 3),
/// and C [3] must be expanded to that, not to (A's axis 0, 3).
#[test]
fn gemm_trans_a_referring_to_the_function_attribute_is_read_at_the_call() {
    common::backend_data_dir(); // installs the venv
    let fixture = common::repo_root().join("fixtures/unidirectional_gemm_function_ok.onnx");
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.onnx");
    let out = expand(&fixture, &out_path);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    if let Err(e) = run_both(&fixture, &out_path, r#"{"M": 5}"#) {
        panic!("{e}");
    }
}
