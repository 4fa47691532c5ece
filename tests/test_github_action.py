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

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gate.commands.init import workflow
from tests.runner_support import setup_python

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


def readme_workflows() -> list[str]:
    """The workflows of the README's "Add it to your repository", in order, as a maintainer copies them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- section: github -->", 1)[1].split("\n## ", 1)[0]
    return [block for block in re.findall(r"```yaml\n(.*?)```", section, re.S) if "\njobs:" in block]


def test_the_readme_workflows_are_what_gate_init_writes() -> None:
    assert readme_workflows() == [workflow("gate.yml"), workflow("gate-publish.yml")]


def test_the_readme_workflows_parse_and_use_only_the_actions_inputs() -> None:
    blocks = [yaml.safe_load(block) for block in readme_workflows()]
    assert len(blocks) == 2
    steps = [step for block in blocks for job in block["jobs"].values() for step in job["steps"]]
    gate_steps = [s for s in steps if str(s.get("uses", "")).startswith("error-budget-gate/gate@")]
    assert gate_steps and all(set(s.get("with", {})) <= set(ACTION["inputs"]) for s in gate_steps)
    for step in steps:
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    assert all(job.get("permissions") for block in blocks for job in block["jobs"].values())
    used = set(re.findall(r"steps\.gate\.outputs\.([\w-]+)", "".join(readme_workflows())))
    assert used and used <= set(ACTION["outputs"])


def test_the_readme_workflow_names_its_job_apart_from_the_check_and_runs_only_for_gate_comments() -> None:
    """Branch protection requires the gate's check run by name; the job's own check (success when its `if:`
    skips it) must not share it. Only PR comments that start with /gate start a runner; one run per PR."""
    gate = yaml.safe_load(readme_workflows()[0])
    [(_, job)] = gate["jobs"].items()
    [step] = [s for s in job["steps"] if s.get("id") == "gate"]
    assert job["name"] != step["with"]["check-name"] == "gate"
    assert "startsWith(github.event.comment.body, '/gate')" in job["if"]
    assert "github.event.issue.pull_request" in job["if"]
    assert "github.event.pull_request.number" in job["concurrency"]["group"]


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
    """Copied verbatim from the README, with a release's SHA put in: zizmor's pedantic persona finds nothing
    (the two `zizmor: ignore[dangerous-triggers]` say why on their line), actionlint nothing, and SchemaStore's
    github-workflow schema (the copy check-jsonschema vendors: offline) accepts both."""
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for number, text in enumerate(readme_workflows()):
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
    assert stamp(sys.executable) not in seen  # another interpreter (this venv's)
    # The same interpreter, one file of its library changed (what a runner that can write it would leave).
    setup_python(tmp_path / "python")
    python = str(tmp_path / "python" / "bin" / "python3")
    seen.add(stamp(python))
    [library] = (tmp_path / "python" / "lib").glob("python3.*")
    (library / "sitecustomize.py").write_text("")
    assert stamp(python) not in seen
