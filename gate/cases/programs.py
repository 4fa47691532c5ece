"""The files the gate puts into a case's run (or a run of the repository's suite): the harness program it
starts (with its bytecode) and the name of the candidate's module.
"""

from __future__ import annotations

import functools
import py_compile
import sys
import tempfile
from importlib import resources
from pathlib import Path

CANDIDATE = "candidate.py"
# The package of the case kinds' harness programs and of the wire module they share.
_HARNESS = "gate.cases.harness"


def harness(name: str, program: str | None = None) -> dict[str, bytes]:
    """The files a run needs for harness program `name`: a two-line script `_gate_NAME.py` that imports and
    starts it, the program and the wire module, each also compiled. The program is the module `program`
    (default: gate/cases/harness/NAME.py; the repository's suite has its own, gate/suite/harness.py)."""
    script = f"from _gate_{name}_main import main\n\nmain()\n".encode()
    return {f"_gate_{name}.py": script, **_module(f"_gate_{name}_main", program or f"{_HARNESS}.{name}"),
            **_module("_gate_wire", f"{_HARNESS}.wire")}


def warm_names(name: str) -> tuple[str, ...]:
    """The files of harness `name` (see `harness`) that a zygote may compile once for all its runs: all of
    them are the gate's own, trusted code (the candidate's module never is)."""
    return (f"_gate_{name}.py", f"_gate_{name}_main.py", "_gate_wire.py")


@functools.cache
def _module(module: str, program: str) -> dict[str, bytes]:
    """Module `module` from the gate's module `program` (dotted), with its bytecode in an unchecked-hash .pyc:
    the sandbox runs with bytecode writing off and would compile it on every run (docs/benchmarks.md); an
    interpreter with another cache tag ignores the .pyc and compiles the source."""
    package, _, name = program.rpartition(".")
    source = resources.files(package).joinpath(f"{name}.py").read_bytes()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, f"{module}.py")
        path.write_bytes(source)
        compiled = Path(folder, "compiled.pyc")
        py_compile.compile(str(path), str(compiled), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        bytecode = compiled.read_bytes()
    return {f"{module}.py": source, f"__pycache__/{module}.{sys.implementation.cache_tag}.pyc": bytecode}
