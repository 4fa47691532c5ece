"""Lists of cases as files hold them (a policy's `cases:`, a task file's, a hidden-cases file, a dataset row)
turned into CaseSpecs: the schema's case definitions first (generated from the kinds' fields), then each case's
kind, given or told by its keys, checks what only code can tell (a pattern that does not compile, test code that
does not parse). A case is valid once loaded, and nothing checks it again.
"""

from __future__ import annotations

import functools
from typing import Any

from gate.cases import KINDS
from gate.errors import BadInput
from gate.policy.keys import declared
from gate.policy.marked_yaml import MarkedList, MarkedMap, unmark
from gate.policy.model import CaseSpec
from gate.policy.validation import join_key, load_schema, validate


def parse_cases(raw: Any, file: str, key_prefix: str, *, hidden: bool = False) -> tuple[CaseSpec, ...]:
    """Validate a list of cases (policy `cases:`, a task file, a hidden-cases file, a dataset row) and build
    CaseSpecs; a case without `kind` gets the one its keys imply. `key_prefix` names the list in messages."""
    schema = load_schema("gate.policy", "schema.json")
    # A hidden-cases file is the base's, like the policy: the same document PR after PR.
    validate(raw, {"$defs": schema["$defs"], "$ref": "#/$defs/case_list"}, file, key_prefix, remember=hidden)
    return case_specs(raw, file, key_prefix, hidden)


def case_specs(raw: Any, file: str, key_prefix: str, hidden: bool = False) -> tuple[CaseSpec, ...]:
    """`parse_cases` for a list that was validated with the policy it is in (the schema's cost grows with
    the cases: a 500-case policy is not validated twice). What the schema cannot say about a case (a regular
    expression that does not compile, test code that does not parse) its kind checks here: a case is valid
    once loaded, and nothing checks it again."""
    specs: list[CaseSpec] = []
    first_line_of: dict[str, int | None] = {}
    for index, case in enumerate(raw):
        line = raw.item_lines[index] if isinstance(raw, MarkedList) else None
        where = join_key(key_prefix, [index])
        name = case.get("name") or f"case {index + 1}"
        if name in first_line_of:
            raise BadInput(f"two cases are named {name!r}" + _at(first_line_of[name]),
                           file=file, line=_key_line(case, "name", line), key=f"{where}.name")
        first_line_of[name] = line
        kind = case.get("kind") or infer_kind(case)
        problem = KINDS[kind].check(case)
        if problem is not None:
            field, message = problem
            raise BadInput(message, file=file, line=_key_line(case, field, line), key=f"{where}.{field}")
        specs.append(CaseSpec(kind=kind, name=name, hidden=hidden, fields=tuple(
            (key, unmark(value)) for key, value in case.items() if key not in ("kind", "name"))))
    return tuple(specs)


@functools.cache
def kind_keys() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Which keys make a case without `kind` one of each kind (its fields declared `infers`), tried in the
    registry's order; the schema's `inferred_case` is generated from the same declarations."""
    return tuple((name, tuple(item.name for item, _, declaration in declared(kind.fields) if declaration.infers))
                 for name, kind in KINDS.items())


def infer_kind(case: dict[str, Any]) -> str:
    """The kind a case's keys imply (the schema has already rejected a case with no telling key)."""
    for kind, keys in kind_keys():
        if any(key in case for key in keys):
            return kind
    raise AssertionError("a case without a telling key passed schema validation")


def _at(line: int | None) -> str:
    return f" (the first at line {line})" if line else ""


def _key_line(mapping: Any, key: str, fallback: int | None) -> int | None:
    return mapping.key_lines.get(key, fallback) if isinstance(mapping, MarkedMap) else fallback
