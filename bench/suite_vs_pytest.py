"""The gate on a real project's test suite against plain pytest on the same suite, side by side in one run.

    sudo .venv/bin/python bench/suite_vs_pytest.py [--sdist more_itertools-10.5.0.tar.gz] [--rounds 5]

The project is more-itertools 10.5.0 (MIT; its sdist ships its tests; pip downloads it unless `--sdist`
names a copy), committed as the base of a git repository with a policy running its suite
(`tests: {paths: [tests]}`), and a bot's change on top (a docstring). One warm-up scoring builds the
environment and caches the baseline; then each round times `gate check` of the range (the whole pipeline:
export, static checks, sandbox, the suite over `tests.workers` sandboxed processes) and plain
`python -m pytest -q -p no:cacheprovider tests` on the head's export with the same interpreter and the same
packages, unsandboxed, one process. The best round of each is compared: the least disturbed on a shared
machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import git

from gate.engine import score
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits

PROJECT = "more-itertools==10.5.0"
POLICY = "budget: 0\nenvironment: {}\ntests:\n  paths: [tests]\n  workers: {workers}\n"


def sdist(given: str | None, folder: Path) -> Path:
    """The project's sdist: the one given, or pip's download of it."""
    if given:
        return Path(given)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    "-d", str(folder), PROJECT], check=True)
    return next(folder.glob("more*itertools-*.tar.gz"))


def repository(archive: Path, root: Path, workers: int) -> git.Repo:
    """A repository whose base is the sdist plus the policy, and whose `bot` branch documents a function."""
    with tarfile.open(archive) as tar:
        tar.extractall(root / "unpacked", filter="data")
    source = next((root / "unpacked").iterdir())
    shutil.copytree(source, root / "repo")
    repo = git.Repo.init(root / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "bench").set_value("user", "email", "bench@example.com")
    (root / "repo" / ".github").mkdir(exist_ok=True)
    (root / "repo" / ".github" / "gate.yml").write_text(POLICY.replace("{workers}", str(workers)))
    repo.git.add("-A")
    repo.index.commit("base: more-itertools")
    repo.git.checkout("-q", "-b", "bot")
    more = root / "repo" / "more_itertools" / "more.py"
    more.write_text(more.read_text().replace('"""Return the first *n* items', '"""Return (the) first *n* items', 1))
    repo.git.add("-A")
    repo.index.commit("bot: a docstring")
    return repo


def gate_once(repo: git.Repo) -> tuple[float, int, bool, tuple[str, ...]]:
    """(seconds, tests, accepted, the packages' import roots) of one scoring of main..bot."""
    started = time.perf_counter()
    handle = gitcli.Repo(repo.working_dir)
    with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha) as found:
        verdict = score(found)
        seconds = time.perf_counter() - started
        paths = found.subject.environment.site_packages if found.subject.environment else ()
        runner = found.subject.suite.runner if found.subject.suite else ()
    return seconds, sum(1 for c in verdict.cases if c.kind == "pytest"), verdict.accepted, (*paths, *runner)


def pytest_once(repo: git.Repo, interpreter: str, packages: tuple[str, ...]) -> float:
    """Seconds of plain pytest on the head's export, with the gate's interpreter's packages."""
    with tempfile.TemporaryDirectory() as folder:
        repo.git.archive("bot", "-o", f"{folder}/head.tar")
        with tarfile.open(f"{folder}/head.tar") as tar:
            tar.extractall(f"{folder}/head", filter="data")
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join((f"{folder}/head", *packages)),
               "PYTHONDONTWRITEBYTECODE": "1"}
        started = time.perf_counter()
        done = subprocess.run([interpreter, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                              cwd=f"{folder}/head", env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit("plain pytest failed:\n" + done.stdout[-2000:] + done.stderr[-2000:])
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", help="a local more-itertools 10.5.0 sdist (default: pip downloads it)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        os.environ.setdefault("GATE_CACHE_DIR", str(root / "cache"))
        repo = repository(sdist(args.sdist, root), root, args.workers)
        from gate.sandbox.detect import run_interpreter

        interpreter = run_interpreter()
        warm, tests, accepted, packages = gate_once(repo)
        print(f"{PROJECT}: {tests} tests; warm-up (environment built, baseline run) {warm:.2f} s; "
              f"accepted={accepted}")
        gate_times, plain_times = [], []
        for _ in range(args.rounds):
            gate_times.append(gate_once(repo)[0])
            plain_times.append(pytest_once(repo, interpreter, packages))
        best_gate, best_plain = min(gate_times), min(plain_times)
        print(f"gate check (baseline cached, {args.workers} workers): best {best_gate:.2f} s, "
              f"median {sorted(gate_times)[len(gate_times) // 2]:.2f} s")
        print(f"plain pytest (one process, no sandbox):  best {best_plain:.2f} s, "
              f"median {sorted(plain_times)[len(plain_times) // 2]:.2f} s")
        print(f"gate / plain pytest: {best_gate / best_plain:.2f}x")


if __name__ == "__main__":
    main()
