"""What of the suite is the base's and what the head's: the trust rules of the repository's suite.

The suite's process runs the head's code with the base's tests, conftests and pytest configuration; anything
that decides what the tests check or how pytest runs them (the files under the test paths, a conftest.py or a
pytest configuration file anywhere, a module named like the framework or a distribution's metadata at the top
of an import root) comes from the base, and the head's version never runs (docs/repository.md). Every module
that places files where the suite's process can import them (the suite's trees, the build's layer, the
environment) asks here, and so does the framework check, which reads what of the head's runs there.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

# pytest's configuration files, wherever they are (pytest looks for one from the test paths upwards): the base's
# are used, the head's never.
# In the order pytest reads them in a folder (pytest 9 reads pytest.toml and .pytest.toml before all others).
PYTEST_CONFIG = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini",
                 "setup.cfg")
# Those of them other tools read too: a change to one is said, the base's pytest section being what ran.
SHARED_CONFIG = ("pyproject.toml", "tox.ini", "setup.cfg")
# Modules named like the test framework (pytest, its internals and what it imports); at the top of the tree or
# of an import root they would be what the suite's process imports: the base's only (the harness keeps its
# own copy, gate/suite/harness.py FRAMEWORK: it imports nothing of the gate; a test keeps the two the same).
FRAMEWORK_MODULES = ("pytest", "_pytest", "pluggy", "py", "iniconfig")
# Folders of test code: under a test path, a module outside them that pytest would not collect as a test is
# the library's own (a package that holds its tests, `tests.paths: [.]`).
TEST_FOLDERS = ("tests", "test", "testing")


def is_suite_file(path: str, tests: Sequence[str], roots: Sequence[str]) -> bool:
    """Whether `path` is part of the suite the base decides: under a test path (or the folder of tests of one:
    `held`), a conftest.py or a pytest configuration file anywhere, a module named like the framework or a
    distribution's metadata at the top of an import root (pytest looks a `-p NAME` up among the entry points of
    the distributions on the path)."""
    name = PurePosixPath(path).name
    return (under(path, held(tests)) or name in ("conftest.py", *PYTEST_CONFIG) or framework_named(path, roots)
            or metadata(path, roots) or shadows_tests(path, tests, roots))


def is_test_code(path: str, tests: Sequence[str]) -> bool:
    """Whether `path` is the suite's own code, which runs as the base has it whatever the change does to it (the
    head's only when the change adds a test file, which runs apart): a conftest.py anywhere, or a file under a
    test path (or the folder of tests of one: `held`). The framework check reads the rest, the code the tests'
    process imports from the head."""
    return PurePosixPath(path).name == "conftest.py" or under(path, held(tests))


def held(tests: Sequence[str]) -> tuple[str, ...]:
    """What of the tree runs as the base has it for the test paths `tests`: each of them, and the folder of tests
    one is in (the nearest `tests/` or `test/` above it, or a `testing/` at the tree's top: inside a package,
    `testing` is often the library's helpers for its users, which run as the head has them). The helpers and
    data beside the test modules `gate init` names one by one where pytest collects none of them as configured
    (`tests/unit/test_a.py`: `tests`), or beside a part of a folder of tests a policy names (`tests/unit`), are
    the suite's as much as a named folder's are (`tests/support.py`)."""
    return _held(tuple(tests))


@functools.cache  # (asked for each file of a tree, with the same few test paths)
def _held(tests: tuple[str, ...]) -> tuple[str, ...]:
    folders = []
    for test in tests:
        parts = PurePosixPath(test).parts[:-1]
        held_at = [n for n, part in enumerate(parts) if part in ("tests", "test") or (n == 0 and part == "testing")]
        if held_at:
            folders.append("/".join(parts[:held_at[-1] + 1]))
    return tuple(dict.fromkeys((*tests, *folders)))


def shadows_tests(path: str, tests: Sequence[str], roots: Sequence[str]) -> bool:
    """Whether `path` could stand in, in the suite's process, for the folder of tests a test path starts with
    (`tests/`, `test/`, `testing/`): a module of that name directly under an import root (`tests.py`: a module
    wins over a folder without `__init__.py`, and may then say where its submodules are, so that the base's
    tests' `from tests.support import same` imports the head's), or a folder of that name under another import
    root (`src/tests/`, a portion of the same namespace)."""
    tops = _tops(tuple(tests))
    for root in roots:
        inside = _inside(path, root)
        if inside and ((len(inside) == 1 and inside[0].endswith(".py") and inside[0][:-3] in tops)
                       or (root and len(inside) > 1 and inside[0] in tops)):
            return True
    return False


@functools.cache  # (as `_held`)
def _tops(tests: tuple[str, ...]) -> frozenset[str]:
    """The folders of tests (TEST_FOLDERS) the test paths `tests` start with."""
    return frozenset(PurePosixPath(test).parts[0] for test in tests if test != ".") & frozenset(TEST_FOLDERS)


def metadata(path: str, roots: Sequence[str]) -> bool:
    """Whether `path` is in a distribution's metadata folder (`*.dist-info`, `*.egg-info`) directly under one of
    `roots` ("" is the tree's top)."""
    for root in roots:
        parts = _inside(path, root)
        if len(parts) > 1 and parts[0].endswith((".dist-info", ".egg-info")):
            return True
    return False


def _inside(path: str, root: str) -> tuple[str, ...]:
    """The parts of `path` below the import root `root` ("" is the tree's top); () when it is not below it."""
    prefix = root.rstrip("/") + "/" if root else ""
    return PurePosixPath(path.removeprefix(prefix)).parts if path.startswith(prefix) else ()


def under(path: str, tests: Sequence[str]) -> bool:
    """Whether `path` is one of the test paths or under one (every path is under `.`)."""
    return any(p == "." or path == p or path.startswith(p.rstrip("/") + "/") for p in tests)


def library_code(path: str, tests: Sequence[str]) -> bool:
    """Whether `path`, under a test path (whose files the base's replace), is a module of the library rather
    than test code: not a test file by pytest's default names, a conftest.py, nor in a folder of tests."""
    file = PurePosixPath(path)
    return (under(path, tests) and file.suffix == ".py" and file.name != "conftest.py"
            and not file.name.startswith("test_") and not file.stem.endswith("_test")
            and not any(part in TEST_FOLDERS for part in file.parts[:-1]))


def framework_named(path: str, roots: Sequence[str]) -> bool:
    """Whether `path` is (in) a module named like the test framework, directly under one of `roots` ("" is
    the tree's top)."""
    for root in roots:
        inside = _inside(path, root)
        if inside and (inside[0].removesuffix(".py") if len(inside) == 1 else inside[0]) in FRAMEWORK_MODULES:
            return True
    return False


def standard_library_named(path: str, roots: Sequence[str]) -> str | None:
    """The name of the standard library module (`sys.stdlib_module_names`) that `path` would stand in for in
    the suite's process, which has the tree first on its path: a module (`tempfile.py`) or a package's
    `__init__.py` (`unittest/__init__.py`) directly under one of `roots` ("" is the tree's top); else None."""
    for root in roots:
        parts = _inside(path, root)
        if len(parts) == 1 and parts[0].endswith(".py"):
            name = parts[0].removesuffix(".py")
        elif len(parts) == 2 and parts[1] == "__init__.py":
            name = parts[0]
        else:
            continue
        if name in sys.stdlib_module_names:
            return name
    return None


def importable_from_tests(tree: Path, tests: Sequence[str]) -> frozenset[str]:
    """The top-level names a test of `tree` can import from a folder of the test paths `tests`: pytest puts the
    folder of each test file and conftest.py (the first folder up without an `__init__.py`, for one in a
    package) first on sys.path, so what that folder holds (a module, a package, a folder) is importable by its
    name (`tests/helpers.py`: `helpers`)."""
    folders: set[Path] = set()
    for test in tests:
        start = tree / test
        found = [(start.parent, [start.name])] if start.is_file() else \
            [(Path(folder), files) for folder, _, files in os.walk(start)]
        for folder, files in found:
            if any(name.endswith(".py") for name in files):
                while folder != tree and (folder / "__init__.py").is_file():
                    folder = folder.parent
                folders.add(folder)
    names: set[str] = set()
    for folder in folders:
        for entry in os.scandir(folder):
            if entry.name.endswith(".py") or (entry.is_dir() and entry.name != "__pycache__"):
                names.add(entry.name.removesuffix(".py"))
    return frozenset(names)
