"""Red team: `gate init` in a checkout whose files a bot wrote. A branch can commit `.github` (or
`.github/workflows`) as a symbolic link out of the repository; a maintainer who runs `gate init` there must not
have the gate write through it (docs/cli.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _gate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gate", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize(("args", "link"), [
    (("init", "--workflow"), ".github"), (("init", "--workflow"), ".github/workflows"),
    (("init", "--workflow", "--force"), ".github/workflows"), (("init",), ".github"), (("init", "--force"), ".github")],
    ids=["workflow", "workflows-folder", "workflow-force", "policy", "policy-force"])
def test_gate_init_never_writes_through_a_link_out_of_the_repository(tmp_path: Path, args: tuple[str, ...],
                                                                     link: str) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    (repo / link).symlink_to(outside)

    done = _gate(*args, cwd=repo)

    assert done.returncode == 2, done.stderr
    assert "a symbolic link on the way leads out of the repository" in done.stderr and "Traceback" not in done.stderr
    assert list(outside.rglob("*")) == []


def test_gate_init_writes_through_a_link_that_stays_in_the_repository(tmp_path: Path) -> None:
    (tmp_path / "config" / "github").mkdir(parents=True)
    (tmp_path / ".github").symlink_to("config/github")

    done = _gate("init", "--workflow", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "config" / "github" / "workflows" / "gate.yml").is_file()
