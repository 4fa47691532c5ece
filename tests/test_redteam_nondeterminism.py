"""Nondeterministic code is caught by the rerun with another PYTHONHASHSEED (docs/how-it-works.md, "Penalty
schedule"): each body returns the right sum together with something that varies between runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.redteam_support import bot_repo, check, healthy_after

VARYING = {
    "set iteration order": "list({str(n) for n in range(20)})",
    "dict built from a set": "list(dict.fromkeys({f'k{n}' for n in range(20)}))",
    "the clock": "__import__('time').time()",
    "random without a seed": "__import__('random').random()",
    "uuid4": "str(__import__('uuid').uuid4())",
    "urandom": "__import__('os').urandom(8).hex()",
    "hash of an object": "hash(object())",
    "id of an object": "id(object())",
}
# Not listed: an order that follows id() of objects made one after another. Allocation order usually gives
# the same order in both runs, so there is nothing for a rerun to see (it made this test flaky).


@pytest.mark.slow
@pytest.mark.parametrize("source", sorted(VARYING))
def test_nondeterminism_is_charged(tmp_path: Path, source: str) -> None:
    code = f"def add(a, b):\n    return [a + b, {VARYING[source]}]\n"
    repo = bot_repo(tmp_path / "repo", code)
    run = check(repo, tmp_path)
    assert run.code == 1
    assert "nondeterminism" in [p["check"] for p in run.verdict["penalties"]], run.reports
    healthy_after(run, repo, tmp_path)

