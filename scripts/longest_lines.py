#!/usr/bin/env python3
"""The longest line every command prints, in every human-readable format, on the corpora (issue 28: at most 300
characters, not counting the model's path).

    python3 scripts/longest_lines.py BIN OUT_JSON MODELS_DIR...

Runs, on every .onnx model below each MODELS_DIR: `check` (text, text --verbose, text --strict, text --safe-ranges
over every symbol of the inputs, github, sarif),
`shapes` (text), `expand`, `fold` and `infer` with --dry-run (text), and `explain` of every code, and measures every
line of stdout and stderr with each occurrence of the model's path removed. JSON output (`--format json`, one object
per model per line) is machine-readable and not a line a person reads; it is measured separately. SARIF is measured
as a person reads it: `message.text` of each result (GitHub shows it); its `properties.fullMessage` keeps the whole
message for machines. Writes {"limit", "longest": {format: [length, command, line]}, "over": [...]} to OUT_JSON and
prints one line per format. Exit status 1 when a human-readable line is over the limit, or any line holds an OS
error code (`(os error 2)`).
"""

import concurrent.futures
import glob
import json
import os
import subprocess
import sys

LIMIT = 300


def runs(binary, model):
    yield "check text", [binary, "check", "--no-config", model]
    yield "check text --verbose", [binary, "check", "--no-config", "--verbose", model]
    yield "check text --strict --statistics", [binary, "check", "--no-config", "--strict", "--statistics", model]
    yield "check text --safe-ranges", [binary, "check", "--no-config", "--safe-ranges", model]
    yield "check github", [binary, "check", "--no-config", "--strict", "--format", "github", model]
    yield "check sarif", [binary, "check", "--no-config", "--strict", "--format", "sarif", model]
    yield "check json", [binary, "check", "--no-config", "--strict", "--format", "json", model]
    yield "shapes text", [binary, "shapes", model]
    yield "expand text", [binary, "expand", "--dry-run", model]
    yield "fold text", [binary, "fold", "--dry-run", model]
    yield "infer text", [binary, "infer", "--dry-run", model]


def lines_of(kind, stdout, stderr):
    if kind == "check sarif":
        log = json.loads(stdout)
        texts = [r["message"]["text"] for run in log["runs"] for r in run.get("results", [])]
        return [line for t in texts for line in t.splitlines()] + stderr.splitlines()
    return stdout.splitlines() + stderr.splitlines()


def main():
    binary, out_json, folders = sys.argv[1], sys.argv[2], sys.argv[3:]
    models = sorted(m for f in folders for m in glob.glob(os.path.join(f, "**", "*.onnx"), recursive=True))
    longest, over, count, os_errors = {}, [], 0, []
    env = {**os.environ, "NO_COLOR": "1", "CI": "true"}
    listed = subprocess.run([binary, "explain", "--list"], capture_output=True, text=True).stdout
    # A code starts its line; the lines of a wrapped summary under it are indented.
    codes = [line.split()[0] for line in listed.splitlines() if line.strip() and not line[0].isspace()]
    explain = [(f"explain {c}", [binary, "explain", c]) for c in codes]
    explain += [("explain --list", [binary, "explain", "--list"]), ("explain", [binary, "explain"])]
    helps = [[binary, "--help"]] + [[binary, c, "--help"] for c in
                                    ("check", "shapes", "expand", "infer", "fold", "explain", "completions", "man")]
    explain += [(" ".join(h[1:]), h) for h in helps]
    jobs = [(None, k, c) for k, c in explain] + [(m, k, c) for m in models for k, c in runs(binary, m)]
    # The runs are independent: a pool of LONGEST_LINES_JOBS threads (default: one per core) waits on them.
    workers = int(os.environ.get("LONGEST_LINES_JOBS", os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(lambda job: subprocess.run(job[2], capture_output=True, text=True, env=env), jobs))
    for (model, kind, command), r in zip(jobs, done):
        for line in lines_of(kind, r.stdout, r.stderr):
            shown = line.replace(model, "") if model else line
            n = len(shown)
            count += 1
            if "(os error" in line:
                os_errors.append(line[:200])
            key = "json (machine-readable)" if kind == "check json" else kind
            if n > longest.get(key, (0,))[0]:
                longest[key] = (n, " ".join(command), shown[:400])
            if n > LIMIT and kind != "check json":
                over.append((n, kind, model, shown[:200]))
    report = {"limit": LIMIT, "models": len(models), "lines": count, "longest": longest, "over": len(over),
              "os_error_codes": len(os_errors),
              "over_examples": sorted(over, reverse=True)[:20]}
    with open(out_json, "w") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    for key, (n, command, _) in sorted(longest.items()):
        print(f"{key}: {n}")
    print(f"{len(models)} models, {count} lines, {len(over)} over {LIMIT}, {len(os_errors)} with an OS error code")
    sys.exit(1 if over or os_errors else 0)


if __name__ == "__main__":
    main()
