"""The run's interpreter: what `sys.executable` names in a run, and `python` on its PATH, so that a test that
starts a child interpreter (`subprocess.run([sys.executable, "-m", "pkg"])`) gets the one the project's CI gives
it: the tree under test and the repository's environment importable, `site` run as usual; and beside it, as in a
virtual environment's `bin`, the console scripts of the environment and of the project's build.

It is a virtual environment of the gate's (HOME: `pyvenv.cfg`, a `bin` folder, a site-packages folder, and
CODE, the source of gate/sandbox/startup.py). Its `bin` holds `python`, `python3`, `python3.N` (links to the
sandbox's interpreter), a script for each console script (and GUI script) entry point of the distributions on
the run's absolute import roots (the environment's, the build's layer, the gate's pytest:
gate/sandbox/scripts.py), written as pip writes one, started by that `python`, and a link to each program the
environment installed beside them (ruff's binary): a test that runs `jsonschema` or
the project's own command by name, or by its path beside `sys.executable`, runs it as in CI. The tree's own files
never make a script (a head can plant no command the gate or its harness runs; only the tests run them). Its
site-packages holds the gate's `.pth` file, STARTUP, holding the run's data, which runs CODE by its absolute
path (no module is looked up on the path, where a test's PYTHONPATH could put the tree first), once however
many times `site` reads the folder: the child runs `site` (so `exit`, `quit`, `help`... exist, and `-S`, `-I`,
`-E` mean what they mean in CI) and gets the import path of the run's own program, made the same way (the
environment's `.pth` files processed, never the tree's or the layer's), after what PYTHONPATH adds. Nothing of
the tree takes part in that start: `sitecustomize` is never imported (neither the tree's nor the interpreter's:
the run's own process has none either), `usercustomize` is off in a virtual environment without the system's
site-packages, and PYTHONSTARTUP is dropped.

With a mount namespace, HOME is /.gate-venv in the allow-listed root, made once with it, and its `bin` and
site-packages are links to RUN_BIN and RUN_SITE, in each run's own /tmp, where they are written as root (the run
cannot change them): a run pays for a few small files. Without one, each run's HOME is a folder beside its
working directory, made whole. Standard library only: the sandboxed child imports it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from gate.sandbox import startup

HOME = "/.gate-venv"  # in the allow-listed root (a name no host path bound there has)
RUN_SITE = "/tmp/.gate-site"  # in the run's own /tmp (a mount namespace's): what HOME's site-packages links to
RUN_BIN = "/tmp/.gate-bin"  # ... and what its bin links to
STARTUP = "_gate_run.pth"
CODE = "lib/gate-startup.py"  # in HOME: a name no import finds
_SITE = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
_PYTHONS = ("python", "python3", f"python3.{sys.version_info[1]}")
_REAL = os.path.realpath(sys.executable)  # (once: a run names another `sys.executable`, and resolving costs)
# What each interpreter a run starts executes (read once: a run's root may not hold the gate's files).
with open(startup.__file__, encoding="utf-8") as _source:
    _STARTUP = _source.read()
# A console script, as pip writes one (its `re.sub` included: a test may read sys.argv[0]).
_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from {module} import {name}
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit({call}())
"""


def home(stage: str, mountns: bool) -> str:
    """The run's HOME as the run sees it: /.gate-venv with a mount namespace, else beside its working directory
    `stage` (a host path), removed with it."""
    return HOME if mountns else stage + ".venv"


def executable(home: str) -> str:
    """The run's `sys.executable`."""
    return f"{home}/bin/python"


def site_packages(home: str) -> str:
    """HOME's site-packages folder (as `site` names it: the run's `sys.prefix` is HOME)."""
    return f"{home}/{_SITE}"


def library() -> list[str]:
    """The standard library's folders on the sandbox interpreter's path."""
    return [path for path in sys.path if path.startswith(sys.base_prefix)]


def parts(workdir: str, python_path: Sequence[str]) -> tuple[list[str], list[str]]:
    """A run's import path before and after the standard library, as `python script.py` in `workdir` has it:
    relative `python_path` roots (RunRequest.python_path) before the working directory, then (after the
    library) the absolute roots (gate/sandbox/startup.py)."""
    return ([*(os.path.join(workdir, p) for p in python_path if not os.path.isabs(p)), workdir],
            [p for p in python_path if os.path.isabs(p)])


def make_home(home: str, linked: bool) -> None:
    """Make HOME at `home` (a new folder), for this interpreter; with `linked`, its bin and site-packages are
    links to RUN_BIN and RUN_SITE, else folders of its own (`fill` fills either)."""
    for folder in (home, f"{home}/lib", os.path.dirname(site_packages(home))):
        _mkdir(folder)
    _write(f"{home}/{CODE}", _STARTUP)
    _write(f"{home}/pyvenv.cfg", f"home = {os.path.dirname(_REAL)}\ninclude-system-site-packages = false\n"
                                 f"version = {'.'.join(map(str, sys.version_info[:3]))}\n")
    if linked:
        os.symlink(RUN_BIN, f"{home}/bin")
        os.symlink(RUN_SITE, site_packages(home))
    else:
        _mkdir(f"{home}/bin")
        _mkdir(site_packages(home))


def fill(home: str, python_path: Sequence[str], sites: Sequence[str], scripts: Mapping[str, str], workdir: str,
         into: tuple[str, str] | None = None, programs: Mapping[str, str] | None = None) -> None:
    """Write a run's part of HOME at `home`: in its bin, the interpreter's names, a script for each of
    `scripts` (name -> "module:attribute", checked by gate/sandbox/scripts.py) and a link to each of `programs`
    (name -> a host path the run sees: the environment's, gate/sandbox/scripts.py); in its site-packages, the
    start-up of a run in `workdir` with `python_path` (RunRequest.python_path), whose `sites` are read as
    site directories. `into`: the (bin, site-packages) folders to make and fill, those HOME links to (RUN_BIN,
    RUN_SITE), else HOME's own."""
    bin_folder, site_folder = into or (f"{home}/bin", site_packages(home))
    if into:
        _mkdir(bin_folder)
        _mkdir(site_folder)
    os.symlink(_REAL, f"{bin_folder}/python")
    for name in _PYTHONS[1:]:
        os.symlink("python", f"{bin_folder}/{name}")
    python = executable(home)
    for name, entry in scripts.items():
        if name in (programs or {}):  # (the environment's, from the base: no layer's script stands in for it)
            continue
        module, _, attribute = entry.partition(":")
        _write(f"{bin_folder}/{name}", _SCRIPT.format(python=python, module=module,
                                                       name=attribute.partition(".")[0], call=attribute), 0o755)
    for name, path in (programs or {}).items():
        os.symlink(path, f"{bin_folder}/{name}")
    head, roots = parts(workdir, python_path)
    data = [head, library(), roots, [root for root in roots if root in sites], site_packages(home)]
    code = f"{home}/{CODE}"
    # One line, as `site` runs a .pth file's import line; nothing it names is looked up on the path.
    _write(f"{site_folder}/{STARTUP}",
           f"import sys; {startup.MARK!r} in sys.modules or exec(compile(open({code!r}, 'rb').read(), {code!r}, "
           f"'exec'), _gate := {{'__name__': {startup.MARK!r}}}) or _gate['start'](*{data!r})\n")


def _mkdir(path: str) -> None:
    os.mkdir(path)
    os.chmod(path, 0o755)


def _write(path: str, text: str, mode: int = 0o644) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        os.write(fd, text.encode())
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
