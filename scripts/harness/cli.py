"""Running the onnx-bcast binary (or any command) and reading what it prints."""

import hashlib
import json
import subprocess
import time

TIMEOUT = 900  # seconds for one onnx-bcast run
VERDICTS = ["same", "broadcast", "violation", "conditional", "unknown"]  # a site's verdict in check's JSON


def run(cmd, timeout=TIMEOUT, digits=2, timeout_text=None, raise_timeout=False):
    """{"rc", "stdout", "stderr", "seconds"} of one command; a timeout gives rc None and `timeout_text` (default
    "timed out after N s") on stderr, or raises subprocess.TimeoutExpired with `raise_timeout`. `digits`: the
    rounding of the seconds (None: not rounded)."""
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        if raise_timeout:
            raise
        text = f"timed out after {timeout} s" if timeout_text is None else timeout_text
        return {"rc": None, "stdout": "", "stderr": text, "seconds": timeout}
    secs = time.monotonic() - t
    return {"rc": p.returncode, "stdout": p.stdout.decode("utf-8", "replace"),
            "stderr": p.stderr.decode("utf-8", "replace"), "seconds": secs if digits is None else round(secs, digits)}


def tail(text, n=15):
    """The last n non-blank lines."""
    lines = [l for l in text.splitlines() if l.strip()]
    return "\n".join(lines[-n:])


def json_line(text):
    """The one JSON document of `--format json` (one line; blank lines aside)."""
    lines = [l for l in text.splitlines() if l.strip()]
    if len(lines) != 1:
        raise ValueError(f"expected one JSON line, got {len(lines)}")
    return json.loads(lines[0])


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main_values(binary, path, timeout=300):
    """`shapes --format json` of the main graph: (its values, the opaque ops); raises when shapes fails."""
    p = subprocess.run([binary, "shapes", "--format", "json", path], capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"shapes exited {p.returncode}: {p.stderr.decode('utf-8', 'replace')[-600:]}")
    data = json.loads(p.stdout)
    mains = [g for g in data["graphs"] if g["graph"] == "main"]
    if len(mains) != 1:
        raise RuntimeError("no main graph in shapes' JSON")
    return mains[0]["values"], data.get("opaque_ops", {})


def error_findings(report):
    """The findings of severity error in a check report."""
    return [f for f in report.get("findings", []) if f.get("severity") == "error"]


def finding_text(f):
    """A finding in one line: code, graph/node (op): message."""
    return f"{f.get('code')} {f.get('graph')}/{f.get('node')} ({f.get('op')}): {f.get('message')}"
