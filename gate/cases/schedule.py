"""Running many cases at once: every run of every case, over the machine's cores, within one wall budget.

Each case is run once per hash seed, one seed after the other (a case that times out or cannot run is not run
again: its next run would only cost another limit). Different cases run in parallel: up to one run per core
starts at once (two that serve many, below), and a run that has gone on for a quarter of its time limit stops
holding its core, so that hanging cases overlap instead of adding up (at most `most` runs go at once).

Cases that one run may serve together (`call` cases: gate/cases/harness/calls.py) are split in shares, and each
share is served by one run per seed, its runs under every seed side by side: the fewest shares whose runs make as
many on each core (one share on two cores and two seeds, two on two cores and three seeds), so that a run serves
more cases and imports each module once for them. Such a run holds half a core to its end: its processes hand the
core to one another (a fork, a wait, an exit), and with one such run a core was idle a fifth of the time
(docs/benchmarks.md), so two go on each core, and one a core while a run of one case holds one (that run keeps its
core to itself). Each such run is kept on one core, the one with the fewest of them going: left to the kernel, a
run's processes moved from core to core, onto the other runs' (docs/benchmarks.md). It leaves to a run of its own
each case it cannot vouch for, and a case that goes on past SERVED_CUT_S: that one starts as a long run (it may
hang, so it holds no core), and the rest of its share is split over the cores again, so that more cases that hang
overlap. The cases it did not reach are served by a new run.
Beyond the first runs, what runs under a seed waits for the seed before: a case's run of its own for the case's
outcome there (which ends it, as above, when it timed out), and a share split off for each of its cases to be
served or left there (a case left to a run of its own under an earlier seed runs alone under the later ones too: it
may hang). A case's outcomes under later seeds that a run served beside the one that ended it are dropped. Served
or alone, a case's outcome is the same (tests/test_cases_together.py).

The outcomes come back in the cases' order, whatever order the runs finished in, so the verdict does not
depend on the schedule. Once the budget is spent no run starts; a case that had none is returned with no
outcome (the caller reports it as not run). A run already going when the budget runs out still ends by its
own limits.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

import msgspec
from msgspec.structs import replace

from gate.cases.base import CaseOutcome

# A run of one case under one hash seed.
Run = Callable[[int], CaseOutcome]
_LAST = ("timeout", "error")  # outcomes after which a case is not run again
# A case served with others that goes on longer than this is left to a run of its own, so that hanging cases
# overlap (each in a run of its own) instead of waiting for one another in one run. (Not more for two served runs
# on a core: each cut delays the cases behind it, and a case of over 0.05 s of CPU that is cut only runs alone.)
SERVED_CUT_S = 0.1
_SERVED_PER_CORE = 2  # runs that serve many go on at once on one core (they leave it idle between processes)
_MIN_SHARE = 8  # cases served together are split over the cores only in shares of at least this many


def long_after(run_timeout_s: float) -> float:
    """How long a run of one case goes before it counts as long and stops holding its core."""
    return run_timeout_s / 4


class Plan(msgspec.Struct, frozen=True):
    """How many runs go at once, and for how long in all."""

    slots: int  # runs started at once: one per core (served_per_slot of those that serve many)
    most: int  # runs going at once, counting those past long_after_s
    long_after_s: float  # a run going longer than this stops holding its slot
    budget_s: float  # wall seconds for every run of every case together
    served_per_slot: int = 1  # runs serving many cases that share a slot
    cores: tuple[int, ...] = ()  # the cores a run serving many is kept on, one each (none: where the kernel puts it)

    @classmethod
    def for_machine(cls, run_timeout_s: float, budget_s: float) -> Plan:
        """One slot per core this process may use, two runs serving many on each; up to four runs a core in
        all."""
        cores = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()
        slots = len(cores) or os.cpu_count() or 1
        return cls(slots=slots, most=min(4 * slots, 16), long_after_s=long_after(run_timeout_s),
                   budget_s=budget_s, served_per_slot=_SERVED_PER_CORE, cores=cores)

    @classmethod
    def sequential(cls, budget_s: float) -> Plan:
        """One run at a time (what a parallel plan must agree with)."""
        return cls(slots=1, most=1, long_after_s=float("inf"), budget_s=budget_s)


class Served(msgspec.Struct, frozen=True):
    """What one run that served many cases gave: the outcome of each case it served, by case; the cases it
    left to a run of their own, and of those the one it cut for going on too long. A case in none was not
    reached."""

    outcomes: Mapping[int, CaseOutcome]
    alone: frozenset[int] = frozenset()
    cut: int | None = None


# Many cases (by index) served in one run under one hash seed, kept on one core (or None: anywhere).
Many = Callable[[Sequence[int], int, int | None], Served]


class _Job(msgspec.Struct, frozen=True):
    """A run to start: one case, or cases served together, under the seed of index `seed`."""

    cases: tuple[int, ...]
    seed: int
    together: bool = False
    long: bool = False  # known to go on long (it may hang): it holds no core
    of_a_share: bool = False  # one case a served run left: its run under the next seed is that run's share's


def run_cases(cases: Sequence[Run], seeds: Sequence[int], plan: Plan, many: Many | None = None,
              together: Sequence[Sequence[int]] = ()) -> list[tuple[CaseOutcome, ...]]:
    """The outcomes of each case (one per seed it ran under, in seed order), in the order of `cases`; empty for
    a case that never started before the budget was spent. `many` serves the cases of each group in
    `together`; every other case runs alone. An exception of a run (the sandbox failed) stops every other
    start and is raised once the runs going have ended."""
    found = _Found(len(cases))
    served = {case for group in together for case in group} if many is not None else set()
    pending = deque(_Job((case,), 0) for case in range(len(cases)) if case not in served)
    if many is not None:
        # The fewest shares whose runs under every seed keep each core as busy as the others.
        count = plan.slots // math.gcd(plan.slots, len(seeds))
        shares = [_Job(share, seed, together=True) for group in together for share in _shares(group, count)
                  for seed in range(len(seeds))]
        pending.extendleft(reversed(shares))
    going: dict[Future[object], tuple[_Job, float]] = {}
    kept_on: dict[Future[object], int] = {}  # the core of each run serving many going
    deadline = time.monotonic() + plan.budget_s
    room = plan.slots * plan.served_per_slot
    with ThreadPoolExecutor(max_workers=plan.most, thread_name_prefix="gate-case") as pool:
        while pending or going:
            now = time.monotonic()
            if now >= deadline:
                pending.clear()
            while pending and len(going) < plan.most \
                    and _taken([*going.values(), (pending[0], now)], now, plan) <= room:
                job = pending.popleft()
                if job.together and job.seed > 0:
                    job, apart = found.apart(job)
                    _ahead(pending, apart)
                    if not job.cases:
                        continue
                if job.together and many is not None:
                    core = min(plan.cores, key=list(kept_on.values()).count) if plan.cores else None
                    future: Future[object] = pool.submit(many, job.cases, seeds[job.seed], core)
                    going[future] = (job, now)
                    if core is not None:
                        kept_on[future] = core
                else:
                    going[pool.submit(cases[job.cases[0]], seeds[job.seed])] = (job, now)
            if not going:
                break
            # Wake when a run ends, or when the oldest young run of one case stops holding its core.
            alone = [started for job, started in going.values()
                     if not job.together and _holds_core(job, started, now, plan)]
            wake = min(alone) + plan.long_after_s - now if pending and alone else None
            done, _ = wait(going, timeout=None if wake is None else max(0.0, min(wake, deadline - now)),
                           return_when=FIRST_COMPLETED)
            for future in done:
                job, _ = going.pop(future)
                kept_on.pop(future, None)
                error = future.exception()
                if error is not None:
                    pending.clear()
                    for other in going:
                        other.exception()  # let the runs going end (each within its own limits)
                    raise error
                answer = future.result()
                follow = (_after_many(job, answer, found, plan.slots) if isinstance(answer, Served)
                          else _after_one(job, answer, found, len(seeds)))
                _ahead(pending, [*follow, *found.released()])
    return [found.in_order(case, len(seeds)) for case in range(len(cases))]


class _Found:
    """Each case's outcome under each seed (by the seed's index) as the runs give them, and the runs that wait
    for what the seed before gives their cases."""

    def __init__(self, count: int) -> None:
        self.outcomes: list[dict[int, CaseOutcome]] = [{} for _ in range(count)]
        self.alone: list[set[int]] = [set() for _ in range(count)]  # the seeds a served run left the case under
        self.waiting: list[_Job] = []

    def add(self, case: int, seed: int, outcome: CaseOutcome) -> None:
        self.outcomes[case][seed] = outcome

    def queued(self, jobs: list[_Job]) -> list[_Job]:
        """Of runs that follow from a run, those that may start now; the others wait (`released`). Under a
        later seed, a run of one case waits for the case's outcome under the seed before (it is not run again
        once it timed out or could not run), and a share for the seed before to have served or left each of
        its cases (those left may hang: `apart`)."""
        going_on = [job for job in jobs if job.together or not self.ended(job.cases[0], job.seed)]
        ready = [job for job in going_on if self._known_before(job)]
        self.waiting += [job for job in going_on if job not in ready]
        return ready

    def released(self) -> list[_Job]:
        """The waiting runs that may start now (those of a case that ended are dropped)."""
        waiting, self.waiting = self.waiting, []
        return self.queued(waiting)

    def apart(self, share: _Job) -> tuple[_Job, list[_Job]]:
        """`share` (about to start) without its cases that ended, nor those a served run left to runs of their
        own under an earlier seed (one that went on too long may hang): each of those has a run of its own
        under the share's seed (`queued`)."""
        ended = {case for case in share.cases if self.ended(case, share.seed)}
        apart = [case for case in share.cases if case not in ended
                 and any(seed < share.seed for seed in self.alone[case])]
        kept = tuple(case for case in share.cases if case not in ended and case not in apart)
        return replace(share, cases=kept), self.queued([_Job((case,), share.seed, of_a_share=True)
                                                         for case in apart])

    def ended(self, case: int, seed: int) -> bool:
        """Whether the case runs no more from `seed` on: under an earlier seed it timed out or could not run."""
        return any(outcome.status in _LAST for at, outcome in self.outcomes[case].items() if at < seed)

    def _known_before(self, job: _Job) -> bool:
        before = job.seed - 1
        if before < 0:
            return True
        if job.together:
            return all(before in self.outcomes[case] or before in self.alone[case] or self.ended(case, job.seed)
                       for case in job.cases)
        return before in self.outcomes[job.cases[0]]

    def in_order(self, case: int, seeds: int) -> tuple[CaseOutcome, ...]:
        """The case's outcomes in seed order, up to the first it does not have and after the one that ended it."""
        kept: list[CaseOutcome] = []
        for seed in range(seeds):
            outcome = self.outcomes[case].get(seed)
            if outcome is None:
                break
            kept.append(outcome)
            if outcome.status in _LAST:
                break
        return tuple(kept)


def _ahead(pending: deque[_Job], jobs: list[_Job]) -> None:
    """Queue the runs that follow from a run: each before those pending under its seed or a later one, so that a
    case finishes sooner, and an earlier seed's runs after a cut (which may hang, and are then not run again
    under later seeds) start before a later seed's."""
    for job in reversed(jobs):
        at = next((n for n, other in enumerate(pending) if other.seed >= job.seed), len(pending))
        pending.insert(at, job)


def _holds_core(job: _Job, started: float, now: float, plan: Plan) -> bool:
    return job.together or (not job.long and now - started < plan.long_after_s)


def _taken(runs: list[tuple[_Job, float]], now: float, plan: Plan) -> int:
    """How much of the plan's room (slots × served_per_slot parts) `runs` (each with when it started) take.
    Runs that serve many take a part each, and share cores; beside a run of one case that holds a core, every
    run takes a whole slot, so that no run of one case (which may need most of its time limit) shares its
    core. A run of one case that counts as long takes none."""
    alone = sum(1 for job, started in runs if not job.together and _holds_core(job, started, now, plan))
    served = sum(1 for job, _ in runs if job.together)
    return (alone + served) * plan.served_per_slot if alone else served


def _shares(group: Sequence[int], slots: int, least: int = _MIN_SHARE) -> list[tuple[int, ...]]:
    """`group` in consecutive shares, one per core, none smaller than `least` cases (an empty group none)."""
    if not group:
        return []
    count = max(1, min(slots, len(group) // least))
    size = -(-len(group) // count)
    return [tuple(group[at:at + size]) for at in range(0, len(group), size)]


def _after_one(job: _Job, outcome: object, found: _Found, seeds: int) -> list[_Job]:
    """Take what a run of one case gave; the run of it under the next seed, unless that one is a served run's
    or the case ended."""
    if not isinstance(outcome, CaseOutcome):
        raise TypeError(f"a run of one case gave {type(outcome).__name__}")
    found.add(job.cases[0], job.seed, outcome)
    if job.of_a_share or outcome.status in _LAST or job.seed + 1 >= seeds:
        return []
    return [_Job(job.cases, job.seed + 1, long=job.long)]


def _after_many(job: _Job, served: Served, found: _Found, slots: int) -> list[_Job]:
    """Take what a run serving `job.cases` gave; the runs that follow from it under its seed that may start now
    (the others wait: `_Found.queued`)."""
    follow = [_Job((case,), job.seed, long=case == served.cut, of_a_share=True)
              for case in job.cases if case in served.alone]
    left = tuple(case for case in job.cases if case not in served.outcomes and case not in served.alone)
    if left and not served.outcomes and not served.alone:  # nothing served: the next case goes alone
        follow.append(_Job(left[:1], job.seed, of_a_share=True))
        left = left[1:]
    for case in job.cases:
        if case in served.outcomes:
            found.add(case, job.seed, served.outcomes[case])
    for alone in follow:
        found.alone[alone.cases[0]].add(job.seed)
    # After a cut the share may hold more cases that hang: it is split over the cores, so that they overlap.
    return found.queued(follow + [_Job(share, job.seed, together=True)
                                  for share in _shares(left, slots, least=1 if served.cut is not None else _MIN_SHARE)])
