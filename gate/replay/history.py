"""A branch's history as the changes that merged into it, for `gate replay`.

Each first-parent commit of the branch is one change: a commit is scored as `parent..commit` (a squash or a
direct push), a merge commit as its first parent against its second (the pull request as it merged: the base
it merged into, the branch's commits since their merge base). Which changes a later one reverted comes from
what git and GitHub write (`reverts`), and who wrote each one from what git keeps of it, for the bots
decision of the policy (gate/bots/).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from gate.bots.catalog import catalog
from gate.bots.decide import Author, CommitFacts, Decision, Person, decide
from gate.errors import BadInput
from gate.policy.model import Bots
from gate.sources.gitcli import Commit, GitError, Repo

# `git revert` writes "This reverts commit <full sha>." (", reversing changes made to <parent>." for a merge).
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,40})\b")
# GitHub's Revert button opens its pull request from a branch `revert-<number>-<branch>` of the reverted PR,
# whose commit says `Revert "<title>"` (and no `This reverts commit`).
_REVERT_BRANCH = re.compile(r"^revert-(\d+)-")
_REVERT_TITLE = re.compile(r'^Revert "(.+)"(?: \(#\d+\))?$')
# Where a merge commit's message names the branch it merged: GitHub's pull request merge, `git merge`.
_PULL_MERGE = re.compile(r"^Merge pull request #(\d+) from [^/\s]+/(\S+)")
_BRANCH_MERGE = re.compile(r"^Merge (?:remote-tracking )?branch '(?:origin/)?([^']+)'")
# A squashed pull request's subject ends with its number: `Fix the parser (#12)`.
_SQUASHED = re.compile(r"^(.*) \(#(\d+)\)$")
# A GitHub noreply address names the account: `123+login@users.noreply.github.com` or `login@users...`.
_NOREPLY = re.compile(r"^(?:\d+\+)?([^@+]+)@users\.noreply\.github\.com$", re.IGNORECASE)


class HistoryChange(msgspec.Struct, frozen=True):
    """One change of the branch: the first-parent commit that brought it, and the range it is scored as."""

    commit: str  # the first-parent commit of the branch
    base: str  # what it is scored against: the commit's (first) parent
    head: str  # the commit itself, or a merge's second parent
    merge: bool
    subject: str
    author: str  # the git author's name (of the branch's newest commit, for a merge)
    commits: tuple[CommitFacts, ...]  # the commits the change brings, oldest first
    branch: str  # the merged branch a merge's message names, else ""
    number: int | None = None  # the pull request's number, when the message says it
    title: str = ""  # the pull request's title (a GitHub merge's second paragraph), else the subject


def changes_of(repo: Repo, branch: str, last: int) -> tuple[HistoryChange, ...]:
    """The last `last` changes of `branch` in `repo`, newest first (a root commit, which has no base, is not
    one)."""
    try:
        tip = repo.commit(branch)
    except GitError:
        raise BadInput(f"no such branch or commit in {repo.working_dir}", key=branch) from None
    found = []
    for commit in _log(repo, tip.hexsha, "--first-parent", f"--max-count={last}"):
        if not commit.parents:
            break
        found.append(_change(repo, commit))
    return tuple(found)


class _Logged(msgspec.Struct, frozen=True):
    """One commit as `git log` gave it."""

    parents: tuple[str, ...]
    facts: CommitFacts


# What `_log` has git print of each commit: its SHA, its parents, its author's and committer's names and e-mail
# addresses, its message; each followed by a NUL, which git prints none of (a message only up to one).
_FIELDS = ("%H", "%P", "%an", "%ae", "%cn", "%ce", "%B")


def _log(repo: Repo, *args: str) -> list[_Logged]:
    """The commits `git log ARGS` lists, newest first: in UTF-8, and without the signatures' checks that the
    user's `log.showSignature` would print before each signed commit's fields."""
    out = repo.run_bytes("log", "-z", "--no-show-signature", "--encoding=UTF-8", f"--format={'%x00'.join(_FIELDS)}",
                         *args, "--")
    fields = [_text(field) for field in out.split(b"\0")] if out else []
    return [_logged(fields[at:at + len(_FIELDS)]) for at in range(0, len(fields) - len(_FIELDS) + 1, len(_FIELDS))]


def _logged(fields: list[str]) -> _Logged:
    sha, parents, author, author_email, committer, committer_email, message = fields
    return _Logged(tuple(parents.split()), CommitFacts(sha, message, _person(author, author_email),
                                                      _person(committer, committer_email)))


def _change(repo: Repo, commit: _Logged) -> HistoryChange:
    sha, message = commit.facts.sha, commit.facts.message
    subject = message.partition("\n")[0].strip()
    if len(commit.parents) > 1:
        base, head = commit.parents[0], commit.parents[1]
        forks = repo.merge_base(Commit(repo, base), Commit(repo, head))
        brought = _log(repo, f"--max-count={_BROUGHT}", f"{forks[0].hexsha}..{head}" if forks else head)
        # (The branch's tip comes first. A branch merged once more with nothing new, its tip already in the
        # base, brings that tip.)
        newest = brought[0] if brought else _log(repo, "--max-count=1", head)[0]
        pull, merged = _PULL_MERGE.match(subject), _BRANCH_MERGE.match(subject)
        body = message.partition("\n\n")[2].strip().partition("\n")[0]
        return HistoryChange(sha, base, head, True, subject, newest.facts.author.name,
                             tuple(c.facts for c in reversed(brought or [newest])),
                             pull.group(2) if pull else merged.group(1) if merged else "",
                             int(pull.group(1)) if pull else None, body if pull and body else subject)
    squashed = _SQUASHED.match(subject)
    return HistoryChange(sha, commit.parents[0], sha, False, subject, commit.facts.author.name, (commit.facts,), "",
                         int(squashed.group(2)) if squashed else None, squashed.group(1) if squashed else subject)


# The most commits of a merged branch read for its marks and reverts (a merge of a long-lived branch).
_BROUGHT = 1000


def reverts(changes: Sequence[HistoryChange]) -> dict[str, str]:
    """Which change a newer one reverted: the reverted change's commit -> the commit of the change that
    reverted it (its first revert). A revert is known by git's `This reverts commit X.` (X: the change's own
    commit or any commit it brought), by GitHub's revert branch `revert-N-...` (pull request N), or by a
    subject `Revert "TITLE"` (the newest older change of that title or subject)."""
    owner = {facts.sha: change.commit for change in changes for facts in change.commits}
    owner.update({change.commit: change.commit for change in changes})
    found: dict[str, str] = {}
    oldest_first = list(reversed(changes))
    for at, change in enumerate(oldest_first):
        earlier = oldest_first[:at]
        named = [_resolve(sha, owner) for facts in change.commits for sha in _REVERTS.findall(facts.message)]
        branch = _REVERT_BRANCH.match(change.branch)
        if branch:
            named.append(next((c.commit for c in reversed(earlier) if c.number == int(branch.group(1))), None))
        title = _REVERT_TITLE.match(change.title) or _REVERT_TITLE.match(change.subject)
        if title and not any(named):
            named.append(next((c.commit for c in reversed(earlier) if title.group(1) in (c.title, c.subject)),
                              None))
        for reverted in dict.fromkeys(named):
            if reverted and reverted != change.commit:
                found.setdefault(reverted, change.commit)
    return found


def _resolve(named: str, owner: dict[str, str]) -> str | None:
    """The change that holds the commit a revert names by its full or abbreviated SHA."""
    if named in owner:
        return owner[named]
    matching = {change for sha, change in owner.items() if sha.startswith(named)}
    return matching.pop() if len(matching) == 1 else None


def gated(change: HistoryChange, bots: Bots) -> Decision:
    """The policy's bots decision for a change, from what git keeps of it: the commits' authors, committers
    (a GitHub noreply address names the account) and trailers, and for a merge the branch its message names.
    The pull request's author is taken to be the newest commit's author; labels are not in git."""
    newest = change.commits[-1].author
    login = newest.login or newest.name
    # Git does not keep the account's type: an app's account ends in [bot], and the agents' own accounts
    # (Copilot) are bots on GitHub.
    agents = {name.casefold() for agent in catalog().agents for name in agent.logins}
    kind = "Bot" if login.casefold().endswith("[bot]") or login.casefold() in agents else "User"
    return decide(Author(login, kind, change.branch), (), bots, change.commits)


def _person(name: str, email: str) -> Person:
    account = _NOREPLY.match(email)
    return Person(name, email, account.group(1) if account else None)


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")
