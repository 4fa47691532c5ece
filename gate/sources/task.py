"""Task files (YAML): what a model was asked to do, and the cases its reply must pass.

    name: add two numbers
    prompt: Write add(a, b).
    function: add
    allowed_imports: [math]
    cases:
      - args: [1, 2]
        expect: 3

The file's keys are declared by gate.subject.Task's fields (and `cases`), from which `python -m
gate.generate` writes its JSON Schema, gate/sources/task.schema.json; errors read like the policy
file's, one line each.
"""

from __future__ import annotations

from pathlib import Path

from gate.cases.specs import parse_cases
from gate.errors import BadInput, read_input
from gate.policy.marked_yaml import MarkedMap, load_marked
from gate.policy.model import CaseSpec
from gate.policy.validation import load_schema, validate
from gate.policy_file import build
from gate.subject import Task


def load_task(path: Path) -> tuple[Task, tuple[CaseSpec, ...]]:
    """The task a task file describes, and its cases. Raises BadInput naming the file, line and key."""
    file = str(path)
    text = read_input(path, "task file")
    doc = load_marked(text, file)
    if doc is None:
        raise BadInput("the task file is empty; expected a mapping with `name` and `cases`", file=file)
    if not isinstance(doc, MarkedMap):
        raise BadInput("expected a mapping with `name`, `prompt`, `function`, `allowed_imports` and `cases`",
                       file=file, line=getattr(doc, "line", 1))
    validate(doc, load_schema("gate.sources", "task.schema.json"), file)
    task: Task = build(Task, {key: value for key, value in doc.items() if key != "cases"}, file, "")
    return task, parse_cases(doc.get("cases", []), file, "cases")
