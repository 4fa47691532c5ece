"""The gate's own programs as a run's harness (RunRequest.harness): the files of a program that a run imports
from their code, never from its working directory (gate/sandbox/child.py).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources

# The module every program may import to take the tree's import path (gate/sandbox/tree.py).
TREE = {"_gate_tree.py": "gate.sandbox.tree"}


def harness(name: str, program: str, shared: Mapping[str, str] = TREE) -> dict[str, bytes]:
    """The harness of the gate's module `program` (dotted) under the name `name`: a two-line script
    `_gate_NAME.py` that imports and starts it (its `main()`), the program as `_gate_NAME_main.py`, and the
    modules `shared` (file name -> the gate's dotted module) it imports by those names."""
    script = f"from _gate_{name}_main import main\n\nmain()\n".encode()
    return {f"_gate_{name}.py": script, f"_gate_{name}_main.py": _source(program),
            **{module: _source(source) for module, source in shared.items()}}


@functools.cache
def _source(program: str) -> bytes:
    """The source of the gate's module `program` (dotted), read once."""
    package, _, name = program.rpartition(".")
    return resources.files(package).joinpath(f"{name}.py").read_bytes()
