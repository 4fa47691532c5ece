"""Run the repository's pytest suite (or part of it) and report each test as it finishes.

Request on stdin (JSON): {"args": paths for pytest, "select": node ids to keep, in the order pytest collects them
(null: all), "test_timeout": seconds, "plugins": "NAME=MODULE" for pytest to load, "key": a secret of this run,
"tripwires": the gate's plan (`place`), "collect_only": true to collect and run nothing, "rewritten": {path:
[sha256, magic, code]} and "keep": true (`_rewritten`)}. Records on the result
channel, one JSON object a line, written as each event happens, but for a test's outcome, which goes out with
the record after it (the next test's start, mostly: one write a test), the last one as its protocol ends (a
process that dies mid-suite has reported everything before; killed right after a test, that test reads as the
one it died in):
{"collected": [node ids], "unhostable": [node ids], "matched": {node id: node id asked for}, "always": the class
name of the run's always-equal object, and in a collection that runs nothing "skips": {node id: why, of each skipped
by its marks}, "flaky": {node id: how many times the suite runs it again when it fails} and "ignored": [the files
and folders pytest's ignore hook left out, from its root]}, {"deselected": [node
ids]}, {"collect_error": path, "detail"}, {"start": node id}, {"equal": node id, "site", "operand", "what", "how"}
(an object equal to everything that an assertion found equal: gate/suite/equality.py), {"replaced": node id, "what"}
(what that test depends on was no longer as collected before it ran: gate/suite/guard.py), {"test": node id,
"status", "detail", "seconds", "span", "line", "trace"}, {"rewritten": path, "magic", "code"} (`_rewritten`),
{"done": 0}, each with the key (the gate ignores a record without it). A node id asked for that pytest did not
collect is matched to one it collected and was not asked for, of the same test function with other parameters
(`match`: ids computed at collection time, from the clock, change from run to run); the gate decides whether that
match stands. A test's `seconds` are its own (from its start to its report), its `span` what it added to the run
(from the end of the test before it, or of the collection). A test's `line` is where pytest says it failed in its
own file (the failing assertion or the raising call: the last entry of its traceback there), else the line of its
definition; `trace` lists every entry of the failure's traceback, chained exceptions first, as [path, line], each
path relative to the working directory (the tree) when it is under it. A test's outcome that the watcher writes
because its process died or ran out of time says `"end": true`: the run ends there. {"evidence": text} is what the
harness itself saw go wrong in the tests' process: the gate takes it as evidence of tampering
(gate/suite/tripwire.py).

Tripwires (gate/suite/tripwire.py decides and checks them; this process only carries them out): the plan names
positions among the collected items (or, for a control run, node ids) where an item runs once more, right
before or right after its own run, through the same hooks as any test: the same item object, node id, location
and function. Its call fails from inside the test function (a profile hook raises as the function's frame
starts, before any of its code runs) or, for a tripwire that must pass, returns from there. Anything that
short-circuits the call or rewrites its report reads the wrong outcome there, and the gate sees it. Every test
function's call is watched the same way, armed or not, so that nothing tells the two apart but this plan.

This process is a watcher: pytest runs in a child, whose records it forwards, and it keeps the per-test limit
from outside that child: a test past `test_timeout` (give or take _POLL_S, how often the watcher reads) has its
process killed and is reported as a timeout, a test whose process dies (`os._exit(0)`) as failed. Either ends
this run: the gate runs the tests left in a new run, on the tree as it was exported (never on one the tests'
process wrote to). The gate counts a test whose record never came (the watcher itself killed) as failed.

The tests and the code under test share the child: the code could look for the key or patch pytest, which is
why the gate runs the base's tests and conftests only, plans tripwires and checks the records outside, flags
library code that reaches into the test framework, and names this in the verdict's isolation. This program is
the gate's: it starts with the standard library alone on its path (gate/sandbox/child.py), and the watcher
never imports anything of the tree's; in the child, pytest, pluggy and the plugins are imported from the
environment and the gate's copy before the tree comes first on the path, so no module of the tree named like
them is what runs. Plugins load only when the gate names them (`plugins`, the base's declared test
dependencies: registered as the modules imported, never looked up among entry points, which the head's
metadata can declare) or the base's configuration does (the gate sets
PYTEST_DISABLE_PLUGIN_AUTOLOAD); the cache provider is off.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select as select_module
import signal
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable, Generator
from typing import Any

RESULT_FD_ENV = "GATE_RESULT_FD"
# The plugins that run a failing test again in its own process, by their entry points' names and their modules
# (a `-p MODULE` registers one under its module's name): pytest-rerunfailures, flaky (which also patches pytest's
# runner as it does), pytest-retry.
_RERUNNING = {"rerunfailures": "pytest_rerunfailures", "flaky": "flaky.flaky_pytest_plugin",
              "pytest-retry": "pytest_retry.retry_plugin"}
# pytest-ignore-flaky's option: with it, a flaky-marked test's failure is an xfail (it runs nothing again).
_FORGIVING = "ignore_flaky"
# The most times the gate runs a test again itself (gate/suite/order.py).
_TRIES = 2
# How the watcher's report of a test past its own limit begins (a test that ran out of the suite's time, or was
# not reached before it ran out, reads otherwise: gate/suite/run.py).
TEST_TIMEOUT = "ran out of time (tests.test_timeout"
# Characters of a failure's report kept: its head (where the traceback starts) and its tail (the error), the middle
# cut beyond that (as gate/suite/run.py `clip` cuts it).
_DETAIL_HEAD, _DETAIL_TAIL = 1500, 3500
_TRACE = 200  # traceback entries kept of a failure's report
# The folder the run started in (the tree's top), bound as this module loads, as gate/suite/equality.py binds it:
# a failure's place is a path from here whatever folder a test moved the process to.
_STARTED_IN = os.getcwd()
FAIL, PASS = "fail", "pass"  # the tripwires' kinds: the call must fail, the call must pass


def place(collected: list[str], unhostable: set[str], trips: list[dict[str, Any]]
          ) -> dict[int, tuple[list[str], list[str]]]:
    """Where the plan's tripwires run among the `collected` node ids: by index of their host, the kinds that
    run before it and those that run after it, in the plan's order. A tripwire names its host (`host`: the
    first collected item with that node id) or a position (`at`, from 0 to 1: the item at that fraction of
    the list, or the next one that can host it, around the end). An item that is not a test function cannot
    (`unhostable`). The gate calls this too, on what the run reported, to know what each record must be."""
    placed: dict[int, tuple[list[str], list[str]]] = {}
    hostable = [index for index, nodeid in enumerate(collected) if nodeid not in unhostable]
    for trip in trips:
        if "host" in trip:
            found = [index for index in hostable if collected[index] == trip["host"]]
        else:
            start = min(int(float(trip["at"]) * len(collected)), len(collected) - 1)
            found = [index for index in hostable if index >= start] + hostable
        if found:
            before, after = placed.setdefault(found[0], ([], []))
            (before if trip["before"] else after).append(str(trip["kind"]))
    return placed


def function_of(nodeid: str) -> str | None:
    """The test function a parametrized node id names (`path::Class::test_f` of `path::Class::test_f[1-a]`), or
    None when it has no parameters."""
    name_at = nodeid.find("::")
    bracket = nodeid.find("[", name_at) if name_at >= 0 else -1
    return nodeid[:bracket] if bracket > 0 and nodeid.endswith("]") else None


def function_key(nodeid: str) -> str:
    """The test function a node id runs: `function_of`, or the node id itself when it has no parameters."""
    return function_of(nodeid) or nodeid


def match(collected: list[str], select: list[str]) -> dict[str, str]:
    """The node ids of `collected` that stand in for ids of `select` pytest did not collect: by test function, in
    order (the first id of `select` missing for a function takes the first collected id of that function that
    `select` does not name), as {collected id: id of `select`}. The gate calls this too, to check a run's."""
    asked, present = set(select), set(collected)
    spare: dict[str, list[str]] = {}
    for nodeid in collected:
        function = function_of(nodeid)
        if function is not None and nodeid not in asked:
            spare.setdefault(function, []).append(nodeid)
    matched: dict[str, str] = {}
    for nodeid in select:
        function = function_of(nodeid)
        if nodeid not in present and function is not None and spare.get(function):
            matched[spare[function].pop(0)] = nodeid
    return matched


class _Returned(BaseException):
    """Raised as a tripwire's test function starts, when the tripwire must pass: the call returns there."""


def _ignore_collect_path(self: GatePlugin, path: Any, config: Any) -> Generator[None, Any, None]:
    """GatePlugin._ignore_collect under pytest 6, whose hook names the path `path`."""
    outcome = yield
    self.note_ignored(outcome.get_result(), path, config)


class GatePlugin:
    """Writes one record per event on the result channel (a descriptor only this object names); a test's
    outcome with the record after it."""

    def __init__(self, fd: int, key: str, select: list[str] | None, plugins: list[tuple[str, Any]],
                 trips: list[dict[str, Any]], equality: Any, guard: Any) -> None:
        self._fd = fd
        self._equality = equality  # gate/suite/equality.py's Confirmation
        self._key = key
        self._asked = select
        self._plugins = plugins
        self._phases: dict[str, list[Any]] = {}
        self._started = 0.0
        self._finished = 0.0  # when the last test (or the collection) ended
        self._trips = trips
        self._hosts: dict[int, tuple[list[str], list[str]]] = {}  # by id() of the item
        self._armed: str | None = None  # the kind of the tripwire running now
        self._guard = guard  # gate/suite/guard.py's Guard: what the tests depend on, as collected
        # A test's outcome goes out with the next record (the next test's start, mostly): one write, one wake-up
        # of the watcher and of the gate a test instead of two. Sent before this process ends, however it ends
        # but killed; killed, the watcher says the process ended during that test (as it does for one killed
        # before it wrote).
        self._held = b""
        self._rerunning: set[str] = set()  # the entry points' names of those of _RERUNNING the suite loaded
        self._ignored: list[str] = []  # what pytest's ignore hook left out of the collection (_ignore_collect)
        # The files and folders skipped as they were collected (a module-level `pytest.importorskip` of what the
        # environment lacks, `pytest.skip(allow_module_level=True)`), with pytest's report of the skip.
        self._skipped_files: dict[str, str] = {}

    def pytest_addhooks(self, pluginmanager: Any) -> None:
        """Have the declared plugins registered where autoload would register them in the project's CI: after
        the command line's and the configuration's `-p` (a `-p no:NAME` turns one off, a `-p NAME` has loaded
        it already), before the early hooks (pytest-cov and pytest-django start in
        `pytest_load_initial_conftests`), under their entry points' names. pytest's start-up reads
        PYTEST_PLUGINS (`consider_env`) right after autoload's place: the registration goes first there. (This
        hook is called as the plugin is registered, before the arguments are read.)"""
        read_environment = pluginmanager.consider_env

        def register_then_read_environment() -> None:
            for name, module in self._plugins:
                if not (pluginmanager.is_blocked(name) or pluginmanager.get_plugin(name) is not None
                        or pluginmanager.is_registered(module)):
                    pluginmanager.register(module, name)
            read_environment()

        pluginmanager.consider_env = register_then_read_environment

    def write(self, record: dict[str, Any]) -> None:
        """Send `record`, after a test's outcome held back for it (`_held`); a test's outcome is held back."""
        self._held += (json.dumps({**record, "key": self._key}) + "\n").encode()
        if "test" not in record:
            self.flush()

    def flush(self) -> None:
        """Send the test's outcome held back, if any (the last test ended, the session, or this process)."""
        data, self._held = self._held, b""
        _send(self._fd, data)

    def _ignore_collect(self, collection_path: Any, config: Any) -> Generator[None, Any, None]:
        """(Wraps pytest_ignore_collect; before pytest 7, `_ignore_collect_path`.)"""
        outcome = yield
        self.note_ignored(outcome.get_result(), collection_path, config)

    def note_ignored(self, ignored: Any, path: Any, config: Any) -> None:
        """A file or folder the suite's configuration leaves out of the collection (a conftest's
        `collect_ignore_glob`, `--ignore` in its addopts), by its path from the root: the tests it defines are
        not lost."""
        if ignored:
            relative = os.path.relpath(str(path), str(getattr(config, "rootpath", None) or config.rootdir))
            if relative != ".":
                self._ignored.append(relative.replace(os.sep, "/"))

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.write({"collect_error": report.nodeid, "detail": _text(report)})
        elif report.skipped and report.nodeid:
            self._skipped_files[str(report.nodeid)] = _text(report)

    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        matched: dict[str, str] = {}
        if self._asked is not None:
            matched = match([item.nodeid for item in items], self._asked)
            wanted = {*self._asked, *matched}
            kept = [item for item in items if item.nodeid in wanted]
            dropped = [item for item in items if item.nodeid not in wanted]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        collected = [item.nodeid for item in items]
        unhostable = {item.nodeid for item in items if _codes(item) is None}
        record: dict[str, Any] = {"collected": collected, "unhostable": sorted(unhostable), "matched": matched,
                                  "always": self._equality.always}
        if config.option.collectonly:
            record["skips"] = {item.nodeid: reason for item in items if (reason := _skipped_alone(item)) is not None}
            record["flaky"] = {item.nodeid: tries for item in items
                               if (tries := _flaky_tries(item, self._rerunning, config))}
            record["ignored"] = sorted(set(self._ignored))
            record["skipped_files"] = self._skipped_files
        self.write(record)
        self._hosts = {id(items[index]): kinds for index, kinds in place(collected, unhostable, self._trips).items()}
        self._guard.note(items)
        self._finished = time.monotonic()

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        """(A wrapper, outermost.) The tripwires the plan puts before `item`, then its own run, then those
        after it; each through the whole protocol, as pytest runs any test (a tripwire's is the same item
        object). One before the item leaves its function's own fixtures torn down and its parents' set up; none
        comes after an item whose run ended the session."""
        # The names as the item's own run starts; a tripwire's run of it may find them as the one before left
        # them, its module's fixtures set up and patching as tests do (the item's own run is checked here).
        self._changed(item, names=not self._armed)
        kinds = None if self._armed else self._hosts.pop(id(item), None)
        for kind in kinds[0] if kinds else ():
            self._trip(item, kind, item.parent)
        outcome = yield
        if outcome.excinfo is not None:  # the session ends there (`pytest.exit`, an interrupt)
            return
        for kind in kinds[1] if kinds else ():
            self._trip(item, kind, nextitem)
        if nextitem is None and not self._armed:  # the last test: its outcome out before the session's end
            self.flush()

    def _trip(self, item: Any, kind: str, nextitem: Any) -> None:
        """Run `item` once more as a tripwire of `kind`: its failure counts towards nothing of the session
        (`--maxfail`, `-x`: the session would stop there, and pytest allows no undoing that), as it is the
        gate's and not the suite's."""
        session, option = item.session, item.config.option
        failed, most = session.testsfailed, getattr(option, "maxfail", 0)
        self._armed = kind
        option.maxfail = 0
        try:
            item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        finally:
            self._armed = None
            session.testsfailed, option.maxfail = failed, most

    def _changed(self, item: Any, names: bool) -> None:
        """Report what `item` depends on that is no longer as collected (gate/suite/guard.py)."""
        for change in self._guard.changed(item, names):
            self.write({"replaced": item.nodeid, "what": change})

    def pytest_runtest_call(self, item: Any) -> Any:
        """(A wrapper, innermost.) Watch for the test function's frame while the item's call runs: as it
        starts, a tripwire's call fails there, or returns there; any other test's goes on as it would."""
        self._changed(item, names=False)
        codes = _codes(item)
        if not codes or sys.getprofile() is not None:  # (another profiler: the tripwire cannot arm)
            yield
            return
        raised: BaseException | None = None
        if self._armed == FAIL:
            raised = AssertionError()
        elif self._armed == PASS:
            raised = _stop_unittest() if _unittest(item) else _Returned()
            self._equality.trip(item, item.cls if _unittest(item) else _test_case())
        watch = _watcher(codes, raised)
        sys.setprofile(watch)
        try:
            outcome = yield
        finally:
            if sys.getprofile() is watch:
                sys.setprofile(None)
        if raised is not None:
            _cut_at(raised, watch)
            if isinstance(raised, _Returned) and outcome.excinfo and outcome.excinfo[1] is raised:
                outcome.force_result(None)

    def pytest_deselected(self, items: list[Any]) -> None:
        if self._asked is None:  # the base's own selection (`-m` in its addopts), not the gate's
            self.write({"deselected": [item.nodeid for item in items]})

    def pytest_sessionstart(self, session: Any) -> None:
        """Unregister the plugins that run a failing test again in its process (_RERUNNING), once they have
        read their options (the base's `--reruns` in addopts stays valid): each test runs once here, so its
        outcome and a tripwire's are those of one run, and the gate runs a test the base's suite says may fail
        at random again itself, in a run of its own (gate/suite/order.py)."""
        manager = session.config.pluginmanager
        for name, plugin in manager.list_name_plugin():
            module = getattr(plugin, "__name__", None)
            found = next((entry for entry, path in _RERUNNING.items() if name in (entry, path) or module == path),
                         None)
            if found is not None and plugin is not None:
                self._rerunning.add(found)
                manager.unregister(plugin)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._equality.start(nodeid)
        self._phases[nodeid] = []
        self._started = time.monotonic()
        self.write({"start": nodeid})

    def pytest_runtest_logreport(self, report: Any) -> None:
        self._phases.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self._equality.start(None)
        reports = self._phases.pop(nodeid, [])
        status, detail = _outcome(reports)
        trace = _trace(reports)
        line = _line(location, trace)
        now = time.monotonic()
        self.write({"test": nodeid, "status": status, "detail": detail, "seconds": round(now - self._started, 4),
                    "span": round(now - (self._finished or self._started), 4), "line": line, "trace": trace})
        self._finished = now

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        self.flush()


def _codes(item: Any) -> set[Any] | None:
    """The code objects whose frame starting means the test function's call has begun (the function, what its
    decorators wrapped), or None when `item` is not a test function (a doctest, a plugin's item)."""
    from _pytest.python import Function

    if not isinstance(item, Function):
        return None
    codes = set()
    found: Any = item.obj
    for _ in range(16):
        found = getattr(found, "__func__", found)
        code = getattr(found, "__code__", None)
        if code is not None:
            codes.add(code)
        found = getattr(found, "__wrapped__", None)
        if found is None:
            break
    return codes


def _watcher(codes: set[Any], raised: BaseException | None) -> Callable[[Any, str, Any], None]:
    """A profile hook that, as a frame of `codes` starts, takes itself off and raises `raised` there (nothing
    for a test that is no tripwire)."""

    def watch(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            sys.setprofile(None)
            if raised is not None:
                raise raised

    return watch


def _cut_at(raised: BaseException, watch: Callable[..., None]) -> None:
    """End the traceback of `raised` at the test function's frame: the hook's own frame is not the test's."""
    entry = raised.__traceback__
    while entry is not None and entry.tb_next is not None:
        if entry.tb_next.tb_frame.f_code is watch.__code__:
            entry.tb_next = None
            return
        entry = entry.tb_next


def _flaky_tries(item: Any, rerunning: set[str], config: Any) -> int:
    """How many times the base's suite, as configured, runs `item` again when it fails (at most _TRIES; 2 where
    pytest-ignore-flaky forgives its failure): a `flaky` mark as the plugin the suite loaded reads it, or flaky's
    `@flaky`. 0 where the mark or the configuration filters what is run again (by exception, by platform as
    a string the plugin evaluates), or where the test must pass more than once: the gate runs it again for any
    failure and takes one pass. A setting that runs every failing test again (`--reruns N`) marks no test."""
    try:
        return _plugin_tries(item, rerunning, config)
    except Exception:  # (an odd mark, a property that raises: no mark, never a failed collection)
        return 0


def _plugin_tries(item: Any, rerunning: set[str], config: Any) -> int:
    mark = item.get_closest_marker("flaky")
    said, given = (mark.kwargs, mark.args) if mark is not None else ({}, ())
    tries = 0
    if mark is not None and said.get("condition", True) is True:
        # (`--force-reruns` runs every test again however marked, or none; `--fail-on-flaky` fails the suite
        # when a test passed only when run again: the maintainers' CI forgives no mark then)
        if "rerunfailures" in rerunning and not (
                said.get("only_rerun") or said.get("rerun_except") or _given(config, "only_rerun")
                or _given(config, "rerun_except") or config.getoption("force_reruns", None) is not None
                or config.getoption("fail_on_flaky", None)):
            tries = max(tries, _count(said.get("reruns", given[0] if given else 1)))
        if "pytest-retry" in rerunning and not (
                said.get("only_on") or said.get("exclude") or _hooked(config, "pytest_set_filtered_exceptions")
                or _hooked(config, "pytest_set_excluded_exceptions")):
            tries = max(tries, _count(said.get("retries", 1)))
    if "flaky" in rerunning:
        tries = max(tries, _flaky_runs(item, mark) - 1)
    if mark is not None and config.getoption(_FORGIVING, None) is True:
        tries = _TRIES
    return min(tries, _TRIES)


def _given(config: Any, name: str) -> bool:
    """Whether the suite's options, else its ini file, give pytest-rerunfailures' filter `name`, as the plugin
    reads it."""
    if config.getoption(name, None):
        return True
    try:
        return bool(config.getini(name))
    except ValueError:  # (a version of the plugin without that ini key)
        return False


def _hooked(config: Any, name: str) -> bool:
    """Whether a conftest or plugin of the suite implements pytest-retry's hook `name` (the errors it runs a
    test again for, or never for)."""
    caller = getattr(config.hook, name, None)
    return caller is not None and bool(caller.get_hookimpls())


def _flaky_runs(item: Any, mark: Any) -> int:
    """The runs flaky's `@flaky` or its reading of a `flaky` mark (max_runs, min_passes, rerun_filter; by
    default 2, 1 and any failure) gives `item` that one pass ends: 0 for none."""
    for owner in (getattr(item, "obj", None), getattr(item, "cls", None)):
        runs = getattr(owner, "_flaky_max_runs", None)
        if runs is not None:
            passes = getattr(owner, "_flaky_min_passes", 1)
            chosen = getattr(getattr(owner, "_flaky_rerun_filter", None), "_filter", None)
            return _count(runs) if passes == 1 and getattr(chosen, "__name__", "_true") == "_true" else 0
    if mark is None:
        return 0
    given = {**dict(zip(("max_runs", "min_passes", "rerun_filter"), mark.args, strict=False)), **mark.kwargs}
    return _count(given.get("max_runs", 2)) if given.get("min_passes", 1) == 1 and \
        given.get("rerun_filter") is None else 0


def _count(value: Any) -> int:
    """A count a plugin was given, when it is a whole number above 0; else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _skipped_alone(item: Any) -> str | None:
    """Why `item` is skipped whatever runs before it, as pytest reports the skip, or None: a `skip` mark, a
    `skipif` mark whose conditions are values (not strings, which pytest evaluates as the test starts),
    unittest's `skip` on its method or class. pytest checks marks before it sets up any fixture, and unittest
    before `setUp`."""
    from _pytest.skipping import evaluate_skip_marks

    reason: str | None = None
    if _unittest(item):
        owner = next((o for o in (item.obj, item.parent.obj) if getattr(o, "__unittest_skip__", False)), None)
        reason = None if owner is None else str(getattr(owner, "__unittest_skip_why__", ""))
    conditions = [value for mark in item.iter_markers(name="skipif")
                  for value in ((mark.kwargs["condition"],) if "condition" in mark.kwargs else mark.args)]
    if reason is None and not any(isinstance(value, str) for value in conditions):
        try:
            skip = evaluate_skip_marks(item)
        except Exception:  # a condition that raises: pytest reports an error, not a skip
            skip = None
        reason = None if skip is None else str(skip.reason)
    if reason is None:
        return None
    path, line = item.reportinfo()[:2]
    return str((str(path), (line or 0) + 1, f"Skipped: {reason}"))


def _unittest(item: Any) -> bool:
    from _pytest.unittest import TestCaseFunction

    return isinstance(item, TestCaseFunction)


def _test_case() -> type:
    import unittest

    return unittest.TestCase


def _stop_unittest() -> BaseException:
    """What a unittest test method raises to end as a success (unittest counts its `_ShouldStop` so)."""
    import unittest.case

    stop: BaseException = unittest.case._ShouldStop()  # type: ignore[attr-defined]
    return stop


def _outcome(reports: list[Any]) -> tuple[str, str]:
    """passed, failed (the test), error (its setup or teardown), skipped, xfailed, from its phases' reports."""
    for report in reports:
        if report.failed:
            return ("failed" if report.when == "call" else "error"), _text(report)
    for report in reports:
        if report.skipped:
            return ("xfailed" if hasattr(report, "wasxfail") else "skipped"), _text(report)
    if not any(report.when == "call" for report in reports):
        return "error", "the test did not run"
    return "passed", ""


def _text(report: Any) -> str:
    try:
        text = str(report.longreprtext)
    except Exception:  # a report object the code under test replaced
        text = "no report"
    if len(text) <= _DETAIL_HEAD + _DETAIL_TAIL:
        return text
    cut = len(text) - _DETAIL_HEAD - _DETAIL_TAIL
    return f"{text[:_DETAIL_HEAD]}\n[... {cut} characters cut ...]\n{text[-_DETAIL_TAIL:]}"


def _trace(reports: list[Any]) -> list[list[Any]]:
    """The entries of the first failed phase's traceback, as [path, line] (1-based), chained exceptions first;
    [] when it has none (a skip, a report without a traceback)."""
    failed = next((report for report in reports if report.failed), None)
    entries: list[list[Any]] = []
    try:
        longrepr = failed.longrepr if failed is not None else None
        chain = getattr(longrepr, "chain", None)
        parts = [part[0] for part in chain] if chain else [getattr(longrepr, "reprtraceback", None)]
        here = os.getcwd()  # (pytest's paths are from the folder the process is in now)
        for part in parts:
            for entry in getattr(part, "reprentries", None) or ():
                where = getattr(entry, "reprfileloc", None)
                if where is None or not isinstance(where.lineno, int):
                    continue
                path = os.path.normpath(os.path.join(here, str(where.path)))
                if path.startswith(_STARTED_IN + os.sep):
                    path = os.path.relpath(path, _STARTED_IN)
                entries.append([path, where.lineno])
    except Exception:  # a report object the code under test replaced
        return []
    return entries[-_TRACE:]


def _line(location: Any, trace: list[list[Any]]) -> int | None:
    """The line pytest names for the test's failure in its own file (the last traceback entry there), else the
    line of its definition."""
    if not location or not isinstance(location[1], int):
        return None
    own = os.path.normpath(str(location[0]))
    return next((line for path, line in reversed(trace) if path == own), location[1] + 1)


def main() -> None:
    """The watcher: runs pytest in a child process to its end or its death, forwarding its records to the
    gate, and enforces the per-test limit from outside the child (the code under test can cancel nothing
    here)."""
    fd = int(os.environ.pop(RESULT_FD_ENV))
    request = json.loads(sys.stdin.read())
    args = [*request["args"], *(["--collect-only"] if request.get("collect_only") else [])]
    _one_child(fd, request["key"], request["select"], args, list(request.get("plugins", ())),
               float(request["test_timeout"]), list(request.get("tripwires", ())), request.get("rewritten", {}),
               bool(request.get("keep")))
    _write(fd, {"done": 0, "key": request["key"]})
    os._exit(0)


def _one_child(fd: int, key: str, select: list[str] | None, args: list[str], plugins: list[str], limit: float,
               trips: list[dict[str, Any]], given: dict[str, list[str]], keep: bool) -> None:
    """Run one pytest child to its end or its death (a test past its limit is killed with it). The watcher
    reads the child's records every _POLL_S, not as each is written: woken by each test's record, it would
    take the core from the child (and wake the gate) once a test: 4-7% of zope.interface's warm verdict
    (docs/benchmarks.md). The child's end wakes it at once, through a pidfd."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.close(fd)
        _child(write, key, select, args, plugins, trips, given, keep)
    os.close(write)
    with contextlib.suppress(OSError):  # (room for what the child writes between two reads)
        fcntl.fcntl(read, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    os.set_blocking(read, False)
    current: str | None = None
    deadline = None
    buffer = b""
    ended = False
    handle = -1
    try:
        handle = os.pidfd_open(pid)
        while not ended:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            ended = bool(select_module.select([handle], [], [], wait)[0])
            with contextlib.suppress(BlockingIOError):  # (one read takes all the pipe holds: its end's too)
                buffer += os.read(read, _PIPE_BYTES)
            lines = buffer.split(b"\n")
            buffer = lines.pop()
            forwarded = []
            for line in lines:
                record = _record(line, key)
                if record is None:
                    continue
                forwarded.append(line + b"\n")  # as the child wrote it: the gate parses it the same way
                if "start" in record:
                    current, deadline = str(record["start"]), time.monotonic() + limit
                elif "test" in record:
                    current, deadline = None, None
            _send(fd, b"".join(forwarded))  # (what one read brought: one write, one wake-up of the gate)
            if not ended and deadline is not None and time.monotonic() >= deadline:  # the test ran past its limit
                os.kill(pid, signal.SIGKILL)
                _write(fd, {"test": current, "status": "timeout", "key": key, "seconds": limit, "end": True,
                            "detail": f"{TEST_TIMEOUT}: {limit:g} s)"})
                current = None
                break
    finally:
        if handle >= 0:
            os.close(handle)
        os.close(read)
    _, status = os.waitpid(pid, 0)
    if current is not None:  # the process ended during a test: that test's outcome never came
        code = os.waitstatus_to_exitcode(status)
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        _write(fd, {"test": current, "status": "failed", "key": key, "end": True,
                    "detail": f"the test process {how} during this test"})


# How often the watcher reads the child's records (a test's limit is kept to within this), and the pipe's room
# for what the child writes meanwhile.
_POLL_S = 0.01
_PIPE_BYTES = 1 << 20


def _record(line: bytes, key: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and record.get("key") == key else None


def _write(fd: int, record: dict[str, Any]) -> None:
    _send(fd, (json.dumps(record) + "\n").encode())


def _send(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _child(fd: int, key: str, select: list[str] | None, args: list[str], plugins: list[str],
           trips: list[dict[str, Any]], given: dict[str, list[str]], keep: bool) -> None:
    """The pytest process: its records go to the watcher on `fd`; never returns."""
    # pytest's terminal output is not read for outcomes (each travels on the channel), but when pytest stops
    # without running the suite (a usage or internal error, a hook that fails), its last lines say why: they
    # go to stderr, which the gate quotes.
    try:  # a file with no name, in the run's private /tmp: nothing is left behind
        terminal = os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR, 0o600)
    except OSError:
        terminal = os.open(os.devnull, os.O_WRONLY)
    os.dup2(terminal, 1)
    code: int | None = None
    failure = ""
    plugin: GatePlugin | None = None
    try:
        named = [(name, module or name) for name, _, module in (entry.partition("=") for entry in plugins)]
        imported = _import_framework([module for _, module in named])
        import pytest

        _share_parsed_sources()
        # After every other plugin's selection (`-m`, `-k` in the base's addopts), so that what it reports
        # is what runs.
        GatePlugin.pytest_collection_modifyitems = pytest.hookimpl(trylast=True)(  # type: ignore[method-assign]
            GatePlugin.pytest_collection_modifyitems)
        # The tripwires run outside every other plugin's protocol (each of them sees a tripwire as a test), and
        # the watch on the function is nearest its call. (Old-style wrappers: every pluggy pytest runs on.)
        GatePlugin.pytest_runtest_protocol = pytest.hookimpl(  # type: ignore[method-assign]
            hookwrapper=True, tryfirst=True)(GatePlugin.pytest_runtest_protocol)
        GatePlugin.pytest_runtest_call = pytest.hookimpl(  # type: ignore[method-assign]
            hookwrapper=True, trylast=True)(GatePlugin.pytest_runtest_call)
        # (And, should the last item's protocol not end, before the other plugins' own end of the session.)
        GatePlugin.pytest_sessionfinish = pytest.hookimpl(  # type: ignore[method-assign]
            tryfirst=True)(GatePlugin.pytest_sessionfinish)
        GatePlugin.pytest_ignore_collect = pytest.hookimpl(hookwrapper=True)(  # type: ignore[attr-defined]
            GatePlugin._ignore_collect if hasattr(pytest, "version_tuple") else _ignore_collect_path)
        # The plugins are registered as the modules imported here: `-p NAME` would have pytest look NAME up among
        # the entry points of every distribution on the path first, the head's own metadata (a `*.dist-info` of
        # its tree or of its build's wheel) among them, and load what that names instead. One that did not import
        # is named with `-p`, for pytest to say why.
        # Each comparison an assertion finds equal is confirmed (gate/suite/equality.py): in the assertions pytest
        # rewrites (`--assert=rewrite`, whatever the base's configuration says) and in unittest's.
        import unittest

        import _gate_equality as equality
        import _gate_guard
        import _pytest.assertion.rewrite as rewrite

        confirmation = equality.Confirmation(lambda record: plugin.write(record) if plugin else None,
                                             *equality.names(2))
        equality.hook(rewrite, confirmation)
        _rewritten(rewrite, given, (lambda record: plugin.write(record) if plugin else None) if keep else None)
        confirmation.wrap_unittest(unittest.TestCase)
        plugin = GatePlugin(fd, key, select, [(name, imported[module]) for name, module in named
                                              if module in imported], trips, confirmation, _gate_guard.Guard())
        options = [option for _, module in named if module not in imported for option in ("-p", module)]
        if plugins:  # imported before pytest could (see _import_framework): pytest cannot rewrite their asserts
            # and warns, which the base's `filterwarnings = error` would make an error that stops the run. The
            # message names the module after ": " or "; " (pytest's versions differ), which `-W` cannot hold.
            options += ["-W", "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"]
        code = int(pytest.main([*args, *options, "-p", "no:cacheprovider", "--rootdir", ".", "-q", "--assert=rewrite",
                                "--tb=short", "--continue-on-collection-errors",
                                "-o", "console_output_style=classic"], plugins=[plugin]))
    except BaseException:  # pytest itself stopped (a conftest's hook it refuses, ...): the last line says why
        failure = "".join(traceback.format_exc().splitlines(keepends=True)[-6:])
    finally:
        if plugin is not None:
            with contextlib.suppress(OSError):  # (the channel closed by a test: os._exit all the same)
                plugin.flush()
        if code not in (0, 1):  # OK, TESTS_FAILED: anything else did not run the suite as asked
            _quote_terminal(terminal, failure)
        os._exit(0)


def _rewritten(rewrite: Any, given: dict[str, list[str]], keep: Callable[[dict[str, Any]], None] | None) -> None:
    """Have pytest (its assertion rewriting module `rewrite`) take the code `given` for a file of the tree, by
    its path, instead of rewriting it, when the file is the source that code was made of (its sha256) by an
    interpreter of this one's bytecode (its magic number); with `keep` (the base's own runs), hand each module it
    rewrites there to the gate, up to _KEPT bytes (gate/suite/rewritten.py)."""
    import base64
    import hashlib
    import importlib.util
    import marshal

    rewrite_test = rewrite._rewrite_test
    magic = importlib.util.MAGIC_NUMBER.hex()
    room = [_KEPT]

    def rewritten(fn: Any, config: Any) -> tuple[Any, Any]:  # (pytest writes the first only as a pyc: never here)
        path = os.path.relpath(os.fspath(fn))
        entry = given.get(path)
        if isinstance(entry, list) and len(entry) == 3 and entry[1] == magic:
            with open(fn, "rb") as source:
                if hashlib.sha256(source.read()).hexdigest() == entry[0]:
                    with contextlib.suppress(ValueError, EOFError, TypeError):
                        return os.stat(fn), _named(marshal.loads(base64.b64decode(entry[2])), os.fspath(fn))
        made: tuple[Any, Any] = rewrite_test(fn, config)
        if keep is not None and not path.startswith(os.pardir):
            code = base64.b64encode(marshal.dumps(made[1])).decode()
            if len(code) <= room[0]:
                room[0] -= len(code)
                keep({"rewritten": path, "magic": magic, "code": code})
        return made

    rewrite._rewrite_test = rewritten


# What a run hands back of the modules it rewrote, at most: a share of its channel (gate/suite/run.py).
_KEPT = 6 * 1024 * 1024


def _named(code: Any, filename: str) -> Any:
    """`code` (a module's, and each code object in it) as compiled from `filename`: where its tracebacks point
    when it was kept from a run that had the same file elsewhere."""
    if not isinstance(code, types.CodeType):
        raise TypeError("not a module's code")
    if code.co_filename == filename:
        return code
    return code.replace(co_filename=filename, co_consts=tuple(
        _named(const, filename) if isinstance(const, types.CodeType) else const for const in code.co_consts))


def _share_parsed_sources() -> None:
    """One parse of a test file for every failure report of the run, where pytest parses the whole file again
    for each report (to show the failing statement: 0.2 s for a file of 6,000 lines, on every failing test and
    every tripwire that must fail). A parse is kept while its file is unchanged."""
    try:
        import _pytest._code.code as code

        formatter: Any = vars(code)["FormattedExcinfo"]
        init = formatter.__init__
    except (ImportError, KeyError, AttributeError):  # (another pytest: each report parses, as pytest does)
        return
    shared = _Parsed()

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if isinstance(getattr(self, "astcache", None), dict):
            self.astcache = shared

    formatter.__init__ = __init__


class _Parsed(dict[Any, Any]):
    """pytest's cache of parsed files (a path's tree), each parse kept with its file's size and time: a test
    that writes a file and fails in it twice is shown each version."""

    def get(self, key: Any, default: Any = None) -> Any:
        found = super().get(key)
        return found[1] if found is not None and found[0] == _stamp(key) else default

    def __getitem__(self, key: Any) -> Any:
        found = self.get(key, _MISSING)
        if found is _MISSING:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, (_stamp(key), value))


_MISSING = object()


def _stamp(path: Any) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return info.st_mtime_ns, info.st_size


def _quote_terminal(terminal: int, failure: str) -> None:
    """The last lines pytest printed, then the error that stopped it, on stderr (best effort: the run's
    outcome does not depend on it)."""
    try:
        sys.stdout.flush()
        size = os.lseek(terminal, 0, os.SEEK_END)
        os.lseek(terminal, max(0, size - 4096), os.SEEK_SET)
        tail = os.read(terminal, 4096).decode("utf-8", "replace").strip().splitlines()[-12:]
        os.write(2, ("\n".join(tail) + "\n" + failure).encode())
    except (OSError, ValueError):
        pass


# The framework's modules, imported before the tree's modules can stand in for them.
FRAMEWORK = ("pytest", "_pytest", "pluggy", "iniconfig", "py")
# What this program itself imports once pytest runs (the tripwires' checks, the equality confirmation and what it
# imports), imported with the framework: never a module of the tree's (a head `unittest/`, `secrets.py`).
_OWN = ("_pytest.python", "_pytest.unittest", "unittest.case", "_pytest.assertion.rewrite", "unittest",
        "_gate_equality", "_gate_guard")
# What a zygote imports once for all the runs of this program (RunRequest.framework): the framework, what this
# program imports of it, and the plugins pytest loads in every run (pytest 7 to 9 name them; a version without
# one of them does not have it imported).
PREIMPORTED = (*FRAMEWORK, *(name for name in _OWN if not name.startswith("_gate_")), *(f"_pytest.{name}" for name in (
    "mark", "main", "runner", "fixtures", "helpconfig", "python", "terminal", "debugging", "unittest", "capture",
    "skipping", "legacypath", "tmpdir", "monkeypatch", "recwarn", "pastebin", "assertion", "junitxml", "doctest",
    "setuponly", "setupplan", "stepwise", "unraisableexception", "threadexception", "warnings", "logging",
    "reports", "python_path", "faulthandler", "subtests", "nose")))


def _import_framework(plugins: list[str]) -> dict[str, Any]:
    """Import pytest, what it imports and the plugins from the environment and the gate's copy (the tree's import
    path without the working directory and its roots: a `pytest.py` of the tree would come first otherwise),
    then put the tree on the path, as the tests have it; returns the plugins' modules that imported, by name."""
    import _gate_tree as tree  # (a harness module of the run's: the gate's own process imports this one too)

    here = os.getcwd()
    sys.path[:] = [path for path in tree.path() if path != here and not path.startswith(here + os.sep)]
    imported = {}
    try:
        for module in (*FRAMEWORK, *_OWN, *plugins):
            try:
                __import__(module)
            except ImportError:  # not installed here (`py` before pytest 7.2): pytest says so if it needs it
                continue
            if module in plugins:
                imported[module] = sys.modules[module]
    finally:
        tree.enter()
    return imported
