"""Merge the rows of the shards of one run into one report, refusing shards that overlap, come from another
run, or leave a gap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from msgspec.structs import replace

from gate.errors import BadInput
from gate.eval.rows import Row, read_rows
from gate.eval.shard import parse_shard


def merge_shards(paths: Sequence[Path]) -> list[Row]:
    """Read each shard's rows and return them as one run, in the order of the unsharded run."""
    first: tuple[Path, str, int] | None = None  # (file, run, N)
    owner: dict[int, Path] = {}
    rows: list[Row] = []
    for path in paths:
        file_rows = read_rows(path)
        if not file_rows:
            raise BadInput("no rows: every shard of a run has at least one task", file=str(path))
        run, shard_text = _identity(path, file_rows)
        shard = parse_shard(shard_text, key="shard")
        if first is None:
            first = (path, run, shard.count)
        elif run != first[1]:
            raise BadInput(f"from another run than {first[0]} (dataset, samples or options differ): "
                           "merge only shards of one run", file=str(path), key="run")
        elif shard.count != first[2]:
            raise BadInput(f"shard {shard} does not match {first[0]}, which is split in {first[2]}",
                           file=str(path), key="shard")
        if shard.index in owner:
            raise BadInput(f"shard {shard} is also in {owner[shard.index]}: shards overlap",
                           file=str(path), key="shard")
        owner[shard.index] = path
        rows.extend(file_rows)
    if first is None:
        raise BadInput("nothing to merge: give the rows files of every shard", key="ROWS")
    missing = [f"{k}/{first[2]}" for k in range(1, first[2] + 1) if k not in owner]
    if missing:
        raise BadInput(f"missing shard{'s' if len(missing) > 1 else ''} {', '.join(missing)}: "
                       "merge needs every shard of the run", key="ROWS")
    _refuse_duplicates(rows)
    rows.sort(key=lambda row: row.position)
    return [replace(row, shard="1/1") for row in rows]


def _identity(path: Path, rows: Sequence[Row]) -> tuple[str, str]:
    run, shard = rows[0].run, rows[0].shard
    for number, row in enumerate(rows, 1):
        if row.run != run or row.shard != shard:
            raise BadInput("rows of different runs or shards in one file", file=str(path), line=number,
                           key="run" if row.run != run else "shard")
    return run, shard


def _refuse_duplicates(rows: Sequence[Row]) -> None:
    seen: dict[str, str] = {}
    for row in rows:
        if row.id in seen:
            raise BadInput(f"sample {row.id} is in shard {seen[row.id]} and shard {row.shard}: "
                           "shards overlap", key="id")
        seen[row.id] = row.shard
