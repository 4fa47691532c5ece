"""The candidate's side of a pair: load `candidate.py`, then answer calls from the tests' side until it hangs
up.

Runs in the sandbox as the peer of `lead.py`, under its own uid and in its own directory: it never sees the
test code, the expected values or the result channel. Each request is one JSON line {"name", "args"} (args in
the wire format); each answer one JSON line: {"ok": wire text}, {"raised": type name, "message"}, {"notdata":
what} or, once, {"load": error} when the candidate's code does not even load.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

import _gate_tree as tree
import _gate_wire as wire

PEER_FD_ENV = "GATE_PEER_FD"
CANDIDATE = "candidate.py"


def main() -> None:
    channel = socket.socket(fileno=int(os.environ.pop(PEER_FD_ENV)))
    requests = channel.makefile("rb")  # answers go out with sendall: a writing file would cost each call more
    tree.enter()
    try:
        namespace = _load()
    except BaseException as exc:
        _send(channel, {"load": wire.describe(exc)})
        os._exit(1)
    _send(channel, {"ready": True})
    for line in requests:
        _send(channel, _answer(namespace, json.loads(line)))
    os._exit(0)


def _load() -> dict[str, Any]:
    with open(CANDIDATE, encoding="utf-8") as source:
        code = compile(source.read(), CANDIDATE, "exec")
    namespace: dict[str, Any] = {"__name__": "candidate", "__file__": CANDIDATE}
    exec(code, namespace)
    return namespace


def _answer(namespace: dict[str, Any], call: dict[str, Any]) -> dict[str, str]:
    function = namespace.get(call["name"])
    if not callable(function):
        return {"raised": "NameError", "message": f"the candidate defines no function {call['name']}"}
    answer: dict[str, str] = wire.call(function, call["args"])
    return answer


def _send(channel: socket.socket, message: dict[str, Any]) -> None:
    channel.sendall((json.dumps(message) + "\n").encode())

