"""What the Action's log shows of PyGithub: the one refusal every run meets on purpose is not printed as if it
were an error; every other is."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gate.cli import main
from tests.fakegithub import FakeGitHub
from tests.fakegithub.scenario import REPO, Scenario

BROKEN = "def add(a, b)\n    return a + b\n"


def test_the_actions_tokens_refused_get_user_is_not_logged(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    pr = Scenario(fake, tmp_path, {".github/gate.yml": "budget: 3\n", "app.py": "x = 1\n"}, {"util.py": BROKEN})
    for key, value in pr.environment(workspace=True).items():
        monkeypatch.setenv(key, value)
    caplog.set_level(logging.INFO, logger="github")

    assert main(["ci"]) == 1

    assert any(method == "GET" and path == "/user" and status == 403 for method, path, status in fake.log)
    assert fake.repos[REPO].comments[pr.number]  # the gate went on to post as github-actions[bot]
    assert not [r.getMessage() for r in caplog.records if "failed with 403" in r.getMessage()]
    # Any other refusal still reaches the log, as PyGithub words it.
    logging.getLogger("github.GithubRetry").info("Request POST /repos/o/r/statuses/abc failed with 403: Forbidden")
    assert [r.getMessage() for r in caplog.records if "failed with 403" in r.getMessage()] == [
        "Request POST /repos/o/r/statuses/abc failed with 403: Forbidden"]
