"""The verdict as JSON (schema, round trip) and as a terminal table (80 columns, colour only on a TTY)."""

from __future__ import annotations

import io
import json
import re

import msgspec
import pytest

from gate.policy.model import ImportRules, Policy
from gate.report.terminal import render_terminal, use_color
from gate.subject import Task
from gate.verdict import CaseReport, Location, Note, Penalty, Verdict, validate
from tests.helpers_static import DEMO_REPLY, fenced, score_reply

ANSI = re.compile(r"\x1b\[")


def _busy_verdict() -> Verdict:
    """A verdict with a penalty from every static check, long messages and long paths."""
    code = ("import os\nimport socket\n\n\ndef is_even(n):\n    '''O(1).'''\n    for _ in range(n):\n"
            "        pass\n    return __import__('subprocess')\n")
    verdict = score_reply("It runs in O(1).\n" + fenced(code), Policy(imports=ImportRules(deny=("os",))),
                          Task("sum", allowed_imports=("sys",)))
    long_path = "src/" + "very_long_directory_name/" * 6 + "module.py"
    return Verdict(
        **{**msgspec.structs.asdict(verdict),
           "penalties": (*verdict.penalties,
                         Penalty("smoke", 2, "case 'a rather long case name': expected 12, got 13 " * 3,
                                 (Location(long_path, 120, 4),), case=0)),
           "cases": (CaseReport(0, "a rather long case name", "stdio", False, "failed", "expected 12, got 13"),
                     CaseReport(1, "secret", "call", True, "passed", "", 0.25)),
           "notes": (Note("judge", "x" * 200, (Location(long_path, 3),)),),
           "blocked_reasons": ("the change edits .github/gate.yml, the policy that scores it",),
           "facts": (("base", "a" * 40), ("head", "b" * 40)),
           "labels": ("needs-review",),
           "reproduce": "gate score " + long_path + " --task " + long_path},
    )


def test_json_verdict_validates_against_its_schema_and_round_trips() -> None:
    for verdict in (score_reply(DEMO_REPLY), _busy_verdict(), score_reply("no code")):
        data = json.loads(verdict.to_json())
        validate(data)
        assert Verdict.from_dict(data) == verdict


def test_terminal_report_fits_80_columns_without_colour_when_not_a_tty() -> None:
    text = render_terminal(_busy_verdict(), color=False, verbose=True)
    assert not ANSI.search(text)
    assert max(len(line) for line in text.splitlines()) <= 80
    lines = text.splitlines()
    assert lines[0].startswith("BLOCKED")
    assert "total" in lines[0] and "budget 3" in lines[0]
    assert "labels: needs-review" in text
    assert "Needs a human" in text and "edits .github/gate.yml" in text
    assert "hidden case 1: passed" in text
    assert "secret" not in text  # a hidden case's name is never shown


def test_terminal_report_lists_checks_penalties_skips_and_isolation() -> None:
    text = render_terminal(score_reply(fenced("def broken(:\n")), color=False, verbose=True)
    assert re.search(r"parse\s+failed\s+5", text)
    assert re.search(r"imports\s+skipped\s+-\s+parse failed", text)
    assert "solution.py:1" in text
    assert "Isolation" in text and "code execution: off: not run" in text


def test_short_report_is_what_cost_points_what_needs_a_human_and_a_summary_line() -> None:
    text = render_terminal(_busy_verdict(), color=False)
    lines = text.splitlines()
    assert lines[0].startswith("BLOCKED  total 6 / budget 3")
    assert "Penalties" in text and "imports +3" in text and "claims +3" in text and "smoke +2" in text
    assert "Needs a human" in text and "edits .github/gate.yml" in text
    # The rest, in one line and a pointer to --verbose: no check table, case list, note, layer or fact.
    assert lines[-3].startswith("4 checks: 2 passed, 2 failed · 2 cases: 1 passed, 1 failed · 1 note · no code")
    assert lines[-1].startswith("--verbose for every check")
    for left_out in ("check            status", "Cases", "hidden case 1", "Notes", "Isolation", "Facts",
                     "Reproduce", "x" * 50):
        assert left_out not in text, left_out


def test_a_failing_tests_traceback_is_under_its_penalty_and_passing_tests_only_counted() -> None:
    traceback = "\n".join([f"frame {n}" for n in range(20)] + ["E   AssertionError: assert 1 == 2"])
    tests = tuple(CaseReport(n, f"tests/test_a.py::test_{n}", "pytest", False, "passed") for n in range(1, 300))
    verdict = Verdict(**{**msgspec.structs.asdict(score_reply(DEMO_REPLY)),
                         "penalties": (Penalty("tests", 4, "tests/test_a.py::test_0 failed at tests/test_a.py:3",
                                               (Location("tests/test_a.py", 3),), case=0),),
                         "cases": (CaseReport(0, "tests/test_a.py::test_0", "pytest", False, "failed", traceback),
                                   *tests),
                         "isolation": (("pytest", "in-process, weaker isolation"), ("seccomp", "on"))})
    text = render_terminal(verdict, color=False)
    assert "      E   AssertionError: assert 1 == 2" in text and "      frame 19" in text
    assert "[... 9 lines above: --verbose]" in text and "frame 7\n" not in text  # its end, where it failed
    assert "test_1" not in text and "300 tests: 299 passed, 1 failed" in text
    assert "isolation weaker: pytest" in text
    assert len(text.splitlines()) < 30
    verbose = render_terminal(verdict, color=False, verbose=True)
    assert "tests/test_a.py::test_299: passed" in verbose and "frame 0" in verbose


def test_colour_only_when_asked() -> None:
    text = render_terminal(_busy_verdict(), color=True)
    assert ANSI.search(text)
    visible = ANSI.sub("", re.sub(r"\x1b\[[0-9;]*m", "", text))
    assert max(len(line) for line in visible.splitlines()) <= 80


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_use_color_needs_a_tty_and_no_NO_COLOR(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert not use_color(io.StringIO())
    assert use_color(_Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(_Tty())


@pytest.mark.parametrize(("mode", "tty", "env", "colored"), [
    ("auto", False, {"FORCE_COLOR": "1"}, True),  # a CI log that shows colours
    ("auto", False, {"FORCE_COLOR": "0"}, True),  # force-color.org: any value that is not empty
    ("auto", False, {"FORCE_COLOR": ""}, False),
    ("auto", True, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR wins
    ("always", False, {"NO_COLOR": "1"}, True),  # the command line wins over both
    ("never", True, {"FORCE_COLOR": "1"}, False),
])
def test_color_mode_and_the_environment(monkeypatch: pytest.MonkeyPatch, mode: str, tty: bool,
                                        env: dict[str, str], colored: bool) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert use_color(_Tty() if tty else io.StringIO(), mode) is colored


def test_accepted_and_advisory_status_lines() -> None:
    assert render_terminal(score_reply(DEMO_REPLY), color=False).startswith("ACCEPTED  total 0 / budget 3")
    advisory = score_reply("no code", Policy(mode="advisory"))
    assert advisory.accepted
    assert render_terminal(advisory, color=False).startswith("WOULD BLOCK (advisory)  total 5 / budget 3")


def test_bot_chosen_text_cannot_drive_the_terminal() -> None:
    hostile = "evil\x1b[2J\x1b]0;pwned\x07\u202e.py"
    verdict = Verdict(**{**msgspec.structs.asdict(score_reply(DEMO_REPLY)),
                         "penalties": (Penalty("parse", 5, f"bad {hostile}", (Location(hostile, 1),)),)})
    text = render_terminal(verdict, color=False)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "evilU+001B[2J" in text and "U+202E" in text


def test_a_location_reads_as_path_line_column_leaving_out_what_is_unknown() -> None:
    assert [str(loc) for loc in (Location("a.py"), Location("a.py", 3), Location("a.py", 3, 7))] == [
        "a.py", "a.py:3", "a.py:3:7"]


def test_a_verdict_read_from_json_that_spells_lone_surrogates_writes_everywhere() -> None:
    # JSON can spell "\ud800", which no UTF-8 writer takes: an artifact holding one must still be published.
    data = json.loads(_busy_verdict().to_json())
    data["penalties"][0]["message"] = "evil \ud800"
    data["penalties"][0]["locations"][0]["path"] = "\udcff.py"
    data["facts"]["head"] = "\udfff"
    verdict = Verdict.from_dict(data)
    written = verdict.to_json().encode("utf-8") + render_terminal(verdict, color=False).encode("utf-8")
    assert "evil \ufffd".encode() in written and "\ufffd.py".encode() in written
    assert dict(verdict.facts)["head"] == "\ufffd"
