"""A pull request read through the GitHub API alone: the base at its SHA, the changes from the PR's files.

For a shallow checkout, and for `gate publish`, which must never check out PR code. There is no head tree
here, so no case can run; `trust.read_trusted` takes what is trusted from the base exactly as for a git range.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from github.GithubException import UnknownObjectException

from gate.errors import decode_input
from gate.sources.base import Change, ChangeStatus, ScoreInput, added_lines
from gate.sources.trust import deleted_paths, read_trusted, source_files
from gate.subject import Subject

if TYPE_CHECKING:
    from github import Github
    from github.File import File
    from github.Repository import Repository

# The PR files API's statuses ("copied", "changed" and "unchanged" are edits of the file at `filename`).
_STATUS: dict[str, ChangeStatus] = {"added": "added", "removed": "deleted", "renamed": "renamed"}


class ApiBase:
    """The base commit of a repository, read through the contents API at its SHA."""

    def __init__(self, repo: Repository, sha: str) -> None:
        self.repo = repo
        self.sha = sha

    def read(self, path: str) -> str | None:
        """The text of `path` at the base, or None when there is no such file."""
        data = bytes_at(self.repo, path, self.sha)
        return None if data is None else decode_input(data, f"{path}@{self.sha[:12]}")

    def paths(self) -> tuple[str, ...]:
        """None listed: the contents API gives one folder a request. A PR scored through the API runs no code
        at all (its verdict's isolation says `code execution: off`), tests or not."""
        return ()

    def read_folder(self, folder: str) -> dict[str, str]:
        """The files directly inside `folder` at the base, by name."""
        try:
            listed = self.repo.get_contents(folder, ref=self.sha)
        except UnknownObjectException:
            return {}
        found = {}
        for entry in listed if isinstance(listed, list) else []:
            text = self.read(entry.path) if entry.type == "file" else None
            if text is not None:
                found[entry.name] = text
        return found


def subject_from_api(client: Github, repo_name: str, number: int, base_sha: str, head_sha: str, *,
                     policy_path: str | None, repo_url: str) -> ScoreInput:
    """PR `number` of `repo_name` through the API: what is trusted from `base_sha`, the files at `head_sha`."""
    repo = client.get_repo(repo_name)
    changes = tuple(_change(repo, entry, head_sha) for entry in repo.get_pull(number).get_files())
    trusted = read_trusted(ApiBase(repo, base_sha), changes, head_sha, policy_path=policy_path)
    subject = Subject(kind="range", label=f"{base_sha[:12]}..{head_sha[:12]}", files=source_files(changes),
                      deleted=deleted_paths(changes), hidden_cases=trusted.hidden_cases,
                      judge_rubric=trusted.judge_rubric,
                      blocked_reasons=trusted.blocked_reasons, untested=trusted.untested,
                      facts=(("repo", repo_url), ("base", base_sha), ("head", head_sha),
                             *(("dependencies", note) for note in trusted.dependency_notes),
                             *(("ignored", note) for note in trusted.ignored)))
    return ScoreInput(subject, trusted.policy, trusted.overrides, trusted.reproduce)


def bytes_at(repo: Repository, path: str, ref: str) -> bytes | None:
    """The bytes of `path` at commit `ref` through the API, or None when there is no such file."""
    try:
        content = repo.get_contents(path, ref=ref)
    except UnknownObjectException:
        return None
    if isinstance(content, list) or content.type != "file":
        return None
    if content.encoding == "none":  # over 1 MB: the contents API sends no bytes, the blob has them (to 100 MB)
        return base64.b64decode(repo.get_git_blob(content.sha).content)
    data: bytes = content.decoded_content
    return data


def _change(repo: Repository, entry: File, head_sha: str) -> Change:
    """One entry of the PR's files: its status, the lines its `patch` adds (none given for a binary or too
    large diff: the whole file counts), and its bytes at the head."""
    status = _STATUS.get(entry.status, "modified")
    old_path = entry.previous_filename if status == "renamed" else None if status == "added" else entry.filename
    if status == "deleted":
        return Change(status, entry.filename, old_path)
    added = added_lines(entry.patch) if status != "added" and entry.patch else None
    return Change(status, entry.filename, old_path, added, bytes_at(repo, entry.filename, head_sha))
