"""Hostile candidates against every case kind: none of them scores a pass, and none learns the expected value.

Each attack is a module that defines `f()`; each kind gets a case whose right answer is a fresh random string
that only the gate (and, for humaneval and mbpp, the tests' process) holds.
"""

from __future__ import annotations

import secrets
import textwrap

import pytest

from gate.policy.model import CaseSpec
from gate.sandbox.base import Sandbox
from tests.cases_support import HUNT, SHORT, case, run

KINDS = ("call", "stdio", "humaneval", "mbpp")


ATTACKS = {
    "exit 0 on import": "import os\nos._exit(0)\n\ndef f():\n    return None\n",
    "sys.exit(0) in the call": "import sys\n\ndef f():\n    sys.exit(0)\n",
    "os._exit(0) in the call": "import os\n\ndef f():\n    os._exit(0)\n",
    "raise SystemExit(0) at import": "raise SystemExit(0)\n\ndef f():\n    return 1\n",
    "an object equal to anything": textwrap.dedent("""
        class Anything:
            def __eq__(self, other):
                return True
            def __ne__(self, other):
                return False
            __hash__ = object.__hash__
            def __str__(self):
                return "Anything"

        def f():
            return Anything()
    """),
    "a str subclass equal to anything": textwrap.dedent("""
        class Sneaky(str):
            def __eq__(self, other):
                return True
            __hash__ = str.__hash__

        def f():
            return Sneaky("wrong")
    """),
    "fake results on stdout, stderr and the result channel": textwrap.dedent("""
        import os, sys

        def f():
            for line in ("PASS", "1 passed", '{"passed": true}', '{"ok": "true"}', "OK"):
                print(line)
                print(line, file=sys.stderr)
            fd = os.environ.get("GATE_RESULT_FD")
            if fd:
                os.write(int(fd), b'{"passed": true}')
            sys.stdout.flush()
            os._exit(0)
    """),
    "reading the expected value": HUNT + "\ndef f():\n    return _hunt()\n",
    "patching builtins, exits, atexit and json": textwrap.dedent("""
        import atexit, builtins, json, os, sys

        builtins.AssertionError = type("Nothing", (Exception,), {})
        builtins.print = lambda *a, **k: None
        sys.exit = lambda *a: None
        os._exit = lambda *a: None
        json.dumps = lambda *a, **k: '{"passed": true}'
        atexit.register(lambda: os.write(1, b"PASS\\n"))
        for name, module in list(sys.modules.items()):
            if "gate" in name or name == "__main__":
                for attr in ("_run_tests", "_call", "_judge", "main"):
                    if hasattr(module, attr):
                        setattr(module, attr, lambda *a, **k: {"passed": True})

        def f():
            return "wrong"
    """),
    "killing every process it can": "import os, signal\n\ndef f():\n    os.kill(-1, signal.SIGKILL)\n",
}


def _case(kind: str, expected: str, hidden: bool = False) -> CaseSpec:
    if kind == "call":
        return case("call", hidden=hidden, function="f", expect=expected)
    if kind == "stdio":
        return case("stdio", hidden=hidden, stdout=expected)
    if kind == "humaneval":
        return case("humaneval", hidden=hidden, prompt='def f():\n    """The answer."""\n', entry_point="f",
                    test=f"def check(candidate):\n    assert candidate() == {expected!r}\n")
    return case("mbpp", hidden=hidden, tests=[f"assert f() == {expected!r}"])


def _code(kind: str, attack: str) -> str:
    return attack + ("\nprint(f())\n" if kind == "stdio" else "")


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("kind", KINDS)
def test_hostile_candidate_fails_and_learns_nothing(sandbox: Sandbox, kind: str, attack: str) -> None:
    expected = "gate-secret-" + secrets.token_hex(16)
    for hidden in (False, True):
        outcome = run(sandbox, _case(kind, expected, hidden), _code(kind, ATTACKS[attack]))
        assert outcome.status == "failed", outcome
        if hidden:
            assert expected not in outcome.detail
            assert expected not in outcome.fingerprint


@pytest.mark.parametrize("kind", KINDS)
def test_honest_answer_to_the_same_case_passes(sandbox: Sandbox, kind: str) -> None:
    expected = "gate-secret-" + secrets.token_hex(16)
    code = _code(kind, f"def f():\n    return {expected!r}\n")
    assert run(sandbox, _case(kind, expected, hidden=True), code).status == "passed"


@pytest.mark.parametrize("kind", KINDS)
def test_infinite_loop_is_a_timeout(sandbox: Sandbox, kind: str) -> None:
    code = _code(kind, "def f():\n    while True:\n        pass\n")
    outcome = run(sandbox, _case(kind, "x"), code, limits=SHORT)
    assert outcome.status == "timeout", outcome


@pytest.mark.parametrize("kind", ("call", "humaneval", "mbpp"))
def test_an_int_subclass_is_not_an_int(sandbox: Sandbox, kind: str) -> None:
    code = "class Int(int):\n    pass\n\ndef f():\n    return Int(5)\n"
    spec = {"call": lambda: case("call", function="f", expect=5),
            "humaneval": lambda: case("humaneval", prompt="def f():\n    pass\n", entry_point="f",
                                      test="def check(candidate):\n    assert candidate() == 5\n"),
            "mbpp": lambda: case("mbpp", tests=["assert f() == 5"])}[kind]()
    outcome = run(sandbox, spec, code)
    assert outcome.status == "failed"
    assert "not data: candidate.Int" in outcome.detail


def test_an_exception_the_tests_catch_is_still_no_pass_without_data(sandbox: Sandbox) -> None:
    spec = case("humaneval", prompt="def f():\n    pass\n", entry_point="f",
                test="def check(candidate):\n    try:\n        candidate()\n    except Exception:\n"
                     "        pass\n    else:\n        raise AssertionError('f must raise')\n")
    gone = run(sandbox, spec, "class Anything:\n    pass\n\ndef f():\n    return Anything()\n")
    assert gone.status == "failed"
    assert run(sandbox, spec, "def f():\n    raise ValueError('no')\n").status == "passed"


@pytest.mark.parametrize("kind", ("humaneval", "mbpp"))
def test_stop_iteration_cannot_cut_a_tests_loop_short(sandbox: Sandbox, kind: str) -> None:
    test = "assert all(map(lambda n: f(n) == n * 2, range(5)))"
    spec = (case("mbpp", tests=[test]) if kind == "mbpp" else
            case("humaneval", prompt="def f(n):\n    pass\n", entry_point="f",
                 test="def check(candidate):\n    " + test.replace("f(n)", "candidate(n)") + "\n"))
    outcome = run(sandbox, spec, "def f(n):\n    raise StopIteration\n")
    assert outcome.status == "failed"
    assert "CandidateError: StopIteration" in outcome.detail
    assert run(sandbox, spec, "def f(n):\n    return n * 2\n").status == "passed"


def test_a_garbled_reply_on_the_socket_is_no_data(sandbox: Sandbox) -> None:
    code = textwrap.dedent("""
        import os, socket

        def f():
            for fd in os.listdir("/proc/self/fd"):
                try:
                    channel = socket.socket(fileno=int(fd))
                    channel.sendall(b'[1, 2]\\n{"ok": "{\\\\"t\\\\": 1}"}\\n')
                    channel.detach()
                except OSError:
                    pass
            raise ValueError("expected")
    """)
    spec = case("humaneval", prompt="def f():\n    pass\n", entry_point="f",
                test="def check(candidate):\n    try:\n        candidate()\n    except ValueError:\n"
                     "        return\n    raise AssertionError\n")
    outcome = run(sandbox, spec, code)
    assert outcome.status == "failed"
    assert "NoData" in outcome.detail


def test_the_sandbox_still_works_after_an_attack(sandbox: Sandbox) -> None:
    spec = _case("humaneval", "ok")
    assert run(sandbox, spec, _code("humaneval", ATTACKS["killing every process it can"])).status == "failed"
    assert run(sandbox, spec, "def f():\n    return 'ok'\n").status == "passed"
