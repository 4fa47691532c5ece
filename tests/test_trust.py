"""One trust core: the same PR scored three ways gives the same verdict.

`gate ci` from the checkout, `gate ci` through the API alone (no checkout: the policy has no cases, since there
is no head tree to run them against), and `gate check` on the same commits, with real git repositories, the
real PyGithub and the fake GitHub. A PR that touches what the gate reads from the base (the policy, the hidden
cases, the report templates) is blocked for a human on every path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.fakegithub import FakeGitHub
from tests.fakegithub.scenario import REPO, Scenario

POLICY = "budget: 3\n"
APP = "def add(a, b):\n    return a + b\n"
HIDDEN = ".github/gate-hidden.yml"
TEMPLATE = ".github/gate/templates/comment.md.j2"
# The repository's own comment template, read from the base on every path.
OVERRIDE = "Reviewed by the house template: {{ headline }}\n"
# An old file with a denied import: only what a change adds counts, so the added lines must agree too.
LEGACY = "import subprocess\n\n\ndef run():\n    return 1\n"
BASE = {".github/gate.yml": POLICY, "app.py": APP, "legacy.py": LEGACY, HIDDEN: "[]\n", TEMPLATE: OVERRIDE}


def three_ways(fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
               head: dict[str, str | None]) -> dict[str, tuple[int, dict[str, Any], str]]:
    """Exit code, verdict and (for `gate ci`) the posted comment of each way of scoring the same PR."""
    pr = Scenario(fake, tmp_path, dict(BASE), head)
    results = {}
    for way, workspace in (("checkout", True), ("API", False)):
        for key, value in pr.environment(workspace=workspace).items():
            monkeypatch.setenv(key, value)
        code = main(["ci"])
        verdict = json.loads(Path(pr.outputs()["verdict"]).read_text(encoding="utf-8"))
        assert dict(verdict["facts"])["files from"] == way
        results[way] = (code, verdict, fake.repos[REPO].comments[pr.number][-1]["body"])
    out = tmp_path / "check.json"
    code = main(["check", "--repo", str(pr.workspace), "--base", pr.base_sha, "--head", pr.head_sha,
                 "--json", str(out)])
    results["gate check"] = (code, json.loads(out.read_text(encoding="utf-8")), "")
    return results


def decided(verdict: dict[str, Any]) -> tuple[Any, ...]:
    """What a verdict decides: its penalties, blocked reasons, cases and acceptance."""
    return verdict["penalties"], verdict["blocked_reasons"], verdict["cases"], verdict["accepted"], \
        verdict["total"], verdict["policy_source"], verdict["reproduce"]


def agree(results: dict[str, tuple[int, dict[str, Any], str]]) -> dict[str, Any]:
    codes = {way: code for way, (code, _, _) in results.items()}
    assert len(set(codes.values())) == 1, codes
    verdicts = {way: decided(verdict) for way, (_, verdict, _) in results.items()}
    assert verdicts["checkout"] == verdicts["API"] == verdicts["gate check"]
    # Both `gate ci` paths render the comment with the base's template.
    assert results["checkout"][2] == results["API"][2]
    assert results["API"][2].startswith("Reviewed by the house template: ")
    return results["gate check"][1]


@pytest.mark.slow
def test_an_ordinary_bot_change_gets_the_same_verdict_every_way(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head: dict[str, str | None] = {"app.py": APP + "\n\ndef sub(a, b):\n    return a - b\n",
                                   "legacy.py": LEGACY.replace("\n\n", "\nimport socket\n\n", 1)}
    verdict = agree(three_ways(fake, tmp_path, monkeypatch, head))
    assert verdict["accepted"] is True and verdict["blocked_reasons"] == []
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and penalty["points"] == 3
    assert "socket" in penalty["message"] and "subprocess" not in penalty["message"]
    assert penalty["locations"] == [{"path": "legacy.py", "line": 2, "column": None}]


@pytest.mark.parametrize(("path", "text", "what"), [
    (".github/gate.yml", "budget: 100\n", "the policy file .github/gate.yml"),
    (HIDDEN, "- {name: easy, function: 'app:add', args: [1, 1], expect: 2}\n", f"the hidden cases file {HIDDEN}"),
    (TEMPLATE, "Everything is fine.\n", "the report templates .github/gate/templates/"),
    (".github/gate/templates/summary.md.j2", "All good.\n", "the report templates .github/gate/templates/"),
])
@pytest.mark.slow
def test_a_pr_that_edits_what_the_base_decides_is_blocked_for_a_human_every_way(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, text: str,
        what: str) -> None:
    head: dict[str, str | None] = {path: text, "util.py": APP}
    verdict = agree(three_ways(fake, tmp_path, monkeypatch, head))
    verb = "edits" if path in BASE else "adds"
    assert verdict["accepted"] is False and verdict["total"] == 0
    assert verdict["blocked_reasons"] == [f"the change {verb} {what}, which is read from the base commit; a "
                                          "human must review it"]


@pytest.mark.slow
def test_a_pr_that_moves_or_deletes_the_agent_control_plane_is_blocked_for_a_human_every_way(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control plane is decided by the base's policy on every path, each file named: a workflow moved out
    of `.github/workflows/` (where it would stop running, with no review) and a deleted CODEOWNERS."""
    workflow = "on: pull_request\njobs:\n  test:\n    runs-on: ubuntu-24.04\n    steps: [{run: pytest}]\n"
    monkeypatch.setitem(BASE, ".github/workflows/ci.yml", workflow)
    monkeypatch.setitem(BASE, ".github/CODEOWNERS", "* @maria\n")
    head: dict[str, str | None] = {".github/workflows/ci.yml": None, "ci.yml": workflow,
                                   ".github/CODEOWNERS": None, "util.py": APP}
    verdict = agree(three_ways(fake, tmp_path, monkeypatch, head))
    assert verdict["accepted"] is False and verdict["total"] == 0
    plane = "which is in the agent control plane (the base policy's control_plane: {}): what steers agents or " \
            "runs with the repository's token needs a human's review"
    assert sorted(verdict["blocked_reasons"]) == sorted([
        "the change moves .github/workflows/ci.yml to ci.yml, " + plane.format(".github/workflows/**"),
        "the change deletes .github/CODEOWNERS, " + plane.format("CODEOWNERS")])
