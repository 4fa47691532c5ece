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
