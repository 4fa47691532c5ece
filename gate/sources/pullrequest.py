"""A GitHub pull request as something to score: which PR (from the event) and its subject, with the policy
and hidden cases read from the base commit, never the head.

When the checkout holds both the base and the head commit, the subject is built by `subject_from_commits`, so
`gate check --base B --head H` on a laptop gives the same verdict. Otherwise (a shallow checkout, or `gate
publish`, which must never check out PR code) `api.subject_from_api` reads the files at the head SHA and the
base at the base SHA. Both go through `trust.read_trusted`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import github
import msgspec
from msgspec.structs import replace

from gate.errors import BadInput
from gate.globs import compile_glob
from gate.policy.model import Policy
from gate.progress import QUIET, Progress
from gate.sources.api import ApiBase, subject_from_api
from gate.sources.base import BaseReader, ScoreInput
from gate.sources.gitcli import GitError, NotARepository, Repo
from gate.sources.gitrange import GitBase, readable, subject_from_commits
from gate.sources.trust import read_policy
from gate.subject import Subject

DISPATCH_INPUTS = ("pull_request", "pr", "number")
_QUEUE_PR = re.compile(r"/pr-(\d+)-[0-9a-f]+$")


class PullRequest(msgspec.Struct, frozen=True):
    """The facts about a PR that the gate decides on; from the webhook payload or the API (same shape)."""

    repo: str  # the base repository, owner/name
    number: int
    head_sha: str
    base_sha: str
    head_ref: str
    author: str
    author_type: str  # "User", "Bot", "Organization"
    labels: tuple[str, ...]
    fork: bool  # the head lives in another repository: the run gets a read-only token
    url: str = ""
    base_ref: str = ""  # the branch the PR merges into
    default_branch: str = ""  # the repository's default branch, as the event or the API gave it

    @classmethod
    def from_json(cls, data: Mapping[str, Any], repo: str) -> PullRequest:
        """From a `pull_request` object of a webhook payload or of `GET /repos/{o}/{r}/pulls/{n}`."""
        head_repo = (data["head"].get("repo") or {}).get("full_name")
        return cls(repo=repo, number=int(data["number"]), head_sha=data["head"]["sha"],
                   base_sha=data["base"]["sha"], head_ref=data["head"]["ref"], author=data["user"]["login"],
                   author_type=data["user"].get("type", "User"),
                   labels=tuple(label["name"] for label in data.get("labels", [])),
                   fork=head_repo != repo, url=data.get("html_url", ""), base_ref=str(data["base"].get("ref", "")),
                   default_branch=str((data["base"].get("repo") or {}).get("default_branch", "")))

    @property
    def read_only_token(self) -> bool:
        """GitHub gives a fork's PR, and Dependabot's, a read-only token and no secrets."""
        return self.fork or self.author == "dependabot[bot]"


def pull_request_from_event(name: str, payload: Mapping[str, Any], client: github.Github,
                            repo: str) -> PullRequest:
    """The PR an event is about: `pull_request` carries it; `workflow_dispatch` names it in an input."""
    if name == "pull_request_target":
        raise BadInput("refusing to run on pull_request_target: that event has a writable token and secrets, "
                       "and the gate runs the PR's code; use pull_request, and the workflow_run publish "
                       "workflow for forks (README, \"PRs from forks and Dependabot\")", key="GITHUB_EVENT_NAME")
    if name == "pull_request":
        try:
            return PullRequest.from_json(payload["pull_request"], repo)
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput(f"the pull_request event has no usable pull_request object ({type(exc).__name__}: "
                           f"{exc}); is GITHUB_EVENT_PATH the runner's event file?",
                           key="GITHUB_EVENT_PATH") from None
    if name == "workflow_dispatch":
        inputs = payload.get("inputs") or {}
        raw = next((str(inputs[key]) for key in DISPATCH_INPUTS if inputs.get(key)), "")
        if not raw.lstrip("#").isdigit():
            raise BadInput(f"workflow_dispatch needs the PR number in an input named "
                           f"{' or '.join(DISPATCH_INPUTS)}, got {raw or 'none'}", key="inputs")
        return pull_request_of(client, repo, int(raw.lstrip("#")))
    raise BadInput(f"`gate ci` runs on pull_request, workflow_dispatch, merge_group and issue_comment events, "
                   f"not {name}; "
                   "use `gate publish` from a workflow_run workflow", key="GITHUB_EVENT_NAME")


def pull_request_of(client: github.Github, repo: str, number: int) -> PullRequest:
    """PR `number` as the API has it now (`GET /repos/{o}/{r}/pulls/{n}`)."""
    return PullRequest.from_json(client.get_repo(repo).get_pull(number).raw_data, repo)


class MergeGroup(msgspec.Struct, frozen=True):
    """A merge queue's group (`merge_group` event): the commit the queue would merge, on top of the base, and
    the PR its branch is named after (`gh-readonly-queue/main/pr-104-<sha>`)."""

    head_sha: str
    base_sha: str
    head_ref: str
    number: int

    @classmethod
    def from_event(cls, payload: Mapping[str, Any]) -> MergeGroup:
        group = payload.get("merge_group") or {}
        found = _QUEUE_PR.search(str(group.get("head_ref", "")))
        if not (group.get("head_sha") and group.get("base_sha") and found):
            raise BadInput("the merge_group event has no head_sha, base_sha or a head_ref naming its PR "
                           f"(gh-readonly-queue/BRANCH/pr-N-SHA), got {group.get('head_ref')!r}",
                           key="GITHUB_EVENT_PATH")
        return cls(str(group["head_sha"]), str(group["base_sha"]), str(group["head_ref"]), int(found[1]))


def trusted_policy(client: github.Github, pr: PullRequest, *, workspace: Path | None,
                   policy_path: str | None) -> Policy:
    """The policy of the PR's base commit, read from the checkout when it holds that commit, else through the
    API: all a run needs to decide whether the PR is gated, before anything of the head is read or built."""
    local = _checkout_with(workspace, pr) if workspace else None
    if local is None:
        return read_policy(ApiBase(client.get_repo(pr.repo), pr.base_sha), policy_path)
    with contextlib.closing(local):
        base: BaseReader = GitBase(local.commit(pr.base_sha))
        return read_policy(base, policy_path)


def protected_target(client: github.Github, pr: PullRequest, *, policy_path: str | None) -> bool:
    """Whether the PR merges into a branch whose protection reads the gate's status and check run: the
    repository's default branch, or one that `protected_branches` lists in the policy **of the default
    branch**. The PR's own base cannot say: a bot that pushes a branch writes the policy at its tip."""
    repo = client.get_repo(pr.repo)
    default = pr.default_branch or str(repo.default_branch)
    if pr.base_ref == default:
        return True
    listed = read_policy(ApiBase(repo, default), policy_path).protected_branches
    # The whole name matches: `release` does not cover a `release/x` that a bot could push.
    return any(compile_glob(glob).fullmatch(pr.base_ref) for glob in listed)


def pr_subject(pr: PullRequest, api_url: str) -> Subject:
    """The PR as a verdict names it when nothing of it is scored (a PR that is not gated): its facts only."""
    return Subject(kind="pull_request", label=f"PR #{pr.number}",
                   facts=(("repo", f"{_web_url(api_url)}/{pr.repo}"), ("base", pr.base_sha), ("head", pr.head_sha),
                          ("pull request", str(pr.number))))


@contextmanager
def subject_from_pull_request(client: github.Github, pr: PullRequest, *, workspace: Path | None,
                              policy_path: str | None, api_url: str = "",
                              checkout_only: bool = False, progress: Progress = QUIET,
                              on_framework: Callable[[tuple[str, ...]], None] = lambda _: None
                              ) -> Iterator[ScoreInput]:
    """The PR's subject: from the checkout when it has both commits, else from the API (unless
    `checkout_only`: a merge group's commit is no PR's head, so the API's PR files are not its changes);
    either way what is trusted is read from the base by `trust.read_trusted`. `on_framework`: see
    gitrange.subject_from_commits."""
    repo_url = f"{_web_url(api_url)}/{pr.repo}"
    local = _checkout_with(workspace, pr) if workspace else None
    if local is None and checkout_only:
        raise BadInput(f"the checkout does not hold both {pr.base_sha[:12]} and {pr.head_sha[:12]}: check out the "
                       "merge group's head with `ref: ${{ github.event.merge_group.head_sha }}` and "
                       "`fetch-depth: 0`", key="GITHUB_WORKSPACE")
    if local is not None:
        with contextlib.closing(local), subject_from_commits(
                local, pr.base_sha, pr.head_sha, policy_path=policy_path, repo_url=repo_url, progress=progress,
                on_framework=on_framework) as found:
            yield _as_pull_request(found, pr, "checkout")
        return
    found = subject_from_api(client, pr.repo, pr.number, pr.base_sha, pr.head_sha, policy_path=policy_path,
                             repo_url=repo_url)
    yield _as_pull_request(found, pr, "API")


def _checkout_with(workspace: Path, pr: PullRequest) -> Repo | None:
    try:
        repo = Repo(workspace)
    except NotARepository:
        return None
    readable(repo)  # a checkout git refuses (another uid's) is the workflow's to fix, not the API's to replace
    try:
        repo.commit(pr.base_sha)
        repo.commit(pr.head_sha)
    except GitError:
        repo.close()
        return None
    return repo


def _as_pull_request(found: ScoreInput, pr: PullRequest, source: str) -> ScoreInput:
    facts = (*found.subject.facts, ("pull request", str(pr.number)), ("files from", source))
    subject = replace(found.subject, kind="pull_request", label=f"PR #{pr.number}", facts=facts)
    return replace(found, subject=subject)


def _web_url(api_url: str) -> str:
    """`https://github.com` for the public API, `https://HOST` for GHES (`https://HOST/api/v3`)."""
    if not api_url or api_url.rstrip("/") == "https://api.github.com":
        return "https://github.com"
    return api_url.rstrip("/").removesuffix("/api/v3")
