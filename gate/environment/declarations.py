"""Which files declare a repository's dependencies, what they declare, and what a change to them changes.

The environment is built from these files as they are at the base commit; a change that edits them is scored
with the base's environment all the same, and is blocked for a human (or noted, with
`environment.dependency_changes: note`), with one line per file naming what changed. The dependency groups of
a pyproject.toml (PEP 735 `[dependency-groups]`, Poetry's groups and dev-dependencies) and a Poetry project's
own dependencies become PEP 508 requirements here (`group_requirements`, `poetry_requirements`).
"""

from __future__ import annotations

import configparser
import json
import logging
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from gate.environment.testdeps import DEV_FILES, TEST_FILES, TEST_NAMES, TESTS_REQUIRE, canonical, setup_cfg_extras
from gate.errors import BadInput
from gate.policy.model import Environment

PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
# Lock files and other declarations some tool installs from (any depth: monorepos keep several).
LOCK_FILES = frozenset({"poetry.lock", "uv.lock", "pdm.lock", "Pipfile", "Pipfile.lock", "pylock.toml",
                        "constraints.txt"})

Reader = Callable[[str], str | None]


class Named(msgspec.Struct, frozen=True):
    """What the declarations name as part of themselves (`named`): files and whole folders."""

    files: frozenset[str] = frozenset()
    folders: frozenset[str] = frozenset()

    def holds(self, path: str) -> bool:
        return path in self.files or any(path == folder or path.startswith(f"{folder}/") for folder in self.folders)

    def __or__(self, other: Named) -> Named:
        return Named(self.files | other.files, self.folders | other.folders)


# A requirements line that includes another file (`-r`, `-c`: relative to that file), names a folder of wheels
# (`-f`), or installs a local project or archive (`-e ./tools/x[test]`, `./vendor/x-1.0.tar.gz ; markers`: relative
# to the folder the installer runs in, the tree's root, as pip and uv resolve them).
_INCLUDE = re.compile(r"^(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s*)(\S+)")
_WHEELS = re.compile(r"^(?:-f|--find-links)(?:\s*=\s*|\s*)(\S+)")
_LOCAL = re.compile(r"^(?:(?:-e|--editable)(?:\s*=\s*|\s+))?(\.{1,2}/[^\s\[;]*|[\w.-]+/[\w./-]*)")


def named(read: Reader, spec: Environment) -> Named:
    """The files of a tree (through `read`) that its declarations make part of the environment's build, beyond
    the declaration files themselves (`is_declaration`): what the requirements files the environment installs
    include (`-r`, `-c`, followed) and the local projects they install (their folders: a build runs their code),
    the files setuptools' `[tool.setuptools.dynamic]` or Hatch's requirements_txt hook read the project's
    requirements from (`file:` of setup.cfg's `[options]` too), and an in-tree build backend
    (`[build-system] backend-path`: its folder, or its module's file and package at the root). Read from
    the base, they are the environment's cache key; from the base and the head, what a change to them is."""
    doc = _toml(read("pyproject.toml"))
    build = _table(doc, "build-system")
    tool = _table(doc, "tool")
    files: list[str] = []
    dynamic = _table(_table(tool, "setuptools"), "dynamic")
    for value in (dynamic.get("dependencies"), *_table(dynamic, "optional-dependencies").values()):
        listed = value.get("file") if isinstance(value, dict) else None  # `{file = "a.txt"}` or a list of them
        files += [listed] if isinstance(listed, str) else _strings(listed)
    hook = _table(_table(_table(_table(tool, "hatch"), "metadata"), "hooks"), "requirements_txt")
    files += _strings(hook.get("files"))
    files += [path for found in _table(hook, "optional-dependencies").values() for path in _strings(found)]
    files += _setup_cfg_files(read("setup.cfg"))
    folders: list[str] = []
    backend = build.get("build-backend")
    for folder in _strings(build.get("backend-path")):
        clean = _inside(folder)
        if clean == "." and isinstance(backend, str):  # (the backend's module at the root: its file, its package)
            top = backend.split(":")[0].split(".")[0]
            files.append(f"{top}.py")
            folders.append(top)
        elif clean is not None and clean != ".":
            folders.append(clean)
    todo = [*spec.requirements, *(path for path in ROOT_REQUIREMENTS if read(path) is not None), *files]
    seen: set[str] = set()
    while todo:
        path = _inside(todo.pop(0))
        if path is None or path in seen:
            continue
        seen.add(path)
        for line in requirement_lines_of(read(path) or ""):
            included, local = _INCLUDE.match(line), _WHEELS.match(line) or _LOCAL.match(line)
            if included:
                todo.append(posixpath.join(posixpath.dirname(path), included.group(1)))
            elif local and (project := _inside(local.group(1))) not in (None, "."):
                folders.append(project)  # (a file too: `holds` takes the path itself)
    return Named(frozenset(seen), frozenset(folders))


def requirement_lines_of(text: str) -> list[str]:
    """A requirements file's lines as pip reads them: continuations joined, comments gone."""
    joined = re.sub(r"\\\n", " ", text)
    return [line for raw in joined.splitlines() if (line := re.sub(r"(^|\s)#.*$", "", raw).strip())]


def _setup_cfg_files(text: str | None) -> list[str]:
    """The files setup.cfg's `install_requires = file: a.txt, b.txt` (and an extra's) read."""
    if text is None:
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    values = [parser.get("options", "install_requires", fallback=""),
              *(parser.get("options.extras_require", key) for key in _options(parser, "options.extras_require"))]
    return [path.strip() for value in values if value.strip().startswith("file:")
            for path in value.strip().removeprefix("file:").split(",") if path.strip()]


def _inside(path: str) -> str | None:
    """`path` as git names it when it stays inside the tree ("." for its root), else None."""
    clean = posixpath.normpath(path.strip())
    return None if clean.startswith(("/", "../")) or clean == ".." else clean


def is_declaration(path: str, spec: Environment, also: Named = Named()) -> bool:
    """Whether the file at `path` (as git names it) declares dependencies the environment is built from, or
    that a dependency tool reads, or is part of one (`also`: what `named` found)."""
    name = PurePosixPath(path).name
    tools = {group.partition(":")[0] for group in spec.groups if ":" in group}
    return (path in PROJECT_FILES or path in spec.requirements or name in LOCK_FILES or also.holds(path)
            or ("tox" in tools and path in ("tox.ini", "tox.toml")) or ("hatch" in tools and path == "hatch.toml")
            or (name.startswith("requirements") and name.endswith((".txt", ".in")))
            or (PurePosixPath(path).parent.name == "requirements" and name.endswith((".txt", ".in"))))


# The requirements files at the root that the default environment installs when the base has them.
ROOT_REQUIREMENTS = ("requirements.txt",)
# Where a project keeps its test dependencies, by the names `gate init` (gate/environment/testdeps.py) and
# the default environment look for.
TEST_EXTRAS = TEST_NAMES
TEST_REQUIREMENTS = (*TEST_FILES, *DEV_FILES)
TEST_GROUPS = ("test", "tests", "dev")


def declared(read: Reader) -> Environment | None:
    """What the default environment (no `environment:` key, or `{}`) builds from the base (its files through
    `read`): the project's dependencies when pyproject.toml, setup.cfg or setup.py declares some, a root
    requirements.txt, and the dependency group `test_group` names; None when the base declares nothing (the
    standard library is then all a run needs, and no environment is built)."""
    requirements = tuple(path for path in ROOT_REQUIREMENTS if (read(path) or "").strip())
    # A project a build installs is installed as its CI does (`pip install -e .`) even with no dependency: its
    # build requirements, then its build in the sandbox (gate/environment/project.py), which may write files.
    project = _project_declares(read) or buildable(read)
    group = test_group(read)
    if not project and not requirements and not group:
        return None
    return Environment(project=project, requirements=requirements, groups=(group,) if group else ())


def test_group(read: Reader) -> str | None:
    """The base's dependency group for tests, when that is the one place its test dependencies live: the first
    of TEST_GROUPS its pyproject.toml declares, when it has no test extra (TEST_EXTRAS) and no test
    requirements file (TEST_REQUIREMENTS), which `gate init` names instead. A group that does not resolve is
    left out (a policy naming it is told why: `check`)."""
    doc = _toml(read("pyproject.toml"))
    declared_groups = groups_declared(doc)
    found = next((name for name in TEST_GROUPS if name in declared_groups), None)
    if found is None or any(read(path) is not None for path in TEST_REQUIREMENTS) \
            or set(TEST_EXTRAS) & set(_extras(doc, read("setup.cfg"))):
        return None
    try:
        group_requirements(read, [found])
    except BadInput:
        return None
    return found


def _extras(doc: dict[str, Any], setup_cfg: str | None) -> list[str]:
    """The optional-dependency groups (extras) the project files declare, by name."""
    project = doc.get("project")
    extras = project.get("optional-dependencies") if isinstance(project, dict) else None
    poetry = _table(_table(doc, "tool"), "poetry").get("extras")
    names = [*(extras if isinstance(extras, dict) else ()), *(poetry if isinstance(poetry, dict) else ())]
    return [*names, *setup_cfg_extras(setup_cfg)]


def groups_declared(doc: dict[str, Any]) -> tuple[str, ...]:
    """The dependency groups a parsed pyproject.toml declares, by normalised name: PEP 735's
    `[dependency-groups]`, Poetry's `[tool.poetry.group.NAME]`, `dev` for Poetry's older
    `[tool.poetry.dev-dependencies]`, and PDM's `[tool.pdm.dev-dependencies]` groups."""
    poetry = _table(_table(doc, "tool"), "poetry")
    names = [*_table(doc, "dependency-groups"), *_table(poetry, "group"),
             *(("dev",) if isinstance(poetry.get("dev-dependencies"), dict) else ()), *_pdm_groups(doc)]
    return tuple(dict.fromkeys(canonical(name) for name in names))


def _pdm_groups(doc: dict[str, Any]) -> dict[str, Any]:
    """PDM's dev dependency groups (`[tool.pdm.dev-dependencies]`: name -> requirement lines)."""
    return _table(_table(_table(doc, "tool"), "pdm"), "dev-dependencies")


def check(spec: Environment, read: Reader) -> None:
    """BadInput (exit 2), naming the key, when `spec` asks for what the base (its files through `read`) does
    not declare: extras without a project, a requirements file it lacks, a dependency group it lacks or that
    does not resolve."""
    if spec.extras and not (project_files(read) if spec.project else []):
        raise BadInput("the base commit has no project (pyproject.toml with [project], setup.py or setup.cfg) "
                       "to take extras from", key="environment.extras")
    for index, path in enumerate(spec.requirements):
        if read(path) is None:
            raise BadInput(f"no file {path} in the base commit", key=f"environment.requirements[{index}]")
    if spec.groups:
        group_requirements(read, spec.groups)


def project_files(read: Reader) -> list[str]:
    """The base's project files that make it installable (a pyproject.toml without [project] or
    [build-system] is only tool configuration, or a Poetry project's declarations: `poetry_requirements`)."""
    found = []
    pyproject = read("pyproject.toml")
    if pyproject is not None:
        try:
            doc = tomllib.loads(pyproject)
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(f"pyproject.toml in the base commit does not parse: {exc}",
                           key="environment.project") from None
        if "project" in doc or "build-system" in doc:
            found.append("pyproject.toml")
    found += [path for path in ("setup.py", "setup.cfg") if read(path) is not None]
    return found


def group_requirements(read: Reader, names: Sequence[str], root: Path | None = None) -> tuple[str, ...]:
    """The PEP 508 requirements of the dependency groups `names` of the base (its files through `read`), in
    order: a PEP 735 group (its `{include-group = ...}` entries resolved by the `dependency-groups` library,
    pip's own resolver), a Poetry group (its `include-groups` too) or, for `dev`, Poetry's dev-dependencies
    (their constraints, `^1.2`, `~1.2`, `*`, tables with `version`, `extras`, `markers`, `python`, converted
    by poetry-core, Poetry's own), a PDM dev-dependencies group (less its editable lines: the project itself),
    the inline requirements of a tox or Hatch environment (`tox:NAME`, `hatch:NAME`), or setuptools'
    `tests_require` (`setuptools:tests_require`: gate/environment/testdeps.py). `root` is where a Poetry `path`
    dependency is relative to. Raises BadInput naming `environment.groups[i]` for a group the base lacks or that
    does not resolve."""
    from gate.environment import testdeps

    text = read("pyproject.toml")
    if text is None and not all(testdeps.is_tool_group(name) for name in names):
        raise BadInput("the base commit has no pyproject.toml to take dependency groups from",
                       key="environment.groups")
    try:
        doc = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"pyproject.toml in the base commit does not parse: {exc}", key="environment.groups") from None
    declared_groups = groups_declared(doc)
    pep735 = _table(doc, "dependency-groups")
    pep735_names = {canonical(name) for name in pep735}
    pdm = {canonical(name): value for name, value in _pdm_groups(doc).items()}
    found: list[str] = []
    for index, name in enumerate(names):
        where = f"environment.groups[{index}]"
        if testdeps.is_tool_group(name):
            env = testdeps.tool_env(name, read)
            if env is None:
                raise BadInput(_no_tool_env(name), key=where)
            found += env.packages
            continue
        if canonical(name) not in declared_groups:
            listed = ", ".join(declared_groups) or "none"
            raise BadInput(f"no dependency group {name!r} in the base commit's pyproject.toml ([dependency-groups], "
                           f"[tool.poetry.group.{name}], [tool.pdm.dev-dependencies] or, for dev, "
                           "[tool.poetry.dev-dependencies]; tox:NAME and hatch:NAME name a tox or Hatch "
                           f"environment, setuptools:{TESTS_REQUIRE} setuptools' {TESTS_REQUIRE}; "
                           "it declares: "
                           f"{listed})", key=where)
        try:
            if canonical(name) in pep735_names:
                from dependency_groups import resolve

                found += resolve(pep735, name)
            found += _poetry_group(doc, canonical(name), root, ())
            found += [str(line) for line in pdm.get(canonical(name)) or ()
                      if isinstance(line, str) and not line.lstrip().startswith("-e")]
        except (ValueError, TypeError, LookupError) as exc:  # (InvalidRequirement is a ValueError)
            raise BadInput(f"the dependency group {name!r} of the base commit's pyproject.toml does not resolve: "
                           f"{exc}", key=where) from None
    return tuple(dict.fromkeys(found))


def poetry_requirements(text: str | None, extras: Sequence[str] = (), root: Path | None = None) -> tuple[str, ...]:
    """A Poetry project's own dependencies (`[tool.poetry.dependencies]`, less `python`, its optional ones only
    for the `extras` asked for) as PEP 508 requirements: what its build would declare, for a project that has
    no build (no [build-system]: Poetry's non-package mode)."""
    poetry = _table(_table(_toml(text), "tool"), "poetry")
    wanted = {canonical(name) for extra in extras
              for name in (_table(poetry, "extras").get(extra) or ()) if isinstance(name, str)}
    dependencies = {name: value for name, value in _table(poetry, "dependencies").items()
                    if not (isinstance(value, dict) and value.get("optional")) or canonical(name) in wanted}
    try:
        return _poetry_pep508(dependencies, root)
    except (ValueError, TypeError) as exc:
        raise BadInput(f"[tool.poetry.dependencies] of the base commit's pyproject.toml does not convert: {exc}",
                       key="environment.project") from None


def _poetry_group(doc: dict[str, Any], name: str, root: Path | None, seen: tuple[str, ...]) -> list[str]:
    """The requirements of the Poetry group `name` (normalised), with the groups it includes."""
    if name in seen:
        raise ValueError(f"the Poetry group {name!r} includes itself ({' -> '.join((*seen, name))})")
    poetry = _table(_table(doc, "tool"), "poetry")
    groups = {canonical(key): value for key, value in _table(poetry, "group").items() if isinstance(value, dict)}
    group = groups.get(name, {})
    found = [requirement for included in group.get("include-groups", ()) or ()
             for requirement in _poetry_group(doc, canonical(str(included)), root, (*seen, name))]
    found += _poetry_pep508(_table(group, "dependencies"), root)
    if name == "dev":
        found += _poetry_pep508(_table(poetry, "dev-dependencies"), root)
    return found


def _poetry_pep508(dependencies: Mapping[str, Any], root: Path | None) -> tuple[str, ...]:
    """Poetry's dependency table (name -> a constraint, a table, or a list of them for several Pythons) as
    PEP 508 requirements, by poetry-core's own conversion (`python` is the interpreter, not a package)."""
    if not dependencies:
        return ()
    from poetry.core.factory import Factory  # (poetry-core: only for a Poetry project)

    logging.getLogger("poetry.core").setLevel(logging.ERROR)  # ("Path ... does not exist": the export has it)
    found = []
    for name, constraints in dependencies.items():
        if name.lower() == "python":
            continue
        for constraint in constraints if isinstance(constraints, list) else [constraints]:
            found.append(Factory.create_dependency(name, constraint, root_dir=root).to_pep_508())
    return tuple(found)


def _toml(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _table(doc: Any, name: str) -> dict[str, Any]:
    value = doc.get(name) if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else {}


def buildable(read: Reader) -> bool:
    """Whether a tree (its files through `read`) is a project a build installs: a pyproject.toml with
    [build-system], or a setup.py."""
    return read("setup.py") is not None or "[build-system]" in (read("pyproject.toml") or "")


def _project_declares(read: Reader) -> bool:
    """Whether the base's project files name any dependency (or leave them to the build: `dynamic`)."""
    text = read("pyproject.toml")
    if text is not None:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            doc = {}
        project = doc.get("project", {})
        poetry = doc.get("tool", {}).get("poetry", {}).get("dependencies", {})
        dynamic = project.get("dynamic", ()) if isinstance(project, dict) else ()
        if (isinstance(project, dict) and (project.get("dependencies") or "dependencies" in dynamic)) \
                or (isinstance(poetry, dict) and set(poetry) - {"python"}):
            return True
    cfg = read("setup.cfg")
    if cfg is not None:
        parser = configparser.ConfigParser()
        try:
            parser.read_string(cfg)
            if _lines(parser.get("options", "install_requires", fallback="")):
                return True
        except configparser.Error:
            pass
    return "install_requires" in (read("setup.py") or "")


def key_files(spec: Environment, present: Iterable[str], also: Named = Named()) -> list[str]:
    """The files of the base whose text goes into the environment's cache key, among the paths `present`
    (`also`: what the base's declarations name, `named`)."""
    return sorted(path for path in present if is_declaration(path, spec, also))


def what_changed(path: str, old: str | None, new: str | None) -> str:
    """One line naming what a change does to the declaration file `path` (`old`/`new`: its texts at the
    base and head; None where it does not exist)."""
    if old is None:
        return f"adds {path}"
    if new is None:
        return f"deletes {path}"
    if path.endswith("pyproject.toml"):
        parts = _toml_changes(old, new)
        if parts is not None:
            return f"edits {path}: " + "; ".join(parts) if parts else ""
    elif path.endswith("setup.cfg"):
        parts = _cfg_changes(old, new)
        if parts is not None:
            return f"edits {path}: " + "; ".join(parts) if parts else ""
    elif path.endswith((".txt", ".in")):
        added, removed = _lines(new) - _lines(old), _lines(old) - _lines(new)
        if not added and not removed:
            return ""
        return f"edits {path}: " + _listing(added, removed)
    return f"edits {path}"


def _toml_changes(old: str, new: str) -> list[str] | None:
    """The dependency keys that differ between two pyproject.toml texts, or None when one does not parse."""
    try:
        before, after = tomllib.loads(old), tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        return None
    found = []
    for key, a, b in _toml_keys(before, after):
        if a != b:
            found.append(f"{key} " + _listing(set(b) - set(a), set(a) - set(b)))
    return found


def _toml_keys(before: dict[str, Any], after: dict[str, Any]) -> Iterable[tuple[str, list[str], list[str]]]:
    def get(doc: dict[str, Any], *keys: str) -> Any:
        for key in keys:
            doc = doc.get(key, {}) if isinstance(doc, dict) else {}
        return doc

    yield ("[project] dependencies", _strings(get(before, "project", "dependencies")),
           _strings(get(after, "project", "dependencies")))
    old_extras, new_extras = get(before, "project", "optional-dependencies"), \
        get(after, "project", "optional-dependencies")
    for extra in sorted({*old_extras, *new_extras} if isinstance(old_extras, dict) and isinstance(new_extras, dict)
                        else ()):
        yield (f"extra [{extra}]", _strings(old_extras.get(extra)), _strings(new_extras.get(extra)))
    yield ("[build-system] requires", _strings(get(before, "build-system", "requires")),
           _strings(get(after, "build-system", "requires")))
    # The code a build of the environment runs, and where the project's requirements are read from.
    old_backend, new_backend = ([found] if isinstance(found := get(doc, "build-system", "build-backend"), str) else []
                                for doc in (before, after))
    yield ("[build-system] build-backend", old_backend, new_backend)
    yield ("[build-system] backend-path", _strings(get(before, "build-system", "backend-path")),
           _strings(get(after, "build-system", "backend-path")))
    for keys in (("tool", "setuptools", "dynamic"), ("tool", "hatch", "metadata", "hooks")):
        yield (f"[{'.'.join(keys)}]", _entries(get(before, *keys)), _entries(get(after, *keys)))
    yield ("[project] dynamic", _strings(get(before, "project", "dynamic")),
           _strings(get(after, "project", "dynamic")))
    old_groups, new_groups = _table(before, "dependency-groups"), _table(after, "dependency-groups")
    for group in sorted({*old_groups, *new_groups}):
        yield (f"[dependency-groups] {group}", _entries(old_groups.get(group)), _entries(new_groups.get(group)))
    old_pdm, new_pdm = _pdm_groups(before), _pdm_groups(after)
    for group in sorted({*old_pdm, *new_pdm}):
        yield (f"[tool.pdm.dev-dependencies] {group}", _entries(old_pdm.get(group)), _entries(new_pdm.get(group)))
    old_poetry, new_poetry = _table(_table(before, "tool"), "poetry"), _table(_table(after, "tool"), "poetry")
    for table in ("dependencies", "dev-dependencies", "extras"):
        yield (f"[tool.poetry.{table}]", _entries(old_poetry.get(table)), _entries(new_poetry.get(table)))
    old_poetry_groups, new_poetry_groups = _table(old_poetry, "group"), _table(new_poetry, "group")
    for group in sorted({*old_poetry_groups, *new_poetry_groups}):
        a, b = _table(old_poetry_groups, group), _table(new_poetry_groups, group)
        yield (f"[tool.poetry.group.{group}.dependencies]", _entries(a.get("dependencies")),
               _entries(b.get("dependencies")))
        yield (f"[tool.poetry.group.{group}] include-groups", _strings(a.get("include-groups")),
               _strings(b.get("include-groups")))


def _cfg_changes(old: str, new: str) -> list[str] | None:
    """The requirement options that differ between two setup.cfg texts, or None when one does not parse."""
    try:
        before, after = configparser.ConfigParser(), configparser.ConfigParser()
        before.read_string(old)
        after.read_string(new)
    except configparser.Error:
        return None
    found = []
    options = [("options", key) for key in ("install_requires", "setup_requires", "tests_require")]
    extras = {*_options(before, "options.extras_require"), *_options(after, "options.extras_require")}
    options += [("options.extras_require", key) for key in sorted(extras)]
    for section, key in options:
        try:  # (a value is read as setuptools reads it: a lone `%` does not read)
            a = _lines(before.get(section, key, fallback=""))
            b = _lines(after.get(section, key, fallback=""))
        except configparser.Error:
            return None
        if a != b:
            found.append(f"[{section}] {key} " + _listing(b - a, a - b))
    return found


def _no_tool_env(group: str) -> str:
    """Why the tool environment a group names (`tox:NAME`, `hatch:NAME`, `setuptools:tests_require`) is not
    there."""
    tool, _, name = group.partition(":")
    if tool == "setuptools":  # (the schema's only setuptools group: setuptools:tests_require)
        return (f"no {TESTS_REQUIRE} in the base commit's setup.py (a list or string in its setup(...) call, read "
                "without running it) or setup.cfg [options]")
    files = "tox.ini, tox.toml or [tool.tox]" if tool == "tox" else "hatch.toml or [tool.hatch.envs]"
    return f"no {tool} environment {name!r} in the base commit ({files})"


def _options(parser: configparser.ConfigParser, section: str) -> list[str]:
    return list(parser[section]) if parser.has_section(section) else []


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _entries(value: Any) -> list[str]:
    """A dependency list or table as one line per entry: a PEP 735 group's requirements and includes, a Poetry
    table's `name constraint` (a table's constraint as JSON)."""
    def shown(item: Any) -> str:
        return item if isinstance(item, str) else json.dumps(item, sort_keys=True, default=str)  # (TOML dates)

    if isinstance(value, dict):
        return [f"{name} {shown(item)}" for name, item in value.items()]
    return [shown(item) for item in value] if isinstance(value, list) else []


def _lines(text: str) -> set[str]:
    return {line.split("#")[0].strip() for line in text.splitlines()} - {""}


def _listing(added: set[str], removed: set[str]) -> str:
    parts = []
    if added:
        parts.append("adds " + ", ".join(sorted(added)[:5]) + (" ..." if len(added) > 5 else ""))
    if removed:
        parts.append("removes " + ", ".join(sorted(removed)[:5]) + (" ..." if len(removed) > 5 else ""))
    return " and ".join(parts) or "changes"
