"""`gate replay` on a history with the shapes of a real project's (tests/replay_support.py): merges, squashes,
coding agents' commits, reverts of every kind; run as a maintainer runs it, in a subprocess, with real git,
the engine and the sandbox."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gate.policy.model import Bots
from gate.replay.history import HistoryChange, changes_of, gated
from gate.replay.run import Outcome, Scored
from gate.replay.tables import Row, budgets, suggestion
from gate.sandbox import stage
from gate.sandbox.stage import EXPORT_PREFIX
from gate.sources.gitcli import Repo
from tests.replay_support import CALC, COPILOT, POLICY, History, build

# The totals each change gets under the history's policy (budget 3, one case on calc:add), and which later
# change reverted it (the names are tests/replay_support.py's).
EXPECTED = {"mul": (0, None), "div": (3, "revert-div"), "rounding": (2, "revert-rounding"),
            "parser": (9, "revert-parser"), "revert-rounding": (0, None), "refactor": (5, "revert-refactor"),
            "docs": (0, None), "agents": (0, None), "revert-parser": (0, None), "revert-refactor": (0, None),
            "speedup": (0, None), "revert-div": (0, None)}
GATED = {"rounding", "parser", "refactor", "agents", "speedup"}  # the coding agents' marks
# A budget of 1 and imports at 1 point, the same case.
CANDIDATE = POLICY.replace("budget: 3", "budget: 1\npoints:\n  imports: 1")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return build(tmp_path_factory.mktemp("replay") / "calc")


def replay(history: History, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gate", "replay", *args], cwd=history.root, capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=600)


def by_name(history: History, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    names = {sha: name for name, sha in history.named.items()}
    return {names[row["commit"]]: row for row in rows}


@pytest.mark.slow
def test_replay_scores_each_change_as_it_merged_and_compares_a_candidate(history: History, tmp_path: Path) -> None:
    (tmp_path / "candidate.yml").write_text(CANDIDATE)
    out = tmp_path / "replay.json"

    done = replay(history, "main", "-n", "50", "--policy", str(tmp_path / "candidate.yml"), "--json", str(out))

    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    rows = by_name(history, data["rows"])
    assert list(rows) == list(reversed(EXPECTED)) and data["complete"] is True  # newest first, the root left out
    for name, (total, reverted_by) in EXPECTED.items():
        row = rows[name]
        assert (row["total"], row["budget"]) == (total, 3), name
        assert row["reverted_by"] == (history.named[reverted_by] if reverted_by else None), name
        assert row["gated"] == (name in GATED), (name, row["gated_reason"])
    # Each change as it merged: a merge is its first parent against its second, a squash its parent.
    assert rows["parser"]["merge"] and rows["speedup"]["merge"] and rows["revert-div"]["merge"]
    assert rows["div"]["head"] == history.git("rev-parse", f"{history.named['div']}^2")
    assert rows["div"]["base"] == history.git("rev-parse", f"{history.named['div']}^1")
    assert rows["refactor"]["head"] == history.named["refactor"] and not rows["refactor"]["merge"]
    assert rows["parser"]["points"] == {"parse": 5, "smoke": 4} and rows["refactor"]["points"] == {"imports": 3,
                                                                                                  "smoke": 2}
    assert rows["agents"]["accepted"] is False and "AGENTS.md" in rows["agents"]["blocked_reasons"][0]
    assert [(row["accepted"], row["total"]) for row in data["rows"]] == \
        [(row["total"] <= 3 and not row["blocked_reasons"], row["total"]) for row in data["rows"]]
    # The candidate: budget 1, an import costs 1.
    assert rows["refactor"]["candidate"] == {"accepted": False, "total": 3, "budget": 1,
                                             "points": {"imports": 1, "smoke": 2}, "blocked_reasons": []}
    assert rows["div"]["candidate"]["total"] == 1 and rows["div"]["candidate"]["accepted"] is True
    assert rows["rounding"]["candidate"]["accepted"] is False and rows["rounding"]["accepted"] is True
    # Budgets 0 to 9 (the largest total): what each blocks, of all and of the 4 reverted; the change held for
    # a human (AGENTS.md) counts at every budget.
    budgets = {line["budget"]: line for line in data["budgets"]}
    assert list(budgets) == list(range(10))
    assert [(budgets[b]["blocked"], budgets[b]["blocked_reverted"]) for b in (0, 1, 2, 3, 4, 5, 8, 9)] == \
        [(5, 4), (5, 4), (4, 3), (3, 2), (3, 2), (2, 1), (2, 1), (1, 0)]
    assert [(budgets[b]["candidate_blocked"], budgets[b]["candidate_blocked_reverted"]) for b in (0, 1, 2, 3)] \
        == [(5, 4), (4, 3), (3, 2), (2, 1)]
    # The terminal: both tables, the suggestion, the progress on stderr.
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("commit"))
    assert header.split() == ["commit", "author", "gated", "verdict", "imports", "smoke", "parse", "total",
                              "candidate", "cand.", "total", "reverted", "by"]
    parser = next(line for line in lines if line.startswith(history.named["parser"][:12]))
    assert parser.split() == [history.named["parser"][:12], "copilot-swe-agent…", "yes", "blocked", ".", "4", "5",
                              "9", "blocked", "9", history.named["revert-parser"][:12]]
    agents = next(line for line in lines if line.startswith(history.named["agents"][:12]))
    assert agents.split()[3] == "human"
    assert "Budgets over the 12 scored changes (4 later reverted; held for a human at any budget, counted as " \
           "blocked: 1, under the candidate 1):" in done.stdout
    at = lines.index("budget  blocks  of reverted  candidate blocks  of reverted")
    assert [line.split() for line in lines[at + 1:at + 7]] == [  # budgets that block the same: one row
        ["0", "5", "4", "5", "4"], ["1", "5", "4", "4", "3"], ["2", "4", "3", "3", "2"], ["3-4", "3", "2", "2", "1"],
        ["5-8", "2", "1", "2", "1"], ["9", "1", "0", "1", "0"]]
    [advice] = [line.removeprefix("suggestion: ") for line in lines if line.startswith("suggestion: ")]
    assert advice == data["suggestion"] == (
        "budget 0: blocks 4 of the 4 reverted changes and 0 of the 7 others, besides 1 held for a human at any "
        "budget (the candidate policy blocked 4 of 12, 3 of the 4 reverted)")
    assert "[12/12]" in done.stderr


@pytest.mark.slow
def test_bots_only_scores_the_changes_the_policy_gates(history: History, tmp_path: Path) -> None:
    out = tmp_path / "bots.json"

    done = replay(history, "main", "--bots-only", "--json", str(out), "-j", "1")

    assert done.returncode == 0, done.stderr
    rows = by_name(history, json.loads(out.read_text())["rows"])
    assert set(rows) == GATED
    assert rows["speedup"]["gated_reason"] == "branch codex/speedup matches codex/** (OpenAI Codex)"
    assert "trailer Co-Authored-By: Claude <noreply@anthropic.com>" in rows["refactor"]["gated_reason"]
    assert rows["rounding"]["gated_reason"] == "author Copilot (Bot) is the account of GitHub Copilot coding agent"
    assert rows["parser"]["gated_reason"] == ("author copilot-swe-agent[bot] (Bot) is the account of GitHub Copilot "
                                              "coding agent")
    assert "candidate" not in rows["parser"]
    assert "the last 12 changes of main, each under its base's policy; 5 gated by the policy" in done.stdout
    assert "Budgets over the 5 scored changes (3 later reverted" in done.stdout
    assert "[5/5]" in done.stderr and "[6/" not in done.stderr


@pytest.mark.slow
def test_ctrl_c_prints_and_writes_what_was_scored_and_leaves_nothing_behind(history: History, tmp_path: Path) -> None:
    """Interrupted after two changes (one at a time), the replay reports those two, marks the rest not
    scored, writes the JSON as incomplete, exits 130, and its workers and their exports are gone."""
    out, scratch = tmp_path / "partial.json", tmp_path / "tmp"
    scratch.mkdir()
    # As from a terminal, where Ctrl-C is not ignored: a job started in the background by a non-interactive
    # shell (`.ci/run &`) ignores SIGINT, and so would every process under it.
    terminal = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "sys.argv[0] = 'gate'; runpy.run_module('gate', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", terminal, "replay", "main", "-j", "1", "--json", str(out)],
                            cwd=history.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(scratch)})
    assert proc.stderr is not None
    progress = []
    while not (line := proc.stderr.readline()).startswith("[2/"):
        assert line, "the replay ended before it scored two changes"
        progress.append(line)
    workers = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)

    assert proc.returncode == 130
    data = json.loads(out.read_text())
    scored = [row for row in data["rows"] if row["scored"]]
    assert data["complete"] is False and 2 <= len(scored) < 12 and len(data["rows"]) == 12
    assert [row["commit"] for row in scored] == [row["commit"] for row in data["rows"][:len(scored)]]
    assert f"interrupted: {len(scored)} of the 12 changes were scored; the tables hold those" in stdout
    assert stdout.count("not scored") == 12 - len(scored)
    assert f"Budgets over the {len(scored)} scored changes" in stdout
    deadline = time.monotonic() + 30
    while (alive := [pid for pid in workers if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive == []
    for where in (scratch, Path(stage._MEMORY)):  # (exports are in memory when the machine has it)
        assert [p.name for p in where.iterdir() if p.name.startswith(tuple(f"{EXPORT_PREFIX}{pid}-"
                                                                         for pid in (proc.pid, *workers)))] == []


def _running(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(("args", "message"), [
    (["no-such-branch"], "gate: error: no-such-branch: no such branch or commit in"),
    (["main", "-n", "0"], "gate: error: --last: expected a number of changes of at least 1, got 0"),
    (["main", "-j", "0"], "gate: error: --jobs: expected at least 1 job, got 0"),
    (["main", "--policy", "bad.yml"], "bad.yml:2: points.smok: unknown key; did you mean `smoke`?"),
    (["main", "--policy", "missing.yml"], "gate: error: missing.yml: no such policy file"),
    (["main", "--json", "nowhere/r.json"], "gate: error: nowhere/r.json: --json: no such folder to write it in"),
    (["main", "--repo", "/"], "gate: error: /: --repo: not a git repository"),
])
def test_bad_input_is_one_line_with_exit_2(history: History, tmp_path: Path, args: list[str],
                                           message: str) -> None:
    (history.root / "bad.yml").write_text("budget: 3\npoints: {smok: 1}\n")
    try:
        done = replay(history, *args)
    finally:
        (history.root / "bad.yml").unlink()
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


def _rows(*totals: tuple[int, bool]) -> list[Row]:
    """Changes scored under a policy of budget 3, each (total, reverted)."""
    rows = []
    for i, (total, reverted) in enumerate(totals):
        change = HistoryChange(f"{i:040x}", "b" * 40, f"{i:040x}", False, f"change {i}", "Maria", (), "")
        outcome = Outcome(total <= 3, total, 3, (("smoke", total),) if total else ())
        rows.append(Row(change, True, "", "f" * 40 if reverted else None, Scored(i, outcome)))
    return rows


@pytest.mark.parametrize(("totals", "advice"), [
    ([(0, False), (4, True), (2, False), (6, True)],
     "budget 3: blocks 2 of the 2 reverted changes and 0 of the 2 others (the policies as they were blocked 2 of 4, "
     "2 of the 2 reverted)"),
    ([(5, False), (0, True), (2, False)],
     "no budget blocks more of the 1 reverted changes than of the others (the reverted cost 0 points): the checks "
     "do not see what went wrong; add the cases or tests that would have failed them, and replay (the policies "
     "as they were blocked 1 of 3, 0 of the 1 reverted)"),
    ([(0, False), (2, False)],
     "no change here was reverted, so nothing tells a budget's worth; a budget of 2 accepts every change on points "
     "(the policies as they were blocked 0 of 2)"),
])
def test_the_suggestion_is_the_budget_that_tells_the_reverted_changes_apart(
        totals: list[tuple[int, bool]], advice: str) -> None:
    rows = _rows(*totals)
    assert suggestion(rows, budgets(rows, candidate=False), candidate=False) == advice


def test_a_merge_that_brings_nothing_new_is_its_branch_tip(tmp_path: Path) -> None:
    # A merge commit whose second parent the first already holds (written with `git commit-tree`, as a tool
    # that merges a branch once more may): the change brings the branch's tip, whose author the bots decision
    # reads. (It brought no commit at all before, and the decision failed on that.)
    (tmp_path / "calc").mkdir()
    h = History(tmp_path / "calc")
    h.git("init", "-q", "-b", "main")
    h.commit("Initial commit", {"calc.py": CALC})
    h.git("checkout", "-q", "-b", "copilot/x")
    tip = h.commit("Add x", {"x.py": "X = 1\n"}, COPILOT)
    h.git("checkout", "-q", "main")
    h.git("merge", "-q", "--no-ff", "copilot/x", "-m", "Merge pull request #5 from octo/copilot/x")
    again = h.git("commit-tree", "HEAD^{tree}", "-p", "HEAD", "-p", tip, "-m",
                  "Merge pull request #6 from octo/copilot/x\n\nAdd x again")
    h.git("update-ref", "refs/heads/main", again)
    newest, first = changes_of(Repo(h.root), "main", 2)
    assert (newest.merge, newest.head, newest.number, newest.title) == (True, tip, 6, "Add x again")
    assert [c.sha for c in newest.commits] == [c.sha for c in first.commits] == [tip]
    assert newest.author == first.author == "Copilot"
    assert gated(newest, Bots(agents=("copilot",))).gated


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen signs the commit")
def test_the_history_reads_the_same_whatever_the_users_log_settings(tmp_path: Path) -> None:
    # A maintainer whose git prints each signed commit's signature check (`log.showSignature`: GitHub signs
    # the merges of its web interface) and its log in Latin-1: the commits and their authors are still read.
    (tmp_path / "calc").mkdir()
    h = History(tmp_path / "calc")
    h.git("init", "-q", "-b", "main")
    h.commit("Initial commit", {"calc.py": CALC})
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "key")], check=True)
    for name, value in (("gpg.format", "ssh"), ("user.signingkey", str(tmp_path / "key.pub")),
                        ("log.showSignature", "true"), ("i18n.logOutputEncoding", "ISO-8859-1")):
        h.git("config", name, value)
    h.git("commit", "-q", "-S", "--allow-empty", "-m", "Add nothing", who=("Zoë", "zoe@example.com"))
    signed = h.git("rev-parse", "HEAD")
    [change] = changes_of(Repo(h.root), "main", 1)
    assert (change.commit, change.author, change.commits[0].author.email) == (signed, "Zoë", "zoe@example.com")
