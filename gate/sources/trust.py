"""Everything the gate trusts, read from the base commit in one place, the same way for every source.

The policy (or the default preset when the base has none), the hidden cases, the judge's rubric and the
report templates come from the base, never from the head that the bot wrote. A change that touches one of
those files is blocked for a human whatever its score: it would change how it is itself gated; so is one that
touches the agent control plane the base's policy names (`control_plane:`), which steers the next agent.
`gate check`, `gate ci` (from the checkout or through the API) and `gate publish` all go through
`read_trusted`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

import msgspec

from gate.cases.hidden import load_hidden
from gate.errors import BadInput
from gate.globs import matches
from gate.policy.model import ALTERNATE_POLICY_PATH, DEFAULT_POLICY_PATH, CaseSpec, Environment, Policy, changed
from gate.policy_file import load_policy
from gate.report.templating import OVERRIDE_DIR, Overrides
from gate.sources.base import BaseReader, Change
from gate.subject import SourceFile
from gate.verdict import listing

# A governed path that starts with this names a file of that name in any folder.
ANY_FOLDER = "**/"


class Trusted(msgspec.Struct, frozen=True):
    """What the base decides about a change."""

    policy: Policy
    governed: Mapping[str, str]  # path (see governed_files) -> what it is, in words
    blocked_reasons: tuple[str, ...]
    hidden_cases: tuple[CaseSpec, ...]
    judge_rubric: str | None
    overrides: Overrides
    reproduce: str
    # What the change does to the dependency declarations, when the policy relaxes that to a note
    # (`environment.dependency_changes: note`); otherwise those lines are among `blocked_reasons`.
    dependency_notes: tuple[str, ...] = ()
    # What the run's environment asks for that the base's trust rules set aside, one sentence each.
    ignored: tuple[str, ...] = ()
    # Why no test of the repository runs although the base has test files, or "" (`untested`).
    untested: str = ""


def read_trusted(base: BaseReader, changes: Sequence[Change], head_sha: str, *, policy_path: str | None,
                 worktree: Path | None = None, candidate: Policy | None = None) -> Trusted:
    """Read from `base` what gates `changes` (the head being `head_sha`). `policy_path` is the path the user
    named (`--policy`), which must then exist in the base; by default a base without a policy file is scored
    with the default preset, and the policy's source says so. `worktree` is the local checkout, where a
    hidden-cases file named by the environment must not be. `candidate` is a policy the maintainer gives in
    place of the base's (`gate replay --policy`, which asks what it would have done); everything else still
    comes from the base, as that policy names it."""
    named = tree_path(policy_path) if policy_path else None
    policy = candidate if candidate is not None else _policy(base, named)
    governed = governed_files(policy, named or DEFAULT_POLICY_PATH)
    rubric = policy.judge.rubric_file
    hidden = load_hidden(policy, base.read, worktree)
    dependencies = dependency_changes(base, changes, policy, bool(policy.has_cases_or_tests or hidden))
    spec = policy.repository_environment
    relaxed = spec is not None and spec.dependency_changes == "note"
    return Trusted(
        policy=policy,
        governed=governed,
        blocked_reasons=(blocked_reasons(changes, governed) + control_plane_reasons(changes, policy)
                         + unscored_reasons(changes) + (() if relaxed else dependencies)),
        dependency_notes=dependencies if relaxed else (),
        hidden_cases=hidden,
        ignored=ignored_hidden_env(policy),
        untested=untested(base, policy),
        judge_rubric=base.read(rubric) if rubric else None,
        overrides=Overrides(sources=base.read_folder(OVERRIDE_DIR), origin=f"{OVERRIDE_DIR}@{base.sha[:12]}"),
        reproduce=f"gate check --base {base.sha} --head {head_sha}" + (f" --policy {named}" if named else ""),
    )


def check_against_base(policy: Policy, read: Callable[[str], str | None], has: Callable[[str], bool]) -> None:
    """BadInput (exit 2) naming the policy's file, line and key for the first thing it asks of the base (its files
    through `read`; `has` tells whether it holds a file or folder) that the base lacks: extras without a project,
    a requirements file, a dependency group that it lacks or that does not resolve, a test path (`tests.paths`,
    a scope's). `gate check` and every source that runs code check this before building anything, and `gate
    policy check` checks a working tree by the same function."""
    from gate.environment.declarations import check

    try:
        spec = policy.repository_environment
        if spec is not None:
            check(spec, read)
        suites = [("tests", policy.tests), *((f"scopes[{index}].tests", scope.tests)
                                             for index, scope in enumerate(policy.scopes))]
        for where, suite in suites:
            for index, path in enumerate(suite.paths if suite is not None else ()):
                if path != "." and not has(path):  # (the tree's top is in every commit)
                    raise BadInput(f"no file or folder {path} in the base commit", key=f"{where}.paths[{index}]")
    except BadInput as exc:
        raise BadInput(exc.message, file=policy.source, line=policy.line(exc.key or ""), key=exc.key) from None


# The most test modules a verdict's "no test ran" names in the `tests:` it suggests (`gate init` writes them all).
_SUGGESTED = 3


def untested(base: BaseReader, policy: Policy) -> str:
    """Why no test of the repository runs under `policy` although the base holds files pytest collects as
    tests (found as pytest finds them: gate/suite/discovery.py), or "" when the policy (or a scope) runs a
    suite, or the base has no test file. A verdict that says "accepted" must not hide that no test ran."""
    if policy.tests is not None or any(scope.tests is not None for scope in policy.scopes):
        return ""
    from gate.suite.discovery import find_suite, nameable, stray_tests

    try:
        suite = find_suite(base.paths(), base.read)
    except BadInput:  # a pytest configuration that does not parse: pytest's own names, as it cannot read it
        suite = find_suite(base.paths(), lambda path: None)
    if suite.files:
        count = len(suite.files)
        return (f"the base has {count} test file{'s' * (count != 1)} ({listing(list(suite.files), ', ', 3)}) and "
                f"the policy has no tests: (`tests: {{paths: [{', '.join(suite.paths)}]}}` would run them)")
    # Modules that look like tests and that pytest does not collect as configured (`tests/test.py`): no suite,
    # yet the project has tests, which no verdict may pass over in silence.
    stray = stray_tests(base.paths(), suite.config)
    if not stray:
        return ""
    named = nameable(stray, base.read)
    paths = f"`tests: {{paths: [{', '.join(named)}]}}`" if len(named) <= _SUGGESTED else "naming each in `tests.paths`"
    run = f" ({paths} would run them: pytest collects a file named there whatever its name)" if named else ""
    count = len(stray)
    return (f"the base has {count} module{'s' * (count != 1)} named like tests ({listing(list(stray), ', ', 3)}) "
            f"that pytest does not collect as configured, and the policy has no tests{run}")


def ignored_hidden_env(policy: Policy, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The hidden-cases variable (`hidden.env`) set in a run that has a base, which does not use it: on a
    `pull_request` run the workflow that sets it is the head's own (a PR can edit it), so the hidden cases come
    from the base commit only. Said in the verdict, never dropped in silence."""
    value = (os.environ if environ is None else environ).get(policy.hidden.env)
    if not value:
        return ()
    base = f"`hidden.path` ({policy.hidden.path})" if policy.hidden.path else "`hidden.path`, unset here"
    return (f"{policy.hidden.env} is set but not used: with a base commit, hidden cases come from the base's "
            f"{base} only, since a PR can change the workflow that sets the variable; the file it names is "
            "still hidden from every run",)


def read_policy(base: BaseReader, policy_path: str | None) -> Policy:
    """The policy `read_trusted` would read from `base`, alone: what a PR run needs to decide whether the PR is
    gated before it builds anything of the head."""
    return _policy(base, tree_path(policy_path) if policy_path else None)


def governed_files(policy: Policy, policy_path: str) -> dict[str, str]:
    """The paths the gate reads from the base under `policy` (itself read from `policy_path`), and what each
    is, in words. A path ending in `/` governs a folder, one starting with `**/` a file of that name in any
    folder. To make the gate read another file from the base (and block a change to it for a human), add its
    entry here."""
    entries = [
        (policy_path, "the policy file"),
        # A head that adds the other name would change which file gates the next change.
        *([(ALTERNATE_POLICY_PATH, "the policy file")] if policy_path == DEFAULT_POLICY_PATH else []),
        (policy.hidden.path, "the hidden cases file"),
        (policy.judge.rubric_file, "the judge's rubric file"),
        (OVERRIDE_DIR + "/", "the report templates"),
        # Attributes change what git shows of a change (`-diff` makes a file "binary", with no added lines):
        # the gate diffs as text whatever they say, and a change to them is a human's to review.
        (ANY_FOLDER + ".gitattributes", "the git attributes file"),
    ]
    return {path: what for path, what in entries if path}


def blocked_reasons(changes: Sequence[Change], governed: Mapping[str, str]) -> tuple[str, ...]:
    """Why a human must look: the change touches a file (or a folder's file) that the gate reads from the
    base commit."""
    reasons = []
    for path, what in governed.items():
        touching = [c for c in changes if any(_governs(path, p) for p in c.paths)]
        if touching:
            verb = {"added": "adds", "deleted": "deletes", "renamed": "renames"}.get(touching[0].status, "edits")
            named = next(p for p in touching[0].paths if _governs(path, p)) if path.startswith(ANY_FOLDER) \
                else path
            reasons.append(f"the change {verb} {what} {named}, which is read from the base commit; "
                           "a human must review it")
    return tuple(reasons)


def unscored_reasons(changes: Sequence[Change]) -> tuple[str, ...]:
    """Why a human must look: a file of the change that the gate cannot score as the head has it. A symbolic link
    or a submodule (the gate reads files, and a checkout runs what the link or the submodule points at), two
    files that read as one name (names that differ only in bytes that are not UTF-8, or a crafted tree that lists
    a name twice: the checks would read one in the other's place), and a path that a crafted tree names but no
    checkout makes (`tests/../x.py`)."""
    reasons = []
    named: dict[str, int] = {}
    for change in changes:
        if change.status == "deleted":
            continue
        named[change.path] = named.get(change.path, 0) + 1
        if change.crafted:
            reasons.append(f"the change has a file at {change.path}, a path no checkout makes (a crafted tree): "
                           "a human must review it")
        elif change.data is None:
            what = {"added": f"adds {change.path}", "renamed": f"moves {change.old_path} to {change.path}"}.get(
                change.status, f"changes {change.path}")
            reasons.append(f"the change {what}, a symbolic link or a submodule: the gate scores files, not what "
                           "a link or a submodule points at; a human must review it")
    reasons += [f"the change has two files named {path} (names that differ only in bytes that are not UTF-8, or "
                "a tree that lists a name twice): the gate cannot score both; a human must review them"
                for path, count in named.items() if count > 1]
    return tuple(reasons)


def control_plane_reasons(changes: Sequence[Change], policy: Policy) -> tuple[str, ...]:
    """One line per file of the change that the base policy's `control_plane:` names (agent instructions, their
    tools' configuration, workflows, CODEOWNERS): what steers the next agent, or runs with the repository's
    token, is a human's to change, whatever the score."""
    reasons = []
    for change in sorted(changes, key=lambda c: c.path):  # (the API lists a PR's files in its own order)
        found = next(((path, glob) for path in change.paths for glob in policy.control_plane
                      if matches(path, glob)), None)
        if found is None:
            continue
        path, glob = found
        verb = {"added": "adds", "deleted": "deletes", "renamed": "moves"}.get(change.status, "edits")
        named = f"{change.old_path} to {change.path}" if change.status == "renamed" else path
        reasons.append(f"the change {verb} {named}, which is in the agent control plane (the base policy's "
                       f"control_plane: {glob}): what steers agents or runs with the repository's token needs a "
                       "human's review")
    return tuple(reasons)


def dependency_changes(base: BaseReader, changes: Sequence[Change], policy: Policy,
                       runs_code: bool) -> tuple[str, ...]:
    """One line per dependency declaration the change edits, naming what changed, when the policy builds the
    repository's environment (from the base: the change is scored with the base's dependencies, so a human
    must look at the new ones): `environment:` as written, or by default only when code runs
    (`runs_code`)."""
    spec = policy.repository_environment
    if spec is None or (spec == Environment() and not runs_code):
        return ()
    from gate.environment.declarations import is_declaration, named, what_changed  # (tomllib: only when needed)

    heads: dict[str, str | None] = {path: None for change in changes for path in change.paths}  # (gone, but...)
    heads |= {change.path: change.data.decode("utf-8", "replace") for change in changes
              if change.status != "deleted" and change.data is not None}

    def head(path: str) -> str | None:
        return heads[path] if path in heads else base.read(path)

    # What the declarations name (a file `-r` includes, setuptools' dynamic dependencies, an in-tree backend), at
    # the base (what the environment is built from) and at the head (what it would be built from once merged).
    also = named(base.read, spec) | named(head, spec)
    lines = []
    for change in changes:
        for path in change.paths:
            if not is_declaration(path, spec, also):
                continue
            new = None if change.status == "deleted" or path != change.path or change.data is None \
                else change.data.decode("utf-8", "replace")
            what = what_changed(path, base.read(path), new)
            if what:
                lines.append(f"the change {what}; the code was scored with the base's dependencies, and a human "
                             "must review the new ones")
    return tuple(dict.fromkeys(lines))


def source_files(changes: Sequence[Change]) -> tuple[SourceFile, ...]:
    """The files the change leaves at the head, as the checks read them (the extract check keeps those that
    the policy's `paths` gates)."""
    return tuple(_source_file(c, c.data) for c in changes if c.status != "deleted" and c.data is not None)


def deleted_paths(changes: Sequence[Change]) -> tuple[str, ...]:
    """The base's paths of the files the change deletes (a scope that loses one is scored: docs/policy.md)."""
    return tuple(c.path for c in changes if c.status == "deleted")


def tree_path(path: str) -> str:
    """`path` as git names it in a tree (`./a//b.yml` is `a/b.yml`); it must stay inside the repository."""
    clean = PurePosixPath(path)
    if clean.is_absolute() or ".." in clean.parts:
        raise BadInput(f"expected a path inside the repository, got {path!r}", key="--policy")
    return clean.as_posix()


def _policy(base: BaseReader, named: str | None) -> Policy:
    path = named or DEFAULT_POLICY_PATH
    text = base.read(path)
    if not named:
        other = base.read(ALTERNATE_POLICY_PATH)
        if other is not None and text is not None:
            raise BadInput(f"the base commit {base.sha[:12]} holds both {DEFAULT_POLICY_PATH} and "
                           f"{ALTERNATE_POLICY_PATH}: keep one", file=ALTERNATE_POLICY_PATH)
        if other is not None:
            path, text = ALTERNATE_POLICY_PATH, other
    if text is None:
        if named:
            raise BadInput(f"no policy file at {path} in the base commit {base.sha[:12]}", key="--policy")
        policy = load_policy(None)
        return changed(policy, source=f"{policy.source} (no {path} in the base commit {base.sha[:12]})")
    return load_policy(Path(path), text=text, source=f"{path}@{base.sha[:12]}")


def _governs(governed: str, path: str) -> bool:
    if governed.startswith(ANY_FOLDER):
        return PurePosixPath(path).name == governed.removeprefix(ANY_FOLDER)
    return path.startswith(governed) if governed.endswith("/") else path == governed


def _source_file(change: Change, data: bytes) -> SourceFile:
    if change.status == "added" or change.added_lines is None:
        return SourceFile.from_bytes(change.path, data)
    if change.status == "renamed":
        return SourceFile.from_bytes(change.path, data, change.added_lines, "renamed", change.old_path)
    return SourceFile.from_bytes(change.path, data, change.added_lines, "modified")
