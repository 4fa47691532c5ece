"""How long the Action takes to install the gate: its install step (uv from PyPI into a root-owned venv) against
the previous way (a venv and pip), both from PyPI with cold caches and the same interpreter.

    sudo python bench/action_install.py [--python /usr/bin/python3] [--runs 3]

Runs as root, as the Action's privileged step does. The install step is action.yml's own script, run with
bash from `/` (its home moved to a temporary directory); pip and uv read no configuration file, so both
fetch from PyPI itself. Prints the median wall time of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def install_step() -> str:
    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    script: str = next(s for s in steps if s.get("id") == "install")["run"]
    return script


def env_for(work: Path, python: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work / "home"), "RUNNER_OS": "Linux",
            "GITHUB_OUTPUT": str(work / "output"), "GATE_PYTHON": python, "GATE_SOURCE": str(ROOT),
            "GATE_UV": _uv_pin(), "PIP_CONFIG_FILE": os.devnull,
            "XDG_CACHE_HOME": str(work / "cache"),
            **{k: v for k, v in os.environ.items() if k.startswith("SSL_CERT_")}}  # a machine's own CA


def _uv_pin() -> str:
    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    pin: str = next(s for s in steps if s.get("id") == "install")["env"]["GATE_UV"]
    return pin


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
    results: dict[str, list[float]] = {"venv + pip (before)": [], "action.yml install step (uv)": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "output").touch()
            env = env_for(work, args.python)
            venv = work / "pip-venv"
            results["venv + pip (before)"].append(timed(
                ["bash", "-c", f'"$GATE_PYTHON" -m venv {venv} && {venv}/bin/python -m pip install --quiet '
                               '--disable-pip-version-check --no-cache-dir "$GATE_SOURCE[seccomp]"'], env))
            script = install_step().replace("/opt/gate", str(work / "opt-gate"))
            results["action.yml install step (uv)"].append(timed(["bash", "-eo", "pipefail", "-c", script], env))
    for name, times in results.items():
        print(f"{name:32} median {statistics.median(times):6.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
