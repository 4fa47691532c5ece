"""Real PR traffic through `gate ci`: GitHub's published webhook payloads, patched per scenario, against the
fake GitHub that validates every request and response. Who is gated and what matched; dependency bots; labels
that count only when a maintainer applied them."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.report.context import MARKER
from tests.fakegithub import FakeGitHub, Person
from tests.fakegithub.scenario import REPO, CommitSpec, Scenario

POLICY = "budget: 3\n"
CLEAN = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b)\n    return a + b\n"  # 5 points: blocked
HUMAN = Person("Ann Dev", "ann@example.com", "ann")
MAINTAINER = "maria"


def scenario(fake: FakeGitHub, tmp_path: Path, *, author: str = "ann", author_type: str = "User",
             branch: str = "fix-parser", commits: list[CommitSpec] | None = None, policy: str = POLICY,
             head: dict[str, str | None] | None = None) -> Scenario:
    pr = Scenario(fake, tmp_path, {".github/gate.yml": policy, "app.py": CLEAN},
                  head if head is not None else {"util.py": CLEAN}, author=author, author_type=author_type,
                  branch=branch, commits=commits or [CommitSpec("Fix the parser", HUMAN, HUMAN)])
    fake.set_permission(REPO, MAINTAINER, "write")
    return pr


def run_ci(pr: Scenario, monkeypatch: pytest.MonkeyPatch, event: dict[str, object] | None = None,
           *args: str, event_name: str | None = None) -> int:
    for key, value in pr.environment(event=event, event_name=event_name).items():
        monkeypatch.setenv(key, value)
    return main(["ci", *args])


def plain(markdown: str) -> str:
    """A comment's text as a reader sees it (the report escapes Markdown punctuation and mentions)."""
    return html.unescape(markdown.replace("\\", "").replace("@&#8203;", "@"))


def comment_of(fake: FakeGitHub, pr: Scenario) -> str:
    """The gate's own comment (the others are the humans' and bots' on the PR)."""
    [comment] = [c for c in fake.repos[REPO].comments[pr.number] if MARKER in c["body"]
                 and c["user"]["type"] == "Bot"]
    return plain(comment["body"])


CURSOR_TRAILER = "Co-authored-by: Cursor Agent <cursoragent@cursor.com>"
CLAUDE_TRAILER = "Co-Authored-By: Claude <noreply@anthropic.com>"
COPILOT_COMMITS = Person("copilot-swe-agent[bot]", "198982749+Copilot@users.noreply.github.com",
                         "copilot-swe-agent[bot]", "Bot")
OPENHANDS = Person("openhands", "openhands@all-hands.dev")

# (id, PR author and type, branch, commits, what the status line and the comment must name)
SIGNALS = [
    ("copilot-author", ("Copilot", "Bot"), "copilot/fix-parser",
     [CommitSpec("Fix", COPILOT_COMMITS, COPILOT_COMMITS)],
     "author Copilot (Bot) is the account of GitHub Copilot coding agent"),
    ("copilot-commits", ("ann", "User"), "fix-parser", [CommitSpec("Fix", COPILOT_COMMITS, HUMAN)],
     "commit {sha} is authored by copilot-swe-agent[bot] (GitHub Copilot coding agent)"),
    ("copilot-branch", ("ann", "User"), "copilot/fix-parser", None,
     "branch copilot/fix-parser matches copilot/** (GitHub Copilot coding agent)"),
    ("codex-branch", ("ann", "User"), "codex/fix-parser", None,
     "branch codex/fix-parser matches codex/** (OpenAI Codex)"),
    ("cursor-branch", ("ann", "User"), "cursor/fix-parser-4a1b", None,
     "branch cursor/fix-parser-4a1b matches cursor/** (Cursor background agent)"),
    ("cursor-trailer", ("ann", "User"), "fix-parser", [CommitSpec(f"Fix the parser\n\n{CURSOR_TRAILER}", HUMAN, HUMAN)],
     f"commit {{sha}} has the trailer {CURSOR_TRAILER} (Cursor background agent)"),
    ("claude-code-trailer", ("ann", "User"), "fix-parser",
     [CommitSpec("Tidy", HUMAN, HUMAN), CommitSpec(f"Fix the parser\n\nMore words.\n\n{CLAUDE_TRAILER}", HUMAN, HUMAN)],
     f"commit {{sha}} has the trailer {CLAUDE_TRAILER} (Claude Code)"),
    ("claude-code-branch", ("ann", "User"), "claude/issue-7-20260101", None,
     "branch claude/issue-7-20260101 matches claude/** (Claude Code)"),
    ("openhands-committer", ("ann", "User"), "fix-parser", [CommitSpec("Fix", HUMAN, OPENHANDS)],
     "commit {sha} is committed by openhands <openhands@all-hands.dev> (OpenHands)"),
    ("devin", ("devin-ai-integration[bot]", "Bot"), "devin/1735-fix", None,
     "author devin-ai-integration[bot] (Bot) is the account of Devin"),
    ("jules", ("google-labs-jules[bot]", "Bot"), "fix-parser", None,
     "author google-labs-jules[bot] (Bot) is the account of Google Jules"),
    ("claude-app", ("claude[bot]", "Bot"), "fix-parser", None,
     "author claude[bot] (Bot) is the account of Claude GitHub app"),
    ("sweep", ("sweep-ai[bot]", "Bot"), "sweep/fix-parser", None, "author sweep-ai[bot] (Bot) is the account of Sweep"),
]


@pytest.mark.parametrize(("author", "branch", "commits", "named"), [s[1:] for s in SIGNALS],
                         ids=[s[0] for s in SIGNALS])
def test_each_agent_signal_gates_the_pr_and_is_named(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, author: tuple[str, str], branch: str,
        commits: list[CommitSpec] | None, named: str) -> None:
    pr = scenario(fake, tmp_path, author=author[0], author_type=author[1], branch=branch, commits=commits,
                  head={"util.py": BROKEN})
    assert run_ci(pr, monkeypatch) == 1
    marked = pr.head_sha[:7]  # the marked commit is the head's last one in these scenarios
    expected = named.format(sha=marked)
    [status] = fake.repos[REPO].statuses
    assert status["state"] == "failure"
    assert expected.startswith(status["description"].split("; gated: ", 1)[1].rstrip("…"))
    assert f"gated: {expected}" in comment_of(fake, pr)


def test_a_humans_pr_without_any_agent_mark_is_not_gated(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, head={"util.py": BROKEN})
    assert run_ci(pr, monkeypatch) == 0
    [status] = fake.repos[REPO].statuses
    assert status["state"] == "success" and "not a bot or a coding agent" in status["description"]
    assert pr.number not in fake.repos[REPO].comments


@pytest.mark.parametrize("bot", ["dependabot[bot]", "renovate[bot]"])
def test_dependency_bots_are_not_gated_by_default(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bot: str) -> None:
    update = Person(bot, "49699333+dependabot[bot]@users.noreply.github.com", bot, "Bot")
    pr = scenario(fake, tmp_path, author=bot, author_type="Bot", branch=f"{bot[:-5]}/pip/requests-2.32.4",
                  commits=[CommitSpec("Bump requests from 2.32.3 to 2.32.4", update, update)],
                  head={"requirements.txt": "requests==2.32.4\n"})
    assert run_ci(pr, monkeypatch) == 0
    assert pr.outputs()["gated"] == "false"
    verdict = json.loads(Path(pr.outputs()["verdict"]).read_text())
    assert "dependency bot" in verdict["notes"][0]["message"]
    if bot == "renovate[bot]":  # Dependabot's run has a read-only token: nothing is posted, the artifact waits
        [status] = fake.repos[REPO].statuses
        assert status["state"] == "success" and "dependency bot" in status["description"]


@pytest.mark.parametrize("bot", ["dependabot[bot]", "renovate[bot]"])
def test_one_policy_line_gates_dependency_bots(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bot: str) -> None:
    pr = scenario(fake, tmp_path, author=bot, author_type="Bot", head={"util.py": BROKEN},
                  policy=POLICY + "bots:\n  dependency_bots: true\n")
    assert run_ci(pr, monkeypatch) == 1
    assert pr.outputs()["gated"] == "true" and pr.outputs()["total"] == "5"


@pytest.mark.parametrize(("labeler", "kind", "permission", "why"), [
    ("gate-bot[bot]", "Bot", None, "gate-bot[bot] is a bot"),
    ("ann", "User", "write", "ann is the PR's author"),
    ("rita", "User", "read", "rita has read access, not write"),
])
def test_a_no_gate_label_not_applied_by_a_maintainer_is_ignored_and_the_comment_says_so(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labeler: str, kind: str,
        permission: str | None, why: str) -> None:
    pr = scenario(fake, tmp_path, branch="codex/fix-parser", head={"util.py": BROKEN})
    if permission:
        fake.set_permission(REPO, labeler, permission)
    pr.label("no-gate", labeler, kind)
    # The event claims a maintainer sent it: the gate asks the API who applied the label instead.
    assert run_ci(pr, monkeypatch, pr.event("labeled", label="no-gate", sender=(MAINTAINER, "User"))) == 1
    [status] = fake.repos[REPO].statuses
    assert status["state"] == "failure"
    assert f"label 'no-gate' is ignored: {why}" in comment_of(fake, pr)


def test_the_labeled_trigger_does_not_turn_an_earlier_failure_into_success(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot", head={"util.py": BROKEN})
    assert run_ci(pr, monkeypatch) == 1
    pr.label("no-gate", "gate-bot[bot]", "Bot")  # the bot opts itself out; `gate` too, to make sure
    pr.label("gate", "gate-bot[bot]", "Bot")
    assert run_ci(pr, monkeypatch, pr.event("labeled", label="no-gate")) == 1
    repo = fake.repos[REPO]
    assert [s["state"] for s in repo.statuses] == ["failure", "failure"]
    assert [r["conclusion"] for r in repo.check_runs.values()] == ["failure", "failure"]


def test_a_maintainers_no_gate_label_opts_a_bot_pr_out_as_neutral_never_success(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot", head={"util.py": BROKEN})
    assert run_ci(pr, monkeypatch) == 1
    pr.label("no-gate", MAINTAINER)
    assert run_ci(pr, monkeypatch, pr.event("labeled", label="no-gate")) == 0
    runs = list(fake.repos[REPO].check_runs.values())
    assert [r["conclusion"] for r in runs] == ["failure", "neutral"]
    assert "would be gated: author gate-bot[bot] is a Bot account" in runs[1]["output"]["summary"]


CASES = """\
budget: 3
cases:
  - name: adds
    function: "calc:add"
    args: [2, 3]
    expect: 5
"""
CALC = "def add(a, b):\n    return a + b + int(open(__file__[:-7] + 'offset.txt').read())\n"


def docs_pr(fake: FakeGitHub, tmp_path: Path, head: dict[str, str | None]) -> Scenario:
    return Scenario(fake, tmp_path, {".github/gate.yml": CASES, "calc.py": CALC, "offset.txt": "0\n",
                                     "README.md": "# app\n"}, head)


def test_a_docs_only_bot_pr_runs_the_cases_and_is_accepted(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = docs_pr(fake, tmp_path, {"README.md": "# app\n\nHow to add.\n", "docs/guide.md": "Add two numbers.\n"})
    assert run_ci(pr, monkeypatch) == 0
    verdict = json.loads(Path(pr.outputs()["verdict"]).read_text())
    assert verdict["accepted"] and verdict["total"] == 0
    assert [(c["name"], c["status"]) for c in verdict["cases"]] == [("adds", "passed")]
    assert "none of the 2 changed files matches paths.include" in comment_of(fake, pr)
    assert fake.repos[REPO].statuses[-1]["state"] == "success"


def test_a_data_change_that_breaks_behaviour_fails_its_case_though_no_gated_file_changed(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = docs_pr(fake, tmp_path, {"offset.txt": "1\n"})
    assert run_ci(pr, monkeypatch) == 0  # one failed case: 2 points, within the budget of 3
    verdict = json.loads(Path(pr.outputs()["verdict"]).read_text())
    assert [(c["name"], c["status"]) for c in verdict["cases"]] == [("adds", "failed")]
    assert [(p["check"], p["points"]) for p in verdict["penalties"]] == [("smoke", 2)]


def push(pr: Scenario, fake: FakeGitHub, files: dict[str, str | None], message: str = "bot change") -> None:
    """A new commit on the PR's branch, in the checkout and in the fake."""
    pr.push(files, CommitSpec(message, HUMAN, HUMAN))


def comment_writes(fake: FakeGitHub) -> list[str]:
    return [method for method, path, _ in fake.writes() if "/comments" in path]


def test_comment_on_change_edits_the_comment_only_when_the_verdict_changes(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot", head={"util.py": BROKEN})
    assert run_ci(pr, monkeypatch, None, "--comment", "on-change") == 1
    push(pr, fake, {"notes.txt": "unrelated\n"})  # a new head, the same verdict
    assert run_ci(pr, monkeypatch, None, "--comment", "on-change") == 1
    assert comment_writes(fake) == ["POST"]
    push(pr, fake, {"util.py": CLEAN})  # the verdict changes: the comment follows
    assert run_ci(pr, monkeypatch, None, "--comment", "on-change") == 0
    assert comment_writes(fake) == ["POST", "PATCH"]
    assert "gate: accepted" in comment_of(fake, pr)
    repo = fake.repos[REPO]  # the status and the check run are posted on every run, on each head
    assert [s["state"] for s in repo.statuses] == ["failure", "failure", "success"]
    assert len(repo.check_runs) == 3


def test_comment_blocked_only_posts_nothing_for_an_accepted_pr_until_one_is_blocked(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot")
    assert run_ci(pr, monkeypatch, None, "--comment", "blocked-only") == 0
    assert comment_writes(fake) == [] and [s["state"] for s in fake.repos[REPO].statuses] == ["success"]
    push(pr, fake, {"util.py": BROKEN})
    assert run_ci(pr, monkeypatch, None, "--comment", "blocked-only") == 1
    assert comment_writes(fake) == ["POST"] and "gate: blocked" in comment_of(fake, pr)
    push(pr, fake, {"util.py": CLEAN})  # once there is a comment it is kept current, not left saying blocked
    assert run_ci(pr, monkeypatch, None, "--comment", "blocked-only") == 0
    assert comment_writes(fake) == ["POST", "PATCH"] and "gate: accepted" in comment_of(fake, pr)


def override_comment(fake: FakeGitHub, pr: Scenario, body: str, login: str, kind: str = "User",
                     ) -> dict[str, object]:
    """`login` comments `body` on the PR, and the issue_comment event for it."""
    return pr.comment(body, login, kind, sender=MAINTAINER)


def blocked_bot_pr(fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str = POLICY) -> Scenario:
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot", head={"util.py": BROKEN},
                  policy=policy)
    assert run_ci(pr, monkeypatch) == 1
    return pr


def conclusions(fake: FakeGitHub, sha: str) -> list[str]:
    return [r["conclusion"] for r in fake.repos[REPO].check_runs.values() if r["head_sha"] == sha]


def test_a_maintainers_override_comment_concludes_neutral_and_records_who_when_and_why(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = blocked_bot_pr(fake, tmp_path, monkeypatch)
    event = override_comment(fake, pr, "/gate override the parser is rewritten in #14", MAINTAINER)
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    assert conclusions(fake, pr.head_sha) == ["failure", "neutral"]  # never success
    status = fake.repos[REPO].statuses[-1]
    assert status["state"] == "success" and status["description"].startswith("overridden by maria (comment, ")
    said = comment_of(fake, pr).split("\n")[0]
    assert said.startswith("> **gate: overridden**: overridden by maria (comment, 2026-01-01 ")
    assert f"for head {pr.head_sha[:12]}: the parser is rewritten in #14" in said
    # A later run on the same head (a label, a re-run) scores it again and keeps the override.
    pr.label("needs-docs", "gate-bot[bot]", "Bot")
    assert run_ci(pr, monkeypatch, pr.event("labeled", label="needs-docs")) == 0
    assert conclusions(fake, pr.head_sha) == ["failure", "neutral", "neutral"]


@pytest.mark.parametrize(("login", "kind", "why"), [
    ("gate-bot[bot]", "User", "gate-bot[bot] is a bot"),  # a bot's login, whatever type it claims
    ("other-app[bot]", "Bot", "other-app[bot] is a bot"),
    ("rita", "User", "rita has read access, not write"),
])
def test_an_override_by_the_author_a_bot_or_a_reader_is_ignored_and_the_comment_says_so(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, login: str, kind: str, why: str) -> None:
    pr = blocked_bot_pr(fake, tmp_path, monkeypatch)
    fake.set_permission(REPO, "rita", "read")
    event = override_comment(fake, pr, "/gate override trust me", login, kind)
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    assert conclusions(fake, pr.head_sha) == ["failure"]
    assert [s["state"] for s in fake.repos[REPO].statuses] == ["failure"]
    assert f"the override by {login} (comment) is ignored: {why}" in comment_of(fake, pr)


def test_the_human_authors_own_override_is_ignored(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, branch="codex/fix-parser", head={"util.py": BROKEN})
    fake.set_permission(REPO, "ann", "admin")  # even an admin cannot wave through the PR they opened
    assert run_ci(pr, monkeypatch) == 1
    event = override_comment(fake, pr, "/gate override mine", "ann")
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    assert conclusions(fake, pr.head_sha) == ["failure"]
    assert "the override by ann (comment) is ignored: ann is the PR's author" in comment_of(fake, pr)


def test_a_comment_edited_into_an_override_within_the_second_it_was_posted_does_not_count(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = blocked_bot_pr(fake, tmp_path, monkeypatch)
    event = override_comment(fake, pr, "LGTM", MAINTAINER)  # the `created` event carries the posted body
    # Anyone with write access (a bot's app too) can edit a comment; its author stays the maintainer, and an
    # edit within the second leaves `updated_at` equal to `created_at`.
    [*_, theirs] = fake.repos[REPO].comments[pr.number]
    theirs.update(body="/gate override sneaky", updated_at=theirs["created_at"])
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    # The bot's own override comment (ignored: a bot's) must not wake the edited one either.
    mine = override_comment(fake, pr, "/gate override please", "gate-bot[bot]", "Bot")
    assert run_ci(pr, monkeypatch, mine, event_name="issue_comment") == 0
    assert run_ci(pr, monkeypatch, pr.event("synchronize")) == 1  # a re-run on the head
    assert conclusions(fake, pr.head_sha) == ["failure", "failure"]
    assert "overridden by" not in comment_of(fake, pr)


@pytest.mark.parametrize("via", ["comment", "label"])
def test_an_override_of_a_later_head_does_not_cover_an_older_head_pushed_back(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via: str) -> None:
    policy = POLICY + "bots:\n  labels:\n    override: [gate-override]\n"
    pr = blocked_bot_pr(fake, tmp_path, monkeypatch, policy)
    first = pr.head_sha
    push(pr, fake, {"util.py": BROKEN + "# still broken\n"})
    assert run_ci(pr, monkeypatch, pr.event("synchronize")) == 1
    if via == "comment":
        event = override_comment(fake, pr, "/gate override this one is fine", MAINTAINER)
        assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    else:
        pr.label("gate-override", MAINTAINER)
        assert run_ci(pr, monkeypatch, pr.event("labeled", label="gate-override")) == 0
    assert conclusions(fake, pr.head_sha) == ["failure", "neutral"]
    pr.force_push(first)
    assert run_ci(pr, monkeypatch, pr.event("synchronize")) == 1
    assert conclusions(fake, first) == ["failure", "failure"]
    assert fake.repos[REPO].statuses[-1]["state"] == "failure"


def test_another_apps_failure_check_run_named_gate_does_not_make_an_earlier_override_count(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot", head={"util.py": BROKEN})
    event = override_comment(fake, pr, "/gate override looks fine", MAINTAINER)  # before any verdict
    assert run_ci(pr, monkeypatch) == 1
    # The bot's own app (`checks: write`) posts a failed `gate` run that it says completed long before.
    fake.add_check_run(REPO, pr.head_sha, "gate", "failure", ("bot-app", 4242), "2025-06-01T00:00:00Z")
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0  # the comment's run, late
    gates = [r for r in fake.repos[REPO].check_runs.values() if r["app"]["slug"] == "github-actions"]
    assert [r["conclusion"] for r in gates] == ["failure"]
    assert "has no blocked verdict on head" in comment_of(fake, pr)


def test_an_override_naming_the_head_counts_and_one_naming_another_head_does_not(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = blocked_bot_pr(fake, tmp_path, monkeypatch)
    other = "0123456789ab"
    event = override_comment(fake, pr, f"/gate override {other} wrong head", MAINTAINER)
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    assert conclusions(fake, pr.head_sha) == ["failure"]
    assert f"the override names head {other}, but the PR's head is {pr.head_sha[:12]}" in comment_of(fake, pr)
    # The blocked comment gives the command that names its head; a shorter prefix names it too.
    assert f"`/gate override {pr.head_sha[:12]} <reason>`" in comment_of(fake, pr)
    event = override_comment(fake, pr, f"/gate override {pr.head_sha[:9]} checked by hand", MAINTAINER)
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    assert conclusions(fake, pr.head_sha) == ["failure", "neutral"]
    assert f"for head {pr.head_sha[:12]}: checked by hand" in comment_of(fake, pr)


def test_a_new_push_voids_the_override(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = blocked_bot_pr(fake, tmp_path, monkeypatch)
    event = override_comment(fake, pr, "/gate override fine for now", MAINTAINER)
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    first = pr.head_sha
    push(pr, fake, {"util.py": BROKEN + "# still broken\n"})
    assert run_ci(pr, monkeypatch, pr.event("synchronize")) == 1
    assert conclusions(fake, first) == ["failure", "neutral"]
    assert conclusions(fake, pr.head_sha) == ["failure"]
    assert "gate: overridden" not in comment_of(fake, pr).split("\n")[0]


def test_an_override_label_counts_for_the_head_it_was_applied_on_only(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = POLICY + "bots:\n  labels:\n    override: [gate-override]\n"
    pr = blocked_bot_pr(fake, tmp_path, monkeypatch, policy)
    pr.label("gate-override", "gate-bot[bot]", "Bot")  # the bot's own: ignored
    assert run_ci(pr, monkeypatch, pr.event("labeled", label="gate-override")) == 1
    assert "the override by gate-bot[bot] (label 'gate-override') is ignored" in comment_of(fake, pr)
    pr.label("gate-override", MAINTAINER)
    assert run_ci(pr, monkeypatch, pr.event("labeled", label="gate-override")) == 0
    assert conclusions(fake, pr.head_sha) == ["failure", "failure", "neutral"]
    assert "overridden by maria (label 'gate-override'" in comment_of(fake, pr)
    push(pr, fake, {"util.py": BROKEN + "# again\n"})  # the label stays on the PR, the override does not
    assert run_ci(pr, monkeypatch, pr.event("synchronize")) == 1
    assert conclusions(fake, pr.head_sha) == ["failure"]


def merge_group(pr: Scenario, built: str = "") -> tuple[str, dict[str, object]]:
    """The merge queue's commit for the PR (main with the PR merged in, on its gh-readonly-queue branch, in the
    checkout; `built`: that branch, made by the caller) and GitHub's published merge_group event for it."""
    from tests.fakegithub import webhook
    from tests.fakegithub.scenario import git

    ref = built or f"gh-readonly-queue/main/pr-{pr.number}-{pr.head_sha}"
    if not built:
        git(pr.workspace, "checkout", "-q", "-b", ref, pr.base_sha)
        git(pr.workspace, "merge", "-q", "--no-ff", "-m", f"Merge pull request #{pr.number}", pr.head_sha)
    head = git(pr.workspace, "rev-parse", "HEAD")
    payload = webhook("merge_group.checks_requested")
    payload["merge_group"].update(head_sha=head, base_sha=pr.base_sha, head_ref=f"refs/heads/{ref}",
                                  base_ref="refs/heads/main")
    payload["merge_group"]["head_commit"]["id"] = head
    payload["repository"]["full_name"] = REPO
    return head, payload


def test_a_merge_group_is_scored_and_reports_on_the_queues_commit(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot", head={"util.py": BROKEN})
    head, event = merge_group(pr)
    assert run_ci(pr, monkeypatch, event, event_name="merge_group") == 1
    repo = fake.repos[REPO]
    assert [(s["sha"], s["state"]) for s in repo.statuses] == [(head, "failure")]
    assert conclusions(fake, head) == ["failure"]  # the required check reports on the group's commit
    assert pr.number not in repo.comments  # the queue's run posts no PR comment
    verdict = json.loads(Path(pr.outputs()["verdict"]).read_text())
    assert dict(verdict["facts"])["merge group"].endswith(f"pr-{pr.number}-{pr.head_sha}")
    assert [(p["check"], p["points"]) for p in verdict["penalties"]] == [("parse", 5)]


def test_a_merge_group_of_a_human_pr_is_not_gated_and_says_so_on_its_commit(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, head={"util.py": BROKEN})
    head, event = merge_group(pr)
    assert run_ci(pr, monkeypatch, event, event_name="merge_group") == 0
    [status] = fake.repos[REPO].statuses
    assert status["sha"] == head and status["state"] == "success" and "not a bot" in status["description"]


def test_a_merge_group_carries_the_override_of_the_head_it_merges(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = blocked_bot_pr(fake, tmp_path, monkeypatch)
    event = override_comment(fake, pr, "/gate override ship it", MAINTAINER)
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    head, group = merge_group(pr)
    assert run_ci(pr, monkeypatch, group, event_name="merge_group") == 0
    assert conclusions(fake, head) == ["neutral"]
    assert fake.repos[REPO].statuses[-1]["description"].startswith("overridden by maria")


def test_an_override_does_not_carry_into_a_merge_group_that_also_holds_another_prs_change(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakegithub.scenario import commit, git

    pr = blocked_bot_pr(fake, tmp_path, monkeypatch)
    event = override_comment(fake, pr, "/gate override ship it", MAINTAINER)
    assert run_ci(pr, monkeypatch, event, event_name="issue_comment") == 0
    # PR #8, queued ahead of this one, adds a file that does not parse; the queue's commit holds both PRs.
    git(pr.workspace, "checkout", "-q", "-b", "bot/other", pr.base_sha)
    other = commit(pr.workspace, {"other.py": BROKEN}, "PR 8")
    ref = f"gh-readonly-queue/main/pr-{pr.number}-{pr.head_sha}"
    git(pr.workspace, "checkout", "-q", "-b", ref, pr.base_sha)
    git(pr.workspace, "merge", "-q", "--no-ff", "-m", "Merge pull request #8", other)
    git(pr.workspace, "merge", "-q", "--no-ff", "-m", f"Merge pull request #{pr.number}", pr.head_sha)
    head, group = merge_group(pr, ref)
    assert run_ci(pr, monkeypatch, group, event_name="merge_group") == 1
    assert conclusions(fake, head) == ["failure"]
    assert fake.repos[REPO].statuses[-1]["state"] == "failure"
    verdict = json.loads(Path(pr.outputs()["verdict"]).read_text())
    assert any("does not reach this merge group" in n["message"] for n in verdict["notes"])


def test_an_override_reaches_a_merge_group_commit_never_a_tree_named_as_one(tmp_path: Path) -> None:
    # The group's SHA must name a commit whose tree is the head merged into the base: the same tree named by its
    # own SHA (an event that names no commit) does not carry the override.
    from gate.github.override import group_problem
    from tests.fakegithub.scenario import commit, git

    git(tmp_path, "init", "-q", "-b", "main")
    base = commit(tmp_path, {"calc.py": "def add(a, b):\n    return a + b\n"}, "base")
    git(tmp_path, "checkout", "-q", "-b", "bot")
    head = commit(tmp_path, {"calc.py": "def add(a, b):\n    return b + a\n"}, "bot")
    git(tmp_path, "checkout", "-q", "main")
    git(tmp_path, "merge", "-q", "--no-ff", "-m", "Merge pull request #7", head)
    group = git(tmp_path, "rev-parse", "HEAD")
    tree = git(tmp_path, "rev-parse", "HEAD^{tree}")
    assert group_problem(tmp_path, base, group, head) == ""
    assert "does not reach this merge group" in group_problem(tmp_path, base, tree, head)


def test_a_parse_error_in_one_file_does_not_hide_a_denied_import_in_another(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot",
                  head={"broken.py": BROKEN, "util.py": "import subprocess\n\n\ndef run():\n    return 1\n"})
    assert run_ci(pr, monkeypatch) == 1
    verdict = json.loads(Path(pr.outputs()["verdict"]).read_text())
    charged = {(p["check"], p["points"], p["locations"][0]["path"]) for p in verdict["penalties"]}
    assert charged == {("parse", 5, "broken.py"), ("imports", 3, "util.py")}
    assert "subprocess" in comment_of(fake, pr)


MONOREPO = """\
budget: 3
scopes:
  - name: api
    paths: [services/api/]
    budget: 0
    cases:
      - name: api adds
        function: "services.api.calc:add"
        args: [2, 3]
        expect: 5
  - name: web
    paths: [web/]
    budget: 5
"""


def test_a_two_scope_monorepo_pr_is_scored_per_scope_and_blocked_by_the_scope_over_its_budget(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pr = Scenario(fake, tmp_path, {".github/gate.yml": MONOREPO, "services/__init__.py": "",
                                   "services/api/__init__.py": "", "services/api/calc.py": CLEAN,
                                   "web/app.py": CLEAN, "tools/x.py": CLEAN},
                  {"services/api/calc.py": "import subprocess\n\n\n" + CLEAN,  # 3 points: over api's budget of 0
                   "web/app.py": BROKEN})  # 5 points: within web's budget of 5
    assert run_ci(pr, monkeypatch) == 1
    verdict = json.loads(Path(pr.outputs()["verdict"]).read_text())
    assert [(s["name"], s["files"], s["total"], s["budget"], s["accepted"]) for s in verdict["scopes"]] == [
        ("root", 0, 0, 3, True), ("api", 1, 3, 0, False), ("web", 1, 5, 5, True)]
    assert sorted((p["check"], p["points"], p["message"].split("]")[0]) for p in verdict["penalties"]) == [
        ("imports", 3, "[api"), ("parse", 5, "[web")]
    assert [(c["name"], c["status"]) for c in verdict["cases"]] == [("[api] api adds", "passed")]
    body = comment_of(fake, pr)
    assert body.startswith("❌ **gate: blocked** at ") and ": root 0 of 3; api 3 of 0 (over); web 5 of 5\n" in body
    assert "| api | 1 | 3 | 0 | **over** |" in body and "| web | 1 | 5 | 5 | within |" in body
    # The same commits give the same verdict on a laptop.
    capsys.readouterr()
    assert main(["check", "--repo", str(pr.workspace), "--base", pr.base_sha, "--head", pr.head_sha]) == 1
    assert "  api: 3 / budget 0  over its budget\n  web: 5 / budget 5\n" in capsys.readouterr().out


def test_gate_hidden_cases_set_in_a_pr_run_is_said_in_the_verdict_to_be_unused(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hidden = tmp_path / "secret" / "hidden.yml"  # outside the checkout, as the cases docs say for gate score
    hidden.parent.mkdir()
    hidden.write_text("- {function: 'util:add', args: [2, 3], expect: 6}\n")  # would fail if it ran
    pr = scenario(fake, tmp_path, author="gate-bot[bot]", author_type="Bot")
    monkeypatch.setenv("GATE_HIDDEN_CASES", str(hidden))
    assert run_ci(pr, monkeypatch) == 0
    verdict = json.loads(Path(pr.outputs()["verdict"]).read_text())
    assert verdict["cases"] == []  # the base commit decides the hidden cases; it names none
    assert verdict["facts"]["ignored"].startswith(
        "GATE_HIDDEN_CASES is set but not used: with a base commit, hidden cases come from")
    assert "GATE_HIDDEN_CASES is set but not used" in comment_of(fake, pr)


def test_an_override_of_a_pr_into_an_unprotected_branch_leaves_the_gate_check_of_its_head_alone(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakegithub import Pull

    seven = blocked_bot_pr(fake, tmp_path, monkeypatch)  # PR #12 into main: `gate` fails on its head H
    # The bot's second PR with the same head H, into a branch it pushed: scored under names of its own.
    fake.add_pull(REPO, Pull(13, seven.head_sha, seven.base_sha, head_ref=seven.branch, base_ref="bot/parent",
                             user="gate-bot[bot]", user_type="Bot", commits=fake.repos[REPO].pulls[12].commits))
    event = seven.event("synchronize")
    pull = event["pull_request"]
    assert isinstance(pull, dict)
    pull["number"] = 13
    pull["base"]["ref"] = "bot/parent"
    assert run_ci(seven, monkeypatch, event) == 1
    # A maintainer overrides #13, thinking a PR into a side branch harmless.
    seven.number = 13
    answer = override_comment(fake, seven, "/gate override it only merges into a side branch", MAINTAINER)
    assert run_ci(seven, monkeypatch, answer, event_name="issue_comment") == 0
    runs = [(r["name"], r["conclusion"]) for r in fake.repos[REPO].check_runs.values()]
    assert runs == [("gate", "failure"), ("gate (into bot/parent)", "failure"), ("gate (into bot/parent)", "neutral")]
    assert [s["state"] for s in fake.repos[REPO].statuses if s["context"] == "gate"] == ["failure"]
