"""What the gate says while it works, on stderr: each step that can take more than a second as it starts and as
it ends (how long it took, what it found), and running counts (tests run) while it goes.

One reporter, made at the edge (the command, from its stream, `--quiet` and the environment) and passed down:
the engine and its parts call it, and never print. On a terminal a count is redrawn in place; elsewhere (a CI
log) every line is plain and a count says only its total and its end; in GitHub Actions each step's lines fold
under its title (`::group::`), its outcome printed after the fold. `QUIET` says nothing. Thread-safe: the base's
and the head's suites count at once.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TextIO

# A terminal's count is redrawn at most this often (a suite reports hundreds of tests a second).
_REDRAW_S = 0.1
_CLEAR = "\r\x1b[K"


class Progress:
    """Reports steps and counts on `stream` (None: nothing). `live`: a terminal, where counts are redrawn in
    place; `groups`: GitHub Actions, where a step's lines fold under its title."""

    def __init__(self, stream: TextIO | None = None, *, live: bool = False, groups: bool = False) -> None:
        self._stream = stream
        self._live = live
        self._groups = groups
        self._lock = threading.RLock()
        self._counts: list[Count] = []
        self._open = 0  # steps under way: only the outermost folds (GitHub's groups do not nest)
        self._drawn = 0.0
        self._status = False  # a count's line is on the terminal, to clear before the next line

    @property
    def quiet(self) -> bool:
        return self._stream is None

    @contextmanager
    def step(self, title: str) -> Iterator[Step]:
        """A step: `title` as it starts, then what `Step.done` says of it and how long it took."""
        step = Step(title)
        with self._lock:
            fold = self._groups and not self._open
            self._open += 1
            self._line(f"::group::gate: {title}" if fold else f"gate: {title}...")
        try:
            yield step
        finally:
            seconds = time.monotonic() - step.started
            with self._lock:
                self._open -= 1
                if fold:
                    self._line("::endgroup::")
                said = f": {step.words}" if step.words else ": done"
                self._line(f"gate: {title}{said}" + (f" ({seconds:.1f} s)" if step.timed else ""))

    def say(self, text: str) -> None:
        """One line: within a step, indented under it."""
        with self._lock:
            self._line(("  " if self._open and not self._groups else "") + text)

    def count(self, what: str, total: int | None = None) -> Count:
        """A running count of `what` ("the head's tests") out of `total`, when known; `Count.close` ends it."""
        count = Count(self, what, total)
        with self._lock:
            self._counts.append(count)
            if total is not None:
                count.announce()
        return count

    # The counts' side.

    def _counted(self, count: Count) -> None:
        """A count moved: redraw the terminal's status line, at most every _REDRAW_S."""
        if not self._live or self._stream is None:
            return
        now = time.monotonic()
        with self._lock:
            if now - self._drawn < _REDRAW_S:
                return
            self._drawn = now
            self._draw()

    def _closed(self, count: Count, seconds: float) -> None:
        with self._lock:
            if count in self._counts:
                self._counts.remove(count)
            self.say(f"{count.what}: {count.shown} run in {seconds:.1f} s")

    def _draw(self) -> None:
        assert self._stream is not None
        shown = " · ".join(f"{count.what} {count.shown}" for count in self._counts)
        self._stream.write(_CLEAR + shown[:200])
        self._stream.flush()
        self._status = bool(shown)

    def _line(self, text: str) -> None:
        if self._stream is None:
            return
        if self._status:
            self._stream.write(_CLEAR)
            self._status = False
        self._stream.write(text + "\n")
        if self._live and self._counts:
            self._draw()
        self._stream.flush()


class Step:
    """A step under way: `done(words)` says what it found, for the line that ends it, and whether that line may
    say how long it took (never for a check that ran hidden cases: their time is kept secret)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.words = ""
        self.timed = True
        self.started = time.monotonic()

    def done(self, words: str, timed: bool = True) -> None:
        self.words = words
        self.timed = timed


class Count:
    """A running count (`add`), out of a total known at its start or later (`expect`); `close` ends it."""

    def __init__(self, progress: Progress, what: str, total: int | None) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self._progress = progress
        self._started = time.monotonic()
        self._closed = False

    @property
    def shown(self) -> str:
        """`120/297`: the count, never past its total (a test run again by the gate counts once)."""
        if self.total is None:
            return str(self.done)
        return f"{min(self.done, self.total)}/{self.total}"

    def announce(self) -> None:
        if not self._progress._live:  # (a terminal shows it in the status line)
            self._progress.say(f"{self.what}: {self.total} to run")

    def expect(self, total: int) -> None:
        """The total, once it is known (the tests collected); a later one is ignored."""
        if self.total is None:
            self.total = total
            with self._progress._lock:
                self.announce()

    def add(self, done: int = 1) -> None:
        with self._progress._lock:  # (several threads count one suite's shards)
            self.done += done
        self._progress._counted(self)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._progress._closed(self, time.monotonic() - self._started)


QUIET = Progress()


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    """`-q/--quiet`, for a command that reports its progress on stderr."""
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="say nothing on stderr while working (the steps, the tests run); the report and "
                             "errors still print")


def progress_for(stream: TextIO, environ: Mapping[str, str], quiet: bool = False) -> Progress:
    """The reporter a command uses: nothing with `--quiet`; counts redrawn on a terminal; plain lines elsewhere,
    folded in GitHub Actions (GITHUB_ACTIONS=true)."""
    if quiet:
        return QUIET
    return Progress(stream, live=stream.isatty() and environ.get("TERM") != "dumb",
                    groups=environ.get("GITHUB_ACTIONS") == "true")
