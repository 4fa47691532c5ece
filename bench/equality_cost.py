"""What confirming the assertions' equality costs a suite run (gate/suite/equality.py): the same pytest run with
the confirmation the suite's harness installs and without it, side by side, alternating which goes first.

    .venv/bin/python bench/equality_cost.py [--tests 400] [--rounds 5] [--sdist more_itertools-10.5.0.tar.gz]

Two suites. A made one, the worst case: `--tests` test functions, each running 5 times 11 passing assertions of
the shapes suites have (ints and strings, a list of 200 ints, a dict, a dataclass, a namedtuple, `in`, a
pytest.approx, `!=`, a helper that compares a dataclass, a call of builtins), and as many unittest methods with
assertEqual and assertIn of the same values: every assertion is confirmed, and a third of them hold an object
that compares its own way, which is probed. With `--sdist`, also a real one: that project's `tests` (a project
that needs nothing installed beyond pytest: more-itertools 10.5.0, as bench/suite_vs_pytest.py uses). Each
round runs pytest in a new process (its start, collection and the rewriting of the test modules included), with
the confirmation and without; the best and the median round of each are compared, in CPU seconds (the child's
user and system time: what the confirmation adds, less disturbed by the other jobs of a shared machine than
the wall time) and in wall seconds.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

DRIVER = '''\
import sys, unittest
import _pytest.assertion.rewrite as rewrite
import pytest
from gate.suite import equality

confirmation = equality.Confirmation(lambda record: None, "Record", "Entry")
if sys.argv[1] == "on":
    equality.hook(rewrite, confirmation)
    confirmation.wrap_unittest(unittest.TestCase)


class Plugin:
    def pytest_runtest_logstart(self, nodeid, location):
        confirmation.start(nodeid)

    def pytest_runtest_logfinish(self, nodeid, location):
        confirmation.start(None)


sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[2]], plugins=[Plugin()]))
'''
VALUES = '''\
import collections
import dataclasses


@dataclasses.dataclass
class Point:
    x: int
    y: int


Pair = collections.namedtuple("Pair", "a b")
NUMBERS = list(range(200))


def same(one, other):
    return one == other
'''
TEST = '''
def test_{n}():
    for _ in range(5):
        assert {n} + 1 == {n1}
        assert "name-{n}" == "name-" + str({n})
        assert list(NUMBERS) == NUMBERS
        assert {{"a": {n}, "b": [1, 2]}} == {{"a": {n}, "b": [1, 2]}}
        assert Point({n}, 2) == Point({n}, 2)
        assert Pair(1, {n}) == (1, {n})
        assert {n} in NUMBERS or {n} not in NUMBERS
        assert 0.1 + 0.2 == pytest.approx(0.3)
        assert {n} != -1
        assert same(Point({n}, 2), Point({n}, 2))
        assert len(NUMBERS) == max(NUMBERS) + 1


class TestUnit{n}(unittest.TestCase):
    def test_equal(self):
        for _ in range(5):
            self.assertEqual({n} + 1, {n1})
            self.assertEqual(list(NUMBERS), NUMBERS)
            self.assertEqual(Point({n}, 2), Point({n}, 2))
            self.assertIn(3, NUMBERS)
'''
_ASSERTIONS = 11 + 4  # per test function and its unittest method, per pass of their loops


def made(root: Path, tests: int) -> int:
    """Write the made suite under `root` (its tests in `tests/`); the number of assertions it runs."""
    (root / "tests").mkdir(parents=True)
    (root / "conftest.py").write_text("")
    (root / "values.py").write_text(VALUES)
    header = "import unittest\n\nimport pytest\n\nfrom values import NUMBERS, Pair, Point, same\n"
    for start in range(0, tests, 50):
        body = "".join(TEST.format(n=n, n1=n + 1) for n in range(start, min(start + 50, tests)))
        (root / "tests" / f"test_many_{start}.py").write_text(header + body)
    return tests * 5 * _ASSERTIONS


def project(archive: Path, folder: Path) -> Path:
    """The sdist `archive` unpacked under `folder`: its top directory."""
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return next(path for path in folder.iterdir() if path.is_dir())


def timed(root: Path, mode: str) -> tuple[float, float]:
    """The CPU seconds (user and system) and wall seconds of one pytest run of `root`'s tests, with the
    confirmation (`mode` "on") or without."""
    (root / "_bench_driver.py").write_text(DRIVER)
    began, used = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, "_bench_driver.py", mode, "tests"], cwd=root, capture_output=True,
                          text=True, env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"})
    seconds, cpu = time.perf_counter() - began, _children_cpu() - used
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({mode}) in {root}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return cpu, seconds


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compare(root: Path, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Each mode's (CPU, wall) seconds over `rounds` rounds, alternating which runs first."""
    times: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    for round_ in range(rounds):
        for mode in ("off", "on") if round_ % 2 == 0 else ("on", "off"):
            times[mode].append(timed(root, mode))
    return times


def show(name: str, times: dict[str, list[tuple[float, float]]], assertions: int | None) -> None:
    """One line per measure (CPU, wall): each mode's best and median round, and their ratios."""
    for index, measure in enumerate(("CPU", "wall")):
        best = {mode: min(found[index] for found in runs) for mode, runs in times.items()}
        median = {mode: statistics.median(found[index] for found in runs) for mode, runs in times.items()}
        print(f"{f'{name}, {measure}':44} {best['off']:8.2f} {median['off']:8.2f} {best['on']:8.2f} "
              f"{median['on']:8.2f} {best['on'] / best['off']:7.2f}x {median['on'] / median['off']:7.2f}x")
        if assertions and measure == "CPU":
            extra = median["on"] - median["off"]
            print(f"{'':44} {assertions} assertions confirmed: {extra / assertions * 1e6:.1f} us of CPU each "
                  "(median rounds)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sdist", type=Path, help="a project's sdist whose `tests` need only pytest")
    options = parser.parse_args()
    print(f"{f'{options.rounds} rounds, seconds':44} {'pytest alone':>17} {'confirmed':>17} {'on / off':>17}")
    print(f"{'suite':44} {'best':>8} {'median':>8} {'best':>8} {'median':>8} {'best':>8} {'median':>8}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "made"
        assertions = made(root, options.tests)
        show(f"made: {options.tests * 2} tests", compare(root, options.rounds), assertions)
        if options.sdist:
            root = project(options.sdist, Path(folder) / "sdist")
            show(f"{root.name}: its tests", compare(root, options.rounds), None)


if __name__ == "__main__":
    main()
