"""Where a repository's test suite is, found as pytest itself finds it, from the files of a tree alone.

pytest reads its configuration from the first of `CONFIG_FILES` at the rootdir that holds a pytest section,
in that order (pytest.ini always counts; pyproject.toml only with `[tool.pytest]` or
`[tool.pytest.ini_options]`, tox.ini with `[pytest]`, setup.cfg with `[tool:pytest]`). Run from the rootdir
with no arguments it collects its `testpaths` (globs), else the rootdir itself, recursing into every folder
but those `norecursedirs` names, virtual environments and `__pycache__`, and collecting the files
`python_files` names (`test_*.py`, `*_test.py`), and as doctests the other files its doctest globs name
(`--doctest-glob=README.md` in `addopts`; `test*.txt` without one) and those a conftest.py's Sybil collects.
`gate init` writes the suite it finds as the policy's `tests.paths`; the verdict says when a policy without
`tests:` leaves such files unrun (gate/sources/trust.py).
Where the project's tox environment that runs the tests passes pytest paths (`commands = pytest tests`), its
CI collects those instead (pytest then reads no `testpaths`), and so does the suite found here.

Nothing here runs the repository's code: a conftest's `collect_ignore` (code) is not read; `--ignore`,
`--ignore-glob`, `--doctest-glob` and `--doctest-modules` in `addopts` are.
"""

from __future__ import annotations

import ast
import fnmatch
import posixpath
import re
import shlex
import tomllib
from collections.abc import Callable, Iterable, Sequence
from pathlib import PurePosixPath

import msgspec
from msgspec.structs import replace

from gate.errors import BadInput
from gate.suite.trust import PYTEST_CONFIG, TEST_FOLDERS, under

Reader = Callable[[str], str | None]

# pytest's configuration files, in the order it looks for them in a folder.
CONFIG_FILES = PYTEST_CONFIG
PYTHON_FILES = ("test_*.py", "*_test.py")
NORECURSEDIRS = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")
# Files that sit beside tests without being library code.
_TEST_SUPPORT = ("conftest.py", "__init__.py")


class PytestConfig(msgspec.Struct, frozen=True):
    """The options of pytest's configuration that decide what it collects."""

    file: str = ""  # the file pytest reads ("" when none has a pytest section)
    section: str = ""  # its table or section, "[tool.pytest.ini_options]"
    testpaths: tuple[str, ...] = ()
    python_files: tuple[str, ...] = PYTHON_FILES
    norecursedirs: tuple[str, ...] = NORECURSEDIRS
    ignore: tuple[str, ...] = ()  # `--ignore` in addopts
    ignore_glob: tuple[str, ...] = ()  # `--ignore-glob` in addopts
    doctest_glob: tuple[str, ...] = ()  # `--doctest-glob` in addopts (pytest's default: test*.txt)
    doctest_modules: bool = False  # `--doctest-modules` in addopts
    # (folder, file patterns) of each Sybil a conftest.py collects documents with (`_documents`).
    documents: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def where(self) -> str:
        """The file and section in words: `pyproject.toml [tool.pytest.ini_options]`."""
        return f"{self.file} {self.section}" if self.file else "no pytest configuration"


class Suite(msgspec.Struct, frozen=True):
    """The suite pytest collects, and the test paths that hold it."""

    config: PytestConfig
    files: tuple[str, ...]  # the test files pytest collects, sorted
    paths: tuple[str, ...]  # folders and files that hold them (the policy's `tests.paths`)
    why: str  # how the paths were found, in words
    # The library's modules whose doctests pytest collects (`--doctest-modules`) and no test path holds: the PR's
    # own code, which the suite never takes from the base, so they do not run.
    doctests_left: tuple[str, ...] = ()


def pytest_config(read: Reader) -> PytestConfig:
    """The configuration pytest reads at the top of a tree (its files through `read`); BadInput naming the
    file when the one pytest would read does not parse."""
    for name in CONFIG_FILES:
        text = read(name)
        if text is None:
            continue
        found = _config_in(name, text)
        if found is not None:
            section, values = found
            return _options(name, section, values)
    return PytestConfig()


def _config_in(name: str, text: str) -> tuple[str, dict[str, object]] | None:
    """(section, options) of the pytest section of the file `name`, or None when it has none."""
    if name.endswith(".toml"):
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(f"does not parse as TOML: {exc}", file=name) from None
        if name != "pyproject.toml":
            table = doc.get("pytest")
            return "[pytest]", table if isinstance(table, dict) else {}
        tool = doc.get("tool", {}).get("pytest") if isinstance(doc.get("tool"), dict) else None
        if not isinstance(tool, dict):
            return None
        native = {k: v for k, v in tool.items() if k != "ini_options"}
        if native:
            return "[tool.pytest]", native
        ini = tool.get("ini_options")
        return ("[tool.pytest.ini_options]", ini) if isinstance(ini, dict) else None
    import iniconfig  # (pytest's own INI reader, which it depends on)

    try:
        parsed = iniconfig.IniConfig(name, data=text)
    except iniconfig.ParseError as exc:
        raise BadInput(f"does not parse as pytest reads it: {exc}", file=name) from None
    section = "tool:pytest" if name == "setup.cfg" else "pytest"
    if section in parsed:
        return f"[{section}]", dict(parsed[section].items())
    return ("[pytest]", {}) if name in ("pytest.ini", ".pytest.ini") else None


def _options(name: str, section: str, values: dict[str, object]) -> PytestConfig:
    def args(key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = values.get(key)
        if isinstance(value, str):
            return tuple(shlex.split(value))
        if isinstance(value, list):
            return tuple(str(item) for item in value)
        return default

    addopts = args("addopts")
    ignore: list[str] = []
    ignore_glob: list[str] = []
    doctest_glob: list[str] = []
    for index, option in enumerate(addopts):
        for flag, into in (("--ignore", ignore), ("--ignore-glob", ignore_glob), ("--doctest-glob", doctest_glob)):
            if option == flag and index + 1 < len(addopts):
                into.append(addopts[index + 1])
            elif option.startswith(flag + "="):
                into.append(option.split("=", 1)[1])
    return PytestConfig(file=name, section=section, testpaths=args("testpaths"),
                        python_files=args("python_files", PYTHON_FILES),
                        norecursedirs=args("norecursedirs", NORECURSEDIRS),
                        ignore=tuple(_clean(p) for p in ignore), ignore_glob=tuple(_clean(p) for p in ignore_glob),
                        doctest_glob=tuple(doctest_glob), doctest_modules="--doctest-modules" in addopts)


def _clean(path: str) -> str:
    return PurePosixPath(path).as_posix().removeprefix("./").rstrip("/") or "."


def find_suite(files: Iterable[str], read: Reader) -> Suite:
    """The suite pytest collects in a tree whose regular files are `files` (paths relative to its top, as git
    names them) and whose texts `read` gives, and the test paths that hold it."""
    listing = sorted(set(files))
    config = replace(pytest_config(read), documents=_documents(listing, read))
    named = _tool_paths(read, listing)
    if named is not None:  # (with arguments, pytest does not read `testpaths`)
        collected = _tests_of(collect(listing, config, named[0]), read, named[0], config)
        if collected:
            paths = _holding(named[0], collected, listing, config)
            return Suite(config, collected, paths, named[1], _doctests_left(listing, config, named[0], paths, read))
    starts = _testpaths(config.testpaths, listing)
    collected = _tests_of(collect(listing, config, starts or [""]), read, starts, config)
    if starts:
        paths = tuple(starts)
        return Suite(config, collected, paths, f"testpaths in {config.where}",
                     _doctests_left(listing, config, starts, paths, read))
    how = "as pytest collects from the top: " + (f"no testpaths in {config.where}" if config.file and not
                                                  config.testpaths else config.where if not config.file
                                                  else f"testpaths in {config.where} match nothing")
    paths = holders(collected, listing, config)
    return Suite(config, collected, paths, how, _doctests_left(listing, config, [""], paths, read))


def _doctests_left(listing: Sequence[str], config: PytestConfig, starts: Sequence[str], paths: Sequence[str],
                   read: Reader) -> tuple[str, ...]:
    """The modules pytest collects doctests from (`--doctest-modules`: every module it reaches from `starts` but
    a `setup.py` and a `__main__.py`) that hold an example and that no test path of `paths` holds."""
    if not config.doctest_modules:
        return ()
    return tuple(path for path in collect(listing, config, starts, doctest_modules=True)
                 if path.endswith(".py") and PurePosixPath(path).name not in ("setup.py", "__main__.py")
                 and not under(path, paths)
                 and _has_examples(read(path)))


# pytest's options (its own and its common plugins') that take the next argument as their value: `-k EXPR`,
# `--cov SRC` are no paths to collect.
_VALUED = frozenset({"-k", "-m", "-p", "-c", "-o", "-W", "-r", "-n", "--maxfail", "--tb", "--deselect", "--ignore",
                     "--ignore-glob", "--rootdir", "--basetemp", "--confcutdir", "--override-ini", "--junitxml",
                     "--junit-xml", "--junit-prefix", "--durations", "--durations-min", "--import-mode",
                     "--log-level", "--log-file", "--log-cli-level", "--capture", "--color", "--dist",
                     "--numprocesses", "--maxprocesses", "--cov", "--cov-report", "--cov-config",
                     "--cov-fail-under", "--timeout", "--reruns", "--randomly-seed", "--doctest-glob",
                     "--inifile", "--config-file", "--benchmark-storage"})
# ... and those that take none (`-ra`, `-vv`: a short option with more letters holds its value or its repeats).
_FLAGS = frozenset({"-q", "-v", "-x", "-s", "-l", "--quiet", "--verbose", "--exitfirst", "--showlocals",
                    "--strict-markers", "--strict-config", "--strict", "--doctest-modules", "--runxfail",
                    "--doctest-continue-on-failure", "--lf", "--last-failed", "--ff", "--failed-first", "--nf",
                    "--new-first", "--sw", "--stepwise", "--no-header", "--no-summary", "--disable-warnings",
                    "--disable-pytest-warnings", "--fulltrace", "--full-trace", "--setup-show", "--cache-clear",
                    "--cov-append", "--cov-branch", "--no-cov", "--no-cov-on-fail", "--forked", "--benchmark-skip",
                    "--benchmark-disable", "--benchmark-only", "--hypothesis-show-statistics", "--looponfail"})


def _tool_paths(read: Reader, listing: Sequence[str]) -> tuple[list[str], str] | None:
    """The paths the tox environment that runs the tests passes pytest (`commands = pytest tests`), else the
    Hatch one's script (`test = "pytest {args:tests}"`), and where it says so: what the project's CI collects.
    None when it passes none, or any argument is not plainly a path of the tree (`--pyargs NAME`,
    `tests/x.py::test`, a word after an option this does not know, which may be its value)."""
    from gate.environment.testdeps import hatch_env, tox_env

    env = next((found for found in (tox_env(read), hatch_env(read)) if found is not None and found.pytest), None)
    entries = set(_entries(listing))
    paths: list[str] = []
    unknown = False  # the word before was an option that may take a value
    words = iter(env.pytest if env is not None else ())
    for word in words:
        if word == "--pyargs" or "::" in word or word == "--":
            return None
        if word.startswith("-"):
            if word in _VALUED:
                next(words, None)
            unknown = word not in _VALUED and word not in _FLAGS and "=" not in word and not (
                len(word) > 2 and word[1] != "-")
            continue
        if unknown or _clean(word) not in entries or _clean(word) == ".":
            return None
        paths.append(_clean(word))
    return (paths, f"the paths {env.where} passes pytest") if env is not None and paths else None


def collect(listing: Sequence[str], config: PytestConfig, starts: Sequence[str], doctest_modules: bool = False
            ) -> tuple[str, ...]:
    """The files of `listing` pytest collects from the arguments `starts` ("" is the top); with
    `doctest_modules`, every module it reaches too."""
    venvs = _venvs(listing)
    found = []
    for path in listing:
        start = next((s for s in starts if s in ("", ".") or path == s or path.startswith(s + "/")), None)
        if start is None or path.endswith(".pyc") or _ignored(path, config):
            continue
        if path == start:  # a file named as an argument is collected whatever its name
            found.append(path)
            continue
        parts = PurePosixPath(path).parts
        first = 0 if start in ("", ".") else len(PurePosixPath(start).parts)
        folders = ["/".join(parts[:end]) for end in range(first + 1, len(parts))]
        if any(_skipped(folder, config, venvs) for folder in folders):
            continue
        if path.endswith(".py") and (doctest_modules or any(_match(pattern, path) for pattern in config.python_files)):
            found.append(path)
        elif not path.endswith(".py") and (_sybil_folder(path, config) is not None or any(
                _match(glob, path) for glob in config.doctest_glob or _DOCTEST_GLOB)):
            found.append(path)  # (pytest's doctest plugin, or a conftest's Sybil, collects it)
    return tuple(found)


_DOCTEST_GLOB = ("test*.txt",)  # (pytest's own, without a --doctest-glob)


def _tests_of(collected: Sequence[str], read: Reader, named: Sequence[str], config: PytestConfig
              ) -> tuple[str, ...]:
    """Of the files pytest collects, the test modules: those pytest's default names or a folder of tests call
    tests, and the others that plainly define one; not a library module that a broad `python_files` (`*.py`,
    boolean.py's) has pytest collect, which holds no test: a test path holding it would have the gate run the
    base's copy of the library in place of the head's (`holders`). Only those others are read. A file that is no
    module stays when the CI names it (`named`: a README whose examples a plugin collects), when a conftest's
    Sybil collects it, or when it holds a doctest example (a README.md a doctest glob names: pytest makes no
    test of a text without one)."""
    return tuple(path for path in collected
                 if (path in named or _sybil_folder(path, config) is not None or _has_examples(read(path))
                     if not path.endswith(".py")
                     else any(_match(pattern, path) for pattern in PYTHON_FILES) or _in_test_folder(path)
                     or (PurePosixPath(path).name not in _TEST_SUPPORT and _defines_tests(read(path)))))


def _documents(listing: Sequence[str], read: Reader) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(folder, patterns) of each Sybil that a conftest.py makes (`pytest_collect_file = Sybil(parsers=...,
    pattern="*.rst").pytest()`, as cssselect's docs/conftest.py has it): the documents whose examples pytest
    runs through it, under the conftest's folder (or its `path=`, relative to it). Read from the text, never
    run; a pattern that is not a plain string is not followed."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for path in listing:
        text = read(path) if PurePosixPath(path).name == "conftest.py" else None
        if text is None or "Sybil" not in text or len(text) > _TEST_TEXT_MOST:
            continue
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        folder = str(PurePosixPath(path).parent)
        for node in ast.walk(module):
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "Sybil":
                words = {keyword.arg: keyword.value for keyword in node.keywords}
                listed = words.get("patterns")
                values = [*([words["pattern"]] if "pattern" in words else []),
                          *(listed.elts if isinstance(listed, ast.List | ast.Tuple) else [])]
                patterns = tuple(value.value for value in values
                                 if isinstance(value, ast.Constant) and isinstance(value.value, str))
                where = words.get("path")
                under = posixpath.normpath(f"{folder}/{where.value}") if isinstance(where, ast.Constant) and \
                    isinstance(where.value, str) else folder
                if patterns:
                    found.append((under, patterns))
    return tuple(found)


def _sybil_folder(path: str, config: PytestConfig) -> str | None:
    """The folder of the conftest's Sybil that collects the file `path` (`PytestConfig.documents`), or None."""
    return next((folder for folder, patterns in config.documents
                 if under(path, [folder]) and any(_match(p, path) for p in patterns)), None)


def _has_examples(text: str | None) -> bool:
    """Whether `text` holds an example that doctest runs (a line starting `>>>`) in its first megabyte."""
    return text is not None and re.search(r"^[ \t]*>>>", text[:_TEST_TEXT_MOST], re.MULTILINE) is not None


def stray_tests(files: Iterable[str], config: PytestConfig) -> tuple[str, ...]:
    """The modules of `files` that look like tests (named `test*`, or in a folder of tests) apart from a
    conftest.py or an `__init__.py`, outside the folders pytest never enters (`norecursedirs`, `--ignore`, a
    virtualenv): where pytest collects nothing as configured, tests it does not run (a unittest suite in
    `tests/test.py`, run by the project's CI as `python tests/test.py`)."""
    listing = sorted(set(files))
    venvs = _venvs(listing)
    return tuple(path for path in listing if path.endswith(".py")
                 and PurePosixPath(path).name not in _TEST_SUPPORT
                 and (PurePosixPath(path).name.startswith("test") or _in_test_folder(path))
                 and not _ignored(path, config)
                 and not any(_skipped(folder, config, venvs) for folder in _folders(path)))


def nameable(stray: Iterable[str], read: Reader) -> tuple[str, ...]:
    """Of `stray` (`stray_tests`), the test modules a policy can name one by one as its tests (pytest collects a
    file named as an argument whatever its name): test code by its place or its name (in a folder of tests, at
    the tree's top, or `test.py` / `tests.py` beside a package's modules, as webencodings has it; in a folder of
    tests inside a package, only a module named `test*`: `pkg/testing/` may be a library's helpers for its
    users, as `pkg/testing.py` may) that plainly defines tests (a `test*` function, a `Test*` class, a unittest
    `TestCase`), so that pytest has something to run in each and a helper or a data file of Python is never
    collected."""
    found = []
    for path in stray:
        folders = _folders(path)
        holder = next((folder for folder in folders if PurePosixPath(folder).name in TEST_FOLDERS), None)
        if holder is None and folders and PurePosixPath(path).stem not in _TEST_MODULES:
            continue
        inside_package = holder is not None and read(f"{holder.rpartition('/')[0]}/__init__.py".lstrip("/")) is not None
        if inside_package and not PurePosixPath(path).name.startswith("test"):
            continue
        if _defines_tests(read(path)):
            found.append(path)
    return tuple(found)


_TEST_MODULES = ("test", "tests")  # (a package's module so named is its tests; `testing` may be its users' helpers)
_TEST_TEXT_MOST = 1 << 20  # (a module larger than this is no plain test module to name)
# Calls that, at a module's top, end the process importing it (`unittest.main()` parses pytest's arguments).
_ENDS_ITS_IMPORT = frozenset({"unittest.main", "main", "sys.exit", "exit", "quit", "os._exit"})


def test_scripts(stray: Iterable[str], read: Reader) -> tuple[str, ...]:
    """Of `stray` (`stray_tests`), the modules that define tests but run them as they are imported (a top-level
    `unittest.main()`: ply's `test/testlex.py`, which its CI runs as a script): pytest cannot import them."""
    return tuple(path for path in stray
                 if _defines_tests(text := read(path), scripts=True) and not _defines_tests(text))


def _defines_tests(text: str | None, scripts: bool = False) -> bool:
    """Whether `text` is a module that plainly defines a test pytest runs: a top-level `test*` function, or a
    top-level class named `Test*` or deriving from a `TestCase`, with a `test*` method; and that pytest can
    import (no top-level `unittest.main()`), unless `scripts`."""
    if text is None or len(text) > _TEST_TEXT_MOST:
        return False
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False

    def test(node: ast.stmt) -> bool:
        return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")

    if not scripts and any(isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                           and ast.unparse(node.value.func) in _ENDS_ITS_IMPORT for node in module.body):
        return False  # (a script that runs its tests as it is imported, as ply's: no module pytest can import)
    for node in module.body:
        if test(node):
            return True
        if isinstance(node, ast.ClassDef) and any(test(item) for item in node.body) and (
                node.name.startswith("Test") or any(ast.unparse(base).split(".")[-1].endswith("TestCase")
                                                    for base in node.bases)):
            return True
    return False


def _in_test_folder(path: str) -> bool:
    return any(part in TEST_FOLDERS for part in PurePosixPath(path).parts[:-1])


def _folders(path: str) -> list[str]:
    """The folders above `path`, topmost first."""
    parts = PurePosixPath(path).parts
    return ["/".join(parts[:end]) for end in range(1, len(parts))]


def _venvs(listing: Sequence[str]) -> set[str]:
    venvs = {str(PurePosixPath(p).parent) for p in listing
             if PurePosixPath(p).name == "pyvenv.cfg" or p.endswith("conda-meta/history")}
    return venvs | {str(PurePosixPath(p).parent.parent) for p in listing if p.endswith("conda-meta/history")}


def _skipped(folder: str, config: PytestConfig, venvs: set[str]) -> bool:
    return (PurePosixPath(folder).name == "__pycache__" or folder in venvs or _ignored(folder, config)
            or any(_match(pattern, folder) for pattern in config.norecursedirs))


def _ignored(path: str, config: PytestConfig) -> bool:
    return path in config.ignore or any(fnmatch.fnmatch(path, pattern) for pattern in config.ignore_glob)


def _match(pattern: str, path: str) -> bool:
    """pytest's `fnmatch_ex`: a pattern without a slash matches the name, one with a slash the path's end."""
    if "/" not in pattern:
        return fnmatch.fnmatch(PurePosixPath(path).name, pattern)
    return fnmatch.fnmatch("/" + path, pattern if pattern.startswith("/") else "*/" + pattern)


def _testpaths(testpaths: Sequence[str], listing: Sequence[str]) -> list[str]:
    """pytest's expansion of `testpaths`: each a glob (`**` recursive) relative to the top, in order, the
    matches of each sorted; only what exists."""
    entries = _entries(listing)
    found: list[str] = []
    for raw in testpaths:
        pattern = _clean(raw)
        if pattern == ".":
            found += ["."] if "." not in found else []
            continue
        if not any(ch in pattern for ch in "*?["):
            matched = [pattern] if pattern in entries else []
        else:
            matched = [entry for entry in entries if _glob(pattern.split("/"), entry.split("/"))]
        found += [m for m in matched if m not in found]
    return found


def _entries(listing: Sequence[str]) -> list[str]:
    """The files of `listing` and the folders that hold them (the top, ".", left out), sorted."""
    folders = {str(parent) for path in listing for parent in PurePosixPath(path).parents if str(parent) != "."}
    return sorted({*listing, *folders})


def _glob(pattern: Sequence[str], parts: Sequence[str]) -> bool:
    """Whether the path `parts` matches the glob `pattern` (segments; `**` is any number of folders)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_glob(pattern[1:], parts[index:]) for index in range(len(parts) + 1))
    return bool(parts) and not (parts[0].startswith(".") and not pattern[0].startswith(".")) \
        and fnmatch.fnmatchcase(parts[0], pattern[0]) and _glob(pattern[1:], parts[1:])


def _holding(paths: Sequence[str], collected: Sequence[str], listing: Sequence[str], config: PytestConfig
             ) -> tuple[str, ...]:
    """The test paths that hold what pytest collects from `paths`: each path as it is when it holds tests alone
    (`tests/unit`), else the `holders` of the tests collected there (`src` with tests inside the package)."""
    tests = set(collected)
    found: list[str] = []
    for path in paths:
        inside = [p for p in listing if p == path or p.startswith(path + "/")]
        if all(p in tests or PurePosixPath(p).name in _TEST_SUPPORT for p in inside if p.endswith(".py")):
            found.append(path)
        else:
            found += holders([p for p in collected if p in inside], listing, config)
    found = list(dict.fromkeys(found))
    return tuple(p for p in found if not any(p != q and p.startswith(q + "/") for q in found))


def holders(collected: Sequence[str], listing: Sequence[str], config: PytestConfig) -> tuple[str, ...]:
    """The fewest test paths that hold the `collected` test files and no module of the library (the gate
    runs the base's files under a test path in place of the head's): the topmost folder of tests (`tests`,
    `test`, `testing`: `simplejson/tests`) above each file, else the topmost folder below the top whose
    every module is a test, a conftest.py or an `__init__.py`, else the file itself (a test module at the
    top, or beside the code it tests). A document a conftest's Sybil collects is held by that Sybil's folder
    (`docs`: named as a file, pytest's doctest plugin would collect a `.rst` once more), but at the top."""
    tests = set(collected)
    modules = [p for p in listing if p.endswith(".py")]

    def only_tests(folder: str) -> bool:
        return all(p in tests or PurePosixPath(p).name in _TEST_SUPPORT
                   for p in modules if p.startswith(folder + "/"))

    found: list[str] = []
    for path in collected:
        folders = [str(parent) for parent in reversed(PurePosixPath(path).parents) if str(parent) != "."]
        holder = next((f for f in folders if PurePosixPath(f).name in TEST_FOLDERS), None)
        sybil = _sybil_folder(path, config)
        holder = holder or next((f for f in folders if only_tests(f)), None) or (
            sybil if sybil is not None and sybil != "." else path)
        if holder not in found:
            found.append(holder)
    return tuple(p for p in found if not any(p != q and p.startswith(q + "/") for q in found))
