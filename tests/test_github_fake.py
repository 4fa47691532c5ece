"""The fake GitHub keeps the other tests honest: it refuses what GitHub's description refuses, pages like
GitHub, and points follow-up URLs at itself."""

from __future__ import annotations

import json
import urllib.request
from urllib.error import HTTPError

import github
import pytest

from tests.fakegithub import FakeGitHub, Pull, serve, server
from tests.fakegithub.regenerate import EXAMPLE_FIXES, example_errors


def request(fake: FakeGitHub, method: str, path: str, body: object = None,
            token: str | None = None) -> tuple[int, dict[str, str], object]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(fake.url + path, data=data, method=method,
                                 headers={"Authorization": f"token {token or fake.token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read() or b"null")
    except HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"null")


def test_a_request_outside_the_description_fails_the_test_loudly() -> None:
    with pytest.raises(AssertionError, match="does not match GitHub's description"), serve() as fake:
        fake.add_repo("o/r")
        status, _, body = request(fake, "POST", "/repos/o/r/statuses/" + "a" * 40, {"state": "green"})
        assert status == 400 and "state" in str(body)


def broken_status_route(status: int, field: str, value: object) -> list[tuple[str, object, object]]:
    """The fake's routes with POST .../statuses/{sha} answering `status` and `field` set to `value`."""
    def create_status(fake: FakeGitHub, query: dict[str, str], body: object, **where: str) -> object:
        _, headers, response = server.create_status(fake, query, body, **where)
        return status, headers, {**response, field: value}

    return [(m, p, create_status if h is server.create_status else h) for m, p, h in server.ROUTES]


@pytest.mark.parametrize(("status", "field", "value"), [(201, "id", "x"), (201, "url", 5),
                                                          (200, "id", 1)])
def test_a_response_outside_the_description_fails_the_test_loudly(
        monkeypatch: pytest.MonkeyPatch, status: int, field: str, value: object) -> None:
    monkeypatch.setattr(server, "ROUTES", broken_status_route(status, field, value))
    with pytest.raises(AssertionError, match=f"POST /repos/o/r/statuses/{'a' * 40}"), serve() as fake:
        fake.add_repo("o/r")
        answered, _, _ = request(fake, "POST", "/repos/o/r/statuses/" + "a" * 40, {"state": "success"})
        assert answered == status


def test_lists_page_like_github_with_link_headers() -> None:
    with serve() as fake:
        fake.add_repo("o/r")
        fake.add_pull("o/r", Pull(1, "a" * 40, "b" * 40))
        for i in range(65):
            fake.add_comment("o/r", 1, f"c{i}")
        status, headers, body = request(fake, "GET", "/repos/o/r/issues/1/comments")
        assert status == 200 and isinstance(body, list) and len(body) == 30
        assert 'rel="next"' in headers["Link"] and fake.url in headers["Link"]
        _, _, last = request(fake, "GET", "/repos/o/r/issues/1/comments?per_page=50&page=2")
        assert isinstance(last, list) and len(last) == 15
        client = github.Github(auth=github.Auth.Token(fake.token), base_url=fake.url, lazy=True)
        assert len(list(client.get_repo("o/r").get_issue(1).get_comments())) == 65


def test_follow_up_urls_point_at_the_fake() -> None:
    with serve() as fake:
        fake.add_repo("o/r")
        fake.add_pull("o/r", Pull(1, "a" * 40, "b" * 40))
        _, _, body = request(fake, "GET", "/repos/o/r/pulls/1")
        assert isinstance(body, dict) and body["url"].startswith(fake.url)
        assert "api.github.com" not in json.dumps(body)


def test_a_wrong_token_gets_bad_credentials() -> None:
    with serve() as fake:
        fake.add_repo("o/r")
        status, _, body = request(fake, "GET", "/repos/o/r", token="something-else")
        assert status == 401 and isinstance(body, dict) and body["message"] == "Bad credentials"


def test_the_committed_examples_match_their_schemas() -> None:
    from tests.fakegithub.server import description

    assert EXAMPLE_FIXES  # the fixes the README lists are applied in the committed copy
    assert example_errors(description()) == []


def test_check_runs_list_as_github_filters_them_latest_by_default_all_on_request() -> None:
    sha = "c" * 40
    with serve() as fake:
        fake.add_repo("o/r")
        client = github.Github(auth=github.Auth.Token(fake.token), base_url=fake.url, retry=None, lazy=True)
        repo = client.get_repo("o/r")
        for conclusion in ("failure", "neutral"):
            repo.create_check_run(name="gate", head_sha=sha, status="completed", conclusion=conclusion)
        fake.add_check_run("o/r", sha, "gate", "failure", ("other-app", 7), "2025-01-01T00:00:00Z")
        commit = repo.get_commit(sha)

        def listed(**query: str) -> list[tuple[str, str]]:
            return [(run.app.slug, run.conclusion) for run in commit.get_check_runs(check_name="gate", **query)]

        # The newest run of a name in each check suite (one per app here), newest first.
        assert listed() == [("other-app", "failure"), ("github-actions", "neutral")]
        assert listed(filter="latest") == listed()
        assert listed(filter="all") == [("other-app", "failure"), ("github-actions", "neutral"),
                                        ("github-actions", "failure")]
        assert [r.conclusion for r in commit.get_check_runs(filter="all")
                if r.app.id == 7] == ["failure"]
