"""Blind tests are said (docs/repository.md, "The suite"): the tests of a suite that could not catch a regression
(they fail on the base too, or are skipped there) are counted in the verdict, its JSON and the comment, with the
main causes read from the base's reports, so that a maintainer sees a suite that gates little."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.report.comment import render_comment
from gate.suite.blind import blind, cause
from gate.suite.run import TestOutcome as Outcome
from gate.verdict import Blind, BlindCause, Verdict, validate
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import CALC, calc_project, charged_messages, score_repo, suite_statuses

BLIND = '''\
import socket

import pytest

from calc import add


def test_numpy():
    import numpy_the_gate_lacks

    assert numpy_the_gate_lacks


def test_numpy_too():
    import numpy_the_gate_lacks

    assert numpy_the_gate_lacks


def test_writes_beside_itself():
    with open("result.txt", "w") as out:
        out.write(str(add(1, 2)))


def test_network():
    socket.create_connection(("example.com", 80), timeout=1)


def test_yaml():
    pytest.importorskip("yaml_the_gate_lacks")
'''


@pytest.mark.usefixtures("offline_pip")
def test_a_suites_blind_tests_are_counted_with_their_causes_in_the_verdict_and_the_comment(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_blind.py": BLIND, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: a comment", {"calc.py": CALC + "# a comment\n"})

    verdict = score_repo(repo)

    assert verdict.accepted
    [found] = verdict.blind
    assert (found.tests, found.blind) == (9, 5)
    causes = {(cause.kind, cause.cause): cause.tests for cause in found.causes}
    assert causes == {
        ("fail on the base too", "ModuleNotFoundError: No module named 'numpy_the_gate_lacks'"): 2,
        ("fail on the base too", "the tree is read-only (a test writes beside itself)"): 1,
        ("fail on the base too", "no network beyond the run's own loopback"): 1,
        ("skipped on both sides", "could not import 'yaml_the_gate_lacks': No module named 'yaml_the_gate_lacks'"): 1,
    }
    sentence = found.sentence()
    assert sentence.startswith("5 of 9 tests could not catch a regression: 4 fail on the base too (2: "
                               "ModuleNotFoundError: No module named 'numpy_the_gate_lacks'; 1: "), sentence
    assert "1 skipped on both sides (could not import 'yaml_the_gate_lacks'" in sentence
    # The versioned JSON carries it, and reads back the same.
    data = verdict.to_dict()
    validate(data)
    assert data["blind"][0]["blind"] == 5 and Verdict.from_dict(data).blind == verdict.blind
    assert "**Blind tests:** 5 of 9 tests could not catch a regression" in render_comment(verdict)


@pytest.mark.usefixtures("offline_pip")
def test_a_suite_with_no_blind_test_says_nothing_of_it(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"NOTES": f"{tmp_path}\n"})
    repo.commit("bot: a comment", {"calc.py": CALC + "# a comment\n"})

    verdict = score_repo(repo)

    assert verdict.blind == () and "Blind tests" not in render_comment(verdict)


def _out(status: str, detail: str = "") -> Outcome:
    return Outcome("t.py::t", status, detail)


def test_a_test_the_head_passes_or_the_base_passes_is_not_blind() -> None:
    head = {"t.py::a": _out("passed"), "t.py::b": _out("failed"), "t.py::c": _out("failed"),
            "t.py::d": _out("skipped"), "t.py::e": _out("failed")}
    base = {"t.py::b": "passed", "t.py::c": "failed", "t.py::d": "skipped", "t.py::e": "skipped"}
    details = {"t.py::c": "AssertionError: nope", "t.py::d": "('/x/t.py', 3, 'Skipped: later')",
               "t.py::e": "('/x/t.py', 3, 'Skipped: later')"}

    found = blind(base, details, head, lambda module: False)

    assert found == Blind(5, 3, (BlindCause(1, "fail on the base too", "AssertionError: nope", "t.py::c"),
                                 BlindCause(1, "skipped on both sides", "later", "t.py::d"),
                                 BlindCause(1, "skipped on the base", "later", "t.py::e")))


@pytest.mark.parametrize(("status", "detail", "said"), [
    ("failed", "ModuleNotFoundError: No module named 'pkg._speedups'", "the compiled extension pkg._speedups "
                                                                            "is not built"),
    ("failed", "OSError: [Errno 30] Read-only file system: 'out.txt'", "the tree is read-only"),
    ("error", "ConnectionRefusedError: [Errno 111] Connection refused", "no network"),
    ("failed", "zoneinfo._common.ZoneInfoNotFoundError: 'No time zone found with key America/Chicago'",
     "no time-zone database"),
    ("failed", "FileNotFoundError: [Errno 2] No such file or directory: '/bin/sh'", "a program the sandbox lacks (sh)"),
    # pycparser's tests start the C preprocessor; a test that opens a data file it lacks is another cause.
    ("failed", "/usr/lib/python3.11/subprocess.py:1955: in _execute_child\n    raise child_exception_type(errno_num, "
               "err_msg, err_filename)\nE   FileNotFoundError: [Errno 2] No such file or directory: 'cpp'",
     "a program the sandbox lacks (cpp)"),
    ("failed", "E   FileNotFoundError: [Errno 2] No such file or directory: 'data.json'",
     "FileNotFoundError: [Errno 2] No such file or directory: 'data.json'"),
    # charset-normalizer's test of a 200 MB string, under the runs' address space.
    ("failed", "    payload = b'x' * 200_000_000\nE   MemoryError", "more memory than the runs' address space allows "
                                                                  "(limits.memory_mb)"),
    ("timeout", "ran out of time (tests.test_timeout: 60 s)", "it runs out of time"),
    ("failed", "assert 1 == 2", "assert 1 == 2"),
])
def test_the_main_causes_are_named_from_the_bases_report(status: str, detail: str, said: str) -> None:
    found = cause(status, detail, lambda module: module == "pkg._speedups")

    assert found.startswith(said), found


# A test that serves the code over HTTP on 127.0.0.1 and asks it there, by the name localhost (as a client
# library's suite does with pytest-httpbin): it runs as in CI, so it gates the change, and is no blind test.
OVER_HTTP = '''\
import http.server
import threading
import urllib.request

from calc import add


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = str(add(2, 3)).encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_add_over_http():
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://localhost:{server.server_port}/", timeout=10) as reply:
            assert reply.read() == b"5"
    finally:
        server.shutdown()
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="a loopback of the run's own needs root (network namespaces, a "
                                               "cgroup)")
@pytest.mark.usefixtures("offline_pip")
def test_a_test_that_serves_on_its_loopback_gates_the_change(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_http.py": OVER_HTTP})
    repo.commit("bot: add is off by one", {"calc.py": CALC.replace("return a + b", "return a + b + 1")})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_http.py::test_add_over_http"] == "failed"
    assert any("test_add_over_http" in message for message in charged_messages(verdict)), charged_messages(verdict)
    assert not verdict.accepted
