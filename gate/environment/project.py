"""The project built in the sandbox into a layer of its own, so that what its build writes exists for the runs.

A version file the build generates (setuptools-scm, hatch-vcs: git-ignored, so absent from an export), the
metadata `importlib.metadata` reads and the entry points: a run imports the project the way its CI does. The
build runs in the sandbox (no network, its own uid), with the build requirements the base declares already in
the repository's environment, like pip's `--no-build-isolation`: the PEP 517 backend of the tree's
pyproject.toml (setuptools' legacy backend for a setup.py) builds a wheel, which comes back on the run's
result channel; the gate unpacks it (never runs it) into the layer, which later runs see read-only on the
import path after the tree's roots: the tree's package is what runs, in a src layout as in a flat one (what is
merged is the tree, not what its backend chose to put in a wheel), and what the build added to it is copied into
the run's trees, as an editable install writes it into the working tree (`overlay`). Of the wheel the layer keeps
no module the environment or the gate's pytest installs (it would come before them), no native code or bytecode,
no .pth file and none of the suites' own code, whatever its bytes (`SuiteCode`: the suite runs as the base has
it); the modules the build wrote that the runs import are in no diff, so the subject carries them for the
framework check (`Subject.generated`). The version is the one git gives the commit (an export has no .git), as
each build reads it (gate/environment/scm.py's `told`). A layer is cached by the commit's tree, what its export
left out, the environment, that version, the suites' code and these rules; a build that fails is a note in the
verdict, and the runs import the tree as it is.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import stat
import struct
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING

from msgspec.structs import replace

from gate.environment import BuildLayer, SuiteCode, cache, packages, scm
from gate.progress import QUIET, Progress
from gate.sandbox import programs
from gate.sandbox.base import Limits, RunRequest, Sandbox
from gate.sandbox.stage import MINIMAL_PATH, NOT_RUN_SUFFIXES, admit_native
from gate.subject import SourceFile, Subject
from gate.suite.selection import framework_path, once
from gate.suite.trust import (
    FRAMEWORK_MODULES,
    PYTEST_CONFIG,
    importable_from_tests,
    is_test_code,
    library_code,
    shadows_tests,
)

if TYPE_CHECKING:
    from gate.sandbox.toolchain import Toolchain
    from gate.suite.selection import SuiteTrees

_DONE = "gate-layer.json"
_WHEEL_BYTES = 256 * 1024 * 1024
_TAIL = 8  # lines of the build's output a failure note shows
_LINE = 300  # characters of each (the verdict's facts are on every report; the build may print a line of 256 MB)
_TAIL_BYTES = 64 * 1024  # of each stream, read for them
_BLOCK = 4096  # what the smallest file costs of the disk
# Prebuilt objects a build could link into what it hands back as compiled: never in the tree it builds (the
# sandbox's staging leaves out the tree's shared objects, gate/sandbox/stage.py).
_OBJECTS = (".o", ".a", ".obj", ".lib")
# A build's wall and CPU seconds at least: compiling a project's extensions takes minutes where a pure build takes
# a second (a run's own limits are the policy's).
_BUILD_S = 600.0
# The rules of how a layer is built (what the build is told: scm.told) and what it keeps of a wheel (`_unpack`,
# `overlay`): a layer made under other rules, by an older gate, is another entry of the cache.
_RULES = 8
_NO_SUITE = SuiteCode()
# The build's program in the sandbox (gate/environment/wheel.py), the gate's own.
_BUILD = functools.partial(programs.harness, "build", "gate.environment.wheel")


def layer_for(where: Path, tree_sha: str, environment_key: str, version: str, export: object,
              code: SuiteCode, mapping: Mapping[str, str] | None = None, toolchain: Toolchain | None = None
              ) -> BuildLayer:
    """The layer of the commit whose tree is `tree_sha`, exported as `export` (JSON data: what the export left
    out), built in the environment `environment_key` (with the compiler `toolchain` when there are extension
    sources to compile) and unpacked without the suites' code `code`; `mapping` is where the tree keeps its
    packages (its build's `package_dir`, gate/environment/packages.py)."""
    compiler = None if toolchain is None else [*toolchain.identity, toolchain.missing]
    key = cache.digest({"tree": tree_sha, "environment": environment_key, "version": version, "rules": _RULES,
                        "export": export, "tests": list(code.paths), "test modules": sorted(code.modules),
                        "roots": list(code.roots), "compiler": compiler})
    return BuildLayer(where / "layers" / key, version, tuple(sorted((mapping or {}).items())), code, toolchain)


def suite_code(suites: Sequence[SuiteTrees], roots: Sequence[str]) -> SuiteCode:
    """What is the code of `suites` (their trees hold the base's test files) for a tree whose import roots are
    `roots`."""
    return SuiteCode(tuple(path for suite in suites for path in suite.args),
                     frozenset().union(*(importable_from_tests(suite.tree, suite.args) for suite in suites)),
                     _relative(roots))


def _suite_code(parts: tuple[str, ...], code: SuiteCode, own: frozenset[str]) -> bool:
    """Whether the wheel's file `parts` is the suites' code `code` (`own`: the tree's top-level modules): a
    conftest.py anywhere; a module under a test path (placed at the tree's top or at one of its import roots)
    that is not library code, or one that would stand in for a folder of tests (`tests.py`: `shadows_tests`); a
    top-level module named like one a test can import from a folder of the test paths (`compare` for
    `tests/compare.py`) that the tree has none of. The layer is on every run's import path: the suite's own
    code runs as the base has it, from the tree."""
    roots = tuple(dict.fromkeys(("", *code.roots)))
    placed = [PurePosixPath(root, *parts).as_posix() for root in roots]
    if parts[-1] == "conftest.py" or (parts[-1].endswith(".py") and any(
            (is_test_code(path, code.paths) and not library_code(path, code.paths))
            or shadows_tests(path, code.paths, roots) for path in placed)):
        return True
    top = parts[0].removesuffix(".py")
    return top in code.modules and top not in own


def built(subject: Subject, sandbox: Sandbox, limits: Limits, progress: Progress = QUIET) -> Subject:
    """`subject` with its head's project built (and the base's, for the suite's baseline) in `sandbox`, each
    layer on the import path after the tree's roots; a build that fails leaves the tree's roots and says why
    in the facts. Each build has a run's `limits`, with at least `_BUILD_S` of wall and CPU time. A layer not
    cached yet is a step of `progress`."""
    if subject.layers is None or subject.tree is None:
        return subject
    limits = replace(limits, wall_s=max(limits.wall_s, _BUILD_S), cpu_s=max(limits.cpu_s, _BUILD_S))
    new = [whose for whose, layer in zip(("the head's", "the base's"), subject.layers, strict=True)
           if not (layer.path / _DONE).is_file()]
    if not new:
        return _built(subject, sandbox, limits)
    with progress.step(f"build: {' and '.join(new)} project{'s' * (len(new) > 1)}, in the sandbox") as step:
        ready = _built(subject, sandbox, limits)
        failed = [note for key, note in ready.facts[len(subject.facts):] if key == "build"]
        step.done("; ".join(failed) if failed else "built")
    return ready


def _built(subject: Subject, sandbox: Sandbox, limits: Limits) -> Subject:
    assert subject.layers is not None and subject.tree is not None
    head, base = subject.layers
    sites = subject.environment.site_packages if subject.environment else ()
    installed = framework_path(subject.environment, subject.suite.runner if subject.suite else ())
    suites = [suite for suite in (subject.suite, *(each for _, each in subject.scope_suites)) if suite]
    tests = tuple(arg for suite in suites for arg in suite.args)
    notes = []
    tree = subject.tree
    suite, base_tree = subject.suite, subject.base
    exported = suite.base if suite is not None else None  # (the suite's own base, made once something needs it)
    sources = [(lambda: tree, head)]
    if base_tree is not None:
        sources.append((exported if exported is not None else base_tree.export, base))
    # The two builds are independent: side by side, each on a core, where there are two (a compiled extension's
    # build is most of a cold check's time; one core would only stretch each build towards its time limit).
    with ThreadPoolExecutor(max_workers=min(len(sources), _cores())) as pool:
        builds = [pool.submit(build, sandbox, source, layer, sites, limits, installed) for source, layer in sources]
        failures = [each.result() for each in builds]
    failed = failures[0]
    notes += [("build", f"head: {why}") for why in refused(head)]
    # (the head's plugin only: the base's is the same, and neither ever loads)
    notes += [("plugin", f"the project's pytest plugin {entry} is not loaded: it would run the head's code before "
                         "any test (the tests that need it, its options or fixtures, fail on both sides)")
              for entry in plugins(head)]
    if failed:
        notes.append(("build", f"head: {failed}"))
    else:
        roots = _relative(subject.import_roots)
        # (before the overlay adds the build's files to it)
        written = _not_the_trees(head.path, tree, roots, dict(head.packages))
        for where in (tree, *(t for s in suites for t in (s.tree, s.added_tree) if t is not None)):
            overlay(head.path, where, tests, roots)
        generated = tuple(SourceFile.from_bytes(path, file.read_bytes()) for path, file in sorted(written.items())
                          if path.endswith(".py"))
        subject = replace(subject, import_roots=_in_place(head, subject.import_roots), generated=generated)
    if base_tree is None:
        return replace(subject, facts=(*subject.facts, *notes))
    failed_head, failed = failed, failures[1]
    notes += [("build", f"base: {why}") for why in refused(base)]
    if failed:
        notes.append(("build", f"base: {failed}"))
    else:
        if not failed_head:
            subject = replace(subject, blocked_reasons=(*subject.blocked_reasons, *_lost(base, head)))
        roots = _relative(base_tree.roots)

        def overlaid(export: Callable[[], Path]) -> Callable[[], Path]:
            def made() -> Path:
                found = export()
                overlay(base.path, found, tests, roots)
                return found
            return once(made)
        base_tree = replace(base_tree, export=overlaid(base_tree.export))
        subject = replace(subject, base=replace(base_tree, roots=_in_place(base, base_tree.roots)),
                          suite=suite and replace(suite, base_roots=_in_place(base, suite.base_roots),
                                                  base=overlaid(exported) if exported is not None else None),
                          scope_suites=tuple((name, replace(each, base_roots=_in_place(base, each.base_roots)))
                                             for name, each in subject.scope_suites))
    return replace(subject, facts=(*subject.facts, *notes))


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def overlay(layer: Path, tree: Path, tests: Sequence[str], roots: Sequence[str] = ()) -> list[PurePath]:
    """Copy into `tree` each file of the layer's packages that the tree's own copy of the package (at its top,
    a flat layout, or at the top of one of its relative import roots `roots`: `src`) lacks, as an editable
    install's build writes them into the working tree (a version file); returns what it copied, relative to
    `tree`. Never over a file,
    never through a symbolic link, never as a file or folder named like one beside it (`core/` next to
    `core.py`: Python would import the package instead), never under the suite's test paths `tests` nor a
    conftest.py or pytest configuration: what the suite runs stays the base's (gate/suite/trust.py)."""
    copied = []
    for package in layer.iterdir():
        for root in dict.fromkeys(("", *roots)):
            target = tree / root / package.name
            if not package.is_dir() or target.is_symlink() or not target.is_dir():
                continue
            for parent, _, names in os.walk(package):
                for name in names:
                    source = Path(parent, name)
                    relative = PurePath(root, source.relative_to(layer))
                    native = _native(name)
                    if (name in ("conftest.py", *PYTEST_CONFIG) or _under(relative.as_posix(), tests)
                            or not (_free_for_native(tree, relative) if native else _plain(tree, relative))):
                        continue
                    dest = tree / relative
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, dest)
                    if native:
                        admit_native(tree, relative.as_posix())
                    copied.append(relative)
    return copied


def _native(name: str) -> bool:
    """Whether the file `name` is a shared object (an extension module, `x.cpython-311-x86_64-linux-gnu.so`, or a
    library of the project's, `libx.so.1`)."""
    return name.lower().endswith(".so") or ".so." in name.lower()


def _free_for_native(tree: Path, relative: PurePath) -> bool:
    """Whether the compiled file `relative` may go into `tree`: every folder on the way is a real folder (or
    absent), and what is there is nothing or a native file of the tree's own, which is removed (it never runs:
    the sandbox's staging leaves it out). Beside the tree's `x.py` too: an extension module of that name is what
    Python imports first, in the project's CI as here."""
    where = tree
    for part in relative.parts[:-1]:
        where = where / part
        if where.is_symlink() or (where.exists() and not where.is_dir()):
            return False
    target = tree / relative
    if target.is_symlink() or target.is_file():
        target.unlink()
    return not target.exists()


def _not_the_trees(layer: Path, tree: Path, roots: Sequence[str], mapping: Mapping[str, str]) -> dict[str, Path]:
    """The layer's files that are not the tree's own (the same bytes at the same place under the top or a
    root `roots`, or where the build's `package_dir` `mapping` keeps it): what the build wrote, which a run may
    import (from the layer, or as `overlay` copies it), by their path in the tree when a root or the mapping
    holds their package, else in the layer; its metadata left out."""
    found = {}
    homes = list(dict.fromkeys(("", *roots)))
    for parent, _, files in os.walk(layer):
        for name in files:
            source = Path(parent, name)
            relative = source.relative_to(layer)
            if relative.parts[0].endswith(".dist-info") or relative.as_posix() == _DONE:
                continue
            mapped = packages.tree_path(relative.parts, mapping)
            places = dict.fromkeys((*(PurePath(root, relative) for root in homes), PurePath(mapped)))
            if any(_regular(tree / place) and (tree / place).read_bytes() == source.read_bytes() for place in places):
                continue
            home = next((root for root in homes
                         if len(relative.parts) > 1 and (tree / root / relative.parts[0]).is_dir()), None)
            if home is not None:
                found[PurePath(home, relative).as_posix()] = source
            else:
                found[mapped if (tree / mapped).parent.is_dir() else relative.as_posix()] = source
    return found


def _tree_wins(layer: Path, tree: Path, mapping: Mapping[str, str]) -> None:
    """Give each file of the layer that the tree has where its build's `package_dir` `mapping` keeps it (a
    regular file) the tree's bytes: what is merged is the tree, whatever the build did to a file on its way
    into the wheel, also for a package the runs import from the layer (one kept under another folder name,
    `{"pkg": "source"}`)."""
    for parent, _, files in os.walk(layer):
        for name in files:
            relative = Path(parent, name).relative_to(layer)
            if relative.parts[0].endswith(".dist-info") or relative.as_posix() == _DONE or _native(name):
                continue
            origin = tree / packages.tree_path(relative.parts, mapping)
            if _regular(origin):
                Path(parent, name).write_bytes(origin.read_bytes())


def _regular(path: Path) -> bool:
    """Whether `path` is a regular file reached through no symbolic link of the tree's."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode) and os.path.realpath(path) == os.path.abspath(path)
    except OSError:
        return False


def _under(path: str, tests: Sequence[str]) -> bool:
    return any(path == test or path.startswith(test.rstrip("/") + "/") for test in tests)


def _plain(tree: Path, relative: PurePath) -> bool:
    """Whether `tree / relative` is free, every folder on the way there is a real folder (or absent), and
    what it would add (the file, or its first folder that is absent) has no name like an entry beside it."""
    where = tree
    for index, part in enumerate(relative.parts):
        parent, where = where, where / part
        if where.is_symlink() or (where.exists() and (index == len(relative.parts) - 1 or not where.is_dir())):
            return False
        if not where.exists():
            stem = part.partition(".")[0]
            return not any(entry.partition(".")[0] == stem for entry in os.listdir(parent))
    return False


def _relative(roots: Sequence[str]) -> tuple[str, ...]:
    return tuple(root for root in roots if not os.path.isabs(root))


def _in_place(layer: BuildLayer, roots: Sequence[str]) -> tuple[str, ...]:
    """The import roots with the layer after them: the tree's own modules (`src` among its roots) come first."""
    return (*roots, str(layer.path))


def build(sandbox: Sandbox, tree: Callable[[], Path], layer: BuildLayer, sites: Sequence[str], limits: Limits,
          installed: Sequence[str] = ()) -> str:
    """Build the project in the tree `tree()` exports into `layer` (once: a built layer, or a build that
    failed on its own, is reused, and `tree` is not called; one the sandbox stopped is tried again) in
    `sandbox`, with the environment's `sites` for its build requirements; the layer keeps no module that the
    folders `installed` (the environment's, the gate's pytest) hold, and none of the suites' code (`layer.code`).
    Returns "" when the layer is ready, else why not (the verdict's note; the runs then import the tree)."""
    with cache.locked(layer.path.parent / f"{layer.path.name}.lock"):
        done = layer.path / _DONE
        if done.is_file():
            return str(json.loads(done.read_text()).get("failed", ""))
        # A copy of its own: the sandbox keeps one read-only copy per tree it ran in, and the runs of the tree
        # itself must see what `overlay` adds to it after this build.
        source = tree()
        own = _modules([str(source), *(str(source / root) for root in layer.code.roots)])
        copy = Path(tempfile.mkdtemp(prefix=f"{source.name}-build-", dir=source.parent))  # (a path no run had)
        shutil.copytree(source, copy, symlinks=True, dirs_exist_ok=True, ignore=_objects)
        try:
            result = sandbox.run(RunRequest(script="_gate_build.py", harness=_BUILD(), tree=copy,
                                            env={**scm.told(layer.version),
                                                 # (an older setuptools reads ~/.pydistutils.cfg and fails
                                                 # without a home: the run's own /tmp)
                                                 "HOME": "/tmp", **_compiler_env(layer.toolchain)},
                                            limits=replace(limits, output_bytes=_WHEEL_BYTES),
                                            python_path=tuple(sites)))
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        failed, refusals, declared = "", list[str](), list[str]()
        if result.exit_code != 0 or not result.result:
            output = (result.stdout[-_TAIL_BYTES:] + result.stderr[-_TAIL_BYTES:]).decode("utf-8", "replace")
            tail = [line[:_LINE] for line in output.splitlines() if line.strip()][-_TAIL:]
            how = result.killed_reason or (f"exit status {result.exit_code}" if result.exit_code is not None
                                           else f"signal {result.signal}")
            failed = f"the project did not build in the sandbox ({how}): " + " | ".join(tail)
        else:
            try:
                refusals, declared = _unpack(result.result, layer.path, limits.disk_bytes, _installed(installed),
                                             layer.code, own, _Prebuilt((source, *sites)))
                _tree_wins(layer.path, source, dict(layer.packages))
            except (zipfile.BadZipFile, ValueError, OSError) as exc:
                failed = f"the project's build gave no usable wheel: {exc}"
        if not result.killed_reason:  # a build the sandbox stopped (time, memory) may pass on a quieter machine
            done.write_text(json.dumps({"failed": failed, "refused": refusals, "plugins": declared}))
        return failed


def refused(layer: BuildLayer) -> list[str]:
    """The native files of the built layer's wheel that it does not keep, each with why (the verdict's notes)."""
    return _recorded(layer, "refused")


def plugins(layer: BuildLayer) -> list[str]:
    """The pytest plugins the built layer's wheel declared, which the layer's metadata does not (`_unpack`)."""
    return _recorded(layer, "plugins")


def _recorded(layer: BuildLayer, key: str) -> list[str]:
    """A list the build recorded of its layer, by `key`; [] when there is none."""
    try:
        found = json.loads((layer.path / _DONE).read_text()).get(key, [])
    except (OSError, ValueError):
        return []
    return [str(each) for each in found] if isinstance(found, list) else []


def _objects(_folder: str, names: list[str]) -> set[str]:
    """shutil.copytree's ignore: the prebuilt objects (`_OBJECTS`) a build never sees."""
    return {name for name in names if name.lower().endswith(_OBJECTS)}


def _compiler_env(toolchain: Toolchain | None) -> dict[str, str]:
    """A build's PATH, with the folders of the compilers the toolchain found outside the run's own PATH."""
    if toolchain is None or toolchain.missing:
        return {}
    return {"PATH": ":".join(dict.fromkeys((*MINIMAL_PATH.split(":"), *toolchain.folders)))}


def _lost(base: BuildLayer, head: BuildLayer) -> list[str]:
    """Why a human must look: an extension module the base's build compiled that the head's, with the same
    compiler, did not (its C no longer compiles: a project with a pure-Python fallback then passes its tests
    without it)."""
    lost = sorted(_extensions(base.path) - _extensions(head.path))
    if not lost:
        return []
    return [f"the head's build compiled no {', '.join(lost)}, which the base's build compiled: the tests ran "
            "without that extension (an optional one's pure-Python fallback), so a human must review it"]


def _extensions(layer: Path) -> set[str]:
    """The dotted names of the extension modules the layer holds."""
    found = set()
    for parent, _, files in os.walk(layer):
        for name in files:
            relative = Path(parent, name).relative_to(layer)
            if _native(name) and name.lower().endswith(".so") and not relative.parts[0].endswith(".dist-info"):
                found.add(".".join((*relative.parts[:-1], name.split(".")[0])))
    return found


def _modules(folders: Sequence[str]) -> frozenset[str]:
    """The top-level modules and packages the import path's `folders` hold, by name."""
    found: set[str] = set()
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found.update(name.partition(".")[0] for name in names
                     if name != "__pycache__" and not name.endswith((".dist-info", ".egg-info", ".pth")))
    return frozenset(found)


def _installed(folders: Sequence[str]) -> frozenset[str]:
    """The modules and packages the import path's `folders` hold, by dotted name: those at the top, and in a
    namespace package (a folder without `__init__.py`, which several distributions share: the environment's
    `zope/` holds zope.event and zope.testing, not zope.interface) those it holds, as deep as it goes."""
    found: set[str] = set()

    def walk(folder: str, prefix: str) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if entry.name == "__pycache__" or entry.name.endswith((".dist-info", ".egg-info", ".pth")):
                continue
            if entry.is_dir() and entry.name.isidentifier() and not os.path.exists(
                    os.path.join(entry.path, "__init__.py")):
                walk(entry.path, f"{prefix}{entry.name}.")
            else:
                found.add(prefix + entry.name.partition(".")[0])

    for folder in folders:
        walk(folder, "")
    return frozenset(found)


def _kept(parts: tuple[str, ...], installed: frozenset[str], code: SuiteCode, own: frozenset[str]) -> bool:
    """Whether a wheel's file goes into the layer: not (in) a module named like the test framework nor like one
    the environment or the gate's pytest installs (`installed`, by dotted name: in a namespace package, the
    portions it holds), not the suites' code (`code`; `own`: the
    tree's top-level modules), not bytecode, a .pth file or native code for another system (`.pyd`, `.dll`,
    `.dylib`); a shared object is kept once `_unpack` has checked it is one the sandbox compiled
    (`_compiled`). The layer comes before the environment on the import path, so the head's build could
    otherwise hand the suite's process its pytest, a plugin or a test helper (the tree's framework-named
    modules are left out the same way, gate/suite/trust.py), a conftest no check reads, and code no check can
    read (gate/sandbox/stage.py)."""
    name = parts[-1].lower()
    top = parts[0].partition(".")[0] if len(parts) == 1 else parts[0]
    dotted = [*parts[:-1], parts[-1].partition(".")[0]]
    return not (top in FRAMEWORK_MODULES or any(".".join(dotted[:depth]) in installed for depth in
                                                range(1, len(dotted) + 1))
                or (name.endswith(NOT_RUN_SUFFIXES) and not _native(name)) or _suite_code(parts, code, own))


def _without_plugins(text: bytes) -> tuple[bytes, list[str]]:
    """A distribution's entry_points.txt without its pytest plugins (`[pytest11]`): pytest looks a `-p NAME` of
    the base's configuration up among every distribution's first, so the head's metadata could name its own
    object in place of the module the base means (the plugins the gate loads are modules of the environment,
    gate/suite/harness.py); and the plugins it left out, as their `name = module` lines say them."""
    kept, declared, inside = [], [], False
    for line in text.decode("utf-8", "replace").splitlines(keepends=True):
        header = line.strip()
        if header.startswith("[") and header.endswith("]"):
            inside = header.strip("[]").strip() == "pytest11"
        elif inside and "=" in header and not header.startswith(("#", ";")):
            name, _, module = header.partition("=")
            declared.append(f"{name.strip()} ({module.strip()})")
        if not inside:
            kept.append(line)
    return "".join(kept).encode(), declared


def _unpack(wheel: bytes, target: Path, max_bytes: int, installed: frozenset[str] = frozenset(),
            code: SuiteCode = _NO_SUITE, own: frozenset[str] = frozenset(), prebuilt: _Prebuilt | None = None
            ) -> tuple[list[str], list[str]]:
    """Write the wheel's importable files (its root, and its .data's purelib/platlib) that the layer keeps
    (`_kept`) into `target` (which runs already see: it is filled in place), readable by any uid and writable
    by none but the gate; nothing of it is run. Returns the shared objects it did not keep, each with why
    (`_compiled`, with the tree's and the environment's files `prebuilt`; none kept without it), and the pytest
    plugins its metadata declared, which the layer's does not (`_without_plugins`). Raises
    ValueError for a name that leaves the layer or more than `max_bytes` unpacked."""
    refusals, declared = [], []
    for entry in list(target.iterdir()):  # what an interrupted build left
        shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    with zipfile.ZipFile(BytesIO(wheel)) as archive:
        # Each file takes a block however small it is: a wheel of a million empty files is as heavy as one of 4 GB
        # (the export counts a tree's files the same way, gate/sources/gitrange.py).
        if sum(max(info.file_size, _BLOCK) for info in archive.infolist()) > max_bytes:
            raise ValueError(f"it unpacks to more than the disk limit ({max_bytes} bytes)")
        for info in archive.infolist():
            name = PurePosixPath(info.filename)
            parts = name.parts
            if name.is_absolute() or ".." in parts or not parts:
                raise ValueError(f"the wheel names {info.filename!r}")
            if len(parts) > 2 and parts[0].endswith(".data"):
                if parts[1] not in ("purelib", "platlib"):
                    continue  # scripts, headers, data: not imported
                parts = parts[2:]
            if info.is_dir() or not _kept(parts, installed, code, own):
                continue
            dest = target.joinpath(*parts)
            data = archive.read(info)
            if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "entry_points.txt":
                data, listed = _without_plugins(data)
                declared += listed
            why = _compiled(data, prebuilt) if _native(parts[-1]) else ""
            if why:
                refusals.append(f"the wheel's {'/'.join(parts)} is not loaded: {why}")
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
    for parent, _, files in os.walk(target):
        os.chmod(parent, 0o755)
        for file in files:
            os.chmod(os.path.join(parent, file), 0o644)
    return refusals, declared


class _Prebuilt:
    """The files of `folders` (the tree the build read, the environment), found by their bytes: a shared
    object that is one of them was not compiled by the build."""

    def __init__(self, folders: Sequence[str | Path]) -> None:
        self._by_size: dict[int, list[str]] | None = None
        self._folders = folders

    def which(self, data: bytes) -> str:
        """The file whose bytes are `data`, or ""."""
        if self._by_size is None:
            self._by_size = {}
            for folder in self._folders:
                for parent, _, files in os.walk(folder):
                    for name in files:
                        path = os.path.join(parent, name)
                        with contextlib.suppress(OSError):
                            if stat.S_ISREG(os.lstat(path).st_mode):
                                self._by_size.setdefault(os.path.getsize(path), []).append(path)
        digest = hashlib.sha256(data).digest()
        for path in self._by_size.get(len(data), ()):
            with contextlib.suppress(OSError), open(path, "rb") as file:
                if hashlib.file_digest(file, "sha256").digest() == digest:
                    return path
        return ""


def _compiled(data: bytes, prebuilt: _Prebuilt | None) -> str:
    """Why the shared object `data` is not one the sandbox's build compiled for this machine ("" when it may
    be): not an ELF shared object for the interpreter's machine, or the bytes of a file of the tree or the
    environment (prebuilt, handed back as compiled)."""
    if prebuilt is None:
        return "no shared object is kept from this wheel"
    if data[:4] != b"\x7fELF" or len(data) < 20:
        return "it is not an ELF file"
    kind, machine = struct.unpack_from("<HH" if data[5] == 1 else ">HH", data, 16)
    if kind != 3:  # ET_DYN
        return "it is not a shared object"
    if (data[4], data[5], machine) != _machine():
        return "it is built for another machine"
    copy = prebuilt.which(data)
    return f"it is byte for byte {copy}, prebuilt, not compiled by the build" if copy else ""


@functools.cache
def _machine() -> tuple[int, int, int]:
    """The ELF class, byte order and machine of the interpreter (the sandbox's runs on this machine too)."""
    with open(os.path.realpath(sys.executable), "rb") as file:
        head = file.read(20)
    return head[4], head[5], struct.unpack_from("<H" if head[5] == 1 else ">H", head, 18)[0]
