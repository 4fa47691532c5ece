"""The registry of checks, in the order they run."""

from __future__ import annotations

from gate.checks.base import Check
from gate.policy.model import CHECK_NAMES

REGISTRY: list[Check] = []


def register(check: Check) -> Check:
    """Add a check to the registry (each check module calls this once, at import)."""
    REGISTRY.append(check)
    return check


def all_checks() -> list[Check]:
    """Every registered check, in pipeline order."""
    # Importing the modules registers them. A module imported earlier elsewhere (a test importing
    # gate.checks.judge) registers out of turn, so the order is CHECK_NAMES's, not the imports'. The judge
    # comes last, after the behavioural checks (smoke, nondeterminism), so that it can only add to a verdict.
    from gate.checks import extract, parse, imports, claims, framework, smoke, nondeterminism, tests, judge  # noqa: F401, I001

    return sorted(REGISTRY, key=lambda check: CHECK_NAMES.index(check.name))
