"""`call` cases: call one function of the candidate with JSON arguments; compare its result or exception.

Only the arguments enter the sandbox. The result comes back as plain data (`harness/wire.py`) and is compared
here (`compare.py`); an expected exception matches by type name: a builtin name (`TypeError`) only by the
builtin type, a dotted name by module and name, any other bare name by the class's name.
"""

from __future__ import annotations

import ast
import builtins
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec

from gate.cases import tripwires
from gate.cases.base import CaseFields, CaseOutcome, Program, fingerprint
from gate.cases.compare import mismatch, show
from gate.cases.harness import wire
from gate.cases.outcome import hidden_detail, no_outcome, read_outcome
from gate.cases.programs import CANDIDATE, harness
from gate.cases.schedule import Served, long_after
from gate.policy.keys import key
from gate.policy.marked_yaml import unmark
from gate.policy.model import MODULE, CaseSpec
from gate.sandbox.base import Limits, RunRequest, Sandbox
from gate.syntax import parse_python


@dataclass(frozen=True, kw_only=True)
class CallFields(CaseFields):
    """The fields of a call case."""

    WHAT = "a call case"
    SUMMARY = "call (args -> expect or error)"
    HINT = "`args` with `expect`/`error` (call)"
    RULES: ClassVar[dict[str, Any]] = {"oneOf": [{"required": ["expect"]}, {"required": ["error"]}],
             "x-message": "give exactly one of `expect` or `error`", "dependentRequired": {"tol": ["expect"]}}

    function: str | None = key(
        None, "`pkg.module:function` or a bare name; omitted: the one function the reply or task names",
        unset=True, infers=True, expected="`pkg.module:function` or a bare function name",
        pattern=r"^([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:)?[A-Za-z_][A-Za-z0-9_]*$")
    args: list[Any] = key(factory=list, description="positional arguments (JSON values)", infers=True)
    kwargs: dict[str, Any] = key(factory=dict, description="keyword arguments (JSON values)", infers=True)
    expect: Any = key(None, "the expected return value (any JSON value)", unset=True, infers=True, schema={})
    tol: float | None = key(None, "absolute tolerance for float results", minimum=0, unset=True)
    error: str | None = key(None, "the exception type the call must raise", unset=True, infers=True,
                            pattern=MODULE["pattern"], expected="an exception type name such as `ValueError`")


class Call:
    """A function's result (or exception) for given arguments."""

    name = "call"
    fields = CallFields

    def check(self, case: Mapping[str, Any]) -> tuple[str, str] | None:
        for key_name in ("args", "kwargs", "expect"):
            try:
                wire.dumps(unmark(case.get(key_name)))
            except wire.NotData as exc:  # YAML has values JSON has not: a date, a set, binary
                return key_name, f"{exc} (JSON values only)"
        return None

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome:
        target = _target(case, program)
        if isinstance(target, str):
            return CaseOutcome("error", target, fingerprint("error", target))
        result = sandbox.run(RunRequest(script="_gate_call.py", harness=harness("call"), files=_files(program),
                                        tree=program.tree,
                                        python_path=program.python_path,
                                        stdin=json.dumps(_call(target, case)).encode(), hash_seed=hash_seed,
                                        limits=limits, preload=program.preload))
        record = read_outcome(result)
        # A run killed for a limit has no outcome, whatever it wrote before the kill: when the record came
        # first is a race (the output limit strikes as the gate reads the output).
        if record is None or result.timed_out or result.killed_reason:
            return no_outcome(result, case.hidden)
        return _judge(case, record, result.wall_s)

    def module(self, case: CaseSpec, program: Program) -> str | None:
        """The module whose function `case` calls; None when it names none to call (its run says why)."""
        target = _target(case, program)
        return None if isinstance(target, str) else target[0]

    def serving(self, program: Program) -> RunRequest:
        """See ServedTogether.serving: harness/calls.py over the program."""
        return RunRequest(script="_gate_calls.py", harness=harness("calls"), files=_files(program),
                          tree=program.tree, python_path=program.python_path, preload=program.preload,
                          watches=True)

    def run_many(self, cases: Sequence[CaseSpec], program: Program, sandbox: Sandbox, limits: Limits,
                 hash_seed: int, cut_s: float, core: int | None = None) -> Served:
        """Serve `cases` (each with a module to call, all public or all hidden) in one run (harness/calls.py),
        kept on `core` if given: by position, the outcome of each case it served, those it left to a run of
        their own (see there for when; every case when the run did not end as the harness ends it), and the one
        it cut because it went on longer than `cut_s`."""
        targets = [target for case in cases if not isinstance(target := _target(case, program), str)]
        if len(targets) != len(cases):
            raise ValueError("every case served together names a module to call")
        order = sorted(range(len(cases)), key=lambda at: (targets[at][0], at))
        # With the gate's tripwires among them (gate/cases/tripwires.py): by position, the case of each call and
        # the tripwire it is, if it is one.
        entries = [(order[at], trip) for at, trip in tripwires.serving([targets[at][0] for at in order])]
        calls = [{**_call(targets[at], cases[at]), **({"tripwire": trip} if trip else {})} for at, trip in entries]
        request = {"calls": calls, "cpu": limits.cpu_s, "wall": limits.wall_s, "cut": cut_s,
                   "import_cut": long_after(limits.wall_s),
                   "output": limits.output_bytes, "record": limits.output_bytes,
                   "private": sandbox.private_tmp, "core": core}
        modules = len({call["module"] for call in calls})
        result = sandbox.run(msgspec.structs.replace(self.serving(program), stdin=json.dumps(request).encode(),
                                                     hash_seed=hash_seed,
                                                     limits=_serving(limits, len(calls), cut_s, modules)))
        served = _served(cases, entries, result.result or b"", result.wall_s)
        if result.exit_code == 0 or any(outcome.tampered for outcome in served.outcomes.values()):
            return served
        # The harness exits 0 unless it was held: killed at the run's limit, or stopped for a while by a signal
        # from the candidate's import (its module's process can signal it), which meanwhile may have written
        # on the channel what took longer than a run of its own has. Every case goes to a run of its own, not
        # to another serving that the same import would hold again.
        return Served({}, frozenset(range(len(cases))), served.cut)


def _call(target: tuple[str, str], case: CaseSpec) -> dict[str, str]:
    """What a harness is told of one call: the module, the function and the arguments, never the expected."""
    module, function = target
    return {"module": module, "function": function,
            "args": wire.dumps((tuple(case.get("args", [])), dict(case.get("kwargs", {}))))}


def _files(program: Program) -> dict[str, bytes]:
    """The candidate's module when the program is one (a tree is the run's already)."""
    return {} if program.code is None else {CANDIDATE: program.code.encode()}


def _serving(limits: Limits, calls: int, cut_s: float, modules: int) -> Limits:
    """The limits of a run that serves `calls` cases of `modules` modules: each case keeps its own (the
    harness holds it to them, or leaves it to a run of its own); the run as a whole has room for all of
    them, and two processes more than a case (the harness's, and its module's)."""
    seconds = limits.wall_s * (modules + 1) + cut_s * calls
    return msgspec.structs.replace(limits, wall_s=seconds, cpu_s=seconds, processes=limits.processes + 2,
                                   output_bytes=(limits.output_bytes + 64) * (calls + 1))


def _served(cases: Sequence[CaseSpec], entries: list[tuple[int, dict[str, Any] | None]], channel: bytes,
            wall_s: float) -> Served:
    """The outcome lines of a run that served `cases` (by position in `entries`: each call's case, and the
    tripwire it is, if it is one) in `wall_s` seconds. Any line that is not one is ignored (half a line, from a
    process killed while it wrote; the candidate's import can write lines too, so a case's seconds must be
    within the run's, as the gate timed it: a report's times are numbers from 0 up). The harness writes one
    line for a call: a second one, or a tripwire's record it never writes, is the candidate's, and then no
    line of the run is a result (each case's outcome says why)."""
    outcomes: dict[int, CaseOutcome] = {}
    alone: set[int] = set()
    cut = None
    lined: set[int] = set()
    tampered = ""
    for line in channel.splitlines():
        try:
            said = json.loads(line)
        except (ValueError, RecursionError):
            continue
        served = said.get("i") if isinstance(said, dict) else None
        if type(served) is not int or not 0 <= served < len(entries):
            continue
        if served in lined:
            tampered = tampered or "a second outcome for one call of the run"
            continue
        lined.add(served)
        at, trip = entries[served]
        if trip is not None:
            tampered = tampered or tripwires.serving_tampered(trip, said.get("record"))
        elif said.get("alone") is True:
            alone.add(at)
            cut = at if said.get("cut") is True and cut is None else cut
        elif isinstance(said.get("record"), dict) and type(seconds := said.get("seconds")) in (int, float) \
                and 0 <= seconds <= wall_s:
            outcomes[at] = _judge(cases[at], said["record"], float(seconds))
    if tampered:
        return Served({at: CaseOutcome("error", f"no result: {tampered}", fingerprint("tampered"), tampered=tampered)
                       for at in range(len(cases))})
    return Served(outcomes, frozenset(alone), cut)


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


def one_function(code: str) -> str | None:
    """The name of the one top-level function `code` defines, or None when it defines none or several."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError):
        return None
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return names[0] if len(set(names)) == 1 else None


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
    except wire.NotData as exc:  # its text may quote the record (an unknown tag): the candidate's words
        detail = hidden_detail("returned", "") if case.hidden else f"returned {exc}"
        return CaseOutcome("failed", detail, fingerprint("notdata", str(exc)), seconds)
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
