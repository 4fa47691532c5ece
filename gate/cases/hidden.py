"""Hidden cases: the cases that decide, read from where the code under score can neither read nor change them.

In a pull request or a git range they come from the base commit only (`base_reader` reads a path there): the
environment cannot replace them. Without a base (`gate score`) they come from the file that the environment
variable `policy.hidden.env` names, or from `policy.hidden.path` outside the worktree. They stay in the gate's
process: a case kind sends only their inputs into the sandbox, and a file the variable names is hidden from
every run wherever it is set (`places_to_hide`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gate.cases.specs import parse_cases
from gate.errors import BadInput, read_input
from gate.policy.marked_yaml import load_marked
from gate.policy.model import CaseSpec, Policy

# Reads a path at the base commit: its text, or None when the base has no such file.
BaseReader = Callable[[str], str | None]


def load_hidden(policy: Policy, base_reader: BaseReader | None, worktree: Path | None = None,
                environ: Mapping[str, str] | None = None) -> tuple[CaseSpec, ...]:
    """The hidden cases for this run, validated; () when there are none. Raises BadInput for a file that is
    not a list of cases, or one inside `worktree` (where the code under score could read it).
    """
    if base_reader is not None:  # a PR or a range: the base decides, whatever the environment says
        if not policy.hidden.path:
            return ()
        text = base_reader(policy.hidden.path)
        return () if text is None else parse_hidden(text, f"{policy.hidden.path} (base commit)")
    env = os.environ if environ is None else environ
    named = env.get(policy.hidden.env)
    if named:
        return _from_local(Path(named), worktree, policy.hidden.env)
    if not policy.hidden.path:
        return ()
    path = Path(policy.hidden.path)
    if worktree is not None and not path.is_absolute():
        return ()  # in the worktree: the head's copy, which the change could have written
    return _from_local(path, worktree, "hidden.path") if path.is_file() else ()


def places_to_hide(policy: Policy, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The hidden-cases files that no run may read, with their directories: the file the environment variable
    names (whether or not this run uses it) and `hidden.path` from here. A file outside a worktree may still
    be world-readable; a place that does not exist is left out by the sandbox."""
    env = os.environ if environ is None else environ
    places: list[str] = []
    for named in (env.get(policy.hidden.env), policy.hidden.path):
        if named:
            path = Path(named).expanduser().resolve()
            places += [str(path.parent), str(path)]
    return tuple(dict.fromkeys(places))


def parse_hidden(text: str, source: str) -> tuple[CaseSpec, ...]:
    """Parse a hidden-cases file: a YAML list of cases, or a mapping with `cases:`."""
    doc: Any = load_marked(text, source)
    if doc is None:
        return ()
    if isinstance(doc, dict):
        if set(doc) != {"cases"}:
            raise BadInput("expected a list of cases, or a mapping with only `cases:`", file=source)
        doc = doc["cases"]
    return parse_cases(doc, source, "cases", hidden=True)


def _from_local(path: Path, worktree: Path | None, key: str) -> tuple[CaseSpec, ...]:
    resolved = path.expanduser().resolve()
    if worktree is not None and resolved.is_relative_to(worktree.resolve()):
        raise BadInput(f"{resolved} is inside the worktree, where the code under score can read or change "
                       "it; keep hidden cases outside it", key=key)
    try:
        text = read_input(resolved, "hidden cases file")
    except BadInput as exc:
        raise BadInput(exc.message, file=exc.file, line=exc.line, key=key) from None
    return parse_hidden(text, str(resolved))
