"""The PyGithub client, built once at the edge from the token and the Actions environment.

PyGithub 2.x waits 60 s after a secondary rate limit and spaces writes 1 s apart by default; a gate posts four
or five writes per run, so the waits here are small and every one of them is configurable (tests pass tiny
values through the environment). The token is a `Secret`: it shows as `***` in reprs, logs and messages.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import github
import msgspec
from github.GithubException import GithubException
from github.GithubRetry import GithubRetry

from gate.errors import BadInput
from gate.secret import Secret

if TYPE_CHECKING:
    from urllib3 import BaseHTTPResponse

DEFAULT_API_URL = "https://api.github.com"
# Who writes with an Actions GITHUB_TOKEN (an installation token, which GET /user refuses).
ACTIONS_BOT = "github-actions[bot]"
# Environment variables that tune the waits; the names are documented in docs/github.md.
WAIT_VARIABLES = {
    "retries": "GATE_GITHUB_RETRIES",
    "max_wait": "GATE_GITHUB_MAX_WAIT",
    "backoff": "GATE_GITHUB_BACKOFF",
    "between_writes": "GATE_GITHUB_WRITE_SPACING",
}


class Waits(msgspec.Struct, frozen=True):
    """How hard to retry. `max_wait` caps any single wait, including a server's Retry-After."""

    retries: int = 3
    max_wait: float = 10.0
    backoff: float = 0.5  # urllib3's backoff factor for 5xx answers: 0.5 s, 1 s, 2 s
    between_writes: float = 0.25

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Waits:
        """The defaults, overridden by the GATE_GITHUB_* variables that are set."""
        values: dict[str, Any] = {}
        for field, name in WAIT_VARIABLES.items():
            raw = environ.get(name, "").strip()
            if not raw:
                continue
            try:
                number = float(raw)
            except ValueError:
                raise BadInput(f"expected a number of {'retries' if field == 'retries' else 'seconds'}, "
                               f"got {raw!r}", key=name) from None
            if number < 0:
                raise BadInput(f"expected a number >= 0, got {raw!r}", key=name)
            values[field] = int(number) if field == "retries" else number
        return cls(**values)


class Connection(msgspec.Struct, frozen=True):
    """Where the API is and how to authenticate: `api_url` is `GITHUB_API_URL` (`https://HOST/api/v3` on
    GitHub Enterprise Server)."""

    token: Secret
    api_url: str = DEFAULT_API_URL
    waits: Waits = Waits()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], token: str | None = None) -> Connection:
        """The token given or `GITHUB_TOKEN` (the Action passes its `token` input there); the API URL from
        `GITHUB_API_URL`."""
        value = token or environ.get("GITHUB_TOKEN", "")
        if not value:
            raise BadInput("no GitHub token: pass the Action's `token` input or set GITHUB_TOKEN "
                           "(`env: GITHUB_TOKEN: ${{ github.token }}`)", key="token")
        api_url = (environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        return cls(Secret(value), api_url, Waits.from_environment(environ))


class ExpectedRefusal(logging.Filter):
    """Drops PyGithub's log line for the one refusal every Action run meets on purpose: `GET /user` answered
    403 for the Actions token (`token_login` asks, to learn who writes). PyGithub prints its INFO lines on
    stderr, and `Request GET /user failed with 403: Forbidden` reads like an error in the log; any other
    refusal is still logged."""

    LINE = re.compile(r"Request GET (?:\S*/)?user failed with 403\b")

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.LINE.fullmatch(record.getMessage().rsplit(": ", 1)[0])


EXPECTED_REFUSAL = ExpectedRefusal()


class CappedRetry(GithubRetry):
    """PyGithub's retry, with a server's Retry-After capped at `max_rate_limit_wait` as well."""

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        wait = super().get_retry_after(response)
        if wait is None or self.max_rate_limit_wait is None:
            return wait
        return min(wait, self.max_rate_limit_wait)


def connect(connection: Connection) -> github.Github:
    """The one PyGithub client of a run. Lazy: objects are fetched only when a field is read."""
    waits = connection.waits
    logging.getLogger("github.GithubRetry").addFilter(EXPECTED_REFUSAL)  # once: addFilter keeps one of each
    retry = CappedRetry(total=waits.retries, backoff_factor=waits.backoff, backoff_max=waits.max_wait,
                        secondary_rate_wait=min(waits.max_wait, 60.0), max_rate_limit_wait=waits.max_wait)
    return github.Github(auth=github.Auth.Token(connection.token.reveal()), base_url=connection.api_url,
                         retry=retry, seconds_between_writes=waits.between_writes,
                         seconds_between_requests=0.0, lazy=True, user_agent="gate")


def token_login(client: github.Github) -> str:
    """The login that this client's writes show as: GET /user for a user's token; an installation token
    (GITHUB_TOKEN) is refused that call and writes as `github-actions[bot]`."""
    try:
        login: str = client.get_user().login
    except GithubException as exc:
        if exc.status not in (401, 403, 404):
            raise
        return ACTIONS_BOT
    return login
