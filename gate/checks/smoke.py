"""The smoke check: run every public and hidden case, each `runs` times with a different PYTHONHASHSEED.

Each case that fails costs `points.smoke`; one that runs out of time costs `points.timeout` instead (and is
not run again: a second timeout would only cost time). Cases run in parallel over the cores
(gate/cases/schedule.py) and are reported in their order; those that had not started when
`limits.total_timeout` was spent are reported as not run and cost `points.timeout` each, since nothing shows
they would have passed. The report names failed cases by index and name with a
short expected/got diff; a hidden case is "hidden case N" and its detail names only the type of what came
back. It produces the outcomes of every run for the nondeterminism check.

`gate eval` scores a dataset's cases through the same check, with one fixed seed: pass@k asks only whether a
sample passes (`Smoke(seeds=(0,))`).
"""

from __future__ import annotations

import glob
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from msgspec.structs import replace

from gate.cases import KINDS, schedule
from gate.cases.base import CaseOutcome, Program, ServedTogether
from gate.cases.schedule import Plan
from gate.checks.base import Analysis, CaseRuns, Check, CheckContext, CheckResult, Product
from gate.checks.imports import find_imports, under_any
from gate.limits import sandbox_limits
from gate.policy.keys import Charge
from gate.policy.model import CaseSpec, Policy
from gate.sandbox.base import Limits, RunRequest, Sandbox
from gate.subject import Subject
from gate.verdict import CaseReport, Note, Penalty


def hash_seeds(runs: int) -> tuple[int, ...]:
    """The PYTHONHASHSEED of each run: fixed, so that the verdict is reproducible, and different, so that
    set-order bugs show up. 0 (no randomisation) is left out.
    """
    return tuple(range(1, max(2, runs) + 1))


# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
SMOKE = Charge(
    "smoke", 2,
    "per failed case",
    per="per failed case",
    catches="a case whose output or return value is wrong")

TIMEOUT = Charge(
    "timeout", 4,
    "per case that ran out of time (instead of smoke)",
    per="per case (instead of smoke)",
    catches="a case that ran out of time, or did not run (extract or parse failed, `limits.total_timeout` spent)")


class Smoke(Check):
    """The code's observable behaviour on the policy's, the task's and the hidden cases. `seeds` fixes the
    hash seeds of every case's runs; by default they follow the policy's `runs`."""

    name = "smoke"
    # Runs the code once it is whole; when it is not (extract or parse failed), every case costs as not run
    # (`unmet`). It reads the Python trees, when there are any, for the modules to preload (`_stdlib_imports`).
    needs: tuple[Product, ...] = ("code",)
    produces: tuple[Product, ...] = ("runs",)
    static = False
    charges: tuple[Charge, ...] = (SMOKE, TIMEOUT)

    def __init__(self, parallel: bool = True, seeds: tuple[int, ...] | None = None, together: bool = True
                 ) -> None:
        self.parallel = parallel  # False: one run at a time (the verdict is the same either way)
        self.together = together  # False: every case in a run of its own (the verdict is the same either way)
        self.seeds = seeds

    def enabled(self, policy: Policy) -> bool:
        return True

    def applies(self, policy: Policy, subject: Subject) -> bool:
        """When there are cases to run: the policy's, the task's, hidden ones."""
        return has_cases(policy, subject)

    def sandbox_paths(self, subject: Subject, policy: Policy) -> tuple[str, ...] | None:
        """The cases run in the sandbox, with nothing of the host beyond it."""
        return () if has_cases(policy, subject) else None

    def hash_seeds(self, policy: Policy) -> tuple[int, ...]:
        return self.seeds or hash_seeds(policy.runs)

    def warm(self, ctx: CheckContext) -> RunRequest | None:
        """The run that serves cases together (`_together`), when some are."""
        if ctx.sandbox is None or not self.together:
            return None
        program = _program(ctx)
        for _, _, case in _numbered(ctx):
            kind = KINDS[case.kind]
            if isinstance(kind, ServedTogether) and kind.module(case, program) is not None:
                return kind.serving(program)
        return None

    def run(self, ctx: CheckContext) -> CheckResult:
        cases = _numbered(ctx)
        not_running = _not_running(ctx)
        if not_running is not None:
            return not_running
        program = _program(ctx)
        seeds = self.hash_seeds(ctx.policy)
        budget = ctx.policy.limits.total_timeout
        sandbox = ctx.sandbox
        assert sandbox is not None  # (_not_running)
        every = self._outcomes([case for _, _, case in cases], program, sandbox, seeds, budget,
                               sandbox_limits(ctx.policy.limits))
        penalties: list[Penalty] = []
        reports: list[CaseReport] = []
        runs: list[CaseRuns] = []
        notes: list[Note] = []
        on_base = _failing_on_base(ctx, cases, every, budget, seeds[0])
        tampered: list[str] = []
        for (index, label, case), outcomes in zip(cases, every, strict=True):
            runs.append(CaseRuns(label, outcomes))
            report = _report(index, label, case, outcomes, budget)
            seen = next((outcome.tampered for outcome in outcomes if outcome.tampered), "")
            if seen:  # no result: nothing to charge, a human to read what was seen
                tampered.append(f"{label}: {seen}")
                reports.append(replace(report, status="error", detail=f"no result: {seen}"))
                continue
            base = on_base.get((case.hidden, index))
            if base is not None:  # the policy's case, not the change's: reported, never charged
                detail = f"fails on the base too ({base}): the policy's case, not charged"
                reports.append(replace(report, detail=detail if case.hidden else f"{detail}; {report.detail}"))
                notes.append(Note(self.name, f"{label} {detail}; fix the policy"))
                continue
            reports.append(report)
            if report.status != "passed":
                penalties.append(_penalty(ctx, index, label, report))
        blocked = (f"a case's results were tampered with, so they are no result and cost no points: "
                   f"{tampered[0]}" + (f" (and {len(tampered) - 1} more)" if len(tampered) > 1 else "")
                   + "; a human must review the change",) if tampered else ()
        return CheckResult(penalties=tuple(penalties), cases=tuple(reports), notes=tuple(notes),
                           made=Analysis(runs=tuple(runs)), blocked_reasons=blocked, tampered=tuple(tampered))


    def _outcomes(self, specs: list[CaseSpec], program: Program, sandbox: Sandbox, seeds: tuple[int, ...],
                  budget: float, limits: Limits) -> list[tuple[CaseOutcome, ...]]:
        """Each case's outcomes (one per seed it ran under), in the order of `specs`, within `budget` seconds.
        The hidden cases run once every run of a public case is over: a public case's report quotes what its run
        sent back, and the code in it could read a hidden case's arguments from a run going beside it, through
        what runs share on a machine (its file locks in /proc/locks, its load, its clock)."""
        every: list[tuple[CaseOutcome, ...]] = [()] * len(specs)
        started = time.monotonic()
        for hidden in (False, True):
            group = [at for at, case in enumerate(specs) if case.hidden is hidden]
            left = budget - (time.monotonic() - started)
            plan = Plan.for_machine(limits.wall_s, left) if self.parallel else Plan.sequential(left)
            chosen = [specs[at] for at in group]
            found = schedule.run_cases([_runner(case, program, sandbox, limits) for case in chosen], seeds, plan,
                                       many=_many(chosen, program, sandbox, limits),
                                       together=_together(chosen, program) if self.together else ())
            for at, outcomes in zip(group, found, strict=True):
                every[at] = outcomes
        return every

    def unmet(self, ctx: CheckContext, why: str) -> CheckResult:
        """Code that could not run (`why`: "extract failed") passed none of its cases: each costs as not run."""
        cases = _numbered(ctx)
        return _not_running(ctx) or _not_run(ctx, cases, why)


def has_cases(policy: Policy, subject: Subject) -> bool:
    """Whether the policy, the task or the hidden cases define a case (smoke and nondeterminism apply)."""
    return bool(policy.cases or subject.cases or subject.hidden_cases)


def _not_running(ctx: CheckContext) -> CheckResult | None:
    """Why no case runs whatever the code: no sandbox to run them in."""
    if ctx.sandbox is None:
        return CheckResult(skipped="code execution is off (no sandbox), so no case ran")
    return None


def _numbered(ctx: CheckContext) -> list[tuple[int, str, CaseSpec]]:
    """(index, label, case): public cases numbered from 1, hidden ones from 1 again."""
    public = (*ctx.policy.cases, *ctx.subject.cases)
    numbered = [(n, f"case {n} ({case.name})" if case.name != f"case {n}" else f"case {n}", case)
                for n, case in enumerate(public, start=1)]
    numbered += [(n, f"hidden case {n}", case) for n, case in enumerate(ctx.subject.hidden_cases, start=1)]
    return numbered


def _program(ctx: CheckContext) -> Program:
    """What the cases run: the reply's (or sample's) one file, or the clean export of the head tree."""
    function = ctx.subject.task.function if ctx.subject.task else None
    preload = _stdlib_imports(ctx)
    if ctx.subject.reply is not None and ctx.files:
        return Program(code=ctx.files[0].text, function=function, preload=preload)
    if ctx.subject.tree is None and len(ctx.files) == 1:
        return Program(code=ctx.files[0].text, function=function, preload=preload)
    return Program(tree=ctx.subject.tree, function=function, python_path=import_path(ctx.subject),
                   preload=preload)


def import_path(subject: Subject) -> tuple[str, ...]:
    """A run's import roots over the head tree: its own first, then the environment's site-packages."""
    sites = subject.environment.site_packages if subject.environment else ()
    return (*subject.import_roots, *sites)


def _stdlib_imports(ctx: CheckContext) -> tuple[str, ...]:
    """The standard library modules the scored files import and the policy does not deny, for the sandbox to
    load once for every run (each run importing dataclasses and statistics again cost it more than the rest of
    its start). Not a name the head tree has a module of where its code imports from first (its root, its own
    import roots such as `src`): the code would import that one."""
    trees = ctx.analysis.trees or {}
    found: set[str] = set()
    for source in ctx.files:
        parsed = trees.get(source.path)
        if parsed is not None:
            found.update(f.module for f in find_imports(parsed, ctx.trees.walk(source.path, parsed))
                         if f.module and f.loader is None)
    tree = ctx.subject.tree
    roots = [] if tree is None else [tree, *(tree / root for root in ctx.subject.import_roots
                                             if not Path(root).is_absolute())]
    deny = ctx.policy.imports.deny
    return tuple(sorted(
        name for name in found
        if name.split(".")[0] in sys.stdlib_module_names and not under_any(name, deny)
        and not any(_shadowed(root, name.split(".")[0]) for root in roots)))


def _shadowed(root: Path, top: str) -> bool:
    return (root / f"{top}.py").exists() or (root / top).is_dir() or any(root.glob(f"{glob.escape(top)}.*.so"))


def _runner(case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits) -> schedule.Run:
    """One run of `case` under a given hash seed."""
    kind = KINDS[case.kind]
    return lambda seed: kind.run(case, program, sandbox, limits, seed)


def _together(cases: list[CaseSpec], program: Program) -> list[list[int]]:
    """The cases that one run may serve together: those of a kind that serves them together (`call` cases with
    a module to call), by kind, the public ones apart from the hidden ones (a public case's report quotes what
    its run sent back, which must never carry what a hidden case's arguments were), each group in the order
    of the modules they call."""
    groups: dict[tuple[str, bool], list[tuple[str, int]]] = {}
    for at, case in enumerate(cases):
        kind = KINDS[case.kind]
        module = kind.module(case, program) if isinstance(kind, ServedTogether) else None
        if module is not None:
            groups.setdefault((case.kind, case.hidden), []).append((module, at))
    return [[at for _, at in sorted(group)] for group in groups.values()]


def _many(cases: list[CaseSpec], program: Program, sandbox: Sandbox, limits: Limits) -> schedule.Many:
    """Serve cases (by index) together in one run under a hash seed."""
    def serve(members: Sequence[int], seed: int, core: int | None) -> schedule.Served:
        kind = KINDS[cases[members[0]].kind]
        assert isinstance(kind, ServedTogether)  # (_together grouped only such kinds' cases)
        served = kind.run_many([cases[at] for at in members], program, sandbox, limits, seed,
                               schedule.SERVED_CUT_S, core)
        return schedule.Served({members[at]: outcome for at, outcome in served.outcomes.items()},
                               frozenset(members[at] for at in served.alone),
                               None if served.cut is None else members[served.cut])
    return serve


def _report(index: int, label: str, case: CaseSpec, outcomes: tuple[CaseOutcome, ...],
            budget: float) -> CaseReport:
    name = label if case.hidden else case.name
    if not outcomes:
        return CaseReport(index, name, case.kind, case.hidden, "not run",
                          f"not run: the cases' wall budget (limits.total_timeout, {budget:g} s) was spent", 0.0)
    worst = next((o for o in outcomes if o.status == "timeout"), None) \
        or next((o for o in outcomes if o.status != "passed"), outcomes[0])
    seconds = round(sum(o.seconds for o in outcomes), 4)
    return CaseReport(index, name, case.kind, case.hidden, worst.status, worst.detail, seconds)


def _failing_on_base(ctx: CheckContext, cases: list[tuple[int, str, CaseSpec]],
                     every: Sequence[tuple[CaseOutcome, ...]], budget: float, seed: int
                     ) -> dict[tuple[bool, int], str]:
    """The cases that failed on the head and fail on the base too, by (hidden, index), with how (for a hidden
    case only its status): each one that failed on the head runs once more, alone, against the base's tree (a
    range or PR's), so the honest path, where every case passes, runs nothing more. A case for code the base
    does not have (a module or function the head adds, gate/cases/resolve.py) is the head's to pass."""
    from gate.cases.resolve import unresolved

    base, sandbox = ctx.subject.base, ctx.sandbox
    failed = [(index, label, case) for (index, label, case), outcomes in zip(cases, every, strict=True)
              if _report(index, label, case, outcomes, budget).status not in ("passed", "not run")
              and not any(outcome.tampered for outcome in outcomes)]
    if base is None or sandbox is None or not failed:
        return {}
    head = _program(ctx)
    sites = ctx.subject.environment.site_packages if ctx.subject.environment else ()
    tree = base.export()
    program = replace(head, tree=tree, python_path=(*base.roots, *sites))
    limits = sandbox_limits(ctx.policy.limits)

    def read(path: str) -> str | None:
        target = tree / path
        return target.read_text(encoding="utf-8", errors="replace") if target.is_file() else None

    found = {}
    for index, _, case in failed:
        if unresolved([case], read, ("", *base.roots)):
            continue
        outcome = KINDS[case.kind].run(case, program, sandbox, limits, seed)
        if outcome.status != "passed":
            found[(case.hidden, index)] = outcome.status if case.hidden else f"{outcome.status}: {outcome.detail}"
    return found


def _not_run(ctx: CheckContext, cases: list[tuple[int, str, CaseSpec]], why: str) -> CheckResult:
    """Every case reported as not run because the code could not be (`why`), each costing `points.timeout`,
    as a case `limits.total_timeout` left out does: nothing shows it would have passed."""
    reports = tuple(CaseReport(index, label if case.hidden else case.name, case.kind, case.hidden, "not run",
                               f"not run: {why}", 0.0) for index, label, case in cases)
    penalties = tuple(_penalty(ctx, index, label, report)
                      for (index, label, _), report in zip(cases, reports, strict=True))
    return CheckResult(penalties=penalties, cases=reports, reason=f"{len(cases)} cases not run ({why})")


def _penalty(ctx: CheckContext, index: int, label: str, report: CaseReport) -> Penalty:
    if report.status == "not run":
        return Penalty(TIMEOUT.name, ctx.policy.points[TIMEOUT], f"{label} {report.detail}", case=index)
    if report.status == "timeout":  # the detail says how: "ran out of time (wall timeout)"
        detail = report.detail if report.detail.startswith("ran out of time") else f"ran out of time: {report.detail}"
        return Penalty(TIMEOUT.name, ctx.policy.points[TIMEOUT], f"{label} {detail}", case=index)
    verb = "could not run" if report.status == "error" else "failed"
    detail = f": {report.detail}" if report.detail else ""
    if report.hidden and report.status == "failed" and report.detail.startswith("returned "):
        detail = (f": a wrong value ({report.detail}; a hidden case shows only the type of what came back, so that "
                  "its expected value stays secret)")
    return Penalty(SMOKE.name, ctx.policy.points[SMOKE], f"{label} {verb}{detail}", case=index)


CHECK = Smoke()
