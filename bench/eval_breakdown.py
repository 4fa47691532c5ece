"""Where `gate eval`'s time goes, per sample: CPU in the gate's process and in the sandbox's processes, with
all isolation layers on and with each layer turned off in turn, plus the static checks alone.

    .venv/bin/python bench/eval_breakdown.py [--samples N] [--jobs N]

Each variant runs in its own process on HumanEval's canonical solutions. "gate" is this process's CPU (static
checks, the engine, staging and supervising runs); "sandbox" is the CPU of the zygote and every run it forked
(setting up the layers, the harnesses, the tests and the candidates). It reaches into the sandbox's modules
to switch layers off, which no user can do: it is a measurement, not a mode.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec

VARIANTS: dict[str, dict[str, Any]] = {
    "all layers": {},
    "no cgroup": {"cgroups": None},
    "no netns": {"netns": False},
    "no mountns": {"mountns": False, "hide": ()},
    "no seccomp": {"seccomp": False},
    "no uid switch": {"uids": None},
    "no layers": {"cgroups": None, "on": (), "hide": (), "uids": None},
    "static checks only": {},
}


def measure(variant: str, count: int, jobs: int) -> dict[str, float]:
    """Score `count` canonical HumanEval samples under `variant`; CPU and wall per sample in ms."""
    from gate.engine import run_checks
    from gate.eval.datasets import load_dataset
    from gate.eval.runner import eval_checks, subject_of
    from gate.eval.samples import Sample
    from gate.policy.model import Policy
    from gate.sandbox import detect, registry, runner

    tasks = load_dataset("humaneval").tasks
    cycled = (tasks * (count // len(tasks) + 1))[:count]
    samples = [(Sample(t.task_id, 0, i, t.reference), t) for i, t in enumerate(cycled)]
    checks = eval_checks()
    box = None
    if variant != "static checks only":
        layers = msgspec.structs.replace(detect.layers(True), **VARIANTS[variant])
        box = runner.LayeredSandbox(registry.BACKENDS["zygote"](layers), layers)
    else:
        checks = checks[:-1]
    policy = Policy(runs=1)

    def one(item: tuple[Sample, Any]) -> int:
        return run_checks(subject_of(item[0], item[1]), policy, box, checks=checks).total

    one(samples[0])  # start the zygote outside the measurement
    before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        totals = list(pool.map(one, samples))
    wall = time.perf_counter() - started
    if box is not None:
        box.close()  # the zygote exits and is reaped: its runs' CPU is in RUSAGE_CHILDREN from here on
    after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)

    def ms(index: int, field: str) -> float:
        spent = float(getattr(after[index], field)) - float(getattr(before[index], field))
        return round(spent / count * 1000, 2)

    return {"wall": round(wall / count * 1000, 2), "gate user": ms(0, "ru_utime"),
            "gate sys": ms(0, "ru_stime"), "sandbox user": ms(1, "ru_utime"),
            "sandbox sys": ms(1, "ru_stime"), "failed": sum(1 for t in totals if t)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=164)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--variant", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(measure(args.variant, args.samples, args.jobs)))
        return
    print(f"ms per sample, {args.samples} HumanEval canonical samples, {args.jobs} jobs")
    print(f"{'variant':20s} {'wall':>6s} {'gate usr':>9s} {'gate sys':>9s} {'sbx usr':>8s} {'sbx sys':>8s}"
          f" {'CPU':>6s}")
    for variant in VARIANTS:
        done = subprocess.run([sys.executable, __file__, "--variant", variant, "--samples", str(args.samples),
                               "--jobs", str(args.jobs)], capture_output=True, text=True, check=True)
        m = json.loads(done.stdout)
        cpu = m["gate user"] + m["gate sys"] + m["sandbox user"] + m["sandbox sys"]
        print(f"{variant:20s} {m['wall']:6.1f} {m['gate user']:9.1f} {m['gate sys']:9.1f}"
              f" {m['sandbox user']:8.1f} {m['sandbox sys']:8.1f} {cpu:6.1f}"
              + (f"  ({m['failed']} charged points)" if m["failed"] else ""))


if __name__ == "__main__":
    main()
