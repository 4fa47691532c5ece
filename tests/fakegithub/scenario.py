"""A pull request as the GitHub tests need it: a real git repository with a base and a head commit, the same
PR in the fake GitHub, the event payload (from GitHub's published webhook example) and the runner's files."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .server import Commit, FakeGitHub, Person, Pull, webhook

REPO = "octo/app"
BOT = "gate-bot[bot]"
MERGE_SHA = "4d3e" * 10
TESTER = Person("t", "t@example.com")


def git(cwd: Path, *args: str, author: Person = TESTER, committer: Person = TESTER) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
                               "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email,
                               "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd), "PATH": "/usr/bin:/bin"})
    return done.stdout.strip()


@dataclass(frozen=True)
class CommitSpec:
    """One commit of the PR's head: its message (trailers included), author and committer."""

    message: str = "bot change"
    author: Person = TESTER
    committer: Person = TESTER


def commit(repo: Path, files: dict[str, str | None], message: str, spec: CommitSpec | None = None) -> str:
    """Write (or delete, for None) `files` and commit them; returns the new SHA."""
    for path, text in files.items():
        target = repo / path
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    who = spec or CommitSpec(message)
    git(repo, "commit", "-q", "--allow-empty", "-m", who.message, author=who.author, committer=who.committer)
    return git(repo, "rev-parse", "HEAD")


@dataclass
class Scenario:
    """One PR: `base` files, then `head` changes, by `author`, mirrored in `fake`."""

    fake: FakeGitHub
    root: Path
    base: dict[str, str]
    head: dict[str, str | None]
    number: int = 12
    author: str = BOT
    author_type: str = "Bot"
    labels: list[str] = field(default_factory=list)
    fork: bool = False
    event_name: str = "pull_request"
    branch: str = "bot/patch"
    base_branch: str = "main"  # what the PR merges into (the repository's default branch is main)
    # The head's commits: the first holds the `head` changes, the others are empty.
    commits: list[CommitSpec] = field(default_factory=lambda: [CommitSpec()])
    workspace: Path = field(init=False)
    base_sha: str = field(init=False)
    head_sha: str = field(init=False)

    def __post_init__(self) -> None:
        self.workspace = self.root / "workspace"
        self.workspace.mkdir(parents=True)
        git(self.workspace, "init", "-q", "-b", "main")
        self.base_sha = commit(self.workspace, dict(self.base), "base")
        git(self.workspace, "checkout", "-q", "-b", self.branch)
        for index, spec in enumerate(self.commits):
            self.head_sha = commit(self.workspace, dict(self.head) if index == 0 else {}, spec.message, spec)
        if REPO not in self.fake.repos:
            self.fake.add_repo(REPO)
        shas = git(self.workspace, "rev-list", "--reverse", f"{self.base_sha}..{self.head_sha}").split()
        self.fake.add_pull(REPO, Pull(self.number, self.head_sha, self.base_sha, head_ref=self.branch,
                                      base_ref=self.base_branch,
                                      user=self.author, user_type=self.author_type, labels=list(self.labels),
                                      head_repo="forker/app" if self.fork else None,
                                      commits=[Commit(sha, spec.message, spec.author, spec.committer)
                                               for sha, spec in zip(shas, self.commits, strict=True)]))
        for path, text in self.base.items():
            self.fake.set_content(REPO, self.base_sha, path, text)
        for path, text in {**self.base, **{k: v for k, v in self.head.items() if v is not None}}.items():
            self.fake.set_content(REPO, self.head_sha, path, text)
        # Renames and removals as GitHub lists them, from git's own detection.
        moved = dict(line.split("\t")[2:0:-1] for line in git(
            self.workspace, "diff", "--name-status", "-M", self.base_sha, self.head_sha).splitlines()
            if line.startswith("R"))
        for path, new_text in self.head.items():
            if new_text is None and path not in moved.values():
                self.fake.add_file(REPO, self.number, path, None, status="removed", patch=self._patch(path))
            elif new_text is not None:
                self.fake.add_file(REPO, self.number, path, new_text,
                                   status="renamed" if path in moved else "modified" if path in self.base
                                   else "added", patch=self._patch(path) if path in self.base or path in moved
                                   else None, previous=moved.get(path))

    def push(self, files: dict[str, str | None], spec: CommitSpec | None = None) -> None:
        """A new commit on the PR's branch (`files` written, or deleted for None), in the checkout and in the
        fake."""
        spec = spec or CommitSpec()
        self.head_sha = commit(self.workspace, files, spec.message, spec)
        pull = self.fake.repos[REPO].pulls[self.number]
        pull.head_sha = self.head_sha
        pull.commits.append(Commit(self.head_sha, spec.message, spec.author, spec.committer))

    def force_push(self, sha: str) -> None:
        """The branch force-pushed back to `sha`, an older head, in the checkout and in the fake."""
        git(self.workspace, "reset", "-q", "--hard", sha)
        self.head_sha = sha
        pull = self.fake.repos[REPO].pulls[self.number]
        pull.head_sha = sha
        while pull.commits[-1].sha != sha:
            pull.commits.pop()

    def comment(self, body: str, login: str, kind: str = "User", sender: str = "maria") -> dict[str, object]:
        """`login` comments `body` on the PR: the comment in the fake, and GitHub's published `issue_comment`
        `created` event for it (which claims `sender` sent it: the gate asks the API instead)."""
        posted = self.fake.add_comment(REPO, self.number, body, login, kind)
        payload = webhook("issue_comment.created")
        payload["issue"].update(number=self.number,
                                pull_request={"url": f"https://api.github.com/repos/{REPO}/pulls/{self.number}"})
        payload["comment"].update(id=posted["id"], body=body)
        payload["comment"]["user"].update(login=login, type=kind)
        payload["sender"].update(login=sender, type="User")
        payload["repository"]["full_name"] = REPO
        return payload

    def label(self, name: str, actor: str, kind: str = "User") -> None:
        """`actor` applies label `name`: on the PR (and so in the next event) and in the issue's events."""
        if name not in self.labels:
            self.labels.append(name)
        self.fake.add_label(REPO, self.number, name, actor, kind)

    def _patch(self, path: str) -> str:
        diff = git(self.workspace, "diff", "--no-color", "-M", f"{self.base_sha}..{self.head_sha}", "--", path,
                   *self._sources(path))
        return diff[diff.index("@@"):] if "@@" in diff else ""

    def _sources(self, path: str) -> list[str]:
        """The base's paths a renamed `path` may come from (git detects a rename only when it sees both)."""
        return [old for old, text in self.head.items() if text is None and old != path]

    def event(self, action: str = "opened", label: str | None = None,
              sender: tuple[str, str] | None = None) -> dict[str, object]:
        """The event payload: GitHub's published example of `pull_request.<action>` with this PR's facts
        (`label` for a labeled event, `sender` the login and type the event claims acted)."""
        if self.event_name == "workflow_dispatch":
            payload = webhook("workflow_dispatch")
            payload["inputs"] = {"pull_request": str(self.number)}
        else:
            payload = webhook(f"pull_request.{action}")
            if label is not None:
                payload["label"]["name"] = label
            if sender is not None:
                payload["sender"].update(login=sender[0], type=sender[1])
            pr = payload["pull_request"]
            pr.update(number=self.number, labels=[{"name": name} for name in self.labels])
            pr["user"].update(login=self.author, type=self.author_type)
            pr["head"].update(sha=self.head_sha, ref=self.branch)
            pr["head"]["repo"]["full_name"] = "forker/app" if self.fork else REPO
            pr["base"].update(sha=self.base_sha, ref=self.base_branch)
            pr["base"]["repo"].update(full_name=REPO, default_branch=self.fake.repos[REPO].default_branch)
        payload["repository"].update(full_name=REPO, default_branch=self.fake.repos[REPO].default_branch)
        return payload

    def environment(self, *, workspace: bool = True, event: dict[str, object] | None = None,
                    event_name: str | None = None) -> dict[str, str]:
        """The variables a runner sets for a step, with small retry waits for the tests."""
        runner = self.root / "runner"
        runner.mkdir(exist_ok=True)
        event_path = runner / "event.json"
        event_path.write_text(json.dumps(event or self.event()), encoding="utf-8")
        for name in ("output", "summary"):
            (runner / name).touch()
        return {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name or self.event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": REPO,
            # On pull_request, GITHUB_SHA is the test merge commit, which is not the PR's head: whatever the
            # gate posts on it never shows on the PR.
            "GITHUB_SHA": MERGE_SHA,
            "GITHUB_API_URL": self.fake.url,
            "GITHUB_TOKEN": self.fake.token,
            "GITHUB_OUTPUT": str(runner / "output"),
            "GITHUB_STEP_SUMMARY": str(runner / "summary"),
            "GITHUB_WORKSPACE": str(self.workspace if workspace else self.root / "no-checkout"),
            "RUNNER_TEMP": str(runner),
            "GATE_GITHUB_RETRIES": "2",
            "GATE_GITHUB_MAX_WAIT": "0.05",
            "GATE_GITHUB_BACKOFF": "0",
            "GATE_GITHUB_WRITE_SPACING": "0",
        }

    @property
    def runner(self) -> Path:
        return self.root / "runner"

    def outputs(self) -> dict[str, str]:
        lines = (self.runner / "output").read_text(encoding="utf-8").splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def summary(self) -> str:
        return (self.runner / "summary").read_text(encoding="utf-8")


def stacked(fake: FakeGitHub, tmp_path: Path, first: dict[str, str], then: dict[str, str], *,
            main_policy: str = "budget: 3\n", parent: str = "bot/parent") -> tuple[Scenario, dict[str, object]]:
    """The bot's PR #7 into main, whose first commit C1 writes `first` and whose head H writes `then`; and the
    event of its PR #8 `parent <- H`, `parent` being a branch the bot pushed at C1 (so #8's base, and the
    policy read from it, are the bot's)."""
    base = {".github/gate.yml": main_policy, "app.py": "x = 1\n"}
    pr = Scenario(fake, tmp_path, base, dict(first), number=7)
    fake.set_content(REPO, "main", ".github/gate.yml", main_policy)  # the default branch's tip
    c1 = pr.head_sha
    pr.head_sha = commit(pr.workspace, dict(then), "bot: more")
    seven = fake.repos[REPO].pulls[7]
    seven.head_sha = pr.head_sha
    seven.commits.append(Commit(pr.head_sha, "bot: more", TESTER, TESTER))
    for path, text in {**base, **first, **then}.items():
        fake.set_content(REPO, pr.head_sha, path, text)
    for path, text in {**base, **first}.items():
        fake.set_content(REPO, c1, path, text)
    for path, text in then.items():
        fake.add_file(REPO, 7, path, text)
    fake.add_pull(REPO, Pull(8, pr.head_sha, c1, head_ref=pr.branch, base_ref=parent, user=BOT, user_type="Bot",
                             commits=[Commit(pr.head_sha, "bot: more", TESTER, TESTER)]))
    for path, text in then.items():
        fake.add_file(REPO, 8, path, text)
    event = pr.event()
    pull = event["pull_request"]
    assert isinstance(pull, dict)
    pull["number"] = 8
    pull["base"].update(sha=c1, ref=parent)
    return pr, event


def newest(fake: FakeGitHub, sha: str, name: str) -> tuple[str, str]:
    """The newest commit status and check run called `name` on `sha`: what a branch protection requiring
    `name` reads for every PR whose head is `sha`."""
    repo = fake.repos[REPO]
    status = [s["state"] for s in repo.statuses if s["sha"] == sha and s["context"] == name]
    runs = [r["conclusion"] for r in repo.check_runs.values() if r["head_sha"] == sha and r["name"] == name]
    return status[-1], runs[-1]
