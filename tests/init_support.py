"""`gate init` in the test's own process, for the tests of what it finds (tests/conftest.py makes `gate_init` a
fixture of every module)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

Init = Callable[[Path], tuple[dict[str, object], str, str]]


@pytest.fixture
def gate_init(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Init:
    """`gate init --print` in a folder: the policy it prints, what it says on stderr and the policy's text. In
    this process (the CLI as a process is tests/test_init.py's), with nothing of the folder on the import path,
    as the `gate` script."""
    from gate.cli import main

    def init(root: Path) -> tuple[dict[str, object], str, str]:
        monkeypatch.chdir(root)
        monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", ".", str(root))])
        capsys.readouterr()
        assert main(["init", "--print"]) == 0
        out, err = capsys.readouterr()
        return yaml.safe_load(out), err, out

    return init
