"""Per-run cost of the sandbox: the zygote path against the fresh-interpreter path, adding one layer at a
time.

    .venv/bin/python bench/sandbox_cost.py [--runs 50] [--tree-files 200]

Each run is a whole `Sandbox.run` of a one-line program (stage, start, supervise, clean up), timed from the
caller's side. Layers that are not available here are shown as "n/a". The last lines are the same program
with a head tree of `--tree-files` files (what a range's cases run in), every layer on.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec

from gate.sandbox import detect, open_sandbox, registry
from gate.sandbox.base import PEER_FD_ENV, Limits, RunRequest
from gate.sandbox.runner import LayeredSandbox, Layers
from tests.sandbox_support import SERVE

PROGRAM = RunRequest(script="main.py", files={"main.py": b"print('ok')\n"})
CALLS = 164  # as many as HumanEval has problems
# A served lead (as the dataset kinds' harness is) that asks each call's fresh peer to double 21.
LEAD = RunRequest(script="lead.py", files={"lead.py": (SERVE + (
    "def answer(channel):\n"
    "    channel.sendall(b'21\\n')\n    return channel.makefile('rb').readline().strip()\n"
    "serve(answer)\n")).encode()})
PEER = RunRequest(script="peer.py", files={"peer.py": (
    f"import os, socket\nchannel = socket.socket(fileno=int(os.environ[{PEER_FD_ENV!r}]))\n"
    "n = int(channel.makefile().readline())\nchannel.sendall(f'{n * 2}\\n'.encode())\n").encode()})


def _without(full: Layers, *names: str) -> tuple[str, ...]:
    """The probed layers `full` uses, less `names`."""
    return tuple(name for name in full.on if name not in names)


# Each step adds one layer to the one before; all start from the layers detected here.
STEPS: list[tuple[str, Callable[[Layers], Layers]]] = [
    ("setsid, rlimits, pipes", lambda full: msgspec.structs.replace(
        full, uids=None, on=_without(full, "netns", "mountns", "seccomp"), cgroups=None)),
    ("+ uid + no-new-privs", lambda full: msgspec.structs.replace(
        full, on=_without(full, "netns", "mountns", "seccomp"), cgroups=None)),
    ("+ netns", lambda full: msgspec.structs.replace(full, on=_without(full, "mountns", "seccomp"), cgroups=None)),
    ("+ mountns (tmpfs)", lambda full: msgspec.structs.replace(full, on=_without(full, "seccomp"), cgroups=None)),
    ("+ seccomp", lambda full: msgspec.structs.replace(full, cgroups=None)),
    ("+ cgroup (all layers)", lambda full: full),
]


def _available(step: Layers, full: Layers) -> bool:
    """A step is measurable when every layer it turns on was detected."""
    managers = all(getattr(step, name) is None or getattr(full, name) is not None
                   for name in ("uids", "cgroups"))
    return managers and set(step.on) <= set(full.on)


def per_run_ms(backend: str, make: Callable[[Layers], Layers], runs: int) -> tuple[float, float] | None:
    """(fastest, median) milliseconds per run over `runs` runs, after one warm-up run that starts the backend,
    or None when a layer of the step is not available here. The fastest run is the cost of the path itself;
    the median also carries whatever else the machine is doing."""
    full = detect.layers(prefer_zygote=True)
    layers = make(full)
    if full.cgroups and layers.cgroups is None:
        full.cgroups.close()
    sandbox = LayeredSandbox(registry.BACKENDS[backend](layers), layers)
    if not _available(layers, full):
        sandbox.close()
        return None
    try:
        sandbox.run(PROGRAM)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            result = sandbox.run(PROGRAM)
            times.append(time.perf_counter() - start)
            if result.stdout != b"ok\n":
                raise SystemExit(f"{backend}: the program did not run: {result}")
        return min(times) * 1000, statistics.median(times) * 1000
    finally:
        sandbox.close()


def tree_run_ms(backend: str, files: int, runs: int) -> tuple[float, float]:
    """(fastest, median) ms per run of PROGRAM with a tree of `files` small files (a package of modules,
    ten to a directory), every layer detected here on."""
    with tempfile.TemporaryDirectory(prefix="gate-bench-tree-") as tmp:
        tree = Path(tmp)
        for index in range(files):
            folder = tree / "pkg" / f"sub{index // 10}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"mod{index}.py").write_text(f"VALUE = {index}\n" * 20)
        layers = detect.layers(prefer_zygote=backend == "zygote")
        sandbox = LayeredSandbox(registry.BACKENDS[backend](layers), layers)
        request = msgspec.structs.replace(PROGRAM, tree=tree)
        try:
            sandbox.run(request)
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                result = sandbox.run(request)
                times.append(time.perf_counter() - start)
                if result.stdout != b"ok\n":
                    raise SystemExit(f"{backend}: the program did not run: {result}")
        finally:
            sandbox.close()
    return min(times) * 1000, statistics.median(times) * 1000


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--tree-files", type=int, default=200)
    parser.add_argument("--tree-only", action="store_true", help="only the runs with a tree")
    args = parser.parse_args()
    if args.tree_only:
        _print_tree(args.tree_files, args.runs)
        return
    print(f"{args.runs} runs per cell, one-line program, whole Sandbox.run; ms per run, fastest / median")
    print(f"{'layers':<26} {'zygote':>13} {'fresh':>15} {'fresh/zygote':>13}")
    for name, make in STEPS:
        zygote = per_run_ms("zygote", make, args.runs)
        fresh = per_run_ms("fresh-interpreter", make, args.runs)
        if zygote is None or fresh is None:
            print(f"{name:<26} {'n/a':>13} {'n/a':>15}")
        else:
            print(f"{name:<26} {zygote[0]:>6.2f} /{zygote[1]:>6.2f} {fresh[0]:>7.2f} /{fresh[1]:>6.2f}"
                  f" {fresh[0] / zygote[0]:>12.1f}x")
    print(f"run_served, every layer, {CALLS} calls, each a fresh peer exchanging one message with a served lead: "
          + ", ".join(f"{calls_per_s(threads):.0f} calls/s with {threads} thread{'s' if threads > 1 else ''}"
                      for threads in (1, 2, 4)))
    _print_tree(args.tree_files, args.runs)


def _print_tree(files: int, runs: int) -> None:
    for backend in ("zygote", "fresh-interpreter"):
        fastest, median = tree_run_ms(backend, files, runs)
        print(f"with a {files}-file tree, every layer, {backend}: {fastest:.2f} / {median:.2f} ms per run")


def calls_per_s(threads: int) -> float:
    """Throughput of served calls (what the humaneval and mbpp kinds do for each sample: the tests in a
    reused server, the candidate in a fresh process)."""
    sandbox = open_sandbox(Limits())
    try:
        sandbox.run_served(LEAD, b"", PEER)
        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            done = list(pool.map(lambda _: sandbox.run_served(LEAD, b"", PEER), range(CALLS)))
        seconds = time.perf_counter() - start
    finally:
        sandbox.close()
    if any(lead.result != b"42" for lead, _ in done):
        raise SystemExit("a call did not talk")
    return CALLS / seconds

if __name__ == "__main__":
    main()
