"""One JSONL row per scored sample: what `gate eval` writes and `gate diff` / `gate merge` read."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

import msgspec

from gate.errors import BadInput

# Why a sample did not pass, from the earliest stage that stopped it.
FAILURE_KINDS = ("extract", "parse", "timeout", "error", "failed", "no cases")


class Row(msgspec.Struct, frozen=True):
    """The outcome of one sample. `run` identifies the dataset, samples and options (shards of one run share
    it); `shard` is `K/N`."""

    id: str
    task: str
    sample: int
    position: int  # the sample's place in the samples file, so merged shards keep the unsharded order
    passed: bool
    failed_cases: tuple[int, ...]
    cases: int
    failure: str | None
    detail: str
    checks: tuple[tuple[str, str], ...]
    latency_s: float
    isolation: tuple[tuple[str, str], ...]
    dataset: str
    run: str
    shard: str = "1/1"
    penalties: tuple[dict[str, Any], ...] | None = None
    total: int | None = None
    accepted: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "task": self.task,
            "sample": self.sample,
            "position": self.position,
            "pass": self.passed,
            "failed_cases": list(self.failed_cases),
            "cases": self.cases,
            "failure": self.failure,
            "detail": self.detail,
            "checks": dict(self.checks),
            "latency_s": self.latency_s,
            "isolation": dict(self.isolation),
            "dataset": self.dataset,
            "run": self.run,
            "shard": self.shard,
        }
        if self.penalties is not None:
            data["penalties"] = list(self.penalties)
            data["total"] = self.total
            data["accepted"] = self.accepted
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        return cls(
            id=str(data["id"]),
            task=str(data["task"]),
            sample=int(data["sample"]),
            position=int(data["position"]),
            passed=bool(data["pass"]),
            failed_cases=tuple(int(i) for i in data["failed_cases"]),
            cases=int(data["cases"]),
            failure=data["failure"],
            detail=str(data.get("detail", "")),
            checks=tuple(sorted(dict(data["checks"]).items())),
            latency_s=float(data["latency_s"]),
            isolation=tuple(sorted(dict(data["isolation"]).items())),
            dataset=str(data["dataset"]),
            run=str(data["run"]),
            shard=str(data["shard"]),
            penalties=tuple(data["penalties"]) if "penalties" in data else None,
            total=data.get("total"),
            accepted=data.get("accepted"),
        )


def write_rows(rows: Iterable[Row], out: TextIO) -> None:
    """Write rows as JSONL, one object per line."""
    for row in rows:
        out.write(json.dumps(row.to_dict(), ensure_ascii=False, sort_keys=False) + "\n")


_REQUIRED = ("id", "task", "sample", "position", "pass", "failed_cases", "cases", "failure", "checks",
             "latency_s", "isolation", "dataset", "run", "shard")


def read_rows(path: Path) -> list[Row]:
    """Read a rows file written by `gate eval` or `gate merge`; bad lines are BadInput with file and line."""
    return list(_parse(read_lines(path), str(path)))


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file; a file that cannot be read is BadInput naming it."""
    try:
        # Not splitlines(): a JSON string may hold U+2028 and other characters it would split on.
        return path.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        raise BadInput(f"cannot read: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"not UTF-8 text (byte {exc.start})", file=str(path)) from None


def json_objects(lines: Iterable[str], where: str, expected: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of JSON Lines text; a line that is not JSON, or not an
    object, is BadInput naming `where`, the line and what was `expected` there."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"not JSON: {exc.msg}", file=where, line=number) from None
        if not isinstance(data, dict):
            raise BadInput(f"expected {expected}", file=where, line=number)
        yield number, data


def _parse(lines: Iterable[str], where: str) -> Iterator[Row]:
    for number, data in json_objects(lines, where, "a JSON object (a row written by gate eval)"):
        missing = [key for key in _REQUIRED if key not in data]
        if missing:
            raise BadInput("missing, expected a row written by gate eval", file=where, line=number,
                           key=missing[0])
        try:
            yield Row.from_dict(data)
        except (TypeError, ValueError, AttributeError) as exc:
            raise BadInput(f"wrong type in a row: {exc}", file=where, line=number) from None
