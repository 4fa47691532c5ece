"""Tripwires of the case runs whose harness shares its process with the candidate's code (README invariant 17).

Where the candidate runs in the very process that writes a run's outcome, it could write the outcome itself:
an in-process MBPP case (its asserts build the candidate's own objects, so they run beside it,
gate/cases/pairs.py) could report "passed", and the candidate's import in a serving run (gate/cases/harness/
calls.py) could write any case's line before its call. So those runs carry tests whose outcome the gate knows,
planned here, per run, outside the sandbox: one of the run's own tests or calls once more, made to fail as its
code starts (gate/cases/harness/wire.py `tripwire`), before or after its own, and one made to return a token
of this run. An outcome that gives the wrong answer for one is no result: tampering, for a human to review,
with no points (gate/checks/smoke.py).

A run of one call (harness/call.py) carries none: its record is one value the function returned, which the
function could have returned itself, and its limits are kept from outside its process. The tests of a pair
(harness/lead.py with a peer) run in a process the candidate cannot reach.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from gate.cases.harness.wire import FAIL, PASS

_RANDOM = secrets.SystemRandom()


def in_process(tests: int) -> list[dict[str, Any]]:
    """The tripwires of an in-process run of `tests` assert statements (harness/lead.py): one that must fail
    before its own statement, one after its own, one that must return this run's token, on either side. Each
    is {"test": the statement run once more, "at": the position it runs at (before statement `at`; `tests`:
    after the last), "pass": the token (one that must pass)}."""
    chosen = [_RANDOM.randrange(tests) for _ in range(3)]
    return [{"test": chosen[0], "at": chosen[0]}, {"test": chosen[1], "at": chosen[1] + 1},
            {"test": chosen[2], "at": chosen[2] + _RANDOM.randrange(2), "pass": secrets.token_hex(8)}]


def in_process_tampered(record: Mapping[str, Any], trips: Sequence[Mapping[str, Any]]) -> str:
    """What an in-process run's outcome `record` says that its tripwires `trips` deny, or "": a pass must carry
    each tripwire's outcome, in the order they ran ("failed", or the token of one that must pass). (A failure
    is no gain to a forger: it is taken as it is.)"""
    if record.get("passed") is not True:
        return ""
    ordered = sorted(trips, key=lambda trip: int(trip["at"]))  # (stable: the order the lead runs them in)
    expected = [str(trip.get("pass", "failed")) for trip in ordered]
    said = record.get("tripped")
    if said == expected:
        return ""
    if not isinstance(said, list) or len(said) != len(expected):
        return "a pass reported without its tripwires' outcomes"
    index = next(at for at, (got, due) in enumerate(zip(said, expected, strict=True)) if got != due)
    trip = ordered[index]
    must = "return this run's token" if "pass" in trip else "fail"
    when = "before" if trip["at"] == trip["test"] else "after"
    read = said[index] if said[index] in ("failed", "passed") else "another outcome"
    return f"the gate's tripwire (test {trip['test']} run once more, {when} its own run, which must {must}) read {read}"


def serving(modules: Sequence[str]) -> list[tuple[int, dict[str, Any] | None]]:
    """The calls of a serving run (harness/calls.py) whose real calls call into `modules` (in order, those of
    one module together): (which real call, None or the tripwire it is) for each, with two tripwires, each a
    real call once more, placed among the calls of its module at random: one that must fail ({"trip": FAIL}),
    one that must return this run's token ({"trip": PASS, "token"})."""
    entries: list[tuple[int, dict[str, Any] | None]] = [(at, None) for at in range(len(modules))]
    for trip in ({"trip": FAIL}, {"trip": PASS, "token": secrets.token_hex(8)}):
        copied = _RANDOM.randrange(len(modules))
        group = [at for at, (call, _) in enumerate(entries) if modules[call] == modules[copied]]
        entries.insert(_RANDOM.randint(group[0], group[-1] + 1), (copied, trip))
    return entries


def serving_tampered(trip: Mapping[str, Any], record: object) -> str:
    """What a serving run's record of a tripwire's call says that the harness never writes, or "": AssertionError
    raised for one that must fail, the token returned for one that must pass, or the function not there to
    call (a load error, as its own call has)."""
    from gate.cases.harness import wire

    if not isinstance(record, dict) or "load" in record:
        return ""
    if trip["trip"] == FAIL and record.get("raised") == "AssertionError" and not record.get("message"):
        return ""
    if trip["trip"] == PASS and record.get("ok") == wire.dumps(str(trip["token"])):
        return ""
    must = "fail" if trip["trip"] == FAIL else "return this run's token"
    return f"the gate's tripwire (a call of the run made once more, which must {must}) read another outcome"
