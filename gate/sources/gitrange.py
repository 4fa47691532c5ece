"""A git range (`base..head`) as something to score: `gate check`, and the PR gate for the same commits.

The base is read through `GitBase` and the changes from `git diff`; `trust.read_trusted` takes what is trusted
from the base commit's tree, never from the worktree or the head. The code under test is a clean export of the
head commit's tree into a temporary directory: never the live worktree, never its `.git`. The repository's
suite is selected from the base and that export by gate/suite/selection.py, which reads the base through
`SuiteBase`.

`subject_from_commits` is the one function both inputs use, so that `gate check --base B --head H` and the
PR gate for the same commits give the same verdict. Git is reached through gate/sources/gitcli.py only here, at
the edge.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import functools
import os
import re
import shutil
import stat
import tempfile
import time
import types
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import urlsplit

import msgspec
from msgspec.structs import replace

from gate.checks.trees import TreeCache, feature_version
from gate.environment import BuildLayer, BuiltEnvironment, packages, scm
from gate.environment.cache import cache_dir
from gate.environment.declarations import buildable
from gate.errors import BadInput, GateFailure, decode_input
from gate.policy.model import CaseSpec, Environment, Policy
from gate.progress import QUIET, Progress
from gate.sandbox import toolchain
from gate.sandbox.detect import run_interpreter
from gate.sandbox.stage import new_export
from gate.sources.base import Change, ChangeStatus, ScoreInput
from gate.sources.gitcli import Commit, GitError, NotARepository, Repo, available, read_object
from gate.sources.trust import check_against_base, deleted_paths, read_trusted, source_files
from gate.subject import BaseTree, SourceFile, Subject
from gate.suite.selection import SuiteBase, SuiteTrees, framework_path, once, runner, suites
from gate.syntax import parse_python
from gate.verdict import listing

# Branches tried, in order, when `--base` is not given; the base is their merge base with the head.
DEFAULT_BRANCHES = ("main", "master", "origin/HEAD")
_REGULAR_MODES = {"100644", "100755"}
_SUBMODULE = "160000"  # a tree entry's mode for a commit of another repository
_BLOCK = 4096  # what the smallest file costs of a run's disk
# Flags that keep `git diff` output independent of the user's configuration and the repository's attributes:
# `--text` because an attribute (`* -diff` in a `.gitattributes` of the checkout, which is the head's, or in
# `.git/info/attributes`) makes git report a changed file as binary, which has no added lines to check.
_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--text", "--inter-hunk-context=0")
# Nor the user's own attributes file.
_NO_USER_ATTRIBUTES = ("core.attributesFile=/dev/null",)
# ... and the paths in a patch's headers as they are (only a name with a quote, a backslash or a control
# character is still quoted), so that a header can be matched with the raw listing's name.
_PATCH_CONFIG = ("core.attributesFile=/dev/null", "core.quotePath=false")
_STATUS: dict[str, ChangeStatus] = {"A": "added", "D": "deleted", "R": "renamed", "C": "renamed"}
# A hunk of a patch without context: it removes the old lines and adds the new ones its header counts.
_ZERO_CONTEXT_HUNK = re.compile(rb"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_PIECE = 64 * 1024  # the most of a patch's line read at once
_KEPT = (b"diff --git ", b"@@ ")  # the lines of a patch `_added` reads


class _Entry(msgspec.Struct, frozen=True):
    """One entry of a commit's tree, as `git ls-tree` lists it."""

    mode: int
    kind: str  # "blob" (a file or a symbolic link), "tree" (a folder), "commit" (a submodule)
    sha: str
    size: int  # a blob's bytes; 0 for the rest

    @property
    def regular(self) -> bool:
        """A file whose text can be read (not a link, a folder or a submodule)."""
        return self.kind == "blob" and not stat.S_ISLNK(self.mode)


@functools.lru_cache(maxsize=8)
def _listing(commit: Commit) -> dict[str, _Entry]:
    """Every entry of the commit's tree (files, links, folders, submodules) by path, in git's order: one `git
    ls-tree` for every lookup. (A tree is known by its SHA, so what it lists never changes.)"""
    raw = commit.repo.run_bytes("ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commit.hexsha)
    entries = {}
    for record in raw.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if not name:
            continue
        mode, kind, sha, size = meta.split()
        # (git allows any bytes in a name: those that are not UTF-8 are kept as lone surrogates)
        entries[name.decode("utf-8", "surrogateescape")] = _Entry(
            int(mode, 8), kind.decode(), sha.decode(), int(size) if size.isdigit() else 0)
    return entries


def _contents(repo: Repo, shas: Sequence[str]) -> Generator[bytes, None, None]:
    """The bytes of each blob of `shas`, in order, from one `git cat-file --batch` sent every name at once
    (rather than a round trip to git for each)."""
    if not shas:
        return
    with tempfile.TemporaryFile() as names:
        names.write("".join(f"{sha}\n" for sha in shas).encode())
        names.seek(0)
        process = repo.start("cat-file", "--batch", stdin=names)
        try:
            for sha in shas:
                try:
                    data = read_object(process.stdout, sha)
                except GitError as exc:
                    raise GateFailure(exc.stderr) from None
                yield data
        finally:
            process.stdout.close()
            with contextlib.suppress(GitError):  # (what it said is above)
                process.wait()


class GitBase:
    """The base commit of a local repository, read from its tree (never the worktree). With `replacing`, bytes
    that are not UTF-8 read as U+FFFD instead of stopping the gate (exit 2, as the base's input): a head's files
    are the bot's, what they mean is for the checks and the build to judge."""

    def __init__(self, commit: Commit, replacing: bool = False) -> None:
        self.commit = commit
        self.sha = commit.hexsha
        self._replacing = replacing

    def read(self, path: str) -> str | None:
        """The text of `path` in the commit, or None when it is not a regular file there."""
        entry = _listing(self.commit).get(path)
        return self._text(path, entry) if entry is not None and entry.regular else None

    def read_folder(self, folder: str) -> dict[str, str]:
        """The regular files directly inside `folder`, by name."""
        prefix = f"{folder}/"
        inside = {path: entry for path, entry in _listing(self.commit).items()
                  if path.startswith(prefix) and "/" not in path[len(prefix):] and entry.regular}
        return {path[len(prefix):]: self._text(path, entry) for path, entry in inside.items()}

    def paths(self) -> tuple[str, ...]:
        """Every file of the commit's tree, as git names it."""
        return _files(self.commit)

    def has(self, path: str) -> bool:
        """Whether the commit's tree holds a file, folder or submodule at `path`."""
        return path in _listing(self.commit)

    def is_folder(self, path: str) -> bool:
        entry = _listing(self.commit).get(path)
        return entry is not None and entry.kind == "tree"

    def _text(self, path: str, entry: _Entry) -> str:
        data = self.commit.repo.blob(entry.sha)
        return data.decode("utf-8", "replace") if self._replacing else decode_input(data, f"{path}@{self.sha[:12]}")


def _files(commit: Commit) -> tuple[str, ...]:
    """The paths of the commit's files (links too), in git's order."""
    return tuple(path for path, entry in _listing(commit).items() if entry.kind == "blob")


@contextmanager
def subject_from_commits(repo: Repo, base_sha: str, head_sha: str, *, policy_path: str | None = None,
                         repo_url: str | None = None, candidate: Policy | None = None,
                         progress: Progress = QUIET,
                         on_framework: Callable[[tuple[str, ...]], None] = lambda _: None) -> Iterator[ScoreInput]:
    """Build what is scored for the commits `base_sha..head_sha` of `repo`.

    The changes are those of the head since its merge base with the base (what a PR shows); what is trusted
    comes from `base_sha` (the policy too, unless a `candidate` takes its place: `gate replay --policy`).
    `repo_url` (`https://github.com/OWNER/REPO`) makes report locations links; by default it comes from the
    `origin` remote. The head's tree is exported only when there are cases to run against it, and removed
    when the context exits. `progress` hears of the environment's build, `on_framework` where the suite's runs
    import pytest from (`_subject`).
    """
    started = time.perf_counter()
    base = _commit(repo, base_sha, "--base")
    head = _commit(repo, head_sha, "--head")
    with _subject(repo, base, head, _merge_base(repo, base, head), policy_path, repo_url, candidate,
                  progress, started, on_framework=on_framework) as found:
        yield found


@contextmanager
def _subject(repo: Repo, base: Commit, head: Commit, fork: Commit, policy_path: str | None,
             repo_url: str | None, candidate: Policy | None, progress: Progress, started: float,
             on_policy: Callable[[Policy], None] = lambda _: None,
             on_framework: Callable[[tuple[str, ...]], None] = lambda _: None) -> Iterator[ScoreInput]:
    """`subject_from_commits` for commits already resolved, `fork` being their merge base; `started` when the
    source began. `on_policy` hears the policy as soon as it is read; `on_framework`, when the policy runs a
    suite, where its runs import pytest from, as soon as the environment is known."""
    changes = git_changes(repo, fork, head)
    trusted = read_trusted(GitBase(base), changes, head.hexsha, policy_path=policy_path,
                           worktree=_worktree(repo), candidate=candidate)
    policy = trusted.policy
    on_policy(policy)
    facts = _facts(repo, base, head, fork, repo_url)
    facts += [("dependencies", note) for note in trusted.dependency_notes]
    facts += [("ignored", note) for note in trusted.ignored]
    runs_code = bool(policy.has_cases_or_tests or trusted.hidden_cases)
    files = source_files(changes)
    trees = TreeCache()  # (the change's modules the cases name: parsed here once, for the checks too)
    if runs_code:
        check_against_base(policy, GitBase(base).read, GitBase(base).has)
        refuse_unresolved(base, head, policy, trusted.hidden_cases, trees, files)
    tree = new_export() if runs_code else None  # (named so that the next gate removes it if this one dies)
    try:
        building = time.perf_counter()
        version = functools.cache(lambda commit: scm_version(repo, commit))  # (each commit's once: git twice)
        environment = _environment(version, base, policy, progress) if runs_code else None
        timings = (("environment", round(time.perf_counter() - building, 4)),) if environment is not None else ()
        suited = bool(tree) and policy.has_tests
        pytest_runner = runner(environment) if suited else ()
        if tree and policy.tests:
            on_framework(framework_path(environment, pytest_runner))
        # The hidden cases stay out of the export, and so does a copy of them the head makes: the candidate's
        # code runs in it.
        withheld = frozenset({policy.hidden.path} if policy.hidden.path else ())
        read = {change.path: change.data for change in changes if change.data is not None and _raw(change.path)}
        # (only a file that holds cases: an empty one's blob is every empty file's, `__init__.py` among them)
        secrets = frozenset(_listing(base)[path].sha for path in withheld
                            if path in _listing(base)) if trusted.hidden_cases else frozenset()
        skipped = export_tree(head, tree, withheld, policy.limits.disk_mb * 1024 * 1024, read,
                              secrets) if tree else []
        if skipped:
            facts.append(("not exported", listing(skipped, ", ")))
        suite, scope_suites = suites(_suite_base(base, policy, withheld), changes, policy, tree, withheld,
                                     pytest_runner, _import_roots(head, policy, replacing=True)) if tree else (None, ())
        layers = _layers(version, base, head, environment, withheld, secrets, policy.limits.disk_mb * 1024 * 1024,
                         [each for each in (suite, *(found for _, found in scope_suites)) if each], policy)
        if layers and layers[0].toolchain is not None:
            facts.append(("compiler", layers[0].toolchain.describe()))
        subject = Subject(
            kind="range",
            label=f"{base.hexsha[:12]}..{head.hexsha[:12]}",
            files=files,
            deleted=deleted_paths(changes),
            hidden_cases=trusted.hidden_cases,
            tree=tree,
            blocked_reasons=(*trusted.blocked_reasons, *uncompiled(
                layers, changes, runs_code and environment is None and buildable(GitBase(head, replacing=True).read))),
            untested=trusted.untested,
            facts=tuple(facts),
            judge_rubric=trusted.judge_rubric,
            environment=environment,
            import_roots=_import_roots(head, policy, replacing=True),
            layers=layers,
            suite=suite,
            scope_suites=scope_suites,
            base=BaseTree(_exporter(base, Path(f"{tree}-base"), withheld, policy.limits.disk_mb * 1024 * 1024),
                          _import_roots(base, policy)) if tree else None,
            timings=timings,
        )
        private = tuple(str(p) for p in (_worktree(repo), repo.git_dir, repo.common_dir) if p)
        yield ScoreInput(subject, policy, trusted.overrides, trusted.reproduce, private, started, trees)
    finally:
        if tree:
            shutil.rmtree(tree, ignore_errors=True)
            for folder in (*tree.parent.glob(f"{tree.name}-suite*"), Path(f"{tree}-base")):
                shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def subject_from_range(repo_dir: str | Path, base: str | None = None, head: str = "HEAD", *,
                       policy_path: str | None = None, progress: Progress = QUIET,
                       on_policy: Callable[[Policy], None] = lambda _: None,
                       on_framework: Callable[[tuple[str, ...]], None] = lambda _: None) -> Iterator[ScoreInput]:
    """`gate check`: resolve the refs (the base defaults to the merge base with the default branch), score the
    commits, and record a dirty worktree as a fact (its uncommitted changes are not scored). `on_policy` hears
    the base's policy as soon as it is read, `on_framework` where the suite's runs import pytest from (the
    sandbox starts what its runs need: `_subject`)."""
    started = time.perf_counter()
    if not available():
        raise GateFailure("git is not installed (or not on PATH); gate check reads the range with it")
    try:
        repo = Repo(repo_dir, search_parent_directories=True)
    except NotARepository as exc:
        raise BadInput("not a git repository", file=str(repo_dir), key="--repo") from exc
    with contextlib.closing(repo), _status(repo) as dirty:
        head_commit = _commit(repo, head, "--head")
        base_commit = _commit(repo, base, "--base") if base else _default_base(repo, head_commit)
        fork = _merge_base(repo, base_commit, head_commit)
        if fork == head_commit:
            raise BadInput(f"nothing to check: {head} ({head_commit.hexsha[:12]}) has no commits that the base "
                           f"{base_commit.hexsha[:12]} lacks; check out the bot's branch or name --base and "
                           "--head", key="--head")
        with _subject(repo, base_commit, head_commit, fork, policy_path, None, None, progress, started,
                      on_policy, on_framework) as found:
            if dirty():
                note = ("worktree", f"has uncommitted changes, which are not scored (the range ends at commit "
                                    f"{head_commit.hexsha[:12]})")
                found = replace(found, subject=replace(found.subject, facts=(*found.subject.facts, note)))
            yield found


def readable(repo: Repo) -> None:
    """Raise GateFailure with git's own words when git refuses the repository (a checkout owned by another
    uid: "detected dubious ownership", fixed by `safe.directory`), before any other command fails with a
    message that hides why."""
    try:
        repo.layout  # noqa: B018 (what git said of it when it was found)
    except GitError as exc:
        raise GateFailure(f"git cannot read the repository at {repo.working_dir}: "
                          f"{' '.join(exc.stderr.split())}") from None


@contextmanager
def _status(repo: Repo) -> Iterator[Callable[[], bool]]:
    """Whether the worktree has staged, unstaged or untracked changes, when asked: one `git status`, started
    as the block begins (once git is known to read the repository), so that it runs while the gate reads the
    range (in a large checkout it takes a while); stopped at the block's end (the range may stop first)."""
    readable(repo)
    if repo.bare:
        yield lambda: False
        return
    status = repo.start("status", "--porcelain", "--untracked-files=normal")

    def dirty() -> bool:
        found = status.stdout.read()
        status.wait()  # (GitError when git failed)
        return bool(found.strip())
    try:
        yield dirty
    finally:
        status.stop()


def git_changes(repo: Repo, fork: Commit, head: Commit) -> tuple[Change, ...]:
    """The files that differ between `fork` and `head`, renames detected, from NUL-separated raw output (file
    names may hold any character)."""
    raw = repo.run("diff", "--raw", "-z", "-M", "--no-abbrev", *_DIFF_FLAGS, fork.hexsha, head.hexsha,
                   config=_NO_USER_ATTRIBUTES)
    fields = raw.split("\0")
    records = []
    i = 0
    while i < len(fields) and fields[i].startswith(":"):
        old_mode, new_mode, old_blob, new_blob, letters = fields[i][1:].split(" ")
        if letters[0] in "RC":
            old_path, new_path, i = fields[i + 1], fields[i + 2], i + 3
        else:
            old_path = new_path = fields[i + 1]
            i += 2
        records.append((old_mode, new_mode, old_blob, new_blob, letters, old_path, new_path))
    # The head's bytes of every file it has, read by one git process.
    read = [new_blob for _, new_mode, _, new_blob, letters, _, _ in records
            if letters[0] != "D" and new_mode in _REGULAR_MODES]
    contents = dict(zip(read, _contents(repo, read), strict=True))
    changes: list[Change] = []
    patches: dict[str, frozenset[int]] | None = None
    for old_mode, new_mode, old_blob, new_blob, letters, old_path, new_path in records:
        status = _STATUS.get(letters[0], "modified")
        if status == "renamed" and old_path == new_path:
            status = "modified"
        data = contents.get(new_blob) if status != "deleted" and new_mode in _REGULAR_MODES else None
        added: frozenset[int] | None = None
        # (A file where the base had a submodule has no lines before it: its commit is another repository's, and
        # all of the file counts, as all of an added file does.)
        if status in ("modified", "renamed") and data is not None and old_mode != _SUBMODULE:
            if patches is None:
                patches = _patches(repo, fork, head)
            added = patches.get(f"diff --git a/{old_path} b/{new_path}") if letters[0] in "MRC" \
                and old_mode in _REGULAR_MODES else None
            if added is None:  # a name git quotes in the header, a type change: this file's own diff
                own = _added(repo, ("diff", "--unified=0", *_DIFF_FLAGS, old_blob, new_blob), _NO_USER_ATTRIBUTES)
                added = next(iter(own.values()), frozenset())  # (no part: the same bytes, another mode)
        changes.append(Change(status, _printable(new_path), None if status == "added" else _printable(old_path),
                              added, data))
    return tuple(changes)


def _patches(repo: Repo, fork: Commit, head: Commit) -> dict[str, frozenset[int]]:
    """The lines the range adds to each file it modifies or renames (`git diff --unified=0`, renames detected
    as for the raw listing), by its part's `diff --git a/OLD b/NEW` header line: one git run for every file
    instead of one per file (docs/benchmarks.md). Not the files the range adds, whose lines all count; a name
    git quotes in a header does not match its raw name."""
    return _added(repo, ("diff", "--unified=0", "-M", "--diff-filter=MR", *_DIFF_FLAGS, fork.hexsha, head.hexsha),
                  _PATCH_CONFIG)


def _added(repo: Repo, command: Sequence[str], config: Sequence[str]) -> dict[str, frozenset[int]]:
    """The lines each part of a `git diff --unified=0` adds, by its header line, read as git writes it: only
    the part headers and the hunk headers are kept (without context, a hunk adds the lines its header says),
    so that a large file's lines, a binary's every few bytes (`--text`), are read past and never held. A header
    that comes twice (a tree may list a name twice) is left out, so that no file takes another's lines."""
    parts: dict[str, list[tuple[int, int]]] = {}
    seen: set[str] = set()
    hunks: list[tuple[int, int]] | None = None
    started = repo.start(*command, config=config)
    try:
        for line in _lines(started.stdout):
            if line.startswith(b"diff --git "):
                header = line.decode("utf-8", "surrogateescape")
                hunks = None if header in seen else parts.setdefault(header, [])
                if header in seen:
                    parts.pop(header, None)
                seen.add(header)
            elif hunks is not None and line.startswith(b"@@ "):
                found = _ZERO_CONTEXT_HUNK.match(line)
                if found:
                    hunks.append((int(found.group(1)), int(found.group(2) or 1)))
    except BaseException:
        started.stop()
        raise
    started.stdout.close()
    started.wait()
    return {header: frozenset(n for start, count in found for n in range(start, start + count))
            for header, found in parts.items()}


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The whole lines of `stream` that are a patch's part header or hunk header (_KEPT), without their line
    break, read in pieces of at most _PIECE bytes: any other line (one of a binary file can be megabytes long)
    is read past."""
    at_start = True
    while piece := stream.readline(_PIECE):
        starts, at_start = at_start, piece.endswith(b"\n")
        if not starts:
            continue
        # On while the line may yet start as a kept one, and to the end of one that does.
        while not at_start and (piece.startswith(_KEPT) or any(kept.startswith(piece) for kept in _KEPT)):
            more = stream.readline(_PIECE)
            if not more:
                break
            piece, at_start = piece + more, more.endswith(b"\n")
        if piece.startswith(_KEPT):
            yield piece.removesuffix(b"\n")


def export_tree(commit: Commit, target: Path, withheld: frozenset[str] = frozenset(),
                max_bytes: int | None = None, read: Mapping[str, bytes] | None = None,
                secrets: frozenset[str] = frozenset()) -> list[str]:
    """Write the regular files of `commit`'s tree under `target` (which must exist), except the paths in
    `withheld` and the files whose blob is one of `secrets` (a copy of a withheld file under another name).
    Symbolic links and submodules are not exported, so nothing in the export points outside it, nor the files
    beyond `max_bytes` in all, each counted as at least one 4 KiB block (a run's disk could not hold them, and a
    commit of a few kilobytes can hold gigabytes of zeros or a hundred thousand empty files); returns their
    paths. `read` holds the bytes of files of the commit already read (a range's changed files), which git is
    not asked for again."""
    skipped: list[str] = []
    root = target.resolve()
    room = max_bytes
    chosen: list[tuple[str, Path, _Entry]] = []
    for path, entry in _listing(commit).items():
        if path in withheld or entry.kind == "tree":
            continue
        # A submodule is a commit of another repository; a link could point anywhere.
        if not entry.regular:
            skipped.append(_printable(path))
            continue
        if entry.sha in secrets:
            skipped.append(f"{_printable(path)} (a copy of a file withheld from the runs)")
            continue
        if room is not None:
            # Each file takes a block of a run's disk however small it is, and costs a copy in every run: a
            # commit of 100000 empty files is as heavy as one of 400 MB.
            cost = max(entry.size, _BLOCK)
            if cost > room:
                skipped.append(f"{_printable(path)} (over the disk limit)")
                continue
            room -= cost
        dest = (root / path).resolve()
        if not dest.is_relative_to(root):  # a crafted tree entry such as `../x`
            skipped.append(_printable(path))
            continue
        chosen.append((path, dest, entry))
    known = read or {}
    with contextlib.closing(_contents(commit.repo, [entry.sha for path, _, entry in chosen
                                                    if path not in known])) as fetched:
        for path, dest, entry in chosen:
            data = known[path] if path in known else next(fetched)
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
            except OSError as exc:  # (a name git keeps that this file system cannot: no checkout would have it)
                if exc.errno != errno.ENAMETOOLONG:
                    raise
                skipped.append(f"{_printable(path)} (its name is too long for the file system)")
                continue
            dest.chmod(0o755 if entry.mode & 0o111 else 0o644)
    return skipped


def _worktree(repo: Repo) -> Path | None:
    return None if repo.bare or not repo.working_tree_dir else Path(repo.working_tree_dir)


def _commit(repo: Repo, ref: str, option: str) -> Commit:
    """The commit `ref` names, in all of git's revision syntax (`HEAD@{yesterday}`, `@{u}`, `v1.0^{}`)."""
    try:
        return repo.commit(ref)
    except GitError:
        raise BadInput(f"unknown revision {ref!r} in {repo.working_dir}", key=option) from None


def _default_base(repo: Repo, head: Commit) -> Commit:
    for branch in DEFAULT_BRANCHES:
        try:
            candidate = repo.commit(branch)
        except GitError:
            continue
        found = repo.merge_base(candidate, head)
        if found:
            return found[0]
    _refuse_shallow(repo, head.hexsha[:12], "a default branch")
    tried = ", ".join(DEFAULT_BRANCHES)
    raise BadInput(f"no default branch ({tried}) shares history with {head.hexsha[:12]}; "
                   "name the base with --base REF", key="--base")


def _merge_base(repo: Repo, base: Commit, head: Commit) -> Commit:
    """The commit the head forked from, whose diff to the head is what the change does. Without one the range
    has no meaning: scoring from the base's tip would charge the head for every change only the base made."""
    found = repo.merge_base(base, head)
    if found:
        return found[0]
    _refuse_shallow(repo, head.hexsha[:12], base.hexsha[:12])
    raise BadInput(f"the head {head.hexsha[:12]} and the base {base.hexsha[:12]} have unrelated histories (no "
                   "merge base): a change is scored as what the head adds since it forked from the base",
                   key="--base")


def _refuse_shallow(repo: Repo, head: str, base: str) -> None:
    """GateFailure when the clone is shallow: the merge base may be in the history it did not fetch."""
    if repo.run("rev-parse", "--is-shallow-repository") == "true":
        raise GateFailure(f"the clone is shallow and holds no merge base of {head} and {base}: fetch the "
                          "history: fetch-depth: 0 (actions/checkout), or `git fetch --unshallow`")


def _environment(version: Callable[[Commit], str], base: Commit, policy: Policy, progress: Progress
                 ) -> BuiltEnvironment | None:
    """The repository's environment the policy asks for, built from the base commit (never the head)."""
    spec = policy.repository_environment
    if spec == Environment():  # the default: what the base declares, nothing when it declares nothing
        from gate.environment.declarations import declared

        spec = declared(GitBase(base).read)
    if spec is None:
        return None
    from gate.environment import build as environment_build  # (importlib.metadata and more: only when built)

    paths = list(_files(base))
    # The export has no .git: a version from git (setuptools-scm, hatch-vcs, pbr) comes from the real history.
    environ = {**scm.told(version(base)), **os.environ}
    return environment_build.prepare(spec, GitBase(base).read, paths, lambda target: _export_all(base, target),
                                     run_interpreter(), cache_dir(os.environ), environ, progress)


def _layers(version: Callable[[Commit], str], base: Commit, head: Commit, environment: BuiltEnvironment | None,
            withheld: frozenset[str], secrets: frozenset[str], max_bytes: int, runs: Sequence[SuiteTrees],
            policy: Policy) -> tuple[BuildLayer, BuildLayer] | None:
    """Where the head's and the base's projects are built, when there is an environment and the head is a
    project a build installs (a flat tree of modules runs as it is), with this machine's compiler when either
    has extension sources. The build reads the export, which leaves out `withheld` (the hidden cases), the
    copies of them (`secrets`) and what is beyond `max_bytes`: a layer built from a tree exported under another
    policy (one that hid nothing) could hold what this one hides. Neither carries the code of the suites `runs`
    (gate/suite/trust.py)."""
    if environment is None or not buildable(GitBase(head, replacing=True).read):
        return None
    from gate.environment.project import layer_for, suite_code  # (zipfile and more: only for a build)

    export = {"withheld": sorted(withheld), "secrets": sorted(secrets), "bytes": max_bytes}
    native = any(_extension_sources(commit) for commit in (head, base))
    found = toolchain.find(run_interpreter(), os.environ.get("PATH", "")) if native else None
    head_layer, base_layer = (
        layer_for(cache_dir(os.environ), commit.tree_sha, environment.key, version(commit), export,
                  suite_code(runs, _import_roots(commit, policy, commit == head)),
                  _package_dirs(commit, commit == head), found)
        for commit in (head, base))
    return head_layer, base_layer


def _extension_sources(commit: Commit) -> list[str]:
    """The commit's files a compiler reads (C, C++, Cython: gate/sandbox/toolchain.py SOURCES)."""
    return [path for path in _files(commit) if path.lower().endswith(toolchain.SOURCES)]


def uncompiled(layers: tuple[BuildLayer, BuildLayer] | None, changes: Sequence[Change], unbuilt: bool = False
               ) -> list[str]:
    """Why a human must look: the change edits extension sources and no test runs the code they hold, for
    this machine has no compiler the sandbox's build can use, or (`unbuilt`) the policy builds no environment,
    so the project's build never runs (`environment: null`)."""
    edited = [path for change in changes for path in change.paths if path.lower().endswith(toolchain.SOURCES)]
    found = layers[0].toolchain if layers else None
    if not edited:
        return []
    if unbuilt:
        why, fix = "the policy builds no environment (`environment: null`), so the project is never built", (
            "or let the gate build it: remove `environment: null` from the policy")
    elif found is not None and found.missing:
        why, fix = f"no compiler can build it here ({found.missing})", (
            "or give the runner a C compiler and the interpreter's headers")
    else:
        return []
    return [f"the change edits {listing(edited, ', ', shown=3)}, which the project's build compiles, and {why}: "
            f"no test ran that code, so a human must review it ({fix})"]


def scm_version(repo: Repo, commit: Commit) -> str:
    """The version setuptools-scm and hatch-vcs would give `commit` from the real repository's history (an
    export has no .git): the nearest tag and the distance from it, in the schemes the commit's build
    configuration asks for (gate/environment/scm.py: `1.2.3`, `1.2.4.dev5+g1a2b3c4d5`, `0.1.dev5+g1a2b3c4d5`
    without a tag). Told to the build as each of them reads it (scm.told)."""
    from packaging.version import InvalidVersion, Version  # (only where a build reads it)

    chosen = scm.schemes(GitBase(commit, replacing=True).read)
    try:
        described = repo.run("describe", "--tags", "--long", "--match", "*[0-9]*", commit.hexsha)
    except GitError:
        return scm.formatted(Version("0.0"), int(repo.run("rev-list", "--count", commit.hexsha)), commit.hexsha,
                             chosen)
    tag, distance, _ = described.rsplit("-", 2)
    try:
        version = Version(re.sub(r"^[^0-9]*", "", tag))
    except InvalidVersion:
        version = Version("0.0")
    return scm.formatted(version, int(distance), commit.hexsha, chosen)


def _exporter(commit: Commit, target: Path, withheld: frozenset[str], max_bytes: int
              ) -> Callable[[], Path]:
    """A function that exports `commit`'s tree to `target` the first time it is called (as the head's is,
    `withheld` left out, within `max_bytes`), and returns it."""
    def export() -> Path:
        shutil.rmtree(target, ignore_errors=True)  # (what an export that failed half-way left)
        target.mkdir()
        export_tree(commit, target, withheld, max_bytes)
        return target
    return once(export)


def _export_all(commit: Commit, target: Path) -> None:
    export_tree(commit, target)


def refuse_unresolved(base: Commit, head: Commit, policy: Policy, hidden: Sequence[CaseSpec],
                      trees: TreeCache, files: Sequence[SourceFile]) -> None:
    """BadInput (exit 2) naming the first case whose `function:` or `module:` the base commit lacks, and the
    head too: the policy's mistake, which would otherwise charge every change (gate/cases/resolve.py); one the
    head adds runs, and failing on the base is not charged (gate/checks/smoke.py). A hidden case is named by
    its number only (the error is printed where the change's author reads it). The head is read first: the
    change's own `files` are read as the checks read them (bytes that are not UTF-8 are theirs to charge) and
    parsed as the checks parse them, into `trees`, which they then reuse, and the base only for a name the head
    lacks; what names a module binds is this interpreter's reading, as for the base (a file the policy's Python
    or `paths.max_file_kb` refuses is read here as well)."""
    from gate.cases.resolve import unresolved

    version = feature_version(policy.python)
    changed = {source.path: source for source in files if _raw(source.path)}

    def read_head(path: str) -> str | None:
        source = changed.get(path)
        return source.text if source is not None else GitBase(head, replacing=True).read(path)

    def parse(path: str, text: str) -> ast.Module:
        source = changed.get(path)
        if source is not None:
            with contextlib.suppress(SyntaxError, ValueError):  # (refused there: parsed as any other, below)
                return trees.parse(source, version, policy)
        return parse_python(text, filename=path)

    def both(cases: Sequence[CaseSpec], where: str = "cases") -> list[tuple[str, str]]:
        roots = ("", *_import_roots(head, policy, replacing=True))
        at_head = {key for key, _ in unresolved(cases, read_head, roots, where, changed=parse)}
        if not at_head:  # (the usual case: the base's modules are not read at all)
            return []
        # (bytes that are not UTF-8 read as U+FFFD, as the head's: a module in another encoding is still Python,
        # and whether it is read at all is the head's doing)
        at_base = unresolved(cases, GitBase(base, replacing=True).read, ("", *_import_roots(base, policy)), where)
        return [(key, why) for key, why in at_base if key in at_head]

    found = both(policy.cases)
    for index, scope in enumerate(policy.scopes):
        found += both(scope.cases or (), f"scopes[{index}].cases")
    where = (f"in the base commit {base.hexsha[:12]} nor the head {head.hexsha[:12]}: a case no tree can run is "
             "the policy's to fix")
    if found:
        key, why = found[0]
        raise BadInput(f"{why} {where}", file=policy.source.split("@")[0], line=policy.line(key), key=key)
    hidden_found = both(hidden)
    if hidden_found:
        number = int(hidden_found[0][0].split("[")[1].split("]")[0]) + 1
        raise BadInput(f"hidden case {number} names a function or module that is not {where}",
                       file=policy.hidden.path or policy.hidden.env)


def _import_roots(commit: Commit, policy: Policy, replacing: bool = False) -> tuple[str, ...]:
    """A tree's own import roots, first on the path: `src` when it has a src/ layout, the folders its build's
    `package_dir` maps its packages into, then `environment.python_path`. `replacing` for the head, whose
    build files are the bot's (GitBase)."""
    spec = policy.repository_environment
    if spec is None:
        return ()
    mapped = tuple(root for root in packages.import_roots(_package_dirs(commit, replacing))
                   if GitBase(commit).is_folder(root))
    return spec.import_roots(GitBase(commit).is_folder("src"), mapped)


@functools.lru_cache(maxsize=8)
def _package_dirs(commit: Commit, replacing: bool = False) -> Mapping[str, str]:
    """The `package_dir` mapping the commit's build declares (packages.package_dirs), read once a commit: a
    verdict asks of each commit several times. `replacing` for the head's (GitBase)."""
    return types.MappingProxyType(packages.package_dirs(GitBase(commit, replacing).read))


def _suite_base(base: Commit, policy: Policy, withheld: frozenset[str]) -> SuiteBase:
    """The base commit as the suite's selection reads it; its export leaves out `withheld`, as the head's does."""
    def files() -> Iterator[tuple[str, Callable[[], bytes] | None, bool]]:
        for path, entry in _listing(base).items():
            if entry.kind == "blob":
                yield path, _reader(base.repo, entry.sha) if entry.regular else None, bool(entry.mode & 0o111)

    return SuiteBase(base.hexsha, files, GitBase(base).has, lambda target: export_tree(base, target, withheld),
                     _import_roots(base, policy))


def _reader(repo: Repo, sha: str) -> Callable[[], bytes]:
    return lambda: repo.blob(sha)


def _printable(path: str) -> str:
    """`path` as reports can print it: a name that is not UTF-8 (git allows any bytes) arrives with its bad
    bytes as lone surrogates, which would crash every writer; they become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _raw(path: str) -> bool:
    """Whether a changed file's `path` is its name in the tree: `_printable` changed none without U+FFFD, and
    one with it may be another file's name made printable."""
    return "\ufffd" not in path


def _facts(repo: Repo, base: Commit, head: Commit, fork: Commit,
           repo_url: str | None) -> list[tuple[str, str]]:
    facts = []
    url = repo_url or _origin_url(repo)
    if url:
        facts.append(("repo", url))
    facts += [("base", base.hexsha), ("head", head.hexsha)]
    if fork != base:
        facts.append(("merge base", fork.hexsha))
    return facts


def _origin_url(repo: Repo) -> str | None:
    """`https://HOST/OWNER/REPO` from the `origin` remote (HTTPS or SSH form), without any credentials."""
    remote = repo.config("remote.origin.url")
    if remote is None:
        return None
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):/?([\w.-]+/[\w.-]+?)(?:\.git)?/?", remote)
    if scp:
        return f"https://{scp.group(1)}/{scp.group(2)}"
    parts = urlsplit(remote)
    path = PurePosixPath(parts.path.removesuffix("/").removesuffix(".git"))
    if parts.scheme not in ("https", "http", "ssh", "git") or not parts.hostname or len(path.parts) != 3:
        return None
    return f"https://{parts.hostname}{path}"
