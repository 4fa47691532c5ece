"""How long a PR verdict takes: `gate check` on generated repositories, against the same cases as plain pytest.

    sudo .venv/bin/python bench/pr_latency.py [--runs 5] [--baseline DIR] [--rows 1,2,3,4]

Each row is a repository with a base commit (the policy with its cases, the hidden cases) and a head commit
that adds generated modules of 80-140 lines importing math, itertools, functools, statistics, collections,
dataclasses and typing; every case is a `call` case on one of their functions. The gate's time is the whole
`gate check --json` process, as a user or the Action runs it; the peer is the same cases written as plain
pytest tests (one parametrized test, unsandboxed, run once), what a user would otherwise write. `--baseline
DIR` also times another checkout of the gate (run with DIR first on its path), alternating with this one in
every round, so that both see the same load on a shared machine; the verdicts of both must agree. Medians of
`--runs` rounds, of the wall time and then of the CPU time (each command's and its waited-for processes': the
gate's zygotes and their runs), which a shared machine's load moves less. Run it as root to get every
isolation layer.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# (label, changed files, public cases, hidden cases, hanging)
ROWS: tuple[tuple[str, int, int, int, bool], ...] = (
    ("20 files, 50 + 10 hidden cases", 20, 50, 10, False),
    ("20 files, 500 + 100 hidden cases", 20, 500, 100, False),
    ("200 files, 500 + 100 hidden cases", 200, 500, 100, False),
    ("5 hanging cases, timeout 5 s", 1, 5, 0, True),
)
# As the Action runs it (`python -I -m gate`), less -I's isolation from PYTHONPATH, which --baseline needs.
_RUN_GATE = ("-P", "-m", "gate")

# Function bodies the generated modules pick from: (name, source with {k} as the module's constant, arguments
# a case calls it with). Each takes a list of ints.
_FUNCTIONS: tuple[tuple[str, str], ...] = (
    ("window_sums", '''
def window_sums{n}(xs: Sequence[int]) -> list[int]:
    """Sums of every window of {k} consecutive values."""
    size = min({k}, len(xs)) or 1
    window: deque[int] = deque(maxlen=size)
    sums = []
    for x in xs:
        window.append(x)
        if len(window) == size:
            sums.append(sum(window))
    return sums
'''),
    ("spread", '''
def spread{n}(xs: Sequence[int]) -> dict[str, float]:
    """Mean, median and population deviation of the values, rounded."""
    if not xs:
        return {{"mean": 0.0, "median": 0.0, "pstdev": 0.0}}
    return {{"mean": round(statistics.mean(xs), 6), "median": float(statistics.median(xs)),
            "pstdev": round(statistics.pstdev(xs), 6)}}
'''),
    ("pair_count", '''
def pair_count{n}(xs: Sequence[int]) -> int:
    """How many pairs of values sum to a multiple of {k}."""
    return sum(1 for a, b in itertools.combinations(xs, 2) if (a + b) % {k} == 0)
'''),
    ("digest", '''
def digest{n}(xs: Sequence[int]) -> int:
    """A fold of the values, mixing each with its position."""
    return functools.reduce(lambda acc, item: (acc * 31 + item[0] * item[1] + {k}) % 1_000_003,
                            enumerate(xs, start=1), 7)
'''),
    ("top_residues", '''
def top_residues{n}(xs: Sequence[int]) -> list[list[int]]:
    """The three most common residues modulo {k}, with their counts (ties by residue)."""
    counts = Counter(x % {k} for x in xs)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [[residue, count] for residue, count in ranked[:3]]
'''),
    ("norm", '''
def norm{n}(xs: Sequence[int]) -> float:
    """The Euclidean norm of the values scaled by 1/{k}, rounded."""
    return round(math.sqrt(math.fsum((x / {k}) ** 2 for x in xs)), 9)
'''),
    ("summary", '''
def summary{n}(xs: Sequence[int]) -> list[int]:
    """Count, low, high and span of the values, through the module's Summary."""
    return Summary.of(xs).as_list()
'''),
    ("groups", '''
def groups{n}(xs: Sequence[int]) -> dict[str, int]:
    """The sum of the values in each bucket of width {k}."""
    buckets: defaultdict[str, int] = defaultdict(int)
    for x in xs:
        buckets[f"b{{x // {k}}}"] += x
    return dict(sorted(buckets.items()))
'''),
)

_HEADER = '''"""Generated module {index}: small numeric helpers of the kind a coding agent writes."""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from collections import Counter, defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

SCALE = {k}


@dataclass(frozen=True)
class Summary:
    """Count and range of some values."""

    count: int
    low: int
    high: int
    tags: tuple[str, ...] = field(default=())
    kind: ClassVar[str] = "summary"

    @classmethod
    def of(cls, xs: Sequence[int]) -> Summary:
        if not xs:
            return cls(0, 0, 0)
        return cls(len(xs), min(xs), max(xs))

    @property
    def span(self) -> int:
        return self.high - self.low

    def as_list(self) -> list[int]:
        return [self.count, self.low, self.high, self.span]


def _clamp(value: int, low: int, high: int) -> int:
    """Keep `value` within [low, high]."""
    return max(low, min(high, value))
'''
_HANGING = '''"""A module whose function never returns."""


def spin(n: int) -> int:
    while True:
        n += 1
'''


@dataclass(frozen=True)
class Row:
    """One generated repository and the commands that time it."""

    label: str
    repo: Path
    peer: Path  # the head tree with the plain pytest file
    hanging: bool


def module_source(index: int, rng: random.Random) -> tuple[str, list[str]]:
    """A generated module and the names of its public functions."""
    k = rng.randint(3, 9)
    chosen = rng.sample(range(len(_FUNCTIONS)), rng.randint(5, 7))
    parts = [_HEADER.format(index=index, k=k)]
    names = []
    for n, which in enumerate(chosen):
        name, body = _FUNCTIONS[which]
        parts.append("\n" + body.format(n=n, k=k))
        names.append(f"{name}{n}")
    return "".join(parts), names


def _load(name: str, source: str) -> dict[str, Any]:
    """Run a generated module here (the bench's own code) to compute the expected values."""
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses looks its module up
    exec(compile(source, name, "exec"), module.__dict__)
    return module.__dict__


def _cases(modules: dict[str, tuple[str, list[str]]], count: int, rng: random.Random, prefix: str
           ) -> list[dict[str, Any]]:
    """`count` call cases over the modules' functions, with the expected values computed here."""
    loaded: dict[str, dict[str, Any]] = {}
    targets = [(module, name) for module, (_, names) in modules.items() for name in names]
    cases = []
    for number in range(count):
        module, name = targets[number % len(targets)]
        if module not in loaded:
            loaded[module] = _load(f"_bench_{prefix.strip()}_{module}", modules[module][0])
        args = [[rng.randint(-50, 200) for _ in range(rng.randint(0, 40))]]
        expect = loaded[module][name](*args)
        cases.append({"name": f"{prefix}{number}", "function": f"pkg.{module}:{name}", "args": args,
                      "expect": expect})
    return cases


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def build_row(where: Path, label: str, files: int, public: int, hidden: int, hanging: bool) -> Row:
    """The repository of one row (base: policy, hidden cases, package; head: the changed files) and the peer's
    tree."""
    rng = random.Random(f"{label}")
    repo = where / "repo"
    (repo / ".github").mkdir(parents=True)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    if hanging:
        modules = {"spin": (_HANGING, ["spin"])}
        cases = [{"name": f"hangs{n}", "function": "pkg.spin:spin", "args": [n], "expect": 0}
                 for n in range(public)]
        hidden_cases: list[dict[str, Any]] = []
    else:
        modules = {f"m{n:03d}": module_source(n, rng) for n in range(files)}
        cases = _cases(modules, public, rng, "case ")
        hidden_cases = _cases(modules, hidden, rng, "hidden ")
    policy: dict[str, Any] = {"cases": cases}
    if hanging:
        policy["limits"] = {"timeout": 5}
    (repo / ".github" / "gate.yml").write_text(yaml.safe_dump(policy, sort_keys=False))
    (repo / ".github" / "gate-hidden.yml").write_text(yaml.safe_dump({"cases": hidden_cases}, sort_keys=False))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "add", "-A")
    _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "base")
    _git(repo, "tag", "base")
    for module, (source, _) in modules.items():
        (repo / "pkg" / f"{module}.py").write_text(source)
    _git(repo, "-c", "user.name=bot", "-c", "user.email=bot@example.com", "add", "-A")
    _git(repo, "-c", "user.name=bot", "-c", "user.email=bot@example.com", "commit", "-qm", "bot change")
    _git(repo, "tag", "head")
    peer = where / "peer"
    shutil.copytree(repo / "pkg", peer / "pkg")
    (peer / "test_cases.py").write_text(_pytest_file(cases + hidden_cases))
    return Row(label, repo, peer, hanging)


def _pytest_file(cases: list[dict[str, Any]]) -> str:
    """The cases as one parametrized plain pytest test."""
    rows = [(case["function"], case["args"], case["expect"]) for case in cases]
    return (
        "import importlib\n\nimport pytest\n\n"
        f"CASES = {json.dumps(rows)}\n\n\n"
        '@pytest.mark.parametrize(("target", "args", "expect"), CASES)\n'
        "def test_case(target, args, expect):\n"
        '    module, _, name = target.partition(":")\n'
        "    assert getattr(importlib.import_module(module), name)(*args) == expect\n"
    )


def _timed(command: Sequence[str], env: dict[str, str], cwd: Path, accept: Callable[[int], bool]
           ) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `command`: its CPU and that of every process it waited for, the gate's
    zygotes and through them its runs (less noisy than the wall time on a shared machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not accept(done.returncode):
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr.decode(errors='replace')}")
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _gate_env(source: Path | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def time_gate(row: Row, source: Path | None, out: Path) -> tuple[tuple[float, float], dict[str, Any]]:
    """Wall and CPU seconds of one `gate check`, and the verdict's shape (what two gates must agree on)."""
    command = [sys.executable, *_RUN_GATE, "check", "--repo", str(row.repo), "--base", "base",
               "--head", "head", "--json", str(out)]
    seconds = _timed(command, _gate_env(source), out.parent, lambda code: code in (0, 1))
    verdict = json.loads(out.read_text())
    shape = {"accepted": verdict["accepted"], "total": verdict["total"],
             "cases": [(c["index"], c["hidden"], c["status"]) for c in verdict["cases"]]}
    return seconds, {**shape, "isolation": verdict["isolation"],
                     "penalties": [penalty["message"][:200] for penalty in verdict["penalties"][:5]]}


def time_pytest(row: Row) -> tuple[float, float]:
    """Wall and CPU seconds of plain pytest on the same cases (pytest-timeout stops the hanging ones, as a user
    would)."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_cases.py"]
    if row.hanging:
        command += ["-p", "pytest_timeout", "--timeout", "5"]
    # (with its bytecode kept, as plain pytest's second run on a machine has it: not PYTHONDONTWRITEBYTECODE)
    env = {**{key: value for key, value in _gate_env(None).items() if key != "PYTHONDONTWRITEBYTECODE"},
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return _timed(command, env, row.peer, lambda code: code == (1 if row.hanging else 0))


def time_version(source: Path | None, where: Path) -> float:
    return _timed([sys.executable, *_RUN_GATE, "--version"], _gate_env(source), where,
                  lambda code: code == 0)[0]


def _verdict(shape: dict[str, Any]) -> dict[str, Any]:
    """What two gates' verdicts must agree on."""
    return {key: value for key, value in shape.items() if key not in ("isolation", "penalties")}


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f}" if values else "      -"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds; the medians are printed (default 5)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another checkout of the gate to time alternately with this one")
    parser.add_argument("--rows", default=",".join(str(n) for n in range(1, len(ROWS) + 1)),
                        help="which rows to run, by number (default: all)")
    args = parser.parse_args(argv)
    chosen = [ROWS[int(n) - 1] for n in args.rows.split(",")]
    gates: dict[str, Path | None] = {"gate": None}
    if args.baseline:
        gates = {"baseline": args.baseline.resolve(), "gate": None}
    with tempfile.TemporaryDirectory(prefix="gate-bench-") as folder:
        root = Path(folder)
        rows = [build_row(root / f"row{n}", *spec) for n, spec in enumerate(chosen)]
        times: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        shapes: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for _ in range(args.runs):
            for row in rows:
                for name, source in gates.items():
                    (seconds, used), shape = time_gate(row, source, root / "verdict.json")
                    times.setdefault((row.label, name), []).append(seconds)
                    cpu.setdefault((row.label, name), []).append(used)
                    shapes.setdefault((row.label, name), []).append(shape)
                seconds, used = time_pytest(row)
                times.setdefault((row.label, "pytest"), []).append(seconds)
                cpu.setdefault((row.label, "pytest"), []).append(used)
            for name, source in gates.items():
                times.setdefault(("version", name), []).append(time_version(source, root))
        _print(rows, gates, times, shapes, args.runs)
        _print_cpu(rows, gates, cpu)
    return 0


def _print(rows: list[Row], gates: dict[str, Path | None], times: dict[tuple[str, str], list[float]],
           shapes: dict[tuple[str, str], list[dict[str, Any]]], runs: int) -> None:
    first = shapes[(rows[0].label, "gate")][0]
    print(f"seconds, median of {runs} rounds; gate = `gate check --json` as {'root' if os.geteuid() == 0 else 'a user'}"
          f", layers: {', '.join(name for name, how in first['isolation'].items() if not how.startswith('off'))}")
    heads = [*gates, "pytest", "gate/pytest"]
    print(f"{'PR':36}" + "".join(f"{head:>13}" for head in heads))
    for row in rows:
        cells = [_median(times[(row.label, name)]) for name in (*gates, "pytest")]
        ratio = statistics.median(times[(row.label, "gate")]) / statistics.median(times[(row.label, "pytest")])
        verdict = shapes[(row.label, "gate")][0]
        every = [(name, shape) for name in gates for shape in shapes[(row.label, name)]]
        agree = all(_verdict(shape) == _verdict(verdict) for _, shape in every)
        note = f"  total {verdict['total']}" + ("" if agree else "  VERDICTS DIFFER")
        print(f"{row.label:36}" + "".join(f"{cell:>13}" for cell in cells) + f"{ratio:12.1f}x" + note)
        for name, shape in every if not agree else ():
            print(f"  {name}: total {shape['total']}: " + "; ".join(shape["penalties"]))
    print(f"{'gate --version':36}" + "".join(f"{_median(times[('version', name)]):>13}" for name in gates))


def _print_cpu(rows: list[Row], gates: dict[str, Path | None], cpu: dict[tuple[str, str], list[float]]) -> None:
    print("CPU seconds, median (each command's and the processes' it waited for)")
    for row in rows:
        cells = [_median(cpu[(row.label, name)]) for name in (*gates, "pytest")]
        ratio = statistics.median(cpu[(row.label, "gate")]) / statistics.median(cpu[(row.label, "pytest")])
        print(f"{row.label:36}" + "".join(f"{cell:>13}" for cell in cells) + f"{ratio:12.1f}x")


if __name__ == "__main__":
    raise SystemExit(main())
