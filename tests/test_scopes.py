"""Monorepo scopes: the policy keys, and how a change's files split into parts scored on their own."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gate.cli import main
from gate.policy.loader import effective_policy_dict, load_policy
from gate.scopes import score_by_scope
from gate.subject import SourceFile, Subject
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
    assert (api.budget, api.points and api.points.imports, api.points and api.points.parse) == (0, 7, 5)
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
    verdict = score_by_scope(Subject(kind="range", label="r", files=files), policy,
                             lambda subject, rules: score_files(list(subject.files), rules))
    assert [(s.name, s.files, s.total, s.budget, s.accepted) for s in verdict.scopes] == [
        ("root", 1, 0, 3, True), ("api", 1, 7, 0, False), ("web", 1, 0, 3, True)]
    assert not verdict.accepted and [p.message.split("]")[0] for p in verdict.penalties] == ["[api"]


def test_an_untouched_scope_is_not_scored_and_the_root_always_is() -> None:
    policy = load_policy(None, text=POLICY, source="gate.yml")
    verdict = score_by_scope(Subject(kind="range", label="r", files=(SourceFile("web/b.py", "x = 1\n"),)), policy,
                             lambda subject, rules: score_files(list(subject.files), rules))
    assert [s.name for s in verdict.scopes] == ["root", "web"] and verdict.accepted
