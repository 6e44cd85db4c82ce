"""Shared helpers of the Python harness scripts in scripts/ (each `scripts/NAME.py` stays a command of its own).

    cli       run the onnx-bcast binary (or any command): exit code, output, time; its one-line `--format json`
    ort       onnxruntime sessions, seeded inputs at given sizes (symbolic dims bound), backend test data
    compare   outputs against outputs: within a tolerance for floats, exact for the rest
    graph     walks over a model's graphs: shapes as check's JSON states them, scopes, producers, op counts
    corpus    the model sets: the real-model corpus (its input table), the backend tests, the export manifests
    judge     the soundness judge: inferred shapes (expressions over symbols) against what onnxruntime computes
    expose    runs a model with every inferred value exposed as an output, for the judge
    gen       the seeded generator of random valid models with symbolic dims
    exports   the per-model studies the PyTorch and deployment corpora share (check, resolution, soundness, expand)
              and their command line
    conformance  the evaluators of scripts/expand_conformance.py (onnxruntime, ReferenceEvaluator, the checker)

The scripts are run by path (`python scripts/NAME.py`), so scripts/ is first on sys.path and `harness` imports
as a package without any path set up by hand.
"""
