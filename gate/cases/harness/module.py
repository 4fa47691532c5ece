"""Run a module of the tree under test as `python -m MODULE ARGS...` would (stdio cases with `module:`)."""

from __future__ import annotations

import runpy
import sys

import _gate_tree as tree


def main() -> None:
    module, *args = sys.argv[1:]
    sys.argv = [module, *args]
    tree.enter()
    runpy.run_module(module, run_name="__main__", alter_sys=True)

