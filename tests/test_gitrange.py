"""`gate check` on real git repositories: a base commit with a policy and hidden cases, and bot commits."""

from __future__ import annotations

import ast
import json
import random
import re
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cmarkgfm
import git
import pytest
from cmarkgfm.cmark import Options

from gate.cli import main
from gate.engine import score
from gate.errors import BadInput
from gate.sources import gitcli, gitrange
from gate.sources.gitrange import git_changes, subject_from_commits, subject_from_range
from gate.verdict import Verdict
from tests.git_support import Repo

POLICY = """\
budget: 1
cases:
  - name: adds
    function: "calc:add"
    args: [2, 3]
    expect: 5
"""
HIDDEN = """\
cases:
  - name: secret sum
    function: "calc:add"
    args: [40, 2]
    expect: 42
"""
CALC = "def add(a, b):\n    return a + b\n"
# An old file that already imports a denied module: with `scope: added` only what a change adds counts.
UTIL = "import json\nimport subprocess\n\n\ndef dump(x):\n    return json.dumps(x)\n"



@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo")
    r.commit("base", {".github/gate.yml": POLICY, ".github/gate-hidden.yml": HIDDEN,
                      "calc.py": CALC, "util.py": UTIL, "README.md": "# demo\n"})
    r.git("checkout", "-q", "-b", "bot")
    return r


def check(repo: Repo, *extra: str) -> tuple[int, dict[str, Any]]:
    out = repo.root.parent / "verdict.json"
    code = main(["check", "--repo", str(repo.root), "--json", str(out), *extra])
    verdict: dict[str, Any] = json.loads(out.read_text())
    return code, verdict


def test_a_clean_change_is_accepted(repo: Repo) -> None:
    repo.commit("bot: add sub", {"calc.py": CALC + "\n\ndef sub(a, b):\n    return a - b\n"})
    code, verdict = check(repo)
    assert code == 0 and verdict["accepted"] and verdict["total"] == 0
    assert verdict["policy_source"].startswith(".github/gate.yml@")
    assert [(c["name"], c["hidden"], c["status"]) for c in verdict["cases"]] == [
        ("adds", False, "passed"), ("hidden case 1", True, "passed")]


@pytest.mark.parametrize(("args", "force", "colored"), [([], "", False), ([], "1", True),
                                                     (["--color", "always"], "", True),
                                                     (["--color", "never"], "1", False)])
def test_the_report_is_coloured_when_asked(repo: Repo, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str], args: list[str], force: str,
                                           colored: bool) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", force)
    repo.commit("bot: faster", {"calc.py": "def add(a, b):\n    return a * b\n"})
    assert main(["check", "--repo", str(repo.root), *args]) == 1
    out = capsys.readouterr().out  # not a terminal
    assert out.startswith("\x1b[31mBLOCKED" if colored else "BLOCKED"), out[:40]


def test_breaking_a_case_costs_points_and_the_report_shows_the_diff_but_not_hidden_values(
        repo: Repo) -> None:
    repo.commit("bot: faster", {"calc.py": "def add(a, b):\n    return a * b\n"})
    comment = repo.root.parent / "comment.md"
    code, verdict = check(repo, "--comment", str(comment))
    assert code == 1 and verdict["total"] == 4
    assert [p["check"] for p in verdict["penalties"]] == ["smoke", "smoke"]
    visible, hidden = verdict["cases"]
    assert visible["status"] == "failed" and "5" in visible["detail"] and "6" in visible["detail"]
    assert hidden["status"] == "failed" and "42" not in hidden["detail"] and "80" not in hidden["detail"]
    page = cmarkgfm.github_flavored_markdown_to_html(comment.read_text(), options=Options.CMARK_OPT_UNSAFE)
    # Each case's one-line detail is in the penalty table (so no fold repeats it); no hidden value anywhere.
    assert "failed: expected int 5, got int 6" in page and "hidden case 1 failed: a wrong value" in page
    # Commit SHAs (the header names the head) may hold any digits: read the page without them.
    words = re.sub(r"[0-9a-f]{7,40}", "", page)
    assert "42" not in words and "80" not in words


def test_a_forbidden_import_added_to_an_old_file_counts_only_that_line(repo: Repo) -> None:
    repo.commit("bot: os", {"util.py": "import os\n" + UTIL})
    code, verdict = check(repo)
    assert code == 1 and verdict["total"] == 3
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "os" in penalty["message"]
    assert "subprocess" not in penalty["message"]  # already in the base: not this change's doing
    assert penalty["locations"] == [{"path": "util.py", "line": 1, "column": None}]


@pytest.mark.parametrize("where", ["base", "info", "user"])
def test_attributes_that_call_every_file_binary_do_not_hide_added_imports(
        repo: Repo, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `* -diff` makes git show a modified file as "Binary files differ": no added line, so `scope: added`
    # saw no import at all. Whether the attributes come from a committed .gitattributes (the checkout is the
    # head, so git reads the head's), from .git/info/attributes or from the user's own attributes file, the
    # diff is read as text.
    if where == "user":
        (tmp_path / "attributes").write_text("* -diff\n")
        (tmp_path / "gitconfig").write_text(f"[core]\n\tattributesFile = {tmp_path / 'attributes'}\n")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    elif where == "base":
        repo.git("checkout", "-q", "main")
        repo.commit("attributes", {".gitattributes": "* -diff\n"})
        repo.git("checkout", "-q", "bot")
        repo.git("rebase", "-q", "main")
    else:
        (repo.root / ".git" / "info").mkdir(exist_ok=True)
        (repo.root / ".git" / "info" / "attributes").write_text("* -diff\n")
    repo.commit("bot: helpers", {"util.py": UTIL + "\nimport socket\nX = eval('1')\n"})
    code, verdict = check(repo)
    assert code == 1
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "socket" in penalty["message"] and "eval" in penalty["message"]
    assert "subprocess" not in penalty["message"]  # the base's import still does not count
    assert not verdict["blocked_reasons"]  # attributes the bot did not write are not its doing


def test_a_file_where_the_base_had_a_submodule_counts_whole(repo: Repo) -> None:
    # The submodule's commit is another repository's: the file's own diff against it ("bad object") stopped the
    # gate with exit 3, no verdict. All of the file counts, as all of an added file does.
    repo.git("checkout", "-q", "main")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendored.py")
    repo.commit("vendor")
    repo.git("checkout", "-q", "-B", "bot")
    repo.git("rm", "-q", "--cached", "vendored.py")
    repo.commit("bot: inline it", {"vendored.py": "import json\nimport socket\n"})
    code, verdict = check(repo)
    assert code == 1
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "vendored.py:2" in penalty["message"], penalty


def test_a_copy_of_the_hidden_cases_under_another_name_stays_out_of_the_export(repo: Repo) -> None:
    # The export withheld the hidden cases' file by its path only: the head committed its bytes again as
    # fixtures/data.yml, and its code read the expected value there (accepted, the hidden case passed).
    reader = ("import pathlib\nimport re\n\n\ndef add(a, b):\n"
              "    data = pathlib.Path(__file__).parent / 'fixtures' / 'data.yml'\n"
              "    text = data.read_text() if data.exists() else ''\n"
              "    if f'args: [{a}, {b}]' in text:\n"
              "        return int(re.search(r'expect: (\\d+)', text).group(1))\n"
              "    return a + b if (a, b) == (2, 3) else a * b\n")
    repo.commit("bot: add", {"calc.py": reader, "fixtures/data.yml": HIDDEN})
    code, verdict = check(repo)
    assert code == 1
    assert [(c["name"], c["status"]) for c in verdict["cases"]] == [("adds", "passed"), ("hidden case 1", "failed")]
    assert "fixtures/data.yml (a copy of a file withheld from the runs)" in verdict["facts"]["not exported"]


def test_an_empty_hidden_cases_file_withholds_no_other_empty_file(repo: Repo) -> None:
    # An empty file's blob is every empty file's: withheld as a copy of the hidden cases, a package's empty
    # marker would have gone from the export with them.
    repo.git("checkout", "-q", "main")
    repo.commit("no hidden cases yet", {".github/gate-hidden.yml": ""})
    repo.git("checkout", "-q", "-B", "bot")
    reader = "import pathlib\n\n\ndef add(a, b):\n    (pathlib.Path(__file__).parent / 'marker').read_text()\n" \
             "    return a + b\n"
    repo.commit("bot: add", {"calc.py": reader, "marker": ""})
    code, verdict = check(repo)
    assert code == 0, verdict["cases"]
    assert "not exported" not in verdict["facts"]


def _tree(repo: Repo, entries: list[tuple[str, bytes, str]]) -> str:
    """A tree object of exactly `entries` (mode, name, object), as git would never write one itself."""
    raw = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)
    return subprocess.run(["git", "hash-object", "-w", "--literally", "-t", "tree", "--stdin"], cwd=repo.root,
                          input=raw, capture_output=True, check=True).stdout.decode().strip()


@pytest.mark.parametrize("how", ["names not UTF-8", "a tree that lists a name twice"])
def test_two_files_that_read_as_one_name_go_to_a_human(repo: Repo, how: str) -> None:
    # The checks keep a file's syntax tree by its name: two files read as one name (U+FFFD for the bytes that
    # are not UTF-8, or one name listed twice in a crafted tree) had one checked in the other's place, and its
    # `import socket` was never seen (accepted).
    if how == "names not UTF-8":
        for byte, text in ((b"\xfe", b"import socket\n"), (b"\xff", b"X = 1\n")):
            with open(bytes(repo.root) + b"/a" + byte + b".py", "wb") as file:
                file.write(text)
        repo.git("add", "-A")
        head = repo.commit("bot: two helpers")
        named = "a\ufffd.py"
    else:
        base = repo.git("rev-parse", "main")
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=b"import socket\n",
                              capture_output=True, check=True).stdout.decode().strip()
        listed = {line.split("\t")[1]: line.split()[:3] for line in repo.git("ls-tree", base).splitlines()}
        entries = [(mode.lstrip("0"), name.encode(), sha) for name, (mode, _, sha) in sorted(listed.items())]
        at = next(n for n, entry in enumerate(entries) if entry[1] == b"util.py")
        entries.insert(at, ("100644", b"util.py", blob))
        head = repo.git("commit-tree", "-p", base, "-m", "bot", _tree(repo, entries))
        named = "util.py"
    code, verdict = check(repo, "--base", "main", "--head", head)
    assert code == 1, verdict
    assert any(f"two files named {named}" in reason for reason in verdict["blocked_reasons"]), verdict


@pytest.mark.parametrize("kind", ["symbolic link", "submodule"])
def test_a_link_or_a_submodule_the_change_adds_goes_to_a_human(repo: Repo, kind: str) -> None:
    # A link `evil.py` to a file the policy does not gate (assets/evil.txt) ran code nothing scored wherever
    # `import evil` ran after the merge; the gate left the link out and accepted the change.
    if kind == "symbolic link":
        repo.commit("bot: assets", {"assets/evil.txt": "import socket\n\n\ndef run():\n    return socket\n"})
        (repo.root / "evil.py").symlink_to("assets/evil.txt")
        repo.git("add", "evil.py")
    else:
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},evil")
    repo.commit("bot: helpers", {"calc.py": CALC + "\n\ndef shell():\n    from evil import run\n    return run()\n"})
    code, verdict = check(repo)
    assert code == 1, verdict
    assert any(f"adds evil{'.py' if kind == 'symbolic link' else ''}, a symbolic link or a submodule" in reason
               for reason in verdict["blocked_reasons"]), verdict["blocked_reasons"]


@pytest.mark.parametrize(("coding", "body"), [
    ("unicode_escape", b"import json\\nimport socket\\n"),
    ("raw_unicode_escape", b"import json\\u000aimport socket\\u000a"),
    ("utf-7", b"import json+AAo-import socket+AAo-"),
])
def test_a_codec_whose_line_breaks_are_not_gits_counts_the_whole_file(repo: Repo, coding: str, body: bytes) -> None:
    # Python decodes `\n` (or `\u000a`, `+AAo-`) as a line break under these codecs, where git sees none: the
    # import sat on a Python line no added git line was numbered, and `scope: added` let it through.
    data = f"# coding: {coding}\n".encode() + body + b"\n"
    assert any(isinstance(node, ast.Import) and node.names[0].name == "socket" for node in ast.parse(data).body)
    repo.git("checkout", "-q", "main")
    repo.commit("coded", {"util.py": f"# coding: {coding}\n" + UTIL})
    repo.git("checkout", "-q", "-B", "bot")
    (repo.root / "util.py").write_bytes(data)
    repo.git("add", "util.py")
    repo.commit("bot: helpers")
    code, verdict = check(repo)
    assert code == 1
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "socket" in penalty["message"], penalty


@pytest.mark.parametrize(("coding", "words"), [("latin-1", "caf\u00e9"), ("cp1252", "\u20ac 5"),
                                            ("shift_jis", "\u65e5\u672c")])
def test_a_codec_that_keeps_gits_lines_counts_only_the_added_ones(repo: Repo, coding: str, words: str) -> None:
    old = f"# coding: {coding}\n# {words}\n" + UTIL  # (its `import subprocess` is the base's)
    repo.git("checkout", "-q", "main")
    (repo.root / "util.py").write_bytes(old.encode(coding))
    repo.git("add", "util.py")
    repo.commit("coded")
    repo.git("checkout", "-q", "-B", "bot")
    (repo.root / "util.py").write_bytes((old + "\nimport socket\n").encode(coding))
    repo.git("add", "util.py")
    repo.commit("bot: helpers")
    code, verdict = check(repo)
    assert code == 1
    [penalty] = verdict["penalties"]
    assert "socket" in penalty["message"] and "subprocess" not in penalty["message"], penalty


@pytest.mark.parametrize("coding", ["rot13", "base64", "undefined"])
def test_a_codec_that_is_no_text_encoding_costs_the_parse_check(repo: Repo, coding: str) -> None:
    # Python refuses such a file ("'rot13' is not a text encoding"); the gate stopped with an internal error
    # (exit 3), no verdict.
    repo.commit("bot: helpers", {"util.py": f"# coding: {coding}\nimport socket\n"})
    code, verdict = check(repo)
    assert code == 1, verdict
    [penalty] = [each for each in verdict["penalties"] if each["check"] == "parse"]
    assert coding in penalty["message"] and "util.py:1" in penalty["message"], penalty


@pytest.mark.parametrize("swap", ["replace the head", "graft the base", "replace the base"])
def test_git_reads_the_commits_as_they_are_not_as_replace_refs_or_grafts_say(repo: Repo, swap: str) -> None:
    # `git replace` and .git/info/grafts make git show other objects than a commit's own: the gate scored a
    # harmless commit in the head's place (accepted, the head's SHA in the verdict), took a base grafted onto
    # the bot's first commit (whose import was then no part of the range), or read a policy of budget 100 that
    # is not the base's.
    base = repo.git("rev-parse", "main")
    head = repo.commit("bot: helpers", {"util.py": UTIL + "\nimport socket\n"})
    if swap == "replace the head":
        repo.git("checkout", "-q", "-b", "decoy", "main")
        repo.git("replace", head, repo.commit("decoy", {"util.py": UTIL + "\n# nothing to see\n"}))
    elif swap == "graft the base":
        (repo.root / ".git" / "info").mkdir(exist_ok=True)
        (repo.root / ".git" / "info" / "grafts").write_text(f"{base} {head}\n")
        head = repo.commit("bot: more", {"calc.py": CALC + "\n# more\n"})
    else:
        repo.git("checkout", "-q", "--orphan", "lenient")
        repo.git("rm", "-rqf", "--cached", ".")
        lenient = repo.commit("lenient", {".github/gate.yml": "budget: 100\n", "calc.py": CALC, "util.py": UTIL})
        repo.git("checkout", "-qf", "bot")
        repo.git("replace", "-f", base, lenient)
    code, verdict = check(repo, "--base", base, "--head", head)
    assert code == 1 and verdict["budget"] == 1, verdict
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "socket" in penalty["message"], penalty


def test_a_name_too_long_for_the_file_system_is_left_out_of_the_export_and_said(repo: Repo) -> None:
    # Git keeps a name of any length; the export could not write one over the file system's limit, and the gate
    # stopped with an internal error (exit 3), no verdict. No checkout would have the file either.
    name = "n" * 300 + ".txt"
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=b"data\n",
                          capture_output=True, check=True).stdout.decode().strip()
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{name}")
    repo.commit("bot: data", {"calc.py": CALC + "\nY = 2\n"})
    code, verdict = check(repo)
    assert code == 0, verdict
    assert f"{name} (its name is too long for the file system)" in verdict["facts"]["not exported"]


def test_git_warnings_by_the_thousand_do_not_hold_the_gate(repo: Repo, tmp_path: Path) -> None:
    # Each line of the checkout's .gitattributes that git cannot use makes it warn as it diffs: a bot's file of
    # a thousand such lines wrote some 200 KB on git's standard error, more than a pipe holds, and git waited
    # for them to be read while the gate read its patch: the gate hung, with no verdict.
    repo.commit("bot: helpers", {".gitattributes": "".join(f"!x{n} diff\n" for n in range(1000)),
                                 "util.py": UTIL + "\nimport socket\n"})
    out = tmp_path / "verdict.json"
    done = subprocess.run([sys.executable, "-m", "gate", "check", "--repo", str(repo.root), "--json", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    verdict = json.loads(out.read_text())
    assert any("adds the git attributes file .gitattributes" in r for r in verdict["blocked_reasons"])
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "util.py:8" in penalty["message"], penalty


@pytest.mark.parametrize("line", ["X = 1\rimport socket", "X = 1  # \x1c\nimport socket",
                                  "X = 1  # \u2028\nimport socket", "X = 1  # \x0c\nimport socket"],
                         ids=["lone CR", "U+001C", "U+2028", "form feed"])
def test_an_import_after_an_odd_line_end_on_an_added_line_counts(repo: Repo, line: str) -> None:
    # Git ends a line at LF only; Python's parser also at a lone CR, and str.splitlines also at U+001C, U+2028
    # or a form feed. Either mismatch moved the added import onto the number of a line the change kept.
    repo.commit("bot: helpers", {"util.py": UTIL.replace("import json\n", f"import json\n{line}\n")})
    code, verdict = check(repo)
    assert code == 1
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "socket" in penalty["message"]
    assert "subprocess" not in penalty["message"]


@pytest.mark.parametrize("path", [".gitattributes", "pkg/.gitattributes"])
def test_a_change_to_git_attributes_is_blocked_for_a_human_and_hides_nothing(repo: Repo, path: str) -> None:
    # `import subprocess, socket` plus `eval` went from blocked to 0 points behind a `* -diff` the bot added.
    repo.commit("bot: helpers", {path: "* -diff\n", "util.py": UTIL + "\nimport socket\nX = eval('1')\n"})
    code, verdict = check(repo)
    assert code == 1 and not verdict["accepted"]
    [reason] = verdict["blocked_reasons"]
    assert f"adds the git attributes file {path}, which is read from the base commit" in reason
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "socket" in penalty["message"] and "eval" in penalty["message"]


def test_added_lines_are_those_the_range_adds(repo: Repo) -> None:
    base = repo.git("rev-parse", "main")
    changed = UTIL.replace("import json\n", "import json\nimport os\n") + "X = 1\n"
    head = repo.commit("bot", {"util.py": changed})
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        [util] = found.subject.files
    assert util.path == "util.py" and util.status == "modified" and util.added_lines == frozenset({2, 8})


def test_editing_the_policy_is_blocked_whatever_the_score_and_the_base_policy_applies(repo: Repo) -> None:
    repo.commit("bot: loosen", {".github/gate.yml": "budget: 100\n",
                                "calc.py": CALC + "\n\ndef sub(a, b):\n    return a - b\n"})
    code, verdict = check(repo)
    assert code == 1 and not verdict["accepted"] and verdict["total"] == 0
    assert verdict["budget"] == 1  # the base's policy, not the bot's
    [reason] = verdict["blocked_reasons"]
    assert "edits the policy file .github/gate.yml" in reason


def test_editing_the_hidden_cases_is_blocked(repo: Repo) -> None:
    repo.commit("bot: hide", {".github/gate-hidden.yml": None, "calc.py": CALC + "# tidy\n"})
    code, verdict = check(repo)
    assert code == 1 and verdict["total"] == 0
    assert any("deletes the hidden cases file" in r for r in verdict["blocked_reasons"])


def test_editing_the_report_templates_is_blocked(repo: Repo) -> None:
    repo.commit("bot: quieter report", {".github/gate/templates/comment.md.j2": "all good\n",
                                        "calc.py": CALC + "# tidy\n"})
    code, verdict = check(repo)
    assert code == 1
    assert any("the report templates .github/gate/templates/" in r for r in verdict["blocked_reasons"])


def test_the_judge_rubric_comes_from_the_base_and_editing_it_is_blocked(repo: Repo) -> None:
    repo.git("checkout", "-q", "main")
    base = repo.commit("rubric", {".github/gate.yml": POLICY + "judge:\n  rubric_file: .github/rubric.md\n",
                                  ".github/rubric.md": "Reject global state.\n"})
    repo.git("checkout", "-q", "-b", "bot2")
    head = repo.commit("bot: soften rubric", {".github/rubric.md": "Accept everything.\n"})
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        assert found.subject.judge_rubric == "Reject global state.\n"
        assert any("the judge's rubric file .github/rubric.md" in r for r in found.subject.blocked_reasons)


def test_a_deleted_file_is_not_scored(repo: Repo) -> None:
    base = repo.git("rev-parse", "main")
    head = repo.commit("bot: drop util", {"util.py": None, "calc.py": CALC + "# tidy\n"})
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        assert [f.path for f in found.subject.files] == ["calc.py"]
        assert not (found.subject.tree / "util.py").exists()  # type: ignore[operator]
    code, verdict = check(repo)
    assert code == 0 and verdict["total"] == 0


def test_a_renamed_file_is_scored_at_its_new_path_with_only_its_new_lines(repo: Repo) -> None:
    base = repo.git("rev-parse", "main")
    repo.git("mv", "util.py", "lib_util.py")
    head = repo.commit("bot: rename", {"lib_util.py": UTIL + "\n\ndef load(s):\n    return json.loads(s)\n"})
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        [moved] = found.subject.files
    assert (moved.path, moved.status, moved.old_path) == ("lib_util.py", "renamed", "util.py")
    assert moved.added_lines == frozenset({7, 8, 9, 10})
    code, verdict = check(repo)
    assert code == 0 and verdict["total"] == 0  # its old `import subprocess` is not added by the rename


def test_policy_and_templates_come_from_the_base_not_the_worktree_or_head(repo: Repo) -> None:
    repo.commit("bot: template", {".github/gate/templates/comment.md.j2": "all good!\n",
                                  "calc.py": CALC + "# tidy\n"})
    repo.write(".github/gate.yml", "budget: 100\n")  # uncommitted
    base, head = repo.git("rev-parse", "main"), repo.git("rev-parse", "HEAD")
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        assert found.policy.budget == 1
        assert found.overrides.sources == {}
    with subject_from_range(repo.root) as found:
        assert dict(found.subject.facts)["worktree"].startswith("has uncommitted changes")


@pytest.mark.parametrize("change", ["none", "staged", "untracked"])
def test_a_staged_or_untracked_file_is_an_uncommitted_change_too(repo: Repo, change: str) -> None:
    repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    if change != "none":
        (repo.root / "new.py").write_text("x = 1\n")
    if change == "staged":
        repo.git("add", "new.py")
    with subject_from_range(repo.root) as found:
        facts = dict(found.subject.facts)
    assert ("worktree" in facts) == (change != "none")


def test_cases_run_against_a_clean_export_of_the_head_tree(repo: Repo) -> None:
    repo.commit("bot", {"calc.py": CALC + "# head version\n", "pkg/data.txt": "x\n"})
    (repo.root / "calc.py").write_text("# dirty worktree version\n")
    (repo.root / "untracked.py").write_text("x = 1\n")
    (repo.root / "link.py").symlink_to("/etc/passwd")
    repo.git("add", "link.py")
    head = repo.commit("bot: link")
    with subject_from_commits(gitcli.Repo(repo.root), repo.git("rev-parse", "main"), head) as found:
        tree = found.subject.tree
        assert tree is not None and tree.resolve() != repo.root.resolve()
        assert (tree / "calc.py").read_text().endswith("# head version\n")
        assert (tree / "pkg/data.txt").exists() and (tree / ".github/gate.yml").exists()
        assert not (tree / ".github/gate-hidden.yml").exists()  # the candidate runs here: no expected values
        assert not (tree / ".git").exists() and not (tree / "untracked.py").exists()
        assert not (tree / "link.py").exists() and not (tree / "link.py").is_symlink()
        assert dict(found.subject.facts)["not exported"] == "link.py"
    assert not tree.exists()  # removed with the context


def test_the_base_defaults_to_the_merge_base_with_main(repo: Repo) -> None:
    fork = repo.git("rev-parse", "main")
    repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main moves on", {"README.md": "# moved\n"})
    repo.git("checkout", "-q", "bot")
    with subject_from_range(repo.root) as found:
        assert dict(found.subject.facts)["base"] == fork
        assert [f.path for f in found.subject.files] == ["calc.py"]  # not main's README change


def test_the_base_falls_back_to_master_then_origin_head(tmp_path: Path) -> None:
    upstream = Repo(tmp_path / "upstream")
    fork = upstream.commit("base", {"calc.py": CALC})
    upstream.git("branch", "-m", "main", "trunk")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream.root), str(clone)], check=True)
    repo = git.Repo(clone)
    repo.git.config("user.name", "Bot")
    repo.git.config("user.email", "bot@example.com")
    repo.git.checkout("-q", "-b", "bot")
    (clone / "calc.py").write_text(CALC + "# tidy\n")
    repo.git.commit("-q", "-am", "bot")
    with subject_from_range(clone) as found:  # no main, no master: origin/HEAD (trunk)
        assert dict(found.subject.facts)["base"] == fork
    repo.git.branch("master", "bot")  # master, tried before origin/HEAD, already has the bot's commit
    with pytest.raises(BadInput, match="has no commits that the base"):
        subject_from_range(clone).__enter__()


def test_the_same_commits_give_the_same_verdict_as_the_pr_path(repo: Repo) -> None:
    repo.git("remote", "add", "origin", "https://x-access-token:SECRET@github.com/octo/widgets.git")
    repo.commit("bot: os", {"util.py": "import os\n" + UTIL})
    base, head = repo.git("rev-parse", "main"), repo.git("rev-parse", "HEAD")
    _, local = check(repo, "--base", "main", "--head", "bot")
    with subject_from_commits(gitcli.Repo(repo.root), base, head,
                              repo_url="https://github.com/octo/widgets") as found:
        pr = score(found).to_dict()
    for verdict in (local, pr):
        verdict.pop("timings")
        for check_report in verdict["checks"]:
            check_report.pop("seconds")
        for case in verdict["cases"]:
            case.pop("seconds")
    assert json.dumps(local, indent=2) == json.dumps(pr, indent=2)
    assert local["reproduce"] == f"gate check --base {base} --head {head}"
    assert dict(local["facts"])["repo"] == "https://github.com/octo/widgets"  # no credentials
    assert "SECRET" not in json.dumps(local)


def test_file_names_with_odd_characters_survive(repo: Repo) -> None:
    name = "we ird\tname ü\n.py"
    base = repo.git("rev-parse", "main")
    head = repo.commit("bot", {name: "import os\n"})
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        assert [f.path for f in found.subject.files] == [name]


def test_python_files_are_decoded_as_python_decodes_them(repo: Repo) -> None:
    base = repo.git("rev-parse", "main")
    for name, data in {"bom.py": b"\xef\xbb\xbfx = 1\n",  # a Windows editor's BOM: valid Python
                       "cookie.py": b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n",  # declared: valid
                       "late.py": b"x = 1\n\ny = 'caf\xe9'\n"}.items():  # not UTF-8, not declared
        (repo.root / name).write_bytes(data)
        repo.git("add", name)
    head = repo.commit("bot")
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        texts = {f.path: f.text for f in found.subject.files}
        verdict = score(found)
    assert texts["bom.py"] == "x = 1\n" and texts["cookie.py"].endswith("x = 'caf\xe9'\n")
    [parse] = [p for p in verdict.penalties if p.check == "parse"]
    assert parse.message == ("does not parse: late.py:3: not valid utf-8 text: byte 0xe9 at offset 15 "
                             "(Python 3.11)")
    assert [str(loc) for loc in parse.locations] == ["late.py:3"]


def test_bad_refs_and_paths_are_clear_errors(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    assert main(["check", "--repo", str(repo.root), "--base", "nope"]) == 2
    assert "--base: unknown revision 'nope'" in capsys.readouterr().err
    assert main(["check", "--repo", str(repo.root.parent)]) == 2
    assert "not a git repository" in capsys.readouterr().err
    assert main(["check", "--repo", str(repo.root), "--policy", "missing.yml"]) == 2
    assert "--policy: no policy file at missing.yml in the base commit" in capsys.readouterr().err
    with pytest.raises(BadInput):
        subject_from_range(repo.root, "main", "no-such-branch").__enter__()


def test_refs_are_read_as_git_reads_them(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    repo.git("tag", "-a", "-m", "release", "v1", "main")
    with subject_from_range(repo.root, "@{-1}", "HEAD") as found:  # the branch checked out before: main
        assert dict(found.subject.facts)["base"] == repo.git("rev-parse", "main")
    with subject_from_range(repo.root, "v1", "HEAD^{/bot}") as found:  # an annotated tag; a message search
        assert [f.path for f in found.subject.files] == ["calc.py"]
    for ref in ("HEAD@{100}", "HEAD^{tree}", "HEAD:calc.py", "--output=x"):
        assert main(["check", "--repo", str(repo.root), f"--base={ref}"]) == 2
        assert capsys.readouterr().err == f"gate: error: --base: unknown revision {ref!r} in {repo.root}\n"


def test_a_linked_worktree_is_read_from_a_subfolder_and_hides_both_git_folders(repo: Repo, tmp_path: Path) -> None:
    # `git worktree add` leaves a `.git` file naming the worktree's own git folder inside the main repository's.
    repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", "--detach", str(linked), "bot")
    (linked / "pkg").mkdir()
    with subject_from_range(linked / "pkg", "main", "HEAD") as found:
        assert [f.path for f in found.subject.files] == ["calc.py"]
        assert dict(found.subject.facts)["head"] == repo.git("rev-parse", "bot")
        # What the sandbox hides: the checkout, its git folder and the main repository's, which holds them.
        assert set(found.private) == {str(linked), str(repo.root / ".git" / "worktrees" / "linked"),
                                      str(repo.root / ".git")}


@pytest.mark.parametrize(("policy", "error"), [
    (b"budget: lots\n", ":1: budget: expected an integer, got the string 'lots'"),
    (POLICY.encode() + b"# caf\xe9\n", f":7: not UTF-8 text (byte 0xe9 at offset {len(POLICY) + 5})"),
], ids=["wrong-type", "not-utf8"])
def test_a_broken_base_policy_is_a_clear_error(repo: Repo, capsys: pytest.CaptureFixture[str], policy: bytes,
                                               error: str) -> None:
    repo.git("checkout", "-q", "main")
    (repo.root / ".github" / "gate.yml").write_bytes(policy)
    repo.git("commit", "-q", "-am", "broken policy")
    repo.git("checkout", "-q", "bot")
    repo.git("merge", "-q", "main")
    repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    assert main(["check", "--repo", str(repo.root), "--base", "main"]) == 2
    sha = repo.git("rev-parse", "main")[:12]
    assert capsys.readouterr().err == f"gate: error: .github/gate.yml@{sha}{error}\n"


def test_comment_summary_and_annotations_outputs(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("bot: os", {"util.py": "import os\n" + UTIL})
    comment, summary = repo.root.parent / "comment.md", repo.root.parent / "summary.md"
    code = main(["check", "--repo", str(repo.root), "--comment", str(comment), "--summary", str(summary),
                 "--annotations"])
    assert code == 1
    first = comment.read_text().splitlines()[0]
    assert first.startswith("❌ **gate: blocked** at `") and first.endswith(": 3 points against a budget of 1")
    assert "<!-- gate:report -->" in comment.read_text() and "<!-- gate:report -->" not in summary.read_text()
    out = capsys.readouterr().out
    assert "::error file=util.py,line=1,title=gate imports%3A +3 points::" in out


def test_an_empty_range_is_a_usage_error(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--repo", str(repo.root)]) == 2  # the bot branch has no commits yet
    assert "nothing to check" in capsys.readouterr().err


@pytest.mark.parametrize("remote", [
    "https://github.com/octo/widgets.git",
    "https://x-access-token:ghs_secret@github.com/octo/widgets",
    "git@github.com:octo/widgets.git",
    "ssh://git@github.com/octo/widgets.git",
])
def test_the_repository_url_comes_from_origin_without_credentials(repo: Repo, remote: str) -> None:
    repo.git("remote", "add", "origin", remote)
    head = repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    with subject_from_commits(gitcli.Repo(repo.root), repo.git("rev-parse", "main"), head) as found:
        assert dict(found.subject.facts)["repo"] == "https://github.com/octo/widgets"


def test_a_local_remote_gives_no_links(repo: Repo, tmp_path: Path) -> None:
    repo.git("remote", "add", "origin", str(tmp_path / "elsewhere"))
    head = repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    with subject_from_commits(gitcli.Repo(repo.root), repo.git("rev-parse", "main"), head) as found:
        assert "repo" not in dict(found.subject.facts)


def test_an_explicit_policy_path_is_read_from_the_base_and_guarded(repo: Repo) -> None:
    repo.git("checkout", "-q", "main")
    repo.commit("strict policy", {"ci/strict.yml": "budget: 0\n"})
    repo.git("checkout", "-q", "bot")
    repo.git("merge", "-q", "main")
    head = repo.commit("bot: loosen", {"ci/strict.yml": "budget: 9\n", "calc.py": CALC + "# tidy\n"})
    base = repo.git("rev-parse", "main")
    with subject_from_commits(gitcli.Repo(repo.root), base, head, policy_path="./ci//strict.yml") as found:
        assert found.policy.budget == 0 and found.policy.source == f"ci/strict.yml@{base[:12]}"
        assert any("ci/strict.yml" in r for r in found.subject.blocked_reasons)
        assert found.reproduce.endswith("--policy ci/strict.yml")
    with pytest.raises(BadInput, match="inside the repository"):
        subject_from_commits(gitcli.Repo(repo.root), base, head, policy_path="../x.yml").__enter__()


def test_a_base_without_a_policy_uses_the_default_preset_and_says_so(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "bare-policy")
    base = repo.commit("base", {"calc.py": CALC})
    head = repo.commit("bot", {"calc.py": CALC + "# tidy\n"})
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        assert found.policy.source.startswith("default preset (no .github/gate.yml in the base commit")
        assert found.subject.tree is None  # no cases: nothing to export


def test_the_bundled_demo_runs_offline_and_prints_both_reports() -> None:
    demo = Path(__file__).resolve().parent.parent / "examples" / "demo.py"
    done = subprocess.run([sys.executable, str(demo)], capture_output=True, text=True, check=True)
    assert "gate check --repo" in done.stdout and "budget 3" in done.stdout
    assert "**gate: " in done.stdout and "<!-- gate:report -->" in done.stdout
    assert "calc.py:1" in done.stdout  # the bot's `import os`


def test_json_on_stdout_is_only_the_verdict(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("bot: os", {"util.py": "import os\n" + UTIL})
    assert main(["check", "--repo", str(repo.root), "--json", "-"]) == 1
    captured = capsys.readouterr()
    verdict = Verdict.from_dict(json.loads(captured.out))  # validates against the schema
    assert verdict.total == 3 and "BLOCKED" in captured.err


def test_template_overrides_from_the_base_commit_shape_the_comment(repo: Repo) -> None:
    repo.git("checkout", "-q", "main")
    repo.commit("our comment", {".github/gate/templates/comment.md.j2": "{{ status }}: {{ headline }}\n"})
    repo.git("checkout", "-q", "bot")
    repo.git("merge", "-q", "main")
    repo.commit("bot: os", {"util.py": "import os\n" + UTIL})
    comment = repo.root.parent / "comment.md"
    check(repo, "--base", "main", "--comment", str(comment))
    assert comment.read_text() == "blocked: 3 points against a budget of 1\n<!-- gate:report -->\n"


def test_without_git_only_gate_check_stops_and_says_why(repo: Repo, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with Python and no git
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    policy = subprocess.run([sys.executable, "-m", "gate", "policy", "check", ".github/gate.yml"], cwd=repo.root,
                            env=env, capture_output=True, text=True, check=False)
    assert (policy.returncode, policy.stderr) == (0, "")
    done = subprocess.run([sys.executable, "-m", "gate", "check"], cwd=repo.root, env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 3
    assert done.stderr == "gate: error: git is not installed (or not on PATH); gate check reads the range with it\n"


def test_a_hidden_path_written_with_dot_slash_is_the_same_file(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "dotted")
    policy = POLICY + "hidden:\n  path: ./.github//gate-hidden.yml\n"
    base = repo.commit("base", {".github/gate.yml": policy, ".github/gate-hidden.yml": HIDDEN, "calc.py": CALC})
    head = repo.commit("bot", {".github/gate-hidden.yml": HIDDEN + "# easier\n", "calc.py": CALC + "# tidy\n"})
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        assert found.policy.hidden.path == ".github/gate-hidden.yml"
        assert [c.name for c in found.subject.hidden_cases] == ["secret sum"]  # read from the base commit
        assert found.subject.tree is not None
        assert not (found.subject.tree / ".github" / "gate-hidden.yml").exists()  # never where code runs
        assert any("hidden cases file .github/gate-hidden.yml" in r for r in found.subject.blocked_reasons)


def _lines(count: int, tag: str) -> str:
    return "".join(f"{tag} {n}\n" for n in range(count))


@pytest.mark.parametrize("piece", [None, 7], ids=["whole lines", "7-byte pieces"])
def test_the_added_lines_of_every_file_come_from_one_diff_of_the_range(repo: Repo, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         piece: int | None) -> None:
    # Many modified files, a renamed and edited one, names git writes as they are (spaces, accents) and names
    # it quotes in a patch's header (a quote, a tab): each must get exactly its own added lines. The patch is
    # read a piece of a line at a time (a binary's line can be megabytes): with pieces shorter than every
    # line, headers are still read whole and the rest of a line never taken for a header or a hunk.
    if piece is not None:
        monkeypatch.setattr(gitrange, "_PIECE", piece)
    names = [f"pkg/m{n:02d}.py" for n in range(30)] + ["with space.py", "acc\u00e9nt.py", 'quo"te.py',
                                                     "tab\there.py", "old name.py"]
    repo.commit("more", {name: _lines(40, name) for name in names})
    repo.git("mv", "old name.py", "new name.py")
    edited: dict[str, str | None] = {
        name: _lines(40, name).replace(f"{name} 7\n", "changed\n").replace(f"{name} 30\n", "x\ny\n")
        for name in names if name != "old name.py"}
    edited["new name.py"] = _lines(40, "old name.py").replace("old name.py 3\n", "moved and changed\n")
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("bot: edits", edited)
    trace = tmp_path / "git-trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    git_repo = gitcli.Repo(repo.root)
    changes = {c.path: c for c in git_changes(git_repo, git_repo.commit(base), git_repo.commit(head))}
    assert set(changes) == {*edited}
    for name in edited:
        if name == "new name.py":
            assert (changes[name].status, changes[name].added_lines) == ("renamed", frozenset({4}))
        else:
            assert changes[name].added_lines == frozenset({8, 31, 32}), name
    # One diff for the range, one for the listing, and one of their own for the two names git quotes.
    diffs = [line for line in trace.read_text().splitlines() if "git diff" in line or "'diff'" in line]
    assert len(diffs) == 4, diffs


def _limited(memory_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    return apply


def test_a_21_mb_gated_file_is_not_parsed_and_costs_parse_points(repo: Repo, tmp_path: Path) -> None:
    # 21 MB of Python (about 40 KB in git) took about 8 GB in ast.parse inside the gate, which was OOM-killed
    # and posted nothing. Under a 2 GiB address-space limit the gate must still give its verdict.
    repo.commit("bot: data", {"table.py": "x = 1\n" * 3_500_000, "calc.py": CALC + "\nY = 2\n"})
    out = tmp_path / "verdict.json"
    done = subprocess.run([sys.executable, "-m", "gate", "check", "--repo", str(repo.root), "--json", str(out)],
                          capture_output=True, text=True, timeout=300, check=False,
                          preexec_fn=_limited(2 * 1024**3))
    assert done.returncode == 1, done.stderr
    verdict = json.loads(out.read_text())
    [penalty] = [p for p in verdict["penalties"] if p["check"] == "parse"]
    assert "table.py: 20508 KiB, over paths.max_file_kb (1024): not parsed" in penalty["message"]


_HUGE = "x = 1\n" * 3_500_000  # 21 MB of Python: about 8 GB to parse, more than a hosted runner has


@pytest.mark.parametrize(("policy", "head", "charged"), [
    # The base's case names a module only the head has: the gate reads it to check that the case can run.
    (POLICY.replace('"calc:add"', '"big:f"', 1), {"big.py": _HUGE + "\n\ndef f(a, b):\n    return a + b\n"},
     ["parse", "timeout"]),
    # The head's setup.py, which the gate reads for where the build maps its packages.
    (POLICY, {"setup.py": _HUGE + "setup(package_dir={'': 'lib'})\n"}, ["parse", "timeout"]),
], ids=["module-a-case-names", "setup-py"])
def test_a_huge_file_of_the_head_is_not_parsed_in_the_gates_own_process(tmp_path: Path, policy: str,
                                                                         head: dict[str, str | None],
                                                                         charged: list[str]) -> None:
    # Killed for its memory, the gate would post nothing.
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": policy, "calc.py": CALC})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot: big", head)
    out = tmp_path / "verdict.json"
    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(done.returncode)")
    done = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "gate", "check", "--repo",
                           str(repo.root), "--json", str(out)], capture_output=True, text=True, timeout=300,
                          check=False, preexec_fn=_limited(3 * 1024**3))
    assert done.returncode == 1, done.stderr
    peak_kib = int(done.stdout.split()[-1])  # the largest process the gate ran, itself included
    assert peak_kib < 512 * 1024, f"a process of the gate held {peak_kib // 1024} MiB"
    # The parse check charges the file it does not parse; the cases then do not run.
    assert [p["check"] for p in json.loads(out.read_text())["penalties"]] == charged


@pytest.mark.slow
@pytest.mark.parametrize("modified", [False, True], ids=["added", "modified"])
def test_a_large_binary_file_the_bot_commits_costs_the_gate_a_few_copies(repo: Repo, tmp_path: Path,
                                                                        modified: bool) -> None:
    # Agents commit data files. The range's patch was read whole, with every line of every file (`--text`): a
    # 60 MB binary the bot added took 0.75 GiB in the gate's process, one it changed 1.4 GiB (30 MB: 0.4 and
    # 0.7 GiB). An added file's lines all count, so it is not in the patch; of a changed file's patch only the
    # hunks' first lines are kept.
    if modified:
        repo.git("checkout", "-q", "main")
        (repo.root / "weights.bin").write_bytes(random.Random(6).randbytes(30_000_000))
        repo.git("add", "weights.bin")
        repo.commit("model")
        repo.git("checkout", "-q", "-B", "bot")
    (repo.root / "weights.bin").write_bytes(random.Random(7).randbytes(30_000_000))
    repo.git("add", "weights.bin")
    repo.commit("bot: model", {"calc.py": CALC + "\nY = 2\n"})
    out = tmp_path / "verdict.json"
    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(done.returncode)")
    done = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "gate", "check", "--repo",
                           str(repo.root), "--json", str(out)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    peak_kib = int(done.stdout.split()[-1])  # the largest process the gate ran, itself included
    # (A changed file's lines are renumbered as Python numbers them, and most of a random binary's change.)
    assert peak_kib < (448 if modified else 320) * 1024, f"a process of the gate held {peak_kib // 1024} MiB"
    assert json.loads(out.read_text())["accepted"]
    with subject_from_commits(gitcli.Repo(repo.root), repo.git("rev-parse", "main"), "HEAD") as found:
        by_path = {f.path: f for f in found.subject.files}
    assert by_path["calc.py"].added_lines == frozenset({3, 4})  # (a blank line, then Y)
    assert (by_path["weights.bin"].added_lines is None) != modified  # (an added file: all of it)


def test_the_export_holds_each_changed_file_as_the_head_has_it(repo: Repo) -> None:
    # The export takes the changed files' bytes the range already read, by name; a name that is not UTF-8 is
    # reported with U+FFFD, which another file's name may hold: each file must still get its own bytes.
    base = repo.git("rev-parse", "main")
    raw = repo.root.as_posix().encode() + b"/x\xff.py"
    with open(raw, "wb") as handle:
        handle.write(b"A = 1\n")
    (repo.root / "x\ufffd.py").write_bytes(b"B = 2\n")
    repo.git("add", "-A")
    head = repo.commit("bot: two names", {"calc.py": CALC + "\nC = 3\n"})
    with subject_from_commits(gitcli.Repo(repo.root), base, head) as found:
        tree = found.subject.tree
        assert tree is not None
        assert (tree / "x\ufffd.py").read_bytes() == b"B = 2\n"
        with open(tree.as_posix().encode() + b"/x\xff.py", "rb") as handle:
            assert handle.read() == b"A = 1\n"
        assert (tree / "calc.py").read_text() == CALC + "\nC = 3\n"


def test_a_module_a_case_names_that_is_not_utf8_gets_a_verdict(tmp_path: Path) -> None:
    # The base's case names a module only the head adds, and the bot's file holds a Latin-1 byte. The gate read
    # it as UTF-8 text to check the case's name, and stopped there with exit 2 ("not UTF-8 text"), as if the
    # maintainer's input were wrong: the file is the checks' to charge (Python refuses it, so the case cannot
    # import it either).
    code, verdict = _latin1(tmp_path, {".github/gate.yml": POLICY.replace('"calc:add"', '"geo:add"'),
                                       "calc.py": CALC}, "geo.py", CALC)
    assert code == 1
    [parse] = [p for p in verdict["penalties"] if p["check"] == "parse"]
    assert "geo.py:1: invalid or missing encoding declaration" in parse["message"], parse


def test_a_build_file_of_the_bots_that_is_not_utf8_gets_a_verdict(tmp_path: Path) -> None:
    # The gate reads the head's pyproject.toml for where the build maps its packages: a Latin-1 byte in the
    # bot's comment stopped it with exit 2 too. What the file means is the build's to judge.
    project = '[project]\nname = "demo"\nversion = "0.1"\n'
    code, verdict = _latin1(tmp_path, {".github/gate.yml": POLICY, "calc.py": CALC, "pyproject.toml": project},
                            "pyproject.toml", project)
    assert code == 0
    assert [case["status"] for case in verdict["cases"]] == ["passed"]


def _latin1(tmp_path: Path, base: dict[str, str | None], path: str, text: str) -> tuple[int, dict[str, Any]]:
    """A repository of `base`, then a bot's commit of `path` as `text` under a comment holding a Latin-1 byte:
    the gate's exit code and verdict ({} when it gave none)."""
    repo = Repo(tmp_path / "repo")
    repo.commit("base", base)
    repo.git("checkout", "-q", "-b", "bot")
    (repo.root / path).write_bytes(b"# caf\xe9\n" + text.encode())
    repo.git("add", path)
    repo.commit(f"bot: {path}")
    out = tmp_path / "verdict.json"
    code = main(["check", "--repo", str(repo.root), "--json", str(out)])
    return code, json.loads(out.read_text()) if out.exists() else {}


def test_a_file_whose_parse_needs_more_than_the_limits_costs_parse_points(tmp_path: Path) -> None:
    # Under the size cap, yet its tree would take about 300 MiB: it is parsed in a child under limits.memory_mb,
    # never in the gate's own process.
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": "limits: {memory_mb: 128}\n", "calc.py": CALC})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot: constants", {"table.py": "x = (" + "1," * 300_000 + ")\n"})
    code, verdict = check(repo)
    assert code == 1
    [penalty] = [p for p in verdict["penalties"] if p["check"] == "parse"]
    assert "table.py: parsing it needs more than the limits allow (limits.memory_mb 128" in penalty["message"]


def test_a_large_file_that_parses_within_the_limits_is_checked_as_any_other(repo: Repo) -> None:
    repo.commit("bot: big", {"table.py": "x = 1\n" * 30_000 + "import socket\n"})  # 180 KB: parsed in a child first
    code, verdict = check(repo)
    assert code == 1
    [penalty] = verdict["penalties"]
    assert penalty["check"] == "imports" and "table.py:30001" in penalty["message"]


def test_a_file_that_does_not_parse_leaves_the_other_files_checked(repo: Repo) -> None:
    # The checks work per file: one broken file used to make every other file's imports and claims "skipped".
    util = UTIL + "\nimport socket\n\n\ndef first(xs):\n    \"\"\"O(1).\"\"\"\n    for x in xs:\n        return x\n"
    repo.commit("bot: two files", {"broken.py": "def f(:\n", "util.py": util})
    code, verdict = check(repo)
    assert code == 1
    charged = {p["check"]: p for p in verdict["penalties"]}
    assert set(charged) == {"parse", "imports", "claims", "timeout"}  # (the cases: not run, parse failed)
    assert {c["status"] for c in verdict["cases"]} == {"not run"}
    assert "broken.py:1" in charged["parse"]["message"]
    assert "socket" in charged["imports"]["message"] and "subprocess" not in charged["imports"]["message"]
    assert "first()" in charged["claims"]["message"]
    reasons = {c["name"]: c["reason"] for c in verdict["checks"]}
    assert reasons["imports"] == reasons["claims"] == "not read: broken.py (does not parse)"


def test_a_language_with_no_compiler_here_does_not_stop_the_cases(tmp_path: Path) -> None:
    # No `tsc` on the machine: parse could not check the .ts file and was "skipped", and so were the cases, so a
    # change that breaks the library got 0 points.
    repo = Repo(tmp_path / "repo")
    policy = POLICY + ("paths: {include: ['**/*.ts']}\n"
                       "languages: {'.ts': {command: [/nonexistent/tsc, --noEmit, '{path}']}}\n")
    repo.commit("base", {".github/gate.yml": policy, "calc.py": CALC, "web/app.ts": "let x = 1;\n"})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot: faster", {"calc.py": "def add(a, b):\n    return a * b\n", "web/app.ts": "let x = 2;\n"})
    code, verdict = check(repo)
    assert code == 1 and not verdict["accepted"]
    assert [(c["name"], c["status"]) for c in verdict["cases"]] == [("adds", "failed")]
    assert [p["check"] for p in verdict["penalties"]] == ["smoke"]
    assert any("`/nonexistent/tsc` is not installed" in n["message"] for n in verdict["notes"])
