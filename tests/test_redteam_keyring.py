"""The kernel keyring is state of a uid that outlives its runs and the gate: a hidden case's run that stores its
arguments in a key must leave nothing that a public case's run, or a later gate's, can read and report."""

from __future__ import annotations

import os
import platform
import uuid
from pathlib import Path

import pytest

from tests.redteam_support import HIDDEN_VALUES, assert_hidden_values_absent, assert_not_passed, bot_repo, check
from tests.runner_support import has_sudo, run_as_runner

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="system call numbers of x86_64")

# add(a, b) reports every key of its name it can read in its exception (found through /proc/keys, which lists
# every key the caller may view, whoever owns it), then stores its own arguments in a key in its user, session
# and user-session keyrings, each key readable by every uid, and fails.
KEYS = """\
import ctypes

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_ADD_KEY, _KEYCTL, _SETPERM, _READ = 248, 250, 5, 11


def _found():
    found = []
    try:
        with open("/proc/keys") as keys:
            listed = [line.split()[0] for line in keys if " NAME: " in line]
    except OSError:
        return found
    for serial in listed:
        buffer = ctypes.create_string_buffer(256)
        size = _libc.syscall(_KEYCTL, _READ, ctypes.c_long(int(serial, 16)), buffer, 256)
        if size >= 0:
            found.append(buffer.raw[:size].decode(errors="replace"))
    return found


def add(a, b):
    found = _found()
    data = f"{a} {b} {a + b}".encode()
    stored = 0
    for ring in (-3, -4, -5):
        key = _libc.syscall(_ADD_KEY, b"user", b"NAME", data, len(data), ctypes.c_long(ring))
        if key >= 0:
            stored += 1
            _libc.syscall(_KEYCTL, _SETPERM, ctypes.c_long(key), ctypes.c_long(0x3F3F3F3F))
    raise ValueError(f"found [{' | '.join(found)}] stored {stored}")
"""


def _code() -> str:
    return KEYS.replace("NAME", f"gate-test-{uuid.uuid4().hex}")


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: the sandbox's own uids")
@pytest.mark.slow
def test_a_hidden_case_leaves_nothing_in_the_keyring_for_a_public_case_or_a_later_gate(tmp_path: Path) -> None:
    repo = bot_repo(tmp_path / "repo", _code())
    first = check(repo, tmp_path)
    later = check(repo, tmp_path, out_name="later")
    for run in (first, later):
        assert_hidden_values_absent(run)
    for run in (first, later):
        assert_not_passed(run, "adds", "hidden case 1")
        # The public case ran the attack and reported what it found: nothing, and it could store nothing.
        assert "found [] stored 0" in run.case("adds")["detail"], run.case("adds")


# As a user without root the runs share the gate's uid, and so its keyring: one gate's hidden case, then a
# later gate's public case, each in a sandbox of its own.
AS_USER = """\
import json, sys
from pathlib import Path
from gate.limits import sandbox_limits
from gate.checks.extract import Extract
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.policy.model import CaseSpec, Policy
from gate.sandbox import open_sandbox
from gate.subject import Subject

spec = json.loads(sys.stdin.read())
policy = Policy(runs=1)
found = {}
for name, args, hidden in (("hidden", spec["hidden"], True), ("public", [2, 3], False)):
    case = CaseSpec("call", name, (("function", "pkg.calc:add"), ("args", args), ("expect", sum(args))), hidden)
    box = open_sandbox(sandbox_limits(policy.limits))
    subject = Subject(kind="range", label="base..head", tree=Path(spec["tree"]),
                      **({"hidden_cases": (case,)} if hidden else {"cases": (case,)}))
    found[name] = [c.detail for c in run_checks(subject, policy, box, checks=(Extract(), Parse(), Smoke())).cases]
    found["uid"], found["seccomp"] = box.isolation["uid"], box.isolation["seccomp"]
    box.close()
print(json.dumps(found))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not has_sudo(), reason="needs root, to run the gate as another user")
def test_without_root_a_hidden_case_leaves_nothing_in_the_gates_keyring() -> None:
    found = run_as_runner(AS_USER, {"calc": _code()}, {"hidden": [int(v) for v in HIDDEN_VALUES[:2]]})
    assert found["uid"].startswith("off") and found["seccomp"].startswith("on"), found
    [public] = found["public"]
    assert "found [] stored 0" in public, public
    assert not any(value in public for value in HIDDEN_VALUES), public
