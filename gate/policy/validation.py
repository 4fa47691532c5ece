"""JSON Schema validation whose failures read as one line: `file:line: key.path: what was expected`.

jsonschema's own messages name schema internals ("Additional properties are not allowed"); this module turns
the first error in file order into a message about the user's file. Two non-standard schema keywords, which
validators and editors ignore, carry our wording: `x-expected` (what a string pattern means) and `x-message`
(the whole message for a combined rule such as "exactly one of `expect` or `error`").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from gate import __version__, memo
from gate.errors import BadInput
from gate.policy.marked_yaml import KeyPath, describe, format_path, line_of

if TYPE_CHECKING:  # jsonschema (dear to import: docs/benchmarks.md) is imported when a document is not known valid
    from jsonschema.exceptions import ValidationError

_KEY_PROBLEMS = ("unknown key", "not a key of")
# Rules whose meaning only the schema author can word (the `x-message` next to them).
_COMBINED = ("oneOf", "anyOf", "not", "contains", "required")
_TYPE_NAMES = {"integer": "an integer", "number": "a number", "string": "a string",
               "boolean": "true or false", "array": "a list", "object": "a mapping", "null": "null"}


@cache
def load_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON schema shipped in the package, e.g. ("gate.policy", "schema.json")."""
    schema: dict[str, Any] = json.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
    return schema


def validate(doc: Any, schema: dict[str, Any], file: str, key_prefix: str = "", remember: bool = False) -> None:
    """Raise BadInput for the first schema error in `doc` in file order (its line marks come from
    gate.policy.marked_yaml); `key_prefix` is prepended to key paths when `doc` sits inside a larger file.
    With `remember` (a document that comes back run after run: a base's policy, its hidden cases, a preset),
    that it is valid is remembered by its content (gate/memo.py, root only), and not checked again."""
    key = _content(doc, schema) if remember else None
    if key is not None and memo.recall("valid", key) is True:
        return
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator(schema).iter_errors(doc))
    if not errors:
        if key is not None:
            memo.remember("valid", key, True)
        return
    owners = _case_key_owners(schema)
    explained = _drop_consequences([_explain(error, owners) for error in errors])
    path, message = min(explained, key=lambda item: (line_of(doc, item[0]) or 0, -len(item[0])))
    raise BadInput(message, file=file, line=line_of(doc, path), key=join_key(key_prefix, path) or None)


def _content(doc: Any, schema: dict[str, Any]) -> list[str] | None:
    """What the validity of `doc` against `schema` depends on: the hashes of both as JSON (which tells the
    types apart: `true`, `1` and `1.0` differ); None for a document JSON cannot hold (a YAML date, set or
    binary), never remembered."""
    try:
        texts = [json.dumps(schema, sort_keys=True), json.dumps(doc, sort_keys=True)]
    except (TypeError, ValueError):
        return None
    return [__version__, *(hashlib.sha256(text.encode()).hexdigest() for text in texts)]


def join_key(prefix: str, path: KeyPath) -> str:
    """`prefix` followed by a key path: ("cases", [0, "stdout"]) -> `cases[0].stdout`."""
    rest = format_path(path)
    if not prefix or not rest:
        return prefix or rest
    return prefix + (rest if rest.startswith("[") else "." + rest)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`; did you mean `x`?` when a choice is close to `word`, else the empty string."""
    import difflib  # (only for a policy with a mistake: not on every gate's start)

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def _drop_consequences(problems: list[tuple[list[str | int], str]]) -> list[tuple[list[str | int], str]]:
    """Leave out complaints about a whole mapping (a missing `expect`, a case whose kind cannot be told)
    when that mapping has a key that does not belong: the misspelt key is the cause, and the one to show."""
    misplaced = [path[:-1] for path, message in problems if message.startswith(_KEY_PROBLEMS)]
    return [(path, message) for path, message in problems
            if message.startswith(_KEY_PROBLEMS) or path not in misplaced]


def _case_key_owners(schema: dict[str, Any]) -> dict[str, list[str]]:
    """Which case kinds (`x-what` of each case definition) have each key."""
    owners: dict[str, list[str]] = {}
    for definition in schema.get("$defs", {}).values():
        if "x-what" in definition:
            for key in definition.get("properties", {}):
                owners.setdefault(key, []).append(definition["x-what"])
    return owners


def _explain(error: ValidationError, owners: dict[str, list[str]]) -> tuple[list[str | int], str]:
    """The key path an error is about, and its message."""
    path: list[str | int] = list(error.absolute_path)
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    value: Any = error.validator_value
    if "propertyNames" in error.relative_schema_path:
        return _bad_key_name(path, error)
    if "x-message" in schema and error.validator in _COMBINED:
        return path, str(schema["x-message"])
    if error.validator == "additionalProperties":
        return _unknown_key(path, error, schema, owners)
    instance: Any = error.instance
    if error.validator == "required":
        missing = next(key for key in value if key not in instance)
        return path, f"missing required key `{missing}`"
    if error.validator == "dependentRequired":
        key, needed = next((k, v) for k, v in value.items() if k in instance)
        return path, f"`{key}` needs " + ", ".join(f"`{n}`" for n in needed if n not in instance)
    return path, _value_message(error, schema)


def _value_message(error: ValidationError, schema: dict[str, Any]) -> str:
    instance: Any = error.instance
    value: Any = error.validator_value
    kind = error.validator
    got = describe(instance)
    if kind == "type":
        types = value if isinstance(value, list) else [value]
        expected = " or ".join(_TYPE_NAMES.get(str(t), str(t)) for t in types)
        return f"expected {expected}, got {got}" + _quote_hint(instance, "string" in types)
    if kind in ("enum", "const"):
        options = value if kind == "enum" else [value]
        listed = ", ".join(str(o) for o in options)
        hint = did_you_mean(instance, map(str, options)) if isinstance(instance, str) else ""
        return (f"expected one of {listed}, got {got}{hint}"
                + _quote_hint(instance, all(isinstance(o, str) for o in options)))
    if kind == "minimum":
        if value == 0:
            return f"must not be negative, got {instance}"
        return f"must be at least {value}, got {instance}"
    if kind == "exclusiveMinimum":
        return f"must be greater than {value}, got {instance}"
    if kind == "minItems":
        return f"must list at least {value} item{'s' if value != 1 else ''}"
    if kind == "minLength":
        return "must not be empty"
    if kind == "uniqueItems":
        return f"lists {describe(_first_repeat(instance))} twice"
    if kind == "pattern":
        return f"expected {schema.get('x-expected', 'text matching ' + str(value))}, got {got}"
    return error.message


def _first_repeat(items: list[Any]) -> Any:
    seen: list[Any] = []
    for item in items:
        if item in seen:
            return item
        seen.append(item)
    return None


def _quote_hint(instance: Any, wants_string: bool) -> str:
    """YAML turns some unquoted words into numbers or booleans; say so when a string was expected."""
    if not wants_string:
        return ""
    if isinstance(instance, bool):
        return " (quote it: YAML reads yes, no, on and off as true or false)"
    if isinstance(instance, float):
        return " (quote it: YAML reads 3.10 as the number 3.1)"
    if isinstance(instance, int):
        return " (quote it to make it a string)"
    return ""


def _unknown_key(path: list[str | int], error: ValidationError, schema: dict[str, Any],
                 owners: dict[str, list[str]]) -> tuple[list[str | int], str]:
    known = list(schema.get("properties", {}))
    instance: Any = error.instance
    extra = next(key for key in instance if key not in known)
    if "x-what" in schema and extra in owners:
        # A key of another case kind: the kind was set, or inferred from another key, to something else.
        kinds = " and ".join(owners[extra])
        what = schema["x-what"]
        return [*path, extra], f"not a key of {what} (it belongs to {kinds}); set `kind` or drop it"
    where = f" for {schema['x-what']}" if "x-what" in schema else ""
    hint = _elsewhere(extra, error, path) or did_you_mean(extra, known)
    if not hint:
        hint = "; expected one of " + ", ".join(known)
    return [*path, extra], f"unknown key{where}{hint}"


def _elsewhere(key: str, error: ValidationError, path: list[str | int]) -> str:
    """`; did you mean `points.smoke`?` for a top-level key that belongs inside a section."""
    if path or not isinstance(error.schema, dict):
        return ""
    places = [f"`{section}.{key}`" for section, sub in error.schema.get("properties", {}).items()
              if isinstance(sub, dict) and key in sub.get("properties", {})]
    if not places:
        return ""
    listed = places[0] if len(places) == 1 else f"{', '.join(places[:-1])} or {places[-1]}"
    return f"; did you mean {listed}?"


def _bad_key_name(path: list[str | int], error: ValidationError) -> tuple[list[str | int], str]:
    key = str(error.instance)
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    known: Any = error.validator_value
    if error.validator == "enum":
        hint = did_you_mean(key, known) or "; expected one of " + ", ".join(known)
        return [*path, key], "unknown key" + hint
    return [*path, key], f"expected {schema.get('x-expected', 'a valid key')} as the key, got {key!r}"
