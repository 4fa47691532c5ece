"""The registry of checks, in the order they run."""

from __future__ import annotations

from gate.checks.base import Check

REGISTRY: list[Check] = []


def register(check: Check) -> Check:
    """Add a check to the registry (each check module calls this once, at import)."""
    REGISTRY.append(check)
    return check


def all_checks() -> list[Check]:
    """Every registered check, in pipeline order."""
    # Importing the modules registers them; the order of these imports is the order checks run.
    from gate.checks import extract, parse, imports, claims, smoke, nondeterminism  # noqa: F401, I001

    return list(REGISTRY)
