"""Deterministic sharding of a run by task id, so that a CI matrix can split a large run and merge one
report."""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from gate.errors import BadInput

_SHARD = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")


class Shard(msgspec.Struct, frozen=True):
    """Shard `index` (1-based) of `count`."""

    index: int = 1
    count: int = 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def select(self, task_ids: Sequence[str]) -> set[str]:
        """The tasks of this shard: every count-th task of `task_ids` (in dataset order), starting at index.

        Round robin over the dataset's order keeps shards within one task of each other in size, and every
        sample of a task lands in the same shard, so per-task pass@k needs no cross-shard state."""
        return {task for position, task in enumerate(task_ids) if position % self.count == self.index - 1}


def parse_shard(text: str, key: str = "--shard") -> Shard:
    """Parse `K/N` with 1 <= K <= N."""
    match = _SHARD.match(text.strip())
    if not match:
        raise BadInput(f"expected K/N, for example 2/4, got {text!r}", key=key)
    index, count = int(match.group(1)), int(match.group(2))
    if index > count:
        raise BadInput(f"shard {index} of {count} does not exist: K must be between 1 and N", key=key)
    return Shard(index, count)
