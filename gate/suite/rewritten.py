"""Test modules as pytest rewrote their assertions, kept from one verdict to the next: a warm run's pytest takes
them instead of rewriting each test file again (a third to a half of a suite's collection: marshmallow's 1.0 s
of 2.2; plain pytest keeps them in `__pycache__`, which the gate's read-only trees cannot hold).

What a run is given is code it will run as the tests' own, so only the base's own runs (nothing of the change
runs there) hand back what their pytest rewrote (gate/suite/harness.py's `_rewritten`), and the gate keeps each
under the sha256 of the file at its path in the base's tree as the gate exported it, never as the run says. A
run is given the kept code of each file of its tree whose content is that source; a test file the change edits
is rewritten by its run's own pytest, as without this store. The store is a cache file (gate/environment/cache.py:
one nobody else could have written), one per environment, pytest, harness and gate version.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gate import __version__
from gate.environment import cache

# What a run is given of the store beyond the entries of the files it runs, at most (characters of the code's
# base64, as the request carries it).
GIVEN_CHARS = 4 * 1024 * 1024


def store(where: Path, parts: Mapping[str, object]) -> Path:
    """The store for runs made of `parts` (the environment's key, the pytest copy, the harness), under the cache
    directory `where`."""
    return where / "rewritten" / f"{cache.digest({**parts, 'gate': __version__, 'kept': 'rewritten'})}.json"


def given(kept: Path, tree: Path, paths: Sequence[str], room: int = GIVEN_CHARS) -> dict[str, list[str]]:
    """What a run in `tree` of pytest on `paths` (files or folders of the tree) is given of the store `kept`:
    each entry ([sha256, magic, code]) for a file that is in `tree` with that content: those of the files it
    runs and every `conftest.py` first, then the others while their code fits in `room` characters (a test module
    may import another one, which pytest rewrites as it is imported: zope.interface's test_declarations.py
    imports its 270 kB test_interface.py)."""
    try:
        info = kept.stat()
    except OSError:
        return {}
    entries = _read(kept, (info.st_mtime_ns, info.st_size, info.st_ino))
    asked = [path for path in entries if _asked(path, paths)]
    found = {path: entries[path] for path in asked if _digest(tree, path) == entries[path][0]}
    for path in sorted(set(entries) - set(asked)):
        if len(entries[path][2]) <= room and _digest(tree, path) == entries[path][0]:
            found[path] = entries[path]
            room -= len(entries[path][2])
    return found


def _asked(path: str, paths: Sequence[str]) -> bool:
    """Whether pytest on `paths` may import the file `path`: one of them or under one, or a `conftest.py`."""
    return Path(path).name == "conftest.py" or any(
        folder in ("", ".") or path == folder or path.startswith(folder + "/")
        for folder in (asked.rstrip("/") for asked in paths))


@functools.lru_cache(maxsize=4)
def _read(kept: Path, version: tuple[int, int, int]) -> dict[str, list[str]]:
    """The store's valid entries, read again only when it changed (a verdict's runs ask for it many times)."""
    entries = cache.read_json(kept)
    return {path: entry for path, entry in entries.items() if isinstance(path, str) and _entry(entry)} \
        if isinstance(entries, dict) else {}


def keep(kept: Path, tree: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Keep in the store `kept` what a run of the base's own `tree` rewrote (its "rewritten" records), each by
    the sha256 of its file in `tree`; with what other gates kept meanwhile."""
    found: dict[str, list[str]] = {}
    for record in records:
        path, magic, code = record.get("rewritten"), record.get("magic"), record.get("code")
        if isinstance(path, str) and isinstance(magic, str) and isinstance(code, str):
            digest = _digest(tree, path)
            if digest is not None:
                found[path] = [digest, magic, code]
    if not found:
        return
    with cache.locked(kept.with_suffix(".lock")):
        entries = cache.read_json(kept)
        cache.write_json(kept, {**(entries if isinstance(entries, dict) else {}), **found})


def _entry(entry: object) -> bool:
    return isinstance(entry, list) and len(entry) == 3 and all(isinstance(part, str) for part in entry)


def _digest(tree: Path, path: str) -> str | None:
    """The sha256 of the regular file at the relative `path` inside `tree` (no link out of it), or None."""
    if Path(path).is_absolute() or os.pardir in Path(path).parts:
        return None
    place = tree / path
    try:
        if not place.resolve().is_relative_to(tree.resolve()):
            return None
        fd = os.open(place, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            return None
        return hashlib.sha256(source.read()).hexdigest()
