"""Where `gate eval`'s CPU goes, by process and by kind of work, from a system-wide `perf` profile.

    .venv/bin/python bench/eval_profile.py [--repeat N] [--jobs N]

It scores HumanEval's canonical solutions (--repeat samples per task) with `gate eval` under
`perf record -a -g` (Linux perf, as root or with a permissive kernel.perf_event_paranoid), then reads every
sample with `perf script` and prints CPU milliseconds per eval sample:

- by process: "gate" (the gate's own process, all its threads), "zygote" (the gate's long-lived child that
  forks the runs), "tests server" (the runs that live long: the served test harnesses, reused across samples),
  "candidates" (the short-lived runs: one per sample), "gate helpers" (the gate's other children, such as
  the layer probe at start-up, with their children), "idle"
  (the kernel's idle task), "perf" (the recorder itself) and "other" (the rest of the machine: the profile
  is system-wide);
- by kind, within the gate's and the sandbox's processes: "user" (no kernel frame on top), "page faults",
  "exit", "fork", each system call by name, and "other kernel" (interrupts, scheduling, signals).

The process tree comes from perf's own fork and exit records (`--show-task-events`), so no process is told
apart by its name: a child of the gate that forks and lives at least ZYGOTE_LIFE of the gate's life is a
zygote; a run (a zygote's child) whose life lasted at least LONG_LIVED of its zygote's is a tests server, any
other a candidate, and a run's descendants are counted with it. Timings run under perf, which slows the run
down: compare CPU shares between runs, not the samples/s against bench/eval_vs_humaneval.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_vs_humaneval import ROOT, canonical_samples  # a sibling bench script

FREQUENCY = 1999  # Hz: not a multiple of the kernel's tick, so samples do not lock onto timer work
LONG_LIVED = 0.05  # a run living this fraction of its zygote's life is a tests server, not a candidate
ZYGOTE_LIFE = 0.5  # a child of the gate that forks and lives this fraction of the gate's life is a zygote
SANDBOX_CLASSES = ("zygote", "tests server", "candidates")
CLASS_ORDER = ("gate", *SANDBOX_CLASSES, "gate helpers", "perf", "idle", "other")
KIND_COLUMNS = ("gate", *SANDBOX_CLASSES)
TOP_KINDS = 14  # kinds shown in the second table; the rest are summed into one row

_HEADER = re.compile(r"^\s*(?P<comm>\S.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+(?P<time>\d+\.\d+):\s*(?P<rest>.*)$")
_PERIOD = re.compile(r"(\d+)\b")  # a sample's header ends with its period (ns of cpu-clock)
_FORK = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
_EXIT = re.compile(r"PERF_RECORD_EXIT\((\d+):(\d+)\)")
_FRAME = re.compile(r"^\t\s*(?P<ip>[0-9a-f]+)\s+(?P<sym>.*)$")  # frames start with a tab; headers never
_SYSCALL = re.compile(r"^__(?:x64|do|se)_sys_(\w+)$")
_PAGE_FAULT = frozenset({"asm_exc_page_fault", "handle_mm_fault", "do_wp_page"})
_FORK_FRAMES = frozenset({"copy_process", "dup_mmap"})


@dataclass
class Process:
    """One process as perf saw it: its parent, when it started and ended (None: before or after the
    recording), when its first and last samples were taken, and the CPU nanoseconds of its samples by kind."""

    parent: int | None = None
    start: float | None = None
    end: float | None = None
    first_seen: float = float("inf")
    last_seen: float = 0.0
    children: list[int] = field(default_factory=list)
    cpu: Counter[str] = field(default_factory=Counter)


def kind_of(frames: list[tuple[bool, str]]) -> str:
    """The kind of work a sample's stack (innermost frame first; (is_kernel, symbol)) was doing."""
    if not frames:
        return "no stack"
    if not frames[0][0]:
        return "user"
    kernel = [symbol for is_kernel, symbol in frames if is_kernel]
    names = set(kernel)
    if names & _PAGE_FAULT:
        return "page faults"
    # exit_mmap also runs in execve, dropping the old image: that is not an exit.
    if "do_exit" in names or ("exit_mmap" in names and not any("execve" in name for name in kernel)):
        return "exit"
    if names & _FORK_FRAMES:
        return "fork"
    for symbol in reversed(kernel):  # the outermost system call frame, the one entered from user space
        match = _SYSCALL.match(symbol)
        if match:
            return f"sys {match.group(1)}"
    return "other kernel"


def _is_kernel(ip: str) -> bool:
    return len(ip) == 16 and ip.startswith("ffff")


def _samples(lines: Iterable[str], processes: defaultdict[int, Process]) -> Iterator[tuple[int, int, str]]:
    """Yield (pid, period in ns, kind) for each sample of `perf script` output; record forks and exits."""
    current: tuple[int, int] | None = None
    frames: list[tuple[bool, str]] = []
    for line in lines:
        frame = _FRAME.match(line) if current else None
        if frame:
            frames.append((_is_kernel(frame["ip"]), frame["sym"]))
            continue
        if current:
            yield current[0], current[1], kind_of(frames)
            current, frames = None, []
        header = _HEADER.match(line)
        if not header:
            continue
        pid, moment, rest = int(header["pid"]), float(header["time"]), header["rest"]
        if rest.startswith("PERF_RECORD_"):
            _task_event(rest, moment, processes)
        elif period := _PERIOD.match(rest):
            current = (pid, int(period[1]))
            process = processes[pid]
            process.first_seen, process.last_seen = min(process.first_seen, moment), max(process.last_seen, moment)
    if current:
        yield current[0], current[1], kind_of(frames)


def _task_event(event: str, moment: float, processes: defaultdict[int, Process]) -> None:
    """Record a new process (not a thread) and its parent, or a process's end. Time 0 marks the records perf
    synthesizes for processes that existed before the recording."""
    when = moment or None
    fork = _FORK.match(event)
    if fork:
        pid, tid, parent = int(fork[1]), int(fork[2]), int(fork[3])
        if pid == tid and pid != parent:
            processes[pid].parent, processes[pid].start = parent, when
            processes[parent].children.append(pid)
        return
    end = _EXIT.match(event)
    if end and end[1] == end[2]:
        processes[int(end[1])].end = when


def classify(processes: dict[int, Process], perf_pid: int) -> dict[int, str]:
    """Each pid's class (see the module docstring); pids not in the result are "other"."""
    if not processes[perf_pid].children:
        sys.exit("perf recorded no workload process: cannot find the gate's pid")
    gate = processes[perf_pid].children[0]  # perf's only child: the command it runs
    classes = {0: "idle", perf_pid: "perf", gate: "gate"}
    gate_life = _life(processes[gate])
    for child in processes[gate].children:
        # The layer probe at start-up also forks (ldconfig), but lives a moment; a zygote lives the whole run.
        if not processes[child].children or _life(processes[child]) < ZYGOTE_LIFE * gate_life:
            _mark(child, "gate helpers", processes, classes)
            continue
        classes[child] = "zygote"
        zygote_life = _life(processes[child])
        for run in processes[child].children:
            long = _life(processes[run]) >= LONG_LIVED * zygote_life
            _mark(run, "tests server" if long else "candidates", processes, classes)
    return classes


def _life(process: Process) -> float:
    """Seconds from its start (or first sample, if it started before the recording) to its end (or last
    sample)."""
    start = process.start if process.start is not None else process.first_seen
    end = process.end if process.end is not None else process.last_seen
    return max(0.0, end - start)


def _mark(pid: int, name: str, processes: dict[int, Process], classes: dict[int, str]) -> None:
    """Give `pid` and all its descendants the class `name`."""
    pending = [pid]
    while pending:
        current = pending.pop()
        classes[current] = name
        pending.extend(processes[current].children)


def record(data: Path, samples: Path, rows: Path, summary: Path, jobs: int) -> int:
    """Run `gate eval` under a system-wide perf recording; returns perf's pid (the gate is its child)."""
    # cpu-clock (a software event, there even in a VM) so that a sample's period is nanoseconds of CPU.
    argv = ["perf", "record", "-e", "cpu-clock", "-a", "-g", "-F", str(FREQUENCY), "-o", str(data), "--",
            sys.executable, "-m", "gate", "eval", "--dataset", "humaneval", "--samples", str(samples),
            "-k", "1", "--jobs", str(jobs), "--json", str(summary), "--out", str(rows)]
    perf = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CI": "true"}, cwd=ROOT)
    _, errors = perf.communicate()
    if not data.exists() or data.stat().st_size == 0:
        # perf's first line is often a bare "Error:"; the reason follows it.
        lines = [line.strip() for line in errors.splitlines() if line.strip() not in ("", "Error:")]
        print(f"perf record failed (exit {perf.returncode}): {lines[0] if lines else 'no output'}"
              " (run as root or lower kernel.perf_event_paranoid)", file=sys.stderr)
        sys.exit(2)
    if not summary.exists():
        sys.exit(f"gate eval failed under perf (exit {perf.returncode}):\n{errors}")
    return perf.pid


@dataclass
class Profile:
    """CPU nanoseconds by process class, by kind within each class, and the processes of each class."""

    by_kind: dict[str, Counter[str]]
    by_class: Counter[str]
    processes: Counter[str]


def read_profile(data: Path, perf_pid: int) -> Profile:
    """Read the recording with `perf script` and sum its samples by process class and kind."""
    processes: defaultdict[int, Process] = defaultdict(Process)
    script = subprocess.Popen(["perf", "script", "-i", str(data), "--show-task-events",
                               "-F", "comm,pid,tid,time,period,ip,sym"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
    assert script.stdout is not None
    for pid, period, kind in _samples(script.stdout, processes):
        processes[pid].cpu[kind] += period
    if script.wait() != 0:
        sys.exit(f"perf script failed (exit {script.returncode})")
    classes = classify(processes, perf_pid)
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for pid, process in processes.items():
        by_kind[classes.get(pid, "other")].update(process.cpu)
    by_class = Counter({name: sum(kinds.values()) for name, kinds in by_kind.items()})
    members = Counter(classes.get(pid, "other") for pid, process in processes.items()
                      if process.cpu or pid in classes)
    return Profile(by_kind, by_class, members)


def _ms(ns: float, count: int) -> str:
    return f"{ns / 1e6 / count:.2f}"


def print_tables(profile: Profile, count: int) -> None:
    """The two tables: CPU ms per eval sample (and share) by process class, then by kind per class of the gate
    and its sandbox."""
    by_class, by_kind = profile.by_class, profile.by_kind
    total = sum(by_class.values())
    print(f"\nCPU by process ({total / 1e9:.1f} s of CPU recorded on {os.cpu_count()} cores)")
    print(f"{'process':<16}{'ms/sample':>10}{'share':>8}{'processes':>11}")
    for name in CLASS_ORDER:
        if by_class[name]:
            print(f"{name:<16}{_ms(by_class[name], count):>10}{by_class[name] / total:>8.1%}"
                  f"{profile.processes[name]:>11}")
    ours = sum(by_class[name] for name in ("gate", "gate helpers", *SANDBOX_CLASSES))
    print(f"{'gate + sandbox':<16}{_ms(ours, count):>10}{ours / total:>8.1%}")
    columns = [name for name in KIND_COLUMNS if by_class[name]]
    ranked = sum((by_kind[name] for name in columns), Counter[str]()).most_common()
    shown, rest = [kind for kind, _ in ranked[:TOP_KINDS]], [kind for kind, _ in ranked[TOP_KINDS:]]
    print("\nCPU by kind, ms per sample and share of the process class")
    print(f"{'kind':<22}" + "".join(f"{name:>20}" for name in columns))
    rows = [(kind, [by_kind[name][kind] for name in columns]) for kind in shown]
    if rest:
        rows.append((f"rest ({len(rest)} kinds)", [sum(by_kind[name][k] for k in rest) for name in columns]))
    for kind, values in rows:
        cells = [f"{_ms(value, count):>8} {value / by_class[name]:>6.1%}"
                 for value, name in zip(values, columns, strict=True)]
        print(f"{kind:<22}" + "".join(f"{cell:>20}" for cell in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=4, help="samples per HumanEval task (default 4)")
    parser.add_argument("--jobs", type=int, default=2 * (os.cpu_count() or 1),
                        help="gate eval's workers (default: twice the cores, its own default)")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        print("perf is not installed (Debian: apt-get install linux-perf)", file=sys.stderr)
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="gate-profile-") as tmp:
        work = Path(tmp)
        samples, summary = work / "samples.jsonl", work / "summary.json"
        count = canonical_samples(samples, args.repeat)
        perf_pid = record(work / "perf.data", samples, work / "rows.jsonl", summary, args.jobs)
        result = json.loads(summary.read_text(encoding="utf-8"))
        profile = read_profile(work / "perf.data", perf_pid)
    print(f"samples: {count}, jobs: {args.jobs}, cores: {os.cpu_count()}, perf at {FREQUENCY} Hz")
    print(f"gate eval under perf: {result['wall_s']:.2f} s, {count / result['wall_s']:.1f} samples/s, "
          f"pass@1 {result['pass_at_k']['pass@1']['value']}, failures {result['failures']}")
    print_tables(profile, count)


if __name__ == "__main__":
    main()
