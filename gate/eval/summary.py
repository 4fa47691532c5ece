"""The summary of a run: pass@k, failures by kind, the slowest tasks. Rendered to the terminal through a
Jinja2 template and to JSON."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import msgspec

from gate.eval.passk import PassAtK, pass_at_ks
from gate.eval.render import render_template
from gate.eval.rows import FAILURE_KINDS, Row

SLOWEST = 5

class SlowTask(msgspec.Struct, frozen=True):
    task: str
    seconds: float
    samples: int


class Summary(msgspec.Struct, frozen=True):
    dataset: str
    samples: int
    tasks: int
    passed: int
    pass_at_k: tuple[PassAtK, ...]
    failures: tuple[tuple[str, int], ...]
    slowest: tuple[SlowTask, ...]
    isolation: tuple[tuple[str, str], ...]
    wall_s: float | None = None  # measured by the run itself; None for a merge of shards

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "samples": self.samples,
            "tasks": self.tasks,
            "passed": self.passed,
            "pass_at_k": {f"pass@{p.k}": {"value": p.value, "tasks": p.tasks, "short": p.short}
                          for p in self.pass_at_k},
            "failures": dict(self.failures),
            "slowest": [{"task": s.task, "seconds": s.seconds, "samples": s.samples} for s in self.slowest],
            "isolation": dict(self.isolation),
            "wall_s": self.wall_s,
            "samples_per_s": self.samples_per_s,
        }

    @property
    def samples_per_s(self) -> float | None:
        return round(self.samples / self.wall_s, 1) if self.wall_s else None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def render(self) -> str:
        """The terminal summary."""
        return render_template("summary.txt.j2", s=self)


def summarize(rows: Sequence[Row], ks: Sequence[int], wall_s: float | None = None) -> Summary:
    """Summarize rows (of one run, or of merged shards)."""
    per_task: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        per_task[row.task].append(row)
    counts = [(len(r), sum(x.passed for x in r)) for r in per_task.values()]
    failures = Counter(row.failure for row in rows if row.failure)
    order = {kind: i for i, kind in enumerate(FAILURE_KINDS)}
    slow = sorted(((task, sum(x.latency_s for x in r), len(r)) for task, r in per_task.items()),
                  key=lambda t: (-t[1], t[0]))[:SLOWEST]
    isolation = rows[0].isolation if rows else ()
    return Summary(
        dataset=rows[0].dataset if rows else "",
        samples=len(rows),
        tasks=len(per_task),
        passed=sum(row.passed for row in rows),
        pass_at_k=tuple(pass_at_ks(counts, ks)),
        failures=tuple(sorted(failures.items(), key=lambda kv: order.get(kv[0], len(order)))),
        slowest=tuple(SlowTask(task, round(seconds, 4), n) for task, seconds, n in slow),
        isolation=isolation,
        wall_s=round(wall_s, 3) if wall_s is not None else None,
    )
