"""What the layers' probes found is remembered between gates as root (gate/memo.py): only a record of
root's own, in root's state directory, for the machine as it is now, is ever used."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from gate.sandbox import detect, open_sandbox, seccomp
from gate.sandbox.base import Limits, RunRequest
from gate.sandbox.runner import Layers

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root remembers what the probes found")
LIMITS = Limits(wall_s=10)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """A file that no probe would ever put in a run's root."""
    path = tmp_path / "marker.txt"
    path.write_text("not the interpreter's\n")
    return path


def layers(recall: bool = True) -> Layers:
    """What a gate's open_sandbox detects (its uids and cgroups released: only what was found is looked at)."""
    found = detect.layers(prefer_zygote=True, recall=recall)
    if found.uids:
        found.uids.close()
    if found.cgroups:
        found.cgroups.close()
    return found


def _record(state: Path) -> Path:
    [record] = [path for path in state.iterdir() if path.name.startswith("layers-")]
    return record


def _plant(state: Path, marker: Path) -> Path:
    """The record a first gate wrote, with `marker` added to the root it lists (and its signature), as if the
    probe had found it: whether a later gate's root holds the marker tells whether it used the record."""
    first = layers()
    if not first.mountns:
        pytest.skip("no mount namespace here: nothing is remembered")
    record = _record(state)
    kept = json.loads(record.read_text())
    root = [*kept["value"]["root"], str(marker)]
    kept["value"]["root"] = root
    kept["value"]["signatures"] = detect._signatures(root)
    record.write_text(json.dumps(kept))
    return record


def test_a_second_gate_uses_what_the_first_found(state: Path, marker: Path) -> None:
    _plant(state, marker)
    again = layers()
    assert str(marker) in again.root
    assert again.isolation["mountns"].startswith("on")


def test_gate_doctor_probes_afresh(state: Path, marker: Path) -> None:
    _plant(state, marker)
    assert str(marker) not in layers(recall=False).root
    assert str(marker) not in layers().root  # and what it found replaced the record


def test_a_change_to_a_file_of_the_root_makes_the_probes_run_again(state: Path, marker: Path) -> None:
    _plant(state, marker)
    marker.write_text("changed since\n")  # as a package upgrade replaces a library
    assert str(marker) not in layers().root


@pytest.mark.parametrize("tamper", ["another uid's", "readable by others", "a link"])
def test_a_record_that_is_not_roots_own_is_not_used(state: Path, marker: Path, tmp_path: Path,
                                                     tamper: str) -> None:
    record = _plant(state, marker)
    if tamper == "another uid's":
        os.chown(record, 65534, 65534)
    elif tamper == "readable by others":
        record.chmod(0o644)
    else:
        elsewhere = tmp_path / "elsewhere.json"
        record.rename(elsewhere)
        record.symlink_to(elsewhere)
    assert str(marker) not in layers().root


def test_a_record_from_another_machine_state_is_not_used(state: Path, marker: Path) -> None:
    record = _plant(state, marker)
    kept = json.loads(record.read_text())
    kept["key"] = "0" * 64  # what the key hashes (the boot, the interpreter, the namespaces...) differs
    record.write_text(json.dumps(kept))
    assert str(marker) not in layers().root


def test_without_root_nothing_is_remembered() -> None:
    # As another uid, the gate's runs share its uid: a record it could write, a run could write too. Even in
    # a state directory of its own (where root's state_dir would refuse it), nothing is written or read.
    where = Path(tempfile.mkdtemp(prefix="gate-memo-"))
    where.chmod(0o755)
    state = where / "state"
    state.mkdir(mode=0o700)
    os.chown(state, 65534, 65534)
    code = ("import sys; sys.path[:0] = [sys.argv[1]]\n"
            "from gate import memo\n"
            "memo.STATE_DIR = sys.argv[2]\n"
            "memo.remember('layers', {'k': 1}, {'v': 1})\n"
            "print(memo.recall('layers', {'k': 1}))\n")
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                           "-c", code, detect.gate_root(), str(state)], capture_output=True, text=True, cwd="/",
                          check=False, env={"PATH": "/usr/bin:/bin"})
    if "Permission denied" in done.stderr or "No module named 'gate'" in done.stderr:
        pytest.skip("this checkout is not readable by nobody")
    try:
        assert (done.returncode, done.stdout) == (0, "None\n"), done.stderr
        assert list(state.iterdir()) == []
    finally:
        shutil.rmtree(where)


def test_a_remembered_finding_still_filters_system_calls(state: Path) -> None:
    # The seccomp filter is built once by the probe and remembered with it; a zygote loads that program.
    first = layers()
    if not first.isolation["seccomp"].startswith("on"):
        pytest.skip("no seccomp layer here")
    assert list(state.glob("layers-*.json"))
    again = layers()
    assert again.seccomp_program == first.seccomp_program == seccomp.program()
    box = open_sandbox(LIMITS)
    try:
        code = b"import socket\ntry:\n    socket.socket(socket.AF_UNIX)\nexcept OSError as exc:\n    print(exc.errno)\n"
        result = box.run(RunRequest(script="main.py", limits=LIMITS, files={"main.py": code}))
    finally:
        box.close()
    assert (result.exit_code, result.stdout) == (0, b"13\n"), result.stderr  # EACCES
