"""CPU per sample of each static check `gate eval` runs (extract, parse, imports, claims), single-threaded, on
HumanEval's canonical solutions and MBPP's test-split reference solutions.

    .venv/bin/python bench/static_checks.py [--rounds 5] [--mbpp ../shared/data/mbpp/mbpp.jsonl]

Each round scores every sample once through the engine with only the static checks; each check's CPU time
(`time.process_time`) is summed over the round. The best round per check is printed, in milliseconds per
sample: the least disturbed by other processes on a shared machine.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.engine import run_checks
from gate.eval.datasets import load_dataset
from gate.eval.runner import eval_checks, subject_of
from gate.eval.samples import Sample
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.subject import Subject

DEFAULT_MBPP = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "mbpp" / "mbpp.jsonl"


@dataclass
class Timed(Check):
    """A check that adds up the CPU time its wrapped check spends."""

    check: Check
    seconds: float = 0.0
    name: str = field(init=False)
    needs: tuple[Product, ...] = field(init=False)
    produces: tuple[Product, ...] = field(init=False)
    static: bool = field(init=False)
    charges: tuple[Charge, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.name, self.static = self.check.name, self.check.static
        self.charges = self.check.charges
        self.needs, self.produces = self.check.needs, self.check.produces

    def enabled(self, policy: Policy) -> bool:
        return self.check.enabled(policy)

    def run(self, ctx: CheckContext) -> CheckResult:
        started = time.process_time()
        try:
            return self.check.run(ctx)
        finally:
            self.seconds += time.process_time() - started

    def unmet(self, ctx: CheckContext, why: str) -> CheckResult:
        return self.check.unmet(ctx, why)


def subjects(mbpp: Path) -> dict[str, list[Subject]]:
    """One subject per reference solution, by dataset: HumanEval's canonical ones, MBPP's test split."""
    found: dict[str, list[Subject]] = {}
    for dataset in (load_dataset("humaneval"), load_dataset("mbpp", mbpp)):
        found[dataset.name] = [subject_of(Sample(task.task_id, 0, position, task.reference), task)
                               for position, task in enumerate(dataset.tasks)]
    return found


def one_round(items: list[Subject], policy: Policy) -> tuple[dict[str, float], float]:
    """CPU seconds per check, and for the whole `score` call, over one pass on `items`."""
    timed = [Timed(check) for check in eval_checks()[:-1]]  # the last one runs the cases
    started = time.process_time()
    for subject in items:
        run_checks(subject, policy, None, checks=timed)
    return {t.name: t.seconds for t in timed}, time.process_time() - started


def best_ms(items: list[Subject], rounds: int) -> dict[str, float]:
    """CPU milliseconds per sample of each check, of the checks together and of `score`: the best round."""
    policy = Policy(runs=1)
    one_round(items, policy)  # warm up: imports, compiled regexes, caches
    done = [one_round(items, policy) for _ in range(rounds)]
    best = {name: min(r[0][name] for r in done) for name in done[0][0]}
    best["checks"] = sum(best.values())
    best["run_checks()"] = min(r[1] for r in done)
    return {name: seconds / len(items) * 1000 for name, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mbpp", type=Path, default=DEFAULT_MBPP, help="MBPP's mbpp.jsonl")
    args = parser.parse_args()
    by_dataset = subjects(args.mbpp)
    by_dataset["both"] = [s for items in by_dataset.values() for s in items]
    columns = {name: best_ms(items, args.rounds) for name, items in by_dataset.items()}
    print(f"CPU ms per sample, single-threaded, best of {args.rounds} rounds")
    print(f"{'':10s}" + "".join(f"{f'{name} ({len(by_dataset[name])})':>18s}" for name in columns))
    for row in next(iter(columns.values())):
        print(f"{row:10s}" + "".join(f"{column[row]:18.3f}" for column in columns.values()))


if __name__ == "__main__":
    main()
