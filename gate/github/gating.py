"""Whether a PR is gated, from the API: its labels (checked for who applied them) and its commits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import github
import msgspec
from msgspec.structs import replace

from gate.bots.decide import Author, CommitFacts, Decision, Person, decide
from gate.github.authority import LabelCheck, check_labels
from gate.policy.model import Bots
from gate.sources.pullrequest import PullRequest
from gate.verdict import Note, Verdict

if TYPE_CHECKING:
    from github.GitAuthor import GitAuthor
    from github.NamedUser import NamedUser
    from github.Repository import Repository


class Gating(msgspec.Struct, frozen=True):
    decision: Decision
    labels: LabelCheck


def gate_decision(client: github.Github, pr: PullRequest, bots: Bots) -> Gating:
    """The decision for `pr` under `bots`, with the labels a maintainer applied and those ignored."""
    repo = client.get_repo(pr.repo)
    labels = check_labels(repo, pr.number, pr.labels, pr.author, bots)
    commits = pull_commits(repo, pr.number)
    return Gating(decide(Author(pr.author, pr.author_type, pr.head_ref), labels.counted, bots, commits), labels)


def pull_commits(repo: Repository, number: int) -> tuple[CommitFacts, ...]:
    """The PR's commits (`GET /repos/{o}/{r}/pulls/{n}/commits`): git identities, linked accounts, messages."""
    found = []
    for item in repo.get_pull(number).get_commits():
        git_commit = item.commit
        found.append(CommitFacts(item.sha, git_commit.message or "",
                                 _person(git_commit.author, item.author),
                                 _person(git_commit.committer, item.committer)))
    return tuple(found)


def _person(git_actor: GitAuthor, account: NamedUser | None) -> Person:
    return Person(str(git_actor.name or ""), str(git_actor.email or ""), account.login if account else None)


def with_gating_notes(verdict: Verdict, gating: Gating) -> Verdict:
    """The verdict with what made the PR gated, and the labels ignored, as notes for the comment."""
    notes = (Note("gate", f"gated: {gating.decision.reason}"), *(Note("gate", n) for n in gating.labels.ignored))
    return replace(verdict, notes=(*verdict.notes, *notes))
