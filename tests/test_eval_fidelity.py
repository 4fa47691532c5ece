"""Fidelity: the datasets' own reference solutions pass, wrong ones fail, and hostile ones cannot pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.eval.datasets import KNOWN_BROKEN, load_dataset
from tests.eval_helpers import MBPP_DIR, needs_mbpp, run_eval

# Generous limits: a fidelity run shares the machine with the rest of the suite, and MBPP 123's reference
# takes about 2.5 s of CPU by itself.
SLOW_OK = "limits:\n  timeout: 60\n  cpu: 60\n"


def _policy(tmp_path: Path) -> str:
    path = tmp_path / "policy.yml"
    path.write_text(SLOW_OK, encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_humaneval_canonical_solutions_all_pass(tmp_path: Path) -> None:
    samples = [{"task_id": t.task_id, "completion": (t.reference or "")[len(t.prompt):]}
               for t in load_dataset("humaneval").tasks]
    rows, summary = run_eval(tmp_path, "humaneval", samples, "--policy", _policy(tmp_path))
    assert len(rows) == 164
    assert [r["task"] for r in rows if not r["pass"]] == []
    assert summary["pass_at_k"]["pass@1"]["value"] == 1.0


def test_humaneval_wrong_solutions_fail(tmp_path: Path) -> None:
    tasks = load_dataset("humaneval").tasks[:40]
    samples = [{"task_id": t.task_id, "completion": "    return None\n"} for t in tasks]
    rows, summary = run_eval(tmp_path, "humaneval", samples)
    assert [r["task"] for r in rows if r["pass"]] == []
    assert summary["pass_at_k"]["pass@1"]["value"] == 0.0


@pytest.mark.slow
@needs_mbpp
def test_mbpp_reference_solutions_pass_except_the_known_broken(tmp_path: Path) -> None:
    data = MBPP_DIR / "mbpp.jsonl"
    samples = [{"task_id": int(t.task_id), "code": t.reference} for t in load_dataset("mbpp", data).tasks]
    rows, _ = run_eval(tmp_path, "mbpp", samples, "--data", str(data), "--policy", _policy(tmp_path))
    assert len(rows) == 500
    assert sorted(r["task"] for r in rows if not r["pass"]) == sorted(KNOWN_BROKEN["mbpp"])


@pytest.mark.slow
@needs_mbpp
def test_mbpp_sanitized_reference_solutions_pass_except_the_known_broken(tmp_path: Path) -> None:
    data = MBPP_DIR / "sanitized-mbpp.json"
    tasks = load_dataset("mbpp-sanitized", data).tasks
    samples = [{"task_id": t.task_id, "code": t.reference} for t in tasks]
    rows, _ = run_eval(tmp_path, "mbpp-sanitized", samples, "--data", str(data),
                       "--policy", _policy(tmp_path))
    assert len(rows) == 257
    assert sorted(r["task"] for r in rows if not r["pass"]) == sorted(KNOWN_BROKEN["mbpp-sanitized"])


@needs_mbpp
def test_mbpp_wrong_solutions_fail(tmp_path: Path) -> None:
    data = MBPP_DIR / "mbpp.jsonl"
    tasks = load_dataset("mbpp", data).tasks[:30]
    samples = [{"task_id": t.task_id, "code": "import re\n" + _rename_all_functions(t.reference or "")}
               for t in tasks]
    rows, _ = run_eval(tmp_path, "mbpp", samples, "--data", str(data))
    assert [r["task"] for r in rows if r["pass"]] == []


def _rename_all_functions(code: str) -> str:
    return code.replace("def ", "def wrong_")


# A HumanEval/0 completion (the body of has_close_elements) per attack. None of them may pass.
HOSTILE = {
    "exits 0 at import": "    pass\nimport sys\nsys.exit(0)\n",
    "os._exit(0) at import": "    pass\nimport os\nos._exit(0)\n",
    "exits 0 when called": "    raise SystemExit(0)\n",
    "always-equal object": (
        "    class Anything:\n"
        "        def __eq__(self, other): return True\n"
        "        def __ne__(self, other): return False\n"
        "        def __bool__(self): return True\n"
        "    return Anything()\n"),
    "bool subclass": "    class B(int):\n        def __eq__(self, o): return True\n    return B(1)\n",
    "fake prints": "    print('passed')\n    print('All tests passed')\n    return None\n",
    # Looks for the test code anywhere it can reach: its call stack, every live object, every readable file
    # in its directory and /tmp. The needle is built at run time so that its own source does not match.
    "reads the tests": (
        "    import gc, sys, glob\n"
        "    needle = 'assert ' + 'cand' + 'idate('\n"
        "    seen = []\n"
        "    frame = sys._getframe(1)\n"
        "    while frame:\n"
        "        seen.append(repr(frame.f_locals)[:100000])\n"
        "        frame = frame.f_back\n"
        "    seen += [o for o in gc.get_objects() if isinstance(o, str)]\n"
        "    for path in glob.glob('**/*', recursive=True) + glob.glob('/tmp/**/*', recursive=True):\n"
        "        try:\n"
        "            seen.append(open(path).read())\n"
        "        except Exception:\n"
        "            pass\n"
        "    if any(needle in text for text in seen):\n"
        "        raise SystemExit('FOUND THE TESTS')\n"
        "    return None\n"),
    "patches the harness": (
        "    import json, builtins\n"
        "    json.dumps = lambda *a, **k: '{\"passed\": true}'\n"
        "    json.loads = lambda *a, **k: {'passed': True}\n"
        "    builtins.AssertionError = type('Nothing', (Exception,), {})\n"
        "    return None\n"),
    "writes a fake result on every descriptor": (
        "    import os\n"
        "    for fd in range(3, 64):\n"
        "        try:\n"
        "            os.write(fd, b'{\"passed\": true}\\n')\n"
        "        except OSError:\n"
        "            pass\n"
        "    return None\n"),
    "sleeps past the limit": "    import time\n    time.sleep(30)\n",
}


def test_hostile_completions_never_pass(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text("limits:\n  timeout: 2\n", encoding="utf-8")
    samples = [{"task_id": "HumanEval/0", "completion": code} for code in HOSTILE.values()]
    rows, summary = run_eval(tmp_path, "humaneval", samples, "--policy", str(policy))
    outcome = {name: (row["pass"], row["failure"]) for name, row in zip(HOSTILE, rows, strict=True)}
    assert [name for name, (passed, _) in outcome.items() if passed] == []
    assert outcome["sleeps past the limit"][1] == "timeout", rows[-1]["detail"]
    reader = rows[list(HOSTILE).index("reads the tests")]
    assert "FOUND" not in reader["detail"] and "returned NoneType" in reader["detail"]
    assert summary["passed"] == 0


@needs_mbpp
def test_hostile_mbpp_sample_that_exits_early_fails(tmp_path: Path) -> None:
    data = MBPP_DIR / "mbpp.jsonl"
    samples = [{"task_id": 11, "code": "import sys\nsys.exit(0)\n"},
               {"task_id": 11, "code": "print('ok')\nraise SystemExit(0)\n"}]
    rows, _ = run_eval(tmp_path, "mbpp", samples, "--data", str(data))
    assert [r["pass"] for r in rows] == [False, False]
