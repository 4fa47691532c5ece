"""The pipeline's middle: run the checks over what is scored and add the penalties up into a verdict."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from contextlib import nullcontext

from msgspec.structs import replace

from gate import __version__
from gate.cases.hidden import places_to_hide
from gate.checks import all_checks
from gate.checks.base import Analysis, Check, CheckContext, CheckResult
from gate.checks.trees import TreeCache
from gate.limits import sandbox_limits
from gate.policy.model import Policy
from gate.progress import QUIET, Progress
from gate.sandbox import open_sandbox
from gate.sandbox.base import Sandbox
from gate.scopes import by_scope
from gate.sources.base import ScoreInput
from gate.subject import Subject
from gate.suite.selection import framework_path
from gate.verdict import NO_CODE, Blind, CaseReport, CheckReport, Note, Penalty, Tamper, Verdict, is_accepted


def run_checks(subject: Subject, policy: Policy, sandbox: Sandbox | None = None,
               checks: Sequence[Check] | None = None, reproduce: str = "", progress: Progress = QUIET,
               trees: TreeCache | None = None) -> Verdict:
    """The verdict of the checks (by default the registry's) over `subject` under `policy`, their points added
    up. `sandbox` is None when no code may run (static checks only). `progress` hears of each check that runs
    code, as it starts and ends; `trees` holds the syntax trees the source already built (ScoreInput.trees)."""
    started = time.perf_counter()
    # No code until the extract check finds some (a reply's block); a change's files are there from the start.
    files = subject.files or None
    ctx = CheckContext(subject=subject, policy=policy, sandbox=sandbox, analysis=Analysis(files=files),
                       trees=trees if trees is not None else TreeCache(), progress=progress)
    pipeline = list(checks) if checks is not None else all_checks()
    penalties: list[Penalty] = []
    notes: list[Note] = []
    cases: list[CaseReport] = []
    labels: list[str] = []
    blocked_reasons: list[str] = list(subject.blocked_reasons)
    timings: dict[str, float] = dict(subject.timings)
    shared: list[tuple[str, str]] = []
    tampered: list[Tamper] = []
    blind: list[Blind] = []
    # (Nobody turned the others on, or they have nothing to do: not a skipped check worth a line in every report.)
    running = [check for check in pipeline if check.enabled(policy) and check.applies(policy, subject)]
    warmed: set[str] = set()
    for check in running:
        _warm(running, ctx, warmed)
        t0 = time.perf_counter()
        with nullcontext() if check.static else progress.step(check.name) as step:
            unmet = _unmet_need(check, ctx, pipeline)
            result = check.unmet(ctx, unmet) if unmet else check.run(ctx)
            ran_hidden = any(case.hidden for case in result.cases)
            if step is not None:
                step.done(_said(result), timed=not ran_hidden)
        ctx.analysis = ctx.analysis.merged(_declared(check, result.made))
        penalties.extend(result.penalties)
        notes.extend(result.notes)
        # A hidden case's time is never in a verdict: code that sleeps `arg / 100` s would write each
        # hidden input into it. Nor is the time of the check that ran it, nor the total.
        cases.extend(replace(case, seconds=0.0) if case.hidden else case for case in result.cases)
        labels.extend(label for label in result.labels if label not in labels)
        blocked_reasons.extend(result.blocked_reasons)
        shared.extend(result.isolation)
        tampered.extend(Tamper(check.name, seen) for seen in result.tampered)
        blind.extend([result.blind] if result.blind is not None and result.blind.blind else [])
        points = sum(p.points for p in result.penalties)
        if result.skipped:
            report = CheckReport(check.name, "skipped", reason=result.skipped)
        else:
            # A run tampered with is no result: no points, and no pass either.
            report = CheckReport(check.name, "failed" if result.penalties or result.tampered else "passed",
                                 points=points, reason=result.reason)
        seconds = 0.0 if ran_hidden else round(time.perf_counter() - t0, 4)
        ctx.reports[check.name] = CheckReport(report.name, report.status, report.points, report.reason, seconds)
        if not ran_hidden:
            timings[check.name] = seconds
    total = sum(p.points for p in penalties)
    if not any(case.hidden for case in cases):
        timings["total"] = round(time.perf_counter() - started, 4)
    return Verdict(
        subject_kind=subject.kind,
        subject_label=subject.label,
        policy_source=policy.source,
        mode=policy.mode,
        budget=policy.budget,
        total=total,
        accepted=is_accepted(total, policy.budget, blocked_reasons, policy.mode),
        penalties=tuple(penalties),
        checks=tuple(ctx.reports.values()),
        cases=tuple(cases),
        blocked_reasons=tuple(blocked_reasons),
        notes=tuple(notes),
        labels=tuple(labels),
        isolation=_isolation(sandbox, shared),
        facts=_facts(subject),
        untested=subject.untested,
        timings=tuple(timings.items()),
        gate_version=__version__,
        reproduce=reproduce,
        tampered=tuple(tampered),
        blind=tuple(blind),
    )


def run_sandboxed(subject: Subject, policy: Policy, reproduce: str = "", hide: tuple[str, ...] = (),
                  progress: Progress = QUIET, trees: TreeCache | None = None) -> Verdict:
    """`run_checks` over `subject`, its cases, tests and checkers run in a sandbox under the policy's limits that
    hides the `hide` places (the repository) and every hidden-cases file outside it from every run; no sandbox
    is started when no check runs anything (its start-up is not free). Raises GateFailure (exit 3) when a layer
    the policy requires is missing here. `progress` hears of the builds and the checks that run code; `trees`
    is run_checks'."""
    wanted = [(check, paths) for check in all_checks() if check.enabled(policy) and check.applies(policy, subject)
              for paths in (check.sandbox_paths(subject, policy),) if paths is not None]
    if not wanted:
        return run_checks(subject, policy, reproduce=reproduce, progress=progress, trees=trees)
    seeds = (*((0,) if subject.layers else ()), *(seed for check, _ in wanted for seed in check.hash_seeds(policy)))
    with sandboxed(subject, policy, [path for _, paths in wanted for path in paths], hide, progress,
                   tuple(dict.fromkeys(seeds))) as (ready, sandbox):
        return run_checks(ready, policy, sandbox, reproduce=reproduce, progress=progress, trees=trees)


def likely_hash_seeds(policy: Policy) -> tuple[int, ...]:
    """The hash seeds that runs under `policy` will likely use, as `run_sandboxed` asks for them: those of each
    enabled check that runs something, the cases' only when the policy has cases to run; the zygotes for them
    start ahead (gate.sandbox.layers_found_ahead). (A project built for cases alone, and cases only a
    hidden-cases file holds, are not seen here: their zygotes start as the sandbox opens. A zygote never used
    costs a core about 0.1 s.)"""
    checks = [check for check in all_checks() if check.enabled(policy)
              and (policy.has_cases or "runs" not in check.produces)]  # (the cases' runs: the smoke check's)
    return tuple(dict.fromkeys(seed for check in checks for seed in check.hash_seeds(policy)))


def suite_framework() -> tuple[str, ...]:
    """The modules of the test framework a suite's runs import, which a zygote imports once for all of them
    (open_sandbox's `framework`; where from: `framework_path`)."""
    from gate.suite.harness import PREIMPORTED

    return PREIMPORTED


@contextlib.contextmanager
def sandboxed(subject: Subject, policy: Policy, paths: Sequence[str], hide: tuple[str, ...] = (),
              progress: Progress = QUIET, hash_seeds: Sequence[int] = ()) -> Iterator[tuple[Subject, Sandbox]]:
    """A sandbox for `subject`'s runs under the policy's limits, with `paths` (what the checks' programs need)
    read-only, and `subject` with its project built in it (the time the sandbox's start and the build took
    in its timings); closed on leaving. What runs under `hash_seeds` need starts as it opens
    (Sandbox.prepare)."""
    # The repository's environment, the layers its project is built into and what the checks' programs need
    # (the gate's pytest copy, the `languages:` checkers) are all a run sees of the host beyond the
    # interpreter's own files. The layers are filled once the sandbox is open; its runs see them then.
    for layer in subject.layers or ():
        layer.path.mkdir(parents=True, exist_ok=True)
    # With extension sources to compile, the compiler and the interpreter's headers too (gate/sandbox/toolchain.py).
    toolchain = subject.layers[0].toolchain if subject.layers else None
    sites = subject.environment.site_packages if subject.environment is not None else ()
    readonly = (*sites,
                *dict.fromkeys(paths),
                *dict.fromkeys(str(layer.path) for layer in subject.layers or ()),  # (base and head: one tree)
                *(toolchain.paths if toolchain is not None and not toolchain.missing else ()))
    framework: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    if subject.suite is not None:  # (the suite's runs import pytest from the environment or the gate's copy)
        framework = (suite_framework(), framework_path(subject.environment, subject.suite.runner))
    opening = time.perf_counter()
    sandbox = open_sandbox(sandbox_limits(policy.limits), require=policy.require,
                           hide=(*hide, *places_to_hide(policy)), readonly=readonly, sites=sites,
                           framework=framework)
    try:
        sandbox.prepare(hash_seeds)
        building = time.perf_counter()
        ready = subject
        if subject.layers is not None:
            from gate.environment.project import built  # (zipfile and more: only for a project to build)

            ready = built(subject, sandbox, sandbox_limits(policy.limits), progress)
        spent = (("sandbox", round(building - opening, 4)), ("build", round(time.perf_counter() - building, 4)))
        yield replace(ready, timings=(*ready.timings, *spent)), sandbox
    finally:
        sandbox.close()


def score(found: ScoreInput, progress: Progress = QUIET, started: float | None = None) -> Verdict:
    """The verdict for what a source gives (a git range, a PR), part by part (`scopes:`): what `gate check` prints,
    and what the PR gate posts for the same commits, so that both give the same verdict. Raises GateFailure (exit 3)
    when a layer the policy requires is missing here. Its `total` time is the whole run's: from `started` (the
    command's start, time.perf_counter()), else from when the source started, the environment's build included."""
    verdict = by_scope(found.subject, found.policy, lambda subject, policy: run_sandboxed(
        subject, policy, reproduce=found.reproduce, hide=found.private, progress=progress, trees=found.trees))
    timings = dict(verdict.timings)
    if "total" not in timings:  # (a hidden case ran: no time of the whole is told)
        return verdict
    timings["total"] = round(time.perf_counter() - min(found.started, started or found.started), 4)
    return replace(verdict, timings=tuple(timings.items()))


def _isolation(sandbox: Sandbox | None, shared: list[tuple[str, str]]
               ) -> tuple[tuple[str, str], ...]:
    """How the code ran: the sandbox's layers, and what the checks say shared a process with it."""
    if sandbox is None:
        return ((NO_CODE, "off: not run"),)
    return tuple(sorted({**sandbox.isolation, **dict(shared)}.items()))


def _said(result: CheckResult) -> str:
    """How a check that ran code went, in the words of its progress line."""
    if result.skipped:
        return f"skipped ({result.skipped})"
    points = sum(p.points for p in result.penalties)
    said = f"failed, +{points} point{'s' * (points != 1)}" if result.penalties else "passed"
    return said + (f": {result.reason}" if result.reason else "")


def _facts(subject: Subject) -> tuple[tuple[str, str], ...]:
    """The source's facts, and the repository's environment the runs imported from."""
    if subject.environment is None:
        return subject.facts
    return (*subject.facts, ("environment", subject.environment.describe()))


def _warm(pipeline: Sequence[Check], ctx: CheckContext, warmed: set[str]) -> None:
    """Have the sandbox make what the runs of each check to come share (Check.warm) as soon as what the check
    needs is produced: while the checks before it run, not when its first run starts."""
    if ctx.sandbox is None:
        return
    for check in pipeline:
        if check.name not in warmed and check.name not in ctx.reports \
                and all(getattr(ctx.analysis, need) is not None for need in check.needs):
            warmed.add(check.name)
            request = check.warm(ctx)
            if request is not None:
                ctx.sandbox.warm(request, check.hash_seeds(ctx.policy))


def _declared(check: Check, made: Analysis) -> Analysis:
    """What `check` produced, when it declared it: a check that hands on anything else is a bug."""
    undeclared = set(made.produced()) - set(check.produces)
    if undeclared:
        raise RuntimeError(f"check {check.name} produced {', '.join(sorted(undeclared))} without declaring it")
    return made


def _unmet_need(check: Check, ctx: CheckContext, pipeline: Sequence[Check]) -> str:
    """Why `check` cannot run, when something it needs was not produced: "X failed" for the first check, in the
    pipeline's order, that failed on the way to it (its producer, or what that one needs in turn); otherwise
    the producer's own reason."""
    for need in check.needs:
        if getattr(ctx.analysis, need) is None:
            on_the_way = _producers(need, pipeline)
            failed = next((c.name for c in pipeline if c.name in on_the_way and _status(ctx, c.name) == "failed"), "")
            if failed:
                return f"{failed} failed"
            producer = next((c.name for c in pipeline if need in c.produces), "")
            report = ctx.reports.get(producer)
            why = report.reason if report and report.reason else f"no check that ran produced {need}"
            return f"no {need} to use ({why})"
    return ""


def _producers(need: str, pipeline: Sequence[Check]) -> set[str]:
    """The checks a product comes through: its producer, and the producers of what that one needs."""
    producer = next((c for c in pipeline if need in c.produces), None)
    if producer is None:
        return set()
    return {producer.name}.union(*(_producers(each, pipeline) for each in producer.needs))


def _status(ctx: CheckContext, name: str) -> str:
    report = ctx.reports.get(name)
    return report.status if report is not None else ""
