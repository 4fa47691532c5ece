"""Where built environments and suite baselines are kept, and the key an environment is cached by.

`GATE_CACHE_DIR` wins; on GitHub Actions the runner's tool cache (`RUNNER_TOOL_CACHE`, world-readable, kept
by `actions/cache` as the README shows); else `$XDG_CACHE_HOME/gate` or `~/.cache/gate`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

# Bump when the layout of a cache entry or the way it is built changes.
FORMAT = 1
# pip's own settings that change what an install resolves to (the index, extra indexes, local wheels).
_PIP_SETTINGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CONSTRAINT",
                 "PIP_PRE", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL")


def cache_dir(environ: Mapping[str, str]) -> Path:
    """The gate's cache directory for this environment (see the module's docstring)."""
    if environ.get("GATE_CACHE_DIR"):
        return Path(environ["GATE_CACHE_DIR"])
    if environ.get("GITHUB_ACTIONS") == "true" and environ.get("RUNNER_TOOL_CACHE"):
        return Path(environ["RUNNER_TOOL_CACHE"], "gate")
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"], "gate")
    return Path.home() / ".cache" / "gate"


def digest(parts: object, environ: Mapping[str, str]) -> str:
    """The hash of `parts` (JSON data: what is installed and with which interpreter) and of pip's index
    settings, as a cache key (their values may hold a token: only the hash is kept)."""
    settings = {name: environ.get(name, "") for name in _PIP_SETTINGS}
    text = json.dumps({"format": FORMAT, "parts": parts, "pip": settings}, sort_keys=True)
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
