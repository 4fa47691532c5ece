"""action.yml: its shape, and its `run` steps executed with bash the way a runner does, against the fake GitHub.

The runner's part is played here: `${{ ... }}` expressions are evaluated from the inputs and the step
outputs, each step gets its `env`, `GITHUB_ACTION_PATH`, a fresh `GITHUB_OUTPUT` file, and `bash -e`;
`actions/setup-python` is stood in for by an interpreter prepared offline (no index), which then installs the
gate from a copy of this repository exactly as the step says.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gate.report.context import MARKER
from tests.fakegithub import FakeGitHub, serve
from tests.fakegithub.scenario import REPO, Scenario, git

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with serve() as running:
        yield running


def test_action_yml_declares_inputs_outputs_and_composite_steps_with_a_shell() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"policy", "token", "python-version", "comment", "check-name"}
    assert all("description" in spec for spec in ACTION["inputs"].values())
    assert set(ACTION["outputs"]) == {"accepted", "total", "budget", "verdict"}
    for name, spec in ACTION["outputs"].items():
        assert spec["value"] == f"${{{{ steps.gate.outputs.{name} }}}}"
    steps = ACTION["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    for step in steps:
        assert ("uses" in step) != ("run" in step)
        if "run" in step:
            assert step["shell"] == "bash"
            assert "${{" not in step["run"]  # inputs reach scripts through env only: no shell injection


def test_the_workflows_are_valid_and_do_not_leave_credentials() -> None:
    for path in (ROOT / ".github" / "workflows").glob("*.yml"):
        workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert workflow["jobs"] and workflow.get("permissions"), path.name
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False, path.name
    gate = yaml.safe_load((ROOT / ".github" / "workflows" / "gate.yml").read_text(encoding="utf-8"))
    assert gate[True]["pull_request"]["types"] == ["opened", "synchronize", "reopened", "ready_for_review",
                                                   "labeled"]  # PyYAML reads the key `on` as True
    assert not any("pull_request_target" in str(w) for w in (ROOT / ".github" / "workflows").iterdir())


def evaluate(text: str, context: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key.startswith("steps.") and ".outputs." in key:
            return context.get(key, "")  # a runner reads an output never set as the empty string
        if key not in context:
            raise AssertionError(f"the test runner does not know the expression {key!r}")
        return context[key]

    return EXPRESSION.sub(one, text)


def offline_python(root: Path) -> Path:
    """An interpreter standing in for setup-python's: a venv that sees this environment's packages, so that
    `pip install ACTION_PATH` needs no network (the gate itself is really built and installed)."""
    venv = root / "python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return venv / "bin" / "python"


def action_copy(root: Path) -> Path:
    """The action as a runner downloads it: the repository's files, without caches or virtualenvs."""
    target = root / "action"
    ignore = shutil.ignore_patterns(".git", ".venv", "*.egg-info", "__pycache__", ".*_cache", "build", "tests")
    shutil.copytree(ROOT, target, ignore=ignore, symlinks=True)
    return target


def run_action(env: dict[str, str], inputs: dict[str, str], root: Path) -> tuple[int, dict[str, str], str]:
    """Run every step of action.yml; returns (exit code of the last step, the gate step's outputs, stderr)."""
    action_path = action_copy(root)
    python = offline_python(root)
    context = {f"inputs.{name}": inputs.get(name, str(spec.get("default", "")))
               for name, spec in ACTION["inputs"].items()}
    context["github.token"] = env["GITHUB_TOKEN"]
    context["inputs.token"] = evaluate(context["inputs.token"], context)
    context["github.action_path"] = str(action_path)
    outputs: dict[str, str] = {}
    code, stderr = 0, ""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")} | env
    base |= {"PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1", "PIP_NO_BUILD_ISOLATION": "0", "GITHUB_ACTION_PATH":
             str(action_path)}
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:  # actions/setup-python: its output is the interpreter's path
            context[f"steps.{step['id']}.outputs.python-path"] = str(python)
            continue
        output_file = root / f"output-{step.get('id', 'step')}"
        output_file.write_text("")
        step_env = base | {k: evaluate(str(v), context) for k, v in step.get("env", {}).items()}
        step_env["GITHUB_OUTPUT"] = str(output_file)
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              env=step_env, cwd=env["GITHUB_WORKSPACE"], capture_output=True, text=True)
        code, stderr = done.returncode, done.stderr
        if "id" in step:
            written = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
            context |= {f"steps.{step['id']}.outputs.{k}": v for k, v in written.items()}
            outputs = {name: evaluate(spec["value"], context) for name, spec in ACTION["outputs"].items()}
        if code != 0:
            break
    return code, outputs, stderr


def test_the_actions_steps_run_like_on_a_runner(fake: FakeGitHub, tmp_path: Path) -> None:
    pr = Scenario(fake, tmp_path, {".github/gate.yml": "budget: 3\n", "app.py": "x = 1\n"},
                  {"util.py": "def f(:\n"})
    env = pr.environment()
    code, outputs, stderr = run_action(env, {"check-name": "bot gate"}, tmp_path)
    assert code == 1, stderr  # blocked: the step fails, as a required check should
    assert outputs["accepted"] == "false" and outputs["total"] == "5" and outputs["budget"] == "3"
    assert Path(outputs["verdict"]).is_file()
    repo = fake.repos[REPO]
    assert [(s["context"], s["sha"]) for s in repo.statuses] == [("bot gate", pr.head_sha)]
    assert [r["name"] for r in repo.check_runs.values()] == ["bot gate"]
    assert MARKER in repo.comments[pr.number][0]["body"]
    assert fake.token not in stderr


def test_the_comment_input_turns_the_comment_off(fake: FakeGitHub, tmp_path: Path) -> None:
    pr = Scenario(fake, tmp_path, {"app.py": "x = 1\n"}, {"util.py": "y = 2\n"})
    code, outputs, stderr = run_action(pr.environment(), {"comment": "false"}, tmp_path)
    assert code == 0, stderr
    assert outputs["accepted"] == "true"
    assert pr.number not in fake.repos[REPO].comments and fake.repos[REPO].statuses[0]["state"] == "success"


def test_the_readme_workflows_parse_and_use_only_the_actions_inputs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- section: github -->", 1)[1].split("\n## ", 1)[0]
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", section, re.S)]
    assert len(blocks) == 2
    steps = [step for block in blocks for job in block["jobs"].values() for step in job["steps"]]
    gate_steps = [s for s in steps if str(s.get("uses", "")).startswith("OWNER/gate@")]
    assert gate_steps and all(set(s.get("with", {})) <= set(ACTION["inputs"]) for s in gate_steps)
    for step in steps:
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    assert all(block.get("permissions") for block in blocks)
    used = set(re.findall(r"steps\.gate\.outputs\.([\w-]+)", section))
    assert used and used <= set(ACTION["outputs"])


def test_candidate_code_cannot_find_the_token_of_the_actions_step(fake: FakeGitHub, tmp_path: Path) -> None:
    """Here the token is in the gate process's real environment block (/proc/PID/environ), as on a runner."""
    from tests.test_github_ci import CASES_POLICY, HUNTER

    pr = Scenario(fake, tmp_path, {".github/gate.yml": CASES_POLICY, "calc.py": "def add(a, b):\n    return 0\n"},
                  {"calc.py": HUNTER})
    # What actions/checkout leaves without `persist-credentials: false`: the token in .git/config.
    git(pr.workspace, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {fake.token}")
    code, outputs, stderr = run_action(pr.environment(), {}, tmp_path)
    assert code == 1, stderr
    verdict = Path(outputs["verdict"]).read_text()
    assert "got str 'nothing'" in verdict
    assert "ghs_" not in verdict + stderr + pr.summary() + json.dumps(fake.repos[REPO].comments)
