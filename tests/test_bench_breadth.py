"""bench/breadth.py's plumbing, offline: a project's sdist becomes the repository its maintainers keep, with an
honest head and a regression its tests catch; pytest's summary and the gate's verdict read as the table says."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

from gate.progress import Progress

ROOT = Path(__file__).resolve().parent.parent

MODULE = '''\
def double(x):
    """Twice x."""
    return 2 * x
'''
FILES = {
    "demo-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
    "demo-1.0/demo.egg-info/PKG-INFO": "Name: demo\n",
    "demo-1.0/pyproject.toml": '[project]\nname = "demo"\nversion = "1.0"\n',
    "demo-1.0/src/demo/__init__.py": "",
    "demo-1.0/src/demo/_version.py": "version = '1.0'\n",
    "demo-1.0/src/demo/calc.py": MODULE,
    "demo-1.0/tests/test_calc.py": "from demo.calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    # The maintainers track C sources under a folder their .gitignore names (ujson's `lib/`), and not the
    # bytecode an sdist may carry.
    "demo-1.0/.gitignore": "lib/\n",
    "demo-1.0/lib/helper.c": "int helper(void) { return 1; }\n",
    "demo-1.0/src/demo/__pycache__/calc.cpython-311.pyc": "",
}


def _breadth() -> ModuleType:
    spec = importlib.util.spec_from_file_location("breadth", ROOT / "bench" / "breadth.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["breadth"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _sdist(folder: Path, files: dict[str, str] = FILES) -> Path:
    archive = folder / "demo-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


def test_an_sdist_becomes_the_maintainers_repository_with_an_honest_head_and_a_regression(tmp_path: Path) -> None:
    breadth = _breadth()
    project = breadth.Project("demo", "1.0", "src", ("tests",), ("-e", "."),
                              ("src/demo/calc.py", "double"), ("src/demo/_version.py",))
    repo, said = breadth.repository(project, _sdist(tmp_path), tmp_path / "work")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout

    assert git("tag").split() == ["v1.0"] and git("rev-parse", "v1.0^{}") == git("rev-parse", "main")
    base = set(git("ls-tree", "-r", "--name-only", "main").split())
    assert "PKG-INFO" not in base and not any("egg-info" in name or "__pycache__" in name for name in base)
    assert "lib/helper.c" in base
    assert "src/demo/_version.py" not in base and "/src/demo/_version.py" in git("show", "main:.gitignore")
    # The policy is what `gate init` writes on the base's tree, and nothing else: the same command run again on an
    # export of the base (without the policy) prints it byte for byte.
    policy = git("show", "main:.github/gate.yml")
    export = tmp_path / "export"
    export.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", "main"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(export)], input=archive, check=True)
    (export / ".github" / "gate.yml").unlink()
    printed = subprocess.run([sys.executable, "-m", "gate", "init", "--print", "--dir", str(export)], check=True,
                             capture_output=True, text=True, cwd=tmp_path)
    assert policy == printed.stdout
    assert "tests:" in policy and "paths: [tests]" in policy  # init found the suite
    assert breadth.init_choices(said) == [line for line in printed.stderr.splitlines()
                                          if line.startswith(("found tests:", "not found: test dependencies"))]
    assert breadth.init_choices(said)[0].startswith("found tests: tests (1 test file")
    assert git("diff", "--name-only", "main", "regression").split() == ["src/demo/calc.py"]  # the heads keep it
    assert git("diff", "--name-only", "main", "honest").split() == ["src/demo/calc.py"]
    added = [line[1:] for line in git("diff", "-U0", "main", "honest").splitlines()
             if line.startswith("+") and not line.startswith("+++")]
    assert added and all(line.startswith("#") or not line.strip() for line in added)  # a comment only
    regressed: dict[str, object] = {}
    exec(git("show", "regression:src/demo/calc.py"), regressed)
    original: dict[str, object] = {}
    exec(git("show", "main:src/demo/calc.py"), original)
    assert original["double"](2) == 4  # type: ignore[operator]
    assert regressed["double"](2) is None  # type: ignore[operator]
    assert regressed["double"].__doc__ == "Twice x."


C_MODULE = """\
static PyObject *
encode(PyObject *self, PyObject *arg);

static PyObject *
encode(PyObject *self, PyObject *arg)
{
    return PyUnicode_FromString("x");
}
"""


def test_a_c_regression_returns_none_first_in_the_definition_never_the_prototype(tmp_path: Path) -> None:
    breadth = _breadth()
    source = tmp_path / "speedups.c"
    source.write_text(C_MODULE)
    breadth.regress(source, "encode")
    lines = source.read_text().splitlines()
    assert lines[:2] == ["static PyObject *", "encode(PyObject *self, PyObject *arg);"]  # the prototype as it was
    assert lines[5:8] == ["{", "    Py_RETURN_NONE;  /* bench: a regression */",
                          '    return PyUnicode_FromString("x");']


def test_pytests_summary_and_the_verdict_read_as_the_table_shows_them() -> None:
    breadth = _breadth()
    assert breadth.pytest_counts("....\n3 failed, 120 passed, 2 skipped in 1.20s\n") == {
        "failed": 3, "passed": 120, "skipped": 2}
    assert breadth.pytest_counts("no tests ran in 0.01s\n") == {}
    verdict = {"accepted": False, "total": 4, "budget": 3,
               "cases": [{"name": "tests/test_a.py::test_one", "kind": "pytest"}],
               "penalties": [{"case": 0, "message": "test tests/test_a.py::test_one failed"}]}
    assert breadth.describe(1, verdict, "") == ("BLOCKED 4/3", ["tests/test_a.py::test_one"],
                                                ["test tests/test_a.py::test_one failed"])
    assert breadth.describe(3, None, "...\ngate: the base's suite does not run\nhint: see above") == (
        "exit 3", [], ["gate: the base's suite does not run"])
    assert breadth.describe(3, None, "  LookupError: no version\nhint: See above for details.") == (
        "exit 3", [], ["LookupError: no version"])


def test_the_cold_table_gives_each_ratio_to_the_ci_job_and_the_median_of_the_judged() -> None:
    breadth = _breadth()
    project = breadth.Project("demo", "1.0", "src", ("tests",), ("-e", "."), ("src/demo/calc.py", "double"))
    rows = [breadth.Cold(project, ci=10.0, gate={"uv": 8.0, "pip": 12.0}, environment={"uv": 2.0, "pip": 6.0},
                         verdicts={"uv": "ACCEPTED 0/3", "pip": "ACCEPTED 0/3"}),
            breadth.Cold(project, ci=20.0, gate={"uv": 30.0, "pip": 40.0}, environment={"uv": 4.0, "pip": 9.0},
                         verdicts={"uv": "ACCEPTED 0/3", "pip": "ACCEPTED 0/3"}),
            # A gate that stopped (exit 3) gave no verdict: its time is no cost of one, and stays out of the median.
            breadth.Cold(project, ci=10.0, gate={"uv": 1.0, "pip": 1.0}, verdicts={"uv": "exit 3", "pip": "exit 3"})]
    lines = breadth.cold_table(rows).splitlines()
    assert [cell.strip() for cell in lines[2].split("|")[1:-1]] == [
        "demo 1.0", "ACCEPTED 0/3", "10.0", "8.0", "0.80x", "12.0", "1.20x", "2.0/6.0"]
    assert [cell.strip() for cell in lines[-1].split("|")[1:-1]] == [
        "median", "2 judged", "15.0", "19.0", "1.15x", "26.0", "1.60x", "3.0/7.5"]
    log = io.StringIO()  # the environment's step, as the gate logs it
    with Progress(log).step("environment: the project and its [tests] extra") as step:
        step.done("7 packages installed by uv")
    found = breadth.ENVIRONMENT_BUILT.search("gate: x\n" + log.getvalue())
    assert found is not None and found.group(1) == "uv" and float(found.group(2)) >= 0


def test_a_tree_gate_init_refuses_is_a_row_that_says_why_not_the_end_of_the_run(tmp_path: Path) -> None:
    breadth = _breadth()
    project = breadth.Project("demo", "1.0", "src", ("tests",), ("-e", "."), ("src/demo/calc.py", "double"))
    _sdist(tmp_path, {**FILES, "demo-1.0/.github/gate.yml": "extends: default\n"})  # init will not overwrite it

    outcome = breadth.bench(project, tmp_path, tmp_path / "work", peer=False)

    assert (outcome.honest, outcome.regression) == ("no policy", "no policy")
    assert outcome.problems == [f"gate init: exit 2: gate: error: {tmp_path}/work/demo/repo/.github/gate.yml: "
                                "already there (use --force to overwrite)"]
