"""What a harness run gave, as a case's outcome: its JSON record on the result channel, or why there is none,
and the names a hidden case's report may print for what came back.
"""

from __future__ import annotations

import builtins
import json
from typing import Any

from gate.cases.base import CaseOutcome, fingerprint
from gate.sandbox.base import RunResult

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
