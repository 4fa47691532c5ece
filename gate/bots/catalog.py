"""The shipped list of AI coding agents and dependency bots (`gate/bots/agents.yml`), loaded once."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import msgspec
import yaml

_IDENTITY = re.compile(r"^\s*(?P<name>[^<]*?)\s*<(?P<email>[^<>\s]+)>\s*$")
_TRAILER = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z0-9-]*)\s*:\s*(?P<value>.+?)\s*$")


class Trailer(msgspec.Struct, frozen=True):
    """A commit-message trailer such as `Co-authored-by: Cursor Agent <cursoragent@cursor.com>`."""

    key: str
    name: str
    email: str

    @property
    def text(self) -> str:
        return f"{self.key}: {self.name} <{self.email}>" if self.name else f"{self.key}: <{self.email}>"


class Agent(msgspec.Struct, frozen=True):
    """One AI coding agent and the marks it leaves on a pull request."""

    id: str
    name: str
    source: str
    logins: tuple[str, ...] = ()
    identities: tuple[str, ...] = ()  # commit author / committer emails (`name <email>` in the file)
    trailers: tuple[Trailer, ...] = ()
    branches: tuple[str, ...] = ()


class Catalog(msgspec.Struct, frozen=True):
    agents: tuple[Agent, ...]
    dependency_bots: tuple[str, ...]  # logins

    def agent(self, agent_id: str) -> Agent:
        return next(agent for agent in self.agents if agent.id == agent_id)


def parse_identity(text: str) -> tuple[str, str] | None:
    """(name, email) of `name <email>`, or None."""
    found = _IDENTITY.match(text)
    return (found["name"], found["email"]) if found else None


def parse_trailer(line: str) -> Trailer | None:
    """The trailer on one line of a commit message (`Key: Name <email>`), or None."""
    found = _TRAILER.match(line)
    if not found:
        return None
    identity = parse_identity(found["value"])
    if identity is None:
        return None
    return Trailer(found["key"], *identity)


@cache
def catalog() -> Catalog:
    """The agents and dependency bots shipped in the package."""
    # libyaml's parser when PyYAML has it: the pure-Python one is slow for this file, on every load of a policy
    # that lists `bots.agents` (the default preset does; docs/benchmarks.md).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load((resources.files("gate") / "bots" / "agents.yml").read_text(encoding="utf-8"), Loader=loader)
    agents = []
    for entry in data["agents"]:
        trailers = tuple(t for t in (parse_trailer(line) for line in entry.get("trailers", [])) if t)
        identities = tuple(i[1] for i in (parse_identity(t) for t in entry.get("identities", [])) if i)
        if len(trailers) != len(entry.get("trailers", [])) or len(identities) != len(entry.get("identities", [])):
            raise ValueError(f"gate/bots/agents.yml: agent {entry['id']}: a trailer or identity is not "
                             "`Name <email>`")
        agents.append(Agent(id=entry["id"], name=entry["name"], source=entry["source"],
                            logins=tuple(entry.get("logins", [])), identities=identities, trailers=trailers,
                            branches=tuple(entry.get("branches", []))))
    return Catalog(tuple(agents), tuple(bot["login"] for bot in data["dependency_bots"]))


def agent_ids() -> tuple[str, ...]:
    """Every shipped agent's id, in the file's order: the default of `bots.agents`."""
    return tuple(agent.id for agent in catalog().agents)
