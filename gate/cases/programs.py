"""The gate's own programs that a case's run starts (a run's RunRequest.harness: gate/cases/harness/; the
repository's suite's is gate/suite/harness.py), and the name of the candidate's module.
"""

from __future__ import annotations

from gate.sandbox import programs

CANDIDATE = "candidate.py"
# The package of the case kinds' harness programs and of the wire module they share.
_HARNESS = "gate.cases.harness"
# The harness modules every program may import: the wire format, the tree's import path.
_SHARED = {"_gate_wire.py": f"{_HARNESS}.wire", **programs.TREE}


def harness(name: str, program: str | None = None) -> dict[str, bytes]:
    """The harness of program `name` (gate/sandbox/programs.py) with the modules every program shares. The
    program is the module `program` (default: gate/cases/harness/NAME.py; the repository's suite has its own,
    gate/suite/harness.py)."""
    return programs.harness(name, program or f"{_HARNESS}.{name}", _SHARED)


def warm_names(name: str) -> tuple[str, ...]:
    """The modules of harness `name` (see `harness`) that a zygote may import once for all its runs: all of
    them are the gate's own, trusted code (the candidate's module never is)."""
    return (f"_gate_{name}_main.py", *_SHARED)
