"""How the suite's runs are scheduled and matched (docs/repository.md, "The suite"): the base runs only where it
decides something, the head runs in the base's (pytest's) order however it is spread over workers, a test that
fails only in another order is said, and ids computed at collection time are matched.

The charges must be exactly those of the strategy before (the base's whole suite beside the head's, each in one
process: `todays_charges`): each test here scores the same repository both ways and compares what is charged,
without a cached baseline (cold) and with one (warm), for each way a test can be charged and for suites whose
tests depend on their order. Real projects, real pytest, real sandboxed runs.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from gate.suite import baseline, order, run, tripwire
from gate.suite.baseline import Baseline
from gate.suite.harness import FAIL, PASS, TEST_TIMEOUT, match
from gate.suite.order import _ROOM
from gate.suite.run import shares, why
from gate.suite.tripwire import Replaced, RunRecords, Suspect, Trip
from tests import session_support
from tests.git_support import Repo
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import (
    CALC,
    CONFTEST,
    POLICY,
    calc_project,
    charged_statuses,
    score_repo,
    suite_runs,
    todays_charges,
)

CALC_MORE = CALC + '''

def sub(a, b):
    return a - b


def wait(n):
    return n
'''
MORE_FILES = {
    "tests/conftest.py": CONFTEST + "\n\n@pytest.fixture\ndef six():\n    import calc\n\n    return calc.mul(2, 3)\n",
    "tests/test_six.py": "def test_six(six):\n    assert six == 6\n",
    "tests/test_sub.py": "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n",
    "tests/test_wait.py": "from calc import wait\n\n\ndef test_wait():\n    assert wait(1) == 1\n",
}
# Each way a test that passes on the base can be charged, by the head's change to calc.py, and what it charges.
WAYS = {
    "failed": (CALC_MORE.replace("return a * b", "return a + b"),
               {"tests/test_calc.py::test_mul": "failed", "tests/test_six.py::test_six": "failed"}),
    "errored": (CALC_MORE.replace("return a * b", "raise ValueError('no')"),
                {"tests/test_calc.py::test_mul": "failed", "tests/test_six.py::test_six": "error"}),
    "skipped": ("import pytest\n" + CALC_MORE.replace("return a / b", "pytest.skip('not now')"),
                {"tests/test_calc.py::test_div": "skipped", "tests/test_calc.py::test_div_by_zero": "skipped"}),
    "not collected": (CALC_MORE.replace("def sub(a, b):\n    return a - b\n", ""),
                      {"tests/test_sub.py::test_sub": "error"}),
    "timed out": ("import time\n" + CALC_MORE.replace("    return n", "    while True:\n        time.sleep(1)"),
                  {"tests/test_wait.py::test_wait": "timeout"}),
}


def _more_project(root: Path, policy: str = POLICY) -> Repo:
    return calc_project(root, policy=policy, extra_files={"calc.py": CALC_MORE, **MORE_FILES,
                                                         "NOTES": f"{root}\n"})  # (a base of its own: cold)


def _both_ways(repo: Repo) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """What the strategy before charges, then the gate cold (no cached baseline), then warm."""
    today = todays_charges(repo)
    cold = charged_statuses(score_repo(repo))
    warm = charged_statuses(score_repo(repo))
    return today, cold, warm


# Every way at once: a regression that fails one test, errors one, skips two, drops one and hangs one.
EVERY_WAY = "import pytest\nimport time\n" + CALC_MORE.replace("return a * b", "raise ValueError('no')").replace(
    "return a / b", "pytest.skip('not now')").replace("def sub(a, b):\n    return a - b\n", "").replace(
    "    return n", "    while True:\n        time.sleep(1)")


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("workers", [1, 2])
def test_each_way_a_test_is_charged_is_charged_alike_both_ways(tmp_path: Path, workers: int) -> None:
    """All five ways in one suite, shared over one process and over two (the default)."""
    repo = _more_project(tmp_path / "repo", POLICY + f"  workers: {workers}\n")
    repo.commit("bot: everything at once", {"calc.py": EVERY_WAY})
    wanted = {way: status for _, charged in WAYS.values() for way, status in charged.items()}

    today, cold, warm = _both_ways(repo)

    assert today == cold == warm == wanted


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
def test_a_confirming_run_never_gives_a_tripwire_to_a_test_that_timed_out(tmp_path: Path) -> None:
    """A test skipped after a tripwire's failure runs once more with tripwires on tests of other files
    (run.confirm): one that timed out in the head's run hosts none, and its file is not run, so the run is not
    held for its timeout again. The hanging test here would hang the confirming run past the suite's limit."""
    repo = _more_project(tmp_path / "repo")
    repo.commit("bot: wait", {"calc.py": "import time\n" + CALC_MORE.replace(
        "    return n", "    while True:\n        time.sleep(1)")})
    hung, skipped = "tests/test_wait.py::test_wait", "tests/test_calc.py::test_div"
    with suite_runs(repo) as (sandbox, _, head, deadline):
        found = run.run_suite(sandbox, head, None, deadline)
        assert found.tests[hung].status == "timeout"

        again = run.confirm(sandbox, head, [skipped], found.tests, deadline)

    assert again.tests[skipped].status == "passed" and not again.tampered
    assert hung not in {nodeid for ran in again.runs for nodeid in ran}


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
def test_a_baseline_cached_from_a_partial_run_charges_a_later_head_right(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Path(tempfile.mkdtemp(dir=session_support.directory()))  # its own: the session's is shared
    cache.chmod(0o755)
    monkeypatch.setenv("GATE_CACHE_DIR", str(cache))
    repo = _more_project(tmp_path / "repo")
    repo.commit("bot: a comment", {"calc.py": CALC_MORE + "# a comment\n"})

    honest = score_repo(repo)

    assert honest.accepted and not charged_statuses(honest)
    [stored] = (cache / "baselines").glob("*.json")
    cached = json.loads(stored.read_text())
    # The head passed every test: the base collected them, and ran none.
    assert len(cached["collected"]) == 7 and cached["statuses"] == {}
    # Another head of the same base, warm: the base runs now what this one fails, and only that.
    repo.git("checkout", "-q", "-B", "bot", "main")
    repo.commit("bot: mul", {"calc.py": WAYS["failed"][0]})

    later = charged_statuses(score_repo(repo))

    assert later == todays_charges(repo) == WAYS["failed"][1]
    cached = json.loads(stored.read_text())
    assert cached["statuses"] == dict.fromkeys(["tests/test_calc.py::test_add", "tests/test_calc.py::test_mul",
                                                "tests/test_six.py::test_six"], "passed")


# A suite whose tests depend on what ran before them: an unittest file whose tearDown sets the asyncio event loop
# to None (a test after it in the same process that asks for the loop fails: in pytest's order it comes first), a
# test that needs its file's earlier test to have run, one that needs another file's (a registry filled at
# import), one whose outcome depends on the set order (PYTHONHASHSEED: fixed in the gate, alike on both sides);
# and a flaky one (half its runs fail, on either side), whose charge follows its draws but changes no other's.
FLAKY = "tests/test_flaky.py::test_flaky"
ORDERED = {
    "tests/test_flaky.py": "import random\n\n\ndef test_flaky():\n    assert random.random() < 0.5\n",
    "calc.py": CALC + "\n\nREGISTRY = {}\n\n\ndef lookup(name):\n    return REGISTRY[name]\n",
    "tests/test_a_register.py": "import calc\n\ncalc.REGISTRY['double'] = lambda x: x * 2\n\n\n"
                                "def test_register():\n    assert 'double' in calc.REGISTRY\n",
    "tests/test_b_lookup.py": "import calc\n\n\ndef test_lookup():\n    assert calc.lookup('double')(4) == 8\n",
    "tests/test_loop.py": "import asyncio\n\n\ndef test_loop():\n"
                          "    assert asyncio.get_event_loop_policy().get_event_loop() is not None\n",
    "tests/test_sets.py": "def test_set_order():\n    assert list({'pear', 'apple', 'fig', 'plum'})[0] == 'pear'\n",
    "tests/test_state.py": "import calc\n\nSTATE = {}\n\n\ndef test_1_store():\n    STATE['x'] = calc.add(1, 2)\n\n\n"
                           "def test_2_use():\n    assert calc.mul(STATE['x'], 2) == 6\n",
    "tests/test_teardown.py": "import asyncio\nimport unittest\n\n\nclass Loop(unittest.TestCase):\n"
                              "    def setUp(self):\n        self.loop = asyncio.new_event_loop()\n"
                              "        asyncio.set_event_loop(self.loop)\n\n"
                              "    def tearDown(self):\n        self.loop.close()\n"
                              "        asyncio.set_event_loop(None)\n\n"
                              + "".join(f"    def test_{n}(self):\n        assert self.loop\n\n" for n in range(6)),
}
HONEST = ORDERED["calc.py"] + "# a comment\n"
# mul broken (test_mul, test_2_use), and lookup that finds nothing: test_lookup fails on the head after the
# registry is filled (an assertion), and on the base alone with a KeyError (its registry empty).
REGRESSION = ORDERED["calc.py"].replace("return a * b", "return a + b").replace(
    "return REGISTRY[name]", "return REGISTRY.get(name.upper(), lambda x: x)")


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
@pytest.mark.parametrize(("head", "workers"), [(REGRESSION, 2), (REGRESSION, 1), (HONEST, 2), (HONEST, 1)],
                         ids=["regression-2", "regression-1", "honest-2", "honest-1"])
def test_an_order_dependent_suite_is_charged_alike_both_ways_cold_and_warm(tmp_path: Path, head: str,
                                                                          workers: int) -> None:
    repo = calc_project(tmp_path / "repo", POLICY + f"  workers: {workers}\n",
                        extra_files={**ORDERED, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: change", {"calc.py": head})

    today, cold, warm = (_without(FLAKY, charged) for charged in _both_ways(repo))

    wanted = {"tests/test_calc.py::test_mul": "failed", "tests/test_state.py::test_2_use": "failed",
              "tests/test_b_lookup.py::test_lookup": "failed"} if head == REGRESSION else {}
    assert today == cold == warm == wanted


def _without(nodeid: str, charged: dict[str, str]) -> dict[str, str]:
    return {name: status for name, status in charged.items() if name != nodeid}


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
def test_the_head_runs_in_the_bases_order_so_a_test_after_a_teardown_is_not_charged_warm(tmp_path: Path) -> None:
    # The tearDown file holds more tests: sharing files largest first put it before test_loop.py, whose test
    # then failed on the head only, with a cached baseline, every time (`tests.workers: 1` too).
    repo = calc_project(tmp_path / "repo", POLICY + "  workers: 1\n", extra_files={
        "tests/test_loop.py": ORDERED["tests/test_loop.py"],
        "tests/test_teardown.py": ORDERED["tests/test_teardown.py"], "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: a comment", {"calc.py": CALC + "# a comment\n"})

    cold, warm = score_repo(repo), score_repo(repo)

    assert cold.accepted and warm.accepted and warm.total == 0


def test_each_worker_is_given_contiguous_runs_of_pytests_order_whole_files() -> None:
    ids = [f"tests/test_{name}.py::t{n}" for name, count in (("z", 5), ("a", 1), ("m", 3), ("b", 1))
           for n in range(count)]

    for workers in (1, 2, 3, 8):
        parts = shares(ids, workers)
        assert [nodeid for share in parts for nodeid in share] == ids  # the order kept, every test once
        assert len(parts) == min(workers, 4)
        files = [{nodeid.split("::")[0] for nodeid in share} for share in parts]
        assert all(not a & b for i, a in enumerate(files) for b in files[i + 1:])  # no file cut
    assert [len(share) for share in shares(ids, 2)] == [5, 5]
    assert shares(ids, 3, cut_files=True) == shares(ids, 3)  # parts too small to cut a file for


def test_with_the_functions_last_times_each_worker_is_given_about_the_same_time_files_whole() -> None:
    # boltons' shape: a file of a few slow tests before many quick ones; by count it shares a part with 40 more.
    ids = [f"tests/test_{name}.py::test[{n}]" for name, count in (("a", 2), ("b", 40), ("c", 40), ("d", 40))
           for n in range(count)]
    seconds = {"tests/test_a.py::test": 0.8, "tests/test_b.py::test": 0.2, "tests/test_c.py::test": 0.2,
               "tests/test_d.py::test": 0.2}

    assert [len(share) for share in shares(ids, 2)] == [42, 80]  # by count
    timed = shares(ids, 2, seconds=seconds)
    assert [len(share) for share in timed] == [2, 120]  # test_a.py alone is about half the time
    assert [nodeid for share in timed for nodeid in share] == ids
    assert shares(ids, 2, cut_files=True, seconds=seconds) == timed  # parts too small to cut a file for
    # A test with no time yet (new, or renamed) counts as the average timed one.
    assert shares(ids, 2, seconds={"tests/test_b.py::test": 0.2}) == shares(ids, 2)
    assert shares(ids, 2, seconds={}) == shares(ids, 2)


def test_the_kept_times_share_each_run_alike_until_a_heads_would_end_it_much_sooner() -> None:
    # Shares that moved with each run's noise gave a test other tests before it each time: wrapt's control run
    # of most of its suite, run anew on every push. A head's times replace the kept ones only where the shares
    # they cut would end the run more than 10% sooner.
    ids = [f"tests/test_{name}.py::test[{n}]" for name, count in (("a", 2), ("b", 40), ("c", 40), ("d", 40))
           for n in range(count)]
    kept = {"tests/test_a.py::test": 0.8, "tests/test_b.py::test": 0.2, "tests/test_c.py::test": 0.2,
            "tests/test_d.py::test": 0.2}
    known = Baseline(ids, seconds=kept)

    noisy = {name: taken * (1.05 if "test_a" in name else 0.95) for name, taken in kept.items()}
    slower = {**kept, "tests/test_d.py::test": 1.6}

    assert not baseline._sooner(known, noisy, 2)
    assert baseline._sooner(known, slower, 2)
    assert [len(share) for share in shares(ids, 2, seconds=slower)] == [82, 40]  # (kept: [2, 120])
    assert baseline._sooner(Baseline(ids), noisy, 2)  # nothing kept yet


def test_a_control_run_is_kept_only_where_the_base_did_it_right_to_the_end() -> None:
    # What is kept can only say that the base ran a suspect's test and its tripwires right: a run cut short, a
    # test before it that failed once (a loaded machine, its clean-up not run), or an order the base's hooks
    # changed, kept, would spare every later head's forgery in that place.
    x, y = "tests/test_a.py::test_x", "tests/test_b.py::test_y"
    suspects = [Suspect("run 1", Trip(FAIL, True, host=x), "read wrong"),
                Suspect("run 1", None, "replaced", replaced=Replaced(y, "a change"))]
    trips: list[tuple[Trip, dict[str, Any]]] = [
        (Trip(FAIL, True, host=x), {"test": x, "status": "failed"}),
        (Trip(PASS, False, host=y), {"test": y, "status": "passed", "confirmed": ["assert", "assertEqual", "call"]})]
    order = baseline._run_order(suspects, [], [x, y])
    contexts = baseline._contexts(suspects, order)
    whole = RunRecords(collected=[x, y], outcomes={x: {"status": "passed"}, y: {"status": "passed"}}, trips=trips,
                       replaced=[Replaced(y, "a change")])

    def kept(records: RunRecords, statuses: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
        return baseline._shown(records, contexts, baseline._clean(records, suspects, [], order, statuses or {}))

    replayed = baseline._replayed(contexts, kept(whole))
    assert order == [x, y] and len(kept(whole)) == 2
    assert replayed is not None and tripwire.confirmed(suspects, replayed) == tripwire.confirmed(suspects, whole)
    assert kept(replace(whole, outcomes={x: {"status": "passed"}, y: {"status": "timeout", "end": True}})) == {}
    failed_once = replace(whole, outcomes={x: {"status": "failed"}, y: {"status": "passed"}})
    assert kept(failed_once) == {}  # and so it runs again
    assert baseline._replayed(contexts, kept(failed_once)) is None
    assert set(kept(failed_once, {x: "failed"})) == {contexts[y]}  # x fails on the base whatever runs
    assert kept(replace(whole, trips=[(trips[0][0], {"test": x, "status": "passed"}), trips[1]])) == {}
    assert kept(replace(whole, collected=[y, x])) == {}  # the base's hooks reordered its run
    # A test asked for that the base does not collect: no key, so nothing is kept or replayed.
    assert baseline._run_order(suspects, [], [x]) == [] and baseline._contexts(suspects, []) == {}


def test_a_small_suite_by_time_is_cut_inside_a_file_of_a_few_slow_tests() -> None:
    # tabulate's shape: 272 tests, but test_cli.py's seven (each runs the command) are 60% of the time: by
    # whole files one part has 0.66 s and the other 0.42; cut between test_cli's functions, 0.57 and 0.51.
    files = (("api", 5, 0.005), ("cli", 7, 0.09), ("input", 60, 0.002), ("output", 200, 0.0015))
    ids = [f"test/test_{name}.py::test_{n}" for name, count, _ in files for n in range(count)]
    seconds = {f"test/test_{name}.py::test_{n}": each for name, count, each in files for n in range(count)}

    cut = shares(ids, 2, cut_files=True, seconds=seconds)
    assert [len(share) for share in cut] == [11, 261]  # after six of test_cli.py's functions
    assert [nodeid for share in cut for nodeid in share] == ids
    assert [len(share) for share in shares(ids, 2, seconds=seconds)] == [12, 260]  # files whole
    # Where a file's end is nearly as even (within what a file cut in two costs), the files stay whole.
    seconds |= {f"test/test_output.py::test_{n}": 0.002 for n in range(200)}
    assert [len(share) for share in shares(ids, 2, cut_files=True, seconds=seconds)] == [12, 260]
    # A suite too short for a file to be cut: a second process's start would cost more than it saves.
    quick = {name: taken / 4 for name, taken in seconds.items()}
    assert [len(share) for share in shares(ids, 2, cut_files=True, seconds=quick)] == [12, 260]


def test_a_file_cut_for_the_heads_shares_is_cut_by_its_functions_last_times() -> None:
    # more-itertools' shape: one big file whose first function is slow, then a small file.
    ids = [f"tests/test_more.py::{name}[{n}]" for name in ("test_slow", "test_quick", "test_other") for n in range(300)]
    ids += [f"tests/test_recipes.py::test_{n}" for n in range(100)]
    seconds = {"tests/test_more.py::test_slow": 3.0, "tests/test_more.py::test_quick": 0.3,
               "tests/test_more.py::test_other": 0.3, **{f"tests/test_recipes.py::test_{n}": 0.001 for n in range(100)}}

    assert [len(share) for share in shares(ids, 2, cut_files=True)] == [600, 400]  # by count
    assert [len(share) for share in shares(ids, 2, cut_files=True, seconds=seconds)] == [300, 700]


def test_the_heads_shares_cut_a_file_that_holds_most_of_the_suite_between_two_functions() -> None:
    # packaging's shape: one file of two functions with thousands of parameters each, then the rest.
    ids = [f"tests/test_version.py::{name}[{n}]" for name in ("test_true", "test_false") for n in range(9000)]
    ids += [f"tests/test_{name}.py::test_{n}" for name in ("markers", "tags") for n in range(4400)]

    whole, cut = shares(ids, 2), shares(ids, 2, cut_files=True)

    assert [len(share) for share in whole] == [18000, 8800]  # the base's runs: files whole
    assert [len(share) for share in cut] == [9000, 17800]
    assert [nodeid for share in cut for nodeid in share] == ids
    assert [len(share) for share in shares(ids, 4, cut_files=True)] == [9000, 9000, 4400, 4400]


def test_an_id_asked_for_and_not_collected_is_matched_to_the_same_functions_other_id_in_order() -> None:
    collected = ["t.py::test_when[2024-05-02T10:00:01]", "t.py::test_when[fixed]", "t.py::test_other[1]"]
    asked = ["t.py::test_when[2024-05-01T09:00:00]", "t.py::test_when[fixed]", "t.py::test_other[2]",
             "t.py::test_plain"]

    assert match(collected, asked) == {"t.py::test_when[2024-05-02T10:00:01]": "t.py::test_when[2024-05-01T09:00:00]",
                                       "t.py::test_other[1]": "t.py::test_other[2]"}
    assert match(["t.py::test_plain2"], ["t.py::test_plain"]) == {}  # not parametrized: never matched


def test_a_long_failure_on_both_sides_reads_the_same_from_what_a_baseline_keeps_of_it() -> None:
    # The base's report is cached cut to its end (run.why); the head's is whole. The same failure, in reports
    # longer than that, must read the same (else each such test ran again on the base in the head's order:
    # 498 tests, about a minute, on every check of attrs), and another failure must not.
    def report(address: str, last: str) -> run.TestOutcome:
        frames = "".join(f"tests/test_x.py:{n}: in helper\n    value = compute({n})\n" for n in range(40))
        return run.TestOutcome("tests/test_x.py::test_x", "failed", f"{frames}E   assert None is True\n"
                           f"E    +  where None = <calc.Thing object at {address}>.check()\nE   {last}\n")

    base = why(report("0x7fd4c11e7880", "AssertionError"))  # as the baseline keeps it
    same, other = report("0x7f8a8c8bd9c0", "AssertionError"), report("0x7f8a8c8bd9c0", "TypeError: bad")
    assert len(same.detail) > len(base)
    assert order._failure("failed", base) == order._failure("failed", why(same))
    assert order._failure("failed", base) != order._failure("failed", why(other))


CLOCK = '''\
import datetime

import pytest

from calc import add


@pytest.mark.parametrize("when", [datetime.datetime.now().isoformat(), "fixed"])
def test_when(when):
    assert add(len(when), 0) == len(when)
'''


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("broken", [False, True], ids=["honest", "regression"])
@pytest.mark.slow
def test_ids_computed_at_collection_are_matched_and_said_cold_and_warm(tmp_path: Path, broken: bool) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_clock.py": CLOCK, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: add", {"calc.py": CALC.replace("return a + b", "return a + b + 1") if broken
                             else CALC + "# a comment\n"})

    for verdict in (score_repo(repo), score_repo(repo)):  # cold, then warm
        charged = charged_statuses(verdict)
        if broken:
            assert {name for name in charged if "test_when" in name} == {
                name for name in (case.name for case in verdict.cases) if "test_when" in name}
            assert len([name for name in charged if "test_when" in name]) == 2
        else:
            assert verdict.accepted and not charged
        assert not any("before its outcome reached the gate" in case.detail for case in verdict.cases)
        assert any("parameter ids change from one collection to the next" in note.message
                   for note in verdict.notes), verdict.notes


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
def test_a_head_that_changes_a_tests_parameters_is_charged_as_not_collected_and_says_so(tmp_path: Path) -> None:
    sizes = ("import pytest\n\nimport calc\n\n\n@pytest.mark.parametrize('n', calc.SIZES)\n"
             "def test_size(n):\n    assert calc.add(n, 0) == n\n")
    repo = calc_project(tmp_path / "repo", extra_files={"calc.py": CALC + "\nSIZES = [1, 2]\n",
                                                        "tests/test_sizes.py": sizes, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: sizes", {"calc.py": CALC + "\nSIZES = [2, 3]\n"})

    verdict = score_repo(repo)

    assert charged_statuses(verdict) == todays_charges(repo) == {"tests/test_sizes.py::test_size[1]": "error"}
    [case] = [case for case in verdict.cases if case.name == "tests/test_sizes.py::test_size[1]"]
    assert "collected there with other parameters (tests/test_sizes.py::test_size[3])" in case.detail


# Tests skipped whatever runs before them (their marks) and one whose skip depends on what ran first (a string
# condition, evaluated as it starts: skipped after test_store, passing alone).
MARKS = '''\
import sys
import unittest

import pytest

import calc

STATE = {}


@pytest.mark.skip(reason="not yet")
def test_marked():
    assert calc.add(1, 1) == 2


@pytest.mark.skipif(sys.version_info < (3, 0), reason="python 2")
def test_kept():
    assert calc.add(2, 2) == 4


@pytest.mark.skipif(sys.maxsize > 0, reason="always, by a value")
def test_by_value():
    assert calc.add(2, 2) == 4


def test_store():
    STATE["ready"] = True


@pytest.mark.skipif("STATE.get('ready')", reason="only after test_store")
def test_by_string():
    assert calc.add(3, 3) == 6


class Old(unittest.TestCase):
    @unittest.skip("unittest's skip")
    def test_method(self):
        assert calc.add(1, 2) == 3

    def test_plain(self):
        assert calc.add(1, 2) == 3


@unittest.skip("the whole class")
class Gone(unittest.TestCase):
    def test_gone(self):
        assert calc.add(1, 2) == 3
'''
BY_MARKS = {f"tests/test_marks.py::{name}": why for name, why in (
    ("test_marked", "not yet"), ("test_by_value", "always, by a value"), ("Old::test_method", "unittest's skip"),
    ("Gone::test_gone", "the whole class"))}


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
def test_tests_skipped_by_their_marks_are_known_from_the_collection_and_charged_alike(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base never runs a test its marks skip (jsonschema: 500 such tests spread over a file of 7,000); one
    skipped by a string condition, which can depend on what ran first, still runs there."""
    cache = Path(tempfile.mkdtemp(dir=session_support.directory()))
    cache.chmod(0o755)
    monkeypatch.setenv("GATE_CACHE_DIR", str(cache))
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_marks.py": MARKS, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: a comment", {"calc.py": CALC + "# a comment\n"})

    honest = score_repo(repo)

    assert honest.accepted and not charged_statuses(honest)
    [stored] = (cache / "baselines").glob("*.json")
    cached = json.loads(stored.read_text())
    assert set(cached["skipped"]) == set(BY_MARKS)
    # Every other test passed on the head but the one skipped by its string: that one ran on the base, with the
    # tests before it in its file; the classes after it did not.
    assert cached["statuses"] == {**dict.fromkeys(BY_MARKS, "skipped"), "tests/test_marks.py::test_kept": "passed",
                                  "tests/test_marks.py::test_store": "passed",
                                  "tests/test_marks.py::test_by_string": "skipped"}
    for nodeid, reason in BY_MARKS.items():
        assert f"Skipped: {reason}" in cached["details"][nodeid]  # as pytest reports the skip
    [found] = honest.blind
    causes = {cause.cause: cause.tests for cause in found.causes if cause.kind == "skipped on both sides"}
    assert causes == {"not yet": 1, "always, by a value": 1, "unittest's skip": 1, "the whole class": 1,
                      "only after test_store": 1}
    # A regression, cold (its own base) and warm, charged as the base's whole suite run beside the head's does.
    repo = calc_project(tmp_path / "again", extra_files={"tests/test_marks.py": MARKS, "NOTES": "again\n"})
    repo.commit("bot: add", {"calc.py": CALC.replace("return a + b", "return a - b")})

    today, cold, warm = _both_ways(repo)

    assert today == cold == warm == {"tests/test_calc.py::test_add": "failed",
                                     "tests/test_marks.py::test_kept": "failed",
                                     "tests/test_marks.py::Old::test_plain": "failed"}


# One file that holds most of the suite, every fiftieth test needing its first to have run: the head's two
# shares cut it (gate/suite/run.py, `shares`: 404 tests, two shares of at least 200), so those of the second
# share (test_202, test_252, test_302, test_352) fail there for want of the first.
BIG = "import calc\n\nSTATE = {}\n\n\ndef test_000_store():\n    STATE['x'] = calc.add(1, 2)\n" + "".join(
    f"\n\ndef test_{n:03d}():\n    assert calc.add(STATE['x'], {n}) == {n + 3}\n" if n % 50 == 2 else
    f"\n\ndef test_{n:03d}():\n    assert calc.add(1, {n}) == {n + 1}\n" for n in range(1, 400))


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_file_cut_between_the_heads_shares_charges_as_the_whole_suite_does(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_big.py": BIG, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: mul", {"calc.py": CALC.replace("return a * b", "return a + b")})

    today = todays_charges(repo)
    verdict = score_repo(repo)  # cold
    cold, warm = charged_statuses(verdict), charged_statuses(score_repo(repo))

    assert today == cold == warm == {"tests/test_calc.py::test_mul": "failed"}
    # The second share's dependent tests failed on the head without test_000_store before them, and ran again in
    # the base's order before they could cost: the verdict says so.
    [said] = [note.message for note in verdict.notes if "order-dependent" in note.message]
    assert said.startswith("4 tests are order-dependent") and "tests/test_big.py::test_202" in said


# A head that breaks add from its third call in a process on: in the head's run (one worker) test_calc's test_add
# calls it first, then test_counts' two tests, so test_second fails there; in the base's order (its file's tests
# before it) add is called twice and it passes; the base passes it after the head's same tests. It fails again
# when the head runs it once more in its own order: the head's code made it fail in that order, and it costs.
COUNTS = "from calc import add\n\n\ndef test_first():\n    assert add(1, 1) == 2\n\n\ndef test_second():\n" \
         "    assert add(2, 2) == 4\n"
THIRD_CALL = "_CALLS = []\n\n\n" + CALC.replace("def add(a, b):\n    return a + b", "def add(a, b):\n"
                                                "    _CALLS.append(a)\n    return a + b if len(_CALLS) < 3 else a - b")


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
def test_a_test_the_head_fails_again_in_its_own_order_costs_points_tests(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", POLICY + "  workers: 1\n",
                        extra_files={"tests/test_counts.py": COUNTS, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: count", {"calc.py": THIRD_CALL})

    verdict = score_repo(repo)

    assert charged_statuses(verdict) == {"tests/test_counts.py::test_second": "failed"}
    assert [p.check for p in verdict.penalties] == ["tests"]
    [said] = [note.message for note in verdict.notes if "in the order its run gave them" in note.message]
    assert said.startswith("1 tests fail on the head in the order its run gave them") and "test_second" in said


@pytest.mark.usefixtures("offline_pip")
def test_a_test_that_did_not_pass_once_and_passes_each_time_again_is_nondeterministic(tmp_path: Path) -> None:
    """A test that failed in the head's run (a timing test on a loaded machine: given here as that run's
    outcome) and passes when run again in the base's order and in its own: it costs `points.nondeterminism`,
    once, not `points.tests`, and the verdict says why."""

    from gate.checks.tests import Changed, _score
    from gate.policy.model import Policy
    from gate.suite.baseline import Baseline
    from gate.suite.run import SuiteResult, run_suite

    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_counts.py": COUNTS, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})
    second = "tests/test_counts.py::test_second"

    with suite_runs(repo) as (sandbox, base_run, head_run, deadline):
        first = run_suite(sandbox, head_run, None, deadline)
        slow = replace(first.tests[second], status="failed", detail="E   AssertionError: took 3.2 s, the limit is 1 s")
        found = replace(first, tests={**first.tests, second: slow})
        known = Baseline(list(first.tests), dict.fromkeys(first.tests, "passed"))
        checked = order.check(sandbox, head_run, base_run, known, SuiteResult({}), found, deadline)

    outcome = checked.head.tests[second]
    assert outcome.flaky and outcome.status == "failed" and not checked.head.tampered
    assert [test for test, kept in checked.head.tests.items() if kept.flaky] == [second]
    [said] = checked.said
    assert said.startswith("1 tests are nondeterministic on the head") and second in said
    _, penalties = _score(Policy(), checked.base, checked.head.tests, {}, 1, Changed({}, "this PR"), {})
    assert [(p.check, p.points) for p in penalties] == [("nondeterminism", 2)]
    assert penalties[0].message.startswith(f"{second} did not pass on the head, then passed each time it ran again")


def test_a_timeout_says_how_long_the_base_took_and_names_the_limit_when_the_base_was_near_it() -> None:
    """A test that took most of tests.test_timeout on the base may only be slow (mccabe's Hypothesis test takes
    54-144 s under plain pytest, against the default 60 s): its charge says so, and what to raise."""
    from gate.checks.tests import Changed, _score
    from gate.policy.model import Policy, RepoSuite

    hung = "tests/test_calc.py::test_mul"
    outcome = run.TestOutcome(hung, "timeout", f"{TEST_TIMEOUT}: 60 s)", 60.0, 4)
    policy = Policy(tests=RepoSuite(test_timeout=60.0))
    said = {took: _score(policy, {hung: "passed"}, {hung: outcome}, {}, 1, Changed({}, "this PR"), {hung: took})[1]
            for took in (55.0, 0.2)}
    assert [(p.check, p.points) for p in said[55.0]] == [("timeout", 4)] == [(p.check, p.points) for p in said[0.2]]
    assert said[55.0][0].message.endswith(
        "the base's run of it took 55.0 s of tests.test_timeout's 60 s: if it is that slow, raise tests.test_timeout")
    assert said[0.2][0].message.endswith("the base's run of it took 0.2 s of tests.test_timeout's 60 s")
    # Without the base's time (a baseline cached before it was kept), the charge is as it was.
    [penalty] = _score(policy, {hung: "passed"}, {hung: outcome}, {}, 1, Changed({}, "this PR"), {})[1]
    assert "the base's run" not in penalty.message


# Stand-ins for the plugins that run a failing test again in its process, under their entry points' names.
# pytest-rerunfailures: each attempt through pytest's hooks as the plugin does it (a start, the reports, a
# failed one as "rerun"). flaky: its mark, which the gate reads as flaky reads it (the stand-in reruns nothing).
RERUNNING = """\
import pytest
from _pytest.runner import runtestprotocol


def pytest_addoption(parser):
    parser.addoption("--reruns", type=int, default=0)
    parser.addoption("--force-reruns", type=int, dest="force_reruns")
    parser.addoption("--fail-on-flaky", action="store_true", dest="fail_on_flaky")
    parser.addoption("--only-rerun", action="append", dest="only_rerun")
    parser.addoption("--rerun-except", action="append", dest="rerun_except")
    parser.addini("only_rerun", "errors to run a test again for", type="linelist")
    parser.addini("rerun_except", "errors never to run a test again for", type="linelist")


def pytest_configure(config):
    config.addinivalue_line("markers", "flaky(reruns): run a failing test again")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    mark = item.get_closest_marker("flaky")
    reruns = mark.kwargs.get("reruns", 1) if mark else item.config.getoption("reruns")
    if not reruns:
        return None
    for attempt in range(reruns + 1):
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        failed = any(report.failed for report in reports)
        for report in reports:
            if failed and attempt < reruns and report.failed:
                report.outcome = "rerun"
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        if not failed:
            break
    return True
"""
FLAKY_STUB = "def pytest_configure(config):\n    config.addinivalue_line('markers', 'flaky: run again')\n"
# pytest-retry's hooks, by which a conftest says which errors a test runs again for, or never for.
RETRY_STUB = FLAKY_STUB + """

class _Hooks:
    def pytest_set_filtered_exceptions(self):
        "The errors to run a test again for."

    def pytest_set_excluded_exceptions(self):
        "The errors never to run a test again for."


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(_Hooks)
"""
PLUGINS = {"rerunfailures": "pytest-rerunning", "flaky": "pytest-flakystub", "pytest-retry": "pytest-retrystub"}


@pytest.fixture
def rerunning(offline_pip: Path) -> Path:  # noqa: F811
    """The wheelhouse, with the stand-ins (PLUGINS, by entry point name)."""
    from tests.projects import write_wheel

    write_wheel(offline_pip, PLUGINS["rerunfailures"], {"pytest_rerunfailures.py": RERUNNING},
                entry_points="[pytest11]\nrerunfailures = pytest_rerunfailures\n")
    write_wheel(offline_pip, PLUGINS["flaky"], {"flaky_stub.py": FLAKY_STUB},
                entry_points="[pytest11]\nflaky = flaky_stub\n")
    write_wheel(offline_pip, PLUGINS["pytest-retry"], {"retry_stub.py": RETRY_STUB},
                entry_points="[pytest11]\npytest-retry = retry_stub\n")
    return offline_pip


def _rerunning_project(root: Path, files: dict[str, str], plugin: str | None = "rerunfailures",
                       policy: str = POLICY) -> Repo:
    """calc_project, its test extra with the stand-in of `plugin` (None: no rerun plugin)."""
    from tests.projects import pyproject

    extra = ["checkhelp", *([PLUGINS[plugin]] if plugin else [])]
    return calc_project(root, policy, extra_files={"pyproject.toml": pyproject("calc", [], extras={"test": extra}),
                                                   **files, "NOTES": f"{root}\n"})


# A regression that shows only when a later file was collected (it registers a plugin as it is imported): every
# run of the head's whole share fails the tests of sub, and a run of their file alone passes them. Run again as
# the head's run was, with every file it collected, they fail again: charged, never called nondeterministic.
REGISTRY = CALC + "\n\n_PLUGINS = []\n\n\ndef register(name):\n    _PLUGINS.append(name)\n\n\ndef sub(a, b):\n" \
                  "    return a - b\n"
SUBS = "from calc import sub\n" + "".join(f"\n\ndef test_sub_{n}():\n    assert sub({n}, 1) == {n - 1}\n"
                                          for n in range(3))
PLUGIN = "import calc\n\ncalc.register('z')\n\n\ndef test_registered():\n    assert 'z' in calc._PLUGINS\n"


@pytest.mark.usefixtures("rerunning")
@pytest.mark.parametrize("marked", [False, True], ids=["unmarked", "marked-flaky"])
@pytest.mark.slow
def test_a_regression_that_needs_a_later_file_collected_is_charged_not_nondeterministic(tmp_path: Path,
                                                                                        marked: bool) -> None:
    """Also when the base's suite marks those tests flaky: their run runs again as it was, later file and all."""
    subs = SUBS.replace("\n\ndef test_sub_", "\n\n@pytest.mark.flaky(reruns=2)\ndef test_sub_") if marked else SUBS
    repo = _rerunning_project(tmp_path / "repo", {
        "calc.py": REGISTRY, "tests/test_subs.py": "import pytest\n" + subs, "tests/test_zplugin.py": PLUGIN},
        policy=POLICY + "  workers: 1\n")
    repo.commit("bot: sub", {"calc.py": REGISTRY.replace("    return a - b\n", "    return a - b - len(_PLUGINS)\n")})

    verdict = score_repo(repo)

    assert charged_statuses(verdict) == {f"tests/test_subs.py::test_sub_{n}": "failed" for n in range(3)}
    assert not [p for p in verdict.penalties if p.check == "nondeterminism"] and not verdict.accepted


# Codecs a test runs one by one: objects, so pytest names each by its place in the list (`codec0`...).
CODECS = ("\n\nclass Codec:\n    def __init__(self, shift):\n        self.shift = shift\n\n"
          "    def encode(self, x):\n        return x + self.shift\n\n"
          "    def decode(self, x):\n        return x - self.shift\n")
ROUND_TRIP = ("import pytest\n\nfrom calc import CODECS\n\n\n@pytest.mark.parametrize('codec', CODECS)\n"
              "def test_round_trip(codec):\n    assert codec.decode(codec.encode(7)) == 7\n")
# The head breaks one codec and shuffles the list in each process: its failure lands on another id each time.
SHUFFLED = ("import random\n" + CALC + CODECS + "\n\nclass Broken(Codec):\n    def decode(self, x):\n"
            "        return x\n\n\nCODECS = [*(Codec(n) for n in range(7)), Broken(7)]\nrandom.shuffle(CODECS)\n")


@pytest.mark.usefixtures("rerunning")
@pytest.mark.parametrize("marked", [False, True], ids=["unmarked", "marked-flaky"])
@pytest.mark.slow
def test_a_failure_that_moves_between_parameter_ids_is_charged_not_forgiven(tmp_path: Path, marked: bool) -> None:
    """A parameter's id may say only where it is in the list. A head that breaks one codec and shuffles the list
    in each process fails `codecK` in its run and, run again, fails another id (or the same one): the test run
    again passes seven times in eight. Its other parameters run again too, and one that passed in the head's run
    and fails now leaves the test without an outcome there: charged, never nondeterministic nor forgiven as
    flaky (the base marking it flaky: its run again, twice)."""
    test = ROUND_TRIP.replace("def test_", "@pytest.mark.flaky(reruns=2)\ndef test_") if marked else ROUND_TRIP
    repo = _rerunning_project(tmp_path / "repo", {
        "calc.py": CALC + CODECS + "\n\nCODECS = [Codec(n) for n in range(8)]\n", "tests/test_codecs.py": test})
    repo.commit("bot: codecs", {"calc.py": SHUFFLED})

    verdict = score_repo(repo)

    [(charged, status)] = charged_statuses(verdict).items()
    assert charged.startswith("tests/test_codecs.py::test_round_trip[codec") and status == "failed"
    assert not [p for p in verdict.penalties if p.check == "nondeterminism"] and not verdict.accepted


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
def test_a_test_a_later_files_import_breaks_on_both_sides_is_not_charged_to_an_honest_head(tmp_path: Path) -> None:
    """The base's own bug: a later file's import (a plugin it registers) breaks the tests of sub on the base too.
    The base runs them in its order (their file alone) and passes them; the head, after that file, does not.
    The base then runs them in the head's order with the files of the head's run it has collected too, and
    fails them there as well: order-dependent, not the change's, and not charged."""
    buggy = REGISTRY.replace("    return a - b\n", "    return a - b - len(_PLUGINS)\n")
    repo = calc_project(tmp_path / "repo", POLICY + "  workers: 1\n", extra_files={
        "calc.py": buggy, "tests/test_subs.py": SUBS, "tests/test_y.py": "def test_y():\n    pass\n",
        "tests/test_zplugin.py": PLUGIN, "NOTES": f"{tmp_path}\n"})  # (test_y: the plugin's file is not the next)
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + buggy})

    verdict = score_repo(repo)

    assert charged_statuses(verdict) == {} and verdict.accepted
    assert any(note.message.startswith("3 tests are order-dependent") for note in verdict.notes)


# The base's suite marks test_second flaky, as zipp marks its big-O timing tests (pytest-ignore-flaky's mark).
FLAKY_COUNTS = COUNTS.replace("def test_second", "@pytest.mark.flaky(reruns=2)\ndef test_second").replace(
    "from calc import add", "import pytest\n\nfrom calc import add")


@pytest.mark.usefixtures("rerunning")
@pytest.mark.parametrize("case", ["marked by the base", "marked by the head", "the base ran it in that order",
                                  "too little time left", "marked with no plugin to run it again",
                                  "skipped on the head", "timed out at its limit"])
@pytest.mark.slow
def test_a_test_the_base_marks_flaky_that_passes_when_run_again_is_not_charged(tmp_path: Path, case: str) -> None:
    """A test that failed in the head's run (a timing test on a loaded machine: given here as that run's outcome)
    and passes when its run runs again as it was is not charged when the base's suite marks it flaky for a
    plugin that runs it again: the mark is its maintainers' word, read from the base's own collection; so also
    when the base ran it after the same tests in this gate (a cold baseline of a suite whose flaky test is in
    its first file). The head marking it gains nothing, nor does a mark no plugin of the suite reads: the same
    failure then costs `points.nondeterminism`, as for any test. With too little of the suite's time left for
    its run again, it goes on as any test, and the verdict says so; what a test that timed out took is its time
    limit. A skip is no failure a plugin runs again: the mark does not forgive it."""
    import time

    from gate.checks.tests import Changed, _score
    from gate.policy.model import Policy
    from gate.suite.baseline import Baseline
    from gate.suite.run import SuiteResult, collect, run_suite

    base_counts = COUNTS if case == "marked by the head" else FLAKY_COUNTS
    plugin = None if case == "marked with no plugin to run it again" else "rerunfailures"
    conftest = CONFTEST + "\n\ndef pytest_configure(config):\n    config.addinivalue_line('markers', 'flaky: x')\n"
    repo = _rerunning_project(tmp_path / "repo", {"tests/test_counts.py": base_counts,
                                                  **({} if plugin else {"tests/conftest.py": conftest})}, plugin)
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC, "tests/test_counts.py": FLAKY_COUNTS})
    second = "tests/test_counts.py::test_second"

    with suite_runs(repo) as (sandbox, base_run, head_run, deadline):
        collection = collect(sandbox, base_run, deadline)
        first = run_suite(sandbox, head_run, None, deadline)
        slow = {"skipped on the head": replace(first.tests[second], status="skipped", detail="Skipped: x"),
                "timed out at its limit": replace(first.tests[second], status="timeout", detail=f"{TEST_TIMEOUT}: x",
                                                  seconds=head_run.test_timeout, span=0.0)}.get(case) or \
            replace(first.tests[second], status="xfailed", detail="XFAIL flaky test failed: took 3.2 s")
        found = replace(first, tests={**first.tests, second: slow})
        on_base = run_suite(sandbox, base_run, None, deadline) if case == "the base ran it in that order" \
            else SuiteResult({})
        assert not on_base.tests or on_base.same_before(found, second)
        known = Baseline(list(collection.collected), dict.fromkeys(collection.collected, "passed"),
                         marked_flaky=dict(collection.marked_flaky))
        if case == "too little time left":
            deadline = time.monotonic() + 0.5
        if case == "timed out at its limit":  # (room for a run again of a test that takes no time: not of its limit)
            assert head_run.test_timeout >= 2
            deadline = time.monotonic() + 2 * _ROOM
        checked = order.check(sandbox, head_run, base_run, known, on_base, found, deadline)

    assert not checked.head.tampered
    cases, penalties = _score(Policy(), checked.base, checked.head.tests, {}, 1, Changed({}, "this PR"), {})
    outcome = checked.head.tests[second]
    if case in ("marked by the head", "marked with no plugin to run it again", "skipped on the head"):
        assert known.marked_flaky == ({second: 2} if case == "skipped on the head" else {})
        assert outcome.flaky and [(p.check, p.points) for p in penalties] == [("nondeterminism", 2)]
        return
    assert known.marked_flaky == {second: 2}
    if case == "timed out at its limit":
        assert outcome.status == "timeout" and penalties != []
    if case in ("too little time left", "timed out at its limit"):
        assert outcome.status != "xfailed" or [p.check for p in penalties] == ["tests"]
        assert checked.said[0] == ("1 tests marked flaky in the base's suite did not pass in the head's run, and too "
                                   "little of tests.timeout was left to run them again, so they go on as any test: "
                                   f"{second}")
        return
    assert outcome.status == "passed" and not outcome.flaky and penalties == []
    assert outcome.detail.startswith("marked flaky in the base's suite: it did not pass in the head's run "
                                     "(xfailed: XFAIL flaky test failed: took 3.2 s), then passed when that run ran "
                                     "again (try 1 of up to 2)")
    [row] = [report for report in cases if report.name == second]  # (the verdict's row says why it passed)
    assert row.status == "passed" and row.detail == outcome.detail.strip()
    [said] = checked.said
    assert said.startswith("1 tests marked flaky in the base's suite did not pass in the head's run") \
        and said.endswith(second)


# A session fixture whose teardown fails: pytest reports it on the run's last test (its `teardown_exact`).
TEARDOWN = CONFTEST + """

@pytest.fixture(scope="session", autouse=True)
def server():
    yield
    raise RuntimeError("the server did not stop in time")
"""


@pytest.mark.usefixtures("rerunning")
def test_a_flaky_marked_tests_run_again_keeps_the_test_after_it_so_its_teardown_is_as_in_its_run(
        tmp_path: Path) -> None:
    """Run again as it was, a test's run goes on to the test after it: the fixtures torn down after a test
    depend on what comes next (a session fixture's failing teardown lands on the run's last test), so a run that
    ended at the test would fail it where the head's run did not."""

    from gate.suite.baseline import Baseline
    from gate.suite.run import SuiteResult, collect, run_suite

    repo = _rerunning_project(tmp_path / "repo", {"tests/test_counts.py": FLAKY_COUNTS, "tests/conftest.py": TEARDOWN,
                                                  "tests/test_zlast.py": "def test_last():\n    pass\n"},
                              policy=POLICY + "  workers: 1\n")
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})
    second = "tests/test_counts.py::test_second"

    with suite_runs(repo) as (sandbox, base_run, head_run, deadline):
        collection = collect(sandbox, base_run, deadline)
        first = run_suite(sandbox, head_run, None, deadline)
        assert first.tests["tests/test_zlast.py::test_last"].status == "error"  # (the teardown's, on the last)
        slow = replace(first.tests[second], status="xfailed", detail="XFAIL flaky test failed: took 3.2 s")
        found = replace(first, tests={**first.tests, second: slow})
        known = Baseline(list(collection.collected), {**dict.fromkeys(collection.collected, "passed"),
                                                      "tests/test_zlast.py::test_last": "error"},
                         marked_flaky=dict(collection.marked_flaky))
        checked = order.check(sandbox, head_run, base_run, known, SuiteResult({}), found, deadline)

    assert checked.head.tests[second].status == "passed" and checked.said[0].startswith("1 tests marked flaky")


@pytest.mark.usefixtures("offline_pip")
def test_a_test_the_suites_time_did_not_reach_tells_nothing_of_it_and_one_past_its_own_limit_does(
        tmp_path: Path) -> None:
    """The base's outcome of a test in the head's order spares the head's failure of it only when the base's run
    finished it (gate/suite/order.py): one the suite's time (tests.timeout) ran out before is unknown, and the
    head's failure is charged; a test past its own limit (tests.test_timeout) did fail there."""
    import time

    from gate.suite.run import TestOutcome, out_of_suite_time, run_suite

    repo = calc_project(tmp_path / "repo", extra_files={"NOTES": f"{tmp_path}\n"})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})
    with suite_runs(repo) as (sandbox, base_run, _, _):
        late = run_suite(sandbox, base_run, ["tests/test_calc.py::test_add"], time.monotonic() + 0.5)

    [outcome] = late.tests.values()
    assert outcome.status == "timeout" and out_of_suite_time(outcome)
    assert not out_of_suite_time(TestOutcome("t", "timeout", "ran out of time (tests.test_timeout: 2 s)"))


# How each plugin reads a `flaky` mark, and how many times it runs the test again (the gate runs it at most twice).
RERUNFAILURES_MARKS = """import pytest
import sys


@pytest.mark.flaky(reruns=3)
def test_reruns():
    pass


@pytest.mark.flaky(1)
def test_one_rerun():
    pass


@pytest.mark.flaky(reruns=2, condition=sys.platform.startswith("win32"))
def test_on_windows():
    pass


@pytest.mark.flaky(reruns=2, condition="sys.platform == 'linux'")
def test_by_string():
    pass


@pytest.mark.flaky(reruns=0)
def test_no_reruns():
    pass


@pytest.mark.flaky(reruns=2, only_rerun=["ConnectionError"])
def test_only_on_connection_errors():
    pass


@pytest.mark.flaky
class TestMarked:
    def test_in_class(self):
        pass
"""
FLAKY_MARKS = """import pytest


class _Filter:  # flaky's FilterWrapper
    def __init__(self, chosen):
        self._filter = chosen


def _true(*args):
    return True


def _only_io(*args):
    return False


def flaky(max_runs=2, min_passes=1, rerun_filter=None):  # flaky's `@flaky`, as it marks a test
    def mark(test):
        test._flaky_max_runs, test._flaky_min_passes = max_runs, min_passes
        test._flaky_rerun_filter = _Filter(rerun_filter or _true)
        return test
    return mark


@flaky(max_runs=3)
def test_decorated():
    pass


@flaky(max_runs=3, min_passes=2)
def test_decorated_two_passes():
    pass


@flaky(max_runs=3, rerun_filter=_only_io)
def test_decorated_filtered():
    pass


@pytest.mark.flaky
def test_mark_default():
    pass


@pytest.mark.flaky(3, 2)
def test_mark_two_passes():
    pass


@pytest.mark.flaky(retries=4)
def test_retried():
    pass


@pytest.mark.flaky(retries=2, only_on=[OSError])
def test_retried_on_os_errors():
    pass
"""
R, F = "tests/test_rerunfailures_marks.py::", "tests/test_flaky_marks.py::"
READS = {
    "rerunfailures": {f"{R}test_reruns": 2, f"{R}test_one_rerun": 1, f"{R}TestMarked::test_in_class": 1,
                      f"{F}test_mark_default": 1, f"{F}test_mark_two_passes": 2, f"{F}test_retried": 1,
                      f"{F}test_retried_on_os_errors": 1},
    "flaky": {f"{R}test_reruns": 1, f"{R}test_on_windows": 1, f"{R}test_by_string": 1, f"{R}test_no_reruns": 1,
              f"{R}test_only_on_connection_errors": 1, f"{R}TestMarked::test_in_class": 1, f"{F}test_decorated": 2,
              f"{F}test_mark_default": 1, f"{F}test_retried": 1, f"{F}test_retried_on_os_errors": 1},
    "pytest-retry": {f"{R}test_reruns": 1, f"{R}test_one_rerun": 1, f"{R}test_no_reruns": 1,
                     f"{R}test_only_on_connection_errors": 1, f"{R}TestMarked::test_in_class": 1,
                     f"{F}test_mark_default": 1, f"{F}test_mark_two_passes": 1, f"{F}test_retried": 2},
    None: {},
}


@pytest.mark.usefixtures("rerunning")
@pytest.mark.parametrize("plugin", ["rerunfailures", "flaky", "pytest-retry", None])
def test_the_collection_reads_a_flaky_mark_as_the_suites_plugin_does(tmp_path: Path, plugin: str | None) -> None:
    """pytest-rerunfailures' `reruns` (by name or first), `condition` (a value; a string it evaluates reads as no
    mark) and `only_rerun`; flaky's `max_runs` and `min_passes` (by name or in order), its `rerun_filter`, its
    `@flaky`; pytest-retry's `retries` and `only_on`: a mark that does not hold on this platform, runs the test
    again only for some errors, or asks for more than one pass, is no mark, nor is one that no plugin of the
    suite reads."""
    from gate.suite.run import collect

    conftest = CONFTEST + "\n\ndef pytest_configure(config):\n    config.addinivalue_line('markers', 'flaky: x')\n"
    repo = _rerunning_project(tmp_path / "repo", {"tests/test_rerunfailures_marks.py": RERUNFAILURES_MARKS,
                                                  "tests/test_flaky_marks.py": FLAKY_MARKS,
                                                  **({} if plugin else {"tests/conftest.py": conftest})}, plugin)
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    with suite_runs(repo) as (sandbox, base_run, _, deadline):
        collection = collect(sandbox, base_run, deadline)

    assert not collection.tampered and dict(collection.marked_flaky) == READS[plugin]


SETTINGS = {
    "only_rerun in the ini file": ("rerunfailures", {"pytest.ini": "[pytest]\nonly_rerun = ConnectionError\n"}),
    "--rerun-except": ("rerunfailures", {"pytest.ini": "[pytest]\naddopts = --rerun-except OSError\n"}),
    "--force-reruns": ("rerunfailures", {"pytest.ini": "[pytest]\naddopts = --force-reruns 0\n"}),
    "--fail-on-flaky": ("rerunfailures", {"pytest.ini": "[pytest]\naddopts = --fail-on-flaky\n"}),
    "a conftest's errors to retry for": ("pytest-retry", {"tests/conftest.py": CONFTEST + (
        "\n\ndef pytest_set_filtered_exceptions():\n    return [ConnectionError]\n")}),
}


@pytest.mark.usefixtures("rerunning")
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_suite_whose_settings_filter_or_refuse_its_runs_again_marks_no_test(tmp_path: Path, setting: str) -> None:
    """The maintainers' CI runs a marked test again only for some errors (pytest-rerunfailures' `only_rerun`
    and `rerun_except`, by option or ini file; pytest-retry's hooks in a conftest), or runs every test again
    whatever its mark (`--force-reruns`), or fails the suite when a test passed only when run again
    (`--fail-on-flaky`): then it forgives no failure of a marked test for any error, and the gate reads no
    mark."""
    from gate.suite.run import collect

    plugin, files = SETTINGS[setting]
    repo = _rerunning_project(tmp_path / "repo", {"tests/test_rerunfailures_marks.py": RERUNFAILURES_MARKS,
                                                  "tests/test_flaky_marks.py": FLAKY_MARKS, **files}, plugin)
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    with suite_runs(repo) as (sandbox, base_run, _, deadline):
        collection = collect(sandbox, base_run, deadline)

    assert not collection.tampered and dict(collection.marked_flaky) == {}


@pytest.mark.usefixtures("rerunning")
@pytest.mark.slow
def test_a_test_the_base_marks_flaky_that_the_head_breaks_is_still_charged(tmp_path: Path) -> None:
    """The mark forgives a test that passes when its run runs again, not one the head's change makes
    fail there every time: its run run twice more, it fails each time, and costs `points.tests`."""
    repo = _rerunning_project(tmp_path / "repo", {"tests/test_counts.py": FLAKY_COUNTS},
                              policy=POLICY + "  workers: 1\n")
    repo.commit("bot: count", {"calc.py": THIRD_CALL})

    verdict = score_repo(repo)

    assert charged_statuses(verdict) == {"tests/test_counts.py::test_second": "failed"}
    assert [p.check for p in verdict.penalties] == ["tests"] and not verdict.accepted
    assert not [note for note in verdict.notes if "marked flaky" in note.message]


SECOND_TRY = """\
import pytest

CALLS = []


@pytest.mark.flaky(reruns=2)
def test_second_try():
    CALLS.append(1)
    assert len(CALLS) > 1, "passes the second time in a process"
"""


@pytest.mark.usefixtures("rerunning")
@pytest.mark.parametrize(("head", "loaded"), [("honest", "entry point"), ("regression", "entry point"),
                                              ("honest", "-p module")])
@pytest.mark.slow
def test_a_suite_whose_plugin_runs_failing_tests_again_in_its_process_is_scored_on_one_run_each(
        tmp_path: Path, head: str, loaded: str) -> None:
    """pytest-rerunfailures (`--reruns` in the base's addopts, a `flaky(reruns=2)` mark) starts a failing test
    again in its process, which the harness's records would read as tampering (a test started after its
    outcome) on every PR. The harness unregisters it once its options are read, whether autoload registered it
    (its entry point's name) or the configuration's `-p` (its module's): each test runs once, the gate runs the
    tests the base marks flaky again itself (a setting that runs every test again marks none), and a regression
    still costs."""
    options = "--reruns 1" + (" -p pytest_rerunfailures" if loaded == "-p module" else "")
    repo = _rerunning_project(tmp_path / "repo", {"pytest.ini": f"[pytest]\naddopts = {options}\n",
                                                  "tests/test_retry.py": SECOND_TRY})
    repo.commit("bot: change", {"calc.py": '"""A calculator."""\n\n' + (
        CALC if head == "honest" else CALC.replace("return a * b", "return a + b"))})

    verdict = score_repo(repo)
    with suite_runs(repo) as (sandbox, base_run, _, deadline):
        collection = run.collect(sandbox, base_run, deadline)

    assert dict(collection.marked_flaky) == {"tests/test_retry.py::test_second_try": 2}
    assert not verdict.blocked_reasons and not [p for p in verdict.penalties if p.check == "nondeterminism"]
    statuses = {case.name: case.status for case in verdict.cases if case.kind == "pytest"}
    assert statuses["tests/test_retry.py::test_second_try"] == "failed"  # (once in its process: on both sides)
    if head == "honest":
        assert verdict.accepted and charged_statuses(verdict) == {}
    else:
        assert not verdict.accepted and charged_statuses(verdict) == {"tests/test_calc.py::test_mul": "failed"}


# A test before the flaky-marked one that ends its process (given here as passing in the head's run).
ENDING = FLAKY_COUNTS.replace("def test_first():\n", "def test_first():\n    import os\n\n    os._exit(3)\n")


@pytest.mark.usefixtures("rerunning")
@pytest.mark.slow
def test_a_flaky_marked_test_run_again_in_a_new_process_is_not_forgiven(tmp_path: Path) -> None:
    """A head whose test before a flaky-marked one ends its process when their run runs again has the rest run
    in a new process, without the tests before it: the marked test passing there says nothing of its run, and
    it is charged (here it failed in the head's run only after test_first, which passed there)."""

    from gate.checks.tests import Changed, _score
    from gate.policy.model import Policy
    from gate.suite.baseline import Baseline
    from gate.suite.run import SuiteResult, collect, run_suite

    repo = _rerunning_project(tmp_path / "repo", {"tests/test_counts.py": ENDING})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})
    first_test, second = "tests/test_counts.py::test_first", "tests/test_counts.py::test_second"

    with suite_runs(repo) as (sandbox, base_run, head_run, deadline):
        collection = collect(sandbox, base_run, deadline)
        ran = run_suite(sandbox, head_run, None, deadline)
        failed = replace(ran.tests[second], status="failed", detail="E   AssertionError: after test_first")
        found = replace(ran, tests={**ran.tests, first_test: ran.tests[second], second: failed},
                        runs=((first_test, second),))
        known = Baseline(list(collection.collected), dict.fromkeys(collection.collected, "passed"),
                         marked_flaky=dict(collection.marked_flaky))
        checked = order.check(sandbox, head_run, base_run, known, SuiteResult({}), found, deadline)

    assert known.marked_flaky == {second: 2} and not checked.head.tampered
    _, penalties = _score(Policy(), checked.base, checked.head.tests, {}, 1, Changed({}, "this PR"), {})
    assert checked.head.tests[second].status == "failed" and [p.check for p in penalties] == ["tests"]


# A flaky-marked test over three sizes, the third of which always fails (given as passing in the head's run):
# by values (ids `1`, `2`, `3`) or by objects (pytest names them by their places: `size0`, `size1`, `size2`).
SIZES = """\
import pytest


class Size:
    def __init__(self, n):
        self.n = n


@pytest.mark.flaky(reruns=2)
@pytest.mark.parametrize("size", SIZES)
def test_sized(size):
    assert getattr(size, "n", size) != 3
"""


@pytest.mark.usefixtures("rerunning")
@pytest.mark.parametrize("named", ["by values", "by places"])
@pytest.mark.slow
def test_a_flaky_marked_parameter_counts_its_siblings_only_where_ids_are_places(tmp_path: Path, named: str) -> None:
    """A flaky-marked parameter that passes when its run runs again is forgiven; when its id is only its place
    in the list (a head may shuffle the list), only if its function's other parameters that passed in the head's
    run pass there too: here one of them fails there, and the verdict says why the run again told nothing.
    Where ids name values, another parameter's own failure does not count against it (an honest flaky test)."""

    from gate.suite.baseline import Baseline
    from gate.suite.run import SuiteResult, collect, run_suite

    sizes = "[1, 2, 3]" if named == "by values" else "[Size(1), Size(2), Size(3)]"
    repo = _rerunning_project(tmp_path / "repo", {"tests/test_sizes.py": SIZES.replace("SIZES", sizes)})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})
    ids = ["1", "2", "3"] if named == "by values" else ["size0", "size1", "size2"]
    first, third = (f"tests/test_sizes.py::test_sized[{each}]" for each in (ids[0], ids[2]))

    with suite_runs(repo) as (sandbox, base_run, head_run, deadline):
        collection = collect(sandbox, base_run, deadline)
        ran = run_suite(sandbox, head_run, None, deadline)
        assert ran.tests[first].status == "passed" and ran.tests[third].status == "failed"
        found = replace(ran, tests={**ran.tests, first: replace(ran.tests[first], status="failed", detail="E   x"),
                                    third: ran.tests[first]})
        known = Baseline(list(collection.collected), dict.fromkeys(collection.collected, "passed"),
                         marked_flaky=dict(collection.marked_flaky))
        checked = order.check(sandbox, head_run, base_run, known, SuiteResult({}), found, deadline)

    assert known.marked_flaky[first] == 2 and not checked.head.tampered
    if named == "by values":
        assert checked.head.tests[first].status == "passed"
        return
    assert checked.head.tests[first].status == "failed"
    assert any(said.startswith("1 tests marked flaky in the base's suite did not pass in the head's run and passed "
                               "when their run ran again, but that run tells nothing of them") and third in said
               for said in checked.said)

