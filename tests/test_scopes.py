"""Monorepo scopes: the policy keys, and how a change's files split into parts scored on their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.checks.imports import IMPORTS
from gate.checks.parse import PARSE
from gate.cli import main
from gate.policy_file import effective_policy_dict, load_policy
from gate.scopes import by_scope
from gate.subject import SourceFile, Subject
from tests.git_support import Repo
from tests.helpers_static import score_files

POLICY = """\
budget: 3
scopes:
  - name: api
    paths: ["services/api/"]
    budget: 0
    points: {imports: 7}
  - name: web
    paths: ["web/**"]
"""


def test_a_scope_takes_the_policys_keys_it_leaves_out_and_merges_its_points() -> None:
    policy = load_policy(None, text=POLICY, source="gate.yml")
    api, web = policy.scopes
    assert (api.budget, api.points and api.points[IMPORTS], api.points and api.points[PARSE]) == (0, 7, 5)
    assert (web.budget, web.points, web.cases) == (None, None, None)
    again = load_policy(None, text=yaml.safe_dump(effective_policy_dict(policy)), source="shown.yml")
    assert again.scopes == policy.scopes  # `gate policy show` loads back to the same scopes


@pytest.mark.parametrize(("text", "key", "words"), [
    ("scopes:\n  - name: a\n    paths: [x/]\n  - name: a\n    paths: [y/]\n", "scopes[1].name", "two scopes"),
    ("scopes:\n  - name: a\n    paths: ['/abs']\n", "scopes[0].paths[0]", "relative"),
    ("scopes:\n  - name: a\n", "scopes[0]", "paths"),
])
def test_a_bad_scope_is_one_line_naming_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                                key: str, words: str) -> None:
    path = tmp_path / "gate.yml"
    path.write_text(text)
    assert main(["policy", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{key}" in err and words in err and "Traceback" not in err


def test_each_file_goes_to_the_first_scope_that_matches_and_the_rest_to_root() -> None:
    policy = load_policy(None, text=POLICY, source="gate.yml")
    files = (SourceFile("services/api/a.py", "import socket\n"), SourceFile("web/b.py", "x = 1\n"),
             SourceFile("tools/c.py", "y = 2\n"))
    verdict = by_scope(Subject(kind="range", label="r", files=files), policy,
                             lambda subject, rules: score_files(list(subject.files), rules))
    assert [(s.name, s.files, s.total, s.budget, s.accepted) for s in verdict.scopes] == [
        ("root", 1, 0, 3, True), ("api", 1, 7, 0, False), ("web", 1, 0, 3, True)]
    assert not verdict.accepted and [p.message.split("]")[0] for p in verdict.penalties] == ["[api"]


def test_an_untouched_scope_is_not_scored_and_the_root_always_is() -> None:
    policy = load_policy(None, text=POLICY, source="gate.yml")
    verdict = by_scope(Subject(kind="range", label="r", files=(SourceFile("web/b.py", "x = 1\n"),)), policy,
                             lambda subject, rules: score_files(list(subject.files), rules))
    assert [s.name for s in verdict.scopes] == ["root", "web"] and verdict.accepted


STRICT = """\
budget: 3
scopes:
  - name: api
    paths: [services/api/]
    budget: 0
    cases:
      - {name: adds, function: "services.api.calc:add", args: [2, 3], expect: 5}
      - {name: adds zero, function: "services.api.calc:add", args: [0, 4], expect: 4}
"""
SHARED = "def plus(a, b):\n    return a + b\n"
CALC = "from shared.util import plus\n\n\ndef add(a, b):\n    return plus(a, b)\n"


def strict_repo(root: Path) -> Repo:
    repo = Repo(root)
    repo.commit("base", {".github/gate.yml": STRICT, "services/__init__.py": "", "services/api/__init__.py": "",
                         "services/api/calc.py": CALC, "shared/__init__.py": "", "shared/util.py": SHARED,
                         "tools/notes.py": "X = 1\n"})
    return repo


def gate_check(repo: Repo, base: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["check", "--repo", str(repo.root), "--base", base, "--head", "HEAD", "--json", "-"])
    out = capsys.readouterr().out
    return code, json.loads(out[out.index("{"):])


@pytest.mark.parametrize(("change", "files"), [
    ("deletes the scope's file", {"services/api/calc.py": None}),
    ("moves it out of the scope", "move"),
    ("breaks shared code the scope imports", {"shared/util.py": "def plus(a, b):\n    return a - b\n"}),
])
def test_a_strict_scope_is_scored_when_the_change_deletes_moves_or_breaks_what_it_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str, files: dict[str, str | None] | str) -> None:
    repo = strict_repo(tmp_path / "repo")
    base = repo.git("rev-parse", "HEAD")
    if files == "move":
        repo.git("mv", "services/api/calc.py", "tools/calc.py")
        repo.commit("bot: move calc")
    else:
        assert isinstance(files, dict)
        repo.commit(f"bot: {change}", files)
    code, verdict = gate_check(repo, base, capsys)
    assert code == 1 and not verdict["accepted"]
    api = next(s for s in verdict["scopes"] if s["name"] == "api")
    assert api["total"] >= 4 and not api["accepted"]  # both cases fail: 2 points each over a budget of 0
    assert {c["name"]: c["status"] for c in verdict["cases"]} == {"[api] adds": "failed",
                                                                  "[api] adds zero": "failed"}


def test_an_honest_change_elsewhere_runs_the_strict_scopes_cases_and_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = strict_repo(tmp_path / "repo")
    base = repo.git("rev-parse", "HEAD")
    repo.commit("bot: tidy", {"shared/util.py": '"""Shared helpers."""\n\n\n' + SHARED,
                              "tools/notes.py": "X = 2\n"})
    code, verdict = gate_check(repo, base, capsys)
    assert code == 0 and verdict["accepted"]
    assert [(s["name"], s["files"], s["total"], s["accepted"]) for s in verdict["scopes"]] == [
        ("root", 2, 0, True), ("api", 0, 0, True)]
    assert {c["name"]: c["status"] for c in verdict["cases"]} == {"[api] adds": "passed",
                                                                  "[api] adds zero": "passed"}


def test_a_scope_without_cases_is_scored_when_the_change_deletes_or_moves_a_file_out_of_it() -> None:
    policy = load_policy(None, text=POLICY, source="gate.yml")
    moved = SourceFile("tools/c.py", "y = 2\n", frozenset(), "renamed", "services/api/c.py")
    subject = Subject(kind="range", label="r", files=(moved,), deleted=("web/old.py",))
    verdict = by_scope(subject, policy, lambda subject, rules: score_files(list(subject.files), rules))
    assert [(s.name, s.files) for s in verdict.scopes] == [("root", 1), ("api", 1), ("web", 1)]
