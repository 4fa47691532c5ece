"""Running many cases at once: every run of every case, over the machine's cores, within one wall budget.

Each case is run once per hash seed, one seed after the other (a case that times out or cannot run is not run
again: its next run would only cost another limit). Different cases run in parallel: up to one run per core
starts at once, and a run that has gone on for a quarter of its time limit stops holding its core, so that
hanging cases overlap instead of adding up (at most `most` runs go at once). The outcomes come back in the
cases' order, whatever order the runs finished in, so the verdict does not depend on the schedule. Once the
budget is spent no run starts; a case that had none is returned with no outcome (the caller reports it as not
run). A run already going when the budget runs out still ends by its own limits.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from gate.cases.base import CaseOutcome

# A run of one case under one hash seed.
Run = Callable[[int], CaseOutcome]
_LAST = ("timeout", "error")  # outcomes after which a case is not run again


@dataclass(frozen=True)
class Plan:
    """How many runs go at once, and for how long in all."""

    slots: int  # runs started at once: one per core
    most: int  # runs going at once, counting those past long_after_s
    long_after_s: float  # a run going longer than this stops holding its slot
    budget_s: float  # wall seconds for every run of every case together

    @classmethod
    def for_machine(cls, run_timeout_s: float, budget_s: float) -> Plan:
        """One slot per core this process may use; up to four runs a core in all."""
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return cls(slots=cores, most=min(4 * cores, 16), long_after_s=run_timeout_s / 4, budget_s=budget_s)

    @classmethod
    def sequential(cls, budget_s: float) -> Plan:
        """One run at a time (what a parallel plan must agree with)."""
        return cls(slots=1, most=1, long_after_s=float("inf"), budget_s=budget_s)


def run_cases(cases: Sequence[Run], seeds: Sequence[int], plan: Plan) -> list[tuple[CaseOutcome, ...]]:
    """The outcomes of each case (one per seed it ran under, in seed order), in the order of `cases`; empty for
    a case that never started before the budget was spent. An exception of a run (the sandbox failed) stops
    every other start and is raised once the runs going have ended."""
    outcomes: list[list[CaseOutcome]] = [[] for _ in cases]
    pending = deque((case, 0) for case in range(len(cases)))
    going: dict[Future[CaseOutcome], tuple[int, int, float]] = {}  # run -> (case, seed index, started)
    deadline = time.monotonic() + plan.budget_s
    with ThreadPoolExecutor(max_workers=plan.most, thread_name_prefix="gate-case") as pool:
        while pending or going:
            now = time.monotonic()
            if now >= deadline:
                pending.clear()
            young = [started for _, _, started in going.values() if now - started < plan.long_after_s]
            while pending and len(young) < plan.slots and len(going) < plan.most:
                case, seed = pending.popleft()
                going[pool.submit(cases[case], seeds[seed])] = (case, seed, now)
                young.append(now)
            if not going:
                break
            # Wake when a run ends, or when the oldest young run stops holding its slot (a case is waiting).
            wake = min(young) + plan.long_after_s - now if pending and young else None
            done, _ = wait(going, timeout=None if wake is None else max(0.0, min(wake, deadline - now)),
                           return_when=FIRST_COMPLETED)
            for future in done:
                case, seed, _ = going.pop(future)
                error = future.exception()
                if error is not None:
                    pending.clear()
                    for other in going:
                        other.exception()  # let the runs going end (each within its own limits)
                    raise error
                outcome = future.result()
                outcomes[case].append(outcome)
                if outcome.status not in _LAST and seed + 1 < len(seeds):
                    pending.appendleft((case, seed + 1))  # a case's reruns first: it finishes sooner
    return [tuple(found) for found in outcomes]
