"""`onnx_bcast.check`, `shapes` and `expand` against the command line (ONNX `docs/Broadcasting.md` rules are the
command line's; here the API must give exactly its verdicts), and the three ways to give a model."""

from __future__ import annotations

import json
import os
import threading

import onnx
import pytest

import onnx_bcast
from conftest import BINARY, FIXTURES, cli_json

BAD = FIXTURES / "multidirectional_add_bad.onnx"
SYMBOLIC = FIXTURES / "symbolic_batch.onnx"


def test_the_installed_package_is_the_wheel_not_the_source_tree():
    assert "site-packages" in onnx_bcast.__file__, onnx_bcast.__file__
    assert "site-packages" in onnx_bcast._native.__file__


def test_check_names_the_violation_its_axis_and_input_shapes():
    report = onnx_bcast.check(BAD)
    assert not report.ok
    [finding] = report.findings
    assert (finding.code, finding.severity, finding.graph, finding.node, finding.op) == (
        "broadcast-violation", "error", "main", "add", "Add")
    assert finding.message == "A [2, 3] and B [4] do not broadcast: on axis 1, B has 4 where A has 3"
    assert finding.axis == 1
    assert [(i.name, i.shape) for i in finding.inputs] == [("A", (2, 3)), ("B", (4,))]
    assert report.summary.violations == 1 and report.summary.errors == 1
    assert [s.verdict for s in report.sites] == ["violation"]
    shown = repr(report)
    assert "failed" in shown and "error[broadcast-violation] main › add (Add)" in shown


def test_check_matches_the_command_lines_json_on_every_fixture(fixtures):
    expected = cli_json(*fixtures)
    for path in fixtures:
        cli = expected[str(path)]
        if "error" in cli:
            with pytest.raises(onnx_bcast.OnnxBcastError) as raised:
                onnx_bcast.check(path)
            assert str(raised.value) == cli["error"], path
            continue
        assert json.loads(onnx_bcast.check(path).to_json()) == cli, path


def test_check_matches_the_command_lines_json_on_every_backend_model(backend):
    """Every model of the ONNX backend data: the report object is the command line's, field for field."""
    for strict in (False, True):
        flags = ["--strict"] if strict else []
        expected = cli_json(*flags, *backend)
        assert len(expected) == len(backend)
        differ = []
        for path in backend:
            cli = expected[str(path)]
            if "error" in cli:
                with pytest.raises(onnx_bcast.OnnxBcastError):
                    onnx_bcast.check(path, strict=strict)
                continue
            report = onnx_bcast.check(path, strict=strict)
            if json.loads(report.to_json()) != cli or report.ok != (cli["summary"]["errors"] == 0):
                differ.append(str(path))
        assert not differ, f"{len(differ)} models differ from the CLI (strict={strict}): {differ[:5]}"


def _without_model(report: onnx_bcast.Report) -> dict:
    d = report.to_dict()
    d.pop("model")
    return d


def test_a_path_bytes_and_a_modelproto_give_the_same_report(fixtures, backend):
    models = fixtures + backend[::10]
    for path in models:
        try:
            by_path = onnx_bcast.check(path)
        except onnx_bcast.ModelError:
            continue
        data = path.read_bytes()
        by_bytes = onnx_bcast.check(data)
        by_proto = onnx_bcast.check(onnx.load_from_string(data))
        assert by_bytes.model == "<bytes>" and by_proto.model == "<ModelProto>"
        assert _without_model(by_path) == _without_model(by_bytes) == _without_model(by_proto), path
    assert onnx_bcast.check(os.fsencode(BAD).decode()).ok is False
    assert onnx_bcast.check(bytearray(BAD.read_bytes())).ok is False


def test_deny_warn_and_allow_select_severities_as_the_flags_do():
    assert onnx_bcast.check(SYMBOLIC).ok
    assert not onnx_bcast.check(SYMBOLIC, deny=["conditional-broadcast"]).ok
    assert not onnx_bcast.check(SYMBOLIC, strict=True).ok
    allowed = onnx_bcast.check(SYMBOLIC, deny=["all"], allow=["conditional-broadcast", "implicit-broadcast"])
    assert allowed.findings == [] and allowed.ok
    cli = cli_json("--deny", "all", "--allow", "conditional-broadcast", "--allow", "implicit-broadcast", SYMBOLIC)
    assert json.loads(allowed.to_json()) == cli[str(SYMBOLIC)]
    with pytest.raises(ValueError, match="unknown code `no-such-code`"):
        onnx_bcast.check(SYMBOLIC, deny=["no-such-code"])
    with pytest.raises(ValueError, match="both to deny and to allow"):
        onnx_bcast.check(SYMBOLIC, deny=["negative-dim"], allow=["negative-dim"])


def test_shapes_match_the_command_lines_json():
    import subprocess
    run = subprocess.run([str(BINARY), "shapes", "--format", "json", str(SYMBOLIC)], capture_output=True, text=True)
    cli = json.loads(run.stdout)
    api = onnx_bcast.shapes(SYMBOLIC)
    assert list(api) == [g["graph"] for g in cli["graphs"]]
    for graph in cli["graphs"]:
        for value in graph["values"]:
            got = api[graph["graph"]][value["name"]]
            shape = None if value["shape"] is None else tuple(value["shape"])
            assert (got.elem_type, got.shape) == (value["elem_type"], shape)
    assert any(isinstance(d, str) for t in api["main"].values() for d in (t.shape or ())), "a symbol as str"


def test_unreadable_models_raise_model_error_with_the_command_lines_message(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(onnx_bcast.ModelError) as raised:
        onnx_bcast.check(missing)
    assert str(raised.value) == cli_json(missing)[str(missing)]["error"]
    with pytest.raises(onnx_bcast.ModelError, match=r"^<bytes>: not a binary ONNX model"):
        onnx_bcast.check(b"ir_version: 8")
    with pytest.raises(TypeError, match="^model: a path, bytes or an onnx.ModelProto, not int"):
        onnx_bcast.check(42)


def test_every_malformed_model_gives_the_command_lines_verdict_or_its_error(tmp_path):
    """fixtures/malformed: no crash of the interpreter, the CLI's error message or the CLI's report."""
    malformed = sorted((FIXTURES / "malformed").glob("*.onnx"))
    assert len(malformed) > 30
    expected = cli_json(*malformed)
    raised = 0
    for path in malformed:
        cli = expected[str(path)]
        if "error" in cli:
            with pytest.raises(onnx_bcast.ModelError) as error:
                onnx_bcast.check(path)
            assert str(error.value) == cli["error"], path
            with pytest.raises(onnx_bcast.OnnxBcastError):
                onnx_bcast.expand(path, tmp_path / "out.onnx")
            raised += 1
        else:
            assert json.loads(onnx_bcast.check(path).to_json()) == cli, path
            try:
                onnx_bcast.expand(path)
            except onnx_bcast.RefusedError as refused:
                assert "not rewritten" in str(refused)
            except onnx_bcast.OnnxBcastError:
                pass
    assert raised > 5
    assert not list(tmp_path.iterdir()), "nothing is written for a model that cannot be rewritten"


def test_a_panic_is_an_internal_error_not_a_crash():
    import subprocess
    import sys
    code = (
        "import onnx_bcast, sys\n"
        "try:\n    onnx_bcast.check(sys.argv[1])\n"
        "except onnx_bcast.InternalError as e:\n    print('caught:', e)\n"
        "print('still running')\n"
    )
    run = subprocess.run([sys.executable, "-c", code, str(BAD)], capture_output=True, text=True,
                         env={**os.environ, "ONNX_BCAST_TEST_PANIC": "check"})
    assert run.returncode == 0, run.stderr
    assert "caught: internal error:" in run.stdout and "test panic at check" in run.stdout
    assert run.stdout.rstrip().endswith("still running")


def test_the_gil_is_released_while_rust_works(tmp_path):
    """A Python thread keeps counting while `check` runs on a model large enough to take a while."""
    from onnx import TensorProto, helper
    n = 20000
    nodes = [helper.make_node("Add", [f"v{i}", "b"], [f"v{i + 1}"], name=f"add{i}") for i in range(n)]
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("v0", TensorProto.FLOAT, ["N", 8]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [8])],
        [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, None)])
    path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1

    thread = threading.Thread(target=count)
    thread.start()
    try:
        for _ in range(3):
            before = counter[0]
            report = onnx_bcast.check(path)
            during = counter[0] - before
            if during > 1000:
                break
    finally:
        stop.set()
        thread.join()
    assert report.summary.sites == n
    assert during > 1000, f"the counting thread advanced {during} times while check ran"


def _wide(n: int) -> onnx.ModelProto:
    """A chain of `n` Adds, every 1,000th value also added to a [3] (a violation) and to an [M] (a condition)."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Add", [f"v{i}", "b"], [f"v{i + 1}"], name=f"add{i}") for i in range(n)]
    for i in range(0, n, 1000):
        nodes.append(helper.make_node("Add", [f"v{i}", "c"], [f"bad{i}"], name=f"bad{i}"))
        nodes.append(helper.make_node("Add", [f"v{i}", "m"], [f"if{i}"], name=f"if{i}"))
    info = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes, "wide",
        [info("v0", TensorProto.FLOAT, ["N", 8]), info("b", TensorProto.FLOAT, [8]),
         info("c", TensorProto.FLOAT, [3]), info("m", TensorProto.FLOAT, ["M"])],
        [info(f"v{n}", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_model_of_many_nodes_lists_its_sites_on_request_from_the_bytes_it_checked(tmp_path):
    """A model of 12,000 nodes is checked as the command line checks it, keeping only its findings' sites; `sites`
    and `to_json()` check it again, from the bytes that were checked (a copy, for a file): the same findings, sites
    and JSON as the command line's, even once the file is overwritten."""
    model = _wide(12000)
    path = tmp_path / "wide.onnx"
    onnx.save(model, path)
    expected = cli_json(path)[str(path)]
    by_node = {s["node"]: onnx_bcast.Site._from_json(s) for s in expected["sites"]}
    reports = [onnx_bcast.check(path), onnx_bcast.check(model), onnx_bcast.check(model.SerializeToString())]
    onnx.save(onnx.load(BAD), path)
    for report in reports:
        assert [(f.code, f.severity, f.node, f.message) for f in report.findings] == [
            (f["code"], f["severity"], f["node"], f["message"]) for f in expected["findings"]]
        assert all(f.site == by_node[f.node] for f in report.findings) and len(report.findings) == 24
        assert len(report.sites) == report.summary.sites == 12024
        assert report.sites == list(map(onnx_bcast.Site._from_json, expected["sites"]))
        assert json.loads(report.to_json()) == {**expected, "model": report.model}


#: The child scripts' count of the extension's worker threads (named "onnx-bcast"), from /proc.
COUNT_WORKERS = """
import os
def workers():
    names = []
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:  # a thread that ended between the listing and the read
            pass
    return names.count("onnx-bcast")
"""


def _child(script, *args, env=None):
    """The standard output of `script` run in a Python of its own with `args`; its standard error in the failure
    when it does not exit 0."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"the child exited {done.returncode}:\n{done.stderr}"
    return done.stdout


WORKERS = COUNT_WORKERS + """
import sys, threading, time, onnx_bcast
from concurrent.futures import ThreadPoolExecutor
# Threads with 1 MiB of stack: too little for the work to run on them, so it runs on the workers.
threading.stack_size(1 << 20)
def sequential():
    for _ in range(20):
        onnx_bcast.check(sys.argv[1])
thread = threading.Thread(target=sequential)
thread.start()
thread.join()
after_sequential = workers()
with ThreadPoolExecutor(8) as pool:
    list(pool.map(lambda _: onnx_bcast.check(sys.argv[1]).to_json(), range(64)))
# The workers not kept end after handing over their result: give them a moment to be gone.
deadline = time.monotonic() + 10
while workers() > 4 and time.monotonic() < deadline:
    time.sleep(0.01)
print(after_sequential, workers())
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads are counted in /proc (Linux)")
def test_calls_share_worker_threads_and_keep_only_a_few():
    """A call runs on a worker thread kept for the next one: twenty calls one after the other leave one worker, and
    calls from eight threads at once leave no more than four (the rest end after their call)."""
    out = _child(WORKERS, FIXTURES / "symbolic_batch.onnx").split()
    assert out[0] == "1" and 1 <= int(out[1]) <= 4, out


ON_THIS_THREAD = COUNT_WORKERS + """
import resource, sys, threading, time, onnx_bcast
began = time.monotonic()
report = onnx_bcast.check(sys.argv[1])
took = time.monotonic() - began
on_main = workers()
threading.stack_size(1 << 20)
thread = threading.Thread(target=lambda: onnx_bcast.check(sys.argv[1]))
thread.start()
thread.join()
print(report.summary.sites, len(report.findings), f"{took:.3f}", on_main, workers())
"""


def _on_this_thread(model, slow_ms=None):
    """Checks `model` on the main thread of a Python of its own, then on a thread with 1 MiB of stack: the sites, the
    findings, the first call's seconds, and the workers after each call."""
    env = dict(os.environ)
    env.pop("ONNX_BCAST_TEST_SLOW_MS", None)
    if slow_ms is not None:
        env["ONNX_BCAST_TEST_SLOW_MS"] = str(slow_ms)
    out = _child(ON_THIS_THREAD, model, env=env).split()
    return int(out[0]), int(out[1]), float(out[2]), int(out[3]), int(out[4])


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads are counted in /proc (Linux)")
def test_a_small_models_check_runs_on_the_calling_thread_when_its_stack_suffices():
    """A small model is checked on the calling thread when it has 4 MiB of stack left (the main thread's 8 MiB):
    no worker starts; on a thread with 1 MiB of stack it is checked on a worker."""
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    if soft != resource.RLIM_INFINITY and soft < 6 << 20:
        pytest.skip(f"the main thread's stack is {soft} bytes")
    sites, findings, _, on_main, after_thread = _on_this_thread(BAD)
    assert (sites, findings) == (1, 1)
    assert (on_main, after_thread) == (0, 1)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads are counted in /proc (Linux)")
def test_a_check_past_its_time_on_the_calling_thread_is_run_again_on_a_worker():
    """50 nodes that wait 20 ms each run past the 200 ms a call may take on the calling thread: the call is stopped
    there and run again, whole, on a worker (which lets Python handle Ctrl-C): all 50 sites, and a worker started by
    the first call."""
    chain = FIXTURES / "crafted" / "chain_50.pb"
    sites, _, took, on_main, _ = _on_this_thread(chain, slow_ms=20)
    assert sites == 50 and on_main == 1
    assert took >= 1.0, took
    assert _on_this_thread(chain)[0] == 50


def test_threads_check_models_concurrently_with_the_same_results(fixtures):
    from concurrent.futures import ThreadPoolExecutor
    serial = [onnx_bcast.check(p).to_json() for p in fixtures]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda p: onnx_bcast.check(p).to_json(), fixtures))
    assert parallel == serial


@pytest.mark.parametrize("whole_up_to", [0, None])
def test_a_modelproto_with_large_initializers_is_judged_as_its_file(tmp_path, monkeypatch, whole_up_to):
    """`check`/`shapes` of a ModelProto leave large initializers' data out of what they serialize (above a few MB of
    it: here forced with a limit of 0, else the model is serialized whole); the report must still be the file's, down
    to a large tensor whose data has the wrong size (tensor-data-mismatch) and a small one whose data is far too
    long."""
    if whole_up_to is not None:
        monkeypatch.setattr(onnx_bcast._api, "_SERIALIZED_WHOLE_UP_TO", whole_up_to)
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32), "w")
    short = numpy_helper.from_array(np.ones((300, 300), np.float32), "short")
    short.raw_data = short.raw_data[:-8]
    long_small = numpy_helper.from_array(np.array([2, 256, 1, 512], np.int64), "long_small")
    long_small.raw_data = b"\0" * 5000
    shape = numpy_helper.from_array(np.array([2, 256, 512], np.int64), "shape")
    nodes = [
        helper.make_node("Add", ["x", "w"], ["y"], name="add"),
        helper.make_node("Mul", ["y", "short"], ["z"], name="mul"),
        helper.make_node("Expand", ["z", "shape"], ["e"], name="expand"),
        helper.make_node("Reshape", ["e", "long_small"], ["r"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 512])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)],
        initializer=[weight, short, long_small, shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "large.onnx"
    onnx.save(model, path)
    native, kind, left_out = onnx_bcast._api._analysable(model)
    if whole_up_to is None:
        assert left_out == [] and native == model.SerializeToString()
    else:
        assert left_out == [(0, 256 * 512 * 4), (1, 300 * 300 * 4 - 8)] and len(native) < 10_000
    by_path, by_proto = onnx_bcast.check(path), onnx_bcast.check(model)
    assert _without_model(by_proto) == _without_model(by_path)
    assert {f.code for f in by_path.findings} >= {"tensor-data-mismatch"}, by_path
    assert onnx_bcast.shapes(model) == onnx_bcast.shapes(path)
    assert onnx.load(path).SerializeToString() == model.SerializeToString(), "the caller's model is untouched"


def test_a_process_pool_maps_check_and_sends_reports_back(fixtures):
    """Reports pickle (their answers travel as strings), so `ProcessPoolExecutor.map(onnx_bcast.check, paths)`
    works, and the reports that come back read as the ones made here."""
    import pickle
    from concurrent.futures import ProcessPoolExecutor
    models = [p for p in fixtures if p.parent == FIXTURES]
    here = [onnx_bcast.check(p) for p in models]
    with ProcessPoolExecutor(2) as pool:
        back = list(pool.map(onnx_bcast.check, models))
    for a, b in zip(here, back):
        assert (b.ok, b.to_json(), b.summary, b.findings, repr(b)) == (a.ok, a.to_json(), a.summary, a.findings, repr(a))
    again = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(here[0]))))
    assert again.to_json() == here[0].to_json() and again.sites == here[0].sites


POSITION_TABLE = FIXTURES / "inference" / "slice_buffer_to_sequence.onnx"


def test_bind_turns_a_condition_into_the_violation_the_command_line_finds():
    """A position table sliced to min(64, seq): `seq ≤ 64` is a condition; bound past it, a violation."""
    import subprocess
    assert not onnx_bcast.check(POSITION_TABLE).summary.violations
    past = onnx_bcast.check(POSITION_TABLE, bind={"seq": 128})
    assert past.summary.violations == 1 and not past.ok
    [finding] = [f for f in past.findings if f.code == "broadcast-violation"]
    assert finding.axis is not None and finding.inputs
    run = subprocess.run([str(BINARY), "check", "--format", "json", "--bind", "seq=128", str(POSITION_TABLE)],
                         capture_output=True, text=True)
    assert json.loads(past.to_json()) == json.loads(run.stdout)
    assert onnx_bcast.check(POSITION_TABLE, bind={"seq": 32}).summary.violations == 0
    assert all(isinstance(d, int) for t in onnx_bcast.shapes(POSITION_TABLE, bind={"seq": 32, "batch": 2})["main"].values()
               for d in (t.shape or ()))
    with pytest.raises(onnx_bcast.BindError, match="no input of the model has a dim named 'nope'"):
        onnx_bcast.check(POSITION_TABLE, bind={"nope": 3})
    explicit, summary = onnx_bcast.expand(POSITION_TABLE.read_bytes(), bind={"seq": 32, "batch": 2})
    assert summary.left == () and onnx_bcast.check(explicit, strict=True).summary.conditional == 0
