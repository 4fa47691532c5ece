"""Running an installer's command: its failure names the requirement, with the command's last lines."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from gate.errors import GateFailure

_TAIL = 15  # lines of the installer's output a failure shows
INSTALL_TIMEOUT_S = 1800


class Dependencies(msgspec.Struct, frozen=True):
    """A project's own requirements as an installer finds them without building the project (Installer.dependencies):
    what its `install` is given for them, and their names."""

    args: tuple[str, ...]
    names: tuple[str, ...]


def run(command: Sequence[str], cwd: Path, env: Mapping[str, str], what: str, tool: str,
        unsatisfied: re.Pattern[str]) -> None:
    """Run an installer's command; GateFailure naming `what`, the requirement its output names as the one it
    could not satisfy (`unsatisfied`'s first group), and its last lines, when it fails."""
    try:
        done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, check=False,
                              timeout=INSTALL_TIMEOUT_S, env=dict(env))
    except subprocess.TimeoutExpired:
        raise GateFailure(f"installing {what} took over {INSTALL_TIMEOUT_S} s") from None
    if done.returncode != 0:
        output = done.stdout + done.stderr
        found = [next(group for group in match if group) if isinstance(match, tuple) else match
                 for match in unsatisfied.findall(output)]
        named = f" (requirement {found[-1].rstrip('.,;`')})" if found else ""
        raise GateFailure(f"installing {what} from the base commit failed{named}; {tool}'s last lines:\n"
                          + tail(output))


def tail(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return "\n".join(lines[-_TAIL:])
