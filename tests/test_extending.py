"""Adding a check that charges points, a policy key or a case kind touches at most two hand-written files.

Each is added here to a copy of the repository's `gate/` and `docs/` (a git repository of its own, so that what
changed can be listed): the two files CONTRIBUTING.md names are written, `python -m gate.generate` is run, and
every other file that changed must be one the generator writes. Then the copy's gate is used as a user would use
it (`gate policy check`, `gate score`), and the new thing works there, and only there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

TODO_CHECK = '''\
"""The todo check: code that leaves a TODO for later."""

from __future__ import annotations

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.verdict import Location, Penalty

TODO = Charge("todo", 1, "a gated file says TODO (once)", per="once", catches="code that leaves a TODO for later")


class Todo(Check):
    """A TODO in the code under score."""

    name = "todo"
    needs: tuple[Product, ...] = ("files",)
    produces: tuple[Product, ...] = ()
    static = True
    charges: tuple[Charge, ...] = (TODO,)

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        found = tuple(Location(source.path, number) for source in ctx.files
                      for number, line in enumerate(source.text.splitlines(), start=1) if "TODO" in line)
        if not found:
            return CheckResult()
        return CheckResult(penalties=(Penalty(self.name, ctx.policy.points[TODO], "a TODO is left", found),))


CHECK = Todo()
'''

ALWAYS_KIND = '''\
"""`always` cases: pass or fail as the case says (a kind with one field, for trying the registry)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.cases.base import CaseFields, CaseOutcome, Program, fingerprint
from gate.policy.keys import key
from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, Sandbox


@dataclass(frozen=True, kw_only=True)
class AlwaysFields(CaseFields):
    """The fields of an always case."""

    WHAT = "an always case"
    SUMMARY = "always"
    HINT = "`passes`"

    passes: bool = key(description="whether the case passes", infers=True)
    reason: str = key("", "why it fails, when it does")


class Always:
    """A case whose outcome is its own `passes`."""

    name = "always"
    fields = AlwaysFields

    def check(self, case: Mapping[str, Any]) -> tuple[str, str] | None:
        if not case["passes"] and not case.get("reason"):
            return "reason", "a failing always case says why"
        return None

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome:
        status = "passed" if case.get("passes") else "failed"
        return CaseOutcome(status, str(case.get("reason", "")), fingerprint(status))
'''

NOTE_KEY = '''    note: str = key("", "a note the maintainers keep with the policy")
'''
NOTE_ROW = "| `note` | string | `\"\"` | a note the maintainers keep with the policy |\n"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path}: {old!r}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def add_check(copy: Path) -> None:
    """Its module, and its line in the registry."""
    (copy / "gate" / "checks" / "todo.py").write_text(TODO_CHECK, encoding="utf-8")
    _edit(copy / "gate" / "checks" / "__init__.py", '"claims", ', '"claims", "todo", ')


def add_key(copy: Path) -> None:
    """Its field in the model, and its row in the policy reference."""
    _edit(copy / "gate" / "policy" / "model.py", "    runs: int = key(", NOTE_KEY + "    runs: int = key(")
    _edit(copy / "docs" / "policy.md", "| `runs` |", NOTE_ROW + "| `runs` |")


def add_kind(copy: Path) -> None:
    """Its module, and its line in the registry."""
    (copy / "gate" / "cases" / "always.py").write_text(ALWAYS_KIND, encoding="utf-8")
    init = copy / "gate" / "cases" / "__init__.py"
    _edit(init, "from gate.cases.call import Call\n",
          "from gate.cases.always import Always\nfrom gate.cases.call import Call\n")
    _edit(init, "Mbpp())}", "Mbpp(), Always())}")


def _git(copy: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=copy, env=env, capture_output=True, text=True, check=True).stdout


def _gate(where: Path | None, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The gate of the copy at `where` (None: this repository's), as a command."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if where is not None:
        env["PYTHONPATH"] = str(where)
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False, timeout=300)


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    """The repository's gate/ and docs/ in a git repository of their own."""
    where = tmp_path / "copy"
    for folder in ("gate", "docs"):
        shutil.copytree(ROOT / folder, where / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / ".gitignore", where / ".gitignore")  # (the bytecode the gate's runs write)
    _git(where, "init", "-q")
    _git(where, "add", "-A")
    _git(where, "commit", "-qm", "as it is")
    return where


def _changed(copy: Path) -> set[str]:
    return {line[3:] for line in _git(copy, "status", "--porcelain", "--untracked-files=all").splitlines()}


def _hand_written(copy: Path, add: str) -> list[str]:
    """Add the thing (the files CONTRIBUTING.md names), run the generator, and return the files the adding
    changed: every other file that changed is one the generator writes, and the copy is then current."""
    {"check": add_check, "key": add_key, "kind": add_kind}[add](copy)
    by_hand = _changed(copy)
    done = _gate(copy, "gate.generate", cwd=copy)
    assert done.returncode == 0, done.stderr
    listed = _gate(copy, "gate.generate", "--list", cwd=copy)
    assert listed.returncode == 0, listed.stderr
    assert _changed(copy) - by_hand <= set(listed.stdout.split())
    assert _gate(copy, "gate.generate", "--check", cwd=copy).returncode == 0
    return sorted(by_hand)


def _documented(copy: Path) -> list[str]:
    """The policy's keys missing from docs/policy.md's reference (as tests/test_policy.py checks the repository)."""
    schema = json.loads((copy / "gate" / "policy" / "schema.json").read_text(encoding="utf-8"))
    section = (copy / "docs" / "policy.md").read_text(encoding="utf-8").split("## Policy reference", 1)[1]

    def leaves(properties: dict[str, Any], prefix: str = "") -> list[str]:
        return [key for name, sub in properties.items()
                for key in (leaves(sub["properties"], f"{prefix}{name}.") if "properties" in sub else [prefix + name])]

    return [key for key in leaves(schema["properties"]) if f"`{key}`" not in section]


@pytest.mark.slow
def test_a_check_that_charges_points_is_two_files_and_the_rest_follows(copy: Path, tmp_path: Path) -> None:
    assert _hand_written(copy, "check") == ["gate/checks/__init__.py", "gate/checks/todo.py"]
    assert _documented(copy) == []
    schema = json.loads((copy / "gate" / "policy" / "schema.json").read_text(encoding="utf-8"))
    assert schema["properties"]["points"]["properties"]["todo"]["default"] == 1
    assert "  todo: 1\n" in (copy / "gate" / "presets" / "default.yml").read_text(encoding="utf-8")
    assert "| `points.todo` | integer ≥ 0 | `1` | a gated file says TODO (once) |" in \
        (copy / "docs" / "policy.md").read_text(encoding="utf-8")
    assert "| todo | 1 | once | code that leaves a TODO for later |" in \
        (copy / "docs" / "how-it-works.md").read_text(encoding="utf-8")
    # The copy's gate charges it and takes its key; this repository's knows neither.
    (tmp_path / "reply.md").write_text("```python\ndef add(a, b):\n    return a + b  # TODO: overflow\n```\n")
    (tmp_path / "task.yml").write_text("name: add\nfunction: add\n")
    (tmp_path / "gate.yml").write_text("points:\n  todo: 4\n")
    scored = _gate(copy, "gate", "score", "reply.md", "--task", "task.yml", "--policy", "gate.yml", "--json",
                   "verdict.json", cwd=tmp_path)
    assert scored.returncode == 1, scored.stdout + scored.stderr  # 4 points, over the default budget
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert [(p["check"], p["points"], p["locations"][0]["line"]) for p in verdict["penalties"]] == [("todo", 4, 2)]
    refused = _gate(None, "gate", "policy", "check", "gate.yml", cwd=tmp_path)
    assert (refused.returncode, refused.stderr.strip()) == (
        2, "gate: error: gate.yml:2: points.todo: unknown key; expected one of extract, parse, imports, claims, "
           "smoke, timeout, nondeterminism, tests, judge")


@pytest.mark.slow
def test_a_policy_key_is_two_files_and_the_rest_follows(copy: Path, tmp_path: Path) -> None:
    assert _hand_written(copy, "key") == ["docs/policy.md", "gate/policy/model.py"]
    assert _documented(copy) == []
    schema = json.loads((copy / "gate" / "policy" / "schema.json").read_text(encoding="utf-8"))
    assert schema["properties"]["note"] == {"type": "string", "default": "",
                                            "description": "a note the maintainers keep with the policy"}
    assert "# a note the maintainers keep with the policy\nnote: ''\n" in \
        (copy / "gate" / "presets" / "default.yml").read_text(encoding="utf-8")
    (tmp_path / "gate.yml").write_text("budget: 2\nnote: ask @maintainers before raising the budget\n")
    shown = _gate(copy, "gate", "policy", "show", "gate.yml", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "note: ask @maintainers before raising the budget\n" in shown.stdout
    (tmp_path / "bad.yml").write_text("note: 3\n")
    bad = _gate(copy, "gate", "policy", "check", "bad.yml", cwd=tmp_path)
    assert (bad.returncode, bad.stderr.strip()) == (
        2, "gate: error: bad.yml:1: note: expected a string, got the integer 3 (quote it to make it a string)")
    refused = _gate(None, "gate", "policy", "check", "gate.yml", cwd=tmp_path)
    assert refused.returncode == 2 and "gate.yml:2: note: unknown key" in refused.stderr


@pytest.mark.slow
def test_a_case_kind_is_two_files_and_the_rest_follows(copy: Path, tmp_path: Path) -> None:
    assert _hand_written(copy, "kind") == ["gate/cases/__init__.py", "gate/cases/always.py"]
    for schema_file in ("policy/schema.json", "sources/task.schema.json"):
        schema = json.loads((copy / "gate" / schema_file).read_text(encoding="utf-8"))
        assert schema["$defs"]["always_case"]["x-what"] == "an always case"
        assert "always" in schema["$defs"]["case"]["properties"]["kind"]["enum"]
    assert "| `always` | `passes` | yes | yes | whether the case passes |" in \
        (copy / "docs" / "cases.md").read_text(encoding="utf-8")
    # A case of the new kind, told by its key, runs through the copy's engine; the kind checks its own fields.
    (tmp_path / "reply.md").write_text("```python\ndef add(a, b):\n    return a + b\n```\n")
    (tmp_path / "task.yml").write_text("name: add\nfunction: add\ncases:\n  - {passes: true}\n"
                                       "  - {name: not yet, passes: false, reason: a reason}\n")
    scored = _gate(copy, "gate", "score", "reply.md", "--task", "task.yml", "--json", "verdict.json", cwd=tmp_path)
    assert scored.returncode in (0, 1, 3), scored.stdout + scored.stderr
    if scored.returncode != 3:  # (exit 3: no sandbox can be opened on this machine)
        verdict = json.loads((tmp_path / "verdict.json").read_text())
        assert [(c["kind"], c["status"]) for c in verdict["cases"]] == [("always", "passed"), ("always", "failed")]
    (tmp_path / "bad.yml").write_text("cases:\n  - name: x\n    passes: false\n")
    bad = _gate(copy, "gate", "policy", "check", "bad.yml", cwd=tmp_path)
    assert (bad.returncode, bad.stderr.strip()) == (
        2, "gate: error: bad.yml:2: cases[0].reason: a failing always case says why")
    refused = _gate(None, "gate", "policy", "check", "bad.yml", cwd=tmp_path)
    assert refused.returncode == 2 and "cases[0]" in refused.stderr and "always" not in refused.stderr
