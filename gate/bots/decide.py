"""Whether a pull request is gated, and what matched, in words for the status line and the comment.

The decision reads the PR's author (login and account type), its head branch and its commits' authors,
committers and trailers (from the API), against the agents `bots.agents` names (gate/bots/agents.yml) and the
policy's own `bots:`. Labels come in already checked: only those a maintainer applied (gate.github.authority).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from gate.bots.catalog import Agent, catalog, parse_trailer
from gate.bots.patterns import branch_matches, login_matches

if TYPE_CHECKING:  # the policy's `bots:` is read here, never built: its model validates with this package
    from gate.policy.model import Bots


class Person(msgspec.Struct, frozen=True):
    """A commit's git author or committer, and the GitHub account GitHub linked it to (None when none)."""

    name: str
    email: str
    login: str | None = None


class CommitFacts(msgspec.Struct, frozen=True):
    sha: str
    message: str
    author: Person
    committer: Person


class Author(msgspec.Struct, frozen=True):
    """Who opened the PR, and from which branch."""

    login: str
    type: str  # "User", "Bot", "Organization"
    branch: str


class Decision(msgspec.Struct, frozen=True):
    gated: bool
    reason: str
    # A maintainer's opt-out label on a PR that would be gated: reported `neutral`, never `success`.
    opted_out: bool = False


def decide(author: Author, labels: tuple[str, ...], bots: Bots, commits: tuple[CommitFacts, ...] = ()) -> Decision:
    """The decision for a PR; `labels` are those a maintainer applied (the caller checked who)."""
    who = next(_matches(author, bots, commits), None)
    if opt_out := _first(labels, bots.labels.opt_out):
        if who is not None:
            return Decision(False, f"label {opt_out!r} opts this PR out (it would be gated: {who})", opted_out=True)
        return Decision(False, f"label {opt_out!r} opts this PR out")
    if who is not None:
        return Decision(True, who)
    if opt_in := _first(labels, bots.labels.opt_in):
        return Decision(True, f"label {opt_in!r} opts this PR in")
    if _is_dependency_bot(author.login, bots):
        return Decision(False, f"{author.login} is a dependency bot, not gated unless the policy sets "
                               "`bots.dependency_bots: true`")
    return Decision(False, f"{author.login} ({author.type}) is not a bot or a coding agent under the policy's "
                           "`bots:`, and no commit or branch carries an agent's mark")


def _matches(author: Author, bots: Bots, commits: tuple[CommitFacts, ...]) -> Iterator[str]:
    """Every reason to gate the PR, most telling first."""
    agents = [catalog().agent(agent_id) for agent_id in bots.agents]
    login = author.login
    for agent in agents:
        if any(login_matches(login, p) for p in agent.logins):
            yield f"author {login} ({author.type}) is the account of {agent.name}"
    for agent in agents:
        for glob in agent.branches:
            if branch_matches(author.branch, glob):
                yield f"branch {author.branch} matches {glob} ({agent.name})"
    for commit in commits:
        yield from _commit_marks(commit, agents, bots)
    exempt = _is_dependency_bot(login, bots)
    if not exempt and author.type in bots.account_types:
        yield f"author {login} is a {author.type} account (bots.account_types)"
    if any(login.casefold() == name.casefold() for name in bots.logins):
        yield f"author {login} is listed in bots.logins"
    for pattern in bots.patterns:
        if not exempt and login_matches(login, pattern):
            yield f"author {login} matches bots.patterns {pattern}"
    for glob in bots.branches:
        if branch_matches(author.branch, glob):
            yield f"branch {author.branch} matches bots.branches {glob}"


def _commit_marks(commit: CommitFacts, agents: list[Agent], bots: Bots) -> Iterator[str]:
    short = commit.sha[:7]
    trailers = [t for t in (parse_trailer(line) for line in _trailer_block(commit.message)) if t]
    for agent in agents:
        for wanted in agent.trailers:
            for found in trailers:
                if found.key.casefold() == wanted.key.casefold() and found.email.casefold() == wanted.email.casefold():
                    yield f"commit {short} has the trailer {found.text} ({agent.name})"
        for role, person in (("authored", commit.author), ("committed", commit.committer)):
            if person.login and any(login_matches(person.login, p) for p in agent.logins):
                yield f"commit {short} is {role} by {person.login} ({agent.name})"
            elif person.email.casefold() in (email.casefold() for email in agent.identities):
                yield f"commit {short} is {role} by {person.name} <{person.email}> ({agent.name})"
    for role, person in (("authored", commit.author), ("committed", commit.committer)):
        if person.login and any(person.login.casefold() == name.casefold() for name in bots.logins):
            yield f"commit {short} is {role} by {person.login}, listed in bots.logins"


def _trailer_block(message: str) -> list[str]:
    """The lines of the message's last paragraph, where git puts trailers (`git interpret-trailers`)."""
    paragraphs = [p for p in message.strip().replace("\r\n", "\n").split("\n\n") if p.strip()]
    return paragraphs[-1].splitlines() if len(paragraphs) > 1 else []


def _is_dependency_bot(login: str, bots: Bots) -> bool:
    """A dependency bot's PR is gated only when the policy says so, or names its login in bots.logins."""
    if bots.dependency_bots or any(login.casefold() == name.casefold() for name in bots.logins):
        return False
    return any(login.casefold() == bot.casefold() for bot in catalog().dependency_bots)


def _first(labels: tuple[str, ...], wanted: tuple[str, ...]) -> str:
    return next((label for label in labels if label in wanted), "")
