"""`gate doctor` prints the layers and blocks every canary on a machine where the gate runs as root."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gate.commands import doctor
from gate.sandbox import detect, seccomp


@pytest.mark.skipif(os.geteuid() != 0,
                    reason="needs root: without it the planted file and the fork flood get through")
@pytest.mark.parametrize("fresh", [False, True])
def test_doctor_blocks_every_canary(capsys: pytest.CaptureFixture[str], fresh: bool) -> None:
    code = doctor.run(argparse.Namespace(fresh=fresh, repo=None))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "10 of 10 canaries blocked" in out
    assert "gate ci would run a PR's code here" in out
    for layer in ("zygote", "uid", "netns", "mountns", "filesystem", "ipcns", "seccomp", "cgroup"):
        assert f"\n  {layer} " in out
    assert "GATE_DOCTOR_SECRET" not in os.environ


def test_doctor_is_a_gate_command() -> None:
    parser = argparse.ArgumentParser()
    doctor.register(parser.add_subparsers())
    assert parser.parse_args(["doctor", "--fresh"]).func is doctor.run


def _as_nobody(code: str) -> subprocess.CompletedProcess[str]:
    paths = [detect.gate_root(), os.path.dirname(seccomp.library().__file__ or "")]
    setup = f"import sys; sys.path[:0] = {paths!r}\n"
    return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                           "-c", setup + code], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                          cwd="/", check=False, timeout=300)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to become nobody")
def test_doctor_without_root_says_what_gets_through() -> None:
    if _as_nobody("import gate.sandbox").returncode != 0:
        pytest.skip("this checkout is not readable by nobody")
    done = _as_nobody("import argparse, sys\nfrom gate.commands import doctor\n"
                      "sys.exit(doctor.run(argparse.Namespace(fresh=False, repo=None)))")
    assert done.returncode == 3, done.stdout + done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ")}
    assert lines["uid"].split(None, 1)[1].startswith("off: needs root")
    [refused] = [line for line in done.stdout.splitlines() if line.startswith("gate ci would refuse")]
    assert "uid (needs root (run the gate with sudo))" in refused and "run it as root" in refused
    # Without root the run shares the gate's user: the token in a process's environment is readable...
    assert "NOT BLOCKED" in lines["secret"]
    # ...and so is a world-readable file in a home directory: no allow-listed root without a mount namespace.
    assert "NOT BLOCKED" in lines["home"]
    assert lines["filesystem"].split(None, 1)[1].startswith("off: the run sees the host's files")
    # ...but its reaper still kills a daemon, the process limit holds, and seccomp keeps it off the network.
    for canary in ("daemon", "fork", "network", "suite"):
        assert " blocked " in lines[canary], lines[canary]


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: every other layer gate ci requires is on")
def test_doctor_fails_where_gate_ci_would_refuse_and_says_which_layer_and_the_fix() -> None:
    # A machine without a seccomp binding: `gate ci` would fail closed there, so the doctor does too, and says
    # which layer is off and how to get it (the keyring canary gets through as well: only seccomp stops it).
    code = ("import argparse, sys\nsys.modules['pyseccomp'] = sys.modules['seccomp'] = None\n"
            "from gate.commands import doctor\nsys.exit(doctor.run(argparse.Namespace(fresh=False, repo=None)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=False,
                          env={**os.environ, "PYTHONPATH": detect.gate_root()}, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "9 of 10 canaries blocked; not blocked: keyring" in done.stdout
    [refused] = [line for line in done.stdout.splitlines() if line.startswith("gate ci would refuse")]
    # The cause as it is (each binding's import error), and only the fix that applies: the gate is root already.
    assert "seccomp (no seccomp binding imports under " in refused
    assert "pyseccomp: ModuleNotFoundError: import of pyseccomp halted" in refused
    assert "make a seccomp binding importable by the gate's interpreter (pyseccomp" in refused
    assert "allow_weaker_isolation: true" in refused and "run it as root" not in refused


@pytest.mark.skipif(os.geteuid() != 0, reason="as root, the probes enter namespaces (the mount one covers /tmp)")
def test_the_probes_find_a_seccomp_binding_installed_under_tmp(tmp_path: Path) -> None:
    """A virtual environment under /tmp (a CI job's, a quick try's): the mount namespace's probe covers /tmp in
    its own process, and the seccomp probe, after it, still imports the binding from there."""
    assert tmp_path.is_relative_to("/tmp")
    site = tmp_path / "site-packages"
    site.mkdir()
    shutil.copy(seccomp.library().__file__ or "", site)
    interpreter = detect.run_interpreter()
    done = detect._finish(detect._start(interpreter, detect._PROBE, "1", detect.gate_root(), str(site)))
    found = detect._probe(done)
    assert found["mountns"] == "" and found["overlay"] == "", found  # the probe that covers /tmp ran, and first
    assert found["seccomp"] == "" and found["bpf"], found


@pytest.mark.skipif(os.geteuid() != 0, reason="as root, the probes enter namespaces")
def test_a_probe_that_dies_names_its_layer_and_the_others_still_answer(tmp_path: Path) -> None:
    """A binding that crashes the interpreter when imported takes down the seccomp probe's process only."""
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "pyseccomp.py").write_text("import os\nos._exit(9)\n")
    done = detect._finish(detect._start(detect.run_interpreter(), detect._PROBE, "1", detect.gate_root(),
                                        str(site)))
    found = detect._probe(done)
    assert found["seccomp"] == "its probe died before it answered", found
    assert found["netns"] == found["mountns"] == "", found
