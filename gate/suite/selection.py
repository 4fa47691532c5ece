"""Which tests run, in which trees: the repository's suite selected from the base commit and the head's export.

The suite's tree is the head's export with every file the trust rules give the base (`trust.py`: the test
paths, every conftest.py and pytest configuration file, modules named like the framework and distributions'
metadata at the top of an import root) replaced by the base's, and the head's versions of them removed. The
test files the head adds run apart, in a tree of their own; the base's own tree is exported for the baseline.
The source at the edge reads the commits (gate/sources/gitrange.py gives a `SuiteBase`); this module knows
nothing of git.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import msgspec

from gate.environment import BuiltEnvironment
from gate.environment.cache import cache_dir
from gate.errors import BadInput
from gate.policy.model import Environment, Policy, RepoSuite
from gate.suite.trust import PYTEST_CONFIG, SHARED_CONFIG, framework_named, held, is_suite_file, library_code, under

if TYPE_CHECKING:
    from gate.sources.base import Change


class SuiteTrees(msgspec.Struct, frozen=True):
    """The repository's test suite as it runs (docs/repository.md): the
    head's tree with the base's tests, conftests and pytest configuration in place of the head's."""

    base_sha: str
    tree: Path  # the head's code, the base's tests
    args: tuple[str, ...]  # the test paths of the base that exist (for pytest)
    added: tuple[str, ...] = ()  # test files the head adds, run apart from the base's
    added_tree: Path | None = None  # `tree` plus those files and the head's other new files of the suite's folders
    # Where the base commit is as it is, for the baseline (None: baseline none), once `base` made it: a verdict
    # whose baseline is kept runs nothing on the base, and never pays for its export.
    base_tree: Path | None = None
    base: Callable[[], Path] | None = None  # makes `base_tree` on its first call (then does nothing) and returns it
    base_roots: tuple[str, ...] = ()  # the base tree's own import roots
    edits: tuple[str, ...] = ()  # what the change does to the tests, which the base's versions replace
    # Modules named like the test framework that the change touches: left out of the run, so never tested.
    untested: tuple[str, ...] = ()
    # Modules of the library (no test files) that the change touches under the test paths: the base's ran.
    library: tuple[str, ...] = ()
    # Where pytest comes from when the environment has none: the gate's own copy (absolute import roots).
    runner: tuple[str, ...] = ()


class SuiteBase(msgspec.Struct, frozen=True):
    """The base commit as the selection reads it, from the source that holds it."""

    sha: str
    # Every file of its tree (not the submodules) by path, with a reader of its bytes (None for a symbolic link)
    # and whether git keeps it executable (a test's fake `uname` script, which the test runs).
    files: Callable[[], Iterable[tuple[str, Callable[[], bytes] | None, bool]]]
    has: Callable[[str], bool]  # whether its tree holds `path` (a file or a folder)
    export: Callable[[Path], object]  # writes its tree (as the head's export, without its size limit) into a folder
    roots: tuple[str, ...]  # its own import roots


def suites(base: SuiteBase, changes: Sequence[Change], policy: Policy, head_tree: Path, withheld: frozenset[str],
           runner: tuple[str, ...], head_roots: Sequence[str] = ()
           ) -> tuple[SuiteTrees | None, tuple[tuple[str, SuiteTrees], ...]]:
    """The trees of the policy's suite (`tests:`) and of each scope's own, by scope name, in folders named
    `HEAD_TREE-suite` and `HEAD_TREE-suite-N` next to the head's export `head_tree` (the caller removes
    them with it). `withheld` are the paths the head's export leaves out (the hidden cases); `runner` where
    their pytest comes from beyond the environment (`runner`); `head_roots` the head's own import roots (the
    base's are `base.roots`)."""
    roots = tuple(dict.fromkeys(("", "src", *(policy.repository_environment or Environment()).python_path,
                                 *base.roots, *head_roots)))
    named = [policy.tests, *(scope.tests for scope in policy.scopes)]

    def others(spec: RepoSuite) -> tuple[str, ...]:
        return tuple(path for each in named if each and each is not spec for path in each.paths)

    suite = _trees(base, changes, policy, policy.tests, head_tree, withheld, runner, "suite", "tests",
                   roots, others(policy.tests)) if policy.tests else None
    scope_suites = tuple(
        (scope.name, _trees(base, changes, policy, scope.tests, head_tree, withheld, runner,
                            f"suite-{index}", f"scopes[{index}].tests", roots, others(scope.tests)))
        for index, scope in enumerate(policy.scopes) if scope.tests)
    return suite, scope_suites


def _trees(base: SuiteBase, changes: Sequence[Change], policy: Policy, spec: RepoSuite, head_tree: Path,
           withheld: frozenset[str], runner: tuple[str, ...], name: str, key: str,
           roots: Sequence[str], others: Sequence[str]) -> SuiteTrees:
    """The trees the suite `spec` (the policy's `tests:` or a scope's) runs in: the head's export with the
    base's test files, every conftest.py and the pytest configuration in place of the head's (in the folder
    `name` next to `head_tree`), the head's new test files in a tree of their own, and the base as it is for
    the baseline. `key` is where the policy names the suite, for errors; `roots` every import root of the
    base's tree and the head's (a module named like the framework there is the base's); `others` the test
    paths of the policy's other suites, whose files their own notes name."""
    paths = spec.paths
    folder = Path(f"{head_tree}-{name}")
    tree = folder / "run"
    shutil.copytree(head_tree, tree, symlinks=True)
    ours = [(path, read, executable) for path, read, executable in base.files()
            if is_suite_file(path, paths, roots)]
    for parent, _, files in os.walk(tree):
        for file in files:
            full = Path(parent, file)
            if is_suite_file(full.relative_to(tree).as_posix(), paths, roots):
                full.unlink()
    real = tree.resolve()
    for path, read, executable in ours:
        if path not in withheld and read is not None:
            _write(real, path, read, executable)
    present = tuple(p for p in paths if (tree / p).exists())
    if not present:
        raise BadInput(f"none of {', '.join(paths)} is in the base commit {base.sha[:12]}",
                       file=policy.source, key=f"{key}.paths")
    # The head's new files of the suite's folders: its new modules under a test path run apart, beside its new
    # helpers and data of the folders of tests around them (`held`), which only those tests see.
    placed = tuple(c.path for c in changes if c.status in ("added", "renamed") and c.data is not None
                   and under(c.path, held(paths)) and PurePosixPath(c.path).name not in ("conftest.py", *PYTEST_CONFIG)
                   and not base.has(c.path) and not c.crafted and _placeable(tree, c.path))
    added = tuple(path for path in placed if path.endswith(".py") and under(path, paths))
    added_tree = None
    if added:
        added_tree = folder / "added"
        shutil.copytree(tree, added_tree, symlinks=True)
        for change in changes:
            if change.path in placed and change.data is not None:
                target = added_tree / change.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(change.data)
    base_tree = folder / "base" if spec.baseline == "base" else None
    return SuiteTrees(base_sha=base.sha, tree=tree, args=present, added=added, added_tree=added_tree,
                      base_tree=base_tree, base=once(lambda: _exported(base, folder / "base")) if base_tree else None,
                      base_roots=base.roots,
                      edits=_edits(changes, paths, roots, set(added), set(placed) if added else set(), others),
                      untested=tuple(dict.fromkeys(p for c in changes for p in c.paths
                                                   if framework_named(p, roots) and not under(p, paths))),
                      library=tuple(dict.fromkeys(p for c in changes for p in c.paths if library_code(p, paths))),
                      runner=runner)


def once(make: Callable[[], Path]) -> Callable[[], Path]:
    """`make` called on the first call only, by whichever thread comes first (the others wait for it), and
    what it returned on every call: a tree exported the first time something needs it. One that raised is
    called again."""
    lock = threading.Lock()
    made: list[Path] = []

    def made_once() -> Path:
        with lock:
            if not made:
                made.append(make())
            return made[0]
    return made_once


def _exported(base: SuiteBase, folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)  # (what an export that failed half-way left)
    folder.mkdir()
    base.export(folder)
    return folder


def runner(environment: BuiltEnvironment | None) -> tuple[str, ...]:
    """Where a suite's pytest comes from beyond the environment: nowhere when it has pytest, else the gate's own
    copy (made on first use)."""
    if environment is not None and environment.has("pytest"):
        return ()
    from gate.environment import build as environment_build  # (the builder: only with a suite)

    return (environment_build.gate_pytest(cache_dir(os.environ)),)


def framework_path(environment: BuiltEnvironment | None, runner: Sequence[str]) -> tuple[str, ...]:
    """Where a suite's runs import pytest from: the environment's site-packages, then its `runner`."""
    return (*(environment.site_packages if environment is not None else ()), *runner)


def _write(root: Path, path: str, read: Callable[[], bytes], executable: bool) -> None:
    """The base's file `path` into the tree `root` (its real path), executable or not as git keeps it (as the
    base's export and a checkout have it), unless it resolves outside it (a crafted tree entry such as `../x`)."""
    dest = (root / path).resolve()
    if not dest.is_relative_to(root):
        return
    # The head's file where the base has a folder on the way, or its folder where the base has the file, goes:
    # the base's suite files replace the head's.
    for folder in reversed(dest.relative_to(root).parents[:-1]):
        if (root / folder).exists() and not (root / folder).is_dir():
            (root / folder).unlink()
            break
    if dest.is_dir():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(read())
    dest.chmod(0o755 if executable else 0o644)


def _placeable(tree: Path, path: str) -> bool:
    """Whether the head's file `path` fits in `tree` as the base's suite files left it: none of them is a folder
    of the path's, nor a folder at the path."""
    return not (tree / path).is_dir() and not any((tree / folder).is_file()
                                                  for folder in PurePosixPath(path).parents)


def _edits(changes: Sequence[Change], tests: Sequence[str], roots: Sequence[str], added: set[str],
           placed: set[str], others: Sequence[str]) -> tuple[str, ...]:
    """What the change does to the suite's files, which the base's versions replace (`added`: its new tests, which
    run apart; `placed`: what of its new files those runs see). Not a change only to files of another suite's
    test paths (`others`) that are not under its own: the suites whose paths hold them say it (a scope's
    `tests/a` holds `tests/`, where another's `tests/b` is)."""
    found = []
    for change in changes:
        held_here = [p for p in change.paths if is_suite_file(p, tests, roots)]
        if not held_here or all(under(p, others) and not under(p, tests) for p in held_here) \
                or (change.status == "added" and change.path in added):
            continue
        path = held_here[0]
        if change.status == "added" and change.path in placed:
            found.append(f"the change adds {path}: only its new tests' run sees it")
            continue
        if framework_named(path, roots) and not under(path, tests):
            verb = {"deleted": "deletes", "renamed": "renames", "added": "adds"}.get(change.status, "edits")
            found.append(f"the change {verb} {path}, named like the test framework: left out of the suite's "
                         "tree (the base's version, if any, ran)")
        elif PurePosixPath(path).name in SHARED_CONFIG and change.status != "added":
            found.append(f"the change edits {path}: the base's pytest configuration in it was used")
        elif change.status == "added":
            found.append(f"the change adds {path}: it did not run (the base's tests, conftests and pytest "
                         "configuration only)")
        else:
            verb = {"deleted": "deletes", "renamed": "renames"}.get(change.status, "edits")
            found.append(f"the change {verb} {path}: the base's version ran")
    return tuple(found)
