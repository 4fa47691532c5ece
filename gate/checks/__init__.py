"""The registry of checks: the one list of them, in the order they run. Everything else that lists checks (the
static ones `gate publish` recomputes and `gate eval` runs, the pipeline's order) is derived from it.

Each module names its check `CHECK`, which lists the points it charges (`charges`, each a `Charge` declared in
the module): the policy's `points:` keys, in this order, which the generator writes into the policy's schema
(gate/policy/model.py's `Points` reads them there: the policy imports no check). The judge comes
last, after the behavioural checks (smoke, nondeterminism), so that it can only add to a verdict.

Adding a check is its module and its line here (CONTRIBUTING.md); one that charges points then needs the
generator, `python -m gate.generate`.
"""

from __future__ import annotations

import functools
import importlib

from gate.checks.base import Check
from gate.policy.keys import Charge

MODULES = ("extract", "parse", "compile", "imports", "claims", "framework", "smoke", "nondeterminism", "tests",
           "judge")


@functools.cache
def _registry() -> tuple[Check, ...]:
    checks: tuple[Check, ...] = tuple(importlib.import_module(f"gate.checks.{m}").CHECK for m in MODULES)
    made: set[str] = {"files"}  # the subject's files are there before any check
    for check in checks:
        missing = set(check.needs) - made
        if missing:  # a programming error: the registry's order contradicts what the checks declare
            raise RuntimeError(f"check {check.name} needs {', '.join(sorted(missing))}, which no earlier "
                               "check produces")
        made.update(check.produces)
    return checks


def all_checks() -> list[Check]:
    """Every registered check, in pipeline order."""
    return list(_registry())


def static_checks() -> list[Check]:
    """The checks whose findings follow from the files and the policy alone, in pipeline order."""
    return [check for check in _registry() if check.static]


def static_names() -> tuple[str, ...]:
    """The static checks' names."""
    return tuple(check.name for check in static_checks())


@functools.cache
def charges() -> tuple[Charge, ...]:
    """Every check's charges, in pipeline order: the keys of the policy's `points:`."""
    found: dict[str, Charge] = {}
    for check in _registry():
        for charge in check.charges:
            if charge.name in found:  # a programming error, like the order's
                raise RuntimeError(f"check {check.name} declares points.{charge.name}, which another check "
                                   "declares too")
            if charge.default and not (charge.per and charge.catches):  # a row of the penalty schedule
                raise RuntimeError(f"check {check.name} charges points.{charge.name} by default, so its Charge "
                                   "says `per` and `catches` (docs/how-it-works.md's penalty schedule)")
            found[charge.name] = charge
    return tuple(found.values())
