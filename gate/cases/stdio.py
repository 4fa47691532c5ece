"""`stdio` cases: run a program with arguments and stdin; compare its stdout and exit code.

The program is a script of the tree (`program`), a module of the tree (`module`, run as `-m`), or, with
neither, the reply's code. Stdout matches when it equals `stdout` once trailing whitespace is stripped from
every line and from the end, or when `stdout_regex` is found in it (`re.search`, multi-line); `exit_code`
defaults to 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from gate.cases.base import CaseFields, CaseOutcome, Program, fingerprint
from gate.cases.programs import CANDIDATE, harness
from gate.policy.keys import key
from gate.policy.model import MODULE, CaseSpec
from gate.sandbox.base import Limits, RunRequest, RunResult, Sandbox


@dataclass(frozen=True, kw_only=True)
class StdioFields(CaseFields):
    """The fields of a stdio case."""

    WHAT = "a stdio case"
    SUMMARY = "stdio (stdin/stdout)"
    HINT = "`stdin`/`stdout` (stdio)"
    RULES: ClassVar[dict[str, Any]] = {"allOf": [
        {"not": {"required": ["stdout", "stdout_regex"]}, "x-message": "give `stdout` or `stdout_regex`, not both"},
        {"not": {"required": ["program", "module"]}, "x-message": "give `program` or `module`, not both"},
    ]}

    program: str | None = key(None, "a script path in the tree; omitted: the reply's code", min_length=1,
                              unset=True, infers=True)
    module: str | None = key(None, "run as `python -m MODULE` in the tree", unset=True, infers=True, keywords=MODULE)
    args: tuple[str, ...] = key((), "command-line arguments")
    stdin: str = key("", "text fed to standard input", infers=True)
    stdout: str | None = key(None, "expected output, exact after trailing whitespace is stripped", unset=True,
                             infers=True)
    stdout_regex: str | None = key(None, "a regular expression found in the output (`re.search`, multi-line)",
                                   unset=True, infers=True)
    exit_code: int = key(0, "expected exit status (default 0)")


class Stdio:
    """A program's observable behaviour on the command line."""

    name = "stdio"
    fields = StdioFields

    def check(self, case: Mapping[str, Any]) -> tuple[str, str] | None:
        pattern = case.get("stdout_regex")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                return "stdout_regex", f"not a valid regular expression: {exc}"
        return None

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome:
        request = _request(case, program, limits, hash_seed)
        if isinstance(request, str):
            return CaseOutcome("error", request, fingerprint("error", request))
        return _judge(case, sandbox.run(request))


def _request(case: CaseSpec, program: Program, limits: Limits, hash_seed: int) -> RunRequest | str:
    args: tuple[str, ...] = tuple(case.get("args", []))
    module, script = case.get("module"), case.get("program")
    files: dict[str, bytes] = {}
    runner: dict[str, bytes] = {}
    if module is not None or script is not None:
        if program.tree is None:
            return "a program or module case needs a tree to run in, and this is a single reply"
        if module is not None:
            script, args, runner = "_gate_module.py", (module, *args), harness("module")
    elif program.code is not None:
        script, files = CANDIDATE, {CANDIDATE: program.code.encode()}
    else:
        return "the case names no program or module, and there is no reply's code to run"
    return RunRequest(script=script, args=args, files=files, harness=runner, tree=program.tree,
                      python_path=program.python_path,
                      stdin=str(case.get("stdin", "")).encode(), hash_seed=hash_seed, limits=limits,
                      preload=program.preload)


def _judge(case: CaseSpec, result: RunResult) -> CaseOutcome:
    stdout = _normalise(result.stdout.decode("utf-8", errors="replace"))
    seen = fingerprint(stdout, result.exit_code, result.signal)
    if result.timed_out:
        return CaseOutcome("timeout", f"ran out of time ({result.killed_reason or 'wall timeout'})",
                           fingerprint("timeout"), result.wall_s)
    if result.output_truncated or result.killed_reason:
        return CaseOutcome("failed", f"killed: {result.killed_reason or 'output over the limit'}", seen,
                           result.wall_s)
    problems = [p for p in (_stdout_problem(case, stdout), _exit_problem(case, result)) if p]
    return CaseOutcome("failed" if problems else "passed", "; ".join(problems), seen, result.wall_s)


def _exit_problem(case: CaseSpec, result: RunResult) -> str:
    expected = int(case.get("exit_code", 0))
    # For a hidden case no number the program chose (a signal, a status, a count of lines): it could be one
    # of the case's arguments.
    if result.signal is not None:
        return "killed by a signal" if case.hidden else f"killed by signal {result.signal}"
    if result.exit_code == expected:
        return ""
    if case.hidden:
        return "another exit status"
    return f"exit status: expected {expected}, got {result.exit_code}"


def _stdout_problem(case: CaseSpec, stdout: str) -> str:
    pattern = case.get("stdout_regex")
    if pattern is not None:
        if re.search(pattern, stdout, re.MULTILINE):
            return ""
        return "stdout does not match" + ("" if case.hidden else f" /{pattern}/: got {_clip(stdout)}")
    expected = case.get("stdout")
    if expected is None:
        return ""
    want = _normalise(str(expected))
    if stdout == want:
        return ""
    if case.hidden:
        return "stdout differs"
    return "stdout " + _first_difference(want, stdout)


def _normalise(text: str) -> str:
    """Trailing whitespace stripped from every line and from the end."""
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def _first_difference(want: str, got: str) -> str:
    wanted, gotten = want.splitlines(), got.splitlines()
    for number, (a, b) in enumerate(zip(wanted, gotten, strict=False), start=1):
        if a != b:
            return f"line {number}: expected {_clip(a)}, got {_clip(b)}"
    if len(wanted) > len(gotten):
        return f"line {len(gotten) + 1}: expected {_clip(wanted[len(gotten)])}, got end of output"
    return f"line {len(wanted) + 1}: expected end of output, got {_clip(gotten[len(wanted)])}"


def _clip(text: str, limit: int = 60) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
