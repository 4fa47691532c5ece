"""Run the repository's pytest suite (or part of it) and report each test as it finishes.

Request on stdin (JSON): {"args": paths for pytest, "select": node ids to keep (null: all), "test_timeout":
seconds, "key": a secret of this run}. Records on the result channel, one JSON object a line, written as each
event happens (a process that dies mid-suite has reported everything before): {"collected": [node ids]},
{"collect_error": path, "detail"}, {"start": node id}, {"test": node id, "status", "detail", "seconds",
"line"}, {"done": exit code}, each with the key (the gate ignores a record without it). The gate counts a
test whose record never came as failed, and runs the rest again in a new process.

The tests and the code under test share this process: the code could look for the key or patch pytest, which
is why the gate runs the base's tests and conftests only, flags library code that reaches into the test
framework, and names this in the verdict's isolation. Plugins load only when the base's configuration names
them (the gate sets PYTEST_DISABLE_PLUGIN_AUTOLOAD); the cache provider is off.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
from typing import Any

RESULT_FD_ENV = "GATE_RESULT_FD"
_DETAIL = 1500  # characters of a failure's report kept


class GatePlugin:
    """Writes one record per event on the result channel (a descriptor only this object names)."""

    def __init__(self, fd: int, key: str, select: list[str] | None, test_timeout: float) -> None:
        self._fd = fd
        self._key = key
        self._select = None if select is None else set(select)
        self._timeout = test_timeout
        self._phases: dict[str, list[Any]] = {}
        self._started = 0.0
        # The alarm's report goes to the run's own stderr, not to pytest's capture of descriptor 2.
        self._alarm = os.fdopen(os.dup(2), "w")

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

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._phases[nodeid] = []
        self._started = time.monotonic()
        self.write({"start": nodeid})
        faulthandler.dump_traceback_later(self._timeout, exit=True, file=self._alarm)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self._phases.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        faulthandler.cancel_dump_traceback_later()
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
    fd = int(os.environ.pop(RESULT_FD_ENV))
    request = json.loads(sys.stdin.read())
    # pytest's terminal output is not read: each test's outcome travels on the channel.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    import pytest

    plugin = GatePlugin(fd, request.pop("key"), request["select"], float(request["test_timeout"]))
    code = pytest.main([*request["args"], "-p", "no:cacheprovider", "--rootdir", ".", "-q", "--tb=short",
                        "-o", "console_output_style=classic"], plugins=[plugin])
    plugin.write({"done": int(code)})
    sys.stdout.flush()
    os._exit(0)
