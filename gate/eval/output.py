"""What eval and merge write: the rows file, the JSON summary and the terminal summary."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from gate.errors import BadInput
from gate.eval.rows import Row, write_rows
from gate.eval.summary import summarize


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """The options eval and merge share."""
    parser.add_argument("-k", default="1,10,100", metavar="K,K,...",
                        help="pass@k to report (default 1,10,100)")
    parser.add_argument("--out", type=Path, metavar="ROWS.jsonl", help="write one JSON row per sample here")
    parser.add_argument("--json", metavar="FILE", help="write the summary as JSON here ('-' for stdout)")


def parse_ks(text: str) -> tuple[int, ...]:
    """`1,10,100` -> (1, 10, 100); each k a positive integer."""
    try:
        ks = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise BadInput(f"expected positive integers separated by commas, got {text!r}", key="-k") from None
    if not ks or any(k < 1 for k in ks):
        raise BadInput(f"expected positive integers separated by commas, got {text!r}", key="-k")
    return ks


def write_report(rows: Sequence[Row], ks: Sequence[int], out: Path | None, json_path: str | None,
                 wall_s: float | None, stream: TextIO) -> None:
    """Write the rows (when asked), the JSON summary (when asked) and the terminal summary."""
    summary = summarize(rows, ks, wall_s)
    if out is not None:
        _write(out, lambda handle: write_rows(rows, handle))
    if json_path == "-":
        stream.write(summary.to_json() + "\n")
        stream = sys.stderr  # the terminal summary must not corrupt the JSON on stdout
    elif json_path:
        _write(Path(json_path), lambda handle: handle.write(summary.to_json() + "\n"))
    stream.write(summary.render())


@contextlib.contextmanager
def open_out(path: Path | None) -> Iterator[TextIO | None]:
    """The rows file, open for writing (None when there is none); a path that cannot be written is BadInput
    before anything runs."""
    if path is None:
        yield None
        return
    try:
        handle = path.open("w", encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write: {exc.strerror}", file=str(path)) from None
    with handle:
        yield handle


def _write(path: Path, fill: Callable[[TextIO], object]) -> None:
    try:
        with path.open("w", encoding="utf-8") as handle:
            fill(handle)
    except OSError as exc:
        raise BadInput(f"cannot write: {exc.strerror}", file=str(path)) from None
