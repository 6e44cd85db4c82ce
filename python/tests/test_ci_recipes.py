"""The CI recipes of docs/ci.md, run as written: the pre-commit hooks (a `language: system` hook on the installed
command, a `language: python` hook on the wheel) and the repository's composite GitHub Action (action.yml), whose
`run` steps are run in bash as a runner runs them, with the `uses` steps stood in for (the cache, the SARIF upload)
and checked for what they are given."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import BINARY, FIXTURES, REPO, WHEEL

DOCS = REPO / "docs" / "ci.md"


def recipe(name: str) -> str:
    """The YAML block after `<!-- recipe: NAME -->` in docs/ci.md."""
    found = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```yaml\n(.*?)```", DOCS.read_text(), re.S)
    assert found, f"docs/ci.md has no recipe {name}"
    return found.group(1)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _project(tmp_path: Path, config: str) -> Path:
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(config)
    shutil.copy(FIXTURES / "multidirectional_add_ok.onnx", repo / "ok.onnx")
    _git(repo, "add", ".")
    return repo


def _judges_staged_models(repo: Path, env: dict[str, str]) -> None:
    """pre-commit passes on the clean model, then fails on a staged model with a violation, naming it."""
    pre_commit = [sys.executable, "-m", "pre_commit", "run", "--all-files"]
    clean = subprocess.run(pre_commit, cwd=repo, env=env, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    shutil.copy(FIXTURES / "multidirectional_add_bad.onnx", repo / "bad.onnx")
    _git(repo, "add", "bad.onnx")
    failing = subprocess.run(pre_commit, cwd=repo, env=env, capture_output=True, text=True)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "bad.onnx: error[broadcast-violation] main › add (Add)" in failing.stdout


def _path_without_cargo() -> str:
    return os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "cargo").exists())


def test_the_system_hook_runs_the_installed_command(tmp_path):
    repo = _project(tmp_path, recipe("pre-commit-system"))
    # The command on PATH: the Rust binary, as `cargo install` puts it there.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "onnx-bcast").symlink_to(BINARY)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PATH": f"{bin_dir}{os.pathsep}{_path_without_cargo()}"}
    _judges_staged_models(repo, env)


def test_the_python_hook_installs_the_wheel_and_compiles_nothing(tmp_path):
    config = recipe("pre-commit-wheel")
    placeholder = re.search(r'"(/path/to/dist/[^"]+\.whl)"', config)
    assert placeholder, config
    repo = _project(tmp_path, config.replace(placeholder.group(1), str(WHEEL)))
    # No cargo on PATH: installing the hook must not compile anything.
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PATH": _path_without_cargo()}
    _judges_staged_models(repo, env)
    installed = list((tmp_path / "cache").rglob("onnx_bcast/_native*.so"))
    assert installed, "the hook's venv holds the wheel's extension"


class Runner:
    """Runs a composite action's steps as a GitHub runner does: `${{ }}` expressions over `inputs`, `steps` and
    `github.action_path`, `if:` conditions, `GITHUB_OUTPUT` and `GITHUB_PATH` files, bash with `-eo pipefail`.
    `uses` steps are stood in for: `actions/cache` hits or misses as told, `upload-sarif` records the file it got.
    An expression or action this runner does not know fails the test, so the action cannot outgrow it."""

    def __init__(self, workspace: Path, temp: Path, inputs: dict[str, str], cache_hit: bool) -> None:
        action = yaml.safe_load((REPO / "action.yml").read_text())
        assert action["runs"]["using"] == "composite"
        declared = action["inputs"]
        unknown = set(inputs) - set(declared)
        assert not unknown, f"inputs action.yml does not declare: {unknown}"
        self.inputs = {name: str(spec.get("default", "")) for name, spec in declared.items()} | inputs
        self.action, self.workspace, self.temp, self.cache_hit = action, workspace, temp, cache_hit
        self.outputs: dict[str, dict[str, str]] = {}
        self.path_file = temp / "github_path"
        self.path_file.touch()
        self.ran: list[str] = []
        self.uploaded: list[Path] = []
        self.failed: int | None = None
        self.stdout = self.stderr = ""

    def value(self, expression: str) -> str:
        expression = expression.strip()
        if expression == "github.action_path":
            return str(REPO)
        if m := re.fullmatch(r"inputs\.([\w-]+)", expression):
            return self.inputs[m.group(1)]
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
            return self.outputs.get(m.group(1), {}).get(m.group(2), "")
        raise AssertionError(f"the test runner does not know the expression `{expression}`")

    def text(self, text: str) -> str:
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: self.value(m.group(1)), str(text))

    def condition(self, text: str | None) -> bool:
        if text is None:
            return self.failed is None
        ok, always = True, False
        for part in (p.strip() for p in text.split("&&")):
            if part == "always()":
                always = True
            elif m := re.fullmatch(r"(.+?) (==|!=) '(.*)'", part):
                equal = self.value(m.group(1)) == m.group(3)
                ok = ok and (equal if m.group(2) == "==" else not equal)
            else:
                raise AssertionError(f"the test runner does not know the condition `{part}`")
        return ok and (always or self.failed is None)

    def run(self) -> None:
        for index, step in enumerate(self.action["runs"]["steps"]):
            name = step.get("id", str(index))
            if not self.condition(step.get("if")):
                continue
            self.ran.append(name)
            if "uses" in step:
                self.outputs[name] = self.uses(step["uses"], {k: self.text(v) for k, v in step.get("with", {}).items()})
            else:
                self.bash(name, step)

    def uses(self, action: str, given: dict[str, str]) -> dict[str, str]:
        if action == "actions/cache@v4":
            assert given["path"] == self.outputs["key"]["root"] and given["key"].startswith("onnx-bcast-Linux-")
            return {"cache-hit": "true" if self.cache_hit else "false"}
        if action == "github/codeql-action/upload-sarif@v3":
            self.uploaded.append(self.workspace / given["sarif_file"])
            return {}
        raise AssertionError(f"the test runner does not stand in for {action}")

    def bash(self, name: str, step: dict) -> None:
        assert step["shell"] == "bash", step
        output = self.temp / f"output-{name}"
        output.touch()
        added = [line for line in self.path_file.read_text().splitlines() if line]
        env = {
            **os.environ,
            "PATH": os.pathsep.join([*reversed(added), os.environ["PATH"]]),
            "RUNNER_OS": "Linux",
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_PATH": str(self.path_file),
            "GITHUB_WORKSPACE": str(self.workspace),
            # Only how fast the one cold build is (the command is the step's own): no optimisation, and a target
            # folder kept in the test cache, so that a later run builds nothing.
            "CARGO_TARGET_DIR": str(Path(os.environ["ONNX_BCAST_CACHE"]) / "action-target"),
            "CARGO_PROFILE_RELEASE_OPT_LEVEL": "0",
            **{k: self.text(v) for k, v in step.get("env", {}).items()},
        }
        script = self.temp / f"step-{name}.sh"
        script.write_text(self.text(step["run"]))
        run = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.workspace,
                             env=env, capture_output=True, text=True)
        self.stdout += run.stdout
        if run.returncode != 0:
            self.failed = run.returncode
        self.stderr += run.stderr
        self.outputs[name] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "models").mkdir(parents=True)
    shutil.copy(FIXTURES / "multidirectional_add_ok.onnx", workspace / "models" / "ok.onnx")
    shutil.copy(FIXTURES / "multidirectional_add_bad.onnx", workspace / "models" / "bad.onnx")
    return workspace


def _workflow_inputs() -> dict[str, str]:
    """The `with:` of the step of docs/ci.md's workflow that uses the action."""
    workflow = yaml.safe_load(recipe("github-workflow"))
    steps = workflow["jobs"]["check"]["steps"]
    ours = [s for s in steps if s.get("uses", "").split("@")[0].endswith("/onnx-bcast")]
    assert len(ours) == 1, steps
    assert workflow["jobs"]["check"]["permissions"]["security-events"] == "write"
    return {k: str(v) for k, v in ours[0]["with"].items()}


@pytest.mark.parametrize("cache_hit", [False, True])
def test_the_action_builds_checks_annotates_and_uploads_sarif(tmp_path, cache_hit):
    workspace, temp = _workspace(tmp_path), tmp_path / "runner-temp"
    temp.mkdir()
    if cache_hit:
        # What the cache restores: the binary the build step installed, at the root the key step names.
        root = temp / "onnx-bcast" / "bin"
        root.mkdir(parents=True)
        shutil.copy(BINARY, root / "onnx-bcast")
    runner = Runner(workspace, temp, _workflow_inputs(), cache_hit)
    runner.run()
    built = "build" in runner.ran
    assert built != cache_hit, runner.ran
    assert runner.outputs["check"]["exit-code"] == "1"
    assert runner.failed == 1, "the last step fails the job with check's status"
    assert "::error file=models/bad.onnx,title=broadcast-violation::" in runner.stdout, runner.stdout
    assert runner.uploaded == [workspace / "onnx-bcast.sarif"]
    sarif = json.loads(runner.uploaded[0].read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["broadcast-violation"], results


def test_the_action_passes_on_clean_models_and_can_skip_the_upload(tmp_path):
    workspace, temp = _workspace(tmp_path), tmp_path / "runner-temp"
    temp.mkdir()
    (workspace / "models" / "bad.onnx").unlink()
    root = temp / "onnx-bcast" / "bin"
    root.mkdir(parents=True)
    shutil.copy(BINARY, root / "onnx-bcast")
    runner = Runner(workspace, temp, {"paths": "models", "upload-sarif": "false", "args": "--deny conditional-broadcast"}, True)
    runner.run()
    assert runner.failed is None, runner.stdout
    assert runner.outputs["check"]["exit-code"] == "0"
    assert runner.uploaded == []
    assert (workspace / "onnx-bcast.sarif").exists()
