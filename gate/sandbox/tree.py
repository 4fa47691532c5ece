"""The import path of the tree under test, which a harness program takes once it has imported all it needs.
Runs inside the sandbox as the harness module `_gate_tree` (gate/sandbox/programs.py); standard library only.

A harness starts with the standard library alone on sys.path, its own modules served from memory
(gate/sandbox/child.py): no module of the tree or of the working directory, whatever its name, is what it
imports. The path the tree's code runs with, as `python script.py` would have it in the working directory (the
tree's import roots, the working directory, the standard library, the environment), is in TREE_PATH_ENV.
"""

from __future__ import annotations

import json
import os
import sys

TREE_PATH_ENV = "GATE_TREE_PATH"  # gate.sandbox.child.TREE_PATH_ENV


def path() -> list[str]:
    """The tree's import path."""
    found: list[str] = json.loads(os.environ[TREE_PATH_ENV])
    return found


def enter() -> None:
    """Put the tree on sys.path: from here on, an import that is not done yet may be a module of the tree's."""
    sys.path[:] = path()
    os.environ.pop(TREE_PATH_ENV, None)
