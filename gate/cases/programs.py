"""The files the gate puts into a case's run: the harness program it starts (with its bytecode) and the name
of the candidate's module.
"""

from __future__ import annotations

import functools
import py_compile
import sys
import tempfile
from importlib import resources
from pathlib import Path

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
    with bytecode writing off and would compile it on every run (docs/benchmarks.md); an interpreter with
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
