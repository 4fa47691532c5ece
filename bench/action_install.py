"""How long the Action takes to install the gate: its install step cold (nothing installed yet, as on a fresh
hosted runner: uv and every wheel from PyPI, hash-checked against action/*.txt), the same step cold with
PyPI's wheels already on the machine (the step's own work without the downloads: what a fast network nears),
the same step warm (the installation of an earlier run on the same machine, with the same source, lock files
and interpreter, is reused), and the previous way (a venv and pip, from PyPI without a cache), with the same
interpreter.

    sudo .venv/bin/python bench/action_install.py [--python /usr/bin/python3] [--runs 3]

Runs as root, as the Action's privileged step does. The install step is action.yml's own script, run with
bash from `/` (its home moved to a temporary directory) on a copy of this checkout as the Action's source
(what a runner downloads: no .git, no .venv); pip reads no configuration file, so both fetch from PyPI itself.
Prints the median wall time of each, side by side.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OLD, COLD, LOCAL, WARM = ("venv + pip (before)", "install step, cold", "install step, cold, wheels on the machine",
                          "install step, warm (reused)")


def install_step() -> str:
    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    script: str = next(s for s in steps if s.get("id") == "install")["run"]
    return script


def env_for(work: Path, python: str, source: Path) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work / "home"), "RUNNER_OS": "Linux",
            "GITHUB_OUTPUT": str(work / "output"), "GATE_PYTHON": python, "GATE_SOURCE": str(source),
            "PIP_CONFIG_FILE": os.devnull, "XDG_CACHE_HOME": str(work / "cache"),
            # A machine's own CA.
            **{k: v for k, v in os.environ.items() if k.startswith("SSL_CERT_") or k == "PIP_CERT"}}


def download(python: str, into: Path, env: dict[str, str]) -> dict[str, str]:
    """PyPI's wheels of action/*.txt in `into` (pip checks their hashes), and the variables that point pip and
    uv at them instead of an index."""
    locks = [arg for name in ("uv.txt", "build.txt", "requirements.txt") for arg in ("-r", str(ROOT / "action" / name))]
    subprocess.run([python, "-I", "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-cache-dir",
                    "--require-hashes", "--no-deps", "--only-binary", ":all:", "--dest", str(into), *locks],
                   env=env, cwd="/", check=True)
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(into), "UV_NO_INDEX": "1", "UV_FIND_LINKS": str(into)}


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd="/", check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run as root, as the Action's install step does")
    results: dict[str, list[float]] = {OLD: [], COLD: [], LOCAL: [], WARM: []}
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "action"
        shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "*.egg-info", "__pycache__", ".*_cache", "build"))
        (Path(tmp) / "output").touch()
        local = download(args.python, Path(tmp) / "wheels", env_for(Path(tmp), args.python, source))
        for run in range(args.runs):
            work = Path(tmp) / f"run-{run}"
            work.mkdir()
            (work / "output").touch()
            env = env_for(work, args.python, source)
            venv = work / "pip-venv"
            results[OLD].append(timed(
                ["bash", "-c", f'"$GATE_PYTHON" -m venv {venv} && {venv}/bin/python -m pip install --quiet '
                               '--disable-pip-version-check --no-cache-dir "$GATE_SOURCE"'], env))
            script = install_step().replace("/opt/gate", str(work / "opt-gate"))
            for name in (COLD, WARM):
                results[name].append(timed(["bash", "-eo", "pipefail", "-c", script], env))
            script = install_step().replace("/opt/gate", str(work / "opt-gate-local"))
            results[LOCAL].append(timed(["bash", "-eo", "pipefail", "-c", script], env | local))
    width = max(map(len, results))
    for name, times in results.items():
        print(f"{name:{width}}  median {statistics.median(times):6.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
