"""Build the repository's environment from the base commit, outside the sandbox, with the network.

A virtual environment made with the sandbox's interpreter (the one a dropped uid runs), filled by uv, told the
user's pip configuration (pip.conf, `PIP_INDEX_URL`: a private index works), or by the gate's own pip where uv
is not beside the gate's interpreter (gate/environment/installers/). What is installed: the base project with
its `extras`, its dependency `groups` (as PEP 508 requirements: gate/environment/declarations.py) and the
`requirements` files, all as they are in an export of the base commit, and its `[build-system] requires` (the
project is built again in the sandbox: gate/environment/project.py). The project's own requirements come from
its metadata where the installer reads it without building the project (uv: pyproject.toml's `[project]`, or
the build backend's metadata hook); otherwise the project is installed, then uninstalled again. Either way only
its dependencies stay: nothing of the base's package can stand in for a module the head deleted. Nothing of the
head is built or installed here.

The venv is cached by the hash of the declaration files, the settings, the index configuration and the installer
(cache.digest); it is built in a temporary directory beside its final place and renamed there when complete,
under a lock. Which distributions were installed, and which of them the base declares itself (whose pytest
plugins load), is read from the environment afterwards, the same way whichever installer filled it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from gate import memo
from gate.environment import BuiltEnvironment, cache, declarations, installers, pip_config, testdeps
from gate.environment.declarations import Reader, key_files
from gate.environment.installers.command import Dependencies
from gate.environment.testdeps import canonical
from gate.errors import GateFailure
from gate.policy.model import Environment, changed
from gate.progress import QUIET, Progress
from gate.sandbox.detect import signature
from gate.suite.trust import FRAMEWORK_MODULES

if TYPE_CHECKING:
    from importlib import metadata


def prepare(spec: Environment, read: Reader, base_paths: Sequence[str], export_base: Callable[[Path], None],
            interpreter: str, where: Path, environ: Mapping[str, str], progress: Progress = QUIET
            ) -> BuiltEnvironment:
    """The environment `spec` asks for, built from the base commit (its files through `read`, their paths
    `base_paths`, the whole tree through `export_base(target)`), for `interpreter`, cached under `where`; what
    `spec` names the caller has checked the base holds (gate/sources/trust.py `check_against_base`). Raises
    GateFailure (exit 3) when the install fails, naming the requirement and with the installer's last lines.
    A build is a step of `progress`."""
    project = declarations.project_files(read) if spec.project else []
    files = key_files(spec, base_paths, declarations.named(read, spec))
    settings = pip_config.settings(environ, sys.prefix)
    installer = installers.find(environ, settings, where / "uv")
    key = cache.digest({"interpreter": _interpreter_id(interpreter), "project": bool(project),
                        "extras": sorted(spec.extras), "requirements": list(spec.requirements),
                        "groups": list(spec.groups), "files": {path: read(path) for path in files},
                        "installer": installer.name, "index": pip_config.key(settings), "recipe": RECIPE,
                        **({"legacy build": LEGACY_BUILD} if project and not declares_build(read("pyproject.toml"))
                           else {})})
    root = where / "envs" / key
    with cache.locked(where / "envs" / f"{key}.lock"):
        if (root / _DONE).is_file():
            cached = _load(key, root, cached=True)
            progress.say(f"gate: environment: {_packages(cached)}, cached")
            return cached
        with progress.step(f"environment: {_what(spec, bool(project)) or 'nothing declared'}") as step:
            progress.say(installer.describe())
            _build(spec, bool(project), export_base, interpreter, root, environ, installer)
            built = _load(key, root, cached=False)
            step.done(f"{_packages(built)} installed by {installer.name}")
    return built


def _packages(built: BuiltEnvironment) -> str:
    count = len(built.installed)
    return f"{count} package{'s' * (count != 1)}"


_DONE = "gate-installed.json"


def _interpreter_id(interpreter: str) -> str:
    """The interpreter's real path and version, as it prints it; remembered until a reboot while its file is the
    same (gate/memo.py: a run of it costs every verdict about 7 ms)."""
    real = os.path.realpath(interpreter)
    key = [real, signature(real)]
    kept = memo.recall("interpreter", key)
    if isinstance(kept, str):
        return kept
    done = subprocess.run([interpreter, "-S", "-c", "import sys; print(sys.version)"], capture_output=True,
                          text=True, check=False, timeout=60, env={"PATH": "/usr/bin:/bin"})
    found = f"{real} {done.stdout.strip()}"
    if done.returncode == 0:
        memo.remember("interpreter", key, found)
    return found


def _build(spec: Environment, project: bool, export_base: Callable[[Path], None], interpreter: str,
           root: Path, environ: Mapping[str, str], installer: installers.Installer) -> None:
    root.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".build-{root.name}-", dir=root.parent))
    source = Path(tempfile.mkdtemp(prefix="gate-base-"))
    try:
        export_base(source)
        installer.venv(interpreter, building, environ)
        python = str(building / "bin" / "python")
        left_out, asked = _without_the_project(source, spec.requirements)
        if project and asked:  # (what those lines asked of the project, its extras, it is installed with)
            spec = changed(spec, extras=tuple(dict.fromkeys((*spec.extras, *asked))))
        requested = _build_requirements(source) if project else []
        requested += _declared_requirements(spec, project, source)
        name = testdeps.project_name(_reader(source))
        own_requirements = _own_requirements(installer, python, source, spec, name, environ) if project else None
        if own_requirements is not None:  # (the project's dependencies alone: it is not built here)
            targets = [*own_requirements.args]
        else:
            targets = [f".[{','.join(spec.extras)}]" if spec.extras else "."] if project else []
        targets += requested
        for path in spec.requirements:
            targets += ["-r", path]
        installed: list[str] = []
        plugins: list[str] = []
        if targets:
            installer.install(python, targets, source, environ,
                              what=_what(spec, project, building=own_requirements is None))
            dists = _distributions(building)
            # The project itself, from its folder (with only its dependencies asked for, when one of them requires
            # it: hypothesis requires attrs; gate/environment/installers/uv.py points its name at the folder).
            own = [dist for dist in dists if _from(dist, source)]
            # A base that is the test framework (pluggy's repository) stays installed: pytest cannot start without
            # it, and the suite's process imports only the environment's framework, never the head's copy
            # (gate/suite/trust.py leaves it out of the run and blocks a change to it for a human).
            removed = [name for name in map(_name, own) if name not in FRAMEWORK_MODULES]
            installed = [f"{_name(dist)}=={dist.version}" for dist in dists if _name(dist) not in removed]
            declared = _declared(spec, [*requested, *(own_requirements.names if own_requirements else ())], own,
                                 source)  # (before the base project's metadata goes)
            if removed:
                installer.uninstall(python, removed, source, environ, what="the base project itself")
            plugins = _plugins(declared, building)
        (building / _DONE).write_text(json.dumps({"installed": sorted(installed), "plugins": plugins,
                                                  "left_out": left_out}))
        _readable(building)
        if root.exists():
            shutil.rmtree(root)
        building.rename(root)
    finally:
        shutil.rmtree(source, ignore_errors=True)
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)


def _without_the_project(source: Path, requirements: Sequence[str]) -> tuple[list[str], list[str]]:
    """Leave out of the base's requirements files (in its export `source`, and the files they include) the
    lines that install the project itself (`-e .`, `NAME==1.2`): the base's own tree is installed, and a pin
    of another version of it would stop every PR; one "file: line" each, for the report, and the extras those
    lines ask of the project (`-e .[socks]`), which its install takes."""
    read = _reader(source)
    name = testdeps.project_name(read)
    left_out: list[str] = []
    extras: list[str] = []
    todo, seen = list(requirements), set()
    while todo:
        path = todo.pop(0)
        file = (source / path).resolve()
        if path in seen or not file.is_file() or not file.is_relative_to(source.resolve()):
            continue
        seen.add(path)
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        kept = []
        for line in lines:
            included = re.match(r"^\s*(?:-r|--requirement)[\s=]*(\S+)", line)
            if included:
                todo.append((PurePosixPath(path).parent / included.group(1)).as_posix())
            if testdeps.names_project(line, name):
                left_out.append(f"{path}: {line.strip()}")
                extras += testdeps.project_extras(line)
            else:
                kept.append(line)
        if len(kept) != len(lines):
            file.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return left_out, extras


def _reader(source: Path) -> Reader:
    """A reader of the files of the base's export `source` (a byte that is not UTF-8 read as U+FFFD)."""
    def read(name: str) -> str | None:
        path = source / name
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    return read


def _declared_requirements(spec: Environment, project: bool, source: Path) -> list[str]:
    """The requirements the base's pyproject.toml declares beyond what installing the project brings: its
    dependency groups (`spec.groups`), and a Poetry project's own dependencies when it has no build to
    declare them (Poetry's non-package mode), each a PEP 508 requirement (gate/environment/declarations.py)."""
    def read(name: str) -> str | None:
        path = source / name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    text = read("pyproject.toml")
    found = list(declarations.group_requirements(read, spec.groups, source)) if spec.groups else []
    if spec.project and not project:
        found += declarations.poetry_requirements(text, spec.extras, source)
    return found


def _build_requirements(source: Path) -> list[str]:
    """The base's `[build-system] requires`: declarations like its dependencies, installed here so that the
    project builds in the sandbox (gate/environment/project.py), which has no network. A project that declares
    none (a bare setup.py: simplejson's) builds with setuptools, as pip builds it (PEP 518's default)."""
    text = (source / "pyproject.toml").read_text() if (source / "pyproject.toml").is_file() else None
    if not declares_build(text):
        return [LEGACY_BUILD]
    requires = tomllib.loads(text or "")["build-system"]["requires"]
    return [str(item) for item in requires] if isinstance(requires, list) else []


# What pip builds a project with when its pyproject.toml declares no build requirements (PEP 518).
LEGACY_BUILD = "setuptools>=40.8.0"
# How this module turns the same files into an environment, in the cache key: one more each time a change here
# makes them install something else (2: the extras a left-out line asks of the project), so that no environment
# built the old way is taken for one built the new way.
RECIPE = 2


def declares_build(text: str | None) -> bool:
    """Whether pyproject.toml's `text` declares its build requirements (`[build-system] requires`)."""
    try:
        system = tomllib.loads(text).get("build-system") if text else None
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(system, dict) and "requires" in system


def _own_requirements(installer: installers.Installer, python: str, source: Path, spec: Environment,
                      name: str | None, environ: Mapping[str, str]) -> Dependencies | None:
    """The base project's own requirements, when the installer can tell them without building the project (its
    build here served only to learn them: PyYAML's C extension took 8 s of a cold environment's 9,
    docs/benchmarks.md); only for a project whose name the gate knows (a dependency that requires the project
    gets its folder under that name), never for the test framework's own repository, which stays installed
    (`_build`)."""
    if name is None or canonical(name) in FRAMEWORK_MODULES:
        return None
    return installer.dependencies(python, source, spec.extras, name, environ)


def _what(spec: Environment, project: bool, building: bool = True) -> str:
    parts = []
    if project:
        parts.append(("the base project" if building else "the base project's dependencies")
                     + (f" with extras [{','.join(spec.extras)}]" if spec.extras else ""))
    parts += [f"dependency group {name}" for name in spec.groups]
    parts += [f"requirements file {path}" for path in spec.requirements]
    return " and ".join(parts)


def _distributions(venv: Path) -> list[metadata.Distribution]:
    """The distributions installed in the virtual environment `venv`."""
    from importlib import metadata  # (only for a build: about 10 ms of every verdict's start otherwise)

    sites = [str(path) for path in sorted(venv.glob("lib/python*/site-packages"))]
    return [dist for dist in metadata.distributions(path=sites) if dist.metadata["Name"]]


def _name(dist: metadata.Distribution) -> str:
    return canonical(dist.metadata["Name"] or "")


def _from(dist: metadata.Distribution, source: Path) -> bool:
    """Whether `dist` was installed from the folder `source` (its PEP 610 direct_url.json: pip and uv write it)."""
    try:
        origin = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return False
    return isinstance(origin, dict) and "dir_info" in origin and _same_dir(str(origin.get("url", "")), source)


def _declared(spec: Environment, requested: Sequence[str], own: Sequence[metadata.Distribution], source: Path
              ) -> set[str]:
    """The distributions the base declares itself (not what they pull in): the base project's own requirements
    with the extras asked for, its build requirements and dependency groups (`requested`), and the lines of
    its requirements files."""
    from packaging.requirements import InvalidRequirement, Requirement

    found: set[str] = set()
    for line in requested:
        with contextlib.suppress(InvalidRequirement):
            found.add(canonical(Requirement(line).name))
    for path in spec.requirements:
        found |= requirement_names(source / path, source)
    extras = [*spec.extras, ""]
    for dist in own:
        found.add(_name(dist))
        for line in dist.requires or ():
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra}) for extra in extras):
                found.add(canonical(requirement.name))
    return found


_EGG = re.compile(r"#(?:.*&)?egg=([A-Za-z0-9][A-Za-z0-9._-]*)")


def requirement_names(path: Path, root: Path, seen: frozenset[Path] = frozenset()) -> set[str]:
    """The names of the distributions the requirements file `path` asks for, as pip reads its lines: comments
    and options left out (constraint files too), `-r FILE` followed (within `root`), a line's `--hash` and other
    options after its requirement dropped, a URL or path named by its `#egg=` or wheel file name. A line that
    names nothing here (a bare path to a project) adds nothing."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    real = path.resolve()
    if real in seen or not real.is_relative_to(root.resolve()) or not real.is_file():
        return set()
    found: set[str] = set()
    for line in declarations.requirement_lines_of(real.read_text(encoding="utf-8", errors="replace")):
        if line.startswith("-"):
            option, _, value = re.sub(r"^(-[a-z]|--[a-z-]+)=", r"\1 ", line).partition(" ")
            value = value.strip()
            if option in ("-r", "--requirement"):
                found |= requirement_names(real.parent / value, root, seen | {real})
            elif option in ("-e", "--editable"):
                found.update(canonical(name) for name in _EGG.findall(value))
            continue
        line = re.split(r"\s--?[a-z]", f" {line}")[0].strip() if " -" in line else line
        try:
            found.add(canonical(Requirement(line).name))
            continue
        except InvalidRequirement:
            pass
        egg = _EGG.findall(line)
        if egg:
            found.add(canonical(egg[-1]))
        elif line.endswith(".whl"):
            with contextlib.suppress(InvalidWheelFilename):
                found.add(canonical(parse_wheel_filename(line.rsplit("/", 1)[-1])[0]))
    return found


def _plugins(declared: set[str], venv: Path) -> list[str]:
    """The pytest plugins ("NAME=MODULE": their `pytest11` entry points) of the installed distributions the
    base declares: what pytest's autoload would load in the project's CI, less what only a dependency brings."""
    from importlib import metadata

    sites = [str(path) for path in sorted(venv.glob("lib/python*/site-packages"))]
    found = {f"{entry.name}={entry.module}" for dist in metadata.distributions(path=sites)
             if canonical(dist.metadata["Name"] or "") in declared
             for entry in dist.entry_points.select(group="pytest11")}
    return sorted(found)


def _same_dir(url: str, source: Path) -> bool:
    return url.removeprefix("file://").rstrip("/") == str(source.resolve()).rstrip("/")


def _readable(root: Path) -> None:
    """Let any uid read the environment (a run's dropped uid must import from it; none may write it)."""
    for parent, _, files in os.walk(root):
        os.chmod(parent, 0o755)
        for name in files:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode & 0o755 | 0o444)


def _load(key: str, root: Path, cached: bool) -> BuiltEnvironment:
    done = json.loads((root / _DONE).read_text())
    sites = tuple(str(path) for path in sorted(root.glob("lib/python*/site-packages")))
    return BuiltEnvironment(key=key, root=root, site_packages=sites, installed=tuple(done["installed"]),
                            cached=cached, plugins=tuple(done.get("plugins", ())),
                            left_out=tuple(done.get("left_out", ())))


def gate_pytest(where: Path) -> str:
    """A directory holding the gate's own copy of pytest and what it needs (its installed files, copied once
    into the cache): the suite's runner when the repository's environment has no pytest. Offline: nothing is
    downloaded."""
    version = _installed_version("pytest")
    if version is None:
        raise GateFailure("the repository's environment has no pytest and neither has the gate: add pytest to "
                          "the project's test extra (environment.extras) or install pytest beside the gate")
    target = where / f"gate-pytest-{version}-py{sys.version_info[0]}{sys.version_info[1]}"
    with cache.locked(where / f"{target.name}.lock"):
        if (target / _DONE).is_file():
            return str(target)
        building = Path(tempfile.mkdtemp(prefix=f".build-{target.name}-", dir=where))
        try:
            from importlib import metadata  # (once, for the copy)

            names = _closure("pytest")
            for name in names:
                dist = metadata.distribution(name)
                for file in dist.files or ():
                    origin = Path(str(dist.locate_file(file)))
                    if ".." in file.parts or "__pycache__" in file.parts or not origin.is_file():
                        continue
                    dest = building / file
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(origin, dest)  # (its time too: the bytecode of the origin then fits the copy)
                    if dest.suffix == ".py":
                        _bytecode(origin, dest, target / file)
            (building / _DONE).write_text(json.dumps({"installed": sorted(names)}))
            _readable(building)
            building.rename(target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(building)
    return str(target)


def _installed_version(name: str) -> str | None:
    """The version of the distribution `name` installed beside the gate, or None: read from the name of its
    `.dist-info` folder beside its package, as installers write it, when there is one; else from its metadata
    (importlib.metadata, whose import costs a warm verdict about 10 ms)."""
    spec = importlib.util.find_spec(name)
    places = list(spec.submodule_search_locations or ()) if spec is not None else []
    if len(places) == 1:
        found = list(Path(places[0]).parent.glob(f"{name}-*.dist-info"))
        if len(found) == 1:
            return found[0].name.removeprefix(f"{name}-").removesuffix(".dist-info")
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _bytecode(origin: Path, copy: Path, named: Path) -> None:
    """The bytecode of `copy` (of `origin`, as it will be `named`), for the runs that see it read-only and would
    each compile pytest again (about 0.4 s of CPU a process): the origin's own, as the gate's installation
    compiled it, when it is there and fits the origin (the copy has its time and size; the import system names
    the code after the file it loads it for); else compiled here (about 1 s for pytest and Pygments together,
    against a few milliseconds for the copies)."""
    cached = importlib.util.cache_from_source(str(copy))
    try:
        data = Path(importlib.util.cache_from_source(str(origin))).read_bytes()
    except OSError:
        data = b""
    stat = origin.stat()
    if len(data) > 16 and data[:4] == importlib.util.MAGIC_NUMBER and data[4:8] == bytes(4) and \
            int.from_bytes(data[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF and \
            int.from_bytes(data[12:16], "little") == stat.st_size & 0xFFFFFFFF:  # (a timestamp pyc of it)
        Path(cached).parent.mkdir(exist_ok=True)
        Path(cached).write_bytes(data)
        return
    py_compile.compile(str(copy), cfile=cached, dfile=str(named), doraise=False, quiet=2)


def _closure(name: str) -> list[str]:
    """`name` and the distributions it requires here (markers evaluated for this interpreter), by name."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: dict[str, None] = {}
    todo = [name]
    while todo:
        current = canonical(todo.pop())
        if current in seen:
            continue
        seen[current] = None
        for line in metadata.requires(current) or ():
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(seen)
