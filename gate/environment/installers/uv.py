"""uv (`uv venv`, `uv pip install`), told the user's pip configuration (gate/environment/pip_config.py) and
nothing else: no uv.toml (`--no-config`: neither the user's nor the base's), no `UV_*` variable, no
`[tool.uv.sources]` of the base (`--no-sources`), so that it installs what pip would: every index considered
for every package, the best version found wins (`--index-strategy unsafe-best-match`, pip's way: uv's own
default stops at the first index that has the package), bytecode compiled as pip compiles it. Its cache is a
folder of the gate's own cache, which only root or the gate's user can change (gate/environment/cache.py), not
the home's, which another step of the job could have filled: the environment's files are hard links into it
where the filesystem allows, and it is read-only to the runs as they are."""

from __future__ import annotations

import configparser
import re
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gate.environment import pip_config
from gate.environment.installers.command import INSTALL_TIMEOUT_S, Dependencies, run, tail
from gate.environment.testdeps import canonical, setup_py_literal
from gate.errors import GateFailure

# A requirement line of `uv pip compile`'s output: its distribution's name.
_REQUIREMENT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
# The constraint file, written into the base's export, that points the project's name at its tree.
_ITSELF = ".gate-project-itself.txt"
# uv's words for a requirement it could not satisfy.
_UNSATISFIED = re.compile(r"Because (?:there is no version of |only )?([A-Za-z0-9][A-Za-z0-9._-]*)"
                          r"|Failed to (?:build|download|fetch):? `([^`\s]+)")


class Uv:
    name = "uv"

    def __init__(self, path: str, settings: Mapping[str, pip_config.Setting], environ: Mapping[str, str],
                 cache: Path) -> None:
        self.path = path
        self.carried = pip_config.for_uv(settings, environ)
        self.common = ("--no-config", "--no-python-downloads", "--no-progress", "--cache-dir", str(cache))

    def describe(self) -> str:
        done = subprocess.run([self.path, "--version"], capture_output=True, text=True, check=False, timeout=60)
        version = done.stdout.partition(" (")[0].strip() or "uv"  # "uv 0.13.9"
        said = f"the repository's environment is built by {version} ({self.path})"
        said += "; pip's settings carried over: " + (", ".join(self.carried.carried) or "none")
        if self.carried.not_carried:
            said += "; not carried over: " + "; ".join(self.carried.not_carried)
        return said

    def venv(self, interpreter: str, target: Path, environ: Mapping[str, str]) -> None:
        done = subprocess.run([self.path, "venv", *self.common, "--quiet", "--python", interpreter, str(target)],
                              capture_output=True, text=True, check=False, timeout=300, env=self._environment(environ))
        if done.returncode != 0:
            raise GateFailure(f"could not make a virtual environment with {interpreter} (uv): "
                              + tail(done.stdout + done.stderr))

    def install(self, python: str, args: Sequence[str], cwd: Path, environ: Mapping[str, str], what: str) -> None:
        command = [self.path, "pip", "install", *self.common, "--python", python, "--no-sources",
                   "--index-strategy", "unsafe-best-match", "--link-mode", "hardlink", "--compile-bytecode",
                   *self.carried.arguments, *args]
        run(command, cwd, self._environment(environ), what, "uv", _UNSATISFIED)

    def dependencies(self, python: str, source: Path, extras: Sequence[str], project: str,
                     environ: Mapping[str, str]) -> Dependencies | None:
        """The project's own requirements from its metadata, which uv reads from pyproject.toml's `[project]`
        table or asks the build backend's metadata hook for (setup.py, setup.cfg, dynamic fields), with no
        build of it: `uv pip install -r FILE --extra NAME` installs them, and `uv pip compile --no-deps` of the
        same names them. None when uv reads none of those files, when that fails, or when an extra asked for
        may name the project itself (`tests = ["attrs[tests-mypy]"]`): such extras are left to installing the
        project, whose resolution of them is pip's. None too when the project's Requires-Python rules the
        interpreter out, or cannot be read without running setup.py: installing the project checks it."""
        metadata = _metadata(source)
        if metadata is None:
            return None
        file, table = metadata
        if _may_name_itself(table, extras, project) or not _supports(table, source, python):
            return None
        chosen = tuple(word for extra in extras for word in ("--extra", extra))
        command = [self.path, "pip", "compile", *self.common, "--python", python, "--no-sources",
                   "--index-strategy", "unsafe-best-match", *self.carried.arguments, "--no-deps", "--no-header",
                   "--no-annotate", file, *chosen]
        try:
            done = subprocess.run(command, cwd=source, capture_output=True, text=True, check=False,
                                  timeout=INSTALL_TIMEOUT_S, env=self._environment(environ))
        except subprocess.TimeoutExpired:
            return None
        if done.returncode != 0:
            return None
        names = tuple(canonical(found.group(0)) for line in done.stdout.splitlines()
                      if (found := _REQUIREMENT.match(line)) is not None)
        if canonical(project) in names:
            return None
        # A dependency that requires the project itself (a test extra's plugin of it, a circular pair) gets the
        # base's tree, as when the project is installed: never the index's copy, whose own requirements would
        # stay behind it, nor a failure for a project no index holds. uv builds it only if something asks for it.
        itself = source / _ITSELF
        itself.write_text(f"{project} @ {source.resolve().as_uri()}\n", encoding="utf-8")
        return Dependencies(("-r", file, *chosen, "--constraints", _ITSELF), names)

    def uninstall(self, python: str, names: Sequence[str], cwd: Path, environ: Mapping[str, str], what: str
                  ) -> None:
        run([self.path, "pip", "uninstall", *self.common, "--python", python, *names], cwd, self._environment(environ),
            what, "uv", _UNSATISFIED)

    def _environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        kept = {name: value for name, value in environ.items() if not name.startswith("UV_")}
        if "PATH" not in kept:
            kept["PATH"] = "/usr/bin:/bin"
        return {**kept, **dict(self.carried.environment)}


def _metadata(source: Path) -> tuple[str, dict[str, Any] | None] | None:
    """The file uv reads the project's metadata from, with pyproject.toml's `[project]` table when it is that
    one: pyproject.toml when it has the table, else setup.py, else setup.cfg; None without one (a Poetry project
    without `[project]`)."""
    pyproject = source / "pyproject.toml"
    if pyproject.is_file():
        try:
            table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return None
        if isinstance(table, dict):
            return "pyproject.toml", table
    file = next((name for name in ("setup.py", "setup.cfg") if (source / name).is_file()), None)
    return None if file is None else (file, None)


def _may_name_itself(table: dict[str, Any] | None, extras: Sequence[str], project: str) -> bool:
    """Whether a requirement the project declares, with `extras`, could name the project itself: one of
    pyproject.toml's static `[project]` lists (`table`) that does, or extras asked of metadata read only from its
    build (setup.py, setup.cfg: no table, or extras the table leaves `dynamic`). True too for a table whose
    `dynamic`, `dependencies` or `optional-dependencies` is not the list of strings (a table of them) PEP 621
    says: installing the project then has its build backend report it."""
    if table is None:
        return bool(extras)
    dynamic, required = table.get("dynamic", []), table.get("dependencies", [])
    optional = table.get("optional-dependencies", {})
    if not (_all_strings(dynamic) and _all_strings(required) and isinstance(optional, dict)
            and all(_all_strings(found) for found in optional.values())):
        return True
    if extras and "optional-dependencies" in dynamic:
        return True
    chosen = {canonical(extra) for extra in extras}
    lines = [*required, *(line for extra, found in optional.items() if canonical(extra) in chosen for line in found)]
    names = {canonical(found.group(0)) for line in lines if (found := _REQUIREMENT.match(line.strip())) is not None}
    return canonical(project) in names


def _all_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _supports(table: dict[str, Any] | None, source: Path, python: str) -> bool:
    """Whether the project's Requires-Python admits the interpreter `python` (`uv pip install -r FILE` does not
    ask: the project's own install refuses, and so must the environment). It is pyproject.toml's `requires-python`
    (in its `[project]` `table`); without the table, or with the field `dynamic`, setup.py's literal
    `setup(python_requires=...)`, which setuptools takes over setup.cfg's `[options] python_requires`. False when
    it is not a string, or setup.py or another backend computes it: the project is then installed, which checks it."""
    dynamic = None if table is None else table.get("dynamic")
    left_to_the_build = isinstance(dynamic, list) and "requires-python" in dynamic
    if table is not None and not left_to_the_build:
        requires = table.get("requires-python")
    elif "python_requires" in (setup_py := _text(source / "setup.py")):  # (in a dict of options too: computed)
        requires = setup_py_literal(setup_py, "python_requires")
        if requires is None:
            return False
    else:
        config = configparser.ConfigParser(interpolation=None)
        try:
            config.read(source / "setup.cfg", encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            return False
        requires = config.get("options", "python_requires", fallback=None)
        if requires is None and left_to_the_build:  # (another backend computes it)
            return False
    if requires is None:
        return True
    if not isinstance(requires, str):
        return False
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    done = subprocess.run([python, "-S", "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=False, timeout=60)
    try:
        return done.returncode == 0 and SpecifierSet(requires).contains(done.stdout.strip(), prereleases=True)
    except InvalidSpecifier:
        return False


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
