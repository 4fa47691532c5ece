"""A commit of a few kilobytes can hold gigabytes of zeros: the gate exports no more of the head's tree than a
run's disk can hold, so such a commit cannot fill the gate's own disk or memory, and the report says what was
left out."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.redteam_support import HONEST, POLICY, assert_not_passed, bot_repo, check, healthy_after

SMALL_DISK = POLICY + "limits: {disk_mb: 1}\n"


@pytest.mark.slow
def test_a_bomb_of_zeros_in_the_bots_commit_is_not_exported(tmp_path: Path) -> None:
    code = "import os\n\ndef add(a, b):\n    return a + b if os.path.exists('zeros.bin') else a - b\n"
    repo = bot_repo(tmp_path / "repo", code, policy=SMALL_DISK)
    # 8 MiB of zeros, streamed into git (a few kilobytes compressed), against a 1 MiB disk.
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=bytes(8 << 20),
                          capture_output=True, check=True).stdout.decode().strip()
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},zeros.bin")
    repo.git("commit", "-q", "-m", "bot: data")
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds", "hidden case 1")
    assert "zeros.bin (over the disk limit)" in run.verdict["facts"]["not exported"]
    healthy_after(run, repo, tmp_path)


@pytest.mark.slow
def test_a_flood_of_empty_files_is_not_exported_past_the_disk_limit(tmp_path: Path) -> None:
    """Each file costs at least a 4 KiB block: 1 MiB of disk holds 256 of them, not the bot's 2000."""
    repo = bot_repo(tmp_path / "repo", HONEST + "\n# changed\n", policy=SMALL_DISK)
    empty = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=b"",
                           capture_output=True, check=True).stdout.decode().strip()
    index = "".join(f"100644 {empty}\tmany/f{n:04}\n" for n in range(2000))
    subprocess.run(["git", "update-index", "--index-info"], cwd=repo.root, input=index.encode(), check=True)
    repo.git("commit", "-q", "-m", "bot: many files")
    run = check(repo, tmp_path)
    left_out = run.verdict["facts"]["not exported"]
    assert "(over the disk limit)" in left_out and left_out.endswith("more"), left_out
    assert int(left_out.rsplit(" and ", 1)[1].split()[0]) + 10 > 2000 - 256
    healthy_after(run, repo, tmp_path)
