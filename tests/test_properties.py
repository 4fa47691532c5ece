"""Property-based tests (Hypothesis) over what the gate parses from its users and their bots: a model reply, a
diff, a policy file. Whatever the text, the gate gives a verdict or a one-line error (exit 2), in bounded
time, never a traceback; and no added line of a diff escapes `imports.scope: added`."""

from __future__ import annotations

import contextlib
import io
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.cli import main
from gate.fences import split_lines
from gate.sources import gitcli
from gate.sources.base import added_lines
from gate.sources.gitrange import git_changes
from gate.sources.trust import source_files

pytestmark = pytest.mark.slow  # hypothesis: hundreds of examples, many a gate run

# Generous: the machine is shared, and a deadline only has to catch a parser gone quadratic or worse.
BOUNDED = settings(max_examples=150, deadline=timedelta(seconds=5),
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Pieces of text that the parsers treat specially: fences, line ends of every convention (and the characters
# that str.splitlines calls line ends but git and Python do not), Markdown and YAML syntax, lone surrogates.
_PIECES = ["```", "```python\n", "~~~", "    ", "\t", "\n", "\r", "\r\n", "\x0c", "\x1c", "\x85", "\u2028",
           "\x00", "\ud800", "import os\n", "def f():\n", "    return 1\n", "O(1)", "Here is the code:",
           "{", "}", "[", "]", ": ", "- ", "&a ", "*a", "!!python/object ", "# ", "'", '"', "budget", "points",
           "é", "😀", "x"]
texts = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), max_size=40).map("".join)


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _one_line_error(code: int, err: str) -> None:
    assert code == 2, err
    assert err.startswith("gate: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


# ---- replies -------------------------------------------------------------------------------------------------

@BOUNDED
@given(reply=texts)
def test_any_reply_text_gets_a_verdict(reply: str, tmp_path: Path) -> None:
    path, task = tmp_path / "reply.md", tmp_path / "task.yml"
    path.write_bytes(reply.encode("utf-8", "surrogatepass"))
    task.write_text("name: t\n")
    code, out, err = _cli(["score", str(path), "--task", str(task)])
    if "\ud800" in reply:  # not UTF-8 on disk: bad input, named
        _one_line_error(code, err)
        assert str(path) in err
        return
    assert code in (0, 1), err
    assert out.startswith(("ACCEPTED", "BLOCKED")) and not err


@BOUNDED
@given(data=st.binary(max_size=300))
def test_any_reply_bytes_get_a_verdict_or_a_one_line_error(data: bytes, tmp_path: Path) -> None:
    path, task = tmp_path / "reply.md", tmp_path / "task.yml"
    path.write_bytes(data)
    task.write_text("name: t\n")
    code, out, err = _cli(["score", str(path), "--task", str(task)])
    if code == 2:
        _one_line_error(code, err)
    else:
        assert code in (0, 1) and out.startswith(("ACCEPTED", "BLOCKED")), (code, err)


# ---- diffs ---------------------------------------------------------------------------------------------------

@settings(max_examples=200, deadline=timedelta(seconds=5))
@given(patch=texts)
def test_any_patch_text_gives_line_numbers(patch: str) -> None:
    lines = added_lines("@@ -1 +1,3 @@\n" + patch)
    assert all(isinstance(n, int) and n >= 1 for n in lines)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[gitcli.Repo]:
    root = tmp_path_factory.mktemp("diffs")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    yield gitcli.Repo(root)


def _commit(repo: gitcli.Repo, data: bytes) -> gitcli.Commit:
    """A commit whose tree holds `data` as calc.py (plumbing: the worktree is never touched)."""
    def run(*args: str, stdin: bytes = b"") -> str:
        done = subprocess.run(["git", *args], cwd=repo.working_dir, input=stdin, capture_output=True, check=True,
                              env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@a", "GIT_COMMITTER_NAME": "a",
                                   "GIT_COMMITTER_EMAIL": "a@a", "PATH": "/usr/bin:/bin"})
        return done.stdout.decode().strip()

    blob = run("hash-object", "-w", "--stdin", stdin=data)
    tree = run("mktree", stdin=f"100644 blob {blob}\tcalc.py\n".encode())
    return repo.commit(run("commit-tree", tree, "-m", "x"))


# Lines a bot might write, and the line ends that git, Python and str.splitlines disagree on.
_LINE = st.sampled_from(["import socket", "x = 1", "y = 2  # \x1c", "z = 3  # \u2028", "w = 4  # \x0c", "",
                         "\x00", "pass", "import os"])
_END = st.sampled_from(["\n", "\n", "\n", "\r", "\r\n"])
_FILE = st.lists(st.tuples(_LINE, _END), max_size=12).map(lambda rows: "".join(a + b for a, b in rows))


@settings(max_examples=120, deadline=timedelta(seconds=10),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(old=_FILE, new=_FILE)
def test_every_line_the_base_does_not_have_counts_as_added(scratch: gitcli.Repo, old: str, new: str) -> None:
    # `imports.scope: added` charges only imports on added lines: a line of the head that is nowhere in the base
    # must be one, in the numbering the checks use (Python's: a lone CR ends a line, U+001C does not).
    changes = git_changes(scratch, _commit(scratch, old.encode()), _commit(scratch, new.encode()))
    if old == new:
        assert changes == ()
        return
    [source] = source_files(changes)
    assert source.text == new
    lines = split_lines(new)
    if new.endswith(("\n", "\r")):
        lines = lines[:-1]
    before = set(split_lines(old))
    missed = [(n, line) for n, line in enumerate(lines, start=1)
              if line not in before and source.added_lines is not None and n not in source.added_lines]
    assert not missed, (missed, sorted(source.added_lines or ()))


# ---- policies ------------------------------------------------------------------------------------------------

def _policy_check(tmp_path: Path, data: bytes) -> tuple[int, str, str]:
    path = tmp_path / "gate.yml"
    path.write_bytes(data)
    return _cli(["policy", "check", str(path)])


@BOUNDED
@given(text=texts)
def test_any_policy_text_is_valid_or_one_line_naming_the_file(text: str, tmp_path: Path) -> None:
    code, out, err = _policy_check(tmp_path, text.encode("utf-8", "surrogatepass"))
    if code == 0:
        assert out.startswith("ok: ") and not err
    else:
        _one_line_error(code, err)
        assert str(tmp_path / "gate.yml") in err


_KEYS = st.sampled_from(["budget", "mode", "points", "smoke", "paths", "include", "exclude", "imports", "allow",
                         "deny", "scope", "limits", "timeout", "memory_mb", "cases", "args", "expect", "stdin",
                         "stdout", "function", "extends", "python", "require", "languages", "bots", "logins",
                         "judge", "runs", "hidden", "path", "claims", "nonsense"])
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=True),
              st.sampled_from(["default", "strict", "advisory", "added", "all", "3.9", "**/*.py", "os", "[",
                               "enforce", "uid", "*"]), st.text(max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=12)


@BOUNDED
@given(doc=st.dictionaries(_KEYS, _VALUES, max_size=6))
def test_any_policy_document_is_valid_or_one_line_naming_file_and_key(doc: dict[str, object],
                                                                    tmp_path: Path) -> None:
    text = yaml.safe_dump(doc, allow_unicode=True)
    code, out, err = _policy_check(tmp_path, text.encode("utf-8", "surrogatepass"))
    if code == 0:
        assert out.startswith("ok: ") and not err
    else:
        _one_line_error(code, err)
        assert str(tmp_path / "gate.yml") in err
