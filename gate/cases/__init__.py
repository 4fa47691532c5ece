"""Case kinds: what a case is and how it runs (base.py: the interface; docs/cases.md: the fields)."""

from __future__ import annotations

from gate.cases.base import CaseKind
from gate.cases.call import Call
from gate.cases.humaneval import HumanEval
from gate.cases.mbpp import Mbpp
from gate.cases.stdio import Stdio

KINDS: dict[str, CaseKind] = {kind.name: kind for kind in (Stdio(), Call(), HumanEval(), Mbpp())}
