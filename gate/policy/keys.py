"""How a policy key, or a case kind's field, is declared: a dataclass field whose metadata says what the YAML may
hold beyond its type (bounds, pattern, description). `gate.generate` derives the JSON Schemas and the
default preset from these declarations, and the loader builds and unbuilds the typed policy from them.

    budget: int = key(3, "accepted when the total points are at most this", minimum=0)

The field's type gives the schema type (`int`, `float`, `bool`, `str`, a `Literal` of choices, a tuple of
them, a nested section, `X | None` for a key that may be null); everything else comes from `key(...)`.

The keys of `points:` are declared by the checks that charge them, each as a `Charge` in its own module:

    SMOKE = Charge("smoke", 2, "per failed case", per="per failed case", catches="a case whose output ...")

The generator writes them into the policy's schema from the checks' registry, and the policy's `Points`
(gate/policy/model.py) reads them there: a section whose class declares its keys itself (`declared_keys`)
instead of by its fields.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import field
from typing import Any, Protocol

import msgspec

_NONE: Any = dataclasses.MISSING


class Key(msgspec.Struct, frozen=True):
    """What a field's metadata says about its key (see `key`)."""

    description: str = ""
    # JSON Schema keywords for the value, or for each item of a list: minimum, pattern, minLength, ...
    value: dict[str, Any] = msgspec.field(default_factory=dict)
    items: dict[str, Any] = msgspec.field(default_factory=dict)
    # The whole schema of the key when its type cannot say it (a `$ref`, any JSON value).
    schema: dict[str, Any] | None = None
    # The values a string (or each item of a list) may take, computed when the schema is generated.
    choices: Callable[[], tuple[str, ...]] | None = None
    path: bool = False  # normalised as a path of the tree (`./a/b` is `a/b`)
    unset: bool = False  # None means "not given" (never written, not null in YAML), e.g. a scope's budget
    nullable: bool | None = None  # may be null in YAML; by default when the type is `X | None` and not `unset`
    keyed_by: str | None = None  # a list of sections written as a mapping by this field of theirs
    infers: bool = False  # a case field whose presence, without `kind`, tells the case's kind
    internal: bool = False  # not a key of the file at all (where the policy came from)
    # The schema's `default` when the field's own cannot say it (an unset key whose absence means a value).
    shown_default: Any = None
    # What is wrong with a value (each item of a list) that the schema cannot say, as the whole message; None
    # when nothing is: a glob that does not compile, an agent that is not in the catalog.
    problem: Callable[[str], str | None] | None = None


class Charge(msgspec.Struct, frozen=True):
    """Points a check charges: the key `points.NAME`, an integer of at least 0, declared in the module of the
    check that charges it (its `charges`) and read as `policy.points[CHARGE]`. `description` is the key's in
    the schema and the default preset, and its row in docs/policy.md's reference; `per` (how often: "once",
    "per failed case") and `catches` are its row in docs/how-it-works.md's penalty schedule, which lists the
    charges the default preset makes (a default of 0 charges nothing there)."""

    name: str
    default: int
    description: str
    per: str = ""
    catches: str = ""


def key(default: Any = _NONE, description: str = "", *, factory: Callable[[], Any] | None = None,
        items: dict[str, Any] | None = None, schema: dict[str, Any] | None = None,
        choices: Callable[[], tuple[str, ...]] | None = None, path: bool = False, unset: bool = False,
        nullable: bool | None = None, keyed_by: str | None = None, infers: bool = False,
        internal: bool = False, shown_default: Any = None, problem: Callable[[str], str | None] | None = None,
        keywords: dict[str, Any] | None = None, compare: bool = True, **value: Any) -> Any:
    """A dataclass field for one key. `value` holds JSON Schema keywords in Python spelling
    (`exclusive_minimum=0`, `min_length=1`, `expected=...` for `x-expected`, `message=...` for `x-message`),
    `keywords` more of them as JSON Schema spells them; for a list they apply to the list, and `items` to each
    of its items. `compare=False` leaves an internal field out of the policy's equality (where it was read)."""
    meta = {"key": Key(description, {**(keywords or {}), **_keywords(value)}, _keywords(items or {}), schema,
                       choices, path, unset, nullable, keyed_by, infers, internal, shown_default, problem)}
    if factory is not None:
        return field(default_factory=factory, metadata=meta, compare=compare)
    return field(default=default, metadata=meta, compare=compare)


def key_of(item: dataclasses.Field[Any]) -> Key:
    """The declaration of a field (a field without `key(...)` declares nothing beyond its type)."""
    declared = item.metadata.get("key")
    return declared if isinstance(declared, Key) else Key()


_SPELLING = {"expected": "x-expected", "message": "x-message"}


def _keywords(value: dict[str, Any]) -> dict[str, Any]:
    """`exclusive_minimum` -> `exclusiveMinimum`, `expected` -> `x-expected`."""
    out: dict[str, Any] = {}
    for name, setting in value.items():
        head, *rest = name.split("_")
        out[_SPELLING.get(name, head + "".join(part.title() for part in rest))] = setting
    return out


Declared = tuple[tuple[dataclasses.Field[Any], Any, Key], ...]


_DECLARED: dict[type, Declared] = {}


class DeclaresKeys(Protocol):
    """A section whose keys are declared elsewhere than in its own fields (`Points`, whose keys the checks
    declare): it lists them, is built from them (`cls(**values)`) and gives the value of one by its name."""

    @classmethod
    def declared_keys(cls) -> Declared: ...

    def value(self, name: str) -> Any: ...


def declared(cls: type) -> Declared:
    """(field, its resolved type, its declaration) for each key of section `cls`, in order: the fields of a
    dataclass, or what a `DeclaresKeys` section lists."""
    if cls not in _DECLARED:
        own = getattr(cls, "declared_keys", None)
        if own is not None:
            _DECLARED[cls] = own()
        else:
            hints = typing.get_type_hints(cls)
            _DECLARED[cls] = tuple((item, hints[item.name], key_of(item)) for item in dataclasses.fields(cls))
    return _DECLARED[cls]


def charge_field(charge: Charge) -> dataclasses.Field[int]:
    """The field a `DeclaresKeys` section lists for one of the checks' charges, as if declared
    `NAME: int = key(default, description, minimum=0)`."""
    item: dataclasses.Field[int] = key(charge.default, charge.description, minimum=0)
    item.name, item.type = charge.name, int
    return item


def is_section(value: Any) -> bool:
    """Whether `value` (a class or an instance) is a section of keys: a dataclass or a `DeclaresKeys`."""
    cls = value if isinstance(value, type) else type(value)
    return dataclasses.is_dataclass(cls) or hasattr(cls, "declared_keys")


def value_of(section: Any, name: str) -> Any:
    """The value of key `name` in a section."""
    return section.value(name) if hasattr(type(section), "declared_keys") else getattr(section, name)


def without_none(hint: Any) -> tuple[Any, bool]:
    """`X | None` -> (X, True); any other type -> (it, False)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(rest) == 1:
            return rest[0], True
    return hint, False


def section_of(hint: Any) -> type | None:
    """The section class a type names (`Points`, `RepoSuite | None`), or None."""
    inner, _ = without_none(hint)
    return inner if isinstance(inner, type) and is_section(inner) else None


def item_type(hint: Any) -> Any:
    """The item type of `tuple[X, ...]` or `list[X]` (or their `| None`), or None for any other type."""
    inner, _ = without_none(hint)
    if typing.get_origin(inner) in (tuple, list):
        return typing.get_args(inner)[0]
    return None


def default_of(item: dataclasses.Field[Any]) -> Any:
    """The field's default value (its factory called), or MISSING when the key is required."""
    if item.default is not dataclasses.MISSING:
        return item.default
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return dataclasses.MISSING
