"""Helpers for the case tests: a real sandbox, and one-line ways to build and run a case."""

from __future__ import annotations

import json
import textwrap
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from gate.cases import KINDS
from gate.cases.base import CaseOutcome, Program
from gate.cases.harness import wire
from gate.cases.programs import harness
from gate.cases.specs import parse_cases
from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, RunRequest, RunResult, Sandbox
from gate.verdict import Verdict

LIMITS = Limits(wall_s=5.0, cpu_s=5.0)
SHORT = Limits(wall_s=1.5, cpu_s=1.5)


def case(kind: str, name: str = "case 1", hidden: bool = False, **fields: Any) -> CaseSpec:
    """A case of `kind`, validated as the loader validates a file's cases."""
    return parse_cases([{"kind": kind, "name": name, **fields}], "test", "cases", hidden=hidden)[0]


def serving_lines(sandbox: Sandbox, tree: Path, target: str, count: int, cpu: float = 5.0, cut: float = 1.0,
                  files: Mapping[str, bytes] | None = None) -> list[dict[str, Any]]:
    """The lines of the serving harness (`files`: the gate's, or a variant of them) run as the gate runs it but
    without the tripwires, for `count` calls of `target` (module:function) with 0, 1, ..."""
    module, function = target.split(":")
    calls = [{"module": module, "function": function, "args": wire.dumps(((n,), {}))} for n in range(count)]
    request = {"calls": calls, "cpu": cpu, "wall": 5.0, "cut": cut, "import_cut": 1.25, "output": 65536,
               "record": 65536, "private": sandbox.private_tmp, "core": None}
    result = sandbox.run(RunRequest(script="_gate_calls.py", harness=files or harness("calls"), tree=tree,
                                    stdin=json.dumps(request).encode(), limits=replace(LIMITS, wall_s=30, cpu_s=30)))
    return [json.loads(line) for line in (result.result or b"").decode().splitlines() if line]


def run(sandbox: Sandbox, spec: CaseSpec, code: str, limits: Limits = LIMITS, seed: int = 1,
        function: str | None = None) -> CaseOutcome:
    """One run of `spec` against the reply code `code`."""
    return KINDS[spec.kind].run(spec, Program(code=code, function=function), sandbox, limits, seed)


# The is_even example (examples/is_even): an is_even that rejects what is not an int, and the naive one that does not.
IS_EVEN = textwrap.dedent("""
    def is_even(n):
        if type(n) is not int:
            raise TypeError("is_even needs an int")
        return n % 2 == 0
""")
NAIVE_IS_EVEN = "def is_even(n):\n    return n % 2 == 0\n"


# Looks everywhere a process might find the expected value, for about a second, and returns what it found.
HUNT = textwrap.dedent('''
    import gc, os, re, sys, time

    def _hunt():
        marker = re.compile("gate-secret-[0-9a-f]{32}")
        deadline = time.monotonic() + 1.5
        found = []
        def look(text):
            if isinstance(text, bytes):
                text = text.decode("latin-1")
            if isinstance(text, str) and marker.search(text):
                found.append(marker.search(text).group())
        for value in os.environ.values():
            look(value)
        frame = sys._getframe()
        while frame is not None:
            for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
                look(value)
            frame = frame.f_back
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid() or time.monotonic() > deadline:
                continue
            for name in ("environ", "cmdline", "mem"):
                try:
                    with open(f"/proc/{pid}/{name}", "rb") as handle:
                        look(handle.read(1 << 20))
                except (OSError, ValueError):
                    pass
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    try:
                        handle = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
                        look(os.read(handle, 1 << 20))
                        os.close(handle)
                    except OSError:
                        pass
            except OSError:
                pass
        for root in ("/", "/tmp", "/work", "/root", os.getcwd(), os.path.expanduser("~")):
            for top, dirs, files in os.walk(root):
                if top.startswith(("/proc", "/sys", "/dev", "/usr", "/lib")) or time.monotonic() > deadline:
                    dirs[:] = []
                    continue
                for name in files:
                    try:
                        with open(os.path.join(top, name), "rb") as handle:
                            look(handle.read(1 << 16))
                    except OSError:
                        pass
        if not found:  # last: in a run forked from the zygote this touches every page (it may get killed)
            for obj in gc.get_objects():
                if isinstance(obj, dict):
                    for value in list(obj.values()):
                        look(value)
                elif isinstance(obj, (list, tuple)):
                    for value in obj:
                        look(value)
        return found[0] if found else "nothing found"
''')


class Counted:
    """The sandbox, counting its runs."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.runs = 0
        self._lock = threading.Lock()

    @property
    def isolation(self) -> Any:
        return self.sandbox.isolation

    def run(self, request: RunRequest) -> RunResult:
        with self._lock:
            self.runs += 1
        return self.sandbox.run(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sandbox, name)


def without_times(verdict: Verdict) -> dict[str, Any]:
    """The verdict as data, less every time in it (what two ways of running the same cases must agree on)."""
    data = verdict.to_dict()
    data.pop("timings")
    for key in ("checks", "cases"):
        for entry in data[key]:
            entry.pop("seconds")
    return data
