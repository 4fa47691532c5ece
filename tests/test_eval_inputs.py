"""Datasets and samples files: what loads, and the one-line errors for what does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.errors import BadInput
from gate.eval.datasets import load_dataset
from gate.eval.samples import load_samples
from gate.eval.shard import Shard, parse_shard
from tests.eval_helpers import MBPP_DIR, needs_mbpp


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_humaneval_from_the_installed_package() -> None:
    dataset = load_dataset("humaneval")
    assert len(dataset.tasks) == 164
    first = dataset.tasks[0]
    assert first.task_id == "HumanEval/0"
    assert [c.kind for c in first.cases] == ["humaneval"]
    assert first.function == "has_close_elements"


@needs_mbpp
def test_mbpp_test_split_by_default_and_other_splits() -> None:
    test = load_dataset("mbpp", MBPP_DIR / "mbpp.jsonl")
    assert [t.task_id for t in test.tasks] == [str(i) for i in range(11, 511)]
    setup = {t.task_id: dict(t.cases[0].fields)["setup"] for t in test.tasks}
    assert setup["367"]  # one of the two tasks with setup code
    assert len(load_dataset("mbpp", MBPP_DIR / "mbpp.jsonl", "all").tasks) == 974


@needs_mbpp
def test_mbpp_sanitized_uses_test_imports() -> None:
    dataset = load_dataset("mbpp-sanitized", MBPP_DIR / "sanitized-mbpp.json")
    assert len(dataset.tasks) == 257
    setups = [dict(t.cases[0].fields)["setup"] for t in dataset.tasks]
    assert any("import math" in s for s in setups)


def test_mbpp_without_a_path_says_where_to_point() -> None:
    with pytest.raises(BadInput, match="--data PATH"):
        load_dataset("mbpp")


def test_own_format_becomes_call_cases(tmp_path: Path) -> None:
    tasks = _write(tmp_path / "tasks.jsonl", [
        {"task_id": "is_even", "function": "is_even", "prompt": "even?",
         "cases": [{"args": [2], "expect": True}, {"name": "bool", "args": [True], "error": "TypeError"}]},
    ])
    dataset = load_dataset(str(tasks))
    (task,) = dataset.tasks
    assert [c.kind for c in task.cases] == ["call", "call"]
    assert [c.name for c in task.cases] == ["case 1", "bool"]
    assert task.function == "is_even"


@pytest.mark.parametrize(("row", "message"), [
    ({"function": "f", "cases": [{"args": [], "expect": 1}]}, "tasks.jsonl:2: task_id: expected a string"),
    ({"task_id": "t", "function": "f", "cases": []}, "tasks.jsonl:2: cases: expected a non-empty list"),
    ({"task_id": "t", "function": "f", "cases": [{"args": [1], "expect": 1, "error": "E"}]},
     "tasks.jsonl:2: cases[0]"),
    ({"task_id": "t", "function": "f", "cases": [{"stdin": "x", "stdout": "y"}]},
     "tasks.jsonl:2: cases[0]: expected a call case"),
    ({"task_id": "t", "function": "f", "cases": [{"args": [], "expect": 1}], "extra": 1},
     "tasks.jsonl:2: extra: unknown key"),
    ({"task_id": "ok", "function": "f", "cases": [{"args": [], "expect": 1}]},
     "tasks.jsonl:2: task_id: task 'ok'"),
])
def test_own_format_errors_name_file_line_and_key(tmp_path: Path, row: dict[str, object],
                                                  message: str) -> None:
    good = {"task_id": "ok", "function": "f", "cases": [{"args": [], "expect": 1}]}
    tasks = _write(tmp_path / "tasks.jsonl", [good, row])
    with pytest.raises(BadInput) as caught:
        load_dataset(str(tasks))
    assert caught.value.render().startswith(f"{tmp_path}/{message}")


def test_samples_are_numbered_per_task_and_completions_continue_the_prompt(tmp_path: Path) -> None:
    dataset = load_dataset("humaneval")
    prompt = dataset.tasks[0].prompt
    path = _write(tmp_path / "s.jsonl", [
        {"task_id": "HumanEval/0", "completion": "    return True\n"},
        {"task_id": "HumanEval/1", "code": "def separate_paren_groups(s): return []\n"},
        {"task_id": "HumanEval/0", "reply": "```python\nprint(1)\n```"},
    ])
    samples = load_samples(path, dataset)
    assert [(s.id, s.position) for s in samples] == [("HumanEval/0#0", 0), ("HumanEval/1#0", 1),
                                                      ("HumanEval/0#1", 2)]
    assert samples[0].code == prompt + "    return True\n"
    assert samples[2].code is None and samples[2].reply is not None


@pytest.mark.parametrize(("line", "message"), [
    ("not json", ":1: not JSON"),
    (json.dumps({"task_id": "HumanEval/999", "code": ""}), ":1: task_id: task 'HumanEval/999' is not in"),
    (json.dumps({"task_id": "HumanEval/0", "code": "", "completion": ""}),
     ":1: code: expected exactly one"),
    (json.dumps({"task_id": "HumanEval/0"}), ":1: completion: expected exactly one"),
    (json.dumps({"task_id": "HumanEval/0", "code": 3}), ":1: code: expected a string"),
])
def test_bad_samples_are_one_line_errors(tmp_path: Path, line: str, message: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    code = main(["eval", "--dataset", "humaneval", "--samples", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"gate: error: {path}{message}")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["0/2", "3/2", "x", "1/0", "1-2"])
def test_bad_shards_are_refused(text: str) -> None:
    with pytest.raises(BadInput, match="--shard"):
        parse_shard(text)


def test_shards_partition_tasks_round_robin() -> None:
    tasks = [f"t{i}" for i in range(10)]
    parts = [Shard(k, 3).select(tasks) for k in (1, 2, 3)]
    assert set().union(*parts) == set(tasks)
    assert sum(len(p) for p in parts) == 10
    assert sorted(len(p) for p in parts) == [3, 3, 4]
    assert parse_shard("2/3") == Shard(2, 3)


def test_a_damaged_dataset_is_refused_before_anything_runs(tmp_path: Path) -> None:
    broken = _write(tmp_path / "HumanEval.jsonl", [
        {"task_id": "HumanEval/0", "prompt": "def f(:\n", "test": "def check(c): pass", "entry_point": "f"}])
    with pytest.raises(BadInput) as caught:
        load_dataset("humaneval", broken)
    assert caught.value.render().startswith(f"{broken}: task HumanEval/0: prompt: does not parse")


def test_a_samples_file_that_is_not_utf8_is_a_one_line_error(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"task_id": "HumanEval/0", "code": "\xff"}\n')
    assert main(["eval", "--dataset", "humaneval", "--samples", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"gate: error: {path}: not UTF-8 text")
