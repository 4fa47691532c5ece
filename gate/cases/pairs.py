"""Run dataset test code against a candidate in two processes (humaneval and mbpp kinds).

The tests run in the pair's lead (`harness/lead.py`), the candidate in its peer (`harness/serve.py`), each
under its own uid and directory; between them only arguments and plain data cross. A test that must hand the
candidate objects of the candidate's own classes cannot run that way: it runs with the candidate in the lead's
process instead, and its outcome says "in-process, weaker isolation".
"""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

from gate.cases import tripwires
from gate.cases.base import CaseOutcome, fingerprint
from gate.cases.outcome import hidden_detail, no_outcome, read_outcome
from gate.cases.programs import CANDIDATE, harness, warm_names
from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, RunRequest, Sandbox

IN_PROCESS = "in-process, weaker isolation"
# How the lead runs a kind's tests (a pair kind's `format`, in its request): "check", HumanEval's (the trusted
# prompt, then the test code, whose `check(candidate)` is called with the candidate's function), or "asserts",
# MBPP's (the setup, then one assert statement at a time).
TestFormat = Literal["check", "asserts"]
# The lead's own reasons for failing a test run (harness/lead.py), beside the builtin exceptions.
_LEAD_FAILURES = frozenset({"CandidateError", "NoData", "LoadFailed", "the candidate does not load"})


def run_tests(case: CaseSpec, request: dict[str, Any], module: str, sandbox: Sandbox, limits: Limits,
              hash_seed: int, test_lines: list[str]) -> CaseOutcome:
    """Run the tests described by `request` against candidate source `module`; `test_lines` are the test's
    source lines, quoted in a public case's report.
    """
    trips = tripwires.in_process(len(request["tests"])) if request.get("in_process") and request.get("tests") else []
    message = json.dumps({**request, "tripwires": trips} if trips else request).encode()
    candidate = {CANDIDATE: module.encode()}
    if request.get("in_process"):  # the candidate's code is in this run: never a server that others share
        result = sandbox.run(RunRequest(script="_gate_lead.py", stdin=message, hash_seed=hash_seed,
                                        limits=limits, files=candidate, harness=harness("lead"),
                                        warm=warm_names("lead")))
    else:
        # The tests run in a server that later calls reuse (it keeps nothing of a call; see harness/lead.py's
        # serve), the candidate in a fresh peer.
        server = _server(hash_seed, limits)
        peer = RunRequest(script="_gate_serve.py", files=candidate, harness=harness("serve"),
                          hash_seed=hash_seed, limits=limits, warm=warm_names("serve"), discard_output=True)
        result, candidate_run = sandbox.run_served(server, message, peer)
        if candidate_run.killed_reason == "cpu limit":  # the tests then saw the candidate's process end
            return no_outcome(candidate_run, case.hidden)
    record = read_outcome(result)
    if record is None or result.timed_out:
        return _marked(no_outcome(result, case.hidden), request)
    seen = tripwires.in_process_tampered(record, trips) if trips else ""
    if seen:  # the candidate wrote its own outcome: no result
        return CaseOutcome("error", f"no result: {seen}", fingerprint("tampered"), result.wall_s, tampered=seen)
    return _marked(_judge(case, record, result.wall_s, test_lines), request)


@functools.lru_cache(maxsize=16)
def _server(hash_seed: int, limits: Limits) -> RunRequest:
    """The tests' server for a seed and limits: one object, so that the sandbox finds its servers at once."""
    return RunRequest(script="_gate_lead.py", args=("--serve",), harness=harness("lead"), hash_seed=hash_seed,
                      limits=limits, warm=warm_names("lead"))


def _judge(case: CaseSpec, record: dict[str, Any], seconds: float, test_lines: list[str]) -> CaseOutcome:
    if record.get("passed") is True:
        return CaseOutcome("passed", "", fingerprint("passed"), seconds)
    last = str(record.get("last") or "")
    failed = str(record.get("failed", "failed"))
    where = record.get("test", record.get("line"))
    seen = fingerprint("failed", failed.split(":")[0], where, last)
    if case.hidden:
        return CaseOutcome("failed", _hidden_failure(failed, last), seen, seconds)
    quoted = ""
    if isinstance(where, int) and 0 < where <= len(test_lines) and "line" in record:
        quoted = f" at line {where}: {test_lines[where - 1].strip()[:120]}"
    elif isinstance(where, int) and "test" in record and where < len(test_lines):
        quoted = f" in test {where}: {test_lines[where].strip()[:120]}"
    detail = failed[:200] + quoted + (f"; the last call {last}" if last else "")
    return CaseOutcome("failed", detail, seen, seconds)


def _hidden_failure(failed: str, last: str) -> str:
    """A hidden case's failure in names the candidate cannot choose: the peer chooses the type names and the
    texts it sends back, and in one process the candidate can write the whole record itself."""
    error = failed.split(":")[0]
    shown = error if error in _LEAD_FAILURES else hidden_detail("raised", error).removeprefix("raised ")
    verb, _, name = last.partition(" ")
    return shown + (f"; the last call {hidden_detail(verb, name)}" if last else "")


def _marked(outcome: CaseOutcome, request: dict[str, Any]) -> CaseOutcome:
    if not request.get("in_process"):
        return outcome
    detail = f"{outcome.detail} ({IN_PROCESS})" if outcome.detail else IN_PROCESS
    return CaseOutcome(outcome.status, detail, outcome.fingerprint, outcome.seconds)
