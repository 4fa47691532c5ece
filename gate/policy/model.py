"""The typed, frozen policy: what a repository's `.github/gate.yml` means once loaded.

The defaults here are the `default` preset's schedule (docs/how-it-works.md, "Penalty schedule"); `policies/default.yml`
spells the same values out and a test keeps the two equal. The loader (`gate.policy.loader`) validates the YAML against
`gate/policy/schema.json` before building these objects, so their constructors trust their input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gate.bots.catalog import agent_ids

# Where a repository keeps its policy, relative to its root, unless the user names another path.
DEFAULT_POLICY_PATH = ".github/gate.yml"
# The same file under YAML's other extension, read when the default path is absent (both at once is an error:
# which one gates would be a guess).
ALTERNATE_POLICY_PATH = ".github/gate.yaml"

# Modules a bot patch rarely needs and a hostile one reaches for: processes, network, destructive filesystem
# access, native code and dynamic loading.
DEFAULT_DENY = (
    "os", "subprocess", "socket", "shutil", "ctypes", "cffi", "importlib", "multiprocessing", "signal", "pty",
    "http", "urllib", "ftplib", "smtplib", "telnetlib", "ssl", "asyncio.subprocess", "requests", "httpx",
    "pickle", "marshal", "shelve", "builtins", "code", "codeop", "runpy", "resource", "mmap",
    "fcntl", "posix", "nt", "_thread", "gc", "inspect",
)
DYNAMIC_LOADERS = ("__import__", "importlib.import_module", "eval", "exec", "compile")


@dataclass(frozen=True)
class Points:
    """Points charged per check; smoke and timeout per case, the others once."""

    extract: int = 5
    parse: int = 5
    imports: int = 3
    claims: int = 3
    smoke: int = 2
    timeout: int = 4
    nondeterminism: int = 2
    judge: int = 0

    def of(self, check: str) -> int:
        value: int = getattr(self, check)
        return value


@dataclass(frozen=True)
class Paths:
    """Which changed files are gated: globs relative to the repository root."""

    include: tuple[str, ...] = ("**/*.py",)
    exclude: tuple[str, ...] = ()
    max_file_kb: int = 1024  # a gated file larger than this is not parsed (and costs the parse points)


@dataclass(frozen=True)
class Imports:
    """Allow-list (empty means anything not denied), deny-list, and which imports count."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = DEFAULT_DENY
    scope: Literal["added", "all"] = "added"
    dynamic: bool = True


@dataclass(frozen=True)
class Language:
    """How to syntax-check files of one extension other than Python: argv with `{path}` for the file."""

    extension: str
    command: tuple[str, ...]
    timeout: float = 10.0


@dataclass(frozen=True)
class Claims:
    """The complexity-claims check: whether a function claimed O(1) may still loop."""

    allow_loops: bool = False


@dataclass(frozen=True)
class Bots:
    """Which pull requests are gated (docs/github.md, "Who is gated")."""

    logins: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ("*[bot]",)
    account_types: tuple[str, ...] = ("Bot",)
    branches: tuple[str, ...] = ()
    # Ids of the shipped AI coding agents (gate/bots/agents.yml) whose marks gate a PR; default: all of them.
    agents: tuple[str, ...] = field(default_factory=agent_ids)
    dependency_bots: bool = False  # gate Dependabot's and Renovate's PRs too
    opt_in_labels: tuple[str, ...] = ("gate",)
    opt_out_labels: tuple[str, ...] = ("no-gate",)
    override_labels: tuple[str, ...] = ()  # a maintainer's label that overrides a blocked verdict (neutral)


@dataclass(frozen=True)
class Hidden:
    """Where hidden cases live: a path read from the base commit, or a file an environment variable names."""

    path: str | None = ".github/gate-hidden.yml"
    env: str = "GATE_HIDDEN_CASES"


@dataclass(frozen=True)
class Limits:
    """Bounds for every run of candidate code."""

    timeout: float = 5.0
    cpu: float = 5.0
    memory_mb: int = 512
    output_kb: int = 256
    processes: int = 32
    open_files: int = 64
    file_size_mb: int = 16
    disk_mb: int = 64
    total_timeout: float = 300.0  # wall seconds for all the runs of all the cases together


@dataclass(frozen=True)
class CaseSpec:
    """One case as written in a policy, task or dataset; its kind (gate.cases) gives `fields` meaning."""

    kind: str
    name: str
    fields: tuple[tuple[str, Any], ...] = ()
    hidden: bool = False

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.fields).get(key, default)


@dataclass(frozen=True)
class Judge:
    """An optional model judge that advises (docs/judge.md); off unless `enabled`."""

    enabled: bool = False
    url: str = ""
    model: str = ""
    api_key_env: str = "GATE_JUDGE_API_KEY"
    rubric: str = ""
    rubric_file: str | None = None
    timeout: float = 30.0
    retries: int = 2
    add_points: bool = False
    needs_review: Literal["advice", "label", "block"] = "advice"
    label: str = "needs-review"


@dataclass(frozen=True)
class Environment:
    """The repository's own environment, built from the base commit only (docs/repository.md): the
    project's dependencies, `extras` and `requirements` files, installed outside the sandbox into a cached
    virtual environment that runs see read-only."""

    project: bool = True
    extras: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    python_path: tuple[str, ...] = ()
    dependency_changes: Literal["block", "note"] = "block"


@dataclass(frozen=True)
class Tests:
    """The repository's pytest suite, from the base commit, run against the head's code."""

    paths: tuple[str, ...] = ("tests",)
    baseline: Literal["base", "none"] = "base"
    timeout: float = 600.0
    test_timeout: float = 60.0
    workers: int = 2


@dataclass(frozen=True)
class Scope:
    """One part of a monorepo (`scopes:`): the changed files under `paths` are scored with its own budget,
    points, cases and tests; what it leaves unset is the policy's (docs/policy.md, "Monorepos")."""

    name: str
    paths: tuple[str, ...]
    budget: int | None = None
    points: Points | None = None  # already merged over the policy's points
    cases: tuple[CaseSpec, ...] | None = None
    tests: Tests | None = None


@dataclass(frozen=True)
class Policy:
    """The effective policy after `extends:` is applied."""

    budget: int = 3
    mode: Literal["enforce", "advisory"] = "enforce"
    points: Points = field(default_factory=Points)
    paths: Paths = field(default_factory=Paths)
    imports: Imports = field(default_factory=Imports)
    languages: tuple[Language, ...] = ()
    claims: Claims = field(default_factory=Claims)
    cases: tuple[CaseSpec, ...] = ()
    hidden: Hidden = field(default_factory=Hidden)
    bots: Bots = field(default_factory=Bots)
    limits: Limits = field(default_factory=Limits)
    runs: int = 2
    require: tuple[str, ...] = ()
    # `gate ci` runs cases without its CI layers only when this says so (docs/github.md).
    allow_weaker_isolation: bool = False
    python: str = "3.11"
    judge: Judge = field(default_factory=Judge)
    # None: the standard library only; `tests` without `environment` builds the default Environment.
    environment: Environment | None = None
    tests: Tests | None = None
    scopes: tuple[Scope, ...] = ()
    # Where this policy came from, for the report footer: "default preset", ".github/gate.yml@abc1234", ...
    source: str = "default preset"
    # The preset it extends ("default" when a repository file names none); None for a preset at the root.
    extends: str | None = None

    @property
    def has_cases_or_tests(self) -> bool:
        """Whether the policy, or one of its scopes, runs code against the head (its cases or its tests)."""
        return bool(self.cases or self.tests or any(s.cases or s.tests for s in self.scopes))

    @property
    def repository_environment(self) -> Environment | None:
        """The environment runs get: `environment:`, or its defaults when only `tests:` is set."""
        wants_tests = self.tests or any(scope.tests for scope in self.scopes)
        return self.environment or (Environment() if wants_tests else None)
