"""Helpers for the case tests: a real sandbox, and one-line ways to build and run a case."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from gate.cases import KINDS
from gate.cases.base import CaseOutcome, Program
from gate.policy.model import CaseSpec
from gate.sandbox import open_sandbox
from gate.sandbox.base import Limits, Sandbox

LIMITS = Limits(wall_s=5.0, cpu_s=5.0)
SHORT = Limits(wall_s=1.5, cpu_s=1.5)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    opened = open_sandbox(LIMITS)
    yield opened
    opened.close()


def case(kind: str, name: str = "case 1", hidden: bool = False, **fields: Any) -> CaseSpec:
    """A validated case of `kind`."""
    spec = CaseSpec(kind, name, tuple(fields.items()), hidden)
    KINDS[kind].validate(spec, "test")
    return spec


def run(sandbox: Sandbox, spec: CaseSpec, code: str, limits: Limits = LIMITS, seed: int = 1,
        function: str | None = None) -> CaseOutcome:
    """One run of `spec` against the reply code `code`."""
    return KINDS[spec.kind].run(spec, Program(code=code, function=function), sandbox, limits, seed)


# The is_even example (examples/is_even): an is_even that rejects what is not an int, and the naive one that does not.
IS_EVEN = textwrap.dedent("""
    def is_even(n):
        if type(n) is not int:
            raise TypeError("is_even needs an int")
        return n % 2 == 0
""")
NAIVE_IS_EVEN = "def is_even(n):\n    return n % 2 == 0\n"
