"""Samples to score: `{task_id, completion}` (HumanEval style, continuing the task's prompt),
`{task_id, code}` (a whole program) or `{task_id, reply}` (a raw model reply, extracted as `gate score`
does). Several samples of a task are numbered 0, 1, ... in file order."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gate.errors import BadInput
from gate.eval.datasets import Dataset

SAMPLE_KEYS = ("completion", "code", "reply")


@dataclass(frozen=True)
class Sample:
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
    where = str(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read samples: {exc.strerror}", file=where) from None
    with handle:
        for line, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise BadInput(f"not JSON: {exc.msg}", file=where, line=line) from None
            if not isinstance(data, dict):
                raise BadInput("expected a JSON object with task_id and completion, code or reply",
                               file=where, line=line)
            task_id = data.get("task_id")
            if isinstance(task_id, int) and not isinstance(task_id, bool):
                task_id = str(task_id)  # MBPP's own ids are integers
            if not isinstance(task_id, str):
                raise BadInput("expected a string", file=where, line=line, key="task_id")
            task = tasks.get(task_id)
            if task is None:
                raise BadInput(f"task {task_id!r} is not in dataset {dataset.name} ({len(tasks)} tasks)",
                               file=where, line=line, key="task_id")
            present = [key for key in SAMPLE_KEYS if key in data]
            if len(present) != 1:
                raise BadInput("expected exactly one of completion, code and reply", file=where, line=line,
                               key=present[1] if present else "completion")
            key = present[0]
            value = data[key]
            if not isinstance(value, str):
                raise BadInput("expected a string", file=where, line=line, key=key)
            code = {"completion": task.prefix + value, "code": value}.get(key)
            reply = value if key == "reply" else None
            samples.append(Sample(task_id, counts[task_id], len(samples), code, reply))
            counts[task_id] += 1
    if not samples:
        raise BadInput("no samples", file=where)
    return samples
