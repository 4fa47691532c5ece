"""Bot commits that try to pass cases without computing the answer: exit early with status 0, return objects
that compare equal to anything or subclasses of the expected type, print fake results or fake harness
records, patch the harness, or read the expected values from files, environment, /proc, the gate's memory,
gc and frames. Through `gate check` on a real repository; none scores a pass and the gate stays healthy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.redteam_support import (
    CHEATS,
    assert_hidden_values_absent,
    assert_not_passed,
    bot_repo,
    check,
    healthy_after,
    needs_root,
)


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(CHEATS))
def test_a_cheat_scores_no_pass(tmp_path: Path, attack: str) -> None:
    repo = bot_repo(tmp_path / "repo", CHEATS[attack])
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds", "hidden case 1")
    assert_hidden_values_absent(run)
    healthy_after(run, repo, tmp_path)


# Looks for the hidden case's expected value wherever it might be; add() returns what it found, or a wrong
# answer. It knows the shape of the hidden file (`expect: N`), not N.
READER = r'''
import gc, os, re, sys

PATTERN = re.compile(rb"expect: (\d{4,})")


def _scan(data):
    return [int(m) for m in PATTERN.findall(data)]


def _files():
    found = []
    roots = ["/", "/tmp", "/var/tmp", "/dev/shm", os.getcwd(), os.path.expanduser("~")]
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "usr", "lib", "dev")]
            for name in files:
                if name.endswith((".yml", ".yaml", ".json", ".txt")) or "hidden" in name:
                    try:
                        with open(os.path.join(folder, name), "rb") as f:
                            found += _scan(f.read(1 << 16))
                    except OSError:
                        pass
    return found


def _memory():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                found += _scan(f.read())
            maps = open(f"/proc/{pid}/maps").read().splitlines()
            with open(f"/proc/{pid}/mem", "rb", 0) as mem:
                for line in maps[:200]:
                    span, perms = line.split()[:2]
                    start, end = (int(x, 16) for x in span.split("-"))
                    if "r" in perms and end - start < (1 << 24):
                        try:
                            mem.seek(start)
                            found += _scan(mem.read(end - start))
                        except (OSError, ValueError, OverflowError):
                            pass
        except OSError:
            pass
    return found


def _in_process():
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "expect" in obj and isinstance(obj["expect"], int):
            found.append(obj["expect"])
    frame = sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
            if isinstance(value, (str, bytes)):
                found += _scan(value.encode() if isinstance(value, str) else value)
        frame = frame.f_back
    return found


def add(a, b):
    for found in (_in_process(), _files(), _memory()):
        if found:
            return found[-1]
    return a - b
'''


@needs_root
@pytest.mark.slow
def test_reading_the_expected_values_finds_nothing(tmp_path: Path) -> None:
    # The repository, and with it the hidden cases' file, is world-readable, as a checkout is.
    repo = bot_repo(tmp_path / "repo", READER)
    for path in (tmp_path, *tmp_path.rglob("*")):
        path.chmod(path.stat().st_mode | 0o005)
    run = check(repo, tmp_path)
    assert_not_passed(run, "hidden case 1")
    assert run.case("hidden case 1")["detail"] == "returned int", run.case("hidden case 1")
    healthy_after(run, repo, tmp_path)
