"""The nondeterminism check: a case whose runs (different PYTHONHASHSEED values) differ in result or output.

It compares the fingerprints of the smoke check's runs (`ctx.state`), and charges `points.nondeterminism`
once, naming the cases that differed. A hidden case is named only by its number.
"""

from __future__ import annotations

from gate.checks import register
from gate.checks.base import CheckContext, CheckResult
from gate.checks.smoke import STATE_KEY, CaseRuns, hash_seeds
from gate.policy.model import Policy
from gate.verdict import Penalty

_MAX_NAMED = 5


class Nondeterminism:
    """The same case, run again with another hash seed, must give the same result and output."""

    name = "nondeterminism"
    requires: tuple[str, ...] = ("parse",)

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        runs = ctx.state.get(STATE_KEY)
        if not isinstance(runs, tuple):
            reason = ctx.reports["smoke"].reason if "smoke" in ctx.reports else "the smoke check did not run"
            return CheckResult(skipped=f"no runs to compare ({reason})")
        differing = [case.label for case in runs if isinstance(case, CaseRuns) and _differs(case)]
        if not differing:
            return CheckResult()
        seeds = ", ".join(str(seed) for seed in hash_seeds(ctx.policy.runs))
        named = ", ".join(differing[:_MAX_NAMED]) + (" and more" if len(differing) > _MAX_NAMED else "")
        message = f"{named} gave different results on reruns with PYTHONHASHSEED {seeds} (set or dict order?)"
        return CheckResult(penalties=(Penalty(self.name, ctx.policy.points.nondeterminism, message),))


def _differs(case: CaseRuns) -> bool:
    return len({outcome.fingerprint for outcome in case.outcomes}) > 1


register(Nondeterminism())
