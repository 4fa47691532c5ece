"""The run's interpreter: what `sys.executable` names in a run, and `python` on its PATH, so that a test that
starts a child interpreter (`subprocess.run([sys.executable, "-m", "pkg"])`) gets the one the project's CI gives
it: the tree under test and the repository's environment importable, `site` run as usual.

It is a virtual environment of the gate's (HOME: `pyvenv.cfg`, `bin/python` linked to the sandbox's interpreter,
a site-packages folder holding one `.pth` file of the gate's, STARTUP). A child started from it runs `site` (so
`exit`, `quit`, `help`... exist, and `-S`, `-I`, `-E` mean what they mean in CI), and the gate's `.pth` gives it
the import path of the run's own program (`import_path`: the tree's roots, the working directory, the standard
library, the build's layer, the environment's site-packages, the gate's pytest), after what PYTHONPATH adds.
Nothing of the tree takes part in that start: `site` reads no `.pth` file but the gate's (the environment and
the layer are put on the path, not added as site directories, as in the run's own process), `sitecustomize` is
never imported (neither the tree's nor the interpreter's: the run's own process, started with `-S`, has none
either), `usercustomize` is off in a virtual environment without the system's site-packages, and PYTHONSTARTUP
is dropped.

With a mount namespace, HOME is /.gate-venv in the allow-listed root, made once with it, and its site-packages
is a link to RUN_SITE, in each run's own /tmp, where the run's `.pth` is written as root (the run cannot change
it): a run pays for one small file. Without one, each run's HOME is a folder beside its working directory, made
whole. Standard library only: the sandboxed child imports it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

HOME = "/.gate-venv"  # in the allow-listed root (a name no host path bound there has)
RUN_SITE = "/tmp/.gate-site"  # in the run's own /tmp (a mount namespace's): what HOME's site-packages links to
STARTUP = "_gate_run.pth"
_SITE = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"


def home(stage: str, mountns: bool) -> str:
    """The run's HOME as the run sees it: /.gate-venv with a mount namespace, else beside its working directory
    `stage` (a host path), removed with it."""
    return HOME if mountns else stage + ".venv"


def executable(home: str) -> str:
    """The run's `sys.executable`."""
    return f"{home}/bin/python"


def import_path(workdir: str, python_path: Sequence[str]) -> list[str]:
    """The import path of a run's program, as `python script.py` in `workdir` would have it: relative
    `python_path` roots (RunRequest.python_path) before the working directory, the sandbox interpreter's
    standard library, then absolute roots."""
    return [*(os.path.join(workdir, p) for p in python_path if not os.path.isabs(p)), workdir,
            *(p for p in sys.path if p.startswith(sys.base_prefix)),
            *(p for p in python_path if os.path.isabs(p))]


def make_home(home: str, site: str | None) -> None:
    """Make HOME at `home` (a new folder), for this interpreter; its site-packages links to `site`, or is a
    folder of its own without one."""
    real = os.path.realpath(sys.executable)
    for folder in (home, f"{home}/bin", f"{home}/lib", os.path.dirname(f"{home}/{_SITE}")):
        os.mkdir(folder)
        os.chmod(folder, 0o755)
    os.symlink(real, f"{home}/bin/python")
    for name in ("python3", f"python3.{sys.version_info[1]}"):
        os.symlink("python", f"{home}/bin/{name}")
    _write(f"{home}/pyvenv.cfg", f"home = {os.path.dirname(real)}\ninclude-system-site-packages = false\n"
                                 f"version = {'.'.join(map(str, sys.version_info[:3]))}\n")
    if site is None:
        os.mkdir(f"{home}/{_SITE}")
        os.chmod(f"{home}/{_SITE}", 0o755)
    else:
        os.symlink(site, f"{home}/{_SITE}")


def write_startup(home: str, path: Sequence[str], into: str | None = None) -> None:
    """The gate's `.pth` for HOME at `home`, in its site-packages folder (or `into`, the folder it links to):
    the child's import path becomes what PYTHONPATH added (the entries that are neither the standard library,
    the site-packages folder nor the run's) and then `path`, the run's. It runs twice in a virtual
    environment's start (`site` reads the folder twice), so it gives the same path each time."""
    site = f"{home}/{_SITE}"
    skip = sorted({*path, *(p for p in sys.path if p.startswith(sys.base_prefix)), site})
    _write(f"{into or site}/{STARTUP}",
           f"import os, sys; sys.path[:] = [p for p in sys.path if p not in {skip!r}] + {list(path)!r}; "
           "sys.modules.setdefault('sitecustomize', None); os.environ.pop('PYTHONSTARTUP', None)\n")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, text.encode())
        os.fchmod(fd, 0o644)
    finally:
        os.close(fd)
