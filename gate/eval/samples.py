"""Samples to score: `{task_id, completion}` (HumanEval style, continuing the task's prompt),
`{task_id, code}` (a whole program) or `{task_id, reply}` (a raw model reply, extracted as `gate score`
does). Several samples of a task are numbered 0, 1, ... in file order."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec

from gate.errors import BadInput
from gate.eval.datasets import Dataset, EvalTask
from gate.eval.rows import json_objects, read_lines

SAMPLE_KEYS = ("completion", "code", "reply")


class Sample(msgspec.Struct, frozen=True):
    """One sample: `code` is the whole program to run (prompt + completion for a completion); for a raw reply
    `code` is None and `reply` holds the text to extract from."""

    task_id: str
    index: int  # among the samples of its task
    position: int  # among all samples of the file
    code: str | None
    reply: str | None = None

    @property
    def id(self) -> str:
        return f"{self.task_id}#{self.index}"


def load_samples(path: Path, dataset: Dataset) -> list[Sample]:
    """Read a samples file; every task id must be in the dataset and every line must have exactly one of
    completion, code and reply."""
    tasks = dataset.by_id()
    counts: Counter[str] = Counter()
    samples: list[Sample] = []
    expected = "a JSON object with task_id and completion, code or reply"
    for line, data in json_objects(read_lines(path), str(path), expected):
        task, key = _check(data, tasks, dataset, str(path), line)
        value = data[key]
        code = {"completion": task.prefix + value, "code": value}.get(key)
        reply = value if key == "reply" else None
        samples.append(Sample(task.task_id, counts[task.task_id], len(samples), code, reply))
        counts[task.task_id] += 1
    if not samples:
        raise BadInput("no samples", file=str(path))
    return samples


def _check(data: dict[str, Any], tasks: dict[str, EvalTask], dataset: Dataset, where: str,
           line: int) -> tuple[EvalTask, str]:
    """The sample's task and which of completion, code and reply it holds."""
    task_id = data.get("task_id")
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        task_id = str(task_id)  # MBPP's own ids are integers
    if not isinstance(task_id, str):
        raise BadInput("expected a string", file=where, line=line, key="task_id")
    task = tasks.get(task_id)
    if task is None:
        hint = "; --split all loads every MBPP task" if dataset.name.startswith("mbpp") else ""
        raise BadInput(f"task {task_id!r} is not in dataset {dataset.name} ({len(tasks)} tasks{hint})",
                       file=where, line=line, key="task_id")
    present = [key for key in SAMPLE_KEYS if key in data]
    if len(present) != 1:
        raise BadInput("expected exactly one of completion, code and reply", file=where, line=line,
                       key=present[1] if present else "completion")
    if not isinstance(data[present[0]], str):
        raise BadInput("expected a string", file=where, line=line, key=present[0])
    return task, present[0]
