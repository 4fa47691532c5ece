"""A fake GitHub REST API for offline tests, honest to GitHub's published description.

Every response starts from the published example of its operation (api.github.com.json, trimmed by
regenerate.py) with the fields the test state decides filled in. Every request and every response is checked
against the description with openapi-core; a mismatch is answered with HTTP 400 and recorded in `errors`,
and `serve()` fails the test on exit. Response URLs point back at the fake, lists paginate like GitHub (30 a
page, `per_page` up to 100, `Link` headers), and `fail(...)` injects the faults GitHub produces.
"""

from __future__ import annotations

import base64
import copy
import datetime
import functools
import hashlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

if TYPE_CHECKING:  # openapi-core takes most of a second to import: every pytest process would pay it at start-up
    from openapi_core import OpenAPI

HERE = Path(__file__).resolve().parent
PUBLIC = "https://api.github.com"
DOCS = "https://docs.github.com/rest"
COMMENT_LIMIT = 65536  # characters in an issue comment body (GitHub answers 422 above it)
ACTIONS_BOT = "github-actions[bot]"  # the author of what GITHUB_TOKEN writes
ACTIONS_APP = ("github-actions", 15368)  # the app whose check runs GITHUB_TOKEN creates (slug, id)


@functools.cache
def description() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((HERE / "api.github.com.json").read_text(encoding="utf-8"))
    return loaded


@functools.cache
def validator() -> OpenAPI:
    from openapi_core import OpenAPI

    return OpenAPI.from_dict(description())


def example(name: str) -> Any:
    """A deep copy of a published example's value."""
    return copy.deepcopy(description()["components"]["examples"][name]["value"])


def webhook(name: str) -> dict[str, Any]:
    """A published webhook payload from webhooks.json, e.g. "pull_request.opened"."""
    payloads: dict[str, Any] = json.loads((HERE / "webhooks.json").read_text(encoding="utf-8"))
    value: dict[str, Any] = payloads[name]
    return copy.deepcopy(value)


@dataclass
class Pull:
    number: int
    head_sha: str
    base_sha: str
    head_ref: str = "bot/patch"
    base_ref: str = "main"
    user: str = "gate-bot[bot]"
    user_type: str = "Bot"
    labels: list[str] = field(default_factory=list)
    head_repo: str | None = None  # full name of the fork; None means the same repository
    title: str = "A change"
    files: list[dict[str, Any]] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)


@dataclass(frozen=True)
class Person:
    """A commit's author or committer: the git identity, and the GitHub account GitHub links it to (if any)."""

    name: str
    email: str
    login: str | None = None
    type: str = "User"


@dataclass
class Commit:
    sha: str
    message: str
    author: Person
    committer: Person
    date: str = "2026-01-01T00:00:00Z"


@dataclass
class Fault:
    method: str
    pattern: re.Pattern[str]
    kind: str
    times: int
    retry_after: int | None


@dataclass
class Repo:
    full_name: str
    default_branch: str = "main"
    pulls: dict[int, Pull] = field(default_factory=dict)
    contents: dict[tuple[str, str], str] = field(default_factory=dict)  # (ref, path) -> text
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # issue number -> comments
    statuses: list[dict[str, Any]] = field(default_factory=list)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)  # login -> admin, maintain, write, triage, read
    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # issue number -> issue events


class Answer(Exception):
    """Raised by a handler to answer with an error status and GitHub's error body."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status} {body.get('message')}")
        self.status = status
        self.body = body
        self.headers = headers or {}


FAULTS: dict[str, Callable[[Fault], Answer]] = {
    # GITHUB_TOKEN without the needed permission (e.g. a fork PR's read-only token).
    "permission": lambda f: Answer(403, {"message": "Resource not accessible by integration",
                                         "documentation_url": f"{DOCS}/issues/comments",
                                         "status": "403"}),
    "secondary_rate_limit": lambda f: Answer(
        403, {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
                         "again.", "documentation_url": f"{DOCS}/overview/rate-limits-for-the-rest-api"},
        {} if f.retry_after is None else {"Retry-After": str(f.retry_after)}),
    # The hourly quota is spent: PyGithub would wait until X-RateLimit-Reset, an hour away here.
    "primary_rate_limit": lambda f: Answer(
        403, {"message": "API rate limit exceeded for installation ID 1.",
              "documentation_url": f"{DOCS}/overview/rate-limits-for-the-rest-api"},
        {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Used": "5000",
         "X-RateLimit-Reset": str(int(time.time()) + 3600)}),
    "rate_limit_429": lambda f: Answer(
        429, {"message": "You have exceeded a secondary rate limit.",
              "documentation_url": f"{DOCS}/overview/rate-limits-for-the-rest-api"},
        {"Retry-After": str(f.retry_after or 0)}),
    "not_found": lambda f: Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}),
    "too_long": lambda f: Answer(422, too_long_body()),
    "server_error": lambda f: Answer(502, {"message": "Server Error"}),
}


def too_long_body() -> dict[str, Any]:
    return {"message": "Validation Failed", "documentation_url": f"{DOCS}/issues/comments",
            "errors": [{"resource": "IssueComment", "code": "custom", "field": "body",
                        "message": f"body is too long (maximum is {COMMENT_LIMIT} characters)"}],
            "status": "422"}


class FakeGitHub:
    """The fake server and its state. Use as a context manager or call start()/stop()."""

    def __init__(self, token: str = "ghs_faketoken0123456789", prefix: str = "") -> None:
        self.token = token
        # Who the token is. None: a GitHub App installation token such as GITHUB_TOKEN, which GitHub refuses
        # GET /user to (403) and whose writes show as `github-actions[bot]`; a login: a user's token.
        self.token_login: str | None = None
        self.check_app = ACTIONS_APP  # the app (slug, id) whose check runs the token creates
        self.prefix = prefix  # "/api/v3" to look like GitHub Enterprise Server
        self.repos: dict[str, Repo] = {}
        self.errors: list[str] = []
        self.log: list[tuple[str, str, int]] = []  # (method, path with query, status)
        self.faults: list[Fault] = []
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    # ----- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> str:
        validator()  # build once before the first request, outside the handler thread
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}{self.prefix}"
        # Polled every 50 ms rather than 0.5 s: `stop` waits for the poll, once for each of many tests.
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self.url

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeGitHub:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- state set-up ------------------------------------------------------------------------------
    def add_repo(self, full_name: str, default_branch: str = "main") -> Repo:
        repo = Repo(full_name, default_branch)
        self.repos[full_name] = repo
        return repo

    def add_pull(self, full_name: str, pull: Pull) -> Pull:
        self.repos[full_name].pulls[pull.number] = pull
        return pull

    def add_file(self, full_name: str, number: int, path: str, text: str | None, status: str = "added",
                 patch: str | None = None, previous: str | None = None) -> None:
        """A changed file of a pull request, with its text stored at the head SHA (None: a removed file;
        `previous`: the name a renamed file had)."""
        repo = self.repos[full_name]
        pull = repo.pulls[number]
        if patch is None:
            lines = (text or "").splitlines()
            patch = f"@@ -0,0 +1,{len(lines)} @@\n" + "\n".join("+" + line for line in lines)
        entry = {"filename": path, "status": status, "patch": patch,
                 "additions": patch.count("\n+"), "deletions": patch.count("\n-")}
        pull.files.append({**entry, "previous_filename": previous} if previous else entry)
        if text is not None:
            repo.contents[(pull.head_sha, path)] = text

    def set_content(self, full_name: str, ref: str, path: str, text: str) -> None:
        self.repos[full_name].contents[(ref, path)] = text

    def add_comment(self, full_name: str, number: int, body: str, login: str = "someone",
                    kind: str = "User") -> dict[str, Any]:
        with self._lock:
            return self._new_comment(self.repos[full_name], number, body, login, kind)

    @property
    def token_identity(self) -> tuple[str, str]:
        """(login, account type) that the token's writes show as."""
        return (self.token_login, "User") if self.token_login else (ACTIONS_BOT, "Bot")

    def add_label(self, full_name: str, number: int, name: str, actor: str, kind: str = "User") -> dict[str, Any]:
        """`actor` puts label `name` on the PR: the label, and the `labeled` issue event GitHub records."""
        with self._lock:
            repo = self.repos[full_name]
            pull = repo.pulls[number]
            if name not in pull.labels:
                pull.labels.append(name)
            event: dict[str, Any] = example("issue-event-for-issue-items")[0]
            eid = next(self._ids)
            event.update(id=eid, event="labeled", actor=self._user(actor, kind), commit_id=None, commit_url=None,
                         url=f"{PUBLIC}/repos/{full_name}/issues/events/{eid}", created_at=_now(),
                         label={"name": name, "color": "ededed"})
            repo.events.setdefault(number, []).append(event)
            return event

    def add_check_run(self, full_name: str, head_sha: str, name: str, conclusion: str, app: tuple[str, int],
                      completed_at: str) -> dict[str, Any]:
        """A completed check run that another app (`app`: slug, id) posted on `head_sha`, with the times it
        chose (the API lets a check run's creator set `started_at` and `completed_at`)."""
        with self._lock:
            _, _, run = create_check_run(self, {}, {"name": name, "head_sha": head_sha, "conclusion": conclusion,
                                                    "started_at": completed_at, "completed_at": completed_at},
                                         *full_name.split("/"))
            _app_of(run, *app)
            return dict(run)

    def set_permission(self, full_name: str, login: str, permission: str) -> None:
        """`login`'s permission on the repository (admin, maintain, write, triage, read); others have none."""
        self.repos[full_name].permissions[login] = permission

    def fail(self, method: str, path_regex: str, kind: str, times: int = 1,
             retry_after: int | None = None) -> None:
        """Answer the next `times` requests matching (method, path regex) with the fault `kind` (FAULTS)."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; one of {sorted(FAULTS)}")
        self.faults.append(Fault(method.upper(), re.compile(path_regex), kind, times, retry_after))

    # ----- helpers for assertions ----------------------------------------------------------------------
    def writes(self) -> list[tuple[str, str, int]]:
        return [entry for entry in self.log if entry[0] != "GET"]

    # ----- request handling ----------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str],
               body: bytes) -> tuple[int, dict[str, str], bytes]:
        split = urlsplit(raw_path)
        path = unquote(split.path)
        if self.prefix and path.startswith(self.prefix):
            path = path[len(self.prefix):]
        query = dict(parse_qsl(split.query))
        status, extra, payload = self._dispatch(method, path, query, headers, body)
        data = json.dumps(payload).replace(PUBLIC, self.url).encode() if payload is not None else b""
        self._validate_response(method, path, query, headers, body, status, data, extra)
        self.log.append((method, raw_path, status))
        return status, extra, data

    def _dispatch(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
                  body: bytes) -> tuple[int, dict[str, str], Any]:
        auth = headers.get("authorization", "")
        if auth not in (f"token {self.token}", f"Bearer {self.token}"):
            return 401, {}, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}
        request_error = self._validate_request(method, path, query, headers, body)
        if request_error:
            self.errors.append(request_error)
            return 400, {}, {"message": request_error}
        try:
            self._inject(method, path)
            for route_method, pattern, handler in ROUTES:
                match = pattern.fullmatch(path)
                if match and route_method == method:
                    with self._lock:
                        return handler(self, query, json.loads(body) if body else {}, **match.groupdict())
            raise Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
        except Answer as answer:
            return answer.status, answer.headers, answer.body

    def _inject(self, method: str, path: str) -> None:
        for fault in self.faults:
            if fault.times > 0 and fault.method == method and fault.pattern.search(path):
                fault.times -= 1
                raise FAULTS[fault.kind](fault)

    def _validate_request(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
                          body: bytes) -> str:
        from openapi_core.testing import MockRequest

        request = MockRequest(PUBLIC, method, _one_segment(path), args=query, headers=headers, data=body,
                              content_type=headers.get("content-type", "application/json"))
        try:
            validator().validate_request(request)
        except Exception as exc:  # openapi-core raises one of many classes; all mean "does not match"
            return f"request {method} {path} does not match GitHub's description: {_explain(exc)}"
        return ""

    def _validate_response(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
                           body: bytes, status: int, data: bytes, extra: dict[str, str]) -> None:
        if status in (401, 400):
            return  # refused before any handler ran: the request's own error is recorded
        if not _declares(method, path, status):
            if status >= 400:
                return  # injected faults on operations whose description omits that status are GitHub's too
            self.errors.append(f"response to {method} {path} has status {status}, which GitHub's description "
                               "does not list for the operation")
            return
        from openapi_core.testing import MockRequest, MockResponse

        request = MockRequest(PUBLIC, method, _one_segment(path), args=query, headers=headers, data=body)
        response = MockResponse(data.replace(self.url.encode(), PUBLIC.encode()), status, headers=extra)
        try:
            validator().validate_response(request, response)
        except Exception as exc:  # as above
            self.errors.append(f"response to {method} {path} ({status}) does not match GitHub's description: "
                               f"{_explain(exc)}")

    # ----- builders: published examples with the state's fields -----------------------------------------
    def _user(self, login: str, kind: str) -> dict[str, Any]:
        user: dict[str, Any] = example("issue-comment")["user"]
        user.update(login=login, type=kind, id=_number(login), url=f"{PUBLIC}/users/{login}",
                    html_url=f"https://github.com/{login}")
        return user

    def _repository(self, full_name: str, template: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(template).replace("octocat/Hello-World", full_name)
        repo: dict[str, Any] = json.loads(text)
        owner, name = full_name.split("/")
        repo.update(name=name, full_name=full_name, id=_number(full_name))
        repo["owner"]["login"] = owner
        if "default_branch" in repo and full_name in self.repos:
            repo["default_branch"] = self.repos[full_name].default_branch
        return repo

    def _new_comment(self, repo: Repo, number: int, body: str, login: str, kind: str) -> dict[str, Any]:
        comment: dict[str, Any] = example("issue-comment")
        cid = next(self._ids)
        now = _now()
        comment.update(id=cid, body=body, user=self._user(login, kind), created_at=now, updated_at=now,
                       url=f"{PUBLIC}/repos/{repo.full_name}/issues/comments/{cid}",
                       html_url=f"https://github.com/{repo.full_name}/pull/{number}#issuecomment-{cid}",
                       issue_url=f"{PUBLIC}/repos/{repo.full_name}/issues/{number}")
        repo.comments.setdefault(number, []).append(comment)
        return comment


def _one_segment(path: str) -> str:
    """The path with a contents path's slashes escaped: GitHub's `{path}` parameter spans directories, which
    an OpenAPI path template cannot say."""
    match = re.fullmatch(r"(/repos/[^/]+/[^/]+/contents/)(.+)", path)
    return match.group(1) + match.group(2).replace("/", "%2F") if match else path


def _explain(exc: Exception) -> str:
    details = [str(e) for e in getattr(exc, "schema_errors", ())]
    cause = exc.__cause__
    details += [str(e) for e in getattr(cause, "schema_errors", ())]
    text = f"{type(exc).__name__}: {exc}" + ("; " + "; ".join(details) if details else "")
    return text if len(text) < 2000 else text[:2000] + "..."


def _declares(method: str, path: str, status: int) -> bool:
    """Whether the description lists `status` for the operation that serves (method, path)."""
    for template, item in description()["paths"].items():
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), _one_segment(path)) and method.lower() in item:
            return str(status) in item[method.lower()]["responses"]
    return False


def _number(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


_CLOCK = itertools.count()


def _now() -> str:
    """GitHub's server time, one second later on every call: what happened later is later (overrides compare
    a comment's time with a check run's)."""
    moment = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=next(_CLOCK))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _page(fake: FakeGitHub, path: str, query: dict[str, str], items: list[Any]) -> tuple[int, dict[str, str],
                                                                                         Any]:
    """One page of `items` the way GitHub pages lists: 30 by default, `per_page` up to 100, `Link` header."""
    per_page = min(int(query.get("per_page", 30)), 100)
    page = int(query.get("page", 1))
    last = max(1, -(-len(items) // per_page))
    links = []

    def link(n: int, rel: str) -> str:
        return f'<{PUBLIC}{path}?{urlencode({**query, "per_page": per_page, "page": n})}>; rel="{rel}"'

    if page < last:
        links += [link(page + 1, "next"), link(last, "last")]
    if page > 1:
        links += [link(1, "first"), link(page - 1, "prev")]
    headers = {"Link": ", ".join(links).replace(PUBLIC, fake.url)} if links else {}
    return 200, headers, items[(page - 1) * per_page: page * per_page]


def _repo(fake: FakeGitHub, owner: str, repo: str) -> Repo:
    found = fake.repos.get(f"{owner}/{repo}")
    if found is None:
        raise Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
    return found


def _pull_of(fake: FakeGitHub, owner: str, repo: str, number: str) -> tuple[Repo, Pull]:
    state = _repo(fake, owner, repo)
    pull = state.pulls.get(int(number))
    if pull is None:
        raise Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
    return state, pull


# ----- operations ----------------------------------------------------------------------------------------
Handler = Callable[..., tuple[int, dict[str, str], Any]]


def get_repo(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str,
             repo: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    return 200, {}, fake._repository(state.full_name, example("full-repository-default-response"))


def get_pull(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
             number: str) -> tuple[int, dict[str, str], Any]:
    state, pull = _pull_of(fake, owner, repo, number)
    data = example("pull-request")
    text = json.dumps(data).replace("octocat/Hello-World", state.full_name)
    data = json.loads(text.replace("/1347", f"/{pull.number}"))
    data.update(number=pull.number, title=pull.title, state="open",
                user=fake._user(pull.user, pull.user_type),
                labels=[_label(state.full_name, name) for name in pull.labels], changed_files=len(pull.files))
    head_repo = fake._repository(pull.head_repo or state.full_name, data["head"]["repo"])
    head_repo["fork"] = pull.head_repo is not None
    data["head"].update(sha=pull.head_sha, ref=pull.head_ref, repo=head_repo,
                        label=f"{(pull.head_repo or state.full_name).split('/')[0]}:{pull.head_ref}")
    data["base"].update(sha=pull.base_sha, ref=pull.base_ref,
                        repo=fake._repository(state.full_name, data["base"]["repo"]))
    return 200, {}, data


def list_pull_files(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                    number: str) -> tuple[int, dict[str, str], Any]:
    state, pull = _pull_of(fake, owner, repo, number)
    template = example("diff-entry-items")[0]
    items = []
    for entry in pull.files:
        item = dict(template)
        item.update(entry, sha=hashlib.sha1(entry["filename"].encode()).hexdigest(),
                    changes=entry["additions"] + entry["deletions"],
                    blob_url=f"https://github.com/{state.full_name}/blob/{pull.head_sha}/{entry['filename']}",
                    raw_url=f"https://github.com/{state.full_name}/raw/{pull.head_sha}/{entry['filename']}",
                    contents_url=f"{PUBLIC}/repos/{state.full_name}/contents/{entry['filename']}?ref={pull.head_sha}")
        items.append(item)
    return _page(fake, f"/repos/{owner}/{repo}/pulls/{number}/files", query, items)


def get_contents(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                 path: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    ref = query.get("ref", state.default_branch)
    text = state.contents.get((ref, path))
    if text is None and (listing := _directory(state, ref, path)):
        return 200, {}, listing
    if text is None:
        raise Answer(404, {"message": "Not Found", "documentation_url": f"{DOCS}/repos/contents",
                           "status": "404"})
    raw = text.encode()
    sha = _blob_sha(raw)
    data = example("content-file-response-if-content-is-a-file")
    url = f"{PUBLIC}/repos/{state.full_name}/contents/{path}?ref={ref}"
    # Over 1 MB, GitHub sends no bytes (the raw media type or the blob has them): `encoding: none`.
    whole = len(raw) <= _CONTENTS_BYTES
    data.update(name=path.rsplit("/", 1)[-1], path=path, size=len(raw), sha=sha,
                encoding="base64" if whole else "none", content=base64.encodebytes(raw).decode() if whole else "",
                url=url,
                git_url=f"{PUBLIC}/repos/{state.full_name}/git/blobs/{sha}",
                html_url=f"https://github.com/{state.full_name}/blob/{ref}/{path}",
                download_url=f"https://raw.githubusercontent.com/{state.full_name}/{ref}/{path}")
    data["_links"] = {"self": url, "git": data["git_url"], "html": data["html_url"]}
    return 200, {}, data


_CONTENTS_BYTES = 1 << 20  # what the contents API sends the bytes of


def _blob_sha(raw: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()


def get_blob(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
             file_sha: str) -> tuple[int, dict[str, str], Any]:
    """A blob of any file the repository holds, by its SHA (up to 100 MB on GitHub)."""
    state = _repo(fake, owner, repo)
    raw = next((text.encode() for text in state.contents.values() if _blob_sha(text.encode()) == file_sha), None)
    if raw is None:
        raise Answer(404, {"message": "Not Found", "documentation_url": f"{DOCS}/git/blobs", "status": "404"})
    data = example("blob")
    data.update(sha=file_sha, size=len(raw), encoding="base64", content=base64.encodebytes(raw).decode(),
                url=f"{PUBLIC}/repos/{state.full_name}/git/blobs/{file_sha}")
    return 200, {}, data


def _directory(state: Repo, ref: str, folder: str) -> list[dict[str, Any]]:
    """The entries directly inside `folder` at `ref` (files, and folders holding files), as GitHub lists a
    directory's contents; [] when no file lies under it."""
    template = example("content-file-response-if-content-is-a-directory")[0]
    entries: dict[str, dict[str, Any]] = {}
    for (at, path), text in state.contents.items():
        if at != ref or not path.startswith(folder.rstrip("/") + "/"):
            continue
        name = path[len(folder.rstrip("/")) + 1:].split("/", 1)[0]
        child = f"{folder.rstrip('/')}/{name}"
        kind = "file" if child == path else "dir"
        raw = text.encode() if kind == "file" else child.encode()
        sha = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()
        url = f"{PUBLIC}/repos/{state.full_name}/contents/{child}?ref={ref}"
        git_url = f"{PUBLIC}/repos/{state.full_name}/git/{'blobs' if kind == 'file' else 'trees'}/{sha}"
        html_url = f"https://github.com/{state.full_name}/{'blob' if kind == 'file' else 'tree'}/{ref}/{child}"
        entry = dict(template, type=kind, size=len(raw) if kind == "file" else 0, name=name, path=child,
                     sha=sha, url=url, git_url=git_url, html_url=html_url,
                     download_url=f"https://raw.githubusercontent.com/{state.full_name}/{ref}/{child}"
                     if kind == "file" else None)
        entry["_links"] = {"self": url, "git": git_url, "html": html_url}
        entries[name] = entry
    return [entries[name] for name in sorted(entries)]


def list_pull_commits(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                      number: str) -> tuple[int, dict[str, str], Any]:
    state, pull = _pull_of(fake, owner, repo, number)
    template = example("commit-items")[0]
    items = []
    for entry in pull.commits:
        item = copy.deepcopy(template)
        text = json.dumps(item).replace("octocat/Hello-World", state.full_name).replace(template["sha"], entry.sha)
        item = json.loads(text)
        item["commit"].update(message=entry.message, comment_count=0,
                              author={"name": entry.author.name, "email": entry.author.email, "date": entry.date},
                              committer={"name": entry.committer.name, "email": entry.committer.email,
                                         "date": entry.date})
        for role, person in (("author", entry.author), ("committer", entry.committer)):
            item[role] = fake._user(person.login, person.type) if person.login else None
        item.pop("files", None)
        item.pop("stats", None)
        items.append(item)
    return _page(fake, f"/repos/{owner}/{repo}/pulls/{number}/commits", query, items)


def get_permission(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                   username: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    permission = state.permissions.get(username, "none")
    # GitHub folds maintain into write and triage into read in `permission`; `role_name` keeps the role.
    data = example("repository-collaborator-permission-response-if-user-has-admin-permissions")
    data.update(permission={"maintain": "write", "triage": "read"}.get(permission, permission),
                role_name=permission)
    data["user"].update(fake._user(username, "Bot" if username.endswith("[bot]") else "User"),
                        role_name=permission)
    return 200, {}, data


def list_issue_events(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                      number: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    return _page(fake, f"/repos/{owner}/{repo}/issues/{number}/events", query, state.events.get(int(number), []))


def get_comment(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                comment_id: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    for comment in itertools.chain.from_iterable(state.comments.values()):
        if comment["id"] == int(comment_id):
            return 200, {}, comment
    raise Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})


def list_check_runs_for_ref(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                            ref: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    runs = [run for run in state.check_runs.values() if run["head_sha"] == ref
            and query.get("check_name") in (None, run["name"])
            and query.get("app_id") in (None, str(run["app"]["id"]))]
    if query.get("filter", "latest") == "latest":
        # GitHub's default: the most recent run (by completed_at) of each name in each check suite; a suite
        # is one app's on one commit here.
        newest: dict[tuple[int, str], dict[str, Any]] = {}
        for run in runs:
            key = (run["check_suite"]["id"], run["name"])
            if key not in newest or (run["completed_at"] or "", run["id"]) > (newest[key]["completed_at"] or "",
                                                                                newest[key]["id"]):
                newest[key] = run
        runs = [run for run in runs if newest[(run["check_suite"]["id"], run["name"])] is run]
    runs.reverse()  # newest first, as GitHub lists them
    status, headers, page = _page(fake, f"/repos/{owner}/{repo}/commits/{ref}/check-runs", query, runs)
    return status, headers, {"total_count": len(runs), "check_runs": page}


def list_comments(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                  number: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    comments = [c for c in state.comments.get(int(number), []) if c["updated_at"] >= query.get("since", "")]
    return _page(fake, f"/repos/{owner}/{repo}/issues/{number}/comments", query, comments)


def create_comment(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                   number: str) -> tuple[int, dict[str, str], Any]:
    state, _ = _pull_of(fake, owner, repo, number)
    _check_comment_length(body["body"])
    comment = fake._new_comment(state, int(number), body["body"], *fake.token_identity)
    return 201, {"Location": comment["url"]}, comment


def update_comment(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                   comment_id: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    _check_comment_length(body["body"])
    for comment in itertools.chain.from_iterable(state.comments.values()):
        if comment["id"] == int(comment_id):
            comment.update(body=body["body"], updated_at=_now())
            return 200, {}, comment
    raise Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})


def delete_comment(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                   comment_id: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    for comments in state.comments.values():
        for comment in comments:
            if comment["id"] == int(comment_id):
                comments.remove(comment)
                return 204, {}, None
    raise Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})


def get_user(fake: FakeGitHub, query: dict[str, str], body: Any) -> tuple[int, dict[str, str], Any]:
    """The token's user; an installation token (GITHUB_TOKEN) is refused, as GitHub does."""
    if fake.token_login is None:
        raise Answer(403, {"message": "Resource not accessible by integration",
                           "documentation_url": f"{DOCS}/users/users#get-the-authenticated-user",
                           "status": "403"})
    user = example("private-user-response-with-public-profile-information")
    user.update(login=fake.token_login, id=_number(fake.token_login), type="User",
                url=f"{PUBLIC}/users/{fake.token_login}", html_url=f"https://github.com/{fake.token_login}")
    return 200, {}, user


def _check_comment_length(text: str) -> None:
    if len(text) > COMMENT_LIMIT:
        raise Answer(422, too_long_body())


def _label(full_name: str, name: str) -> dict[str, Any]:
    label: dict[str, Any] = example("label-items")[0]
    label.update(name=name, id=_number(name), url=f"{PUBLIC}/repos/{full_name}/labels/{name}", default=False)
    return label


def add_labels(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
               number: str) -> tuple[int, dict[str, str], Any]:
    state, pull = _pull_of(fake, owner, repo, number)
    names = body.get("labels", []) if isinstance(body, dict) else body
    for name in names:
        if name not in pull.labels:
            pull.labels.append(name if isinstance(name, str) else name["name"])
    return 200, {}, [_label(state.full_name, name) for name in pull.labels]


def create_status(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                  sha: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    status = example("status")
    status.update(body, id=next(fake._ids), url=f"{PUBLIC}/repos/{state.full_name}/statuses/{sha}",
                  created_at=_now(), updated_at=_now())
    status.setdefault("context", "default")
    status["sha"] = sha  # kept in the fake's state for assertions; removed from the response below
    state.statuses.append(status)
    response = {k: v for k, v in status.items() if k != "sha"}
    return 201, {"Location": status["url"]}, response


def create_check_run(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str,
                     repo: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    run = example("check-run-example-of-completed-conclusion")
    cid = next(fake._ids)
    run.update(id=cid, name=body["name"], head_sha=body["head_sha"], status=body.get("status", "queued"),
               conclusion=body.get("conclusion"), url=f"{PUBLIC}/repos/{state.full_name}/check-runs/{cid}",
               html_url=f"https://github.com/{state.full_name}/runs/{cid}", pull_requests=[],
               external_id=body.get("external_id", ""), started_at=body.get("started_at") or _now())
    run["completed_at"] = body.get("completed_at") or run["started_at"]
    if run["conclusion"] is not None:
        run["status"] = "completed"
    else:
        run["completed_at"] = None
    _app_of(run, *fake.check_app)
    state.check_runs[cid] = run
    state.annotations[cid] = []
    _apply_output(state, run, body.get("output"))
    return 201, {}, run


def update_check_run(fake: FakeGitHub, query: dict[str, str], body: Any, owner: str, repo: str,
                     check_run_id: str) -> tuple[int, dict[str, str], Any]:
    state = _repo(fake, owner, repo)
    run = state.check_runs.get(int(check_run_id))
    if run is None:
        raise Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
    for key in ("name", "status", "conclusion", "details_url", "external_id"):
        if key in body:
            run[key] = body[key]
    if body.get("conclusion"):
        run.update(status="completed", completed_at=_now())
    _apply_output(state, run, body.get("output"))
    return 200, {}, run


def _app_of(run: dict[str, Any], slug: str, app_id: int) -> None:
    """The run belongs to app `slug` and to that app's check suite on the run's commit."""
    run["app"].update(slug=slug, id=app_id, name=slug, html_url=f"https://github.com/apps/{slug}")
    run["check_suite"] = {"id": _number(f"{slug} {run['head_sha']}")}


def _apply_output(state: Repo, run: dict[str, Any], output: dict[str, Any] | None) -> None:
    if not output:
        return
    annotations = output.get("annotations", [])
    state.annotations[run["id"]].extend(annotations)  # GitHub appends annotations on every update
    run["output"].update({k: output[k] for k in ("title", "summary", "text") if k in output},
                         annotations_count=len(state.annotations[run["id"]]),
                         annotations_url=f"{run['url']}/annotations")


def rate_limit(fake: FakeGitHub, query: dict[str, str], body: Any) -> tuple[int, dict[str, str], Any]:
    return 200, {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999",
                 "X-RateLimit-Reset": "1767225600"}, example("rate-limit-overview")


_R = "/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    ("GET", re.compile("/rate_limit"), rate_limit),
    ("GET", re.compile("/user"), get_user),
    ("GET", re.compile(_R), get_repo),
    ("GET", re.compile(_R + r"/pulls/(?P<number>\d+)"), get_pull),
    ("GET", re.compile(_R + r"/pulls/(?P<number>\d+)/files"), list_pull_files),
    ("GET", re.compile(_R + r"/contents/(?P<path>.+)"), get_contents),
    ("GET", re.compile(_R + r"/git/blobs/(?P<file_sha>[0-9a-f]{40})"), get_blob),
    ("GET", re.compile(_R + r"/issues/(?P<number>\d+)/comments"), list_comments),
    ("GET", re.compile(_R + r"/pulls/(?P<number>\d+)/commits"), list_pull_commits),
    ("GET", re.compile(_R + r"/collaborators/(?P<username>[^/]+)/permission"), get_permission),
    ("GET", re.compile(_R + r"/issues/(?P<number>\d+)/events"), list_issue_events),
    ("GET", re.compile(_R + r"/issues/comments/(?P<comment_id>\d+)"), get_comment),
    ("GET", re.compile(_R + r"/commits/(?P<ref>[^/]+)/check-runs"), list_check_runs_for_ref),
    ("POST", re.compile(_R + r"/issues/(?P<number>\d+)/comments"), create_comment),
    ("PATCH", re.compile(_R + r"/issues/comments/(?P<comment_id>\d+)"), update_comment),
    ("DELETE", re.compile(_R + r"/issues/comments/(?P<comment_id>\d+)"), delete_comment),
    ("POST", re.compile(_R + r"/issues/(?P<number>\d+)/labels"), add_labels),
    ("POST", re.compile(_R + r"/statuses/(?P<sha>[0-9a-f]+)"), create_status),
    ("POST", re.compile(_R + r"/check-runs"), create_check_run),
    ("PATCH", re.compile(_R + r"/check-runs/(?P<check_run_id>\d+)"), update_check_run),
]


def _handler_for(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # A response's headers and body are two writes: with Nagle's algorithm the body waits for the client's
        # delayed ACK of the headers (about 40 ms a request on Linux), as GitHub's servers do not make it wait.
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, data = fake.handle(self.command, self.path, headers, body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # the log is in fake.log instead
            return

    return Handler
