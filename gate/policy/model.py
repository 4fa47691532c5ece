"""The typed, frozen policy: what a repository's `.github/gate.yml` means once loaded, and the one declaration of
every policy key (its type, default, bounds and description: gate/policy/keys.py) but those of `points:`,
which the checks that charge them declare (a `Charge` in each check's module, gate/checks/), and which the
policy reads from its schema.

The defaults here are the `default` preset's; those of `points:` are the penalty schedule
(docs/how-it-works.md). `python -m gate.generate` writes `gate/policy/schema.json` and
`gate/presets/default.yml` from these declarations, and the loader (`gate.policy_file`) builds and unbuilds
the policy by its sections' keys; it validates the YAML against the schema first, so their constructors trust
their input.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from gate.bots.catalog import agent_ids
from gate.bots.patterns import login_problem
from gate.globs import glob_problem
from gate.policy.keys import Charge, Declared, charge_field, key, key_of
from gate.policy.validation import did_you_mean, load_schema

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# Where a repository keeps its policy, relative to its root, unless the user names another path.
DEFAULT_POLICY_PATH = ".github/gate.yml"
# The same file under YAML's other extension, read when the default path is absent (both at once is an error:
# which one gates would be a guess).
ALTERNATE_POLICY_PATH = ".github/gate.yaml"

DYNAMIC_LOADERS = ("__import__", "importlib.import_module", "eval", "exec", "compile")

MODULE = {"pattern": r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$",
          "x-expected": "a dotted module name such as `os.path`"}
ENV_NAME = {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
            "x-expected": "an environment variable name such as `GATE_TOKEN`"}
# A path inside the repository: no leading `/`, no `..` part.
_INSIDE = r"^(?!/)(?!.*(^|/)\.\.(/|$)).+$"


# The agent control plane (`control_plane:`): what steers the next agent or runs with the repository's token, by
# what it is (`gate init` writes the list with these words). A gated change to one of these paths is blocked for
# a human (gate/sources/trust.py), whatever its score.
CONTROL_PLANE_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("agent instructions (any folder: agents read the nearest)", (
        "AGENTS.md", "AGENT.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".github/copilot-instructions.md",
        ".github/instructions/**", ".github/prompts/**", ".github/agents/**", ".github/chatmodes/**",
        ".cursorrules", ".cursor/", ".windsurfrules", ".windsurf/", ".clinerules", ".roo/", ".roomodes",
        ".junie/")),
    ("the agents' tools: MCP servers, hooks, permissions", (".mcp.json", ".vscode/mcp.json", ".claude/", ".gemini/")),
    ("what runs with the repository's token", (".github/workflows/**", ".github/actions/**")),
    ("who must review (root, .github/, docs/)", ("CODEOWNERS",)),
)
CONTROL_PLANE = tuple(glob for _, globs in CONTROL_PLANE_GROUPS for glob in globs)


def _inside(expected: str) -> dict[str, Any]:
    return {"minLength": 1, "pattern": _INSIDE, "x-expected": expected}


def _glob(expected: str) -> dict[str, Any]:
    return {"minLength": 1, "x-expected": expected}


def _bad_glob(pattern: str) -> str | None:
    problem = glob_problem(pattern)
    return None if problem is None else f"bad glob {pattern!r}: {problem}"


def _bad_login(pattern: str) -> str | None:
    problem = login_problem(pattern)
    return None if problem is None else f"{pattern!r}: {problem}"


def _bad_agent(agent_id: str) -> str | None:
    if agent_id in agent_ids():
        return None
    return (f"{agent_id!r}: no such agent in gate/bots/agents.yml (the agents are {', '.join(agent_ids())})"
            + did_you_mean(agent_id, list(agent_ids())))


def _layers() -> tuple[str, ...]:
    from gate.sandbox.base import LAYERS

    return tuple(LAYERS)


@dataclass(frozen=True, init=False)
class Points:
    """Points charged per check (`points: {smoke: 2, ...}`); read one as `policy.points[SMOKE]`. Its keys are the
    checks' charges (a `Charge` in the module of each check that charges it), which the policy knows from its
    schema, where the generator writes them from the checks' registry (gate/checks/__init__.py), in its order:
    the policy imports none of the checks it configures."""

    values: tuple[tuple[str, int], ...]

    def __init__(self, **points: int) -> None:
        charges = schema_charges()
        for name in points:
            if name not in charges:
                raise TypeError(f"Points() got an unexpected keyword argument {name!r}")
        object.__setattr__(self, "values", tuple((name, points.get(name, charge.default))
                                                 for name, charge in charges.items()))

    def __getitem__(self, charge: Charge) -> int:
        return self.value(charge.name)

    def value(self, name: str) -> int:
        """The points of the charge named `name` (the loader's and the generator's way in, by key)."""
        return dict(self.values)[name]

    def items(self) -> list[tuple[str, int]]:
        """(name, points) of every charge, in the checks' order."""
        return list(self.values)

    @classmethod
    def declared_keys(cls) -> Declared:
        return tuple((item, int, key_of(item)) for item in map(charge_field, schema_charges().values()))


@functools.cache
def schema_charges() -> dict[str, Charge]:
    """The charges the policy's schema lists under `points:` (written by the generator from the checks' own
    declarations), by name, in the checks' order."""
    points = load_schema("gate.policy", "schema.json")["properties"]["points"]["properties"]
    return {name: Charge(name, spec["default"], spec["description"]) for name, spec in points.items()}


@dataclass(frozen=True)
class Paths:
    """Which changed files are gated: globs relative to the repository root."""

    include: tuple[str, ...] = key(("**/*.py",), "gated files", items=_glob("a non-empty glob"), problem=_bad_glob)
    exclude: tuple[str, ...] = key((), "files left out even when included", items=_glob("a non-empty glob"),
                                   problem=_bad_glob)
    max_file_kb: int = key(1024, "largest gated file the checks parse, KiB; a larger one costs the parse points",
                           minimum=1, maximum=65536)


@dataclass(frozen=True)
class ImportRules:
    """Allow-list (empty means anything not denied), deny-list, and which imports count."""

    allow: tuple[str, ...] = key((), "allow-list; empty: anything not denied", items=MODULE, unique_items=True)
    # Modules a bot patch rarely needs and a hostile one reaches for: processes, network, destructive
    # filesystem access, native code and dynamic loading.
    deny: tuple[str, ...] = key((
        "os", "subprocess", "socket", "shutil", "ctypes", "cffi", "importlib", "multiprocessing", "signal", "pty",
        "http", "urllib", "ftplib", "smtplib", "telnetlib", "ssl", "asyncio.subprocess", "requests", "httpx",
        "pickle", "marshal", "shelve", "builtins", "code", "codeop", "runpy", "resource", "mmap",
        "fcntl", "posix", "nt", "_thread", "gc", "inspect",
    ), "deny-list", items=MODULE, unique_items=True)
    scope: Literal["added", "all"] = key("added", "added: only imports the change adds count")
    dynamic: bool = key(True, "count __import__, importlib.import_module, eval, exec, compile")


@dataclass(frozen=True)
class Language:
    """How to syntax-check files of one extension other than Python: argv with `{path}` for the file."""

    extension: str = key(description="the file extension", pattern=r"^\.[A-Za-z0-9_+-]+$",
                         expected="a file extension such as `.js`")
    command: tuple[str, ...] = key(description="argv; `{path}` is replaced by the file", min_items=1,
                                   contains={"type": "string", "pattern": r"\{path\}"},
                                   message="the command must have `{path}` in an argument (where the file goes)")
    timeout: float = key(10.0, "seconds (default 10)", exclusive_minimum=0)


@dataclass(frozen=True)
class ClaimRules:
    """The complexity-claims check: whether a function claimed O(1) may still loop."""

    allow_loops: bool = key(False, "let an O(1)-claimed function loop")


@dataclass(frozen=True)
class Labels:
    """Labels that opt a pull request in or out, or override its verdict."""

    opt_in: tuple[str, ...] = key(("gate",), "gate this PR whoever the author")
    opt_out: tuple[str, ...] = key(("no-gate",), "do not gate this PR")
    override: tuple[str, ...] = key((), "labels a maintainer applies to override a blocked verdict for the "
                                        "current head (neutral)")


@dataclass(frozen=True)
class Bots:
    """Which pull requests are gated (docs/github.md, "Who is gated")."""

    logins: tuple[str, ...] = key((), "author logins that are bots")
    patterns: tuple[str, ...] = key(("*[bot]",), "login patterns such as `*[bot]`: `*` and `?` are wildcards, "
                                    "the rest literal, case-insensitive",
                                    items=_glob("a login pattern such as `*[bot]`"), problem=_bad_login)
    account_types: tuple[Literal["Bot", "User", "Organization", "Mannequin"], ...] = key(
        ("Bot",), "GitHub account types that are bots")
    branches: tuple[str, ...] = key((), "head branch globs (path globs, as in `paths:`) that are gated whoever "
                                    "the author", items=_glob("a branch glob such as `copilot/**`"),
                                    problem=_bad_glob)
    agents: tuple[str, ...] = key(
        factory=agent_ids, description="AI coding agents (ids in gate/bots/agents.yml) whose marks on the "
        "author, branch or commits gate a PR; default: all of them",
        items=_glob("an agent id from gate/bots/agents.yml"), problem=_bad_agent)
    dependency_bots: bool = key(False, "gate Dependabot's and Renovate's PRs too")
    labels: Labels = key(factory=Labels, description="labels that opt a pull request in or out")


@dataclass(frozen=True)
class Hidden:
    """Where hidden cases live: a path read from the base commit, or a file an environment variable names."""

    path: str | None = key(".github/gate-hidden.yml", "a file in the base commit; null: none", min_length=1,
                           path=True)
    env: str = key("GATE_HIDDEN_CASES", "an environment variable naming a hidden-cases file", keywords=ENV_NAME)


@dataclass(frozen=True)
class RunLimits:
    """Bounds for every run of candidate code (the sandbox's own `Limits` are these in seconds and bytes)."""

    timeout: float = key(5.0, "wall seconds per run", exclusive_minimum=0)
    cpu: float = key(5.0, "CPU seconds per run", exclusive_minimum=0)
    memory_mb: int = key(512, "address space, MiB", minimum=1)
    output_kb: int = key(256, "stdout+stderr kept, KiB", minimum=1)
    processes: int = key(32, "processes", minimum=1)
    open_files: int = key(64, "open file descriptors", minimum=1)
    file_size_mb: int = key(16, "largest file written, MiB", minimum=1)
    disk_mb: int = key(64, "scratch disk, MiB", minimum=1)
    total_timeout: float = key(300.0, "wall seconds for all the cases' runs together; cases not started by then "
                               "are reported as not run (each costs points.timeout)", exclusive_minimum=0)


class CaseSpec(msgspec.Struct, frozen=True):
    """One case as written in a policy, task or dataset; its kind (gate.cases) declares its `fields`."""

    kind: str
    name: str
    fields: tuple[tuple[str, Any], ...] = ()
    hidden: bool = False

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.fields).get(key, default)


CASE_LIST = {"$ref": "#/$defs/case_list"}


@dataclass(frozen=True)
class Judge:
    """An optional model judge that advises (docs/judge.md); off unless `enabled`."""

    enabled: bool = key(False, "ask the judge about every gated change")
    url: str = key("", "the judge service endpoint")
    model: str = key("", "the model's name")
    api_key_env: str = key("GATE_JUDGE_API_KEY", "environment variable holding the API key", keywords=ENV_NAME)
    rubric: str = key("", "what the judge is asked to look for")
    rubric_file: str | None = key(None, "a file of the base commit holding the rubric", min_length=1, path=True)
    timeout: float = key(30.0, "seconds per request", exclusive_minimum=0)
    retries: int = key(2, "retries of a failed request", minimum=0)
    add_points: bool = key(False, "charge points.judge when the judge finds a problem")
    needs_review: Literal["advice", "label", "block"] = key("advice",
                                                            "what an unparsable or `needs_review` answer does")
    label: str = key("needs-review", "label added when needs_review is `label`", min_length=1)


@dataclass(frozen=True)
class Environment:
    """The repository's own environment, built from the base commit only (docs/repository.md): the
    project's dependencies, `extras`, dependency `groups` and `requirements` files, installed outside the
    sandbox into a cached virtual environment that runs see read-only."""

    project: bool = key(True, "install the base project's dependencies (pyproject.toml [project], setup.py or "
                        "setup.cfg); the project itself stays out, so the head's tree is what is imported")
    extras: tuple[str, ...] = key((), "optional-dependency groups of the project to install too, e.g. [test]",
                                  items={"pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$",
                                         "x-expected": "an optional-dependency group's name, such as `test`"})
    groups: tuple[str, ...] = key(
        (), "dependency groups of the project to install too, e.g. [test]: PEP 735 [dependency-groups], "
        "Poetry's groups (dev: also its dev-dependencies), PDM's dev-dependencies; `tox:NAME` and `hatch:NAME`: "
        "the inline requirements of a tox or Hatch environment; `setuptools:tests_require`: setuptools' "
        "tests_require (setup.py, setup.cfg)",
        items={"pattern": "^(?:(?:tox|hatch):[A-Za-z0-9][A-Za-z0-9._-]*|setuptools:tests_require"
                          "|[A-Za-z0-9][A-Za-z0-9._-]*)$",
               "x-expected": "a dependency group's name, such as `test`, or `tox:NAME`, `hatch:NAME`, "
                             "`setuptools:tests_require`"})
    requirements: tuple[str, ...] = key(
        (), "requirements files, read at the base commit, installed too", path=True,
        items=_inside("a path inside the repository, such as `requirements-dev.txt` (no leading `/`, no `..`)"))
    python_path: tuple[str, ...] = key(
        (), "directories of the head's tree put first on the import path (a src/ layout is found by itself)",
        path=True, items=_inside("a directory inside the repository, such as `lib` (no leading `/`, no `..`)"))
    dependency_changes: Literal["block", "note"] = key("block", "a change to the dependency declarations: block "
                                                       "for a human (default) or only note it")

    def import_roots(self, src_layout: bool, mapped: tuple[str, ...] = ()) -> tuple[str, ...]:
        """A tree's own import roots, first on the path: `src` when the tree has a src/ layout, the folders its
        build's `package_dir` maps its packages into (`mapped`: gate/environment/packages.py), then
        `python_path`."""
        return tuple(dict.fromkeys((*(("src",) if src_layout else ()), *mapped, *self.python_path)))


@dataclass(frozen=True)
class RepoSuite:
    """The repository's pytest suite (`tests:`), from the base commit, run against the head's code."""

    paths: tuple[str, ...] = key(("tests",), "test directories or files, read from the base commit", min_items=1,
                                 path=True,
                                 items=_inside("a test directory or file inside the repository, such as `tests`"))
    baseline: Literal["base", "none"] = key("base", "base: charge tests that pass on the base and not on the "
                                            "head; none: charge every failure")
    timeout: float = key(600.0, "wall seconds for the whole suite", exclusive_minimum=0)
    test_timeout: float = key(60.0, "wall seconds per test; a test past it costs points.timeout and the rest "
                              "resume", exclusive_minimum=0)
    workers: int = key(2, "sandboxed pytest processes the tests are shared over", minimum=1, maximum=64)


@dataclass(frozen=True)
class Scope:
    """One part of a monorepo (`scopes:`): the changed files under `paths` are scored with its own budget,
    points, cases and tests; what it leaves unset is the policy's (docs/policy.md, "Monorepos")."""

    name: str = key(description="the scope's name in the report", pattern="^[A-Za-z0-9][A-Za-z0-9._/-]*$",
                    expected="a short name such as `api`")
    paths: tuple[str, ...] = key(description="globs of the files that belong to the scope (the first scope that "
                                 "matches a file takes it)", min_items=1,
                                 items=_glob("a glob such as `services/api/`"), problem=_bad_glob)
    budget: int | None = key(None, "the scope's budget (default: the policy's)", minimum=0, unset=True)
    # Already merged over the policy's points.
    points: Points | None = key(None, "points that differ from the policy's", unset=True,
                                schema={"$ref": "#/properties/points"})
    cases: tuple[CaseSpec, ...] | None = key(None, "the scope's cases (default: the policy's)", unset=True,
                                             schema=CASE_LIST)
    tests: RepoSuite | None = key(None, "the scope's test suite (default: the policy's)", unset=True,
                                  nullable=True)


@dataclass(frozen=True)
class Policy:
    """The effective policy after `extends:` is applied."""

    # The preset it extends ("default" when a repository file names none); None for a preset at the root.
    extends: str | None = key(None, "the preset this file starts from (default: `default`)", unset=True,
                              shown_default="default")
    budget: int = key(3, "accepted when the total points are at most this", minimum=0)
    mode: Literal["enforce", "advisory"] = key("enforce", "advisory: report, never block")
    points: Points = key(factory=Points, description="points charged per check")
    paths: Paths = key(factory=Paths, description="which changed files are gated (globs from the repository "
                       "root)")
    imports: ImportRules = key(factory=ImportRules, description="which imports are allowed")
    languages: tuple[Language, ...] = key((), "syntax checks for other languages, by file extension",
                                          keyed_by="extension",
                                          items={"description": "how to syntax-check one extension"})
    claims: ClaimRules = key(factory=ClaimRules, description="the complexity-claims check")
    cases: tuple[CaseSpec, ...] = key((), "cases every change is run against", schema=CASE_LIST)
    hidden: Hidden = key(factory=Hidden, description="where hidden cases live (read from the base commit)")
    bots: Bots = key(factory=Bots, description="which pull requests are gated")
    limits: RunLimits = key(factory=RunLimits, description="bounds for every run of candidate code")
    runs: int = key(2, "how many times each case runs (different PYTHONHASHSEED) to catch nondeterminism",
                    minimum=1)
    require: tuple[str, ...] = key((), "isolation layers that must be present, or the gate fails (exit 3); "
                                   "`gate policy schema` lists the names",
                                   choices=_layers, unique_items=True)
    # `gate ci` runs cases without its CI layers only when this says so (docs/github.md).
    allow_weaker_isolation: bool = key(False, "let `gate ci` run cases without the layers it requires in CI "
                                       "(uid, no-new-privs, netns, mountns, seccomp); every verdict says so")
    # Read from the default branch's policy only (docs/github.md, "Which PRs post the gate's status").
    protected_branches: tuple[str, ...] = key(
        (), "branches besides the default one whose protection reads the gate's status and check run (read from "
        "the default branch's policy only); a PR into any other branch posts them under `gate (into BRANCH)`",
        items=_glob("a branch name or glob such as `release/*`"), problem=_bad_glob)
    # Read from the base's policy, like every rule of trust (gate/sources/trust.py).
    control_plane: tuple[str, ...] = key(
        CONTROL_PLANE, "paths that steer agents or run with the repository's token (agent instructions, their "
        "tools' configuration, workflows, actions, CODEOWNERS): a gated change to one is blocked for a human "
        "whatever its score, naming each file; [] turns it off", items=_glob("a glob such as `AGENTS.md`"),
        problem=_bad_glob)
    python: Literal["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"] = key(
        "3.11", "the Python version the code is parsed for (quote it: \"3.10\")")
    judge: Judge = key(factory=Judge, description="an optional model judge that advises")
    # The default (the defaults of Environment) builds what the base declares, when it declares anything
    # (gate/environment/declarations.py: `declared`); None (`environment: null`): the standard library only.
    environment: Environment | None = key(
        factory=Environment, description="the repository's own environment, built from the base commit only (by "
        "default the dependencies the base declares, when it declares any; null: the standard library only)")
    tests: RepoSuite | None = key(None, "run the repository's pytest suite from the base commit against the "
                                  "head's code (null: off)")
    scopes: tuple[Scope, ...] = key((), "monorepo parts, each scored on its own: the changed files under its "
                                    "paths, with its own budget, points, cases and tests")
    # Where this policy came from, for the report footer: "default preset", ".github/gate.yml@abc1234", ...
    source: str = key("default preset", internal=True)
    # The line of each key the file itself gives (`tests.paths`, `environment.requirements[0]`), so that what
    # is checked after loading (against the repository) names it as the loader's own errors do.
    lines: tuple[tuple[str, int], ...] = key((), internal=True, compare=False)

    def line(self, key: str) -> int | None:
        """The line of `key` in the file, or of the nearest key above it that the file gives."""
        found = dict(self.lines)
        while key:
            if key in found:
                return found[key]
            key = key[:max(key.rfind("."), key.rfind("["), 0)]
        return None

    @property
    def has_cases(self) -> bool:
        """Whether the policy, or one of its scopes, has cases to run against the head."""
        return bool(self.cases or any(s.cases for s in self.scopes))

    @property
    def has_tests(self) -> bool:
        """Whether the policy, or one of its scopes, runs the repository's suite (`tests:`)."""
        return bool(self.tests or any(s.tests for s in self.scopes))

    @property
    def has_cases_or_tests(self) -> bool:
        """Whether the policy, or one of its scopes, runs code against the head (its cases or its tests)."""
        return self.has_cases or self.has_tests

    @property
    def repository_environment(self) -> Environment | None:
        """The environment runs get: `environment:` (by default what the base declares); None under
        `environment: null`."""
        return self.environment


_Section = TypeVar("_Section", bound="DataclassInstance")


def changed(section: _Section, /, **changes: Any) -> _Section:
    """The policy, or one of its sections, with `changes`. They are dataclasses (their fields carry the keys'
    declarations) where the gate's records are msgspec Structs (CONTRIBUTING.md, Records), and mypy cannot tell
    the two apart: this is the one place a dataclass is replaced, and ruff refuses `dataclasses.replace`
    elsewhere."""
    return dataclasses.replace(section, **changes)
