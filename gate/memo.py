"""What the gate found out on this machine and can use again, remembered until it reboots: root's only.

A record is a JSON file in the gate's state directory (`STATE_DIR`, /run/gate: root's,
0700, on a tmpfs that a reboot empties), so only root writes one: never a run, whose uid is another and whose
root holds nothing of /run. Without root nothing is remembered (a run may then share the gate's uid). A
record is used only when its key, which names everything the finding depends on, is the one given now;
anything else about it (missing, unreadable, not a regular file of root's with mode 0600, from another key)
makes it a miss, and the caller finds out again. What is remembered: which isolation layers work
(gate/sandbox/detect.py) and which policy and hidden-cases documents are valid (gate/policy/validation.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
from typing import Any

from gate.errors import GateFailure

FORMAT = 1  # bump when a record's shape changes
_MAX_BYTES = 1 << 20
# The gate's own state (these records; the sandbox's uids' lock files, gate/sandbox/users.py): root's only. Not
# /run/lock, which anyone may write: a link planted there would have the gate change and create files wherever
# it points.
STATE_DIR = "/run/gate"


def state_dir(path: str | None = None) -> int:
    """A descriptor of the gate's state directory (`path`, by default STATE_DIR as it is when called), made
    0700 root's if missing. Refused (GateFailure) when it is a link, not a directory, or not root's own: nothing
    the gate opens for itself follows a link."""
    path = STATE_DIR if path is None else path
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise GateFailure(f"the gate's state directory {path} cannot be used ({exc.strerror}): it must be a "
                          "directory of root's, not a link; remove it") from exc
    info = os.fstat(fd)
    if info.st_uid != 0:
        os.close(fd)
        raise GateFailure(f"the gate's state directory {path} belongs to uid {info.st_uid}, not root; "
                          "remove it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.fchmod(fd, 0o700)
    return fd


def _digest(key: Any) -> str:
    return hashlib.sha256(json.dumps({"format": FORMAT, "key": key}, sort_keys=True).encode()).hexdigest()


def _state() -> int | None:
    """The state directory's descriptor, or None when the gate is not root or the directory cannot be used (it
    cannot be made, or it is a link or not root's: see state_dir; the uids then refuse it themselves)."""
    if os.geteuid() != 0:
        return None
    try:
        return state_dir()
    except (OSError, GateFailure):
        return None


def _file(name: str, digest: str) -> str:
    """One record per key, so that gates of different installations on one machine keep theirs."""
    return f"{name}-{digest[:32]}.json"


def recall(name: str, key: Any) -> Any:
    """The value remembered as `name` under `key` (JSON data), or None."""
    folder = _state()
    if folder is None:
        return None
    digest = _digest(key)
    try:
        fd = os.open(_file(name, digest), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as record:
        info = os.fstat(record.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077 or info.st_size > _MAX_BYTES:
            return None
        try:
            found = json.loads(record.read(_MAX_BYTES))
        except ValueError:
            return None
    if not isinstance(found, dict) or found.get("key") != digest:
        return None
    return found.get("value")


def remember(name: str, key: Any, value: Any) -> None:
    """Keep `value` (JSON data) as `name` under `key`, replacing what was there at once (another gate may be
    reading it). Nothing is kept without root, or when the directory cannot be written."""
    folder = _state()
    if folder is None:
        return
    digest = _digest(key)
    temporary = f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as record:
            json.dump({"key": digest, "value": value}, record)
        os.replace(temporary, _file(name, digest), src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
    finally:
        os.close(folder)
