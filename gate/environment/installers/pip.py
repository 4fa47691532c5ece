"""The gate's own pip (`pip --python`): the installer where uv is not beside the gate's interpreter. It reads the
user's configuration itself (pip.conf, `PIP_*`)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gate.environment.installers.command import Dependencies, run, tail
from gate.errors import GateFailure

# pip's words for a requirement it could not satisfy.
_UNSATISFIED = re.compile(r"(?:No matching distribution found for|Could not find a version that satisfies the "
                          r"requirement|ResolutionImpossible.*?for|Failed to build|"
                          r"Cannot install) ([^\s(]+)")


class Pip:
    name = "pip"

    def __init__(self, why: str) -> None:
        self.why = why  # why not uv

    def describe(self) -> str:
        return f"{self.why}: pip builds the environment instead"

    def venv(self, interpreter: str, target: Path, environ: Mapping[str, str]) -> None:
        done = subprocess.run([interpreter, "-m", "venv", "--without-pip", str(target)], capture_output=True,
                              text=True, check=False, timeout=300, env={"PATH": "/usr/bin:/bin"})
        if done.returncode != 0:
            raise GateFailure(f"could not make a virtual environment with {interpreter}: "
                              + tail(done.stdout + done.stderr))

    def install(self, python: str, args: Sequence[str], cwd: Path, environ: Mapping[str, str], what: str) -> None:
        run(self._pip(python, "install", *args), cwd, _environment(environ), what, "pip", _UNSATISFIED)

    def dependencies(self, python: str, source: Path, extras: Sequence[str], project: str,
                     environ: Mapping[str, str]) -> Dependencies | None:
        """None: pip learns a project's requirements only by installing it."""
        return None

    def uninstall(self, python: str, names: Sequence[str], cwd: Path, environ: Mapping[str, str], what: str
                  ) -> None:
        run(self._pip(python, "uninstall", "--yes", *names), cwd, _environment(environ), what, "pip", _UNSATISFIED)

    @staticmethod
    def _pip(python: str, *args: str) -> list[str]:
        return [sys.executable, "-m", "pip", "--python", python, "--no-input", "--disable-pip-version-check", *args]


def _environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {**environ, "PIP_REQUIRE_VIRTUALENV": "0"}
