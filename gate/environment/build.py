"""Build the repository's environment from the base commit, outside the sandbox, with the network.

A virtual environment made with the sandbox's interpreter (the one a dropped uid runs), filled by the gate's
own pip (`pip --python`), which honours the user's index configuration (pip.conf, `PIP_INDEX_URL`: a private
index works). What is installed: the base project with its `extras`, its dependency `groups` (as PEP 508
requirements: gate/environment/declarations.py) and the `requirements` files, all as they are in an export of
the base commit, and its `[build-system] requires` (the project is built again in the sandbox:
gate/environment/project.py). The project itself is then uninstalled again, leaving only its
dependencies: nothing of the base's package can stand in for a module the head deleted. Nothing of the head is
built or installed here.

The venv is cached by the hash of the declaration files and the settings (cache.digest); it is built in a
temporary directory beside its final place and renamed there when complete, under a lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

from gate.environment import BuiltEnvironment, cache, declarations, testdeps
from gate.environment.declarations import Reader, key_files
from gate.errors import GateFailure
from gate.policy.model import Environment
from gate.suite.trust import FRAMEWORK_MODULES

_PIP_TAIL = 15  # lines of pip's output a failure shows
_INSTALL_TIMEOUT_S = 1800
# pip's words for a requirement it could not satisfy.
_UNSATISFIED = re.compile(r"(?:No matching distribution found for|Could not find a version that satisfies the "
                          r"requirement|ResolutionImpossible.*?for|Failed to build|"
                          r"Cannot install) ([^\s(]+)")


def prepare(spec: Environment, read: Reader, base_paths: Sequence[str], export_base: Callable[[Path], None],
            interpreter: str, where: Path, environ: Mapping[str, str]) -> BuiltEnvironment:
    """The environment `spec` asks for, built from the base commit (its files through `read`, their paths
    `base_paths`, the whole tree through `export_base(target)`), for `interpreter`, cached under `where`.
    Raises BadInput (exit 2) for a policy naming what the base lacks, GateFailure (exit 3) when the install
    fails, naming the requirement and with pip's last lines."""
    declarations.check(spec, read)
    project = declarations.project_files(read) if spec.project else []
    files = key_files(spec, base_paths)
    key = cache.digest({"interpreter": _interpreter_id(interpreter), "project": bool(project),
                        "extras": sorted(spec.extras), "requirements": list(spec.requirements),
                        "groups": list(spec.groups), "files": {path: read(path) for path in files}}, environ)
    root = where / "envs" / key
    with cache.locked(where / "envs" / f"{key}.lock"):
        if (root / _DONE).is_file():
            return _load(key, root, cached=True)
        _build(spec, bool(project), export_base, interpreter, root, environ)
    return _load(key, root, cached=False)


_DONE = "gate-installed.json"


def _interpreter_id(interpreter: str) -> str:
    done = subprocess.run([interpreter, "-S", "-c", "import sys; print(sys.version)"], capture_output=True,
                          text=True, check=False, timeout=60, env={"PATH": "/usr/bin:/bin"})
    return f"{os.path.realpath(interpreter)} {done.stdout.strip()}"


def _build(spec: Environment, project: bool, export_base: Callable[[Path], None], interpreter: str,
           root: Path, environ: Mapping[str, str]) -> None:
    root.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".build-{root.name}-", dir=root.parent))
    source = Path(tempfile.mkdtemp(prefix="gate-base-"))
    try:
        export_base(source)
        venv = subprocess.run([interpreter, "-m", "venv", "--without-pip", str(building)], capture_output=True,
                              text=True, check=False, timeout=300, env={"PATH": "/usr/bin:/bin"})
        if venv.returncode != 0:
            raise GateFailure(f"could not make a virtual environment with {interpreter}: "
                              + _tail(venv.stdout + venv.stderr))
        python = str(building / "bin" / "python")
        left_out = _without_the_project(source, spec.requirements)
        targets = [f".[{','.join(spec.extras)}]" if spec.extras else "."] if project else []
        targets += _build_requirements(source) if project else []
        targets += _declared_requirements(spec, project, source)
        for path in spec.requirements:
            targets += ["-r", path]
        installed: list[str] = []
        plugins: list[str] = []
        if targets:
            report = building / "gate-report.json"
            _pip(python, ["install", "--report", str(report), *targets], source, environ,
                 what=_what(spec, project))
            done = json.loads(report.read_text())
            installed, own = _installed(done, source)
            report.unlink()
            if own:
                _pip(python, ["uninstall", "--yes", *own], source, environ, what="the base project itself")
            plugins = _plugins(_declared(done, source, spec.extras if project else ()), building)
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


def _without_the_project(source: Path, requirements: Sequence[str]) -> list[str]:
    """Leave out of the base's requirements files (in its export `source`, and the files they include) the
    lines that install the project itself (`-e .`, `NAME==1.2`): the base's own tree is installed, and a pin
    of another version of it would stop every PR; one "file: line" each, for the report."""
    def read(name: str) -> str | None:
        path = source / name
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    name = testdeps.project_name(read)
    left_out: list[str] = []
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
            else:
                kept.append(line)
        if len(kept) != len(lines):
            file.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return left_out


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
    project builds in the sandbox (gate/environment/project.py), which has no network."""
    path = source / "pyproject.toml"
    if not path.is_file():
        return []
    try:
        requires = tomllib.loads(path.read_text()).get("build-system", {}).get("requires", [])
    except tomllib.TOMLDecodeError:
        return []
    return [str(item) for item in requires] if isinstance(requires, list) else []


def _what(spec: Environment, project: bool) -> str:
    parts = []
    if project:
        parts.append("the base project" + (f" with extras [{','.join(spec.extras)}]" if spec.extras else ""))
    parts += [f"dependency group {name}" for name in spec.groups]
    parts += [f"requirements file {path}" for path in spec.requirements]
    return " and ".join(parts)


def _pip(python: str, args: list[str], cwd: Path, environ: Mapping[str, str], what: str) -> None:
    """Run the gate's pip against the venv's interpreter; GateFailure naming the requirement on failure."""
    command = [sys.executable, "-m", "pip", "--python", python, "--no-input", "--disable-pip-version-check",
               *args]
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False,
                              timeout=_INSTALL_TIMEOUT_S, env={**environ, "PIP_REQUIRE_VIRTUALENV": "0"})
    except subprocess.TimeoutExpired:
        raise GateFailure(f"installing {what} took over {_INSTALL_TIMEOUT_S} s") from None
    if done.returncode != 0:
        output = done.stdout + done.stderr
        found = _UNSATISFIED.findall(output)
        named = f" (requirement {found[-1].rstrip('.,;')})" if found else ""
        raise GateFailure(f"installing {what} from the base commit failed{named}; pip's last lines:\n"
                          + _tail(output))


def _tail(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return "\n".join(lines[-_PIP_TAIL:])


def _installed(report: dict[str, object], source: Path) -> tuple[list[str], list[str]]:
    """("name==version" for every distribution pip installed, the names of those built from the base's own
    directory), from pip's installation report."""
    everything, own = [], []
    items = report.get("install", [])
    for item in items if isinstance(items, list) else []:
        meta = item.get("metadata", {})
        name = _normalise(str(meta.get("name", "")))
        info = item.get("download_info", {})
        # A base that is the test framework (pluggy's repository) stays installed: pytest cannot start without
        # it, and the suite's process imports only the environment's framework, never the head's copy
        # (gate/suite/trust.py leaves it out of the run and blocks a change to it for a human).
        if "dir_info" in info and _same_dir(str(info.get("url", "")), source) and name not in FRAMEWORK_MODULES:
            own.append(name)
        else:
            everything.append(f"{name}=={meta.get('version', '')}")
    return everything, own


def _declared(report: dict[str, Any], source: Path, extras: Sequence[str]) -> set[str]:
    """The distributions the base declares itself (not what they pull in), from pip's installation report:
    the requirements files' lines, and the base project's own requirements with the `extras` the gate asked
    for. Those come from the gate's own request, not the report's `requested_extras`, which pip before 23.1
    (Debian 12's 23.0) leaves out: the plugins a test extra declares load with every pip."""
    from packaging.requirements import InvalidRequirement, Requirement

    found: set[str] = set()
    items = report.get("install", [])
    for item in items if isinstance(items, list) else []:
        if not item.get("requested"):
            continue
        meta = item.get("metadata", {})
        found.add(_normalise(str(meta.get("name", ""))))
        info = item.get("download_info", {})
        if not ("dir_info" in info and _same_dir(str(info.get("url", "")), source)):
            continue
        asked = [*extras, *(item.get("requested_extras") or []), ""]
        for line in meta.get("requires_dist", []) or []:
            try:
                requirement = Requirement(str(line))
            except InvalidRequirement:
                continue
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra}) for extra in asked):
                found.add(_normalise(requirement.name))
    return found


def _plugins(declared: set[str], venv: Path) -> list[str]:
    """The pytest plugins ("NAME=MODULE": their `pytest11` entry points) of the installed distributions the
    base declares: what pytest's autoload would load in the project's CI, less what only a dependency brings."""
    sites = [str(path) for path in sorted(venv.glob("lib/python*/site-packages"))]
    found = {f"{entry.name}={entry.module}" for dist in metadata.distributions(path=sites)
             if _normalise(dist.metadata["Name"] or "") in declared
             for entry in dist.entry_points.select(group="pytest11")}
    return sorted(found)


def _same_dir(url: str, source: Path) -> bool:
    return url.removeprefix("file://").rstrip("/") == str(source.resolve()).rstrip("/")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


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
    try:
        version = metadata.version("pytest")
    except metadata.PackageNotFoundError:
        raise GateFailure("the repository's environment has no pytest and neither has the gate: add pytest to "
                          "the project's test extra (environment.extras) or install pytest beside the gate"
                          ) from None
    target = where / f"gate-pytest-{version}-py{sys.version_info[0]}{sys.version_info[1]}"
    with cache.locked(where / f"{target.name}.lock"):
        if (target / _DONE).is_file():
            return str(target)
        building = Path(tempfile.mkdtemp(prefix=f".build-{target.name}-", dir=where))
        try:
            names = _closure("pytest")
            for name in names:
                dist = metadata.distribution(name)
                for file in dist.files or ():
                    origin = Path(str(dist.locate_file(file)))
                    if ".." in file.parts or "__pycache__" in file.parts or not origin.is_file():
                        continue
                    dest = building / file
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(origin, dest)
            (building / _DONE).write_text(json.dumps({"installed": sorted(names)}))
            _readable(building)
            building.rename(target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(building)
    return str(target)


def _closure(name: str) -> list[str]:
    """`name` and the distributions it requires here (markers evaluated for this interpreter), by name."""
    from packaging.requirements import Requirement

    seen: dict[str, None] = {}
    todo = [name]
    while todo:
        current = _normalise(todo.pop())
        if current in seen:
            continue
        seen[current] = None
        for line in metadata.requires(current) or ():
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(seen)
