"""A policy case that names what the base lacks is the policy's mistake: `gate policy check --repo` says so
before the first PR, and a range or PR stops with exit 2 naming the case, never charging the change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from tests.git_support import Repo

CALC = "def add(a, b):\n    return a + b\n\n\nif True:\n    def sub(a, b):\n        return a - b\n"


def policy(function: str) -> str:
    return f'cases:\n  - function: "{function}"\n    args: [2, 3]\n    expect: 5\n'


def tree(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.mark.parametrize(("function", "error"), [
    ("app.calc:add", ""), ("app.calc:sub", ""), ("json:dumps", ""),
    ("app.calc:addd", "app/calc.py defines no addd"), ("app.nope:add", "no module app.nope"),
])
def test_policy_check_resolves_every_function_against_the_tree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], function: str, error: str) -> None:
    root = tree(tmp_path, {".github/gate.yml": policy(function), "app/__init__.py": "", "app/calc.py": CALC})
    code = main(["policy", "check", "--repo", str(root)])
    err = capsys.readouterr().err
    if error:
        assert code == 2 and error in err and "cases[0].function" in err and ".github/gate.yml" in err
    else:
        assert code == 0, err


def test_policy_check_finds_a_src_layout_and_module_cases(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = tree(tmp_path, {".github/gate.yml": 'cases:\n  - module: "pkg.cli"\n    stdout: ""\n'
                                               '  - module: "pkg.gone"\n    stdout: ""\n',
                           "src/pkg/__init__.py": "", "src/pkg/cli.py": "print()\n"})
    assert main(["policy", "check", "--repo", str(root)]) == 2
    err = capsys.readouterr().err
    assert "cases[1].module" in err and "no module pkg.gone" in err
    # Without --repo only the file is checked, as before.
    assert main(["policy", "check", str(root / ".github" / "gate.yml")]) == 0


def test_policy_check_names_the_policy_file_it_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tree(tmp_path, {".github/gate.yaml": policy("app.calc:addd"), "app/__init__.py": "", "app/calc.py": CALC})
    assert main(["policy", "check", "--repo", str(root)]) == 2
    err = capsys.readouterr().err
    assert ".github/gate.yaml" in err and ".github/gate.yml:" not in err


def test_a_range_whose_policy_case_the_base_lacks_stops_with_the_case_not_smoke_points(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": policy("calc:addd"), "calc.py": CALC})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"calc.py": CALC + "\n\ndef mul(a, b):\n    return a * b\n"})
    out = tmp_path / "verdict.json"
    assert main(["check", "--repo", str(repo.root), "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cases[0].function" in err and "calc.py defines no addd" in err and "policy" in err
    assert not out.exists()


MATCHING = CALC + "\n\ndef sign(x):\n    match x:\n        case 0:\n            return 0\n    return 1\n"


@pytest.mark.parametrize("settings", ['python: "3.9"\n', "paths:\n  max_file_kb: 1\n"], ids=["python", "max_file_kb"])
@pytest.mark.parametrize("bot_edits_it", [True, False], ids=["changed", "unchanged"])
def test_a_case_no_tree_can_run_is_refused_whatever_the_checks_make_of_its_module(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: str, bot_edits_it: bool) -> None:
    # The module uses syntax newer than the policy's Python, or is over the size the checks parse: the checks
    # charge that, but what names it binds is read as for the base, so the policy's mistake is still refused.
    big = "\n" + "# padding\n" * 120
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": settings + policy("calc:addd"), "calc.py": MATCHING + big})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"calc.py": MATCHING + big + "# tidy\n"} if bot_edits_it else {"other.py": "X = 1\n"})
    assert main(["check", "--repo", str(repo.root)]) == 2
    assert "calc.py defines no addd" in capsys.readouterr().err


def test_a_hidden_case_the_base_lacks_is_named_by_its_number_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": policy("calc:add"), "calc.py": CALC,
                         ".github/gate-hidden.yml": "cases:\n  - function: \"calc:secret_name\"\n"
                                                    "    args: [1]\n    expect: 1\n"})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"calc.py": CALC + "\n# tidy\n"})
    assert main(["check", "--repo", str(repo.root)]) == 2
    err = capsys.readouterr().err
    assert "hidden case 1" in err and "secret_name" not in err


def test_a_policy_whose_cases_the_base_has_scores_as_before(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": policy("calc:add"), "calc.py": CALC})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"calc.py": CALC.replace("a + b", "a - b")})
    out = tmp_path / "verdict.json"
    assert main(["check", "--repo", str(repo.root), "--json", str(out)]) == 0  # smoke 2, within budget 3
    verdict = json.loads(out.read_text())
    assert verdict["cases"][0]["status"] == "failed" and verdict["total"] == 2


def test_a_case_that_fails_on_the_base_too_is_the_policys_and_never_charged(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    wrong = 'budget: 0\ncases:\n  - function: "calc:add"\n    args: [2, 3]\n    expect: 6\n'
    repo.commit("base", {".github/gate.yml": wrong, "calc.py": CALC,
                         ".github/gate-hidden.yml": "cases:\n  - function: \"calc:add\"\n    args: [40, 2]\n"
                                                    "    expect: 41\n"})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"calc.py": '"""Sums."""\n' + CALC})
    out = tmp_path / "verdict.json"
    assert main(["check", "--repo", str(repo.root), "--json", str(out)]) == 0
    verdict = json.loads(out.read_text())
    assert verdict["total"] == 0 and verdict["penalties"] == []
    public, hidden = verdict["cases"]
    assert "fails on the base too" in public["detail"] and "expected int 6, got int 5" in public["detail"]
    # Nothing of the hidden case's values (its expected 41, what came back) is said.
    assert hidden["detail"] == "fails on the base too (failed): the policy's case, not charged"
    assert not any("41" in note["message"] or "42" in note["message"] for note in verdict["notes"])
    assert any("fix the policy" in note["message"] for note in verdict["notes"])


def test_a_regression_is_still_charged_when_the_base_passes(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": "budget: 0\n" + policy("calc:add"), "calc.py": CALC})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"calc.py": CALC.replace("return a + b", "return a * b")})
    out = tmp_path / "verdict.json"
    assert main(["check", "--repo", str(repo.root), "--json", str(out)]) == 1
    verdict = json.loads(out.read_text())
    assert [p["check"] for p in verdict["penalties"]] == ["smoke"]
    assert "base" not in verdict["cases"][0]["detail"]


def test_a_case_for_code_the_head_adds_is_the_heads_to_pass(tmp_path: Path) -> None:
    """The base lacks the module, so failing there says nothing of the policy: the head's failure is charged."""
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": "budget: 0\n" + policy("feature:add"), "calc.py": CALC})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"feature.py": "def add(a, b):\n    return a * b\n"})
    out = tmp_path / "verdict.json"
    assert main(["check", "--repo", str(repo.root), "--json", str(out)]) == 1
    verdict = json.loads(out.read_text())
    assert [p["check"] for p in verdict["penalties"]] == ["smoke"] and "base" not in verdict["cases"][0]["detail"]


@pytest.mark.parametrize(("head", "code"), [
    ({"other.py": "X = 1\n"}, 0), ({"calc.py": "def plus(a, b):\n    return a + b\n"}, 1)],
    ids=["untouched", "renames-add"])
def test_a_case_module_in_another_encoding_is_scored_whatever_the_head_does_to_it(
        tmp_path: Path, head: dict[str, str | None], code: int) -> None:
    """A base module in Latin-1 (valid Python, with its coding line) that a case names: the change is scored,
    its case charged when the head loses the function; the gate never stops on the module's bytes, which the
    head's edit would otherwise decide."""
    repo = Repo(tmp_path / "repo")
    repo.write(".github/gate.yml", "budget: 0\n" + policy("calc:add"))
    (repo.root / "calc.py").write_bytes(b"# -*- coding: latin-1 -*-\nNAME = '\xe9t\xe9'\n\n\n" + CALC.encode())
    repo.git("add", ".")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", head)
    out = tmp_path / "verdict.json"
    assert main(["check", "--repo", str(repo.root), "--json", str(out)]) == code
    verdict = json.loads(out.read_text())
    assert verdict["cases"][0]["status"] == ("passed" if code == 0 else "failed"), verdict["cases"]
