"""What could not run is never counted as passed: when extract or parse fails, every case costs as not run
(`points.timeout` each) and a repository suite that did not run blocks; the per-file static checks keep
reading the files that parse past an extract failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gate.cli import main
from tests.git_support import Repo

CALC = "def add(a, b):\n    return a + b\n\n\ndef spin(n):\n    return n\n"
POLICY = """\
budget: 6
cases:
  - name: adds
    function: "calc:add"
    args: [2, 3]
    expect: 5
  - name: spins
    function: "calc:spin"
    args: [1]
    expect: 1
"""
HIDDEN = "cases:\n  - function: \"calc:add\"\n    args: [40, 2]\n    expect: 42\n"
# The bot's whole reply pasted into the file: a denied import, a hang and a wrong answer inside a chat.
CHAT = """\
Sure! Here is the updated code:

```python
import subprocess


def add(a, b):
    return a - b


def spin(n):
    while True:
        pass
```

Let me know if you need anything else.
"""
# A second gated file that parses and adds a denied import: read and charged past the extract failure.
UTIL = "import socket\n\n\ndef port():\n    return socket.AF_INET\n"


def repo_with(tmp_path: Path, policy: str = POLICY, extra: dict[str, str] | None = None) -> Repo:
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": policy, ".github/gate-hidden.yml": HIDDEN, "calc.py": CALC,
                         **(extra or {})})
    repo.git("checkout", "-q", "-b", "bot")
    return repo


def check(repo: Repo) -> tuple[int, dict[str, Any]]:
    out = repo.root.parent / "verdict.json"
    code = main(["check", "--repo", str(repo.root), "--json", str(out)])
    verdict: dict[str, Any] = json.loads(out.read_text())
    return code, verdict


def statuses(verdict: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["status"] for c in verdict["checks"]}


def test_a_chat_reply_in_the_one_gated_file_costs_its_cases_as_not_run(tmp_path: Path) -> None:
    """Under budget 6 this was ACCEPTED 5/6: imports, claims and every case, the hidden one included,
    skipped."""
    repo = repo_with(tmp_path)
    repo.commit("bot", {"calc.py": CHAT})
    code, verdict = check(repo)
    assert code == 1 and not verdict["accepted"]
    charged = [(p["check"], p["points"]) for p in verdict["penalties"]]
    assert charged == [("extract", 5), ("timeout", 4), ("timeout", 4), ("timeout", 4)]
    assert verdict["total"] == 17
    assert [(c["name"], c["status"], c["detail"]) for c in verdict["cases"]] == [
        ("adds", "not run", "not run: extract failed"), ("spins", "not run", "not run: extract failed"),
        ("hidden case 1", "not run", "not run: extract failed")]
    # The chat file is extract's to charge, not parse's a second time.
    assert statuses(verdict)["parse"] == "passed" and statuses(verdict)["smoke"] == "failed"
    assert statuses(verdict)["nondeterminism"] == "skipped"


def test_the_static_checks_read_the_other_files_past_an_extract_failure(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    repo.commit("bot", {"calc.py": CHAT, "util.py": UTIL})
    code, verdict = check(repo)
    assert code == 1
    [imports] = [p for p in verdict["penalties"] if p["check"] == "imports"]
    assert "socket" in imports["message"] and imports["locations"][0]["path"] == "util.py"
    assert statuses(verdict)["imports"] == "failed"
    assert "calc.py" in next(c for c in verdict["checks"] if c["name"] == "imports")["reason"]


def test_a_parse_error_in_one_file_costs_every_case_as_not_run(tmp_path: Path) -> None:
    """Under budget 6: parse 5 and two failing cases was ACCEPTED 5/6, the cases skipped."""
    repo = repo_with(tmp_path)
    repo.commit("bot", {"calc.py": "def add(a, b):\n    return a - b\n\n\ndef spin(n):\n    while True:\n"
                                   "        pass\n", "broken.py": "def oops(:\n"})
    code, verdict = check(repo)
    assert code == 1 and verdict["total"] == 5 + 3 * 4
    assert {c["status"] for c in verdict["cases"]} == {"not run"}
    assert all(c["detail"] == "not run: parse failed" for c in verdict["cases"])


def test_an_honest_change_still_runs_its_cases(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    repo.commit("bot", {"calc.py": CALC + "\n\ndef sub(a, b):\n    return a - b\n"})
    code, verdict = check(repo)
    assert code == 0 and verdict["total"] == 0
    assert {c["status"] for c in verdict["cases"]} == {"passed"}


def test_a_suite_that_did_not_run_blocks(tmp_path: Path) -> None:
    policy = "budget: 100\ntests:\n  paths: [tests]\n"
    repo = repo_with(tmp_path, policy, {"tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n"
                                                               "    assert add(1, 2) == 3\n"})
    repo.commit("bot", {"calc.py": "def add(a, b)\n    return a - b\n"})
    code, verdict = check(repo)
    assert code == 1 and not verdict["accepted"] and verdict["total"] == 5 + 4  # parse, the hidden case
    assert statuses(verdict)["tests"] == "skipped"
    assert any("tests did not run (parse failed)" in reason for reason in verdict["blocked_reasons"])


def test_a_reply_without_code_costs_its_tasks_cases_as_not_run(tmp_path: Path) -> None:
    (tmp_path / "reply.md").write_text("Just add the two numbers.\n")
    (tmp_path / "task.yml").write_text("name: add\ncases:\n  - function: \"solution:add\"\n    args: [1, 2]\n"
                                       "    expect: 3\n")
    out = tmp_path / "verdict.json"
    assert main(["score", str(tmp_path / "reply.md"), "--task", str(tmp_path / "task.yml"), "--json",
                 str(out)]) == 1
    verdict = json.loads(out.read_text())
    assert [(p["check"], p["points"]) for p in verdict["penalties"]] == [("extract", 5), ("timeout", 4)]
    assert statuses(verdict)["parse"] == "skipped"
