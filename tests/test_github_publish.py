"""Publishing against the fake GitHub: forks and `gate publish`, tampered artifacts, GitHub's faults, check run
limits and labels. The real PyGithub client throughout."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import urllib3.util.retry

from gate.cli import main
from gate.errors import BadInput
from gate.github.client import Connection, Waits, connect
from gate.github.deliver import Delivery, deliver
from gate.github.posting import Names, Poster, Report, Target, report_for
from gate.report.context import MARKER
from gate.secret import Secret
from gate.verdict import CaseReport
from tests.fakegithub import COMMENT_LIMIT, FakeGitHub, webhook
from tests.fakegithub.scenario import REPO, Scenario
from tests.report_support import blocked_verdict

POLICY = "budget: 3\n"
CLEAN = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b)\n    return a + b\n"


def make(fake: FakeGitHub, tmp_path: Path, head: dict[str, str | None] | None = None,
         fork: bool = False) -> Scenario:
    return Scenario(fake, tmp_path, {".github/gate.yml": POLICY, "app.py": CLEAN},
                    head if head is not None else {"util.py": BROKEN}, fork=fork)


def setenv(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def workflow_run_event(pr: Scenario) -> dict[str, object]:
    """GitHub's published workflow_run payload for the scoring run of a fork's PR (no pull_requests)."""
    payload = webhook("workflow_run.completed")
    payload["workflow_run"].update(head_sha=pr.head_sha, pull_requests=[], event="pull_request")
    return payload


def fork_run(fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> tuple[Scenario, Path]:
    pr = make(fake, tmp_path, fork=True)
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == 1
    assert fake.writes() == []  # a read-only token: nothing is even tried
    out = capsys.readouterr().out
    assert "read-only" in out and "::error file=util.py" in out  # the log's annotations stand in
    assert "read-only" in pr.summary()
    return pr, Path(pr.outputs()["verdict"])


def publish(pr: Scenario, artifact: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    env = pr.environment(workspace=False, event=workflow_run_event(pr), event_name="workflow_run")
    setenv(monkeypatch, env)
    return main(["publish", str(artifact), *args])


def test_a_fork_pr_leaves_an_artifact_and_gate_publish_posts_it(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pr, artifact = fork_run(fake, tmp_path, monkeypatch, capsys)
    assert publish(pr, artifact, monkeypatch) == 1
    repo = fake.repos[REPO]
    [comment] = repo.comments[pr.number]
    assert MARKER in comment["body"] and "recomputed" in comment["body"]
    assert [(s["sha"], s["state"]) for s in repo.statuses] == [(pr.head_sha, "failure")]
    assert [r["conclusion"] for r in repo.check_runs.values()] == ["failure"]
    # The publish run read the files through the API, never a checkout of the PR's code.
    assert all("/contents/" not in path or "ref=" in path for _, path, _ in fake.log)


JUDGE_POLICY = "budget: 3\njudge:\n  enabled: true\n  url: http://127.0.0.1:1/v1\n  model: m\n  retries: 0\n" \
               "  needs_review: {mapping}\n"


@pytest.mark.parametrize(("mapping", "code", "state", "labels"), [("label", 0, "success", ["needs-review"]),
                                                                   ("block", 1, "failure", [])])
def test_gate_publish_keeps_what_the_judge_asked_for_in_a_fork_run(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mapping: str, code: int, state: str,
        labels: list[str]) -> None:
    """A fork's run has no secrets, so its judge needs review; `gate publish` must not drop the label or
    the block that the base's policy maps that to."""
    pr = Scenario(fake, tmp_path, {".github/gate.yml": JUDGE_POLICY.format(mapping=mapping), "app.py": CLEAN},
                  {"util.py": CLEAN}, fork=True)
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == code
    assert publish(pr, Path(pr.outputs()["verdict"]), monkeypatch) == code
    repo = fake.repos[REPO]
    assert [s["state"] for s in repo.statuses] == [state] and repo.pulls[pr.number].labels == labels


def test_a_humans_fork_pr_gets_success_from_gate_publish_never_a_pending_check(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = Scenario(fake, tmp_path, {".github/gate.yml": POLICY, "app.py": CLEAN}, {"util.py": BROKEN},
                  fork=True, author="alice", author_type="User")
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == 0 and fake.writes() == []
    artifact = Path(pr.outputs()["verdict"])  # what names the PR and its head to the publish workflow
    assert pr.outputs()["gated"] == "false" and "not gated" in artifact.read_text()
    assert publish(pr, artifact, monkeypatch) == 0
    repo = fake.repos[REPO]
    assert [(s["sha"], s["state"]) for s in repo.statuses] == [(pr.head_sha, "success")]
    assert "alice" in repo.statuses[0]["description"] and pr.number not in repo.comments


def test_gate_publish_decides_again_whatever_the_artifact_says(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A fork that rewrote its workflow can upload a "not gated" artifact for a bot's PR: it is scored."""
    pr, artifact = fork_run(fake, tmp_path, monkeypatch, capsys)
    data = json.loads(artifact.read_text())
    data.update(penalties=[], checks=[], total=0, accepted=True,
                notes=[{"source": "gate", "message": "not gated: a human wrote it", "locations": []}])
    artifact.write_text(json.dumps(data))
    assert publish(pr, artifact, monkeypatch) == 2
    assert [s["state"] for s in fake.repos[REPO].statuses] == ["failure"]


def test_gate_publish_scores_a_file_over_a_megabyte(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Over 1 MB the contents API sends no bytes (`encoding: none`): PyGithub's decoded_content refused it and
    `gate publish` stopped with an internal error. The blob has them."""
    pr = make(fake, tmp_path, {"util.py": "import socket\n" + "# padding to pass a megabyte\n" * 40_000},
              fork=True)
    setenv(monkeypatch, pr.environment())
    main(["ci"])
    capsys.readouterr()
    assert publish(pr, Path(pr.outputs()["verdict"]), monkeypatch) == 1
    [comment] = fake.repos[REPO].comments[pr.number]
    assert "util\\.py: 1133 KiB, over paths\\.max\\_file\\_kb" in comment["body"], comment["body"]


CASES_POLICY = ("budget: 1\nimports: {deny: [], dynamic: false}\ncases:\n  - function: \"calc:add\"\n"
                "    args: [2, 3]\n    expect: 5\n")


@pytest.mark.parametrize("forged", [False, True])
def test_case_results_from_a_forks_run_never_turn_the_pr_green(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        forged: bool) -> None:
    """The fork's run (or its own rewritten workflow) controls the artifact's case results: an artifact that
    says every case passed, for a head that fails them all, is at most "needs a human"."""
    pr = Scenario(fake, tmp_path, {".github/gate.yml": CASES_POLICY, "calc.py": CLEAN},
                  {"calc.py": "def add(a, b):\n    return a - b\n" if forged else CLEAN + "# tidy\n"}, fork=True)
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == (1 if forged else 0)
    artifact = Path(pr.outputs()["verdict"])
    if forged:
        data = json.loads(artifact.read_text())
        data.update(penalties=[], total=0, accepted=True,
                    cases=[dict(case, status="passed", detail="") for case in data["cases"]],
                    checks=[dict(c, status="passed", points=0) for c in data["checks"]])
        artifact.write_text(json.dumps(data))
    assert publish(pr, artifact, monkeypatch) == 1
    repo = fake.repos[REPO]
    assert [(s["sha"], s["state"]) for s in repo.statuses] == [(pr.head_sha, "failure")]
    assert "needs a human" in repo.statuses[0]["description"]
    assert [r["conclusion"] for r in repo.check_runs.values()] == ["failure"]
    assert "unprivileged run" in repo.comments[pr.number][0]["body"]


# A `languages:` checker that every machine here has: Python's own compiler, for files named `.js`.
LANGUAGES_POLICY = ("budget: 3\npaths: {include: ['**/*.py', '**/*.js']}\n"
                    "languages: {'.js': {command: [/usr/bin/python3, -m, py_compile, '{path}']}}\n")


@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="no /usr/bin/python3")
@pytest.mark.parametrize("compiles", [False, True])
def test_gate_publish_takes_a_genuine_artifact_whose_checker_ran_in_the_forks_run(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiles: bool) -> None:
    """The checker ran the head's file in the fork's sandbox; `gate publish` runs nothing of the head, so it
    recomputes what is static and is not fooled into calling a genuine artifact tampered. What the checker said
    counts against the PR only: a file that compiles there still needs a human, as case results do."""
    pr = Scenario(fake, tmp_path, {".github/gate.yml": LANGUAGES_POLICY, "app.py": CLEAN},
                  {"web/app.js": "x = 1\n" if compiles else "let x = ;\n"}, fork=True)
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == (0 if compiles else 1)
    artifact = Path(pr.outputs()["verdict"])
    assert [p["check"] for p in json.loads(artifact.read_text())["penalties"]] == ([] if compiles else ["compile"])
    assert publish(pr, artifact, monkeypatch) == 1
    repo = fake.repos[REPO]
    assert [(s["sha"], s["state"]) for s in repo.statuses] == [(pr.head_sha, "failure")]
    body = repo.comments[pr.number][0]["body"]
    assert "refused" not in repo.statuses[0]["description"] and "recomputed" in body
    if compiles:
        assert "needs a human" in repo.statuses[0]["description"] and "checkers ran" in body
    else:
        assert "web/app.js" in body and "5 points" in repo.statuses[0]["description"]


@pytest.mark.parametrize("tamper", ["drop penalties", "not a verdict", "too large", "other head", "nested"])
def test_a_tampered_artifact_is_refused(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tamper: str) -> None:
    pr, artifact = fork_run(fake, tmp_path, monkeypatch, capsys)
    data = json.loads(artifact.read_text())
    if tamper == "drop penalties":  # the PR's code rewrote its own verdict to pass
        data.update(penalties=[], total=0, accepted=True)
    elif tamper == "not a verdict":
        data["total"] = "zero"
    elif tamper == "too large":
        data["notes"] = [{"source": "x", "message": "y" * (2 * 1024 * 1024), "locations": []}]
    elif tamper == "other head":
        data["facts"]["head"] = "0" * 40
    artifact.write_text(json.dumps(data) if tamper != "nested" else "[" * 200_000)  # deeper than json recurses
    assert publish(pr, artifact, monkeypatch, "--pr", str(pr.number)) == 2
    err = capsys.readouterr().err
    assert "gate: error:" in err and "Traceback" not in err
    repo = fake.repos[REPO]
    assert pr.number not in repo.comments  # nothing that reads like a verdict is posted
    assert all(s["state"] == "failure" for s in repo.statuses)


def test_a_missing_permission_is_named_with_the_yaml_to_add(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pr = make(fake, tmp_path)
    fake.fail("POST", "/statuses/", "permission")
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == 3
    err = capsys.readouterr().err
    assert "statuses: write" in err and "permissions:\n" in err and "checks: write" in err
    repo = fake.repos[REPO]
    assert len(repo.comments[pr.number]) == 1 and len(repo.check_runs) == 1  # the other steps still ran
    assert "statuses: write" in pr.summary() and "util.py" in pr.summary()  # the verdict reached the summary
    assert Path(pr.outputs()["verdict"]).exists()


def test_a_verdict_file_that_cannot_be_written_still_publishes_and_exits_3(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pr = make(fake, tmp_path)
    setenv(monkeypatch, pr.environment())
    assert main(["ci", "--verdict", str(tmp_path)]) == 3  # a directory, not a file
    err = capsys.readouterr().err
    assert f"cannot write the verdict file {tmp_path}" in err and "Traceback" not in err
    repo = fake.repos[REPO]
    assert [s["state"] for s in repo.statuses] == ["failure"] and len(repo.comments[pr.number]) == 1
    assert "util.py" in pr.summary() and "could not write the artifact" in pr.summary()


def test_a_read_only_token_seen_on_the_first_write_leaves_the_artifact(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pr = make(fake, tmp_path)  # the event does not say fork: only the answers tell
    for route in ("/issues/12/comments", "/statuses/", "/check-runs"):
        fake.fail("POST", route, "permission")
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == 1  # the verdict's own code: nothing failed that the publish workflow cannot fix
    out = capsys.readouterr().out
    assert "read-only" in out and "read-only" in pr.summary()
    # ... or the workflow forgot its permissions: both places say what to add.
    assert "checks: write" in out and "permissions" in out and "statuses: write" in pr.summary()


@pytest.mark.parametrize(("kind", "retry_after"), [("secondary_rate_limit", 3600), ("secondary_rate_limit", None),
                                                  ("rate_limit_429", 3600), ("server_error", None)])
def test_rate_limits_and_server_errors_are_retried_after_small_waits(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
        retry_after: int | None) -> None:
    waits: list[float] = []
    monkeypatch.setattr(urllib3.util.retry, "time", SimpleNamespace(sleep=waits.append, time=time.time))
    pr = make(fake, tmp_path)
    fake.fail("POST", "/issues/12/comments", kind, retry_after=retry_after)
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == 1
    assert len(fake.repos[REPO].comments[pr.number]) == 1
    posts = [status for m, path, status in fake.log if m == "POST" and "comments" in path]
    assert posts[0] in (403, 429, 502) and posts[-1] == 201
    # GitHub's hour (or PyGithub's default minute) is capped by GATE_GITHUB_MAX_WAIT, 0.05 s in these tests.
    assert max(waits, default=0.0) <= 0.05


@pytest.mark.parametrize(("kind", "says"), [("secondary_rate_limit", "rate limit"),
                                            ("primary_rate_limit", "rate limit"),
                                            ("server_error", "server error"), ("not_found", "is gone")])
def test_persistent_faults_get_a_clear_line_and_exit_3(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        kind: str, says: str) -> None:
    pr = make(fake, tmp_path)
    fake.fail("POST", "/check-runs", kind, times=10)
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == 3
    err = capsys.readouterr().err
    assert "create the check run" in err and says in err and "Traceback" not in err
    assert fake.repos[REPO].statuses[0]["state"] == "failure"
    # Nothing is lost: the verdict is in the job summary, with the failed step, and in the artifact.
    assert "util.py" in pr.summary() and "gate could not publish" in pr.summary()
    assert json.loads(Path(pr.outputs()["verdict"]).read_text())["total"] == 5


def test_a_comment_refused_as_too_long_is_cut_and_posted(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr = make(fake, tmp_path)
    fake.fail("POST", "/issues/12/comments", "too_long")
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == 1
    [comment] = fake.repos[REPO].comments[pr.number]
    assert "cut" in comment["body"] and comment["body"].rstrip().endswith(MARKER)


def test_a_report_over_the_comment_limit_is_cut_on_the_pr_and_whole_in_the_summary(
        fake: FakeGitHub, tmp_path: Path) -> None:
    pr = make(fake, tmp_path)
    many = tuple(CaseReport(i, f"case {i}", "call", False, "failed", "expected 1\n" + "got 2 " * 200)
                 for i in range(200))
    verdict = blocked_verdict(cases=many)
    env = pr.environment()
    client = connect(Connection.from_environment(env))
    delivery = Delivery(env, client, Target(REPO, pr.number, pr.head_sha), Names(), Secret(fake.token),
                        tmp_path / "verdict.json", read_only=False)
    assert deliver(delivery, verdict, report_for(verdict)) == 1
    [comment] = fake.repos[REPO].comments[pr.number]
    assert len(comment["body"]) <= COMMENT_LIMIT and "cut to fit" in comment["body"]
    assert "case 199" not in comment["body"] and "case 199" in pr.summary()
    [run] = fake.repos[REPO].check_runs.values()
    assert len(run["output"]["summary"]) <= 65_535
    assert [m for m, path, _ in fake.writes() if "comments" in path] == ["POST"]  # it fit the first time


def poster(fake: FakeGitHub, number: int, head_sha: str) -> Poster:
    client = connect(Connection(Secret(fake.token), fake.url, Waits(retries=1, max_wait=0.01, backoff=0,
                                                                     between_writes=0)))
    return Poster(client, Target(REPO, number, head_sha), Names(status="gate/status", check="gate/check"))


def test_one_request_carries_the_check_run_with_at_most_fifty_annotations_and_long_text_fits(
        fake: FakeGitHub, tmp_path: Path) -> None:
    pr = make(fake, tmp_path)
    notes = tuple({"path": "util.py", "start_line": i, "end_line": i, "annotation_level": "failure",
                   "message": f"finding {i}"} for i in range(1, 121))
    report = Report(state="failure", description="blocked", title="blocked", summary="x" * 65_535,
                    comment="y" * COMMENT_LIMIT, annotations=notes, labels=("needs-review",))
    outcome = poster(fake, pr.number, pr.head_sha).post(report)
    assert outcome.failures == [] and outcome.done == ["comment", "status", "check run", "labels"]
    repo = fake.repos[REPO]
    [run] = repo.check_runs.values()
    assert len(repo.annotations[run["id"]]) == 50 and run["name"] == "gate/check"
    assert [m for m, path, _ in fake.writes() if "check-runs" in path] == ["POST"]
    assert repo.statuses[0]["context"] == "gate/status"
    assert repo.pulls[pr.number].labels == ["needs-review"]


def test_the_token_is_hidden_in_reprs_and_bad_waits_are_named() -> None:
    connection = Connection.from_environment({"GITHUB_TOKEN": "ghs_secretvalue", "GATE_GITHUB_MAX_WAIT": "2"})
    assert "ghs_secretvalue" not in repr(connection) and connection.waits.max_wait == 2.0
    assert connection.api_url == "https://api.github.com"
    with pytest.raises(BadInput, match="GATE_GITHUB_RETRIES"):
        Waits.from_environment({"GATE_GITHUB_RETRIES": "many"})
    with pytest.raises(BadInput, match="token"):
        Connection.from_environment({})


def test_a_failure_while_publishing_a_known_pr_still_posts_a_failure_status(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # The fork's own run posted nothing (a read-only token): a publish run that failed after finding the PR
    # left the required check pending for good.
    pr, artifact = fork_run(fake, tmp_path, monkeypatch, capsys)
    fake.fail("GET", "/pulls/12/files", "not_found")  # the PR's files vanish while the run reads them
    assert publish(pr, artifact, monkeypatch) == 3
    [status] = fake.repos[REPO].statuses
    assert (status["sha"], status["state"]) == (pr.head_sha, "failure")
    assert "gone" in status["description"]
    assert "gate could not score PR #12" in pr.summary()


def test_gate_publish_posts_a_pr_into_an_unprotected_branch_under_its_own_names(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The publish workflow follows the same rule as `gate ci`: a fork's PR into a branch that is not protected
    never posts `gate` on its head, which a PR into main may share."""
    pr = Scenario(fake, tmp_path, {".github/gate.yml": POLICY, "app.py": CLEAN}, {"util.py": CLEAN}, fork=True,
                  base_branch="feature/x")
    fake.set_content(REPO, "main", ".github/gate.yml", POLICY)
    setenv(monkeypatch, pr.environment())
    assert main(["ci"]) == 0 and fake.writes() == []
    assert publish(pr, Path(pr.outputs()["verdict"]), monkeypatch) == 0
    repo = fake.repos[REPO]
    assert [(s["context"], s["state"]) for s in repo.statuses] == [("gate (into feature/x)", "success")]
    assert [r["name"] for r in repo.check_runs.values()] == ["gate (into feature/x)"]
