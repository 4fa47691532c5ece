"""An OpenAI-compatible chat-completions client for the model judge.

The policy's `judge.url` is the API base (`https://api.openai.com/v1`, `http://localhost:11434/v1`); the
client POSTs to `{url}/chat/completions`, or to `url` itself when it already ends in `/chat/completions` (some
gateways give the full address). Every request pins `temperature: 0` and
`response_format: {"type": "json_object"}`.

The client never raises and never passes by accident: a timeout, a refused connection, an HTTP error, a reply
that is not JSON or does not match `reply.schema.json` all become a `needs_review` outcome that says why. 429
(waiting as long as Retry-After says, capped) and 5xx are retried `retries` times; other 4xx are not, since
asking again gets the same answer. The API key lives in a `Secret`, and every text the client returns or logs
is scrubbed of it, even when a server echoes the key back.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.message import Message
from functools import cache
from typing import Any, Literal

import jsonschema
import msgspec
from msgspec.structs import replace

from gate.judge.prompt import JudgeRequest, messages, reply_schema
from gate.policy.model import Judge
from gate.secret import Secret

log = logging.getLogger("gate.judge")

JudgeVerdict = Literal["pass", "fail", "needs_review"]

MAX_RETRY_WAIT = 10.0  # seconds: a longer Retry-After (or backoff) is cut to this
MAX_REPLY_BYTES = 1024 * 1024  # a chat completion with a short JSON object is a few kB
SNIPPET = 200  # characters of a bad reply or error body quoted in the reason
ERROR_BODY_BYTES = 64 * 1024  # how much of an HTTP error's body is read for the snippet
ENDPOINT_SUFFIX = "/chat/completions"


class JudgeOutcome(msgspec.Struct, frozen=True):
    """What the judge said: a verdict, its reasons, and listing line numbers (see `prompt.Listing`)."""

    verdict: JudgeVerdict
    reasons: tuple[str, ...]
    lines: tuple[int, ...] = ()

    @classmethod
    def needs_review(cls, reason: str) -> JudgeOutcome:
        """The outcome when the judge could not give a usable verdict."""
        return cls("needs_review", (reason,))


class JudgeUnavailable(Exception):
    """The endpoint gave no usable answer; the message says why (without the key)."""


class _Retryable(JudgeUnavailable):
    """A 429 or 5xx: worth asking again, after `wait` seconds when the server said how long."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    # urllib would follow a redirect of the POST as a GET and carry the Authorization header to wherever the
    # server points; a judge endpoint has no reason to redirect, so a 3xx is an error instead.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def endpoint(url: str) -> str:
    """The chat-completions address for the policy's `judge.url`."""
    base = url.rstrip("/")
    return base if base.endswith(ENDPOINT_SUFFIX) else base + ENDPOINT_SUFFIX


class JudgeClient(msgspec.Struct, frozen=True):
    """Asks one chat-completions endpoint for a verdict. Build it with `from_environment` at the edge."""

    url: str
    model: str
    key: Secret | None
    key_env: str
    timeout: float
    retries: int
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def from_environment(cls, judge: Judge, environ: Mapping[str, str],
                         sleep: Callable[[float], None] = time.sleep) -> JudgeClient:
        """A client for the policy's judge, with the key read from the variable `judge.api_key_env`."""
        key = Secret.from_environment(judge.api_key_env, environ)
        return cls(url=endpoint(judge.url), model=judge.model, key=key, key_env=judge.api_key_env,
                   timeout=judge.timeout, retries=judge.retries, sleep=sleep)

    def judge(self, request: JudgeRequest) -> JudgeOutcome:
        """Ask for a verdict on `request`. Never raises; every failure is a `needs_review` with the reason."""
        if self.key is None:
            return JudgeOutcome.needs_review(f"the judge was not asked: the environment variable "
                                             f"{self.key_env} that holds its API key is not set")
        if not self.url.startswith(("https://", "http://")):
            return JudgeOutcome.needs_review(f"the judge was not asked: its url must start with https:// "
                                             f"or http://, not {self.url!r}")
        body = json.dumps({
            "model": self.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": messages(request),
        }).encode()
        try:
            outcome = parse_reply(self._post(body), self._redact)
        except JudgeUnavailable as exc:
            outcome = JudgeOutcome.needs_review(f"the judge gave no usable answer: {exc}")
        # Snippets were scrubbed before they were cut (half a key would not match); this catches the key in
        # the judge's own reasons.
        outcome = replace(outcome, reasons=tuple(self._redact(reason) for reason in outcome.reasons))
        if outcome.verdict == "needs_review":
            log.warning("judge: needs review: %s", "; ".join(outcome.reasons))
        return outcome

    def _post(self, body: bytes) -> bytes:
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._send(body)
            except _Retryable as exc:
                if attempt == attempts:
                    raise JudgeUnavailable(f"{exc} (after {attempts} attempts)") from None
                wait = exc.wait if exc.wait is not None else min(2.0 ** (attempt - 1), MAX_RETRY_WAIT)
                log.info("judge: attempt %d of %d: %s; retrying in %.1f s", attempt, attempts,
                         self._redact(str(exc)), wait)
                self.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _send(self, body: bytes) -> bytes:
        assert self.key is not None
        request = urllib.request.Request(self.url, data=body, method="POST", headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {self.key.reveal()}",
        })
        deadline = time.monotonic() + self.timeout
        log.info("judge: asking %s (model %s)", self.url, self.model)
        try:
            opener = urllib.request.build_opener(_RefuseRedirects)
            with opener.open(request, timeout=self.timeout) as response:
                return _read_capped(response, deadline, self.timeout)
        except urllib.error.HTTPError as exc:
            raise _http_error(exc, self.key) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise JudgeUnavailable(f"no answer within {self.timeout:g} s") from None
            raise JudgeUnavailable(self._redact(f"cannot reach {self.url}: {exc.reason}")) from None
        except TimeoutError:
            raise JudgeUnavailable(f"no answer within {self.timeout:g} s") from None
        except (http.client.HTTPException, OSError) as exc:
            raise JudgeUnavailable(self._redact(f"the connection to {self.url} failed: {exc!r}")) from None

    def _redact(self, text: str) -> str:
        return self.key.redact(text) if self.key else text


def _read_capped(response: http.client.HTTPResponse, deadline: float, timeout: float) -> bytes:
    # The socket timeout bounds each read; the deadline bounds the whole reply, so that a server trickling a
    # byte at a time cannot hold the gate.
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read1(64 * 1024):
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise JudgeUnavailable(f"the reply is larger than {MAX_REPLY_BYTES} bytes")
        if time.monotonic() > deadline:
            raise JudgeUnavailable(f"no complete answer within {timeout:g} s")
        chunks.append(chunk)
    return b"".join(chunks)


def _http_error(exc: urllib.error.HTTPError, key: Secret) -> JudgeUnavailable:
    try:
        raw = exc.read(ERROR_BODY_BYTES + 1)
    except (OSError, http.client.HTTPException):
        raw = b""
    # Only the start of a long body is read: the key may be cut in two there, so its first half is masked too.
    detail = key.redact(raw[:ERROR_BODY_BYTES].decode("utf-8", "replace"), truncated=len(raw) > ERROR_BODY_BYTES)
    message = key.redact(f"HTTP {exc.code} {exc.reason}")
    if detail.strip():
        message += f": {_snippet(detail)}"
    if exc.code == 429:
        return _Retryable(message, _retry_after(exc.headers))
    if exc.code >= 500:
        return _Retryable(message)
    if 300 <= exc.code < 400:
        return JudgeUnavailable(f"{message} (redirects are not followed: set judge.url to the final address)")
    return JudgeUnavailable(message)


def _retry_after(headers: Message | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), capped; None if absent."""
    value = headers.get("Retry-After") if headers is not None else None
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = (email.utils.parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_WAIT) if math.isfinite(seconds) else None


def parse_reply(raw: bytes, redact: Callable[[str], str]) -> JudgeOutcome:
    """The outcome in a chat-completions response body; `needs_review` when it is not a valid judge reply.
    `redact` scrubs the key out of any part of the reply quoted in a reason."""
    try:
        envelope = json.loads(raw)
        content = envelope["choices"][0]["message"]["content"]
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: "[[[[..." nested too deep
        text = redact(raw.decode("utf-8", "replace"))
        return JudgeOutcome.needs_review(f"the endpoint's answer is not JSON: {_snippet(text)}")
    except (KeyError, IndexError, TypeError):
        return JudgeOutcome.needs_review("the endpoint's answer has no choices[0].message.content")
    if not isinstance(content, str):
        return JudgeOutcome.needs_review("the endpoint's answer has no text in choices[0].message.content")
    try:
        data = json.loads(content, object_pairs_hook=_refuse_duplicate_keys)
    except (ValueError, RecursionError) as exc:
        return JudgeOutcome.needs_review(f"the judge's reply is not a JSON object ({redact(str(exc))}): "
                                         f"{_snippet(redact(content))}")
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        where = redact("/".join(str(part) for part in error.absolute_path)) or "the reply"
        return JudgeOutcome.needs_review(f"the judge's reply does not match the schema at {where}: "
                                         f"{_snippet(redact(error.message))}")
    return JudgeOutcome(data["verdict"], tuple(data["reasons"]), tuple(int(n) for n in data.get("lines", ())))


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(reply_schema())


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # {"verdict": "fail", "verdict": "pass"} would silently keep the last: an ambiguous reply is no verdict.
    keys = [key for key, _ in pairs]
    duplicated = sorted({key for key in keys if keys.count(key) > 1})
    if duplicated:
        raise ValueError(f"duplicate keys {duplicated}")
    return dict(pairs)


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET else text[:SNIPPET] + "..."
