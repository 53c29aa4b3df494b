"""A small stand-in for GitHub's runner: runs a composite action's steps as the runner would.

It covers what `action.yml` uses and nothing more: `run:` steps under bash with GitHub's
default flags, `env:` and `with:` values holding `${{ inputs.* }}`, `${{ steps.*.outputs.* }}`,
`${{ runner.temp }}` or `${{ github.action_path }}`, `if:` conditions made of `always()`,
`success()`, `==` and `!=` against a quoted string, `&&` and `||` (without parentheses), and
`actions/upload-artifact` and `actions/download-artifact`, whose upload is a copy into an
artifacts folder and whose download (by `name`, or by `pattern` with `merge-multiple`) a copy
out of it. Jobs of one workflow run share the artifacts folder. The event payload,
`GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY` are real files, as on a runner.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_UPLOAD_ARTIFACT = "actions/upload-artifact@"
_DOWNLOAD_ARTIFACT = "actions/download-artifact@"
# What makes a condition run after a failure; any other is `success() && (...)` (GitHub's rule).
_STATUS_FUNCTIONS = ("always()", "failure()", "cancelled()")


@dataclass(frozen=True)
class Event:
    """A GitHub event: its name, the payload the runner writes to GITHUB_EVENT_PATH, and the
    ref the run is for (GITHUB_REF: `refs/heads/BRANCH` on a push, `refs/pull/N/merge` on a
    pull request)."""

    name: str
    payload: Mapping[str, Any]
    ref: str


@dataclass
class StepRun:
    step_id: str
    name: str
    outcome: str  # success, failure or skipped, as `steps.<id>.outcome` says
    exit_code: int | None
    output: str
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]
    summary: str
    artifacts: Path

    @property
    def failed(self) -> bool:
        return any(step.outcome == "failure" for step in self.steps)

    def step(self, step_id: str) -> StepRun:
        return next(step for step in self.steps if step.step_id == step_id)

    def log(self) -> str:
        """The run as a runner's log shows it: each step's name, its output, its outcome."""
        parts = []
        for step in self.steps:
            parts.append(f"##[group]{step.name}\n{step.output.rstrip()}\n##[endgroup]")
            parts.append(f"{step.name}: {step.outcome} (exit {step.exit_code})")
        return "\n".join(parts) + "\n"


@dataclass(frozen=True)
class Runner:
    """One job's runner folders: workspace (the checkout), temp, artifacts, event files."""

    action_path: Path
    workspace: Path
    home: Path
    base_env: Mapping[str, str]
    # RUNNER_TEMP; a test module may share one between runs, as steps of one job would.
    temp: Path | None = None
    # The workflow run's artifacts; jobs of one run share it. Default: HOME/artifacts.
    artifacts: Path | None = None

    @property
    def artifact_store(self) -> Path:
        return self.artifacts or self.home / "artifacts"

    def run(self, inputs: Mapping[str, str], event: Event) -> ActionRun:
        action = yaml.safe_load((self.action_path / "action.yml").read_text(encoding="utf-8"))
        values = _inputs_with_defaults(action, inputs)
        files = self._job_files(event)
        context = _Context(values, self.action_path, files["RUNNER_TEMP"])
        runs: list[StepRun] = []
        for index, step in enumerate(action["runs"]["steps"]):
            runs.append(self._step(step, index, context, files, failed=_any_failed(runs)))
        outputs = {
            name: context.evaluate(spec["value"]) for name, spec in action["outputs"].items()
        }
        summary = Path(files["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")
        return ActionRun(runs, outputs, summary, self.artifact_store)

    def _job_files(self, event: Event) -> dict[str, str]:
        temp = self.temp or self.home / "runner-temp"
        temp.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        event_path = self.home / "event.json"
        event_path.write_text(json.dumps(event.payload), encoding="utf-8")
        summary = self.home / "step_summary.md"
        summary.touch()
        return {
            "RUNNER_TEMP": str(temp),
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_EVENT_NAME": event.name,
            "GITHUB_REF": event.ref,
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_ACTION_PATH": str(self.action_path),
            "GITHUB_ACTIONS": "true",
            "CI": "true",
        }

    def _step(
        self,
        step: Mapping[str, Any],
        index: int,
        context: _Context,
        files: Mapping[str, str],
        *,
        failed: bool,
    ) -> StepRun:
        step_id = str(step.get("id", f"step{index}"))
        name = str(step.get("name", step_id))
        if not context.condition(str(step.get("if", "success()")), failed=failed):
            return StepRun(step_id, name, "skipped", None, "")
        if "uses" in step:
            run = self._uses(step, step_id, name, context)
        else:
            run = self._run(step, step_id, name, context, files)
        context.steps[step_id] = run.outputs
        return run

    def _run(
        self,
        step: Mapping[str, Any],
        step_id: str,
        name: str,
        context: _Context,
        files: Mapping[str, str],
    ) -> StepRun:
        assert step.get("shell") == "bash", f"{name}: the harness runs bash steps only"
        # Where a runner keeps its file-command files: a folder of their own in RUNNER_TEMP.
        commands = Path(files["RUNNER_TEMP"]) / "_runner_file_commands"
        commands.mkdir(exist_ok=True)
        output_file = commands / f"set_output_{step_id}"
        output_file.write_text("", encoding="utf-8")
        script = Path(files["RUNNER_TEMP"]) / f"step-{step_id}.sh"
        script.write_text(step["run"], encoding="utf-8")
        env = {**self.base_env, **files, "GITHUB_OUTPUT": str(output_file)}
        env.update(
            {key: context.evaluate(str(value)) for key, value in step.get("env", {}).items()}
        )
        # GitHub's command line for `shell: bash`.
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        outputs = parse_output_file(output_file.read_text(encoding="utf-8"))
        outcome = "success" if done.returncode == 0 else "failure"
        return StepRun(step_id, name, outcome, done.returncode, done.stdout + done.stderr, outputs)

    def _uses(self, step: Mapping[str, Any], step_id: str, name: str, context: _Context) -> StepRun:
        given = {key: context.evaluate(str(value)) for key, value in step["with"].items()}
        if str(step["uses"]).startswith(_UPLOAD_ARTIFACT):
            return self._upload(given, step_id, name)
        assert str(step["uses"]).startswith(_DOWNLOAD_ARTIFACT), step["uses"]
        return self._download(given, step_id, name)

    def _upload(self, given: Mapping[str, str], step_id: str, name: str) -> StepRun:
        source = self.workspace / given["path"]
        target = self.artifact_store / given["name"]
        files = [path for path in source.rglob("*") if path.is_file()] if source.is_dir() else []
        if not files:
            missing = given.get("if-no-files-found", "warn")
            outcome = "failure" if missing == "error" else "success"
            return StepRun(step_id, name, outcome, None, f"No files were found at {source}")
        # An artifact's name is unique within a workflow run: uploading one twice fails.
        if target.exists():
            return StepRun(step_id, name, "failure", None, f"artifact {given['name']} exists")
        shutil.copytree(source, target)
        return StepRun(step_id, name, "success", 0, f"uploaded {len(files)} file(s) as {target}")

    def _download(self, given: Mapping[str, str], step_id: str, name: str) -> StepRun:
        target = self.workspace / given.get("path", ".")
        store = self.artifact_store
        if given.get("name"):
            if not (store / given["name"]).is_dir():
                return StepRun(step_id, name, "failure", 1, f"Artifact not found: {given['name']}")
            shutil.copytree(store / given["name"], target, dirs_exist_ok=True)
            return StepRun(step_id, name, "success", 0, f"downloaded {given['name']}")
        found = sorted(
            artifact.name
            for artifact in (store.iterdir() if store.is_dir() else [])
            if fnmatch.fnmatchcase(artifact.name, given["pattern"])
        )
        # YAML reads `true` as a boolean; the runner hands the action the string "true".
        merge = given.get("merge-multiple", "false").lower() == "true"
        for artifact in found:
            destination = target if merge else target / artifact
            shutil.copytree(store / artifact, destination, dirs_exist_ok=True)
        return StepRun(step_id, name, "success", 0, f"downloaded {len(found)} artifact(s)")


class _Context:
    """The expression contexts a composite action's `env:`, `with:` and outputs read."""

    def __init__(self, inputs: Mapping[str, str], action_path: Path, temp: str) -> None:
        self.inputs = dict(inputs)
        self.steps: dict[str, dict[str, str]] = {}
        self.fixed = {"runner.temp": temp, "github.action_path": str(action_path)}

    def evaluate(self, text: str) -> str:
        return _EXPRESSION.sub(lambda match: self._value(match.group(1)), text)

    def condition(self, expression: str, *, failed: bool) -> bool:
        """Whether a step whose `if:` is EXPRESSION runs, after a failure or not."""
        expression = _EXPRESSION.sub(lambda match: match.group(1), expression).strip()
        holds = any(
            all(self._atom(atom.strip(), failed) for atom in alternative.split("&&"))
            for alternative in expression.split("||")
        )
        # GitHub reads a condition without a status function as `success() && (condition)`.
        if not any(function in expression for function in _STATUS_FUNCTIONS):
            return holds and not failed
        return holds

    def _atom(self, atom: str, failed: bool) -> bool:
        if atom in ("always()", "success()", "failure()"):
            return {"always()": True, "success()": not failed, "failure()": failed}[atom]
        match = re.fullmatch(r"([a-z0-9._-]+) (==|!=) '([^']*)'", atom)
        assert match is not None, f"the harness does not evaluate the condition {atom!r}"
        equal = self._value(match.group(1)) == match.group(3)
        return equal if match.group(2) == "==" else not equal

    def _value(self, expression: str) -> str:
        if expression in self.fixed:
            return self.fixed[expression]
        if expression.startswith("inputs."):
            return self.inputs[expression.removeprefix("inputs.")]
        parts = expression.split(".")
        if len(parts) == 4 and parts[0] == "steps" and parts[2] == "outputs":
            # A step that did not run, or did not write the output, gives "" as on GitHub.
            return self.steps.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"the harness does not evaluate ${{{{ {expression} }}}}")


def _inputs_with_defaults(action: Mapping[str, Any], given: Mapping[str, str]) -> dict[str, str]:
    declared = action["inputs"]
    unknown = set(given) - set(declared)
    assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
    values = {}
    for name, spec in declared.items():
        if name in given:
            values[name] = given[name]
        else:
            assert not spec.get("required"), f"required input {name!r} not given"
            values[name] = str(spec.get("default", ""))
    return values


def _any_failed(runs: list[StepRun]) -> bool:
    return any(run.outcome == "failure" for run in runs)


def parse_output_file(text: str) -> dict[str, str]:
    """`name=value` lines and `name<<DELIMITER` blocks, as the runner reads GITHUB_OUTPUT."""
    outputs: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            for body in lines:
                if body == delimiter:
                    break
                block.append(body)
            outputs[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


def runner_environment() -> dict[str, str]:
    """This machine's environment without anything a real runner would not set for us."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "RUNNER_", "CI_", "THREE_LEDGER_", "GITLAB"))
    }


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def runner_commands(output: str) -> list[str]:
    """The lines of OUTPUT that GitHub's runner would act on as workflow commands, as it reads
    a step's output: split at CR, LF or CRLF; `::NAME ...::DATA` once leading blanks are
    dropped, or the older `##[NAME ...]DATA` anywhere in a line; none while a
    `::stop-commands::TOKEN` holds, until a `::TOKEN::` line (which is not listed either)."""
    found = []
    stopped_by: str | None = None
    for line in _LINE_BREAK.split(output):
        trimmed = line.lstrip()
        name = data = None
        if trimmed.startswith("::") and (end := trimmed.find("::", 2)) >= 0:
            name, data = trimmed[2:end].split(" ", 1)[0], trimmed[end + 2 :]
        elif (start := line.find("##[")) >= 0 and (end := line.find("]", start)) >= 0:
            name, data = line[start + 3 : end].split(" ", 1)[0], line[end + 1 :]
        if name is None:
            continue
        if stopped_by is not None:
            if name == stopped_by:
                stopped_by = None
            continue
        if name == "stop-commands":
            stopped_by = data
        found.append(line)
    return found
