"""Cases in parallel: the verdict is the one a run at a time gives; hanging cases overlap; one wall budget."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from typing import Any

import pytest
from msgspec.structs import replace

from gate.cases.base import CaseOutcome
from gate.cases.schedule import Plan, Served, run_cases
from gate.checks.extract import Extract
from gate.checks.nondeterminism import Nondeterminism
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.policy.model import CaseSpec, Policy, RunLimits
from gate.sandbox.base import Sandbox
from gate.subject import SourceFile, Subject
from gate.verdict import Verdict
from tests.cases_support import case, without_times

CODE = """\
import time


def double(n):
    return 2 * n


def off_by_one(n):
    return 2 * n + 1


def spin(n):
    while True:
        n += 1


def nap(n):
    time.sleep(60)


def fruit(n):
    return list({"apple", "banana", "cherry", "damson", "elder", "fig", "grape", "huckleberry"})[:n]
"""


def _mix() -> tuple[tuple[CaseSpec, ...], tuple[CaseSpec, ...]]:
    """Passing, failing, hanging (spinning and sleeping) and set-order cases, interleaved, public and hidden."""
    kinds = [("double", 4, 8), ("off_by_one", 4, 8), ("spin", 1, 0), ("fruit", 8, []), ("nap", 1, 0),
             ("double", 5, 10), ("off_by_one", 0, 0), ("fruit", 3, [])]
    public = tuple(case("call", f"{name} {n}", function=name, args=[n], expect=expect)
                   for name, n, expect in kinds)
    hidden = tuple(replace(case("call", f"h{number}", function=name, args=[n], expect=expect), hidden=True)
                   for number, (name, n, expect) in enumerate(reversed(kinds)))
    return public, hidden


def _verdict(sandbox: Sandbox, parallel: bool, policy: Policy) -> Verdict:
    public, hidden = _mix()
    subject = Subject(kind="reply", label="reply.md", reply=f"```python\n{CODE}```\n",
                      files=(SourceFile("solution.py", CODE, None, "extracted"),), cases=public,
                      hidden_cases=hidden)
    return run_checks(subject, policy, sandbox, checks=(Extract(), Parse(), Smoke(parallel=parallel), Nondeterminism()))


@pytest.mark.slow
def test_the_parallel_verdict_is_the_sequential_one(sandbox: Sandbox) -> None:
    policy = Policy(limits=RunLimits(timeout=1.5, cpu=1.5), runs=3)
    sequential = _verdict(sandbox, parallel=False, policy=policy)
    parallel = _verdict(sandbox, parallel=True, policy=policy)
    assert without_times(parallel) == without_times(sequential)
    # ... and that verdict is the mix's: each kind of case reads as what it is, in the cases' order.
    statuses = [(c.index, c.hidden, c.status) for c in parallel.cases]
    assert statuses == [
        (1, False, "passed"), (2, False, "failed"), (3, False, "timeout"), (4, False, "failed"),
        (5, False, "timeout"), (6, False, "passed"), (7, False, "failed"), (8, False, "failed"),
        (1, True, "failed"), (2, True, "failed"), (3, True, "passed"), (4, True, "timeout"),
        (5, True, "failed"), (6, True, "timeout"), (7, True, "failed"), (8, True, "passed")]
    [differed] = [p for p in parallel.penalties if p.check == "nondeterminism"]
    assert "case 4 (fruit 8)" in differed.message
    assert parallel.total == 8 * 2 + 4 * 4 + 2


def test_hanging_cases_run_side_by_side_beyond_the_cores() -> None:
    # Five runs that each wait for all five to be going: run one or two at a time, each would wait in vain.
    together = threading.Barrier(5)

    def hang(seed: int) -> CaseOutcome:
        try:
            together.wait(timeout=30)
        except threading.BrokenBarrierError:
            return CaseOutcome("failed", "ran alone", "alone")
        return CaseOutcome("timeout", "ran out of time", "timeout")

    plan = Plan(slots=2, most=8, long_after_s=0.01, budget_s=60)
    outcomes = run_cases([hang] * 5, (1, 2), plan)
    assert [[o.detail for o in found] for found in outcomes] == [["ran out of time"]] * 5


def test_the_outcomes_keep_the_cases_order_and_each_case_its_seeds_order() -> None:
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def runner(number: int) -> Any:
        def run(seed: int) -> CaseOutcome:
            with lock:
                seen.append((number, seed))
            return CaseOutcome("passed", "", f"{number}/{seed}")
        return run

    outcomes = run_cases([runner(n) for n in range(40)], (1, 2, 3), Plan(slots=2, most=4, long_after_s=1,
                                                                          budget_s=60))
    assert [[o.fingerprint for o in found] for found in outcomes] == [
        [f"{n}/{seed}" for seed in (1, 2, 3)] for n in range(40)]
    assert sorted(seen) == [(n, seed) for n in range(40) for seed in (1, 2, 3)]


def test_a_share_of_cases_served_together_runs_under_every_seed_side_by_side() -> None:
    # Two cores, two seeds: the public cases in one share and the hidden ones in another, each share's runs
    # under both seeds at once (each core serves two runs, and each run imports a module once for its cases).
    started: list[tuple[int, int]] = []
    lock = threading.Lock()

    def many(members: Any, seed: int, core: int | None) -> Served:
        with lock:
            started.append((members[0], seed))
        return Served({member: CaseOutcome("passed", "", "ok") for member in members})

    def alone(seed: int) -> CaseOutcome:
        return CaseOutcome("failed", "should have been served", "alone")

    plan = Plan(slots=2, most=4, long_after_s=100, budget_s=60)
    outcomes = run_cases([alone] * 36, (1, 2), plan, many=many, together=[list(range(32)), list(range(32, 36))])
    assert [[o.detail for o in found] for found in outcomes] == [["", ""]] * 36
    assert sorted(started[:2]) == [(0, 1), (0, 2)] and sorted(started[2:]) == [(32, 1), (32, 2)]
    # Four cores: each seed has two, and the public cases two shares.
    started.clear()
    run_cases([alone] * 36, (1, 2), replace(plan, slots=4), many=many, together=[list(range(32)), list(range(32, 36))])
    assert sorted(started[:4]) == [(0, 1), (0, 2), (16, 1), (16, 2)] and len(started) == 6
    # Two cores, three seeds: two shares of the public cases, so that each core serves three of their runs.
    started.clear()
    run_cases([alone] * 36, (1, 2, 3), plan, many=many, together=[list(range(32)), list(range(32, 36))])
    assert sorted(started) == [(first, seed) for first in (0, 16, 32) for seed in (1, 2, 3)]


def test_runs_that_serve_many_go_two_to_a_core_and_a_run_of_one_case_holds_a_whole_one() -> None:
    # Two cores, two seeds: the public share's and the hidden share's runs under both seeds (four) all go at
    # once, each waiting for the other three; the hidden ones then go on a while. The cases' own runs wait for
    # a core of their own: never more than two runs going while one of them is going.
    served_together = threading.Barrier(4)
    lock = threading.Lock()
    going: list[str] = []
    beside_alone: list[int] = []

    def many(members: Any, seed: int, core: int | None) -> Served:
        with lock:
            going.append("many")
        try:
            served_together.wait(timeout=30)
        except threading.BrokenBarrierError:
            return Served({member: CaseOutcome("failed", "served runs one a core", "late") for member in members})
        finally:
            if members[0] >= 16:
                threading.Event().wait(0.3)  # (the hidden share's runs end last)
            with lock:
                going.remove("many")
        return Served({member: CaseOutcome("passed", "", "ok") for member in members})

    def alone(seed: int) -> CaseOutcome:
        with lock:
            going.append("alone")
            beside_alone.append(len(going))
        threading.Event().wait(0.05)
        with lock:
            going.remove("alone")
        return CaseOutcome("passed", "", "alone")

    plan = replace(Plan.for_machine(run_timeout_s=100, budget_s=60), slots=2)
    outcomes = run_cases([alone] * 24, (1, 2), plan, many=many, together=[list(range(16)), list(range(16, 20))])
    assert [[o.fingerprint for o in found] for found in outcomes] == [["ok", "ok"]] * 20 + [["alone", "alone"]] * 4
    assert max(beside_alone) == 2  # (two cores: a run of one case beside one other run at most)


def test_runs_that_serve_many_are_each_kept_on_the_core_with_the_fewest_of_them() -> None:
    # Two cores, two seeds: the public and the hidden share's runs under both seeds go at once, two on each core
    # (a run's processes hand the core to one another: kept on one, they never land on another run's).
    served_together = threading.Barrier(4)
    lock = threading.Lock()
    kept: list[int | None] = []

    def many(members: Any, seed: int, core: int | None) -> Served:
        with lock:
            kept.append(core)
        with contextlib.suppress(threading.BrokenBarrierError):
            served_together.wait(timeout=30)
        return Served({member: CaseOutcome("passed", "", "ok") for member in members})

    def alone(seed: int) -> CaseOutcome:
        return CaseOutcome("failed", "should have been served", "alone")

    plan = Plan(slots=2, most=8, long_after_s=100, budget_s=60, served_per_slot=2, cores=(3, 5))
    run_cases([alone] * 20, (1, 2), plan, many=many, together=[list(range(16)), list(range(16, 20))])
    assert Counter(kept) == {3: 2, 5: 2} and not served_together.broken
    # A plan without cores to keep them on leaves them where the kernel puts them.
    kept.clear()
    served_together.reset()
    run_cases([alone] * 20, (1, 2), replace(plan, cores=()), many=many,
              together=[list(range(16)), list(range(16, 20))])
    assert kept == [None] * 4


def test_a_case_left_to_a_run_of_its_own_that_times_out_runs_under_no_later_seed() -> None:
    # Under every seed the share's run leaves case 0 to a run of its own (it went on too long) and serves case
    # 1; under seed 1 case 0's own run times out. Its run under seed 2 waits for that outcome, and never starts:
    # the outcomes are those of seeds run one after the other.
    runs: list[tuple[int, int]] = []
    lock = threading.Lock()

    def many(members: Any, seed: int, core: int | None) -> Served:
        outcomes = {member: CaseOutcome("passed", "", f"{seed}") for member in members if member != 0}
        return Served(outcomes, frozenset({0} & set(members)), cut=0 if 0 in members else None)

    def hangs(seed: int) -> CaseOutcome:
        with lock:
            runs.append((0, seed))
        return CaseOutcome("timeout", "ran out of time", "timeout")

    def alone(seed: int) -> CaseOutcome:
        return CaseOutcome("failed", "should have been served", "alone")

    plan = Plan(slots=2, most=4, long_after_s=100, budget_s=60)
    outcomes = run_cases([hangs, *[alone] * 9], (1, 2, 3), plan, many=many, together=[list(range(10))])
    assert runs == [(0, 1)]
    assert [[o.fingerprint for o in found] for found in outcomes] == [["timeout"]] + [["1", "2", "3"]] * 9


def test_cases_that_hang_are_cut_from_one_seeds_shares_only() -> None:
    # Every served run goes on too long on its first case (each hangs), and each case's run of its own times
    # out. Under the second seed only the first share ran, beside the first seed's: the shares it would split
    # off wait for the first seed to have cut their cases, and those cases are not run again.
    shares: list[tuple[tuple[int, ...], int]] = []
    runs: list[int] = []
    lock = threading.Lock()

    def many(members: Any, seed: int, core: int | None) -> Served:
        with lock:
            shares.append((tuple(members), seed))
        return Served({}, frozenset({members[0]}), cut=members[0])

    def hangs(seed: int) -> CaseOutcome:
        with lock:
            runs.append(seed)
        return CaseOutcome("timeout", "ran out of time", "timeout")

    plan = Plan(slots=2, most=8, long_after_s=100, budget_s=60)
    outcomes = run_cases([hangs] * 5, (1, 2), plan, many=many, together=[list(range(5))])
    assert [[o.status for o in found] for found in outcomes] == [["timeout"]] * 5
    assert [members for members, seed in shares if seed == 2] == [(0, 1, 2, 3, 4)]
    assert runs == [1] * 5


def test_cases_left_when_the_wall_budget_is_spent_are_not_run_and_cost_points(sandbox: Sandbox) -> None:
    # One run at a time, so that which cases are left is certain: the first case hangs for its whole time limit,
    # longer than the budget of all the cases.
    policy = Policy(limits=RunLimits(timeout=1.0, cpu=1.0, total_timeout=0.5))
    cases = (case("call", "hangs", function="nap", args=[1], expect=0),
             case("call", "fine", function="double", args=[1], expect=2))
    hidden = (replace(case("call", "secret", function="double", args=[2], expect=4), hidden=True),)
    subject = Subject(kind="reply", label="reply.md", reply=f"```python\n{CODE}```\n",
                      files=(SourceFile("solution.py", CODE, None, "extracted"),), cases=cases,
                      hidden_cases=hidden)
    verdict = run_checks(subject, policy, sandbox, checks=(Extract(), Parse(), Smoke(parallel=False), Nondeterminism()))
    assert [(c.status, c.detail) for c in verdict.cases[1:]] == [
        ("not run", "not run: the cases' wall budget (limits.total_timeout, 0.5 s) was spent")] * 2
    assert [(p.check, p.points, p.message) for p in verdict.penalties[1:]] == [
        ("timeout", 4, "case 2 (fine) not run: the cases' wall budget (limits.total_timeout, 0.5 s) was spent"),
        ("timeout", 4, "hidden case 1 not run: the cases' wall budget (limits.total_timeout, 0.5 s) was spent")]
    assert not verdict.accepted


def test_a_case_cut_from_a_run_that_serves_many_starts_without_holding_a_core() -> None:
    # One core, and a run alone holds it for long: only a run that starts as long can go beside another.
    together = threading.Barrier(2)
    served: list[tuple[int, ...]] = []

    def many(members: Any, seed: int, core: int | None) -> Served:
        served.append(tuple(members))
        if members[0] == 2:
            return Served({2: CaseOutcome("passed", "", "ok")})
        return Served({}, frozenset({members[0]}), cut=members[0])

    def waits(seed: int) -> CaseOutcome:
        try:
            together.wait(timeout=30)
        except threading.BrokenBarrierError:
            return CaseOutcome("failed", "ran alone", "alone")
        return CaseOutcome("timeout", "ran out of time", "timeout")

    def alone(seed: int) -> CaseOutcome:
        return CaseOutcome("failed", "should have been served", "alone")

    plan = Plan(slots=1, most=4, long_after_s=100, budget_s=60)
    outcomes = run_cases([waits, waits, alone], (1,), plan, many=many, together=[[0, 1, 2]])
    assert [[o.detail for o in found] for found in outcomes] == [["ran out of time"], ["ran out of time"], [""]]
    # Each cut case went on beside the next one, and the rest of its share was served again.
    assert served == [(0, 1, 2), (1, 2), (2,)]
