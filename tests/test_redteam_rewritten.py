"""The test modules pytest rewrote, kept from one verdict to the next (gate/suite/rewritten.py): a warm run takes
them instead of rewriting the test files again, so what is kept is code the next runs execute as the tests. Only
the base's own runs keep anything, each module under the content of its file in the base's tree; a head cannot
put code there, and a file whose content differs is rewritten by its own run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import marshal
from pathlib import Path

import pytest

from gate.cli import main
from gate.suite import rewritten
from gate.verdict import Verdict
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import CALC, TESTS, calc_project, score_repo

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("offline_pip")]  # each builds an environment, runs a suite

# What a head's module does as the tests import it: it finds the tests' process's result channel and its key
# (the harness's locals, up the stack) and writes a record of a module "rewritten" for tests/test_calc.py whose
# every test passes, for the gate to keep and give the next runs.
FORGE = '''
import base64 as _b64, importlib.util as _util, json as _json, marshal as _marshal, os as _os, sys as _sys


def _forge():
    frame = _sys._getframe()
    while frame is not None and not ("key" in frame.f_locals and "fd" in frame.f_locals):
        frame = frame.f_back
    if frame is None:
        return
    code = compile("def test_add():\\n    'FORGED'\\n", "tests/test_calc.py", "exec")
    record = {"rewritten": "tests/test_calc.py", "magic": _util.MAGIC_NUMBER.hex(),
              "code": _b64.b64encode(_marshal.dumps(code)).decode(), "key": frame.f_locals["key"]}
    _os.write(frame.f_locals["fd"], (_json.dumps(record) + "\\n").encode())


_forge()
'''


def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    monkeypatch.setenv("GATE_CACHE_DIR", str(cache))
    return cache


def _kept(cache: Path) -> dict[str, list[str]]:
    [store] = (cache / "rewritten").glob("*.json")
    entries: dict[str, list[str]] = json.loads(store.read_text())
    return entries


def _status(verdict: Verdict, nodeid: str) -> str:
    [case] = [case for case in verdict.cases if case.name == nodeid]
    return case.status


def test_a_warm_verdict_runs_the_modules_its_base_rewrote_and_only_for_their_own_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = _private_cache(tmp_path, monkeypatch)
    repo = calc_project(tmp_path / "repo", extra_files={"NOTES": f"{tmp_path}\n"})
    repo.commit("bot: a comment", {"calc.py": CALC + "# a comment\n"})

    assert score_repo(repo).accepted  # cold: the base's collection keeps what its pytest rewrote
    kept = _kept(cache)
    base = repo.root / "tests"
    assert {path: entry[0] for path, entry in kept.items()} == {
        f"tests/{name}": hashlib.sha256((base / name).read_bytes()).hexdigest()
        for name in ("conftest.py", "test_calc.py")}

    # The kept code is what runs: made (as the gate's own user could) of a test_add that fails, the next
    # verdict's runs take it for tests/test_calc.py, whose content it was kept for.
    failing = TESTS.replace("assert same(add(two, 3), 5)", "assert False")
    code = marshal.dumps(compile(failing, "/elsewhere/tests/test_calc.py", "exec"))
    [store] = (cache / "rewritten").glob("*.json")
    store.write_text(json.dumps({**kept, "tests/test_calc.py": [
        kept["tests/test_calc.py"][0], kept["tests/test_calc.py"][1], base64.b64encode(code).decode()]}))
    verdict = score_repo(repo)
    assert _status(verdict, "tests/test_calc.py::test_add") == "failed"
    [case] = [case for case in verdict.cases if case.name == "tests/test_calc.py::test_add"]
    # Made for another tree's path, its failure is still told at this tree's file and line.
    assert "tests/test_calc.py:8: in test_add" in case.detail, case.detail

    # For another content (or an interpreter of other bytecode), the run's own pytest rewrites the file.
    for changed in ([hashlib.sha256(b"another content").hexdigest(), kept["tests/test_calc.py"][1]],
                    [kept["tests/test_calc.py"][0], "00000000"]):
        store.write_text(json.dumps({**kept, "tests/test_calc.py": [*changed, base64.b64encode(code).decode()]}))
        assert _status(score_repo(repo), "tests/test_calc.py::test_add") == "passed"
    store.write_text(json.dumps(kept))
    assert rewritten.given(store, repo.root, ["tests"]) == kept
    # A run of other files is given the conftests first (a `conftest.py` may be imported by any run), then the
    # rest while there is room: a test module may import another one, which pytest rewrites as it imports it.
    conftest, test_calc = ({path: kept[path]} for path in ("tests/conftest.py", "tests/test_calc.py"))
    assert rewritten.given(store, repo.root, ["tests/test_other.py"]) == kept
    assert rewritten.given(store, repo.root, ["tests/test_other.py"], room=0) == conftest
    (repo.root / "tests" / "conftest.py").write_text("# changed\n")
    assert rewritten.given(store, repo.root, ["tests/test_calc.py"]) == test_calc


def test_a_head_cannot_put_code_in_what_the_next_runs_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    cache = _private_cache(tmp_path, monkeypatch)
    repo = calc_project(tmp_path / "repo", extra_files={"NOTES": f"{tmp_path}\n"})
    repo.commit("bot: a comment", {"calc.py": CALC + FORGE})

    code = main(["check", "--repo", str(repo.root), "--base", "main", "--head", "bot"])

    said = capsys.readouterr()
    assert code == 1, said
    assert "the suite's results were tampered with" in said.err, said.err
    kept = _kept(cache)  # the base's collection kept its own
    assert set(kept) == {"tests/conftest.py", "tests/test_calc.py"}
    assert all(b"FORGED" not in base64.b64decode(entry[2]) for entry in kept.values())
