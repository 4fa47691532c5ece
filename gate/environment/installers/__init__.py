"""What fills the repository's environment: uv, else pip (docs/repository.md).

uv is the one beside the gate's own interpreter (its scripts directory: where installing the gate with uv
puts it, and where the Action links the hash-checked uv it installed as root), never one found on PATH or in
a user's directory, and only when nobody but root or the gate's user could have replaced it or the folders
above it: a PR's code, or another user of the runner, cannot hand the gate an installer. Without it, the gate's
own pip builds the environment, and the log says so. Both read the same settings (pip's configuration,
gate/environment/pip_config.py), and the environment's cache key names the installer that built it.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from gate.environment import cache, pip_config
from gate.environment.installers.command import Dependencies
from gate.environment.installers.pip import Pip
from gate.environment.installers.uv import Uv
from gate.errors import GateFailure


class Installer(Protocol):
    """Makes a virtual environment with an interpreter, installs into it and uninstalls from it."""

    @property
    def name(self) -> str:
        """"uv" or "pip": part of the environment's cache key."""

    def describe(self) -> str:
        """What the log says of this installer: why it was chosen, what it was told."""

    def venv(self, interpreter: str, target: Path, environ: Mapping[str, str]) -> None:
        """Make a virtual environment without pip at the empty folder `target` with `interpreter`."""

    def install(self, python: str, args: Sequence[str], cwd: Path, environ: Mapping[str, str], what: str) -> None:
        """Install `args` (pip's install arguments: targets and `-r FILE`) into the environment of `python`;
        GateFailure naming `what` and the requirement that failed."""

    def uninstall(self, python: str, names: Sequence[str], cwd: Path, environ: Mapping[str, str], what: str
                  ) -> None:
        """Remove the distributions `names` from the environment of `python`."""

    def dependencies(self, python: str, source: Path, extras: Sequence[str], project: str,
                     environ: Mapping[str, str]) -> Dependencies | None:
        """The base project's own requirements (with `extras`) in the folder `source`, found without building
        it, as `install` arguments and their names; None when this installer cannot tell them so (the project
        is then installed, and removed again)."""


def find(environ: Mapping[str, str], settings: Mapping[str, pip_config.Setting], cache: Path,
         scripts: Path | None = None) -> Installer:
    """uv beside the gate's interpreter (`scripts`, by default its scripts directory) when it can be trusted, told
    pip's `settings`, its downloads kept in `cache` (a folder of the gate's cache: what it reuses is as trusted
    as the environments); else pip, which says why in its `describe`."""
    folder = scripts if scripts is not None else Path(sysconfig.get_path("scripts"))
    uv = folder / "uv"
    if os.path.lexists(uv):
        doubt = _doubt(uv)
        if not doubt:
            return Uv(str(uv.resolve()), settings, environ, cache)
        why = f"uv beside the gate's interpreter ({uv}) is not used: {doubt}"
    else:
        why = f"uv is not beside the gate's interpreter ({uv})"
    if importlib.util.find_spec("pip") is None:
        raise GateFailure(f"{why}, and the gate's Python has no pip: nothing can build the repository's "
                          "environment (install the gate with its dependencies, uv among them)")
    return Pip(why)


def _doubt(path: Path) -> str:
    """Why the executable `path` (a link is followed) could have been replaced by someone other than root or the
    gate's user, or "" when it could not."""
    real = Path(os.path.realpath(path))
    for folder in dict.fromkeys((path.parent, real.parent)):
        if not cache.trusted(folder):
            return f"a folder on the way to it ({folder}) is not root's or the gate's user's alone"
    try:
        info = os.stat(real)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    if not stat.S_ISREG(info.st_mode) or info.st_uid not in (0, os.geteuid()) or info.st_mode & 0o022:
        return f"{real} is not a file that only root or the gate's user can write"
    return ""
