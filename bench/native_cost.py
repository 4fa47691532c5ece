"""What building a project's compiled extensions in the sandbox costs (docs/repository.md, "Compiled extensions"),
side by side with the build a CI job runs on the runner itself.

    sudo .venv/bin/python bench/native_cost.py PROJECT [--rounds 3] [--runs 200]

PROJECT is an unpacked source tree with extensions (an sdist: `pip download --no-deps --no-binary :all:
simplejson==3.19.3`). Three parts:
- the compiler found (gate/sandbox/toolchain.py): once cold (the gate's memory of it cleared), once
  remembered, in wall seconds;
- the build, in wall seconds, rounds alternating: the CI job's (`pip wheel --no-deps --no-build-isolation .`
  with the run interpreter, in a virtual environment holding setuptools, on the host) and the gate's (the
  same environment bound read-only, the tree's PEP 517 build in the sandbox with the compiler bound into the
  run's root, the wheel unpacked into a layer: gate/environment/project.py `build`);
- what the compiler's paths add to every run's root (they are bound only for a project with extension
  sources), in CPU milliseconds per run, as bench/root_cost.py measures the root.
It reaches into gate/environment/project.py and gate/sandbox/namespaces.py, which no user does: a measurement
only. Root only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gate import memo
from gate.environment import BuildLayer
from gate.environment.project import build
from gate.sandbox import detect, open_sandbox, toolchain
from gate.sandbox.base import Limits

sys.path.insert(0, str(Path(__file__).parent))
from root_cost import build_ms, copy_ms


def venv_with_setuptools(where: Path, interpreter: str) -> Path:
    """A virtual environment of `interpreter` holding setuptools (from the machine's pip configuration)."""
    subprocess.run([interpreter, "-m", "venv", str(where)], check=True)
    subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "-q", "setuptools", "wheel"], check=True)
    return where


def host_build(project: Path, python: Path) -> float:
    """Seconds of the CI job's build of `project` on the host."""
    out = Path(tempfile.mkdtemp())
    work = Path(tempfile.mkdtemp()) / "tree"
    shutil.copytree(project, work)
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    "."], cwd=work, check=True, stdout=subprocess.DEVNULL)
    spent = time.perf_counter() - started
    shutil.rmtree(out)
    shutil.rmtree(work.parent)
    return spent


def sandbox_build(project: Path, sites: tuple[str, ...], found: toolchain.Toolchain, round_: int) -> float:
    """Seconds of the gate's build of `project` in the sandbox, into a fresh layer, the sandbox's start
    included."""
    cache = Path(tempfile.mkdtemp())
    layer = BuildLayer(cache / "layers" / f"round-{round_}", "1.0", toolchain=found)
    layer.path.mkdir(parents=True)
    started = time.perf_counter()
    sandbox = open_sandbox(Limits(), readonly=(*sites, str(layer.path), *found.paths))
    try:
        failed = build(sandbox, lambda: project, layer, sites, Limits(wall_s=600, cpu_s=600))
    finally:
        sandbox.close()
    spent = time.perf_counter() - started
    if failed:
        raise SystemExit(f"the sandbox's build failed: {failed}")
    shutil.rmtree(cache)
    return spent


def main() -> None:
    """Print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    interpreter = detect.run_interpreter()
    state = tempfile.mkdtemp()
    memo.STATE_DIR = state  # (a memory of its own: the first finding is cold)
    started = time.perf_counter()
    found = toolchain.find(interpreter, os.environ.get("PATH", ""))
    cold = time.perf_counter() - started
    started = time.perf_counter()
    toolchain.find(interpreter, os.environ.get("PATH", ""))
    print(f"the compiler: {found.describe()}; found in {cold:.2f} s cold, "
          f"{time.perf_counter() - started:.3f} s remembered; {len(found.paths)} paths")
    venv = venv_with_setuptools(Path(tempfile.mkdtemp()) / "venv", interpreter)
    sites = tuple(str(path) for path in venv.glob("lib/python*/site-packages"))
    print(f"the build of {args.project.name}, wall seconds:")
    print(f"{'round':>6s}{'CI job':>10s}{'gate':>10s}{'gate/CI':>10s}")
    for round_ in range(args.rounds):
        host = host_build(args.project, venv / "bin" / "python")
        gate = sandbox_build(args.project.resolve(), sites, found, round_)
        print(f"{round_ + 1:6d}{host:10.2f}{gate:10.2f}{gate / host:9.2f}x")
    root = detect.layers(prefer_zygote=True).root
    compiler = detect.within_none([*root, *found.paths])
    staging = tempfile.mkdtemp()
    print(f"a run's root, CPU ms per run ({args.runs} runs): {len(root)} paths, {len(compiler)} with the compiler")
    print(f"{'':28s}{'without':>10s}{'with':>10s}")
    for _ in range(args.rounds):
        for name, measure in (("fresh: build the root", build_ms), ("zygote: copy the template", copy_ms)):
            print(f"{name:28s}{measure(root, staging, args.runs):10.3f}{measure(compiler, staging, args.runs):10.3f}")
    os.rmdir(staging)
    shutil.rmtree(venv.parent)
    shutil.rmtree(state)


if __name__ == "__main__":
    main()
