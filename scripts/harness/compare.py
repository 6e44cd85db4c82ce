"""Outputs against outputs: floats within a tolerance (or exactly), everything else exactly."""

import numpy as np

RTOL, ATOL = 1e-4, 1e-5  # a rewritten model's outputs against the original's, both from onnxruntime


def compare(a, b, where, rtol=RTOL, atol=ATOL):
    """Differences between two onnxruntime results (arrays, lists of maps, ...) as messages; [] when equal."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return [f"{where}: shape {list(a.shape)} vs {list(b.shape)}"]
        if a.dtype != b.dtype:
            return [f"{where}: dtype {a.dtype} vs {b.dtype}"]
        if a.dtype.kind in "fc":
            ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
            if not ok.all():
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
                diff[~np.isfinite(diff)] = np.inf
                return [f"{where}: {int((~ok).sum())} of {a.size} values differ, max abs diff {float(diff.max()):.3g}"]
            return []
        if not np.array_equal(a, b):
            return [f"{where}: {int((a != b).sum())} of {a.size} values differ"]
        return []
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: {len(a)} vs {len(b)} elements"]
        return [m for i, (x, y) in enumerate(zip(a, b)) for m in compare(x, y, f"{where}[{i}]", rtol, atol)]
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where}: keys differ"]
        return [m for k in sorted(a, key=str)
                for m in compare(np.asarray(a[k]), np.asarray(b[k]), f"{where}[{k!r}]", rtol, atol)]
    if isinstance(a, float) or isinstance(b, float):
        return [] if np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True) else [f"{where}: {a} vs {b}"]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def max_abs_diff(a, b):
    """The largest finite absolute difference between two float results (0 for anything else)."""
    worst = 0.0
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype.kind in "fc":
        if a.size:
            d = np.abs(a.astype(np.float64) - b.astype(np.float64))
            d = d[np.isfinite(d)]
            worst = float(d.max()) if d.size else 0.0
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        for x, y in zip(a, b):
            worst = max(worst, max_abs_diff(x, y))
    return worst


def named_diffs(names, want, got, rtol=RTOL, atol=ATOL):
    """compare() of each output, named by `names`."""
    return [m for n, a, b in zip(names, want, got) for m in compare(a, b, n, rtol, atol)]


def exact_diffs(a, b):
    """Outputs that must be bit for bit the same (NaN equal to NaN), as messages by position."""
    diffs = []
    for i, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            diffs.append(f"output {i}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}")
        elif x.dtype.kind in "fc" and not np.array_equal(x, y, equal_nan=True):
            diffs.append(f"output {i}: values differ (max {np.nanmax(np.abs(x - y))})")
        elif x.dtype.kind not in "fc" and not np.array_equal(x, y):
            diffs.append(f"output {i}: values differ")
    if len(a) != len(b):
        diffs.append(f"{len(a)} outputs vs {len(b)}")
    return diffs


# ----------------------------------------------------------------- onnx's backend runner, exact for non-floats

BACKEND_RTOL, BACKEND_ATOL = 1e-3, 1e-7  # onnx.backend.test.case.test_case.TestCase defaults for model tests


def as_comparable(a):
    """ml_dtypes arrays (bfloat16, float8*, int4, ...) as builtin numpy arrays: floats to float32, ints to int64."""
    if isinstance(a, np.ndarray) and (a.dtype.kind == "V" or a.dtype.type.__module__ != "numpy"):
        name = a.dtype.name
        return a.astype(np.float32) if "float" in name else a.astype(np.int64)
    return a


def assert_similar(expected, actual, where="output"):
    """onnx.backend.test.runner.Runner.assert_similar_outputs, with exact comparison for non-float tensors."""
    if expected is None or actual is None:
        if expected is not None or actual is not None:
            raise AssertionError(f"{where}: expected {'None' if expected is None else 'a value'}, got "
                                 f"{'None' if actual is None else 'a value'}")
        return
    if isinstance(expected, (list, tuple)) or isinstance(actual, (list, tuple)):
        if not isinstance(expected, (list, tuple)) or not isinstance(actual, (list, tuple)):
            raise AssertionError(f"{where}: expected {type(expected).__name__}, got {type(actual).__name__}")
        if len(expected) != len(actual):
            raise AssertionError(f"{where}: expected a sequence of {len(expected)}, got {len(actual)}")
        for j, (e, a) in enumerate(zip(expected, actual)):
            assert_similar(e, a, f"{where}[{j}]")
        return
    actual = np.asarray(actual) if not isinstance(actual, np.ndarray) else actual
    expected = np.asarray(expected) if not isinstance(expected, np.ndarray) else expected
    if actual.shape != expected.shape:
        raise AssertionError(f"{where}: shape {actual.shape}, expected {expected.shape}")
    if expected.dtype == object:
        np.testing.assert_array_equal(actual, expected, err_msg=where)
        return
    if actual.dtype != expected.dtype:
        raise AssertionError(f"{where}: dtype {actual.dtype}, expected {expected.dtype}")
    e, a = as_comparable(expected), as_comparable(actual)
    if e.dtype.kind in "fc":
        np.testing.assert_allclose(a, e, rtol=BACKEND_RTOL, atol=BACKEND_ATOL, err_msg=where)
    else:
        np.testing.assert_array_equal(a, e, err_msg=where)


def compare_all(expected, actual):
    """assert_similar over every output; raises AssertionError at the first difference."""
    if len(actual) != len(expected):
        raise AssertionError(f"{len(actual)} outputs, expected {len(expected)}")
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert_similar(e, a, f"output {i}")
