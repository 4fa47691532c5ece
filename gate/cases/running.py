"""What the case kinds share: the harness files they copy into a run, the candidate's module, and how a run
that gave no outcome reads in a report.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import py_compile
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from gate.cases.base import CaseOutcome
from gate.policy.model import RunLimits
from gate.sandbox.base import Limits, RunResult
from gate.syntax import parse_python

CANDIDATE = "candidate.py"


def harness(name: str) -> dict[str, bytes]:
    """The files a run needs for harness program `name` (gate/cases/harness/NAME.py): a two-line script
    `_gate_NAME.py` that imports and starts it, the program and the wire module, each also compiled."""
    script = f"from _gate_{name}_main import main\n\nmain()\n".encode()
    return {f"_gate_{name}.py": script, **_module(f"_gate_{name}_main", name),
            **_module("_gate_wire", "wire")}


def warm_names(name: str) -> tuple[str, ...]:
    """The files of harness `name` (see `harness`) that a zygote may compile once for all its runs: all of
    them are the gate's own, trusted code (the candidate's module never is)."""
    return (f"_gate_{name}.py", f"_gate_{name}_main.py", "_gate_wire.py")


@functools.cache
def _module(module: str, name: str) -> dict[str, bytes]:
    """Module `module` from harness file `name`, with its bytecode in an unchecked-hash .pyc: the sandbox runs
    with bytecode writing off and would compile it on every run (about 1.5 ms a file); an interpreter with
    another cache tag ignores the .pyc and compiles the source."""
    source = resources.files("gate.cases.harness").joinpath(f"{name}.py").read_bytes()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, f"{module}.py")
        path.write_bytes(source)
        compiled = Path(folder, "compiled.pyc")
        py_compile.compile(str(path), str(compiled), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        bytecode = compiled.read_bytes()
    return {f"{module}.py": source, f"__pycache__/{module}.{sys.implementation.cache_tag}.pyc": bytecode}


def fingerprint(*parts: object) -> str:
    """What two runs of the same case are compared on (for the nondeterminism check)."""
    return json.dumps(parts, sort_keys=True, default=repr)


# The names a hidden case's report may print for what came back: builtin types and exceptions, and the mappings
# the wire carries. Any other name (a class's name, its module) is the candidate's to choose, so it could
# spell the case's arguments or the value computed from them.
_BUILTIN_NAMES = frozenset(
    {name for name, value in vars(builtins).items() if isinstance(value, type)}
    | {"collections.Counter", "collections.OrderedDict", "collections.defaultdict"})


def hidden_detail(verb: str, name: str) -> str:
    """`raised NAME` or `returned NAME` for a hidden case's report, when NAME is a builtin's; otherwise the
    same without the candidate's chosen name."""
    if name in _BUILTIN_NAMES:
        return f"{verb} {name}"
    return "raised an exception of its own class" if verb == "raised" else "returned something that is not data"


def no_outcome(result: RunResult, hidden: bool) -> CaseOutcome:
    """The outcome when the harness wrote nothing: a timeout, a limit, or the program ended the run early. The
    CPU limit is a timeout too: which of the two clocks runs out first on an endless loop is a race."""
    if result.timed_out or result.killed_reason == "cpu limit":
        return CaseOutcome("timeout", f"ran out of time ({result.killed_reason or 'wall timeout'})",
                           fingerprint("timeout"), result.wall_s)
    # For a hidden case no number the program chose (a signal, a status): it could be one of the arguments.
    if result.killed_reason:
        how = f"killed: {result.killed_reason}"
    elif result.signal is not None:
        how = "killed by a signal" if hidden else f"killed by signal {result.signal}"
    else:
        how = "exited" if hidden else f"exited with status {result.exit_code}"
        how += " before reporting a result"
    return CaseOutcome("failed", f"no result: the program {how}" if not hidden else f"no result ({how})",
                       fingerprint("none", how), result.wall_s)


def read_outcome(result: RunResult) -> dict[str, Any] | None:
    """The harness's JSON outcome from the result channel, or None when there is none that parses."""
    if not result.result:
        return None
    try:
        record = json.loads(result.result)
    except (ValueError, RecursionError):  # the candidate can write the channel: `[` nested 100000 deep
        return None
    # Its texts are the candidate's to choose: a case's detail that quotes them is cut and made safe to write
    # where it is made (gate/cases/base.py, CaseOutcome).
    return record if isinstance(record, dict) else None


def one_function(code: str) -> str | None:
    """The name of the one top-level function `code` defines, or None when it defines none or several."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError):
        return None
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return names[0] if len(set(names)) == 1 else None


def sandbox_limits(limits: RunLimits) -> Limits:
    """The policy's limits (seconds, MB, KB) as the sandbox's (seconds, bytes)."""
    mib = 1024 * 1024
    return Limits(wall_s=limits.timeout, cpu_s=limits.cpu, memory_bytes=limits.memory_mb * mib,
                  output_bytes=limits.output_kb * 1024, processes=limits.processes,
                  open_files=limits.open_files,
                  file_size_bytes=limits.file_size_mb * mib, disk_bytes=limits.disk_mb * mib)
