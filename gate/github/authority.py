"""Who may change how a PR is gated: a human with write access who is not the PR's author.

Labels and overrides are checked through the API, never taken from the event: who applied a label comes from the
issue's `labeled` events, who wrote a comment from the comment itself, and their access from
`GET /repos/{o}/{r}/collaborators/{u}/permission` (docs/github.md, "Who is gated").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from github.GithubException import UnknownObjectException

from gate.policy.model import Bots

if TYPE_CHECKING:
    from github.NamedUser import NamedUser
    from github.Organization import Organization
    from github.Repository import Repository

WRITE_ACCESS = ("admin", "maintain", "write")


class Actor(msgspec.Struct, frozen=True):
    login: str
    type: str  # "User", "Bot", ...

    @classmethod
    def of(cls, user: NamedUser | Organization | None) -> Actor:
        """From a PyGithub NamedUser or Organization (None, for a deleted account, is nobody)."""
        if user is None:
            return cls("ghost", "Mannequin")
        return cls(str(user.login), str(user.type))


def refusal(repo: Repository, actor: Actor, pr_author: str) -> str:
    """Why `actor` may not change how this PR is gated, or "" when they may."""
    if actor.type == "Bot" or actor.login.casefold().endswith("[bot]"):
        return f"{actor.login} is a bot"
    if actor.type != "User":
        return f"{actor.login} is a {actor.type} account, not a person"
    if actor.login.casefold() == pr_author.casefold():
        return f"{actor.login} is the PR's author"
    try:
        permission = str(repo.get_collaborator_permission(actor.login))
    except UnknownObjectException:
        permission = "none"
    if permission not in WRITE_ACCESS:
        return f"{actor.login} has {permission} access, not write"
    return ""


class LabelCheck(msgspec.Struct, frozen=True):
    """The PR's gating labels that count (a maintainer applied them) and what was ignored."""

    counted: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # one sentence each, for the comment


def check_labels(repo: Repository, number: int, labels: tuple[str, ...], pr_author: str, bots: Bots) -> LabelCheck:
    """Keep the opt-in and opt-out labels that the last `labeled` event shows a maintainer applied (override
    labels are gate.github.override's: they count for one head)."""
    gating = (*bots.labels.opt_in, *bots.labels.opt_out)
    present = [label for label in labels if label in gating]
    if not present:
        return LabelCheck()
    last: dict[str, Actor] = {}
    for event in repo.get_issue(number).get_events():
        if event.event == "labeled" and event.label is not None and event.label.name in present:
            last[event.label.name] = Actor.of(event.actor)
    counted, ignored = [], []
    for label in present:
        actor = last.get(label)
        why = refusal(repo, actor, pr_author) if actor else "no labeled event records who applied it"
        if why:
            ignored.append(f"label {label!r} is ignored: {why} (only a human with write access who is not the "
                           "PR's author changes how it is gated)")
        else:
            counted.append(label)
    return LabelCheck(tuple(counted), tuple(ignored))
