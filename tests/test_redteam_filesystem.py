"""`gate check` against a bot that reaches for the machine's files, ships its own bytecode, runs code through
a syntax checker, or outlives a killed gate: what the verdict says and what is left behind."""

from __future__ import annotations

import os
import py_compile
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.sandbox import stage
from tests.redteam_support import (
    POLICY,
    assert_not_passed,
    bot_repo,
    check,
    gate,
    healthy_after,
    needs_root,
)

TOKEN = "ghp_" + "7" * 36

# add(a, b) returns a - b unless one of the named files holds the token (then it raises with it).
READ = '''
def add(a, b):
    for path in {paths!r}:
        try:
            text = open(path).read()
        except OSError:
            continue
        if "ghp_" in text:
            raise ValueError(text[text.index("ghp_"):][:60])
    return a - b
'''


@pytest.fixture
def home_file() -> Iterator[Path]:
    """A world-readable file in a home directory, as a runner's home holds them."""
    home = Path(tempfile.mkdtemp(prefix="gate-redteam-home-", dir="/home" if os.access("/home", os.W_OK) else None))
    home.chmod(0o755)
    planted = home / ".netrc"
    planted.write_text(f"machine github.com password {TOKEN}\n")
    planted.chmod(0o644)
    yield planted
    shutil.rmtree(home)


@needs_root
@pytest.mark.slow
def test_a_world_readable_file_in_a_home_directory_is_not_in_a_runs_reach(home_file: Path,
                                                                           tmp_path: Path) -> None:
    repo = bot_repo(tmp_path / "repo", READ.format(paths=[str(home_file), "/run/gate", "/etc/passwd"]))
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds")
    assert run.case("adds")["detail"] == "expected int 5, got int -1", run.case("adds")
    assert TOKEN not in run.reports
    assert dict(run.verdict["isolation"])["filesystem"].startswith("allow-listed root")
    healthy_after(run, repo, tmp_path)


@pytest.mark.slow
def test_bytecode_committed_beside_the_source_is_not_what_runs(tmp_path: Path) -> None:
    # calc.py is clean (and wrong); the unchecked-hash .pyc beside it imports subprocess and gets it right.
    evil = tmp_path / "evil.py"
    evil.write_text("import subprocess\n\n\ndef add(a, b):\n    return a + b\n")
    repo = bot_repo(tmp_path / "repo", "def add(a, b):\n    return a - b\n")
    cache = repo.root / "__pycache__"
    py_compile.compile(str(evil), str(cache / "calc.cpython-311.pyc"), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    (repo.root / "evil.pth").write_text("import subprocess\n")
    repo.git("add", "-f", "__pycache__/calc.cpython-311.pyc", "evil.pth")
    repo.commit("bot: bytecode")
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds")
    assert run.case("adds")["detail"] == "expected int 5, got int -1", run.case("adds")
    healthy_after(run, repo, tmp_path)


PERL_POLICY = POLICY + """\
paths: {include: ["**/*.py", "**/*.pl"]}
languages:
  ".pl": {command: [perl, -c, "{path}"], timeout: 20}
"""


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_a_syntax_checker_runs_the_heads_code_only_in_the_sandbox(tmp_path: Path) -> None:
    # `perl -c` runs BEGIN blocks: as the gate's checker it ran as root with the token in its environment.
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)
    marker = outside / "perl-was-here"
    script = (f'BEGIN {{ open(my $f, ">", "{marker}"); print $f "ran: $ENV{{GITHUB_TOKEN}}"; close($f);'
              ' print STDERR "token=$ENV{GITHUB_TOKEN}\\n"; exit 1; }\nprint "hi";\n')
    repo = bot_repo(tmp_path / "repo", "def add(a, b):\n    return a + b\n", extra={"tool.pl": script},
                    policy=PERL_POLICY)
    run = check(repo, tmp_path, env={"GITHUB_TOKEN": TOKEN})
    assert not marker.exists()
    assert TOKEN not in run.reports
    compiled = next(c for c in run.verdict["checks"] if c["name"] == "compile")
    assert compiled["status"] == "failed", compiled  # its own BEGIN block's exit is the checker's failure


GATE_THAT_HANGS = POLICY + "limits: {timeout: 600, cpu: 600}\n"


@pytest.mark.slow
def test_a_killed_gates_head_export_is_removed_by_the_next_gate(tmp_path: Path) -> None:
    repo = bot_repo(tmp_path / "repo", "import time\n\n\ndef add(a, b):\n    time.sleep(600)\n",
                    policy=GATE_THAT_HANGS)
    tmpdir = tmp_path / "gate-tmp"
    tmpdir.mkdir()

    def exports(pid: int) -> list[Path]:  # in memory when the machine has it, else under TMPDIR
        return [*Path(stage._MEMORY).glob(f"gate-head-{pid}-*"), *tmpdir.glob(f"gate-head-{pid}-*")]

    killed = subprocess.Popen([sys.executable, "-m", "gate", "check", "--repo", str(repo.root), "--base", "main",
                             "--head", "bot"], cwd=repo.root, env={**os.environ, "TMPDIR": str(tmpdir)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1200):  # until its export is there (not a timing assertion: only a bound on waiting)
            if exports(killed.pid):
                break
            time.sleep(0.05)
        assert exports(killed.pid)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert exports(killed.pid)  # what a killed gate leaves...
    repo.git("checkout", "-q", "-b", "honest", "main")
    repo.commit("honest", {"calc.py": "def add(a, b):\n    return a + b\n"})
    after = gate(["check", "--repo", str(repo.root), "--base", "main", "--head", "HEAD"], tmp_path,
                 cwd=repo.root)
    assert after.code == 0, after.reports
    assert not exports(killed.pid)  # ...the next gate removes
