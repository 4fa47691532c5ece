"""Which files declare a repository's dependencies, and what a change to them changes.

The environment is built from these files as they are at the base commit; a change that edits them is scored
with the base's environment all the same, and is blocked for a human (or noted, with
`environment.dependency_changes: note`), with one line per file naming what changed.
"""

from __future__ import annotations

import configparser
import tomllib
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import Any

from gate.policy.model import Environment

PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
# Lock files and other declarations some tool installs from (any depth: monorepos keep several).
LOCK_FILES = frozenset({"poetry.lock", "uv.lock", "pdm.lock", "Pipfile", "Pipfile.lock", "pylock.toml",
                        "constraints.txt"})

Reader = Callable[[str], str | None]


def is_declaration(path: str, spec: Environment) -> bool:
    """Whether the file at `path` (as git names it) declares dependencies the environment is built from, or
    that a dependency tool reads."""
    name = PurePosixPath(path).name
    return (path in PROJECT_FILES or path in spec.requirements or name in LOCK_FILES
            or (name.startswith("requirements") and name.endswith((".txt", ".in")))
            or (PurePosixPath(path).parent.name == "requirements" and name.endswith((".txt", ".in"))))


# The requirements files at the root that the default environment installs when the base has them.
ROOT_REQUIREMENTS = ("requirements.txt",)


def declared(read: Reader) -> Environment | None:
    """What the default environment (no `environment:` key, or `{}`) builds from the base (its files through
    `read`): the project's dependencies when pyproject.toml, setup.cfg or setup.py declares some, and a root
    requirements.txt; None when the base declares nothing (the standard library is then all a run needs, and
    no environment is built)."""
    requirements = tuple(path for path in ROOT_REQUIREMENTS if (read(path) or "").strip())
    # A project a build installs is installed as its CI does (`pip install -e .`) even with no dependency: its
    # build requirements, then its build in the sandbox (gate/environment/layer.py), which may write files.
    project = _project_declares(read) or buildable(read)
    if not project and not requirements:
        return None
    return Environment(project=project, requirements=requirements)


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
        except configparser.Error:
            pass
        else:
            if _lines(parser.get("options", "install_requires", fallback="")):
                return True
    return "install_requires" in (read("setup.py") or "")


def key_files(spec: Environment, present: Iterable[str]) -> list[str]:
    """The files of the base whose text goes into the environment's cache key, among the paths `present`."""
    return sorted(path for path in present if is_declaration(path, spec))


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
    yield ("[project] dynamic", _strings(get(before, "project", "dynamic")),
           _strings(get(after, "project", "dynamic")))


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
        a = _lines(before.get(section, key, fallback=""))
        b = _lines(after.get(section, key, fallback=""))
        if a != b:
            found.append(f"[{section}] {key} " + _listing(b - a, a - b))
    return found


def _options(parser: configparser.ConfigParser, section: str) -> list[str]:
    return list(parser[section]) if parser.has_section(section) else []


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _lines(text: str) -> set[str]:
    return {line.split("#")[0].strip() for line in text.splitlines()} - {""}


def _listing(added: set[str], removed: set[str]) -> str:
    parts = []
    if added:
        parts.append("adds " + ", ".join(sorted(added)[:5]) + (" ..." if len(added) > 5 else ""))
    if removed:
        parts.append("removes " + ", ".join(sorted(removed)[:5]) + (" ..." if len(removed) > 5 else ""))
    return " and ".join(parts) or "changes"
