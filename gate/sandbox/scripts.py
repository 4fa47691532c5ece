"""The console scripts a run has in its interpreter's `bin` (gate/sandbox/interpreter.py), parent side: those the
distributions on its absolute import roots declare (the repository's environment, the build's layer of the
base's or the head's project, the gate's pytest), as pip would have written them into a virtual environment.

The programs a distribution of the repository's environment installs beside its entry points (a wheel's
`.data/scripts`: ruff's binary, which `ruff` the module runs from the folder above its package) are linked
there too (`programs`): those its RECORD lists in the environment's scripts folder that are executables of
their own (no `#!` script: that names the environment's interpreter, which the run does not have), never a
layer's (a head's build) or the tree's.

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
import stat
import sys
import threading
from collections.abc import Mapping, Sequence

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_OBJECT = re.compile(rf"({_DOTTED})\s*:\s*({_DOTTED})\s*(?:\[[^\]\n]*\])?")
_INTERPRETER = frozenset({"python", "python3", f"python3.{sys.version_info[1]}"})
_GROUPS = ("console_scripts", "gui_scripts")


def of(python_path: Sequence[str]) -> dict[str, str]:
    """The console scripts of a run whose import roots are `python_path`: name -> "module:attribute"."""
    found: dict[str, str] = {}
    with _READING:  # (runs start from several threads at once: each root is read once)
        for root in python_path:
            if os.path.isabs(root):
                for name, entry in _in(root, _stamp(root)).items():
                    found.setdefault(name, entry)
    return found


_READING = threading.Lock()


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
    found: dict[str, str] = {}
    for _, text in sorted(_declared(root)):
        for group, name, value in _entries(text):
            matched = _OBJECT.fullmatch(value)
            if group in _GROUPS and matched and _NAME.fullmatch(name) and name not in _INTERPRETER:
                found.setdefault(name, f"{matched[1]}:{matched[2]}")
    return found


def programs(sites: Sequence[str]) -> dict[str, str]:
    """The programs the distributions of the site directories `sites` (the repository's environment) installed
    into its scripts folder that are no entry point (module docstring): name -> their host path."""
    found: dict[str, str] = {}
    with _READING:
        for site in sites:
            for name, path in _programs_in(site, _stamp(site)).items():
                found.setdefault(name, path)
    return found


# Where a venv's site-packages (`lib/pythonX.Y/site-packages`) keeps its scripts, as RECORD names them.
_SCRIPTS = "../../../bin/"


@functools.lru_cache(maxsize=16)
def _programs_in(site: str, stamp: tuple[int, int] | None) -> Mapping[str, str]:
    parts = site.rstrip(os.sep).split(os.sep)
    if stamp is None or parts[-3:-2] != ["lib"] or not re.fullmatch(r"python3\.\d+", parts[-2]) \
            or parts[-1] != "site-packages":
        return {}  # (not a virtual environment's: no scripts folder of its own above it)
    entries = set(_in(site, stamp))
    found: dict[str, str] = {}
    for record in sorted(_records(site)):
        for line in record.splitlines():
            name = line.partition(",")[0]
            if not name.startswith(_SCRIPTS) or not _NAME.fullmatch(name[len(_SCRIPTS):]):
                continue
            name = name[len(_SCRIPTS):]
            path = os.path.normpath(os.path.join(site, _SCRIPTS, name))
            if name not in entries and name not in _INTERPRETER and name not in found and _program(path):
                found[name] = path
    return found


def _records(site: str) -> list[str]:
    """The RECORD of each distribution (`.dist-info`) in `site`."""
    return [text for _, text in _metadata(site, "RECORD", (".dist-info",))]


def _program(path: str) -> bool:
    """Whether `path` is an executable regular file (not a link) that is no `#!` script."""
    try:
        info = os.lstat(path)
        with open(path, "rb") as file:
            start = file.read(2)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and bool(info.st_mode & 0o111) and start != b"#!"


def _declared(root: str) -> list[tuple[str, str]]:
    """(name, `entry_points.txt`) of each distribution whose metadata folder is in `root`, its name as pip
    normalizes it, read from the folder's name (`NAME-VERSION.dist-info`, `NAME[-VERSION...].egg-info`): what
    importlib.metadata finds there, without parsing every distribution's METADATA for its name."""
    return [(re.sub(r"[-_.]+", "-", folder.rsplit(".", 1)[0].split("-")[0]).lower(), text)
            for folder, text in _metadata(root, "entry_points.txt", (".dist-info", ".egg-info"))]


def _metadata(root: str, filename: str, kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    """(folder name, text) of `filename` in each distribution metadata folder (named to end with one of `kinds`)
    in `root` that holds it, readable as UTF-8."""
    try:
        folders = [entry for entry in os.scandir(root) if entry.name.endswith(kinds)]
    except OSError:
        return []
    found = []
    for folder in folders:
        try:
            with open(os.path.join(folder.path, filename), encoding="utf-8") as file:
                found.append((folder.name, file.read()))
        except (OSError, UnicodeDecodeError):
            continue
    return found


def _entries(text: str) -> list[tuple[str, str, str]]:
    """(group, name, value) of each entry point of an `entry_points.txt`, read as importlib.metadata reads it:
    none when a line of a group is not `name = value` (metadata that does not parse declares nothing)."""
    entries = []
    group: str | None = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        name, equals, value = line.partition("=")
        if not equals:
            return []
        if group is not None:
            entries.append((group, name.strip(), value.strip()))
    return entries
