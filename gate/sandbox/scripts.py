"""The console scripts a run has in its interpreter's `bin` (gate/sandbox/interpreter.py), parent side: those the
distributions on its absolute import roots declare (the repository's environment, the build's layer of the
base's or the head's project, the gate's pytest), as pip would have written them into a virtual environment.

Read from each distribution's `entry_points.txt` (`console_scripts` and `gui_scripts`), never from the tree (a
relative root): the tree's files make no command. A name is kept when it is a plain file name that is not one
of the interpreter's (`python`, `python3`, `python3.N`) and its object a dotted module and attribute, as pip's
and installer's script makers require: a head's metadata (the layer's) can name only its own code, which only
the tests run (the gate and its harness run no command by name). A name two distributions declare is the first
root's, then the first distribution's by name, as the import path would find their modules.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Mapping, Sequence

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_OBJECT = re.compile(rf"({_DOTTED})\s*:\s*({_DOTTED})\s*(?:\[[^\]\n]*\])?")
_INTERPRETER = frozenset({"python", "python3", f"python3.{sys.version_info[1]}"})
_GROUPS = ("console_scripts", "gui_scripts")


def of(python_path: Sequence[str]) -> dict[str, str]:
    """The console scripts of a run whose import roots are `python_path`: name -> "module:attribute"."""
    found: dict[str, str] = {}
    for root in python_path:
        if os.path.isabs(root):
            for name, entry in _in(root, _stamp(root)).items():
                found.setdefault(name, entry)
    return found


def _stamp(root: str) -> tuple[int, int] | None:
    """What changes when a distribution is added to or removed from `root` (a layer is filled after its sandbox
    opened), or None for a root that is not there."""
    try:
        info = os.stat(root)
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns


@functools.lru_cache(maxsize=64)
def _in(root: str, stamp: tuple[int, int] | None) -> Mapping[str, str]:
    """The console scripts the distributions in `root` declare (as of `stamp`)."""
    if stamp is None:
        return {}
    from importlib import metadata  # (with the email package it brings: 15-25 ms of every gate's start)

    found: dict[str, str] = {}
    distributions = sorted(metadata.distributions(path=[root]), key=lambda dist: str(dist.metadata["Name"] or ""))
    for dist in distributions:
        try:
            entries = list(dist.entry_points)
        except ValueError:  # metadata that does not parse declares nothing
            continue
        for entry in entries:
            matched = _OBJECT.fullmatch(entry.value.strip())
            if (entry.group in _GROUPS and matched and _NAME.fullmatch(entry.name)
                    and entry.name not in _INTERPRETER):
                found.setdefault(entry.name, f"{matched[1]}:{matched[2]}")
    return found
