"""The tests' side of a pair: run a dataset's test code against proxies of the candidate's functions.

Runs in the sandbox as the lead of a pair; the candidate lives in the peer (`serve.py`), under another uid.
The test code arrives on stdin and stays in this process. A proxy sends only the arguments over the socket and
takes back plain data of exact builtin types (`wire.py`), or the name of the exception raised; anything else
ends the tests as failed. Only this process holds the result channel and it writes the outcome once the tests
are over, so the candidate cannot exit early with success, print a fake result, hand back an object that
equals anything, or read or patch the tests.

Request on stdin (JSON): {"format": "check", "prompt", "test", "function"} (HumanEval's: the test code defines
`check(candidate)`) or {"format": "asserts", "setup", "tests": [...], "function"} (MBPP's: one assert at a
time); the case kind says which (its `format`). With "in_process": true there is no peer: the candidate's code
is loaded here, after the tests' code (for MBPP tests that build objects from the candidate's own classes). That
isolation is weaker — the candidate could read the tests — and the outcome says so.
Outcome (JSON): {"passed": true} or {"failed": what, "test": index or "line": n, "last": type of the last
result}, with "tripped": the outcomes of the request's "tripwires" that ran, in the order they ran (in process
only, where the candidate could write the outcome itself: each tripwire runs statement "test" once more before
statement "at", made to fail as its code starts, "failed", or to return there, its token "pass"; the gate knows
what each must read: gate/cases/tripwires.py).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import gc
import json
import os
import resource
import socket
import struct
import sys
import types
from collections.abc import Callable
from typing import Any, NoReturn

import _gate_tree as tree
import _gate_wire as wire

RESULT_FD_ENV = "GATE_RESULT_FD"
PEER_FD_ENV = "GATE_PEER_FD"
CANDIDATE = "candidate.py"
MAX_REPLY = 16 * 1024 * 1024
LENGTH = struct.Struct("!Q")  # gate.sandbox.served.LENGTH, KEEP and RETIRE
KEEP, RETIRE = b".", b"!"
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
    if sys.argv[1:] == ["--serve"]:
        serve()
    result = os.fdopen(int(os.environ.pop(RESULT_FD_ENV)), "w")
    request = json.loads(sys.stdin.read())
    if request.get("in_process"):  # (the candidate's code, then the tests, with the tree's import path)
        tree.enter()
        record = _tested(request, lambda: _load_in_process(request))
    else:
        channel = socket.socket(fileno=int(os.environ.pop(PEER_FD_ENV)))
        record = _tested(request, lambda: _connect(request, channel))
    result.write(json.dumps(record))
    result.flush()
    os._exit(0)


def serve() -> NoReturn:
    """Server mode (the gate's `Sandbox.run_served`): answer calls until the gate hangs up. A call is one frame
    (LENGTH + the JSON request) with the socket to that call's candidate attached; the answer is one frame of
    the outcome. Each call starts from nothing of the previous one: a new namespace, a new socket (closed at
    the end, with whatever the candidate sent beyond its replies), the last result forgotten, and only plain
    data ever came from a candidate; once a call's data made it grow past its peak limit it answers and retires.
    The tests' own output is discarded, as a lead's is."""
    os.close(int(os.environ.pop(RESULT_FD_ENV)))
    # Peak memory beyond which it serves no more calls: a quarter of its address-space limit. (Read here, not
    # at import: a zygote imports this module once, before any run's limits.)
    max_peak = max(0, resource.getrlimit(resource.RLIMIT_AS)[0]) // 4 or 128 * 1024 * 1024
    control = socket.socket(fileno=int(os.environ.pop(PEER_FD_ENV)))
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the server's whole life)
    # What the server holds before its first call is never garbage: the collection after each call then only
    # goes through that call's objects.
    gc.collect()
    gc.freeze()
    while True:
        call = _receive(control)
        if call is None:
            os._exit(0)
        request, channel = call
        Last.seen = ""
        try:
            record = _tested(request, functools.partial(_connect, request, channel))
        finally:
            with contextlib.suppress(OSError):  # a stale reference to it is useless from here on
                channel.shutdown(socket.SHUT_RDWR)
            channel.close()
        gc.collect()  # what the call's tracebacks and cycles held goes now, not in the next call
        # A call whose data made this process grow keeps no hold on the next one: the server retires.
        retire = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 > max_peak
        payload = (RETIRE if retire else KEEP) + json.dumps(record).encode()
        control.sendall(LENGTH.pack(len(payload)) + payload)
        if retire:
            os._exit(0)


def _receive(control: socket.socket) -> tuple[dict[str, Any], socket.socket] | None:
    """The next call: its request and the candidate's channel; None when the gate hangs up."""
    head, fds, _flags, _address = socket.recv_fds(control, LENGTH.size, 1)
    for fd in fds[1:]:
        os.close(fd)
    if not head or not fds:
        return None
    channel = socket.socket(fileno=fds[0])
    head += _read_exact(control, LENGTH.size - len(head))
    (size,) = LENGTH.unpack(head)
    return json.loads(_read_exact(control, size)), channel


def _read_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            os._exit(0)  # the gate hung up mid-frame
        data += chunk
    return data


def _tested(request: dict[str, Any], functions: Callable[[], dict[str, Any]]) -> dict[str, object]:
    """The outcome of the tests over the candidate's functions (loaded or connected by `functions`)."""
    try:
        loaded = functions()
    except LoadFailed as exc:
        return {"failed": f"the candidate does not load: {exc}", "last": ""}
    return _run_tests(request, loaded)


def _names(request: dict[str, Any]) -> list[str]:
    return [request["function"]]


def _connect(request: dict[str, Any], channel: socket.socket) -> dict[str, Any]:
    replies = channel.makefile("rb")  # requests go out with sendall: a writing file would cost each call more
    try:
        hello = _read(replies)
    except (NoData, ValueError, OSError) as exc:
        raise LoadFailed(str(exc)) from None
    if "ready" not in hello:
        raise LoadFailed(str(hello.get("load", "no reply")))
    return {name: _proxy(name, channel, replies) for name in _names(request)}


def _read(replies: Any) -> dict[str, Any]:
    line = replies.readline(MAX_REPLY)
    if not line.endswith(b"\n"):
        raise NoData("the candidate's process ended" if not line else "the reply is too long")
    try:
        reply = json.loads(line)
    except RecursionError:  # nested too deep: no exception a test may catch and pass on
        raise NoData("the reply is nested too deep") from None
    if not isinstance(reply, dict):
        raise NoData("the reply is not an object")
    return reply


def _proxy(name: str, channel: socket.socket, replies: Any) -> Callable[..., Any]:
    """A stand-in for the candidate's function: arguments out, plain data or an exception's name back."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            payload = wire.dumps((args, kwargs))
        except wire.NotData as exc:
            raise NoData(f"the test passes an argument that is {exc}") from None
        try:
            channel.sendall((json.dumps({"name": name, "args": payload}) + "\n").encode())
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
    functions = {name: _data_only(namespace[name]) for name in _names(request) if callable(namespace.get(name))}
    # The tests may also build objects from the candidate's own classes: they see all it defines.
    return {**{k: v for k, v in namespace.items() if not k.startswith("__")}, **functions}


def _data_only(function: Callable[..., Any]) -> Callable[..., Any]:
    """The function under test, in one process: its arguments may be the candidate's objects, but what it
    returns must still be plain data (a copy of it reaches the test), as across processes."""

    def call(*args: Any, **kwargs: Any) -> Any:
        value = function(*args, **kwargs)
        try:
            copy = wire.loads(wire.dumps(value))
        except wire.NotData as exc:
            raise NoData(f"returned {exc}") from None
        Last.seen = "returned " + wire.type_name(copy)
        return copy

    return call


def _run_tests(request: dict[str, Any], functions: dict[str, Any]) -> dict[str, object]:
    namespace: dict[str, Any] = {"__name__": "__gate_test__"}
    try:
        if request["format"] == "check":
            # The prompt's helpers (HumanEval/32's poly, /38's encode_cyclic) come from the trusted prompt,
            # not from whatever the completion redefined.
            exec(_compiled(request["prompt"], "prompt"), namespace)
            namespace.update(functions)
            exec(_compiled(request["test"], "test"), namespace)
            namespace["check"](functions[request["function"]])
            return {"passed": True}
        namespace.update(functions)  # first: in one process, the setup may build the candidate's objects
        exec(_compiled(request["setup"], "setup"), namespace)
    except BaseException as exc:
        return {"failed": wire.describe(exc), "line": _test_line(exc), "last": Last.seen}
    tests, trips, tripped = request["tests"], request.get("tripwires", []), []
    for index in range(len(tests) + 1):
        tripped += [_tripped(trip, tests, namespace) for trip in trips if trip["at"] == index]
        if index == len(tests):
            break
        try:
            exec(_compiled(tests[index], f"test {index}"), namespace)
        except BaseException as exc:
            return {"failed": wire.describe(exc), "test": index, "last": Last.seen, "tripped": tripped}
    return {"passed": True, "tripped": tripped}


def _tripped(trip: dict[str, Any], tests: list[str], namespace: dict[str, Any]) -> str:
    """A tripwire's outcome: test `trip["test"]` run once more, its code made to fail as it starts ("failed"),
    or to return from there (the run's token `trip["pass"]`). Only with the candidate in this process
    (`in_process`), which could write the outcome itself: the gate checks each (gate/cases/pairs.py)."""
    code = _compiled(tests[trip["test"]], f"test {trip['test']}")
    kind = wire.PASS if "pass" in trip else wire.FAIL
    try:
        wire.tripwire(kind, (code,), lambda: exec(code, namespace))
    except wire.Tripped:
        return str(trip["pass"])
    except BaseException:
        return "failed"
    return "passed"


@functools.lru_cache(maxsize=64)
def _compiled(source: str, name: str) -> types.CodeType:
    """The trusted test code, compiled once per server for every call of the same task (code objects are
    immutable; each call still runs it in a namespace of its own)."""
    return compile(source, name, "exec")


def _test_line(exc: BaseException) -> int | None:
    """The line of the test code where `exc` went through last."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "test":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line

