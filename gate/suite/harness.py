"""Run the repository's pytest suite (or part of it) and report each test as it finishes.

Request on stdin (JSON): {"args": paths for pytest, "select": node ids to keep (null: all), "test_timeout":
seconds, "plugins": "NAME=MODULE" for pytest to load, "key": a secret of this run}. Records on the result
channel, one JSON object a line, written as each event happens (a process that dies mid-suite has reported
everything before):
{"collected": [node ids]}, {"deselected": [node ids]}, {"collect_error": path, "detail"}, {"start": node id},
{"test": node id, "status", "detail", "seconds", "line"}, {"done": 0}, each with the key (the gate ignores a
record without it).

This process is a watcher: pytest runs in a child, whose records it forwards, and it keeps the per-test limit
from outside that child: a test past `test_timeout` has its process killed and is reported as a timeout, a
test whose process dies (`os._exit(0)`) as failed. Either ends this run: the gate runs the tests left in a new
run, on the tree as it was exported (never on one the tests' process wrote to). The gate counts a test whose
record never came (the watcher itself killed) as failed.

The tests and the code under test share the child: the code could look for the key or patch pytest, which
is why the gate runs the base's tests and conftests only, flags library code that reaches into the test
framework, and names this in the verdict's isolation. pytest, pluggy and the plugins are imported from the
environment and the gate's copy before the tree comes first on the path, so no module of the tree named like
them is what runs. Plugins load only when the gate names them (`plugins`, the base's declared test
dependencies: registered as the modules imported, never looked up among entry points, which the head's metadata
can declare) or the base's configuration does (the gate sets PYTEST_DISABLE_PLUGIN_AUTOLOAD); the cache
provider is off.
"""

from __future__ import annotations

import json
import os
import select as select_module
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

RESULT_FD_ENV = "GATE_RESULT_FD"
_DETAIL = 1500  # characters of a failure's report kept


class GatePlugin:
    """Writes one record per event on the result channel (a descriptor only this object names)."""

    def __init__(self, fd: int, key: str, select: list[str] | None, plugins: list[tuple[str, Any]]) -> None:
        self._fd = fd
        self._key = key
        self._select = None if select is None else set(select)
        self._plugins = plugins
        self._phases: dict[str, list[Any]] = {}
        self._started = 0.0

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
        data = (json.dumps({**record, "key": self._key}) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data):]

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.write({"collect_error": report.nodeid, "detail": _text(report)})

    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        if self._select is not None:
            kept = [item for item in items if item.nodeid in self._select]
            dropped = [item for item in items if item.nodeid not in self._select]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        self.write({"collected": [item.nodeid for item in items]})

    def pytest_deselected(self, items: list[Any]) -> None:
        if self._select is None:  # the base's own selection (`-m` in its addopts), not the gate's
            self.write({"deselected": [item.nodeid for item in items]})

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._phases[nodeid] = []
        self._started = time.monotonic()
        self.write({"start": nodeid})

    def pytest_runtest_logreport(self, report: Any) -> None:
        self._phases.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        status, detail = _outcome(self._phases.pop(nodeid, []))
        line = location[1] + 1 if location and isinstance(location[1], int) else None
        self.write({"test": nodeid, "status": status, "detail": detail,
                    "seconds": round(time.monotonic() - self._started, 4), "line": line})


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
    return text[-_DETAIL:]


def main() -> None:
    """The watcher: runs pytest in a child process to its end or its death, forwarding its records to the
    gate, and enforces the per-test limit from outside the child (the code under test can cancel nothing
    here)."""
    fd = int(os.environ.pop(RESULT_FD_ENV))
    request = json.loads(sys.stdin.read())
    _one_child(fd, request["key"], request["select"], request["args"], list(request.get("plugins", ())),
               float(request["test_timeout"]))
    _write(fd, {"done": 0, "key": request["key"]})
    os._exit(0)


def _one_child(fd: int, key: str, select: list[str] | None, args: list[str], plugins: list[str], limit: float
               ) -> None:
    """Run one pytest child to its end or its death (a test past its limit is killed with it)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.close(fd)
        _child(write, key, select, args, plugins)
    os.close(write)
    current: str | None = None
    deadline = None
    buffer = b""
    with os.fdopen(read, "rb", buffering=0) as stream:
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select_module.select([stream], [], [], wait)
            if not ready:  # the test ran past its limit
                os.kill(pid, signal.SIGKILL)
                _write(fd, {"test": current, "status": "timeout", "key": key, "seconds": limit,
                            "detail": f"ran out of time (tests.test_timeout: {limit:g} s)"})
                current = None
                break
            data = stream.read(65536)
            if not data:
                break
            buffer += data
            lines = buffer.split(b"\n")
            buffer = lines.pop()
            for line in lines:
                record = _record(line, key)
                if record is None:
                    continue
                _write(fd, record)
                if "start" in record:
                    current, deadline = str(record["start"]), time.monotonic() + limit
                elif "test" in record:
                    current, deadline = None, None
    _, status = os.waitpid(pid, 0)
    if current is not None:  # the process ended during a test: that test's outcome never came
        code = os.waitstatus_to_exitcode(status)
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        _write(fd, {"test": current, "status": "failed", "key": key,
                    "detail": f"the test process {how} during this test"})


def _record(line: bytes, key: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and record.get("key") == key else None


def _write(fd: int, record: dict[str, Any]) -> None:
    data = (json.dumps(record) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _child(fd: int, key: str, select: list[str] | None, args: list[str], plugins: list[str]) -> None:
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
    try:
        named = [(name, module or name) for name, _, module in (entry.partition("=") for entry in plugins)]
        imported = _import_framework([module for _, module in named])
        import pytest

        # After every other plugin's selection (`-m`, `-k` in the base's addopts), so that what it reports
        # is what runs.
        GatePlugin.pytest_collection_modifyitems = pytest.hookimpl(trylast=True)(  # type: ignore[method-assign]
            GatePlugin.pytest_collection_modifyitems)
        # The plugins are registered as the modules imported here: `-p NAME` would have pytest look NAME up among
        # the entry points of every distribution on the path first, the head's own metadata (a `*.dist-info` of
        # its tree or of its build's wheel) among them, and load what that names instead. One that did not import
        # is named with `-p`, for pytest to say why.
        plugin = GatePlugin(fd, key, select, [(name, imported[module]) for name, module in named
                                              if module in imported])
        options = [option for _, module in named if module not in imported for option in ("-p", module)]
        if plugins:  # imported before pytest could (see _import_framework): pytest cannot rewrite their asserts
            # and warns, which the base's `filterwarnings = error` would make an error that stops the run. The
            # message names the module after ": " or "; " (pytest's versions differ), which `-W` cannot hold.
            options += ["-W", "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"]
        code = int(pytest.main([*args, *options, "-p", "no:cacheprovider", "--rootdir", ".", "-q",
                                "--tb=short", "--continue-on-collection-errors",
                                "-o", "console_output_style=classic"], plugins=[plugin]))
    except BaseException:  # pytest itself stopped (a conftest's hook it refuses, ...): the last line says why
        failure = "".join(traceback.format_exc().splitlines(keepends=True)[-6:])
    finally:
        if code not in (0, 1):  # OK, TESTS_FAILED: anything else did not run the suite as asked
            _quote_terminal(terminal, failure)
        os._exit(0)


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


def _import_framework(plugins: list[str]) -> dict[str, Any]:
    """Import pytest, what it imports and the plugins with the working directory's roots last on sys.path (a
    `pytest.py` of the tree would come first otherwise), then put them back first for the tests; returns the
    plugins' modules that imported, by name."""
    here = os.getcwd()
    ours = [path for path in sys.path if path == here or path.startswith(here + os.sep)]
    rest = [path for path in sys.path if path not in ours]
    sys.path[:] = rest
    imported = {}
    try:
        for module in (*FRAMEWORK, *plugins):
            try:
                __import__(module)
            except ImportError:  # not installed here (`py` before pytest 7.2): pytest says so if it needs it
                continue
            if module in plugins:
                imported[module] = sys.modules[module]
    finally:
        sys.path[:] = [*ours, *rest]
    return imported
