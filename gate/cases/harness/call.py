"""Call one function of the candidate with the case's arguments and send back what happened.

Request on stdin (JSON): {"module", "function", "args": wire text of (args, kwargs)}; the expected value is
not in it. Outcome on the result channel (JSON): {"ok": wire text}, {"raised": type name, "message"},
{"notdata": what} or {"load": error}. Exiting before the outcome is written leaves no outcome, which fails the
case; the candidate can write on the channel itself, but then it only says what it could have returned.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

import _gate_tree as tree
import _gate_wire as wire

RESULT_FD_ENV = "GATE_RESULT_FD"


def main() -> None:
    result = os.fdopen(int(os.environ.pop(RESULT_FD_ENV)), "w")
    request = json.loads(sys.stdin.read())
    tree.enter()
    result.write(json.dumps(_call(request)))
    result.flush()
    os._exit(0)


def _call(request: dict[str, str]) -> dict[str, str]:
    try:
        function = getattr(importlib.import_module(request["module"]), request["function"])
    except BaseException as exc:
        return {"load": wire.describe(exc)}
    answer: dict[str, str] = wire.call(function, request["args"])
    return answer

