"""The run's user, as the project's CI has one: a HOME of its own, USER and LOGNAME, and an entry for its uid in
the passwd and group databases, so that `Path.home()`, `expanduser("~")`, `getpass.getuser()` and
`pwd.getpwuid(os.getuid())` work in a run as on a runner.

With a mount namespace, the allow-listed root's /etc/passwd and /etc/group are links into the run's own /tmp
(DATABASES), where each run's are written as root before the uid switch (so the run cannot change them): root's
entry and the run's own, named NAME, whatever dedicated uid the run has (so that no test's output depends on
which one it got), nothing of the host's. Its HOME is a folder of its own in that /tmp, writable by it alone,
gone with it. Without a mount namespace the run sees the host's databases, where its uid has its own entry (the
dedicated user's, or the gate's user's without root), and its HOME is a folder beside its working directory,
removed with it. Standard library only: the sandboxed child imports it.
"""

from __future__ import annotations

import os

NAME = "gate"  # the run's user name in the databases of the gate's making
MOUNTED_HOME = "/tmp/home"
DATABASES = "/tmp/.gate-etc"  # what the root's /etc/passwd and /etc/group link to
_FILES = ("passwd", "group")
_SHELL = "/bin/sh"


def home(stage: str, mountns: bool) -> str:
    """The run's HOME as the run sees it: in its own /tmp with a mount namespace, else beside its working
    directory `stage` (a host path), removed with it."""
    return MOUNTED_HOME if mountns else stage + ".home"


def link_databases(root: str) -> None:
    """In the allow-listed root being made at `root`: /etc/passwd and /etc/group, links to each run's own."""
    os.makedirs(f"{root}/etc", mode=0o755, exist_ok=True)
    for name in _FILES:
        os.symlink(f"{DATABASES}/{name}", f"{root}/etc/{name}")


def write_databases(uid: int, gid: int) -> None:
    """As root, in the run's own /tmp: the passwd and group files of a run as `uid`/`gid` (root's entries, and
    the run's unless it runs as root)."""
    users, groups = ["root:x:0:0:root:/root:/bin/sh"], ["root:x:0:"]
    if uid:
        users.append(f"{NAME}:x:{uid}:{gid}:{NAME}:{MOUNTED_HOME}:{_SHELL}")
    if gid:
        groups.append(f"{NAME}:x:{gid}:")
    os.mkdir(DATABASES)
    os.chmod(DATABASES, 0o755)
    for name, lines in zip(_FILES, (users, groups), strict=True):
        fd = os.open(f"{DATABASES}/{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
        try:
            os.write(fd, "".join(f"{line}\n" for line in lines).encode())
            os.fchmod(fd, 0o644)
        finally:
            os.close(fd)


def make_home(path: str, owner: tuple[int, int]) -> None:
    """The run's HOME at `path` (a new folder), its owner's alone."""
    os.mkdir(path, 0o700)
    os.chown(path, *owner)
    os.chmod(path, 0o700)
