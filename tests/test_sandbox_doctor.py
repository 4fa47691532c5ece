"""`gate doctor` prints the layers and blocks every canary on a machine where the gate runs as root."""

from __future__ import annotations

import argparse
import os

import pytest

from gate.commands import doctor


@pytest.mark.skipif(os.geteuid() != 0,
                    reason="needs root: without it the planted file and the fork flood get through")
@pytest.mark.parametrize("fresh", [False, True])
def test_doctor_blocks_every_canary(capsys: pytest.CaptureFixture[str], fresh: bool) -> None:
    code = doctor.run(argparse.Namespace(fresh=fresh))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "6 of 6 canaries blocked" in out
    for layer in ("zygote", "uid", "netns", "mountns", "seccomp", "cgroup"):
        assert f"\n  {layer} " in out
    assert "GATE_DOCTOR_SECRET" not in os.environ


def test_doctor_is_a_gate_command() -> None:
    parser = argparse.ArgumentParser()
    doctor.register(parser.add_subparsers())
    assert parser.parse_args(["doctor", "--fresh"]).func is doctor.run
