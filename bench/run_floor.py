"""The CPU floor of one sandboxed process: what a HumanEval sample costs at the least, since each sample's
candidate runs in a fresh process (the tests' process is a reused server; gate/sandbox/served.py).

    .venv/bin/python bench/run_floor.py [--runs 300]

Rows, in CPU milliseconds per run (the gate's process plus the sandbox's, user and system): a bare
`os.fork()` + `os._exit(0)` + `waitpid` from an interpreter holding what the zygote holds (the kernel's part
of any fresh process here), then a whole `Sandbox.run` of an empty program with no layers and with every
layer. It reaches into the sandbox's modules to switch layers off, which no user can do: a measurement only.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import resource
from typing import Any

import msgspec

from gate.sandbox import detect, registry, zygote_server
from gate.sandbox.base import RunRequest
from gate.sandbox.runner import LayeredSandbox

EMPTY = RunRequest(script="main.py", files={"main.py": b""})


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def bare_fork_ms(runs: int) -> float:
    """CPU per fork + exit + wait of an interpreter that imported the zygote's modules."""
    for name in zygote_server.WARM_MODULES:
        importlib.import_module(name)
    gc.freeze()
    before = _cpu()
    for _ in range(runs):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    after = _cpu()
    return (sum(after) - sum(before)) / runs * 1000


def run_ms(runs: int, off: dict[str, Any]) -> tuple[float, float]:
    """(gate, sandbox) CPU per Sandbox.run of an empty program, with the layers in `off` replaced."""
    layers = msgspec.structs.replace(detect.layers(True), **off)
    sandbox = LayeredSandbox(registry.BACKENDS["zygote"](layers), layers)
    sandbox.run(EMPTY)  # starts the zygote
    before = _cpu()
    for _ in range(runs):
        sandbox.run(EMPTY)
    own_after, _ = _cpu()
    sandbox.close()  # the zygote exits: its runs' CPU is counted in RUSAGE_CHILDREN from here on
    _, children_after = _cpu()
    return (own_after - before[0]) / runs * 1000, (children_after - before[1]) / runs * 1000


def main() -> None:
    """Print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    print(f"CPU ms per run, {args.runs} runs, one at a time")
    print(f"{'bare fork + exit + wait (kernel)':40s} {bare_fork_ms(args.runs):6.2f}")
    none: dict[str, Any] = {"cgroups": None, "on": (), "hide": (), "uids": None}
    every: dict[str, Any] = {}
    for name, off in (("Sandbox.run, no layers", none), ("Sandbox.run, every layer", every)):
        gate, sandbox = run_ms(args.runs, off)
        print(f"{name:40s} {gate + sandbox:6.2f}  (gate {gate:.2f}, sandbox {sandbox:.2f})")


if __name__ == "__main__":
    main()
