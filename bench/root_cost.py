"""What the allow-listed root's system data (docs/sandbox.md, "System data") costs a run, side by side with the
root without it (the paths docs/sandbox.md lists under "System data" left out), and what the run's user and
interpreter (gate/sandbox/account.py, interpreter.py, startup.py) add to a run's set-up.

    sudo .venv/bin/python bench/root_cost.py [--runs 300] [--rounds 3]

Two rows a round, in CPU milliseconds per run (user plus system, of the processes that do the work): a fresh
interpreter's run builds its root itself (a new mount namespace, the binds, pivot_root), and a zygote's run
copies the template namespace the zygote built once and mounts its own /tmp. Then the run's user and
interpreter: the files a run with a mount namespace writes (its passwd and group, HOME, the interpreter's `bin`
with the environment's console scripts, its start-up files), the whole environment a run without one makes,
and what reading the environment's `.pth` files costs a run's process (the gate's own environment's). It
reaches into gate/sandbox/namespaces.py, account.py and interpreter.py, which no user does: a measurement
only. Root only.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gate.sandbox import _libc, account, detect, interpreter, namespaces, startup

DOCS = Path(__file__).resolve().parents[1] / "docs" / "sandbox.md"
SITE = "/cache/envs/a1b2/lib/python3.11/site-packages"
SCRIPTS = 20  # console scripts in the environment (a dev environment: pytest, ruff, mypy, sphinx, ...)


def system_data() -> list[str]:
    """The paths docs/sandbox.md lists under "System data"."""
    text = DOCS.read_text()
    rows = [line for line in text[text.index("**System data.**"):].splitlines()[:40] if line.startswith("| `")]
    return [path for row in rows for path in re.findall(r"`(/[^`]+)`", row.split("|")[1])]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build_ms(root: Sequence[str], staging: str, runs: int) -> float:
    """CPU per fork + a root built from `root` + exit (the fresh interpreter's path)."""
    before = _children_cpu()
    for _ in range(runs):
        pid = os.fork()
        if pid == 0:
            namespaces.unshare(["mountns"])
            namespaces.enter_root(root, staging, ())
            os._exit(0)
        os.waitpid(pid, 0)
    return (_children_cpu() - before) / runs * 1000


def copy_ms(root: Sequence[str], staging: str, runs: int) -> float:
    """CPU per fork + a copy of a template holding `root` + a /tmp of its own + exit (the zygote's path)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        namespaces.enter_template(root, staging, ())
        before = _children_cpu()
        for _ in range(runs):
            run = os.fork()
            if run == 0:
                namespaces.unshare(["mountns"])
                _libc.mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m")
                os._exit(0)
            os.waitpid(run, 0)
        os.write(write, str((_children_cpu() - before) / runs * 1000).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as said:
        spent = float(said.read())
    os.waitpid(pid, 0)
    return spent


def setup_ms(staging: str, runs: int, whole: bool) -> float:
    """CPU per run's user and interpreter set-up, as a suite's run has them (the tree's `src`, a layer, an
    environment with SCRIPTS console scripts, the gate's pytest on its path), in `staging` (a tmpfs, as a run's
    /tmp and the sandbox's run directories are): with a mount namespace, its passwd and group files, HOME, and
    the `bin` and start-up files of its interpreter; without one (`whole`), HOME and the whole interpreter."""
    python_path = ("src", "/cache/layers/head", SITE, "/cache/pytest")
    scripts = {f"tool{index}": f"tool{index}.cli:main" for index in range(SCRIPTS)}
    owner = (os.getuid(), os.getgid())
    started = resource.getrusage(resource.RUSAGE_SELF)
    for index in range(runs):
        place = f"{staging}/{index}"
        os.mkdir(place)
        if whole:
            interpreter.make_home(f"{place}/venv", linked=False)
            interpreter.fill(f"{place}/venv", python_path, (SITE,), scripts, "/tmp/work")
        else:
            account.DATABASES = f"{place}/etc"  # (its /tmp's, in a run)
            account.write_databases(995, 995)
            interpreter.fill(interpreter.HOME, python_path, (SITE,), scripts, "/tmp/work",
                             into=(f"{place}/bin", f"{place}/site"))
        account.make_home(f"{place}/home", owner)
    ended = resource.getrusage(resource.RUSAGE_SELF)
    spent = ended.ru_utime + ended.ru_stime - started.ru_utime - started.ru_stime
    shutil.rmtree(staging)
    os.mkdir(staging)
    return spent / runs * 1000


def site_ms(site: str, runs: int) -> float:
    """CPU a run's process spends on the environment's `.pth` files (gate/sandbox/startup.py), with `site` as
    the environment: a forked process that reads them, less one that does not."""
    library = interpreter.library()

    def forks(read: bool) -> float:
        before = _children_cpu()
        for _ in range(runs):
            pid = os.fork()
            if pid == 0:
                if read:
                    startup.run_path(["/tmp/work"], library, [site], [site])
                os._exit(0)
            os.waitpid(pid, 0)
        return (_children_cpu() - before) / runs * 1000

    saved = list(sys.path)
    try:
        return forks(True) - forks(False)
    finally:
        sys.path[:] = saved


def main() -> None:
    """Print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = detect.layers(prefer_zygote=True).root
    listed = tuple(system_data())
    bare = tuple(path for path in root if not path.startswith(listed))
    staging = tempfile.mkdtemp()
    print(f"CPU ms per run, {args.runs} runs; the root: {len(bare)} paths, with the system data {len(root)}")
    print(f"{'':28s}{'without':>10s}{'with':>10s}")
    for _ in range(args.rounds):
        for name, measure in (("fresh: build the root", build_ms), ("zygote: copy the template", copy_ms)):
            print(f"{name:28s}{measure(bare, staging, args.runs):10.3f}{measure(root, staging, args.runs):10.3f}")
    os.rmdir(staging)
    staging = tempfile.mkdtemp(dir="/dev/shm")
    here = sysconfig.get_paths()["purelib"]
    pth = len([name for name in os.listdir(here) if name.endswith(".pth")])
    for _ in range(args.rounds):
        print(f"the run's user and interpreter ({SCRIPTS} scripts): {setup_ms(staging, args.runs, False):.3f} a run "
              f"with a mount namespace, {setup_ms(staging, args.runs, True):.3f} without one; the environment's "
              f".pth files (the gate's own, {pth}): {site_ms(here, args.runs):.3f}")
    os.rmdir(staging)


if __name__ == "__main__":
    main()
