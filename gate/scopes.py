"""Monorepos: a policy's `scopes:` scored one by one, in one verdict (docs/policy.md, "Monorepos").

Each changed file belongs to the first scope whose `paths` match it, or to the rest of the repository (the
`root` part, scored under the policy itself, which also runs the hidden cases). A scope is scored, with its
own budget, points, cases and tests, when the change adds, edits, deletes or moves away any file of it, and
always when it has cases or tests of its own: a change anywhere (shared code the scope imports, a file moved
out) can break them, and running them on every change is what tells. The root part is always scored, so its
cases run whatever the change touches. The change is accepted when every part is within its own budget.
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec.structs import replace

from gate.globs import matches
from gate.policy.model import Policy, Scope, changed
from gate.subject import SourceFile, Subject
from gate.verdict import NO_CODE, ScopeResult, Verdict

ROOT = "root"

RunChecks = Callable[[Subject, Policy], Verdict]


def by_scope(subject: Subject, policy: Policy, run: RunChecks) -> Verdict:
    """`run(subject, policy)`, or, with `scopes:`, one `run` per part combined into one verdict."""
    if not policy.scopes:
        return run(subject, policy)
    owned: dict[str, list[SourceFile]] = {scope.name: [] for scope in policy.scopes}
    lost: dict[str, list[str]] = {scope.name: [] for scope in policy.scopes}  # deleted or moved away
    rest: list[SourceFile] = []
    for source in subject.files:
        owner = _owner(policy.scopes, source.path)
        (owned[owner] if owner else rest).append(source)
        left = _owner(policy.scopes, source.old_path) if source.status == "renamed" and source.old_path else None
        if left and left != owner:
            lost[left].append(str(source.old_path))
    for path in subject.deleted:
        if owner := _owner(policy.scopes, path):
            lost[owner].append(path)
    parts = [(ROOT, len(rest), replace(subject, files=tuple(rest)), changed(policy, scopes=()))]
    suites = dict(subject.scope_suites)
    for scope in policy.scopes:
        if owned[scope.name] or lost[scope.name] or scope.cases is not None or scope.tests is not None:
            part = replace(subject, files=tuple(owned[scope.name]), hidden_cases=(),
                           suite=suites.get(scope.name, subject.suite))
            parts.append((scope.name, len(owned[scope.name]) + len(lost[scope.name]), part,
                          scoped_policy(policy, scope)))
    return combine(policy, [(name, files, run(part, rules)) for name, files, part, rules in parts])


def _owner(scopes: tuple[Scope, ...], path: str) -> str | None:
    """The first scope whose `paths` match `path`, or None (the root part)."""
    return next((s.name for s in scopes if any(matches(path, p) for p in s.paths)), None)


def scoped_policy(policy: Policy, scope: Scope) -> Policy:
    """The policy a scope's files are scored under: the scope's own keys over the policy's."""
    return changed(policy, scopes=(), budget=policy.budget if scope.budget is None else scope.budget,
                   points=scope.points or policy.points, cases=policy.cases if scope.cases is None else scope.cases,
                   tests=scope.tests or policy.tests, source=f"{policy.source}, scope {scope.name}")


def combine(policy: Policy, parts: list[tuple[str, int, Verdict]]) -> Verdict:
    """One verdict from the parts': each penalty, check, case and note names its part; blocked when any part
    is over its budget or blocked for a human."""
    first = parts[0][2]

    def tag(name: str, text: str) -> str:
        return f"[{name}] {text}"

    ran = next((v for _, _, v in parts if dict(v.isolation).get(NO_CODE) is None), first)
    return replace(
        first,
        policy_source=policy.source,
        budget=sum(v.budget for _, _, v in parts),
        total=sum(v.total for _, _, v in parts),
        accepted=all(v.accepted for _, _, v in parts),
        penalties=tuple(replace(p, message=tag(n, p.message)) for n, _, v in parts for p in v.penalties),
        checks=tuple(replace(c, name=f"{n}: {c.name}") for n, _, v in parts for c in v.checks),
        cases=tuple(replace(c, name=tag(n, c.name)) for n, _, v in parts for c in v.cases),
        blocked_reasons=tuple(dict.fromkeys(r for _, _, v in parts for r in v.blocked_reasons)),
        notes=tuple(replace(note, source=f"{n}: {note.source}") for n, _, v in parts for note in v.notes),
        labels=tuple(dict.fromkeys(label for _, _, v in parts for label in v.labels)),
        isolation=ran.isolation,
        timings=(("total", round(sum(dict(v.timings).get("total", 0.0) for _, _, v in parts), 4)),),
        scopes=tuple(ScopeResult(n, files, v.total, v.budget, v.accepted) for n, files, v in parts),
        tampered=tuple(replace(t, seen=tag(n, t.seen)) for n, _, v in parts for t in v.tampered),
        blind=tuple(replace(b, suite=n) for n, _, v in parts for b in v.blind),
    )
