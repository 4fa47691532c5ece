"""action.yml and the workflows: their shape, the linters' word on them, and the README's copy of them.

The steps themselves run on a simulated hosted runner in test_github_runner.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gate import __version__
from gate.commands.init import workflow
from tests.runner_support import (
    HOME_REPOSITORY,
    _text,
    called_workflow,
    condition,
    expression,
    interpolate,
    readme_workflows,
    setup_python,
    workflows_in_full,
)

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*( .*)?$")


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
        assert workflow["jobs"], path.name
        for job in workflow["jobs"].values():
            assert job.get("permissions") or workflow.get("permissions"), path.name  # never the defaults
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False, path.name
    gate = yaml.safe_load((ROOT / ".github" / "workflows" / "gate.yml").read_text(encoding="utf-8"))
    assert gate[True]["pull_request"]["types"] == ["opened", "synchronize", "reopened", "ready_for_review",
                                                   "labeled"]  # PyYAML reads the key `on` as True
    assert not any("pull_request_target" in str(w) for w in (ROOT / ".github" / "workflows").iterdir())


def test_the_readme_workflows_are_what_gate_init_writes() -> None:
    assert readme_workflows() == [workflow("gate.yml"), workflow("gate-publish.yml")]


def test_the_readme_workflows_are_at_most_twenty_lines_each_calling_a_reusable_workflow_of_this_repository(
        ) -> None:
    """What a maintainer pastes: triggers, the token's permissions and one `uses:` of this repository's
    reusable workflow, pinned by full SHA with the release in a comment; the rest lives in that workflow."""
    for text in readme_workflows():
        assert len(text.splitlines()) <= 20, text
        caller = yaml.safe_load(text)
        [(_, job)] = caller["jobs"].items()
        assert set(job) <= {"uses", "permissions", "with", "name"}, set(job)
        assert PINNED.match(job["uses"].replace("COMMIT_SHA", "0" * 40) + " # v" + __version__)
        assert re.search(rf"@COMMIT_SHA # v{re.escape(__version__)}$", text, re.M)
        called, _ = called_workflow(job["uses"].replace("COMMIT_SHA", "0" * 40))
        assert caller["permissions"] == {}  # nothing but what the job names
        # The caller grants exactly what the called jobs ask for: no more (a called workflow could use it).
        asked = [j["permissions"] for j in called["jobs"].values()]
        assert all(job["permissions"] == permissions for permissions in asked), (job["permissions"], asked)


def reusable(name: str) -> dict[Any, Any]:
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_reusable_workflows_take_the_actions_inputs_and_pass_them_with_the_actions_defaults() -> None:
    gate = reusable("gate.yml")
    declared = gate[True]["workflow_call"]["inputs"]
    assert set(declared) <= set(ACTION["inputs"]) - {"token"}
    [step] = [s for s in gate["jobs"]["gate"]["steps"] if s.get("id") == "gate"]
    assert set(step["with"]) == set(declared)
    for name, spec in declared.items():
        assert str(spec["default"]) == str(ACTION["inputs"][name]["default"]), name
        # Run on this repository's own events, with no inputs, each falls back to the Action's default.
        value = interpolate(step["with"][name], {"inputs": {}})
        assert _text(value) == str(ACTION["inputs"][name]["default"]), name
    assert set(gate[True]["workflow_call"]["outputs"]) <= set(ACTION["outputs"])


def _event_context(event_name: str, event: dict[str, Any], repository: str = "octo/app",
                   sha: str | None = "a" * 40) -> dict[str, Any]:
    return {"github": {"event_name": event_name, "event": event, "repository": repository,
                       "ref": "refs/heads/main"},
            "job": {"status": "success", "workflow_repository": HOME_REPOSITORY if sha else None,
                    "workflow_sha": sha}, "inputs": {}, "steps": {}}


PR_EVENT = {"pull_request": {"number": 12, "head": {"sha": "b" * 40}, "base": {"sha": "c" * 40}},
            "repository": {"default_branch": "main"}}
COMMENT = {"issue": {"number": 12, "pull_request": {"url": "u"}}, "comment": {"body": "/gate override ok"},
           "repository": {"default_branch": "main"}}


@pytest.mark.parametrize(("event_name", "event", "runs"), [
    ("pull_request", PR_EVENT, True),
    ("issue_comment", COMMENT, True),
    ("issue_comment", {**COMMENT, "comment": {"body": "thanks!"}}, False),  # no runner starts
    ("issue_comment", {**COMMENT, "issue": {"number": 3}}, False),  # a plain issue's comment
    ("merge_group", {"merge_group": {"head_sha": "d" * 40, "base_sha": "c" * 40}}, True),
])
def test_the_reusable_job_runs_on_every_pr_event_and_only_on_a_prs_gate_comments(
        event_name: str, event: dict[str, Any], runs: bool) -> None:
    job = reusable("gate.yml")["jobs"]["gate"]
    assert condition(job["if"], _event_context(event_name, event), step=False) is runs


def test_the_reusable_job_is_named_apart_from_the_check_and_queues_runs_per_pr() -> None:
    """Branch protection requires the gate's check run by name; the job's own check (success when its `if:`
    skips it) must not share it. One scoring run per PR; overrides queued apart; a caller's dispatch input."""
    job = reusable("gate.yml")["jobs"]["gate"]
    assert job["name"] != "gate" and job["name"] != ACTION["inputs"]["check-name"]["default"]
    group = job["concurrency"]["group"]
    assert interpolate(group, _event_context("pull_request", PR_EVENT)) == "gate-score-12"
    assert interpolate(group, _event_context("issue_comment", COMMENT)) == "gate-override-12"
    dispatch = {"inputs": {"pull_request": "7"}, "repository": {"default_branch": "main"}}
    assert interpolate(group, _event_context("workflow_dispatch", dispatch)) == "gate-score-7"
    assert interpolate(job["concurrency"]["cancel-in-progress"], _event_context("issue_comment", COMMENT)) is False


def _checkouts(name: str) -> list[dict[str, Any]]:
    steps = reusable(name)[next(iter(["jobs"]))]
    return [s for job in steps.values() for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")]


@pytest.mark.parametrize(("repository", "event_name", "event", "expected"), [
    ("octo/app", "pull_request", PR_EVENT, "a" * 40),  # a caller: the commit it pinned
    (HOME_REPOSITORY, "pull_request", PR_EVENT, "c" * 40),  # this repository's own PR: its base
    (HOME_REPOSITORY, "merge_group", {"merge_group": {"head_sha": "d" * 40, "base_sha": "e" * 40}}, "e" * 40),
    (HOME_REPOSITORY, "issue_comment", COMMENT, "main"),
])
def test_the_gates_code_is_the_callers_pinned_commit_or_this_repositorys_base(
        repository: str, event_name: str, event: dict[str, Any], expected: str) -> None:
    [pr, gate] = _checkouts("gate.yml")
    context = _event_context(event_name, event, repository)
    assert interpolate(gate["with"]["repository"], context) == HOME_REPOSITORY
    assert interpolate(gate["with"]["ref"], context) == expected
    assert gate["with"]["persist-credentials"] is False and pr["with"]["persist-credentials"] is False
    if event_name == "pull_request":
        assert interpolate(pr["with"]["ref"], context) == "b" * 40  # the PR's head, never the merge commit
    assert pr["with"]["fetch-depth"] == 0


@pytest.mark.parametrize("name", ["gate.yml", "gate-publish.yml"])
def test_without_the_workflows_own_commit_the_reusable_job_stops_before_anything_runs(name: str) -> None:
    """A GitHub that gives no `job.workflow_sha` (an older Enterprise Server): the checkout would fetch the
    gate's default branch, or the caller's own repository; the first step fails the job instead."""
    [job] = reusable(name)["jobs"].values()
    first = job["steps"][0]
    assert "run" in first and "exit 1" in first["run"]
    assert condition(first["if"], _event_context("pull_request", PR_EVENT, sha=None), step=True)
    assert not condition(first["if"], _event_context("pull_request", PR_EVENT), step=True)


@pytest.mark.parametrize(("text", "context", "value"), [
    ("a || 'x'", {"a": ""}, "x"), ("a && b", {"a": "1", "b": 0}, 0), ("a == ''", {"a": None}, True),
    ("'ABC' == 'abc'", {}, True), ("startsWith(a.b, '/gate')", {"a": {"B": "/Gate x"}}, True),
    ("format('refs/pull/{0}/head', n)", {"n": "7"}, "refs/pull/7/head"), ("!(a.b.c)", {"a": None}, True),
    ("x == 'it''s'", {"x": "it's"}, True), ("1 == '1'", {}, True), ("a['b-c']", {"a": {"b-c": 2}}, 2),
])
def test_the_simulated_runner_reads_expressions_as_github_does(text: str, context: dict[str, Any],
                                                               value: Any) -> None:
    assert expression(text, context) == value


def test_every_action_is_pinned_by_commit_with_its_version_in_a_comment() -> None:
    docs = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "README.md", *(ROOT / "docs").glob("*.md")))
    texts = [(ROOT / "action.yml").read_text(), *(p.read_text() for p in (ROOT / ".github/workflows").glob("*.yml")),
             *re.findall(r"```yaml\n(.*?)```", docs, re.S)]  # every workflow snippet of the README and docs/
    lines = [m.group(1) for text in texts for m in re.finditer(r"^\s*(?:- )?uses: (.+)$", text, re.M)]
    remote = [line for line in lines if not line.startswith("./")]
    assert remote and all(PINNED.match(line.replace("COMMIT_SHA", "0" * 40)) for line in remote), remote


BIN = str(Path(sys.executable).parent)  # the dev extra installs zizmor and actionlint beside pytest


@pytest.mark.skipif(not all(shutil.which(tool, path=BIN) for tool in ("zizmor", "actionlint", "check-jsonschema")),
                    reason="zizmor, actionlint and check-jsonschema come with the dev extra")
def test_the_readme_workflows_copied_as_is_pass_zizmor_actionlint_and_schemastores_schema(tmp_path: Path) -> None:
    """Copied verbatim from the README (and docs/github.md's forms in full), with a release's SHA put in:
    zizmor's pedantic persona finds nothing (each `zizmor: ignore[dangerous-triggers]` says why on its line),
    actionlint nothing, and SchemaStore's github-workflow schema (the copy check-jsonschema vendors: offline)
    accepts them all."""
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    assert len(workflows_in_full()) == 2
    for number, text in enumerate([*readme_workflows(), *workflows_in_full()]):
        (workflows / f"w{number}.yml").write_text(text.replace("COMMIT_SHA", "a" * 40))
    files = sorted(map(str, workflows.iterdir()))
    for argv in (["zizmor", "--offline", "--pedantic", "--quiet", str(workflows)], ["actionlint", *files],
                 ["check-jsonschema", "--builtin-schema", "vendor.github-workflows", *files]):
        done = subprocess.run([str(Path(BIN) / argv[0]), *argv[1:]], cwd=tmp_path, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def locked(name: str) -> dict[str, tuple[str, list[str]]]:
    """The pins of one of action/'s lock files (uv pip compile's format): name -> (version, hashes)."""
    pins: dict[str, tuple[str, list[str]]] = {}
    for line in (ROOT / "action" / name).read_text(encoding="utf-8").replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            spec, *hashes = line.split(" --hash=")
            requirement = Requirement(spec)
            [pin] = requirement.specifier
            assert pin.operator == "==", line
            pins[canonicalize_name(requirement.name)] = (pin.version, [h.strip() for h in hashes])
    return pins


def test_the_actions_lock_files_pin_with_hashes_what_pyproject_asks_for() -> None:
    """The install step installs only what action/*.txt pin (--require-hashes): each requirement pyproject.toml
    declares (the dependencies, the build backend, the dev extra's uv) must be there, at
    a version it allows, with hashes. `.venv/bin/python action/lock.py` rewrites them (the header says so)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = {"requirements.txt": project["project"]["dependencies"],
              "build.txt": project["build-system"]["requires"],
              "uv.txt": [r for r in project["project"]["optional-dependencies"]["dev"] if r.startswith("uv==")]}
    for name, requirements in wanted.items():
        assert "action/lock.py" in (ROOT / "action" / name).read_text(encoding="utf-8").splitlines()[1]
        pins = locked(name)
        assert all(hashes and all(h.startswith("sha256:") for h in hashes) for _, hashes in pins.values()), name
        assert requirements
        for text in requirements:
            requirement = Requirement(text)
            assert canonicalize_name(requirement.name) in pins, f"action/{name} lacks {text}"
            version = pins[canonicalize_name(requirement.name)][0]
            assert requirement.specifier.contains(version, prereleases=True), f"action/{name}: {text} {version}"


@pytest.mark.slow
def test_the_install_stamp_changes_with_any_file_of_the_source_and_with_the_interpreter(tmp_path: Path) -> None:
    """The install step reuses an installation only while this digest is unchanged: any change to what it was
    built from (a file's bytes or name, a link, the lock files, the interpreter) must change it."""
    source = tmp_path / "action"
    (source / "action").mkdir(parents=True)
    (source / "action" / "requirements.txt").write_text("jinja2==3.1.6 --hash=sha256:00\n")
    (source / "gate").mkdir()
    (source / "gate" / "__init__.py").write_text("x = 1\n")

    def stamp(python: str = "/usr/bin/python3") -> str:
        return subprocess.run([python, "-I", str(ROOT / "action" / "stamp.py"), str(source)], capture_output=True,
                              text=True, check=True).stdout.strip()

    seen = {stamp()}
    assert stamp() in seen  # the same inputs, the same digest
    gate = source / "gate"
    (gate / "__pycache__").mkdir()
    (gate / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    assert stamp() in seen  # bytecode is not what it is built from
    changes: list[Callable[[], object]] = [
        lambda: (source / "action" / "requirements.txt").write_text("jinja2==3.1.6 --hash=sha256:01\n"),
        lambda: (gate / "__init__.py").rename(gate / "main.py"),
        lambda: (gate / "link").symlink_to("main.py"),
        lambda: (gate / "extra.py").touch()]
    for change in changes:
        change()
        assert stamp() not in seen
        seen.add(stamp())
    # Another interpreter: the same build where setup-python would put it (not this venv's, whose library is
    # the developer's whole site directory: seconds to hash).
    setup_python(tmp_path / "python")
    python = str(tmp_path / "python" / "bin" / "python3")
    assert stamp(python) not in seen
    seen.add(stamp(python))
    # The same interpreter, one file of its library changed (what a runner that can write it would leave).
    [library] = (tmp_path / "python" / "lib").glob("python3.*")
    (library / "sitecustomize.py").write_text("")
    assert stamp(python) not in seen
