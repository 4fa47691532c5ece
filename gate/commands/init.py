"""`gate init`: a starter policy for the repository it stands in; `gate init --workflow`: the workflows.

The policy's `environment:` and `tests:` come from what the repository declares: its project files
(pyproject.toml `[project]` or Poetry's `[tool.poetry]`, setup.py, setup.cfg), a test extra, a test dependency
group or a test requirements file, and its test folder (pytest's `testpaths`, else `tests/` or `test/`; where
pytest collects nothing as configured, the modules of the test folders that define tests, each named). What
was found is said in the file's header, so a maintainer can check it.
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import re
import sys
import textwrap
import tomllib
from collections.abc import Callable
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

import msgspec
from msgspec.structs import replace
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from gate import HOME, POLICY_SCHEMA_URL, __version__
from gate.environment import imported, testdeps
from gate.environment.declarations import groups_declared
from gate.environment.testdeps import Choice, project_extras
from gate.errors import EXIT_ACCEPTED, BadInput
from gate.policy.model import ALTERNATE_POLICY_PATH, CONTROL_PLANE_GROUPS, DEFAULT_POLICY_PATH
from gate.policy_file import load_policy
from gate.suite.discovery import Suite, find_suite, nameable, stray_tests, test_scripts
from gate.suite.trust import under
from gate.verdict import listing

PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")  # the versions `python:` accepts
WORKFLOWS = {"gate.yml": ".github/workflows/gate.yml", "gate-publish.yml": ".github/workflows/gate-publish.yml"}
COMMIT_SHA = "COMMIT_SHA"  # the placeholder in the shipped workflows: the full SHA of the release's tag


class Found(msgspec.Struct, frozen=True):
    """What the repository declares, as the starter policy uses it."""

    project: str | None = None  # the file that declares the project's dependencies
    deps: Choice = msgspec.field(default_factory=Choice)  # the test dependencies chosen, and why
    suite: Suite | None = None  # the suite pytest collects (None: it collects nothing)
    stray: tuple[str, ...] = ()  # modules that look like tests, which pytest does not collect nor init names
    scripts: tuple[str, ...] = ()  # of those, the ones that define tests but run them as they are imported
    python: str | None = None  # the oldest Python the project supports, of PYTHONS
    requires_python: str = ""

    def said(self) -> tuple[list[str], list[str]]:
        """(what was chosen and why, what was not found), one line each, as `gate init` prints them."""
        chosen, missing = [], []
        if self.suite is not None:
            count = len(self.suite.files)
            chosen.append(f"tests: {', '.join(self.suite.paths)} ({count} test file{'s' * (count != 1)}, "
                          f"{self.suite.why})")
        elif self.scripts:
            missing.append(f"a suite pytest can run: {listing(list(self.scripts), ', ', 3)} define tests but run "
                           "them as they are imported (`unittest.main()` at their top: the project runs them as "
                           "scripts), so pytest cannot import them; no test runs on a PR until they only run "
                           "under `if __name__ == \"__main__\":`")
        elif self.stray:
            missing.append(f"a suite: pytest collects no test file here, yet {listing(list(self.stray), ', ', 3)} "
                           "look like tests; name them under tests.paths (and python_files in the pytest "
                           "configuration) or no test runs on a PR")
        else:
            missing.append("a test suite: pytest collects no test file here; no test will run on a PR")
        if self.suite is not None and self.suite.doctests_left:
            left = listing(list(self.suite.doctests_left), ", ", 3)
            missing.append(f"a way to gate the doctests of the library's modules ({left}: `--doctest-modules` in "
                           f"{self.suite.config.where}): a module's docstrings are the PR's own code, and the "
                           "suite runs the base's tests against it, so they do not run on a PR")
        if self.deps.why:
            passed = f"; passed over: {listing(list(self.deps.others), ', ', 3)}" if self.deps.others else ""
            dev = " (a dev set, linters and docs tools too: nothing smaller is declared)" if self.deps.dev else ""
            chosen.append(f"test dependencies: {self.deps.why}{dev}{passed}")
            if self.deps.imported:
                chosen.append("the extras the tests import, which nothing else installs: " + listing(
                    [f"{extra} ({why})" for extra, why in self.deps.imported], ", ", shown=4))
            chosen += [f"left out: {line}, the project itself (the gate installs the base's own tree"
                       + (", with the extras the line asks" if project_extras(line) else "")
                       + "; a pin of another version would stop every PR)" for line in self.deps.left_out]
        elif self.project or self.suite is not None:
            missing.append("test dependencies: no tox or Hatch test environment, test extra, group or requirements "
                           "file; the suite gets the project's dependencies and the gate's own pytest")
        if self.project:
            chosen.append(f"the project's dependencies: {self.project}")
        else:
            missing.append("a project (pyproject.toml [project], setup.py, setup.cfg): its dependencies are not "
                           "installed")
        if self.python:
            chosen.append(f"python: {self.python}, the oldest requires-python {self.requires_python} allows")
        else:
            missing.append("requires-python: code is parsed for the default Python")
        return chosen, missing


def register(subparsers: Any) -> None:
    """Add `gate init` to the CLI."""
    parser = subparsers.add_parser(
        "init", help="write a starter policy (or, with --workflow, the workflows) for this repository",
        description="Write .github/gate.yml for the repository in DIR, its environment: and tests: filled in "
                    "from pyproject.toml / setup.py / setup.cfg, test requirements files and pytest's "
                    "testpaths (or a tests/ folder). With --workflow, write the README's workflows instead "
                    "(the policy is left as it is).",
        epilog="examples:\n  gate init                  # .github/gate.yml here\n"
               "  gate init --workflow       # .github/workflows/gate.yml and gate-publish.yml only\n"
               "  gate init --print          # show the policy, write nothing\n\n"
               "exit codes: 0 written (or printed), 2 a file is already there (use --force; a policy named "
               ".github/gate.yaml is never doubled) or a project file does not parse",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("."), metavar="DIR",
                        help="the repository's root (default: the current directory)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--workflow", action="store_true",
                      help="write the gate and publish workflows under .github/workflows/ (not the policy)")
    what.add_argument("--print", dest="print_only", action="store_true",
                      help="print the policy on stdout instead of writing it")
    parser.add_argument("--force", action="store_true", help="overwrite files that are already there")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root: Path = args.dir
    if not root.is_dir():
        raise BadInput("not a folder", file=str(root))
    if args.workflow:  # the workflows only: the policy, written or not, is left as it is
        _write(root, {path: workflow(name) for name, path in WORKFLOWS.items()}, force=args.force)
        print(f"next: replace {COMMIT_SHA} in the workflows with the full commit SHA of release v{__version__}: "
              f"git ls-remote {HOME} 'refs/tags/v{__version__}^{{}}' (the README's \"Pin a release\")")
        return EXIT_ACCEPTED
    if (root / ALTERNATE_POLICY_PATH).exists():  # both names at once is an error for the gate: never write it
        raise BadInput(f"the repository's policy is already there; gate init writes {DEFAULT_POLICY_PATH}, and the "
                       "gate refuses a base that holds both", file=str(root / ALTERNATE_POLICY_PATH))
    found = discover(root)
    text = starter_policy(found)
    load_policy(None, text=text, source=DEFAULT_POLICY_PATH)  # what is written always loads
    _explain(found, sys.stderr if args.print_only else sys.stdout)
    if args.print_only:
        print(text, end="")
        return EXIT_ACCEPTED
    _write(root, {DEFAULT_POLICY_PATH: text}, force=args.force)
    return EXIT_ACCEPTED


def _write(root: Path, files: dict[str, str], *, force: bool) -> None:
    """Write `files` (path under `root` -> text), none of them unless every one is new or `force` is given, and
    every one inside the repository: a symbolic link on the way (`.github`, committed by anyone) is never
    followed out of it."""
    inside = Path(os.path.realpath(root))
    for path in files:
        target = Path(os.path.realpath(root / path))
        if not target.is_relative_to(inside):
            raise BadInput(f"a symbolic link on the way leads out of the repository, to {target}: gate init writes "
                           "only inside it", file=str(root / path))
    there = [path for path in files if (root / path).exists()]
    if there and not force:
        raise BadInput("already there (use --force to overwrite)", file=str(root / there[0]))
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content, encoding="utf-8")
        print(f"wrote {root / path}")


def workflow(name: str) -> str:
    """A shipped workflow, as the README shows it."""
    return (resources.files("gate") / "starter" / name).read_text(encoding="utf-8")


def discover(root: Path) -> Found:
    """What `root` declares: the project file, its test dependencies, the suite, the Python."""
    pyproject = _toml(root / "pyproject.toml")
    project = pyproject.get("project") if isinstance(pyproject.get("project"), dict) else None
    poetry = pyproject.get("tool", {}).get("poetry")
    poetry = poetry if isinstance(poetry, dict) and isinstance(poetry.get("dependencies"), dict) else None
    setup_cfg = _ini(root / "setup.cfg")

    def read(path: str) -> str | None:
        try:
            return (root / path).read_text(encoding="utf-8") if (root / path).is_file() else None
        except UnicodeDecodeError:
            return None

    declares = ("pyproject.toml" if project is not None or poetry is not None
                else "setup.py" if (root / "setup.py").is_file()
                else "setup.cfg" if setup_cfg.has_section("options") else None)
    extras = [*((project or {}).get("optional-dependencies") or (poetry or {}).get("extras") or {})]
    extras += testdeps.setup_cfg_extras(read("setup.cfg"))
    extras += testdeps.setup_py_extras(read("setup.py"))
    deps = testdeps.choose(read, extras, groups_declared(pyproject), declares is not None)
    from_setup_py = testdeps.setup_py_literal(read("setup.py"), "python_requires")
    requires = str((project or {}).get("requires-python") or _option(setup_cfg, "options", "python_requires")
                   or _poetry_python(poetry) or (from_setup_py if isinstance(from_setup_py, str) else ""))
    files = _files(root)
    suite = find_suite(files, read)
    if suite.files and len(test_scripts(suite.files, read)) == len(suite.files):
        # Every test module runs its tests as it is imported (toposort's `unittest.main()` at its top): pytest
        # stops on them, and a suite of them would stop every PR; they are said as scripts instead.
        suite = Suite(suite.config, (), (), suite.why)
    stray = () if suite.files else stray_tests(files, suite.config)
    named = nameable(stray, read)
    if named:  # (pytest collects a file named as an argument whatever its name)
        suite = Suite(suite.config, named, named, "named one by one: pytest collects none of them as configured; "
                                                  "a folder of tests one sits in runs as the base has it, as a "
                                                  "named folder does")
    if suite.files and declares is not None:
        deps = _with_imported(deps, read, pyproject, files, suite)
    scripts = () if suite.files else test_scripts(stray, read)
    return Found(project=declares, deps=deps, suite=suite if suite.files else None,
                 stray=(*scripts, *(path for path in stray if path not in named and path not in scripts)),
                 scripts=scripts,
                 python=_oldest_python(requires), requires_python=requires)


def _with_imported(deps: Choice, read: Callable[[str], str | None], pyproject: dict[str, Any], files: list[str],
                   suite: Suite) -> Choice:
    """`deps` with the extras that bring what the suite's files and conftests import and nothing chosen
    installs (gate/environment/imported.py)."""
    conftests = [path for path in files if PurePosixPath(path).name == "conftest.py" and under(path, suite.paths)]
    # The project's top-level names (at the top, under src/), and the modules beside the tests, which a test may
    # import by name (pytest puts their folder on the path): not a module deeper in the package (cattrs'
    # `preconf/msgspec.py` is its own, `msgspec` the extra's).
    own = {PurePosixPath(path).parts[1 if path.startswith("src/") else 0].removesuffix(".py") for path in files
           if "/" in path.removeprefix("src/") or path.endswith(".py")}
    own |= {PurePosixPath(path).stem for path in files if path.endswith(".py") and under(path, suite.paths)}
    needed = imported.needed_extras(read, deps, imported.extra_requirements(read, pyproject),
                                    [*suite.files, *conftests], own)
    if not needed:
        return deps
    return replace(deps, extras=(*deps.extras, *(extra for extra, _ in needed)), imported=needed,
                   why=deps.why or "the extras the tests import")


def _files(root: Path) -> list[str]:
    """The repository's files, relative to `root`: what git tracks or would (the base a PR is scored on
    holds no ignored file), else every file but a `.git` folder's."""
    from gate.sources.gitcli import GitError, NotARepository, Repo

    try:
        repo = Repo(root, search_parent_directories=True)
        listed = repo.run("ls-files", "--cached", "--others", "--exclude-standard", "-z", str(root.resolve()))
    except (NotARepository, GitError):
        listed = None
    if listed is not None:
        top = Path(repo.working_tree_dir or root).resolve()
        return [(top / p).relative_to(root.resolve()).as_posix() for p in listed.split("\0") if p]
    found = []
    for parent, folders, names in os.walk(root):
        folders[:] = [f for f in folders if f != ".git"]
        found += [Path(parent, name).relative_to(root).as_posix() for name in names]
    return found


def _explain(found: Found, stream: TextIO) -> None:
    """What `gate init` chose and why, and what it could not find; a repository with test files but no suite
    it could name is said loudly (the policy would run none of them)."""
    chosen, missing = found.said()
    for line in chosen:
        print(f"found {line}", file=stream)
    for line in missing:
        print(f"not found: {line}", file=stream)
    if found.suite is None and found.stray:
        print(f"gate: warning: this repository has test files ({listing(list(found.stray), ', ', 3)}) but the "
              "policy has no tests: no test of the repository will run on a PR, and every verdict says so",
              file=sys.stderr)


def _poetry_python(poetry: dict[str, Any] | None) -> str:
    """A Poetry project's `python` constraint as a PEP 440 specifier (`^3.8` is `>=3.8,<4.0`), or ""."""
    python = (poetry or {}).get("dependencies", {}).get("python")
    if not isinstance(python, str):
        return ""
    from poetry.core.constraints.version import parse_constraint  # (poetry-core: only for a Poetry project)

    try:
        return str(parse_constraint(python)).replace(" ", "")
    except ValueError:
        return ""


def _oldest_python(requires: str) -> str | None:
    try:
        allowed = SpecifierSet(requires)
    except InvalidSpecifier:
        return None
    return next((v for v in PYTHONS if allowed.contains(v + ".0") or allowed.contains(v + ".99")), None) \
        if requires else None


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"does not parse as TOML: {exc}", file=str(path)) from None


def _ini(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        if path.is_file():
            parser.read_string(path.read_text(encoding="utf-8"), source=str(path))
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise BadInput(f"does not parse as an INI file: {exc}", file=str(path)) from None
    return parser


def _option(parser: configparser.ConfigParser, section: str, key: str) -> str:
    return parser.get(section, key, fallback="")


def _schedule() -> str:
    """The default preset's budget and points, as the starter policy's comment states them."""
    preset = load_policy(None)
    points = ", ".join(f"{name} {value}" for name, value in preset.points.items() if value)
    return f"budget {preset.budget}; points: {points}"


def starter_policy(found: Found) -> str:
    """The policy text: the header says what was found and why, each line's comment what its value means."""
    deps = found.deps
    rows: list[tuple[str, str]] = [("extends: default", _schedule())]
    if found.python:
        rows.append((f'python: "{found.python}"',
                     f"parse for the oldest Python the project supports (requires-python {found.requires_python})"))
    if found.project or deps.requirements or deps.groups:
        rows.append(("environment:", "the project's dependencies, installed from the base commit"))
        if not found.project:
            rows.append(("  project: false", "no pyproject.toml [project], setup.py or setup.cfg"))
        for name, values in (("extras", deps.extras), ("groups", deps.groups), ("requirements", deps.requirements)):
            if values:
                rows.append((f"  {name}: {_flow(values)}", ""))
        if found.project and not (deps.extras or deps.groups or deps.requirements):
            rows.append(("  project: true", ""))
    else:
        rows.append(("environment: null", "nothing declares dependencies here: the standard library only"))
    warning: list[str] = []
    if found.suite is not None:
        rows += [("tests:", "the suite, from the base commit, run against the PR's head"),
                 (f"  paths: {_flow(found.suite.paths)}", "")]
    else:
        if found.stray:
            warning = _comment(f"WARNING: this repository has test files ({listing(list(found.stray), ', ', 3)}) "
                               "that pytest does not collect as configured: no test of the repository runs on a "
                               "PR, and every verdict says so, until `tests:` names them.")
        rows += [("# tests:", "no suite pytest collects: name yours to run it against every PR"),
                 ("#   paths: [tests]", "")]
    chosen, missing = found.said()
    width = max(len(code) for code, _ in rows) + 2
    return "\n".join([f"# yaml-language-server: $schema={POLICY_SCHEMA_URL}",
                      f"# The gate's policy ({HOME}/blob/main/docs/policy.md),",
                      "# read from each PR's base commit: a PR that edits this file is blocked for a human.",
                      "# Written by `gate init`, which found:",
                      *(line for text in chosen for line in _comment(text, "  ")),
                      *(line for text in missing for line in _comment("not found: " + text, "  ")),
                      *warning,
                      *(f"{code:<{width}}# {note}" if note else code for code, note in rows),
                      *_control_plane(width)]) + "\n"


def _control_plane(width: int) -> list[str]:
    """The default `control_plane:`, written out so that a maintainer sees it and edits it, by what each glob
    is."""
    lines = [f"{'control_plane: [':<{width}}# paths a gated PR changes only with a human's review, whatever its "
             "points"]
    for note, globs in CONTROL_PLANE_GROUPS:
        lines.append(f"  # {note}")
        lines += textwrap.wrap(", ".join(globs) + ",", 100, initial_indent="  ", subsequent_indent="  ",
                               break_long_words=False, break_on_hyphens=False)
    return [*lines, "]"]


def _comment(text: str, indent: str = "") -> list[str]:
    """`text` as YAML comment lines of at most 115 columns."""
    return textwrap.wrap(text, 115, initial_indent=f"# {indent}", subsequent_indent=f"# {indent}  ",
                         break_long_words=False, break_on_hyphens=False)


def _flow(items: tuple[str, ...]) -> str:
    """A YAML flow sequence of `items`, each quoted when YAML could read it otherwise."""
    return "[" + ", ".join(item if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./-]*", item) else json.dumps(item)
                           for item in items) + "]"
