"""The fixed part of a `gate check`: everything but the case runs (the interpreter and imports, git, what is read
from the base, the policy, the sandbox's start-up, the static checks, the reports, the exit).

    sudo .venv/bin/python bench/check_fixed.py [--runs 9] [--baseline DIR] [--cold]

On the repository of bench/pr_latency.py's first row (20 changed files, 50 + 10 hidden call cases), each round
runs `python -m gate check --json` (as the Action runs the gate) in a child that times
`gate.cases.schedule.run_cases`, where every case run happens; the fixed part is the child's wall time less
that. `--baseline DIR` also times another checkout of the gate (first on the child's path), alternating round
by round so that both see the same load. `--cold` removes what the gate remembers in /run/gate (valid
documents, the layers found; gate/memo.py) before each round of this tree, as after a reboot or on a fresh
runner. Medians and minimums of `--runs` rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pr_latency import ROWS, build_row  # a sibling bench script

# Reaches into the gate to time its case runs, which no user does: a measurement only.
_CHILD = """
import runpy, sys, time
from gate.cases import schedule
inner, spent = schedule.run_cases, []
def timed(*args, **kwargs):
    started = time.perf_counter()
    try:
        return inner(*args, **kwargs)
    finally:
        spent.append(time.perf_counter() - started)
schedule.run_cases = timed
try:
    runpy.run_module("gate", run_name="__main__")  # `python -m gate`, as the Action runs it
finally:
    print(f"case runs: {sum(spent)} {len(spent)}", file=sys.stderr)
"""
_REMEMBERED = ("layers-", "valid-")


def _forget() -> None:
    """Remove the gate's records in /run/gate (the uids' lock files stay)."""
    folder = Path("/run/gate")
    for record in folder.glob("*.json") if folder.is_dir() else ():
        if record.name.startswith(_REMEMBERED):
            record.unlink(missing_ok=True)


def one_round(repo: Path, source: Path | None, out: Path) -> tuple[float, float]:
    """(wall seconds of one `gate check`, seconds of its case runs)."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    command = [sys.executable, "-P", "-c", _CHILD, "check", "--repo", str(repo), "--base", "base", "--head", "head",
               "--json", str(out)]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=out.parent, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    last = (done.stderr.strip().splitlines() or [""])[-1]
    if done.returncode not in (0, 1) or not last.startswith("case runs: ") or last.endswith(" 0"):
        sys.exit(f"gate check exited {done.returncode} without running its cases:\n{done.stderr}")
    return wall, float(last.split()[2])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="rounds (default 9)")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="another checkout of the gate to time too")
    parser.add_argument("--cold", action="store_true", help="forget what the gate remembers before each round")
    args = parser.parse_args(argv)
    gates: dict[str, Path | None] = {"gate": None}
    if args.baseline:
        gates = {"baseline": args.baseline.resolve(), "gate": None}
    with tempfile.TemporaryDirectory(prefix="gate-bench-") as folder:
        row = build_row(Path(folder) / "row", *ROWS[0])
        fixed: dict[str, list[float]] = {name: [] for name in gates}
        walls: dict[str, list[float]] = {name: [] for name in gates}
        for _ in range(args.runs):
            for name, source in gates.items():
                if args.cold and source is None:
                    _forget()
                wall, runs = one_round(row.repo, source, Path(folder) / "verdict.json")
                walls[name].append(wall)
                fixed[name].append(wall - runs)
    print(f"{ROWS[0][0]}: seconds over {args.runs} rounds{' (this tree cold)' if args.cold else ''}, "
          f"as {'root' if os.geteuid() == 0 else 'a user'}")
    print(f"{'':10}{'fixed part':>24}{'whole gate check':>24}")
    print(f"{'':10}{'median':>12}{'min':>12}{'median':>12}{'min':>12}")
    for name in gates:
        print(f"{name:10}{statistics.median(fixed[name]):12.3f}{min(fixed[name]):12.3f}"
              f"{statistics.median(walls[name]):12.3f}{min(walls[name]):12.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
