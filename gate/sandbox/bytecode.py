"""Bytecode for a staged tree's modules, compiled by the gate from their source and kept between verdicts.

A tree is staged without any bytecode it holds (stage.NOT_RUN: a committed `__pycache__/x.pyc` would run instead
of the scored `x.py`), so each run's interpreter compiled every module it imported from source, in every run
and every verdict, where plain pytest reads its `__pycache__` (zope.interface's package: 0.06 s of each
shard's collection). `place` puts bytecode of its own in the staged copy instead: each module compiled by the
gate from the copy's own source, as a checked hash-based pyc (PEP 552), which the runs' interpreter uses only
after checking that the source beside it hashes to what the pyc was made of, and otherwise compiles the source
as before. Compiling reads and compiles, never runs, the code; only files of at most IN_PROCESS_CHARS are
compiled here (what the gate parses in its own process: gate/checks/trees.py), the larger ones are left to the
runs.

What the gate compiled is kept in the store (a folder of the cache: gate/environment/cache.py) under the
sha256 of its source and the interpreter's magic number, so a module the change did not touch is compiled once
for every later verdict. A stored file is used only when it could have been written by nobody but the gate's
user or root, as every cache file. Bytecode goes only into a `__pycache__` the gate creates in a real folder of
the copy (never through a link), for a regular `.py` file there; test modules (`test_*.py`, `*_test.py`,
`conftest.py`) are left alone, since pytest rewrites them and never reads such a file. The runs' interpreter
must be the gate's (the same cache tag and magic number): another one looks for other names, or refuses the
magic, and compiles.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import marshal
import os
import stat
import sys
import tempfile
from pathlib import Path

# The most source a module may have for the gate to compile it in its own process (gate/checks/trees.py's
# IN_PROCESS_CHARS: a larger one is the runs' to compile).
IN_PROCESS_CHARS = 64 * 1024
_TAG = sys.implementation.cache_tag
_MAGIC = importlib.util.MAGIC_NUMBER.hex()
_CHECKED_HASH = (0b11).to_bytes(4, "little")  # a pyc's flags (PEP 552): made from a hash, which is checked


def place(copy: Path, store: Path) -> int:
    """Put a checked pyc beside each module of the staged `copy` (the gate's own fresh copy of a tree), from
    `store` or compiled now (and kept there); how many. Nothing without a cache tag (bytecode is off)."""
    if _TAG is None:
        return 0
    placed = 0
    for folder, dirs, files in os.walk(copy):  # (links to folders are listed, never entered)
        dirs[:] = [name for name in dirs if not os.path.islink(os.path.join(folder, name))]
        modules = [name for name in files if name.endswith(".py") and not _test_module(name)]
        made = None
        for name in modules:
            source = _regular_bytes(os.path.join(folder, name))
            if source is None or len(source) > 4 * IN_PROCESS_CHARS:
                continue
            data = _bytecode(source, name, store)
            if data is None:
                continue
            if made is None:
                made = _pycache(folder)
                if not made:
                    break
            placed += _write(os.path.join(folder, "__pycache__", f"{name[:-3]}.{_TAG}.pyc"), data)
    return placed


def _test_module(name: str) -> bool:
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def _regular_bytes(path: str) -> bytes | None:
    """The bytes of the regular file `path` (not through a link), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        return stream.read() if stat.S_ISREG(os.fstat(stream.fileno()).st_mode) else None


def _bytecode(source: bytes, name: str, store: Path) -> bytes | None:
    """The checked pyc of `source`: the store's, or compiled now and kept there; None when it does not compile
    here (too long, not Python: the run says so)."""
    kept = store / f"{hashlib.sha256(source).hexdigest()}-{_MAGIC}.pyc"
    data = _trusted_bytes(kept)
    if data is not None:
        return data
    try:
        text = source.decode("utf-8")  # (a PEP 263 declaration of another encoding: the run compiles it)
    except UnicodeDecodeError:
        return None
    if len(text) > IN_PROCESS_CHARS:
        return None
    try:
        # (Not the gate's own `from __future__` flags, nor its optimisation level: the runs' imports have none.)
        code = compile(source, name, "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    data = importlib.util.MAGIC_NUMBER + _CHECKED_HASH + importlib.util.source_hash(source) + marshal.dumps(code)
    with contextlib.suppress(OSError):  # (a store it cannot write: the copy still gets it)
        store.mkdir(mode=0o755, parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=store, suffix=".tmp")
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.chmod(partial, 0o644)
        os.replace(partial, kept)
    return data


def _trusted_bytes(path: Path) -> bytes | None:
    """The bytes of the store's file `path`, or None when it is missing or could have been written by anyone
    but the gate's user or root (as gate/environment/cache.py reads its files)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid not in (0, os.geteuid()) or info.st_mode & 0o022:
            return None
        return stream.read()


def _pycache(folder: str) -> bool:
    """Whether the gate made `folder`'s `__pycache__` now (a name the copy already holds there is left as is)."""
    try:
        os.mkdir(os.path.join(folder, "__pycache__"), 0o755)
    except OSError:
        return False
    return True


def _write(path: str, data: bytes) -> int:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:
        return 0
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)
    return 1
