"""`call` cases: call one function of the candidate with JSON arguments; compare its result or exception.

Only the arguments enter the sandbox. The result comes back as plain data (`harness/wire.py`) and is compared
here (`compare.py`); an expected exception matches by type name: a builtin name (`TypeError`) only by the
builtin type, a dotted name by module and name, any other bare name by the class's name.
"""

from __future__ import annotations

import builtins
import json
from typing import Any

from gate.cases.base import CaseOutcome, Program
from gate.cases.compare import mismatch, show
from gate.cases.harness import wire
from gate.cases.running import (
    CANDIDATE,
    check_fields,
    fingerprint,
    harness,
    hidden_detail,
    no_outcome,
    one_function,
    read_outcome,
    require_type,
)
from gate.errors import BadInput
from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, RunRequest, Sandbox

FIELDS = {"function", "args", "kwargs", "expect", "tol", "error"}


class Call:
    """A function's result (or exception) for given arguments."""

    name = "call"

    def validate(self, case: CaseSpec, where: str) -> None:
        check_fields(case, where, FIELDS)
        fields = dict(case.fields)
        require_type(case, where, "function", (str,), 'a function name ("pkg.module:function" or "name")')
        require_type(case, where, "args", (list,), "a list of arguments")
        require_type(case, where, "kwargs", (dict,), "a mapping of keyword arguments")
        require_type(case, where, "tol", (int, float), "a number")
        require_type(case, where, "error", (str,), "an exception's type name")
        if ("expect" in fields) == ("error" in fields):
            raise BadInput("a call case needs exactly one of expect and error", file=where, key="expect")
        if "tol" in fields and "expect" not in fields:
            raise BadInput("tol only applies to expect", file=where, key="tol")
        for key in ("args", "kwargs", "expect"):
            try:
                wire.dumps(fields.get(key))
            except wire.NotData as exc:
                raise BadInput(f"{exc} (JSON values only)", file=where, key=key) from None

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome:
        target = _target(case, program)
        if isinstance(target, str):
            return CaseOutcome("error", target, fingerprint("error", target))
        module, function = target
        files = harness("call")
        if program.code is not None:
            files[CANDIDATE] = program.code.encode()
        payload = {"module": module, "function": function,
                   "args": wire.dumps((tuple(case.get("args", [])), dict(case.get("kwargs", {}))))}
        result = sandbox.run(RunRequest(script="_gate_call.py", files=files, tree=program.tree,
                                        python_path=program.python_path,
                                        stdin=json.dumps(payload).encode(), hash_seed=hash_seed,
                                        limits=limits, preload=program.preload))
        record = read_outcome(result)
        if record is None or result.timed_out:
            return no_outcome(result, case.hidden)
        return _judge(case, record, result.wall_s)


def _target(case: CaseSpec, program: Program) -> tuple[str, str] | str:
    """(module, function) to call, or why there is none."""
    named = case.get("function") or program.function
    if named and ":" in named:
        module, _, function = named.partition(":")
        return module, function
    if program.code is None:
        return "a call case on a tree names its function as module:function"
    if named:
        return CANDIDATE.removesuffix(".py"), named
    found = one_function(program.code)
    if found is None:
        return "the case names no function and the code does not define exactly one"
    return CANDIDATE.removesuffix(".py"), found


def _judge(case: CaseSpec, record: dict[str, Any], seconds: float) -> CaseOutcome:
    # Every text in the record is the candidate's to choose (it can write the record itself): for a hidden
    # case the report says only what the gate's own words and builtin names can say, so that the candidate
    # cannot print the case's arguments, or the value it computed from them, into a report.
    if "load" in record:
        detail = "the code does not load" + ("" if case.hidden else f": {record['load']}")
        return CaseOutcome("failed", detail, fingerprint("load", str(record["load"]).split(":")[0]), seconds)
    if "raised" in record:
        raised = str(record["raised"])
        seen = fingerprint("raised", raised)
        if case.get("error") is not None and error_matches(case.get("error"), raised):
            return CaseOutcome("passed", "", seen, seconds)
        got = f"raised {raised}: {str(record.get('message', ''))[:80]}" if not case.hidden \
            else hidden_detail("raised", raised)
        return CaseOutcome("failed", _expected(case) + got, seen, seconds)
    if "ok" not in record:
        got = str(record.get("notdata", "no data"))
        detail = _expected(case) + (hidden_detail("returned", "") if case.hidden else f"returned {got}")
        return CaseOutcome("failed", detail, fingerprint("notdata", got), seconds)
    try:
        value = wire.loads(str(record["ok"]))
    except wire.NotData as exc:
        return CaseOutcome("failed", f"returned {exc}", fingerprint("notdata", str(exc)), seconds)
    seen = fingerprint("ok", record["ok"])
    if case.get("error") is not None:
        return CaseOutcome("failed", _expected(case) + f"returned {_got(case, value)}", seen, seconds)
    tol = case.get("tol")
    problem = mismatch(case.get("expect"), value, None if tol is None else float(tol))
    if problem is None:
        return CaseOutcome("passed", "", seen, seconds)
    detail = f"returned {wire.type_name(value)}" if case.hidden else problem
    return CaseOutcome("failed", detail, seen, seconds)


def error_matches(expected: str, raised: str) -> bool:
    """Whether an exception reported as `raised` (its type name, qualified unless builtin) is `expected`."""
    if "." in expected or expected in _BUILTIN_EXCEPTIONS:
        return raised == expected
    return raised.rpartition(".")[2] == expected


def _expected(case: CaseSpec) -> str:
    if case.hidden:
        return ""
    if case.get("error") is not None:
        return f"expected {case.get('error')}, "
    return f"expected {show(case.get('expect'))}, "


def _got(case: CaseSpec, value: object) -> str:
    return wire.type_name(value) if case.hidden else show(value)


_BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                       if isinstance(value, type) and issubclass(value, BaseException)}
