"""The tests' side of a pair: run a dataset's test code against proxies of the candidate's functions.

Runs in the sandbox as the lead of a pair; the candidate lives in the peer (`serve.py`), under another uid.
The test code arrives on stdin and stays in this process. A proxy sends only the arguments over the socket and
takes back plain data of exact builtin types (`wire.py`), or the name of the exception raised; anything else
ends the tests as failed. Only this process holds the result channel and it writes the outcome once the tests
are over, so the candidate cannot exit early with success, print a fake result, hand back an object that
equals anything, or read or patch the tests.

Request on stdin (JSON): {"kind": "humaneval", "prompt", "test", "entry_point"} or {"kind": "mbpp", "setup",
"tests": [...], "function"}. With "in_process": true there is no peer: the candidate's code is loaded here,
after the tests' code (for MBPP tests that build objects from the candidate's own classes). That isolation is
weaker — the candidate could read the tests — and the outcome says so.
Outcome (JSON): {"passed": true} or {"failed": what, "test": index or "line": n, "last": type of the last
result}.
"""

from __future__ import annotations

import builtins
import json
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

import _gate_wire as wire

RESULT_FD_ENV = "GATE_RESULT_FD"
PEER_FD_ENV = "GATE_PEER_FD"
CANDIDATE = "candidate.py"
MAX_REPLY = 16 * 1024 * 1024
# The exceptions a reply may name and a test then sees raised; any other name becomes a CandidateError.
# StopIteration would silently end a `map(candidate, ...)` in the test, so it is not raised as itself.
_RAISABLE = {name: cls for name, cls in vars(builtins).items()
             if isinstance(cls, type) and issubclass(cls, Exception)
             and not issubclass(cls, StopIteration | StopAsyncIteration)}


class CandidateError(Exception):
    """The candidate raised an exception of its own type (the type's name leads the message)."""


class NoData(BaseException):
    """The call got no data back. A BaseException, so that a test's `except Exception` cannot swallow it."""


class LoadFailed(Exception):
    """The candidate's code does not load."""


class Last:
    """The type of the last result the tests got, for the report."""

    seen = ""


def main() -> None:
    result = os.fdopen(int(os.environ.pop(RESULT_FD_ENV)), "w")
    request = json.loads(sys.stdin.read())
    try:
        functions = _load_in_process(request) if request.get("in_process") else _connect(request)
    except LoadFailed as exc:
        record: dict[str, object] = {"failed": f"the candidate does not load: {exc}", "last": ""}
    else:
        record = _run_tests(request, functions)
    result.write(json.dumps(record))
    result.flush()
    os._exit(0)


def _names(request: dict[str, Any]) -> list[str]:
    return [request["entry_point"] if request["kind"] == "humaneval" else request["function"]]


def _connect(request: dict[str, Any]) -> dict[str, Any]:
    channel = socket.socket(fileno=int(os.environ.pop(PEER_FD_ENV)))
    requests = channel.makefile("w", encoding="utf-8")
    replies = channel.makefile("r", encoding="utf-8")
    try:
        hello = _read(replies)
    except (NoData, ValueError) as exc:
        raise LoadFailed(str(exc)) from None
    if "ready" not in hello:
        raise LoadFailed(str(hello.get("load", "no reply")))
    return {name: _proxy(name, requests, replies) for name in _names(request)}


def _read(replies: Any) -> dict[str, Any]:
    line = replies.readline(MAX_REPLY)
    if not line.endswith("\n"):
        raise NoData("the candidate's process ended" if not line else "the reply is too long")
    try:
        reply = json.loads(line)
    except RecursionError:  # nested too deep: no exception a test may catch and pass on
        raise NoData("the reply is nested too deep") from None
    if not isinstance(reply, dict):
        raise NoData("the reply is not an object")
    return reply


def _proxy(name: str, requests: Any, replies: Any) -> Callable[..., Any]:
    """A stand-in for the candidate's function: arguments out, plain data or an exception's name back."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            payload = wire.dumps((args, kwargs))
        except wire.NotData as exc:
            raise NoData(f"the test passes an argument that is {exc}") from None
        try:
            requests.write(json.dumps({"name": name, "args": payload}) + "\n")
            requests.flush()
            reply = _read(replies)
            value = wire.loads(reply["ok"]) if "ok" in reply else None
        except (OSError, ValueError, wire.NotData) as exc:  # not an exception a test may catch and pass on
            raise NoData(f"no valid reply from the candidate ({wire.describe(exc)})") from None
        if "ok" in reply:
            Last.seen = "returned " + wire.type_name(value)
            return value
        if "raised" in reply:
            kind = str(reply["raised"])
            Last.seen = "raised " + kind
            if kind in _RAISABLE:
                raise _RAISABLE[kind](str(reply.get("message", ""))[:300])
            raise CandidateError(kind)
        Last.seen = "returned " + str(reply.get("notdata", "no data"))
        raise NoData(Last.seen)

    call.__name__ = name
    return call


def _load_in_process(request: dict[str, Any]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "candidate", "__file__": CANDIDATE}
    try:
        with open(CANDIDATE, encoding="utf-8") as source:
            exec(compile(source.read(), CANDIDATE, "exec"), namespace)
    except BaseException as exc:
        raise LoadFailed(wire.describe(exc)) from None
    functions = {name: namespace[name] for name in _names(request) if name in namespace}
    # The tests may also build objects from the candidate's own classes: they see all it defines.
    return {**{k: v for k, v in namespace.items() if not k.startswith("__")}, **functions}


def _run_tests(request: dict[str, Any], functions: dict[str, Any]) -> dict[str, object]:
    namespace: dict[str, Any] = {"__name__": "__gate_test__"}
    try:
        if request["kind"] == "humaneval":
            # The prompt's helpers (HumanEval/32's poly, /38's encode_cyclic) come from the trusted prompt,
            # not from whatever the completion redefined.
            exec(compile(request["prompt"], "prompt", "exec"), namespace)
            namespace.update(functions)
            exec(compile(request["test"], "test", "exec"), namespace)
            namespace["check"](functions[request["entry_point"]])
            return {"passed": True}
        namespace.update(functions)  # first: in one process, the setup may build the candidate's objects
        exec(compile(request["setup"], "setup", "exec"), namespace)
    except BaseException as exc:
        return {"failed": wire.describe(exc), "line": _test_line(exc), "last": Last.seen}
    for index, statement in enumerate(request["tests"]):
        try:
            exec(compile(statement, f"test {index}", "exec"), namespace)
        except BaseException as exc:
            return {"failed": wire.describe(exc), "test": index, "last": Last.seen}
    return {"passed": True}


def _test_line(exc: BaseException) -> int | None:
    """The line of the test code where `exc` went through last."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "test":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line

