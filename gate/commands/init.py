"""`gate init`: a starter policy for the repository it stands in; `gate init --workflow`: the workflows.

The policy's `environment:` and `tests:` come from what the repository declares: its project files
(pyproject.toml `[project]` or Poetry's `[tool.poetry]`, setup.py, setup.cfg), a test extra, a test dependency
group or a test requirements file, and its test folder (pytest's `testpaths`, else `tests/` or `test/`). What
was found is said in the file's header, so a maintainer can check it.
"""

from __future__ import annotations

import argparse
import configparser
import textwrap
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from gate import HOME, POLICY_SCHEMA_URL, __version__
from gate.environment.declarations import TEST_EXTRAS, TEST_REQUIREMENTS, test_group
from gate.errors import EXIT_ACCEPTED, BadInput
from gate.policy.model import ALTERNATE_POLICY_PATH, CONTROL_PLANE_GROUPS, DEFAULT_POLICY_PATH
from gate.policy_file import load_policy

PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")  # the versions `python:` accepts
WORKFLOWS = {"gate.yml": ".github/workflows/gate.yml", "gate-publish.yml": ".github/workflows/gate-publish.yml"}
COMMIT_SHA = "COMMIT_SHA"  # the placeholder in the shipped workflows: the full SHA of the release's tag


@dataclass(frozen=True)
class Found:
    """What the repository declares, as the starter policy uses it."""

    project: str | None = None  # the file that declares the project's dependencies
    extra: str | None = None  # its optional-dependency group for tests
    group: str | None = None  # else its dependency group for tests (PEP 735 or Poetry's)
    requirements: tuple[str, ...] = ()  # test requirements files
    tests: tuple[str, ...] = ()  # the suite's folders or files
    tests_from: str = ""  # where those came from
    python: str | None = None  # the oldest Python the project supports, of PYTHONS
    requires_python: str = ""


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
    text = starter_policy(discover(root))
    load_policy(None, text=text, source=DEFAULT_POLICY_PATH)  # what is written always loads
    if args.print_only:
        print(text, end="")
        return EXIT_ACCEPTED
    _write(root, {DEFAULT_POLICY_PATH: text}, force=args.force)
    return EXIT_ACCEPTED


def _write(root: Path, files: dict[str, str], *, force: bool) -> None:
    """Write `files` (path under `root` -> text), none of them unless every one is new or `force` is given."""
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
    """What `root` declares: the project file, a test extra or requirements file, the suite, the Python."""
    pyproject = _toml(root / "pyproject.toml")
    project = pyproject.get("project") if isinstance(pyproject.get("project"), dict) else None
    poetry = pyproject.get("tool", {}).get("poetry")
    poetry = poetry if isinstance(poetry, dict) and isinstance(poetry.get("dependencies"), dict) else None
    setup_cfg = _ini(root / "setup.cfg")
    declares = ("pyproject.toml" if project is not None or poetry is not None
                else "setup.py" if (root / "setup.py").is_file()
                else "setup.cfg" if setup_cfg.has_section("options") else None)
    extras = (project or {}).get("optional-dependencies") or (poetry or {}).get("extras") or {}
    if not extras and setup_cfg.has_section("options.extras_require"):
        extras = dict(setup_cfg.items("options.extras_require"))
    extra = next((name for name in TEST_EXTRAS if name in extras), None) if declares else None

    def read(path: str) -> str | None:
        return (root / path).read_text(encoding="utf-8") if (root / path).is_file() else None

    group = None if extra else test_group(read)
    requirements = () if extra or group else tuple(p for p in TEST_REQUIREMENTS if (root / p).is_file())
    requires = str((project or {}).get("requires-python") or _option(setup_cfg, "options", "python_requires")
                   or _poetry_python(poetry))
    tests, tests_from = _test_paths(root, pyproject, setup_cfg)
    return Found(project=declares, extra=extra, group=group, requirements=requirements, tests=tests,
                 tests_from=tests_from, python=_oldest_python(requires), requires_python=requires)


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


def _test_paths(root: Path, pyproject: dict[str, Any], setup_cfg: configparser.ConfigParser
                ) -> tuple[tuple[str, ...], str]:
    """pytest's `testpaths` from the file pytest itself would read first, else a tests/ or test/ folder."""
    options = pyproject.get("tool", {}).get("pytest", {}).get("ini_options", {})
    configs: list[tuple[str, object]] = [(name, _option(_ini(root / name), "pytest", "testpaths"))
                                         for name in ("pytest.ini", ".pytest.ini")]
    configs.append(("pyproject.toml", options.get("testpaths") if isinstance(options, dict) else None))
    configs.append(("tox.ini", _option(_ini(root / "tox.ini"), "pytest", "testpaths")))
    configs.append(("setup.cfg", _option(setup_cfg, "tool:pytest", "testpaths")))
    for source, value in configs:
        paths = value.split() if isinstance(value, str) else [str(v) for v in value] if isinstance(value, list) else []
        paths = [p.rstrip("/") for p in paths if (root / p).exists()]
        if paths:
            return tuple(paths), f"{source} testpaths"
    folder = next((name for name in ("tests", "test") if (root / name).is_dir()), None)
    return ((folder,), f"the {folder}/ folder") if folder else ((), "")


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
    """The policy text: the header says what was found, each line's comment what its value means."""
    what = (f"extra {found.extra!r}" if found.extra else f"dependency group {found.group!r}" if found.group
            else "its dependencies")
    seen = [f"{found.project or 'pyproject.toml'} ({what})" if found.project or found.group else "",
            ", ".join(found.requirements),
            f"{', '.join(found.tests)} ({found.tests_from})" if found.tests else ""]
    rows: list[tuple[str, str]] = [("extends: default", _schedule())]
    if found.python:
        rows.append((f'python: "{found.python}"',
                     f"parse for the oldest Python the project supports (requires-python {found.requires_python})"))
    if found.project or found.requirements or found.group:
        rows.append(("environment:", "the project's dependencies, installed from the base commit"))
        if not found.project:
            rows.append(("  project: false", "no pyproject.toml [project], setup.py or setup.cfg"))
        if found.extra:
            rows.append((f"  extras: [{found.extra}]", ""))
        if found.group:
            rows.append((f"  groups: [{found.group}]", ""))
        if found.requirements:
            rows.append((f"  requirements: [{', '.join(found.requirements)}]", ""))
        if found.project and not found.extra and not found.group and not found.requirements:
            rows.append(("  project: true", ""))
    else:
        rows.append(("environment: null", "nothing declares dependencies here: the standard library only"))
    if found.tests:
        rows += [("tests:", "the suite, from the base commit, run against the PR's head"),
                 (f"  paths: [{', '.join(found.tests)}]", "")]
    else:
        rows += [("# tests:", "no test folder found: name yours to run it against every PR"),
                 ("#   paths: [tests]", "")]
    width = max(len(code) for code, _ in rows) + 2
    return "\n".join([f"# yaml-language-server: $schema={POLICY_SCHEMA_URL}",
                      f"# The gate's policy ({HOME}/blob/main/docs/policy.md),",
                      "# read from each PR's base commit: a PR that edits this file is blocked for a human.",
                      f"# Written by `gate init` from: {'; '.join(s for s in seen if s) or 'nothing it knows'}.",
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
