"""Where built environments and suite baselines are kept, and the key an environment is cached by.

`GATE_CACHE_DIR` wins; on GitHub Actions the runner's tool cache (`RUNNER_TOOL_CACHE`); else
`$XDG_CACHE_HOME/gate` or `~/.cache/gate`. A cache is only used when nobody but the gate's own user (and root)
could have written it: the directory and each one above it belong to the gate's user or root and no one else
may write them (a sticky one such as /tmp aside). Anything else (a directory a restored `actions/cache` entry
made, the runner's own tool cache when the gate is root) could hold a forged baseline or a pytest stand-in, so
the gate then keeps this run's environments and baselines in a private directory of its own, removed when it
exits.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from gate.errors import GateFailure

# Bump when the layout of a cache entry or the way it is built changes.
FORMAT = 3


def cache_dir(environ: Mapping[str, str]) -> Path:
    """The gate's cache directory for this environment (see the module's docstring): the one asked for when
    it is trusted, else this process's private one."""
    asked = _asked(environ)
    if trusted(asked):
        asked.mkdir(mode=0o755, parents=True, exist_ok=True)
        return asked
    return _private()


def _asked(environ: Mapping[str, str]) -> Path:
    if environ.get("GATE_CACHE_DIR"):
        return Path(environ["GATE_CACHE_DIR"])
    if environ.get("GITHUB_ACTIONS") == "true" and environ.get("RUNNER_TOOL_CACHE"):
        return Path(environ["RUNNER_TOOL_CACHE"], "gate")
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"], "gate")
    return Path.home() / ".cache" / "gate"


def trusted(path: Path) -> bool:
    """Whether `path` (absolute; it need not exist) and every directory above it are real directories that
    only root or the gate's user may change: owned by one of them, writable by no one else unless sticky."""
    if not path.is_absolute():
        return False
    for part in [path, *path.parents]:
        try:
            info = os.lstat(part)
        except FileNotFoundError:
            continue  # made by the gate, as its own
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode) or info.st_uid not in (0, os.geteuid()):
            return False
        if info.st_mode & 0o022 and not (info.st_mode & stat.S_ISVTX and part != path):
            return False
    return True


_PRIVATE: list[Path] = []


def _private() -> Path:
    """This process's own cache (made once, readable by a run's uid, removed at exit), in a temporary
    directory nobody else could rename it out of (a runner's own TMPDIR could)."""
    if not _PRIVATE:
        places = [Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp")]
        place = next((path for path in places if trusted(path / "gate-cache")), None)
        if place is None:
            raise GateFailure("no temporary directory that only root or the gate's user can change (tried "
                              + ", ".join(map(str, places)) + ") for the gate's private cache")
        folder = Path(tempfile.mkdtemp(prefix="gate-cache-", dir=place))
        folder.chmod(0o755)
        atexit.register(shutil.rmtree, folder, True)
        _PRIVATE.append(folder)
    return _PRIVATE[0]


def read_json(path: Path) -> object:
    """The JSON data of the cache file `path`, or None when it is missing, unreadable, or could have been
    written by anyone but the gate's user or root."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid not in (0, os.geteuid()) or info.st_mode & 0o022:
            return None
        try:
            return json.loads(stream.read())
        except (ValueError, RecursionError):
            return None


def write_json(path: Path, data: object) -> None:
    """Write `data` to the cache file `path` at once (a reader sees the old file or the new one)."""
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, sort_keys=True))
    partial.chmod(0o644)
    partial.replace(path)


def digest(parts: object) -> str:
    """The hash of `parts` (JSON data: what is installed, with which interpreter, installer and index settings)
    as a cache key (an index URL may hold a token: only the hash is kept)."""
    text = json.dumps({"format": FORMAT, "parts": parts}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created), so that two gates never build the same entry at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
