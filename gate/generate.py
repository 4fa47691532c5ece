"""Write the files derived from the declarations of the policy keys (gate/policy/model.py, and the checks'
charges, gate/checks/) and of the case kinds' fields (gate/cases/): the policy's JSON Schema, the task file's,
the default preset, and the docs' rows of the charges: the `points.*` rows of docs/policy.md's reference and
the penalty schedule of docs/how-it-works.md (the rest of those files is prose, left as it is).

    python -m gate.generate          # write them
    python -m gate.generate --check  # exit 1 naming those that are not current (a test runs this)
    python -m gate.generate --list   # the files it writes
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing
from pathlib import Path
from typing import Any

import yaml

from gate import RAW_MAIN
from gate.cases import KINDS
from gate.cases.base import CaseFields
from gate.cases.specs import kind_keys
from gate.checks import charges
from gate.policy.keys import (
    Declared,
    Key,
    charge_field,
    declared,
    default_of,
    is_section,
    item_type,
    key_of,
    section_of,
    value_of,
    without_none,
)
from gate.policy.model import Points, Policy
from gate.policy_file import unbuild
from gate.subject import Task

# Where the schemas are published: the raw files of the repository's main branch, so that an editor that
# follows a `$schema` link, or a `$id`, gets the schema of the newest gate.
RAW_BASE = RAW_MAIN
PACKAGE = Path(__file__).resolve().parent
DOCS = PACKAGE.parent / "docs"
_SCALARS = {int: "integer", float: "number", bool: "boolean", str: "string"}


def value_schema(hint: Any, declaration: Key, default: Any, case_field: bool = False) -> dict[str, Any]:
    """The JSON Schema of one key, from its type and its declaration."""
    inner, optional = without_none(hint)
    kind = section_of(hint)
    if declaration.schema is not None:
        schema = dict(declaration.schema)
    elif kind is not None:
        schema = section_schema(kind)
    elif declaration.keyed_by is not None:
        schema = _keyed(item_type(hint), declaration)
    elif item_type(hint) is not None:
        schema = {"type": "array"}
        item = item_type(hint)
        if declaration.choices is not None:
            schema["items"] = {"enum": list(declaration.choices())}
        elif section_of(item) is not None:
            schema["items"] = {**section_schema(item), **declaration.items}
        elif item is not Any:
            schema["items"] = {**_scalar(item), **declaration.items}
    elif typing.get_origin(inner) is dict:
        schema = {"type": "object"}
    else:
        schema = _scalar(inner)
    schema.update(declaration.value)
    nullable = declaration.nullable if declaration.nullable is not None \
        else optional and not declaration.unset and not case_field
    if nullable and "type" in schema:
        schema["type"] = [schema["type"], "null"]
    if declaration.description:
        schema["description"] = declaration.description
    if declaration.shown_default is not None:
        schema["default"] = declaration.shown_default
    elif isinstance(default, Points):  # the registry's charges, whatever the schema on disk lists
        schema["default"] = {charge.name: charge.default for charge in charges()}
    elif default is not dataclasses.MISSING and not declaration.unset:
        schema["default"] = unbuild(default, declaration)
    return schema


def keys_of(cls: type) -> Declared:
    """The keys of section `cls` as its declarations give them; for `Points`, the checks' charges as their
    registry lists them (the policy reads them from the schema this writes)."""
    if cls is Points:
        return tuple((item, int, key_of(item)) for item in map(charge_field, charges()))
    return declared(cls)


def section_schema(cls: type, case_field: bool = False) -> dict[str, Any]:
    """A mapping whose keys are the fields of dataclass `cls`."""
    properties = {item.name: value_schema(hint, declaration, default_of(item), case_field)
                  for item, hint, declaration in keys_of(cls) if not declaration.internal}
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [item.name for item, _, declaration in keys_of(cls)
                if default_of(item) is dataclasses.MISSING and not declaration.internal]
    if required:
        schema["required"] = required
    return schema


def _keyed(cls: Any, declaration: Key) -> dict[str, Any]:
    """A list of sections written as a mapping by one field of theirs (`languages: {.js: {command: ...}}`)."""
    entry = section_schema(cls)
    name = declaration.keyed_by
    own = entry["properties"].pop(name)
    entry["required"] = [key for key in entry.get("required", []) if key != name]
    entry = {"type": "object", **declaration.items, **{k: v for k, v in entry.items() if k != "type"}}
    names = {k: v for k, v in own.items() if k in ("pattern", "x-expected")}
    return {"type": "object", "propertyNames": names, "additionalProperties": entry}


def _scalar(hint: Any) -> dict[str, Any]:
    if typing.get_origin(hint) is typing.Literal:
        return {"enum": list(typing.get_args(hint))}
    if hint is Any:
        return {}
    return {"type": _SCALARS[hint]}


def case_definitions() -> dict[str, Any]:
    """The schemas' `$defs`: a case of any kind (with or without `kind`), each kind's fields, a list of cases."""
    names = list(KINDS)
    every = dict.fromkeys(["kind", *(item.name for kind in KINDS.values() for item, _, _ in
                                      declared(kind.fields))])
    summaries = [kind.fields.SUMMARY for kind in KINDS.values()]
    case = {
        "type": "object",
        "description": f"A case: {', '.join(summaries[:-1])} or {summaries[-1]}",
        "properties": {"kind": {"enum": names}},
        "propertyNames": {"enum": list(every)},
        "allOf": [*({"if": {"required": ["kind"], "properties": {"kind": {"const": name}}},
                     "then": {"$ref": f"#/$defs/{name}_case"}} for name in names),
                  {"if": {"not": {"required": ["kind"]}}, "then": {"$ref": "#/$defs/inferred_case"}}],
    }
    hints = " or ".join(kind.fields.HINT for kind in KINDS.values() if kind.fields.HINT)
    inferred: dict[str, Any] = {
        "required": ["kind"],
        "x-message": f"cannot tell the case's kind: set `kind` ({', '.join(names)}) or give {hints}"}
    for name, keys in reversed(kind_keys()):
        inferred = {"if": {"anyOf": [{"required": [key]} for key in keys]},
                    "then": {"$ref": f"#/$defs/{name}_case"}, "else": inferred}
    definitions = {"case": case, "inferred_case": inferred}
    for name, kind in KINDS.items():
        definitions[f"{name}_case"] = _kind_schema(name, kind.fields)
    definitions["case_list"] = {"type": "array", "items": {"$ref": "#/$defs/case"}}
    return definitions


def _kind_schema(name: str, fields: type[CaseFields]) -> dict[str, Any]:
    schema = section_schema(fields, case_field=True)
    schema["properties"] = {"kind": {"const": name}, **schema["properties"]}
    return {"type": "object", "x-what": fields.WHAT, **schema, **fields.RULES}


def policy_schema() -> dict[str, Any]:
    """The policy file's schema (gate/policy/schema.json)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": RAW_BASE + "gate/policy/schema.json",
        "title": "gate policy (.github/gate.yml)",
        "description": "An error-budget merge gate's policy: budget, points per check, gated paths, imports, "
                       "cases, bots, limits.",
        **section_schema(Policy),
        "$defs": case_definitions(),
    }


def task_schema() -> dict[str, Any]:
    """The task file's schema (gate/sources/task.schema.json): the task's fields and its cases, with its own
    copy of the case definitions, so an editor needs one file."""
    schema = section_schema(Task)
    schema["properties"]["cases"] = {"$ref": "#/$defs/case_list", "description": "cases the reply is run against",
                                     "default": []}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": RAW_BASE + "gate/sources/task.schema.json",
        "title": "gate task file",
        "description": "What a model was asked to do, and the cases its reply must pass "
                       "(gate score REPLY.md --task FILE).",
        **schema,
        "$defs": case_definitions(),
    }


def default_preset() -> str:
    """gate/presets/default.yml: every key of the default policy with its value, each under its description."""
    lines = ["# yaml-language-server: $schema=../policy/schema.json",
             "# The default preset: the penalty schedule (docs/how-it-works.md), every value spelled out. A",
             "# repository without .github/gate.yml is scored with this; a repository file that names no `extends:`",
             "# starts from it.",
             "# Written by `python -m gate.generate` from gate/policy/model.py: edit that file, not this one."]
    _yaml_lines(Policy(), 0, lines)
    return "\n".join(lines) + "\n"


def _yaml_lines(obj: Any, depth: int, lines: list[str]) -> None:
    indent = "  " * depth
    for item, _, declaration in keys_of(type(obj)):
        value = default_of(item) if isinstance(obj, Points) else value_of(obj, item.name)
        if declaration.internal or (value is None and declaration.unset):
            continue
        if declaration.description:
            lines.append(f"{indent}# {declaration.description}")
        if is_section(value):
            lines.append(f"{indent}{item.name}:")
            _yaml_lines(value, depth + 1, lines)
            continue
        text = yaml.safe_dump({item.name: unbuild(value, declaration)}, default_flow_style=True,
                              width=110 - len(indent), sort_keys=False).strip()
        text = text.removeprefix("{").removesuffix("}")
        lines.extend(indent + line for line in text.splitlines())


def reference_rows() -> list[str]:
    """docs/policy.md's reference rows of `points.*`, one a charge, in the checks' order."""
    return [f"| `points.{charge.name}` | integer ≥ 0 | `{charge.default}` | {_cell(charge.description)} |"
            for charge in charges()]


def schedule_rows() -> list[str]:
    """docs/how-it-works.md's penalty schedule, one row a charge the default preset makes (a default of 0,
    the judge's, charges nothing)."""
    return [f"| {charge.name} | {charge.default} | {_cell(charge.per)} | {_cell(charge.catches)} |"
            for charge in charges() if charge.default]


SCHEDULE_HEADER = "| check | points | charged | what it catches |\n|---|---|---|---|\n"


def field_rows() -> list[str]:
    """docs/cases.md's rows of the kinds' fields, one a field (but `name`, every kind's), in the registry's order:
    whether it is required, and whether it tells the kind of a case that names none."""
    rows = []
    for name, kind in KINDS.items():
        for item, _, declaration in declared(kind.fields):
            if item.name == "name":
                continue
            required = "yes" if default_of(item) is dataclasses.MISSING else ""
            rows.append(f"| `{name}` | `{item.name}` | {required} | {'yes' if declaration.infers else ''} | "
                        f"{_cell(declaration.description)} |")
    return rows


FIELDS_HEADER = "| kind | key | required | tells the kind | what it is |\n|---|---|---|---|---|\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rows_replaced(text: str, rows: list[str], *, prefix: str = "", header: str = "") -> str:
    """`text` (Markdown) with one run of table rows replaced by `rows`: the rows that start with `prefix`, or
    all the rows of the table under `header`. A table holds no marker of where generated rows begin (a comment
    line would end it), so they are found by what they are."""
    lines = text.splitlines(keepends=True)
    if header:
        if header not in text:
            raise ValueError(f"no table headed {header.splitlines()[0]!r}")
        first = text[:text.index(header) + len(header)].count("\n")
        end = next((index for index in range(first, len(lines)) if not lines[index].startswith("|")), len(lines))
    else:
        found = [index for index, line in enumerate(lines) if line.startswith(prefix)]
        if not found or found != list(range(found[0], found[-1] + 1)):
            raise ValueError(f"no single run of rows starting {prefix!r}")
        first, end = found[0], found[-1] + 1
    return "".join([*lines[:first], *(row + "\n" for row in rows), *lines[end:]])


def _docs() -> dict[Path, str]:
    """The docs whose rows are generated (the charges', the case kinds' fields), each with them rewritten."""
    reference, schedule, cases = DOCS / "policy.md", DOCS / "how-it-works.md", DOCS / "cases.md"
    return {reference: rows_replaced(reference.read_text(encoding="utf-8"), reference_rows(), prefix="| `points."),
            schedule: rows_replaced(schedule.read_text(encoding="utf-8"), schedule_rows(), header=SCHEDULE_HEADER),
            cases: rows_replaced(cases.read_text(encoding="utf-8"), field_rows(), header=FIELDS_HEADER)}


def outputs() -> dict[Path, str]:
    """Each generated file and what it should hold."""
    return {PACKAGE / "policy" / "schema.json": json.dumps(policy_schema(), indent=2) + "\n",
            PACKAGE / "sources" / "task.schema.json": json.dumps(task_schema(), indent=2) + "\n",
            PACKAGE / "presets" / "default.yml": default_preset(),
            **_docs()}


def stale() -> list[Path]:
    """The generated files that differ from what the declarations give."""
    return [path for path, text in outputs().items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gate.generate", description=__doc__.split("\n")[0])
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is not current")
    choice.add_argument("--list", action="store_true", help="write nothing; print the files it writes, relative to "
                        "the repository, one a line")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(path.relative_to(PACKAGE.parent).as_posix() for path in outputs()))
        return 0
    if args.check:
        behind = stale()
        for path in behind:
            print(f"{path}: not current; run python -m gate.generate", file=sys.stderr)
        return 1 if behind else 0
    for path, text in outputs().items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
