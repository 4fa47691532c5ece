"""The fake GitHub REST API that the GitHub tests run the real PyGithub client against (README.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .server import COMMENT_LIMIT, Commit, FakeGitHub, Person, Pull, Repo, example, webhook

__all__ = ["COMMENT_LIMIT", "Commit", "FakeGitHub", "Person", "Pull", "Repo", "example", "serve", "webhook"]


@contextmanager
def serve(prefix: str = "") -> Iterator[FakeGitHub]:
    """A running fake; on exit, fails loudly if any request or response did not match GitHub's description."""
    with FakeGitHub(prefix=prefix) as fake:
        yield fake
    if fake.errors:
        raise AssertionError("fake GitHub saw traffic that does not match GitHub's REST description:\n"
                             + "\n".join(fake.errors))
