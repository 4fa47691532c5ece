"""Red-team attack on the baseline (README "Gating with your own tests and dependencies"): a base suite that
collects but whose every test is skipped in the gate (a `pytest.importorskip` of a module the environment
lacks, a module-wide skip mark), or fails there (a fixture every test uses imports such a module), protects
nothing, and a regression read as "4 tests (against the base)" was accepted. What did not run, or never
passes, never counts as passed: such a base stops the gate like one that collects nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.cli import main
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import BROKEN_MUL, TESTS, calc_project

pytestmark = pytest.mark.slow  # each builds a project's environment and runs its suite in the sandbox


def _check(repo_root: Path) -> int:
    return main(["check", "--repo", str(repo_root), "--base", "main", "--head", "bot"])


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize(("header", "said"), [
    ("import pytest\n\nnumpy = pytest.importorskip('numpy_the_gate_lacks')\n", "pytest collected no test"),
    ("import pytest\n\npytestmark = pytest.mark.skip(reason='slow')\n", "every test pytest collected was skipped"),
    ("import pytest\n\npytestmark = pytest.mark.xfail(reason='flaky', run=False)\n", "skipped or xfailed"),
    ("import pytest\n\n\n@pytest.fixture(autouse=True)\ndef needs_numpy():\n    import numpy_the_gate_lacks\n",
     "none of the 4 tests it collects passes there, nor on the head (4 fail on the base too: ModuleNotFoundError: "
     "No module named 'numpy_the_gate_lacks')"),
], ids=["importorskip", "skip-mark", "xfail-not-run", "every-test-fails"])
def test_a_base_suite_whose_every_test_skips_or_fails_stops_the_gate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], header: str,
        said: str) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_calc.py": header + TESTS})
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    monkeypatch.setenv("GATE_CACHE_DIR", str(cache))

    assert _check(repo.root) == 3

    error = capsys.readouterr().err
    assert "the base's suite does not run in the gate: " in error and said in error, error
    assert not list(cache.glob("baselines/*.json"))


@pytest.mark.usefixtures("offline_pip")
def test_a_base_suite_with_some_tests_skipped_still_gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skipped = "\n\n@pytest.mark.skip(reason='slow')\ndef test_slow():\n    assert False\n"
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_calc.py": TESTS + skipped})
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    monkeypatch.setenv("GATE_CACHE_DIR", str(cache))

    assert _check(repo.root) == 1  # blocked: test_mul fails where the base passed
