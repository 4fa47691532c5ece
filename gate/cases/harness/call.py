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
from typing import Any

import _gate_tree as tree
import _gate_wire as wire

RESULT_FD_ENV = "GATE_RESULT_FD"
# How many frames below its `main` calls.py, which serves many cases in a run, imports a module
# (`_module_process`, `_module_fork`, `_serve_module`) and calls a function (then `_serve_case`, `_case_process`):
# a run of one case does both as deep, so that code that recurses to the limit has the same room either way.
_IMPORT_DEPTH, _CALL_DEPTH = 3, 5


def main() -> None:
    result = os.fdopen(int(os.environ.pop(RESULT_FD_ENV)), "w")
    request = json.loads(sys.stdin.read())
    tree.enter()
    result.write(json.dumps(_call(request)))
    result.flush()
    os._exit(0)


def _call(request: dict[str, str]) -> dict[str, str]:
    try:
        module = _below(_IMPORT_DEPTH - 1, importlib.import_module, request["module"])
        function = getattr(module, request["function"])
    except BaseException as exc:
        return {"load": wire.describe(exc)}
    answer: dict[str, str] = _below(_CALL_DEPTH - 1, wire.call, function, request["args"])
    return answer


def _below(frames: int, function: Any, *args: Any) -> Any:
    """`function(*args)`, called from `frames` frames below the caller's."""
    return _below(frames - 1, function, *args) if frames > 1 else function(*args)

