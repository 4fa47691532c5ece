"""Score a branch's changes in worker processes, in parallel, keeping what is done when interrupted.

Each worker scores one change at a time with the engine, exactly as `gate check --base B --head H` would
(`subject_from_commits`, `engine.score`), so the environments and suite baselines of the gate's cache serve
every change that shares a base's dependencies. Workers are processes (the sandbox and the repository's git
processes each hold state a thread must not share) that leave Ctrl-C to the parent: on an interrupt the
parent stops taking results, ends each worker by SIGTERM (which unwinds its runs and exports like an error
would) and reports what was done.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import msgspec

from gate.engine import score
from gate.errors import GateError, GateFailure
from gate.policy.model import Policy
from gate.policy_file import load_policy
from gate.sources.gitcli import Repo
from gate.sources.gitrange import subject_from_commits

INTERRUPTED = "interrupted"
# How long a worker may take to unwind after SIGTERM (a run being killed, an export removed) before SIGKILL.
_UNWIND_S = 20.0


class Outcome(msgspec.Struct, frozen=True):
    """One change scored under one policy: what the replay's tables need of its verdict."""

    accepted: bool
    total: int
    budget: int
    points: tuple[tuple[str, int], ...]  # the checks that charged points, in the engine's order
    blocked_reasons: tuple[str, ...] = ()


class Scored(msgspec.Struct, frozen=True):
    """A change's outcomes (under its base's policy and, when given, the candidate), or why it could not be
    scored (`failed`: the gate could not do its job, exit 3, rather than the change's own bad input)."""

    index: int
    current: Outcome | None = None
    candidate: Outcome | None = None
    error: str = ""
    failed: bool = False


class Job(msgspec.Struct, frozen=True):
    """What every worker needs: the repository, and the candidate policy's file when there is one."""

    repo: str
    candidate: str | None = None
    tasks: Sequence[tuple[int, str, str]] = msgspec.field(default_factory=tuple)  # (index, base, head)


def run_all(job: Job, workers: int, done: Callable[[Scored], None]) -> str:
    """Score every task of `job` over `workers` processes, calling `done` with each result as it comes (in
    the parent). Returns "" when every task was scored, else why not: Ctrl-C, or the workers gone without
    their results (killed)."""
    context = multiprocessing.get_context("spawn")
    tasks: Any = context.Queue()
    results: Any = context.Queue()
    for task in job.tasks:
        tasks.put(task)
    count = max(1, min(workers, len(job.tasks)))
    for _ in range(count):
        tasks.put(None)
    procs = [context.Process(target=_worker, args=(job.repo, job.candidate, tasks, results), daemon=True)
             for _ in range(count)]
    for proc in procs:
        proc.start()
    received = 0
    finished = False
    try:
        while received < len(job.tasks):
            try:
                scored = results.get(timeout=0.5)
            except queue.Empty:
                if not any(proc.is_alive() for proc in procs):
                    codes = ", ".join(str(proc.exitcode) for proc in procs)
                    return f"the workers exited (codes {codes}) before every change was scored"
                continue
            received += 1
            done(scored)
        finished = True
        return ""
    except KeyboardInterrupt:
        return INTERRUPTED
    finally:
        _stop(procs, finished)


def _stop(procs: Sequence[Any], finished: bool) -> None:
    """End the workers: done, each leaves at its end of the queue; else SIGTERM unwinds each (its sandbox's
    runs, its exports), and SIGKILL ends the one that hangs."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a second Ctrl-C must not leave them behind)
    try:
        for proc in procs:
            if finished:
                proc.join(_UNWIND_S)
            if proc.is_alive():
                proc.terminate()
        for proc in procs:
            proc.join(_UNWIND_S)
            if proc.is_alive():
                proc.kill()
                proc.join()
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker(repo_dir: str, candidate: str | None, tasks: Any, results: Any) -> None:
    """A worker's loop: Ctrl-C is the parent's; SIGTERM unwinds the change being scored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _unwind)
    repo = Repo(repo_dir)
    policy = load_policy(Path(candidate)) if candidate else None
    while (task := tasks.get()) is not None:
        index, base, head = task
        results.put(score_change(repo, index, base, head, policy))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # nothing left to unwind
    repo.close()


def _unwind(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def score_change(repo: Repo, index: int, base: str, head: str, candidate: Policy | None) -> Scored:
    """The change `base..head` of `repo` under its base's policy, and under `candidate` when given."""
    try:
        current = _outcome(repo, base, head, None)
        return Scored(index, current, _outcome(repo, base, head, candidate) if candidate is not None else None)
    except GateError as exc:
        return Scored(index, error=exc.render(), failed=isinstance(exc, GateFailure))
    except Exception as exc:  # a bug in the gate: the row says so, the rest of the replay goes on
        print(f"gate: internal error scoring {head[:12]}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return Scored(index, error=f"internal error: {type(exc).__name__}: {exc}", failed=True)


def _outcome(repo: Repo, base: str, head: str, policy: Policy | None) -> Outcome:
    with subject_from_commits(repo, base, head, candidate=policy) as found:
        verdict = score(found)
    points = tuple((check.name, check.points) for check in verdict.checks if check.points)
    return Outcome(verdict.accepted, verdict.total, verdict.budget, points, verdict.blocked_reasons)
