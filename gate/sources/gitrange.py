"""A git range (`base..head`) as something to score: `gate check`, and the PR gate for the same commits.

Trust comes from the base (design.md, invariant 1): the policy, the hidden cases and the report's template
overrides are read from the base commit's tree, never from the worktree or the head. A range that changes
the policy or the hidden cases is blocked for a human whatever its score. The code under test is a clean
export of the head commit's tree into a temporary directory: never the live worktree, never its `.git`.

`subject_from_commits` is the one function both inputs use, so that `gate check --base B --head H` and the
PR gate for the same commits give the same verdict. Git is reached through GitPython only here, at the edge.
"""

from __future__ import annotations

import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import git

from gate.cases.hidden import load_hidden
from gate.errors import BadInput, GateFailure, decode_input
from gate.policy.loader import load_policy
from gate.policy.model import Policy
from gate.report.templating import OVERRIDE_DIR, Overrides
from gate.subject import SourceFile, Subject

DEFAULT_POLICY_PATH = ".github/gate.yml"
# Branches tried, in order, when `--base` is not given; the base is their merge base with the head.
DEFAULT_BRANCHES = ("main", "master", "origin/HEAD")
_REGULAR_MODES = {"100644", "100755"}
_LISTED = 10  # paths named in a fact before "and N more"
_BLOCK = 4096  # what the smallest file costs of a run's disk
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
# Flags that keep `git diff` output independent of the user's configuration and the repository's attributes.
_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv")


@dataclass(frozen=True)
class GitRange:
    """What a range gives the engine and the reporters."""

    subject: Subject
    policy: Policy
    overrides: Overrides  # report templates from the base commit
    reproduce: str  # the command that reproduces the verdict locally
    # The repository's working tree and git directories: the code under score must not see them (they hold
    # the hidden cases, and maybe a token in .git/config).
    private: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Change:
    status: str  # git's letter: A, M, R, D, T, C
    old_path: str | None
    new_path: str | None
    old_blob: str
    new_blob: str
    new_mode: str


@contextmanager
def subject_from_commits(repo: git.Repo, base_sha: str, head_sha: str, *, policy_path: str | None = None,
                         repo_url: str | None = None) -> Iterator[GitRange]:
    """Build what is scored for the commits `base_sha..head_sha` of `repo`.

    The changes are those of the head since its merge base with the base (what a PR shows); the policy and
    hidden cases come from `base_sha`. `repo_url` (`https://github.com/OWNER/REPO`) makes report locations
    links; by default it comes from the `origin` remote. The head's tree is exported only when there are cases
    to run against it, and removed when the context exits.
    """
    policy_path = _tree_path(policy_path) if policy_path else None
    base = _commit(repo, base_sha, "--base")
    head = _commit(repo, head_sha, "--head")
    fork = _merge_base(repo, base, head)
    policy = _policy_at(base, policy_path)
    changes = _changes(repo, fork, head)
    governed = {policy_path or DEFAULT_POLICY_PATH: "the policy file"}
    if policy.hidden.path:
        governed[policy.hidden.path] = "the hidden cases file"
    if policy.judge.rubric_file:
        governed[policy.judge.rubric_file] = "the judge's rubric file"
    governed[OVERRIDE_DIR.rstrip("/") + "/"] = "the report templates"
    # Every file the range adds, modifies or renames; the extract check keeps those that `paths` gates, and
    # says so when none is.
    files = tuple(
        _source_file(repo, change) for change in changes
        if change.status != "D" and change.new_path and change.new_mode in _REGULAR_MODES
    )
    facts = _facts(repo, base, head, fork, repo_url)
    hidden = load_hidden(policy, lambda path: _read(base, path), _worktree(repo))
    tree = Path(tempfile.mkdtemp(prefix="gate-head-")) if policy.cases or hidden else None
    try:
        # The hidden cases stay out of the export: the candidate's code runs in it.
        withheld = frozenset({policy.hidden.path} if policy.hidden.path else ())
        skipped = export_tree(head.tree, tree, withheld, policy.limits.disk_mb * 1024 * 1024) if tree else []
        if skipped:
            more = f" and {len(skipped) - _LISTED} more" if len(skipped) > _LISTED else ""
            facts.append(("not exported", ", ".join(skipped[:_LISTED]) + more))
        subject = Subject(
            kind="range",
            label=f"{base.hexsha[:12]}..{head.hexsha[:12]}",
            files=files,
            hidden_cases=hidden,
            tree=tree,
            blocked_reasons=_blocked_reasons(changes, governed),
            facts=tuple(facts),
            judge_rubric=_read(base, policy.judge.rubric_file) if policy.judge.rubric_file else None,
        )
        private = tuple(str(p) for p in (_worktree(repo), repo.git_dir, repo.common_dir) if p)
        yield GitRange(subject, policy, _overrides(base), _reproduce(base.hexsha, head.hexsha, policy_path),
                       private)
    finally:
        if tree:
            shutil.rmtree(tree, ignore_errors=True)


@contextmanager
def subject_from_range(repo_dir: str | Path, base: str | None = None, head: str = "HEAD", *,
                       policy_path: str | None = None) -> Iterator[GitRange]:
    """`gate check`: resolve the refs (the base defaults to the merge base with the default branch), score the
    commits, and record a dirty worktree as a fact (its uncommitted changes are not scored)."""
    try:
        git.Git().version()
    except git.GitCommandNotFound:
        raise GateFailure("git is not installed (or not on PATH); gate check reads the range with it") from None
    try:
        repo = git.Repo(repo_dir, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise BadInput("not a git repository", file=str(repo_dir), key="--repo") from exc
    head_commit = _commit(repo, head, "--head")
    base_commit = _commit(repo, base, "--base") if base else _default_base(repo, head_commit)
    if _merge_base(repo, base_commit, head_commit) == head_commit:
        raise BadInput(f"nothing to check: {head} ({head_commit.hexsha[:12]}) has no commits that the base "
                       f"{base_commit.hexsha[:12]} lacks; check out the bot's branch or name --base and "
                       "--head", key="--head")
    with subject_from_commits(repo, base_commit.hexsha, head_commit.hexsha, policy_path=policy_path) as found:
        if not repo.bare and repo.is_dirty(untracked_files=True):
            note = ("worktree", f"has uncommitted changes, which are not scored (the range ends at commit "
                                f"{head_commit.hexsha[:12]})")
            found = replace(found, subject=replace(found.subject, facts=(*found.subject.facts, note)))
        yield found


def export_tree(tree: git.Tree, target: Path, withheld: frozenset[str] = frozenset(),
                max_bytes: int | None = None) -> list[str]:
    """Write the regular files of `tree` under `target` (which must exist), except the paths in `withheld`.
    Symbolic links and submodules are not exported, so nothing in the export points outside it, nor the files
    beyond `max_bytes` in all, each counted as at least one 4 KiB block (a run's disk could not hold them, and
    a commit of a few kilobytes can hold gigabytes of zeros or a hundred thousand empty files); returns their
    paths."""
    skipped: list[str] = []
    root = target.resolve()
    room = max_bytes
    for item in _walk(tree):
        path = str(item.path)
        if path in withheld:
            continue
        # A submodule is a commit of another repository; a link could point anywhere.
        if not isinstance(item, git.Blob) or stat.S_ISLNK(item.mode):
            skipped.append(_printable(path))
            continue
        if room is not None:
            # Each file takes a block of a run's disk however small it is, and costs a copy in every run: a
            # commit of 100000 empty files is as heavy as one of 400 MB.
            cost = max(item.size, _BLOCK)
            if cost > room:
                skipped.append(f"{_printable(path)} (over the disk limit)")
                continue
            room -= cost
        dest = (root / path).resolve()
        if not dest.is_relative_to(root):  # a crafted tree entry such as `../x`
            skipped.append(_printable(path))
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(item.data_stream.read())
        dest.chmod(0o755 if item.mode & 0o111 else 0o644)
    return skipped


def _worktree(repo: git.Repo) -> Path | None:
    return None if repo.bare or not repo.working_tree_dir else Path(repo.working_tree_dir)


def _tree_path(path: str) -> str:
    """`path` as git names it in a tree (`./a//b.yml` is `a/b.yml`); it must stay inside the repository."""
    clean = PurePosixPath(path)
    if clean.is_absolute() or ".." in clean.parts:
        raise BadInput(f"expected a path inside the repository, got {path!r}", key="--policy")
    return clean.as_posix()


def _walk(tree: git.Tree) -> Iterator[git.Blob | git.Submodule]:
    for item in tree:
        if isinstance(item, git.Tree):
            yield from _walk(item)
        else:
            yield item


def _commit(repo: git.Repo, ref: str, option: str) -> git.Commit:
    """The commit `ref` names, in all of git's revision syntax (`HEAD@{yesterday}`, `@{u}`, `v1.0^{}`), which
    GitPython's own parser only partly knows; so git itself resolves it."""
    try:
        sha = repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except git.GitCommandError:
        raise BadInput(f"unknown revision {ref!r} in {repo.working_dir}", key=option) from None
    return repo.commit(sha)


def _default_base(repo: git.Repo, head: git.Commit) -> git.Commit:
    for branch in DEFAULT_BRANCHES:
        try:
            candidate = repo.commit(branch)
        except (git.BadName, ValueError):
            continue
        found = repo.merge_base(candidate, head)
        if found:
            return found[0]
    tried = ", ".join(DEFAULT_BRANCHES)
    raise BadInput(f"no default branch ({tried}) shares history with {head.hexsha[:12]}; "
                   "name the base with --base REF", key="--base")


def _merge_base(repo: git.Repo, base: git.Commit, head: git.Commit) -> git.Commit:
    found = repo.merge_base(base, head)
    return found[0] if found else base


def _read(commit: git.Commit, path: str) -> str | None:
    """The text of `path` in `commit`, or None when it is not a regular file there."""
    try:
        item = commit.tree / path
    except KeyError:
        return None
    if not isinstance(item, git.Blob) or stat.S_ISLNK(item.mode):
        return None
    data: bytes = item.data_stream.read()
    return decode_input(data, f"{path}@{commit.hexsha[:12]}")


def _policy_at(base: git.Commit, policy_path: str | None) -> Policy:
    path = policy_path or DEFAULT_POLICY_PATH
    text = _read(base, path)
    if text is None:
        if policy_path:
            raise BadInput(f"no policy file at {path} in the base commit {base.hexsha[:12]}", key="--policy")
        policy = load_policy(None)
        return replace(policy, source=f"{policy.source} (no {path} in the base commit {base.hexsha[:12]})")
    return load_policy(Path(path), text=text, source=f"{path}@{base.hexsha[:12]}")




def _overrides(base: git.Commit) -> Overrides:
    try:
        folder = base.tree / OVERRIDE_DIR
    except KeyError:
        return Overrides(origin=f"{OVERRIDE_DIR}@{base.hexsha[:12]}")
    sources = {}
    for item in folder.blobs if isinstance(folder, git.Tree) else []:
        text = _read(base, str(item.path))
        if text is not None:
            sources[item.name] = text
    return Overrides(sources=sources, origin=f"{OVERRIDE_DIR}@{base.hexsha[:12]}")


def _changes(repo: git.Repo, fork: git.Commit, head: git.Commit) -> list[_Change]:
    """The files that differ between `fork` and `head`, renames detected, from NUL-separated raw output (file
    names may hold any character)."""
    raw = repo.git.diff("--raw", "-z", "-M", "--no-abbrev", *_DIFF_FLAGS, fork.hexsha, head.hexsha)
    fields = raw.split("\0")
    changes: list[_Change] = []
    i = 0
    while i < len(fields) and fields[i].startswith(":"):
        _, new_mode, old_blob, new_blob, status = fields[i][1:].split(" ")
        letter = status[0]
        if letter in "RC":
            old_path, new_path, i = fields[i + 1], fields[i + 2], i + 3
        else:
            old_path = new_path = fields[i + 1]
            i += 2
        old_path, new_path = _printable(old_path), _printable(new_path)
        changes.append(_Change(letter, None if letter == "A" else old_path,
                               None if letter == "D" else new_path, old_blob, new_blob, new_mode))
    return changes


def _printable(path: str) -> str:
    """`path` as reports can print it: a name that is not UTF-8 (git allows any bytes) arrives with its bad
    bytes as lone surrogates, which would crash every writer; they become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _source_file(repo: git.Repo, change: _Change) -> SourceFile:
    assert change.new_path is not None  # deleted files are not scored
    data: bytes = repo.odb.stream(bytes.fromhex(change.new_blob)).read()
    if change.status == "A" or change.old_path is None:
        return SourceFile.from_bytes(change.new_path, data)
    patch = repo.git.diff("--unified=0", *_DIFF_FLAGS, change.old_blob, change.new_blob)
    added = frozenset(
        line for start, count in _HUNK.findall(patch)
        for line in range(int(start), int(start) + (int(count) if count else 1))
    )
    if change.status in "RC" and change.old_path != change.new_path:
        return SourceFile.from_bytes(change.new_path, data, added, "renamed", change.old_path)
    return SourceFile.from_bytes(change.new_path, data, added, "modified")


def _blocked_reasons(changes: list[_Change], governed: dict[str, str]) -> tuple[str, ...]:
    """Why a human must look: the change touches a file (or, for a path ending in `/`, a folder) that the gate
    reads from the base commit."""
    reasons = []
    for path, what in governed.items():
        touching = [c for c in changes if any(_governs(path, p) for p in (c.old_path, c.new_path) if p)]
        if touching:
            verb = {"A": "adds", "D": "deletes", "R": "renames"}.get(touching[0].status, "edits")
            reasons.append(f"the change {verb} {what} {path}, which is read from the base commit; "
                           "a human must review it")
    return tuple(reasons)


def _governs(governed: str, path: str) -> bool:
    return path.startswith(governed) if governed.endswith("/") else path == governed


def _facts(repo: git.Repo, base: git.Commit, head: git.Commit, fork: git.Commit,
           repo_url: str | None) -> list[tuple[str, str]]:
    facts = []
    url = repo_url or _origin_url(repo)
    if url:
        facts.append(("repo", url))
    facts += [("base", base.hexsha), ("head", head.hexsha)]
    if fork != base:
        facts.append(("merge base", fork.hexsha))
    return facts


def _origin_url(repo: git.Repo) -> str | None:
    """`https://HOST/OWNER/REPO` from the `origin` remote (HTTPS or SSH form), without any credentials."""
    try:
        remote = repo.remote("origin").url
    except ValueError:
        return None
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):/?([\w.-]+/[\w.-]+?)(?:\.git)?/?", remote)
    if scp:
        return f"https://{scp.group(1)}/{scp.group(2)}"
    parts = urlsplit(remote)
    path = PurePosixPath(parts.path.removesuffix("/").removesuffix(".git"))
    if parts.scheme not in ("https", "http", "ssh", "git") or not parts.hostname or len(path.parts) != 3:
        return None
    return f"https://{parts.hostname}{path}"


def _reproduce(base_sha: str, head_sha: str, policy_path: str | None) -> str:
    command = f"gate check --base {base_sha} --head {head_sha}"
    return command + (f" --policy {policy_path}" if policy_path else "")
