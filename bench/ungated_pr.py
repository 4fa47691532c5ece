"""What a PR that is not gated costs `gate ci`: a human's PR on a repository whose policy has cases and a suite.

    .venv/bin/python bench/ungated_pr.py [--runs 9]
    PYTHONPATH=OTHER_CHECKOUT .venv/bin/python bench/ungated_pr.py   # the same for another checkout of the gate

Each run is a new fake GitHub and a new checkout (a base of 300 modules, a `tests/` suite, a case), then one
`gate ci` in this process. It prints the fake GitHub's requests of the last run, how often the head's tree was
exported and a suite's trees built over all runs (the checkout work a PR that is not gated should not pay), and
the seconds per run with their median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # the fake GitHub of tests/ (PYTHONPATH first)

from gate.cli import main
from tests.fakegithub import FakeGitHub
from tests.fakegithub.scenario import Scenario

POLICY = "budget: 3\ncases:\n  - function: \"calc:add\"\n    args: [2, 3]\n    expect: 5\ntests:\n  paths: [tests]\n"


def counted(module: Any, name: str, calls: dict[str, int]) -> None:
    """Count the calls of `module.name` in `calls[name]`."""
    real: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return real(*args, **kwargs)

    calls[name] = 0
    setattr(module, name, wrapper)


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    import gate.sources.gitrange as gitrange

    calls: dict[str, int] = {}
    for name in ("export_tree", "suites"):
        counted(gitrange, name, calls)
    base = {".github/gate.yml": POLICY, "calc.py": "def add(a, b):\n    return a + b\n",
            "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            **{f"pkg/mod{i}.py": f"X = {i}\n" * 50 for i in range(300)}}
    seconds = []
    log: list[tuple[str, str, int]] = []
    for _ in range(runs):
        with FakeGitHub() as fake, tempfile.TemporaryDirectory() as tmp:
            pr = Scenario(fake, Path(tmp), base, {"calc.py": "def add(a, b):\n    return b + a\n"}, author="alice",
                          author_type="User")
            os.environ.update(pr.environment())
            fake.log.clear()
            start = time.perf_counter()
            code = main(["ci"])
            seconds.append(time.perf_counter() - start)
            log = list(fake.log)
    print(f"exit {code}; requests of the last run: {[f'{m} {p}' for m, p, _ in log]}")
    print(f"checkout work over {runs} runs: {calls}")
    print("seconds per run:", " ".join(f"{s:.3f}" for s in seconds), f"median {statistics.median(seconds):.3f}")


if __name__ == "__main__":
    main_bench()
