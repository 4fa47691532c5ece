"""Served tests (Sandbox.run_served): the tests' process is reused across calls, each call's candidate is a
fresh process. Attacked with candidates that try to poison a reused server, leave state behind for the next
call, or read what an earlier call's tests held."""

from __future__ import annotations

import json
import re
import secrets
import textwrap
from collections.abc import Iterator

import msgspec
import pytest

from gate.policy.model import CaseSpec
from gate.sandbox import open_sandbox, served
from gate.sandbox.base import PEER_FD_ENV, Limits, RunRequest, Sandbox
from gate.sandbox.runner import LayeredSandbox
from tests.cases_support import HUNT, LIMITS, SHORT, case, run

# A minimal server: for each call, reads one line from the peer and answers with its own pid and that line.
SERVER = textwrap.dedent(f'''
    import json, os, socket, struct
    LENGTH = struct.Struct("!Q")
    control = socket.socket(fileno=int(os.environ[{PEER_FD_ENV!r}]))
    while True:
        head, fds, _, _ = socket.recv_fds(control, LENGTH.size, 1)
        if not head:
            os._exit(0)
        message = control.recv(LENGTH.unpack(head)[0])
        if message == b"die":
            os._exit(3)
        with socket.socket(fileno=fds[0]) as peer:
            line = peer.makefile().readline().strip()
        answer = b"." + json.dumps({{"pid": os.getpid(), "peer": line}}).encode()
        control.sendall(LENGTH.pack(len(answer)) + answer)
''')
PEER = RunRequest(script="peer.py", files={"peer.py": (
    f"import os, socket\nchannel = socket.socket(fileno=int(os.environ[{PEER_FD_ENV!r}]))\n"
    "channel.sendall(f'peer {os.getpid()}\\n'.encode())\n").encode()})
SERVE = RunRequest(script="server.py", files={"server.py": SERVER.encode()})


@pytest.fixture
def fresh() -> Iterator[Sandbox]:
    """A sandbox of the test's own, so that its servers see only this test's calls."""
    opened = open_sandbox(LIMITS)
    yield opened
    opened.close()


def _answer(sandbox: Sandbox, message: bytes = b"go") -> dict[str, object] | None:
    lead, _ = sandbox.run_served(SERVE, message, PEER)
    return json.loads(lead.result) if lead.result else None


def test_one_server_answers_many_calls_each_with_its_own_peer(fresh: Sandbox) -> None:
    first, second = _answer(fresh), _answer(fresh)
    assert first is not None and second is not None
    assert first["pid"] == second["pid"]
    assert first["peer"] != second["peer"]  # a new candidate process each time


def test_a_server_that_dies_gives_no_result_and_is_replaced(fresh: Sandbox) -> None:
    before = _answer(fresh)
    assert _answer(fresh, b"die") is None
    after = _answer(fresh)
    assert before is not None and after is not None and after["pid"] != before["pid"]


def _five(hidden: bool = False) -> CaseSpec:
    return case("humaneval", hidden=hidden, prompt="def f():\n    pass\n", entry_point="f",
                test="def check(candidate):\n    assert candidate() == 5\n")


def test_replies_sent_ahead_do_not_reach_the_next_call(fresh: Sandbox) -> None:
    # It answers its own calls with forged lines queued in advance, hoping that what is left over is read as
    # the next candidate's answers.
    flood = ("import json, os, socket\n"
             f"_c = socket.socket(fileno=int(os.environ[{PEER_FD_ENV!r}]))\n"
             "_c.sendall(b'{\"ready\": true}\\n' + b'{\"ok\": \"5\"}\\n' * 10000)\n"
             "def f():\n    return 5\n")
    run(fresh, _five(), flood)
    assert run(fresh, _five(), "def f():\n    return 4\n").status == "failed"
    assert run(fresh, _five(), "def f():\n    return 5\n").status == "passed"


def test_what_a_call_returned_is_not_seen_by_the_next(fresh: Sandbox) -> None:
    spec = case("humaneval", prompt="def f():\n    pass\n", entry_point="f",
                test="def check(candidate):\n    assert candidate() == 'x' * 10\n")
    huge = "def f():\n    return [list(range(1000))] * 1000\n"
    assert run(fresh, spec, huge).status == "failed"
    assert "returned list" in run(fresh, spec, huge).detail
    wrong = run(fresh, spec, "def f():\n    return None\n")
    assert wrong.status == "failed" and "returned NoneType" in wrong.detail  # not the last call's list
    assert run(fresh, spec, "def f():\n    return 'x' * 10\n").status == "passed"


def test_a_candidate_cannot_find_an_earlier_calls_expected_value(fresh: Sandbox) -> None:
    secret = f"gate-secret-{secrets.token_hex(16)}"
    earlier = case("humaneval", prompt="def f():\n    pass\n", entry_point="f",
                   test=f"def check(candidate):\n    assert candidate() == {secret!r}\n")
    assert run(fresh, earlier, f"def f():\n    return {secret!r}\n").status == "passed"
    later = case("humaneval", prompt="def f():\n    pass\n", entry_point="f",
                 test="def check(candidate):\n    assert candidate() == 'nothing found'\n")
    hunted = run(fresh, later, HUNT + "\ndef f():\n    return _hunt()\n")
    assert hunted.status == "passed", hunted.detail


def test_a_call_that_times_out_does_not_spoil_the_next(fresh: Sandbox) -> None:
    spin = "def f():\n    while True:\n        pass\n"
    spun = run(fresh, _five(), spin, limits=SHORT)
    assert spun.status == "timeout", spun
    assert run(fresh, _five(), "def f():\n    return 5\n", limits=SHORT).status == "passed"


def test_a_candidate_that_leaves_a_process_behind_does_not_reach_the_next_call(fresh: Sandbox) -> None:
    # A child of the candidate, detached, that would answer the next call in its place.
    lingering = textwrap.dedent("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(3)
            os._exit(0)
        def f():
            return 5
    """)
    assert run(fresh, _five(), lingering).status == "passed"
    assert run(fresh, _five(), "def f():\n    return 4\n").status == "failed"


def _server_pid(sandbox: Sandbox, code: str, limits: Limits = LIMITS) -> str:
    """The pid of the tests' process that ran a call (the test fails on purpose, naming it)."""
    spec = case("humaneval", prompt="def f():\n    pass\n", entry_point="f",
                test="import os\n\ndef check(candidate):\n    candidate()\n    assert False, os.getpid()\n")
    outcome = run(sandbox, spec, code, limits=limits)
    found = re.match(r"AssertionError: (\d+) ", outcome.detail)
    assert outcome.status == "failed" and found, outcome.detail
    return found.group(1)


def test_the_tests_process_is_reused_but_never_holds_more_descriptors(fresh: Sandbox) -> None:
    # Few descriptors allowed: a server that kept one per call would run out long before the last call.
    few = msgspec.structs.replace(LIMITS, open_files=16)
    pids = {_server_pid(fresh, "def f():\n    return 1\n", few) for _ in range(24)}
    assert len(pids) == 1


def test_a_call_whose_data_made_the_server_grow_retires_it(fresh: Sandbox) -> None:
    # Generous time: the point is memory, and a loaded machine must not turn the big reply into a timeout.
    small = msgspec.structs.replace(LIMITS, memory_bytes=128 * 1024 * 1024, wall_s=30.0, cpu_s=30.0)
    before = _server_pid(fresh, "def f():\n    return 1\n", small)
    assert _server_pid(fresh, "def f():\n    return 1\n", small) == before
    big = "def f():\n    return 'x' * 12_000_000\n"  # a 12 MB reply, held several times while decoded
    assert _server_pid(fresh, big, small) == before
    assert _server_pid(fresh, "def f():\n    return 1\n", small) != before


def test_idle_servers_are_few_so_that_runs_never_starve_for_a_uid(fresh: Sandbox) -> None:
    assert isinstance(fresh, LayeredSandbox)
    for index in range(served.MAX_IDLE + 4):  # as many different servers, each left idle after its call
        distinct = msgspec.structs.replace(SERVE, env={"GATE_TEST_SERVER": str(index)})
        lead, _ = fresh.run_served(distinct, b"go", PEER)
        assert lead.result
    assert len([entry for entry in fresh.leftovers() if entry.startswith("directory")]) == served.MAX_IDLE
