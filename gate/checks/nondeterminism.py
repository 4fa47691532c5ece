"""The nondeterminism check: a case whose runs (different PYTHONHASHSEED values) differ in result or output.

It compares the fingerprints of the case runs the smoke check produced, and charges `points.nondeterminism`
once, naming the cases that differed. A hidden case is named only by its number.
"""

from __future__ import annotations

from gate.checks.base import CaseRuns, Check, CheckContext, CheckResult, Product
from gate.checks.smoke import has_cases, hash_seeds
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.subject import Subject
from gate.verdict import Penalty, listing

# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
NONDETERMINISM = Charge(
    "nondeterminism", 2,
    "a case gave different results on a rerun (once)",
    per="once",
    catches="the same case gave different results on a rerun with another `PYTHONHASHSEED`; a test of the "
            "repository's suite did not pass on the head and passed each time it ran again")


class Nondeterminism(Check):
    """The same case, run again with another hash seed, must give the same result and output."""

    name = "nondeterminism"
    needs: tuple[Product, ...] = ("code", "runs")
    produces: tuple[Product, ...] = ()
    static = False
    charges: tuple[Charge, ...] = (NONDETERMINISM,)

    def enabled(self, policy: Policy) -> bool:
        return True

    def applies(self, policy: Policy, subject: Subject) -> bool:
        """With cases to run again (the smoke check's)."""
        return has_cases(policy, subject)

    def run(self, ctx: CheckContext) -> CheckResult:
        differing = [case.label for case in ctx.analysis.runs or () if _differs(case)]
        if not differing:
            return CheckResult()
        seeds = ", ".join(str(seed) for seed in hash_seeds(ctx.policy.runs))
        named = listing(differing, ", ")
        message = f"{named} gave different results on reruns with PYTHONHASHSEED {seeds} (set or dict order?)"
        return CheckResult(penalties=(Penalty(self.name, ctx.policy.points[NONDETERMINISM], message),))


def _differs(case: CaseRuns) -> bool:
    """Whether a case's runs gave different results (a run tampered with is no result: the smoke check's)."""
    return len({outcome.fingerprint for outcome in case.outcomes}) > 1 and not any(
        outcome.tampered for outcome in case.outcomes)


CHECK = Nondeterminism()
