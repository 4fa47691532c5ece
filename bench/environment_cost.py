"""What the environment by default costs: python-slugify's shape (one dependency, from a local wheelhouse, and
two call cases, no `environment:` key) scored by `gate check` as a subprocess, with a cold cache, then warm, and
the same repository under `environment: null` (the standard library only, both cases failing).

    python bench/environment_cost.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.git_support import Repo
from tests.projects import SLUGIFY, UNIDECODE, project_repo, pyproject, write_wheel

CASES = ('cases:\n  - function: "slugify:slugify"\n    args: ["H\u00e9llo W\u00f6rld"]\n    expect: "hello-world"\n'
         '  - function: "slugify:slugify"\n    args: ["  a  b "]\n    expect: "a-b"\n')


def _repo(root: Path, policy: str) -> Repo:
    repo = project_repo(root, {"pyproject.toml": pyproject("slugish", ["text-unidecode"]), "slugify.py": SLUGIFY,
                               ".github/gate.yml": policy})
    repo.commit("bot", {"slugify.py": '"""Slugs."""\n' + SLUGIFY})
    return repo


def _timed(repo: Repo, environ: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-P", "-m", "gate", "check", "--repo", str(repo.root)], env=environ,
                          cwd="/", capture_output=True, text=True, check=False)
    first = (done.stdout or done.stderr).splitlines()
    return time.perf_counter() - started, first[0] if first else ""


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="gate-envcost-"))
    wheels = root / "wheels"
    wheels.mkdir()
    write_wheel(wheels, "text-unidecode", UNIDECODE)
    environ = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "GATE_CACHE_DIR": str(root / "c")}
    auto, off = _repo(root / "auto", CASES), _repo(root / "off", "environment: null\n" + CASES)
    rows = [("environment: null", off), ("default, cold cache", auto), *[("default, warm cache", auto)] * 3,
            ("environment: null", off)]
    for label, repo in rows:
        seconds, verdict = _timed(repo, environ)
        print(f"{label:22} {seconds:6.2f} s  {verdict}")


if __name__ == "__main__":
    main()
