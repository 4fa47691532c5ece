"""Load a policy file: YAML with line marks, `extends:` a preset, schema validation, then the typed Policy, its
cases checked by their kinds (gate/cases/specs.py). Outside the policy package, which imports nothing it
configures: this is where the policy meets what it configures.

Every problem is one BadInput line, `file:line: key.path: message` (exit 2). The order matters: the
repository's own file is validated before it is merged over its preset, so a message always points into the
file the user wrote; the few rules that need the merged result (a module both allowed and denied) run after
the merge.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from gate.cases.specs import case_specs
from gate.errors import BadInput, read_input
from gate.policy.keys import Key, declared, is_section, item_type, section_of, value_of
from gate.policy.marked_yaml import MarkedMap, key_lines, line_of, load_marked
from gate.policy.model import CaseSpec, Policy, changed
from gate.policy.validation import did_you_mean, join_key, load_schema, validate

__all__ = ["effective_policy_dict", "load_policy", "load_preset", "preset_names"]

DEFAULT_PRESET = "default"


def policy_schema() -> dict[str, Any]:
    """The policy file's JSON Schema (gate/policy/schema.json, generated from gate/policy/model.py)."""
    return load_schema("gate.policy", "schema.json")


def preset_names() -> list[str]:
    """The presets a policy can extend, sorted."""
    presets = resources.files("gate") / "presets"
    return sorted(entry.name.removesuffix(".yml") for entry in presets.iterdir()
                  if entry.name.endswith(".yml"))


def load_preset(name: str) -> Policy:
    """The policy a preset gives on its own; its source is `NAME preset`."""
    doc, extends = _preset_doc(name, ())
    return _build(doc, file=_preset_file(name), source=f"{name} preset", extends=extends)


def load_policy(path: Path | None, *, text: str | None = None, source: str | None = None) -> Policy:
    """Load a repository's policy file (or `text` read elsewhere, e.g. from a git commit, named by `source`).
    With neither a path nor text, the default preset applies."""
    file = source or str(path)
    if text is None:
        if path is None:
            return load_preset(DEFAULT_PRESET)
        text = read_input(path, "policy file")
    doc = load_marked(text, file)
    if doc is None:
        raise BadInput("the file is empty; expected a mapping of policy keys (budget, points, ...)",
                       file=file)
    if not isinstance(doc, MarkedMap):
        raise BadInput(f"expected a mapping of policy keys at the top level, got {_kind_of(doc)}",
                       file=file, line=getattr(doc, "line", 1))
    validate(doc, policy_schema(), file, remember=True)
    _check_globs(doc, file)
    extends = doc.get("extends", DEFAULT_PRESET)
    if extends not in preset_names():
        raise BadInput(f"no preset named {extends!r} (the presets are {', '.join(preset_names())})"
                       + did_you_mean(extends, preset_names()),
                       file=file, line=doc.key_lines.get("extends"), key="extends")
    base, _ = _preset_doc(extends, ())
    merged = deep_merge(base, doc)
    _check_imports(merged, doc, file, extends)
    _check_judge(merged, doc, file)
    policy = _build(merged, file=file, source=file, extends=extends)
    return changed(policy, lines=tuple(key_lines(doc).items()))  # the file's own keys, not the preset's


def deep_merge(base: MarkedMap, override: MarkedMap) -> MarkedMap:
    """`override` over `base`: mappings merge key by key, anything else (lists too) is replaced. Only the
    override's line marks are kept, so a later error points into the file the user wrote."""
    merged = MarkedMap(override.line, override.key_lines)
    for key, value in base.items():
        if key == "extends":
            continue
        mine = override.get(key, value)
        both_maps = isinstance(value, MarkedMap) and isinstance(mine, MarkedMap) and key in override
        merged[key] = deep_merge(value, mine) if both_maps else mine
    for key, value in override.items():
        if key not in merged:
            merged[key] = value
    return merged


def effective_policy_dict(policy: Policy) -> dict[str, Any]:
    """The policy as a YAML-ready mapping with every key spelled out (`gate policy show`); loading it back
    gives the same policy."""
    spelled: dict[str, Any] = unbuild(policy)
    return spelled


def unbuild(value: Any, declaration: Key | None = None) -> Any:
    """A policy, a section of it or one key's value as YAML-ready data: tuples as lists (YAML's safe dumper
    writes no tuples), cases as their mappings, a key that is unset left out."""
    if isinstance(value, CaseSpec):
        return {"name": value.name, "kind": value.kind, **dict(value.fields)}
    if is_section(value) and not isinstance(value, type):
        return {item.name: unbuild(value_of(value, item.name), own) for item, _, own in declared(type(value))
                if not own.internal and not (own.unset and value_of(value, item.name) is None)}
    if isinstance(value, tuple) and declaration is not None and declaration.keyed_by is not None:
        by = declaration.keyed_by
        return {getattr(entry, by): {name: item for name, item in unbuild(entry).items() if name != by}
                for entry in value}
    if isinstance(value, tuple | list):
        return [unbuild(item) for item in value]
    return value


def _build(doc: dict[str, Any], *, file: str, source: str, extends: str | None) -> Policy:
    """The typed policy from a validated, merged document (its cases too). A scope's points are merged over
    the policy's."""
    points = doc.get("points") or {}
    scopes = [{**scope, "points": {**points, **scope["points"]}} if "points" in scope else scope
              for scope in doc.get("scopes", [])]
    fields = {name: value for name, value in doc.items() if name != "extends"}
    policy: Policy = build(Policy, {**fields, "scopes": scopes}, file, "")
    return changed(policy, source=source, extends=extends)


def build(cls: type, doc: Mapping[str, Any], file: str, where: str) -> Any:
    """An instance of dataclass `cls` from a validated mapping of its keys; `where` is its key path."""
    given = {item.name: _value(hint, declaration, doc[item.name], file, join_key(where, [item.name]))
             for item, hint, declaration in declared(cls) if item.name in doc and not declaration.internal}
    return cls(**given)


def _value(hint: Any, declaration: Key, value: Any, file: str, where: str) -> Any:
    """One key's value as its declared type: sections built, lists as tuples, floats as floats (YAML reads
    `timeout: 3` as an integer), cases parsed, and paths normalised: `./.github/x.yml` is the tree's
    `.github/x.yml`, which the gate reads from the base commit, withholds from the sandbox and guards."""
    if value is None:
        return None
    kind, item = section_of(hint), item_type(hint)
    if kind is not None:
        return build(kind, value, file, where)
    if item is CaseSpec:
        return case_specs(value, file, where)
    if declaration.keyed_by is not None:
        return tuple(build(item, {declaration.keyed_by: name, **entry}, file, join_key(where, [name]))
                     for name, entry in value.items())
    if item is not None and section_of(item) is not None:
        return tuple(build(item, entry, file, join_key(where, [index])) for index, entry in enumerate(value))
    if item is not None:
        return tuple(posixpath.normpath(entry) if declaration.path else entry for entry in value)
    if hint is float:
        return float(value)
    return posixpath.normpath(value) if declaration.path else value


def _preset_doc(name: str, chain: tuple[str, ...]) -> tuple[MarkedMap, str | None]:
    """A preset's document with its own `extends` applied, and the name it extends."""
    file = _preset_file(name)
    if name in chain:
        raise BadInput(f"presets extend each other in a loop: {' -> '.join((*chain, name))}", file=file)
    doc = load_marked(_preset_path(name).read_text(encoding="utf-8"), file)
    if not isinstance(doc, MarkedMap):
        raise BadInput("a preset must be a mapping of policy keys", file=file)
    validate(doc, policy_schema(), file, remember=True)
    _check_globs(doc, file)
    extends = doc.get("extends")
    if extends is None:
        return doc, None
    if extends not in preset_names():
        raise BadInput(f"no preset named {extends!r}", file=file, line=doc.key_lines.get("extends"),
                       key="extends")
    base, _ = _preset_doc(extends, (*chain, name))
    merged = deep_merge(base, doc)
    _check_imports(merged, doc, file, extends)
    return merged, extends


def _preset_path(name: str) -> Any:
    return resources.files("gate") / "presets" / f"{name}.yml"


def _preset_file(name: str) -> str:
    return f"presets/{name}.yml"


def _kind_of(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"a single value ({value!r})"


def _check_globs(doc: MarkedMap, file: str) -> None:
    """What the schema cannot say about the file's values (each key's declared `problem`: globs, login
    patterns, agents), and that no two scopes share a name."""
    _check_values(Policy, doc, doc, file, [])
    names: dict[str, int] = {}
    for index, scope in enumerate(doc.get("scopes", [])):
        if scope.get("name") in names:
            raise BadInput(f"two scopes are named {scope['name']!r} (the first is scopes[{names[scope['name']]}])",
                           file=file, line=line_of(doc, ["scopes", index, "name"]), key=f"scopes[{index}].name")
        names[scope.get("name")] = index


def _check_values(cls: type, section: Mapping[str, Any], doc: MarkedMap, file: str, path: list[str | int]) -> None:
    for item, hint, declaration in declared(cls):
        value = section.get(item.name)
        if value is None:
            continue
        where: list[str | int] = [*path, item.name]
        if declaration.problem is not None:
            for index, entry in enumerate(value) if isinstance(value, list) else [(None, value)]:
                message = declaration.problem(entry)
                if message:
                    at = where if index is None else [*where, index]
                    raise BadInput(message, file=file, line=line_of(doc, at), key=join_key("", at))
        kind, entry_type = section_of(hint), item_type(hint)
        if kind is not None and isinstance(value, dict):
            _check_values(kind, value, doc, file, where)
        elif entry_type not in (None, CaseSpec) and section_of(entry_type) is not None and not declaration.keyed_by:
            for index, entry in enumerate(value):
                _check_values(entry_type, entry, doc, file, [*where, index])


def _check_judge(merged: MarkedMap, doc: MarkedMap, file: str) -> None:
    """An enabled judge needs an endpoint and a model: say so at load time, not as a `needs_review` on every PR."""
    judge = merged.get("judge", {})
    if not judge.get("enabled"):
        return
    for key in ("url", "model"):
        if not str(judge.get(key, "")).strip():
            what = "an OpenAI-compatible endpoint such as `https://api.openai.com/v1`" if key == "url" \
                else "the model's name"
            raise BadInput(f"judge.enabled is true, so judge.{key} is required: {what}", file=file,
                           line=line_of(doc, ["judge", key if key in doc.get("judge", {}) else "enabled"]),
                           key=f"judge.{key}")


def _check_imports(merged: MarkedMap, doc: MarkedMap, file: str, extends: str) -> None:
    """A module may not be both allowed and denied; point at whichever list the repository file names."""
    imports = merged.get("imports", {})
    deny = imports.get("deny", [])
    both = [module for module in imports.get("allow", []) if module in deny]
    if not both:
        return
    own = doc.get("imports", {})
    listed = "allow" if "allow" in own else "deny"
    items = own.get(listed, imports[listed])
    index = items.index(both[0])
    note = ("" if "deny" in own
            else f" (imports.deny comes from the {extends} preset: set imports.deny to change it)")
    raise BadInput(f"module {both[0]!r} is both allowed and denied{note}", file=file,
                   line=line_of(doc, ["imports", listed, index]), key=join_key(f"imports.{listed}", [index]))
