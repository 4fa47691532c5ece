"""The model judge against a local chat-completions stub: it advises, never overrules the tests, never
passes by accident, and never shows its API key.

The stub is a real HTTP server on a free port in a thread; the judge client under test is the real one, built
the way production builds it (`JudgeClient.from_environment`), with a recording `sleep` so that retries do not
wait.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.checks.judge import JudgeCheck, connect_from_environment
from gate.checks.parse import Parse
from gate.cli import main
from gate.engine import run_checks
from gate.errors import BadInput
from gate.judge.client import ERROR_BODY_BYTES, MAX_RETRY_WAIT, JudgeClient
from gate.policy.keys import Charge
from gate.policy.model import CaseSpec, Judge, Points, Policy
from gate.policy_file import load_policy
from gate.report.annotations import workflow_commands
from gate.report.comment import render_comment
from gate.report.summary import render_summary
from gate.report.terminal import render_terminal
from gate.secret import Secret
from gate.sources.reply import subject_from_reply
from gate.subject import SourceFile, Subject, Task
from gate.verdict import CaseReport, Location, Penalty, Verdict, validate

KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"
KEY_ENV = "GATE_TEST_JUDGE_KEY"
HIDDEN_NAME = "hidden-zebra-case"
HIDDEN_EXPECTED = "EXPECTED-918273645"
CODE = "def add(a, b):\n    return a + b\n"
HELPER = "def unused():\n    pass\n    return None\n"


@dataclass
class Answer:
    """One scripted answer: status, headers, body. `hold` keeps the client waiting for the headers until the
    test ends; `stall` sends the headers and then keeps it waiting for the body."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False
    stall: bool = False


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Stub:
    """A chat-completions endpoint that gives its answers in order (the last one again when they run out)."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.received: list[Received] = []
        self.release = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                stub.received.append(Received(self.path, dict(self.headers), body))
                answer = stub.answers[min(len(stub.received), len(stub.answers)) - 1]
                if answer.hold:
                    stub.release.wait(30)
                try:
                    self.send_response(answer.status)
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    if answer.stall:
                        self.wfile.flush()
                        stub.release.wait(30)
                    self.wfile.write(answer.body)
                except OSError:
                    pass  # the client gave up waiting: that is what a hold tests

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # A short poll interval makes shutdown() quick (it waits for the serving loop to notice).
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stubs() -> Iterator[list[Stub]]:
    started: list[Stub] = []
    yield started
    for stub in started:
        stub.close()


def serve(stubs: list[Stub], *answers: Answer) -> Stub:
    stub = Stub(list(answers))
    stubs.append(stub)
    return stub


def completion(content: str | None) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    return json.dumps({"id": "c1", "object": "chat.completion", "model": "m", "choices": [choice]}).encode()


def says(verdict: str, reasons: list[str], lines: list[int] | None = None) -> Answer:
    reply: dict[str, Any] = {"verdict": verdict, "reasons": reasons}
    if lines is not None:
        reply["lines"] = lines
    return Answer(body=completion(json.dumps(reply)))


def policy(url: str, **judge: Any) -> Policy:
    settings = {"enabled": True, "url": url, "model": "judge-model", "api_key_env": KEY_ENV, "timeout": 5.0,
                "retries": 2, "rubric": "Prefer plain arithmetic.", **judge}
    return Policy(budget=3, points=Points(judge=3), judge=Judge(**settings))


def subject(**changes: Any) -> Subject:
    fields: dict[str, Any] = {
        "kind": "reply",
        "label": "reply.md",
        "files": (SourceFile("solution.py", CODE, status="extracted"),),
        "task": Task("add", prompt="Write add(a, b) that returns the sum."),
        "cases": (CaseSpec("call", "visible", (("function", "add"), ("args", [1, 2]), ("expect", 3))),),
        "hidden_cases": (
            CaseSpec("call", HIDDEN_NAME, (("function", "add"), ("args", [40, 2]), ("expect", HIDDEN_EXPECTED)),
                     hidden=True),
        ),
        **changes,
    }
    return Subject(**fields)


@dataclass
class Waits:
    seconds: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def judge_check(waits: Waits | None = None) -> JudgeCheck:
    """The judge check wired as production wires it, with the key in a given environment."""
    sleep = waits if waits is not None else Waits()
    return JudgeCheck(lambda settings: JudgeClient.from_environment(settings, {KEY_ENV: KEY}, sleep=sleep))


def judged(stub_url: str, the_subject: Subject | None = None, waits: Waits | None = None,
           **judge: Any) -> Verdict:
    verdict = run_checks(the_subject or subject(), policy(stub_url, **judge), checks=[Parse(), judge_check(waits)])
    validate(json.loads(verdict.to_json()))
    return verdict


def judge_note(verdict: Verdict) -> str:
    notes = [n.message for n in verdict.notes if n.source == "judge"]
    assert len(notes) == 1, verdict.notes
    return notes[0]


def check_report(verdict: Verdict) -> tuple[str, int, str]:
    report = next(c for c in verdict.checks if c.name == "judge")
    return report.status, report.points, report.reason


# --- what is sent -----------------------------------------------------------------------------------------


def test_request_pins_temperature_zero_and_asks_for_the_schema(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("pass", ["fine"]))
    judged(stub.url)
    [request] = stub.received
    body = request.json()
    assert request.path == "/v1/chat/completions"
    assert body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert body["model"] == "judge-model"
    system, user = body["messages"]
    assert system["role"] == "system"
    assert '"enum": [\n        "pass",\n        "fail",\n        "needs_review"' in system["content"]
    assert user["role"] == "user"
    assert "Write add(a, b) that returns the sum." in user["content"]
    assert "Prefer plain arithmetic." in user["content"]
    assert "    2 |     return a + b" in user["content"]
    assert request.headers["Authorization"] == f"Bearer {KEY}"


def test_a_full_chat_completions_url_is_used_as_given(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("pass", ["fine"]))
    judged(stub.url + "/chat/completions/")
    assert [r.path for r in stub.received] == ["/v1/chat/completions"]


def test_the_judge_never_sees_the_cases(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("pass", ["fine"]))
    judged(stub.url)
    [request] = stub.received
    for secret_part in (HIDDEN_NAME, HIDDEN_EXPECTED, "[40, 2]", "40, 2"):
        assert secret_part not in request.body.decode()


def test_the_rubric_file_text_comes_from_the_subject(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("pass", ["fine"]))
    judged(stub.url, subject(judge_rubric="No recursion, ever."), rubric_file=".github/judge-rubric.md")
    user = stub.received[0].json()["messages"][1]["content"]
    assert "Prefer plain arithmetic." in user
    assert "No recursion, ever." in user


def test_a_rubric_file_the_source_did_not_read_means_needs_review_without_asking(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("pass", ["fine"]))
    verdict = judged(stub.url, rubric_file=".github/judge-rubric.md")
    assert stub.received == []
    assert "needs_review" in judge_note(verdict)
    assert ".github/judge-rubric.md was not read from the base commit" in judge_note(verdict)


def test_the_production_edge_reads_the_key_from_the_environment(stubs: list[Stub],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    stub = serve(stubs, says("pass", ["fine"]))
    monkeypatch.setenv(KEY_ENV, KEY)
    run_checks(subject(), policy(stub.url), checks=[Parse(), JudgeCheck(connect_from_environment)])
    assert stub.received[0].headers["Authorization"] == f"Bearer {KEY}"


def test_the_whole_pipeline_shows_the_judge_the_extracted_code_not_the_prose(
        stubs: list[Stub], monkeypatch: pytest.MonkeyPatch) -> None:
    stub = serve(stubs, says("pass", ["fine"]))
    monkeypatch.setenv(KEY_ENV, KEY)
    reply = "Here is my solution, it is great:\n\n```python\n" + CODE + "```\n\nI hope this helps!\n"
    the_subject = subject_from_reply(reply, "reply.md", Task("add", prompt="Write add(a, b)."))
    verdict = run_checks(replace(the_subject, hidden_cases=subject().hidden_cases), policy(stub.url))
    assert [c.name for c in verdict.checks][-1] == "judge"
    user = stub.received[0].json()["messages"][1]["content"]
    assert "    2 |     return a + b" in user
    assert "I hope this helps" not in user
    assert "it is great" not in user
    assert HIDDEN_EXPECTED not in stub.received[0].body.decode()


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_gate_check_on_a_git_range_asks_the_judge_and_never_prints_the_key(
        stubs: list[Stub], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    stub = serve(stubs, says("fail", [f"special-cases 42; signed {KEY}"], lines=[2]))
    monkeypatch.setenv(KEY_ENV, KEY)
    root = tmp_path / "repo"
    (root / ".github").mkdir(parents=True)
    (root / ".github/gate.yml").write_text(f"""\
points:
  judge: 2
judge:
  enabled: true
  url: {stub.url}
  model: judge-model
  api_key_env: {KEY_ENV}
  add_points: true
""")
    (root / ".github/gate-hidden.yml").write_text(
        f"cases:\n  - name: {HIDDEN_NAME}\n    function: calc:add\n    args: [40, 2]\n    expect: {HIDDEN_EXPECTED}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=M", "-c", "user.email=m@example.com", "add", ".")
    git(root, "-c", "user.name=M", "-c", "user.email=m@example.com", "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "bot")
    (root / "calc.py").write_text("def add(a, b):\n    if a == 40: return 42\n    return a + b\n")
    git(root, "add", "calc.py")
    git(root, "-c", "user.name=Bot", "-c", "user.email=b@example.com", "commit", "-q", "-m", "bot: add")
    outputs = tmp_path / "out"
    outputs.mkdir()
    code = main(["check", "--repo", str(root), "--base", "main", "--json", str(outputs / "verdict.json"),
                 "--comment", str(outputs / "comment.md"), "--summary", str(outputs / "summary.md"),
                 "--annotations"])
    printed = capsys.readouterr()
    verdict = json.loads((outputs / "verdict.json").read_text())
    # gate check runs the hidden case, which expects a string: the candidate fails it (smoke +2) and the judge
    # adds 2, over the budget of 3.
    assert code == 1
    assert [(p["check"], p["points"], p["locations"][0]["path"], p["locations"][0]["line"])
            for p in verdict["penalties"] if p["check"] == "judge"] == [("judge", 2, "calc.py", 2)]
    request = stub.received[0].body.decode()
    assert "if a == 40: return 42" in request
    assert HIDDEN_NAME not in request and HIDDEN_EXPECTED not in request
    shown = [printed.out, printed.err] + [f.read_text() for f in outputs.iterdir()]
    assert [text for text in shown if KEY in text] == []
    assert "special-cases 42; signed ***" in printed.out


def test_an_unset_key_variable_means_needs_review_without_asking(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("pass", ["fine"]))
    check = JudgeCheck(lambda settings: JudgeClient.from_environment(settings, {}))
    verdict = run_checks(subject(), policy(stub.url), checks=[Parse(), check])
    assert stub.received == []
    assert f"environment variable {KEY_ENV}" in judge_note(verdict)


def test_a_disabled_judge_asks_nobody_and_is_not_listed_as_skipped(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("fail", ["bad"]))
    verdict = judged(stub.url, enabled=False)
    assert stub.received == []
    assert "judge" not in [c.name for c in verdict.checks]  # nobody turned it on: no line in the report
    assert "judge" not in render_comment(verdict)


def test_a_judge_block_in_the_policy_file_drives_the_check(stubs: list[Stub], tmp_path: Path) -> None:
    stub = serve(stubs, says("fail", ["special-cases the example input"], lines=[2]))
    path = tmp_path / "gate.yml"
    path.write_text(f"""\
budget: 3
points:
  judge: 4
judge:
  enabled: true
  url: {stub.url}
  model: judge-model
  api_key_env: {KEY_ENV}
  rubric: No special cases.
  add_points: true
  needs_review: label
""")
    verdict = run_checks(subject(), load_policy(path), checks=[Parse(), judge_check()])
    assert (verdict.total, verdict.accepted) == (4, False)
    assert verdict.penalties[0].locations == (Location("solution.py", 2),)
    assert "No special cases." in stub.received[0].json()["messages"][1]["content"]


def test_a_bad_judge_mapping_in_the_policy_file_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "gate.yml"
    path.write_text("judge:\n  enabled: true\n  needs_review: maybe\n")
    with pytest.raises(BadInput) as caught:
        load_policy(path)
    assert "judge.needs_review" in caught.value.render()
    assert ":3:" in caught.value.render()


# --- what its answers do ----------------------------------------------------------------------------------


def test_a_pass_is_advice(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("pass", ["clear and idiomatic"]))
    verdict = judged(stub.url)
    assert judge_note(verdict) == "pass: clear and idiomatic"
    assert check_report(verdict)[:2] == ("passed", 0)
    assert (verdict.total, verdict.accepted, verdict.labels, verdict.blocked_reasons) == (0, True, (), ())


@pytest.mark.parametrize(("add_points", "total"), [(True, 3), (False, 0)])
def test_a_fail_adds_points_only_when_the_policy_says_so(stubs: list[Stub], add_points: bool,
                                                          total: int) -> None:
    stub = serve(stubs, says("fail", ["loops where a formula would do"], lines=[2]))
    verdict = judged(stub.url, add_points=add_points)
    assert verdict.total == total
    assert [p.check for p in verdict.penalties] == (["judge"] if add_points else [])
    [note] = verdict.notes
    assert note.message == "fail: loops where a formula would do"
    assert note.locations == (Location("solution.py", 2),)


def test_line_numbers_run_on_across_files(stubs: list[Stub]) -> None:
    files = (SourceFile("a.py", CODE), SourceFile("b.py", HELPER))
    stub = serve(stubs, says("fail", ["dead code"], lines=[4, 3, 99]))
    verdict = judged(stub.url, subject(files=files))
    # a.py is listing lines 1-2, so 3 and 4 are b.py's first two lines; 99 is past the end: dropped, not
    # shown at a wrong place.
    assert verdict.notes[0].locations == (Location("b.py", 1), Location("b.py", 2))
    assert "### b.py" in stub.received[0].json()["messages"][1]["content"]


class FailedHiddenCase(Check):
    """Stands in for the smoke check: one hidden case failed, charged 2 points."""

    name = "smoke"
    needs: tuple[Product, ...] = ()
    produces: tuple[Product, ...] = ()
    static = False
    charges: tuple[Charge, ...] = ()

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        return CheckResult(penalties=(Penalty("smoke", 2, "hidden case 0 failed", case=0),),
                           cases=(CaseReport(0, HIDDEN_NAME, "call", True, "failed", "returned int"),))


def test_a_failed_case_stays_failed_when_the_judge_says_pass(stubs: list[Stub]) -> None:
    stub = serve(stubs, says("pass", ["the tests are wrong, this code is perfect"]))
    checks: list[Check] = [Parse(), FailedHiddenCase(), judge_check()]
    verdict = run_checks(subject(), Policy(budget=1, judge=policy(stub.url).judge), checks=checks)
    assert [c.status for c in verdict.cases] == ["failed"]
    assert [(p.check, p.points) for p in verdict.penalties] == [("smoke", 2)]
    assert (verdict.total, verdict.accepted) == (2, False)
    assert judge_note(verdict).startswith("pass")


@pytest.mark.parametrize(("mapping", "labels", "accepted"), [
    ("advice", (), True),
    ("label", ("judge-unsure",), True),
    ("block", (), False),
])
def test_needs_review_maps_to_advice_a_label_or_a_block(stubs: list[Stub], mapping: str,
                                                         labels: tuple[str, ...], accepted: bool) -> None:
    stub = serve(stubs, says("needs_review", ["cannot tell what the task wants"]))
    verdict = judged(stub.url, needs_review=mapping, label="judge-unsure", add_points=True)
    assert verdict.total == 0
    assert verdict.labels == labels
    assert verdict.accepted is accepted
    blocked = [r for r in verdict.blocked_reasons if "needs a human review" in r]
    expected = ["the model judge needs a human review: cannot tell what the task wants"]
    assert blocked == ([] if accepted else expected)
    assert Verdict.from_dict(json.loads(verdict.to_json())) == verdict


# --- answers that are no verdict --------------------------------------------------------------------------

GARBAGE = {
    "not JSON": (Answer(body=b"<html>Bad gateway</html>"), "the endpoint's answer is not JSON"),
    "no choices": (Answer(body=b'{"choices": []}'), "no choices[0].message.content"),
    "null content": (Answer(body=completion(None)), "no text in choices[0].message.content"),
    "prose": (Answer(body=completion("Looks good to me!")), "the judge's reply is not a JSON object"),
    "fenced": (Answer(body=completion('```json\n{"verdict": "pass", "reasons": []}\n```')),
               "not a JSON object"),
    "shouted verdict": (says("PASS!", ["great"]), "does not match the schema at verdict"),
    "no reasons": (Answer(body=completion('{"verdict": "pass"}')), "'reasons' is a required property"),
    "extra key": (Answer(body=completion('{"verdict": "pass", "reasons": [], "score": 10}')), "schema"),
    "lines as text": (Answer(body=completion('{"verdict": "fail", "reasons": ["x"], "lines": ["2"]}')),
                      "schema at lines/0"),
    "a list": (Answer(body=completion('["pass"]')), "schema"),
    "duplicate verdict": (Answer(body=completion('{"verdict": "fail", "verdict": "pass", "reasons": []}')),
                          "duplicate keys ['verdict']"),
    "HTTP 400": (Answer(400, b'{"error": "response_format is not supported"}'),
                 "HTTP 400 Bad Request: {\"error\": \"response_format is not supported\"}"),
    "HTTP 500": (Answer(500, b"overloaded"), "HTTP 500 Internal Server Error: overloaded (after 3 attempts)"),
    "redirect": (Answer(302, headers={"Location": "/steal"}), "redirects are not followed"),
    "slow": (Answer(hold=True, body=completion('{"verdict": "pass", "reasons": []}')),
             "no answer within 0.3 s"),
    "stalled body": (Answer(stall=True, body=completion('{"verdict": "pass", "reasons": []}')),
                     "no answer within 0.3 s"),
    "nested": (Answer(body=b"[" * 200_000), "the endpoint's answer is not JSON"),
    "nested reply": (Answer(body=completion("[" * 200_000)), "the judge's reply is not a JSON object"),
    "huge": (Answer(body=completion(" " * 1_100_000 + '{"verdict": "pass", "reasons": []}')),
             "larger than 1048576 bytes"),
}


@pytest.mark.parametrize("case", list(GARBAGE))
def test_anything_but_a_valid_reply_is_needs_review_never_a_pass(stubs: list[Stub], case: str) -> None:
    answer, reason = GARBAGE[case]
    stub = serve(stubs, answer)
    verdict = judged(stub.url, timeout=0.3, needs_review="label")
    note = judge_note(verdict)
    assert note.startswith("needs_review: ")
    assert reason in note
    assert verdict.labels == ("needs-review",)
    assert check_report(verdict)[0] == "passed"  # no crash, no points


def test_an_unreachable_endpoint_is_needs_review() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    verdict = judged(f"http://127.0.0.1:{port}/v1")
    assert "cannot reach http://127.0.0.1" in judge_note(verdict)


def test_a_redirect_is_not_followed(stubs: list[Stub]) -> None:
    stub = serve(stubs, Answer(307, headers={"Location": "/elsewhere"}), says("pass", ["fine"]))
    judged(stub.url)
    assert [r.path for r in stub.received] == ["/v1/chat/completions"]


def test_4xx_is_not_retried(stubs: list[Stub]) -> None:
    waits = Waits()
    stub = serve(stubs, Answer(401, b"bad key"), says("pass", ["fine"]))
    verdict = judged(stub.url, waits=waits)
    assert len(stub.received) == 1
    assert waits.seconds == []
    assert "HTTP 401" in judge_note(verdict)


@pytest.mark.parametrize(("retry_after", "waited"), [
    ("2", 2.0), ("3600", MAX_RETRY_WAIT), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0), ("soon", 1.0), (None, 1.0),
])
def test_429_is_retried_after_the_wait_the_server_asks_capped(stubs: list[Stub], retry_after: str | None,
                                                               waited: float) -> None:
    waits = Waits()
    headers = {"Retry-After": retry_after} if retry_after else {}
    stub = serve(stubs, Answer(429, b"slow down", headers), says("fail", ["x"]))
    verdict = judged(stub.url, waits=waits)
    assert len(stub.received) == 2
    assert waits.seconds == [waited]
    assert judge_note(verdict) == "fail: x"


def test_5xx_is_retried_with_backoff(stubs: list[Stub]) -> None:
    waits = Waits()
    stub = serve(stubs, Answer(500), Answer(503), says("pass", ["fine"]))
    verdict = judged(stub.url, waits=waits, retries=2)
    assert len(stub.received) == 3
    assert waits.seconds == [1.0, 2.0]
    assert judge_note(verdict) == "pass: fine"


# --- the key ----------------------------------------------------------------------------------------------


def test_the_secret_never_shows_itself() -> None:
    secret = Secret(KEY)
    client = JudgeClient.from_environment(Judge(url="http://x"), {"GATE_JUDGE_API_KEY": KEY})
    for shown in (repr(secret), str(secret), f"{secret}", f"{secret!r}", repr(client), str(client)):
        assert KEY not in shown
    assert repr(secret) == "***"
    assert secret.reveal() == KEY
    assert secret.redact(f"a {KEY} b {KEY[:5]}") == f"a *** b {KEY[:5]}"
    assert secret.redact(f"a {KEY} b {KEY[:5]}", truncated=True) == "a *** b ***"


def test_half_a_key_where_the_error_body_is_cut_is_masked_too(stubs: list[Stub]) -> None:
    # Whitespace padding shrinks to one space in the quoted snippet, which would bring the cut key's first half
    # right to the front of the reason.
    stub = serve(stubs, Answer(400, (" " * (ERROR_BODY_BYTES - 12) + KEY + " is wrong").encode()))
    note = judge_note(judged(stub.url))
    assert KEY[:12] not in note
    assert note.endswith("HTTP 400 Bad Request: ***")


# The key at character 190 of an error body: cutting the quoted body at 200 characters would leave half of it.
ECHOES = {
    "error body": Answer(500, ("x" * 190 + f"{KEY} is not a valid key").encode()),
    "not JSON": Answer(body=f"Authorization: Bearer {KEY}".encode()),
    "prose reply": Answer(body=completion(f"your key is {KEY}")),
    "off-schema verdict": says(KEY, ["x"]),
    "key as a schema path": Answer(body=completion(json.dumps({"verdict": "pass", "reasons": [], KEY: 1}))),
    "reasons": says("fail", [f"the request was signed with {KEY}"]),
    "401": Answer(401, json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}).encode()),
}


@pytest.mark.parametrize("case", list(ECHOES))
def test_the_key_never_appears_in_logs_reports_or_errors(stubs: list[Stub], caplog: pytest.LogCaptureFixture,
                                                         case: str) -> None:
    caplog.set_level(logging.DEBUG)
    stub = serve(stubs, ECHOES[case])
    verdict = judged(stub.url, needs_review="block", add_points=True, retries=1)
    assert stub.received, "the stub was asked"
    reports = {
        "json": verdict.to_json(),
        "repr": repr(verdict),
        "terminal": render_terminal(verdict, color=False),
        "comment": render_comment(verdict),
        "summary": render_summary(verdict),
        "annotations": "\n".join(workflow_commands(verdict)),
    }
    assert KEY not in caplog.text
    assert [name for name, text in reports.items() if KEY in text] == []
    assert "***" in judge_note(verdict)
    assert "judge" in reports["terminal"]
