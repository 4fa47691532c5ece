"""The errors a user can meet, each mapped to the exit code docs/cli.md documents.

Exit codes: 0 accepted, 1 over budget or blocked, 2 bad input or usage, 3 the gate could not do its job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (every command imports this module: `gate --version` need not load pathlib)
    from pathlib import Path

EXIT_ACCEPTED = 0
EXIT_BLOCKED = 1
EXIT_BAD_INPUT = 2
EXIT_GATE_FAILED = 3


class GateError(Exception):
    """An error reported to the user as one line, without a traceback."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 key: str | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.key = key
        super().__init__(self.render())

    def render(self) -> str:
        """`file:line: key: message`, leaving out the parts that are unknown."""
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        key = f"{self.key}: " if self.key else ""
        return f"{where}{key}{self.message}"


class BadInput(GateError):
    """A file or argument the user gave is wrong (exit 2)."""


class GateFailure(GateError):
    """The gate could not do its job, e.g. a required isolation layer is missing (exit 3)."""

    exit_code = EXIT_GATE_FAILED


class MissingLayers(GateFailure):
    """Isolation layers that are required are not available here (exit 3): each (name, why it is off), and
    what to do about it."""

    def __init__(self, layers: tuple[tuple[str, str], ...], fix: str = "") -> None:
        self.layers = layers
        self.fix = fix
        named = "; ".join(f"{name} ({why})" for name, why in layers)
        super().__init__(f"required isolation layer(s) not available here: {named}" + (f". {fix}" if fix else ""))


def read_input(path: Path, what: str = "file") -> str:
    """The text of a file the user names (a policy, a task, a reply). Raises BadInput naming the file, and
    for bytes that are not UTF-8, the line they are on."""
    file = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"no such {what}", file=file) from None
    except IsADirectoryError:
        raise BadInput(f"is a directory, expected a {what}", file=file) from None
    except OSError as exc:
        raise BadInput(f"cannot read: {exc.strerror}", file=file) from None
    return decode_input(data, file)


def decode_input(data: bytes, file: str) -> str:
    """`data` as UTF-8 text. Raises BadInput naming `file` and the line of the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})", file=file,
                       line=data.count(b"\n", 0, exc.start) + 1) from None
