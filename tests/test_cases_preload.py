"""The standard library modules the code imports are loaded once in the zygote, never in place of the code's own."""

from __future__ import annotations

from pathlib import Path

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.checks.imports import Imports
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.policy.keys import Charge
from gate.policy.model import ImportRules, Policy
from gate.sandbox import open_sandbox
from gate.sandbox.base import RunRequest, Sandbox
from gate.subject import SourceFile, Subject
from tests.cases_support import LIMITS, case

# What the code sees of each module when it starts: loaded already (by its zygote) or not.
PROBE = "import sys\nprint(sorted(name for name in {names!r} if name in sys.modules))\n"


def _loaded_at_start(sandbox: Sandbox, names: tuple[str, ...], hash_seed: int = 0, preload: bool = True) -> str:
    result = sandbox.run(RunRequest(script="main.py", files={"main.py": PROBE.format(names=names).encode()},
                                    limits=LIMITS, preload=names if preload else (), hash_seed=hash_seed))
    assert result.exit_code == 0, result.stderr
    return result.stdout.decode().strip()


def test_a_zygote_loads_the_pure_standard_modules_a_run_names(sandbox: Sandbox) -> None:
    assert _loaded_at_start(sandbox, ("dataclasses", "statistics")) == "['dataclasses', 'statistics']"


def test_a_zygote_never_imports_a_module_that_acts_when_imported(sandbox: Sandbox) -> None:
    # `this` prints, `antigravity` starts a browser, `subprocess` and `socket` reach outside: an import in the
    # zygote runs outside every layer of a run, so these stay for the run to import itself.
    assert _loaded_at_start(sandbox, ("this", "antigravity", "subprocess", "shelve")) == "[]"


def _statuses(sandbox: Sandbox, tree: Path, code: str, policy: Policy) -> list[tuple[str, str]]:
    """Score `code` as pkg/calc.py of `tree` with `policy`'s cases; each case's status and detail."""
    (tree / "pkg").mkdir()
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "calc.py").write_text(code)
    subject = Subject(kind="range", label="base..head", tree=tree,
                      files=(SourceFile("pkg/calc.py", code, None, "modified"),))
    verdict = run_checks(subject, policy, sandbox, checks=(Parse(), Imports(), Smoke()))
    return [(c.status, c.detail) for c in verdict.cases]


def test_the_modules_the_code_imports_are_loaded_before_it_but_not_denied_ones(sandbox: Sandbox,
                                                                               tmp_path: Path) -> None:
    # The module notes what is loaded before its own imports run; the harness loads neither of the two.
    code = ("import sys\n\nBEFORE = sorted(n for n in ('graphlib', 'calendar') if n in sys.modules)\n\n"
            "import calendar\nimport graphlib\n\n\ndef before():\n    return BEFORE\n")
    policy = Policy(imports=ImportRules(deny=("calendar",)),
                    cases=(case("call", "before", function="pkg.calc:before", expect=["graphlib"]),))
    assert _statuses(sandbox, tmp_path, code, policy) == [("passed", "")]


def test_the_code_still_imports_its_own_module_of_a_standard_name(sandbox: Sandbox, tmp_path: Path) -> None:
    # The tree's own `statistics.py` at its root is what `import statistics` finds, as it would be alone.
    (tmp_path / "statistics.py").write_text("OWN = True\n")
    code = "import statistics\n\n\ndef own():\n    return getattr(statistics, 'OWN', False)\n"
    policy = Policy(cases=(case("call", "own", function="pkg.calc:own", expect=True),))
    assert _statuses(sandbox, tmp_path, code, policy) == [("passed", "")]


class _Looks(Check):
    """A check that runs, between the static checks and the cases, a program under the cases' first seed that
    says whether its zygote has loaded `statistics` yet."""

    name = "looks"
    needs: tuple[Product, ...] = ()
    produces: tuple[Product, ...] = ()
    static = False
    charges: tuple[Charge, ...] = ()

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.seen = ""

    def enabled(self, policy: Policy) -> bool:
        return True

    def sandbox_paths(self, subject: Subject, policy: Policy) -> tuple[str, ...]:
        return ()

    def run(self, ctx: CheckContext) -> CheckResult:
        assert ctx.sandbox is not None
        self.seen = _loaded_at_start(ctx.sandbox, ("statistics",), hash_seed=self.seed, preload=False)
        return CheckResult()


def test_the_cases_preload_is_made_while_the_checks_before_them_run(tmp_path: Path) -> None:
    # Once the code is parsed, the zygotes of the cases' seeds import what the code imports (Check.warm), while
    # the checks before the cases go on: a run of another check in between finds it loaded already.
    smoke = Smoke(seeds=(11, 12))
    sandbox = open_sandbox(LIMITS)
    sandbox.prepare(smoke.seeds or ())  # (as the engine's sandbox opens: gate.engine.sandboxed)
    looks = _Looks(11)
    code = "import statistics\n\n\ndef middle(xs):\n    return statistics.median(xs)\n"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text(code)
    subject = Subject(kind="range", label="base..head", tree=tmp_path,
                      files=(SourceFile("pkg/calc.py", code, None, "modified"),))
    policy = Policy(cases=(case("call", "middle", function="pkg.calc:middle", args=[[3, 1, 2]], expect=2),))
    try:
        verdict = run_checks(subject, policy, sandbox, checks=(Parse(), Imports(), looks, smoke))
    finally:
        sandbox.close()
    assert [(c.status, c.detail) for c in verdict.cases] == [("passed", "")]
    assert looks.seen == "['statistics']"
