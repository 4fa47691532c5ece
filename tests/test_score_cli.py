"""`gate score`: one model reply scored against its task from the command line, through the real CLI."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import main
from gate.verdict import Verdict, validate

ROOT = Path(__file__).resolve().parent.parent
SUM = ROOT / "examples" / "sum-two-numbers"
IS_EVEN = ROOT / "examples" / "is_even"


def _task(tmp_path: Path, allowed: str = "[sys]") -> Path:
    task = tmp_path / "task.yml"
    task.write_text(f"name: t\nallowed_imports: {allowed}\ncases:\n  - stdin: \"1\\n\"\n    stdout: \"1\"\n")
    return task


def test_seed_demo_is_accepted_after_running_its_case(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["score", str(SUM / "reply.md"), "--task", str(SUM / "task.yml")])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("ACCEPTED  total 0 / budget 3")
    assert "1 case: 1 passed" in out  # (the short report: each case by its name with --verbose)
    assert "policy: default preset" in out
    assert main(["score", str(SUM / "reply.md"), "--task", str(SUM / "task.yml"), "--verbose"]) == 0
    assert "five plus seven: passed" in capsys.readouterr().out


def test_json_to_stdout_replaces_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["score", str(SUM / "reply.md"), "--task", str(SUM / "task.yml"), "--json", "-"])
    data = json.loads(capsys.readouterr().out)
    validate(data)
    assert code == 0
    assert data["accepted"] is True
    # no judge: the policy does not turn it on, so it is not listed
    assert {c["name"]: c["points"] for c in data["checks"]} == {
        "extract": 0, "parse": 0, "imports": 0, "claims": 0, "smoke": 0, "nondeterminism": 0}
    assert data["reproduce"].startswith("gate score ")


def test_json_to_a_file_next_to_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "verdict.json"
    main(["score", str(IS_EVEN / "reply.md"), "--task", str(IS_EVEN / "task.yml"), "--json", str(out)])
    assert "claims" in capsys.readouterr().out
    verdict = Verdict.from_dict(json.loads(out.read_text()))
    assert [p.check for p in verdict.penalties] == ["claims", "smoke"]  # O(1) with a loop; True is no int


def test_over_budget_exits_1_and_within_budget_exits_0(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text("```python\nimport os\nprint(input() or os.getcwd())\n```\n")
    assert main(["score", str(reply), "--task", str(_task(tmp_path))]) == 0
    assert capsys.readouterr().out.startswith("ACCEPTED  total 3 / budget 3")
    reply.write_text('```python\nimport os\n\ndef f(xs):\n    """O(1)."""\n    return sum(xs)\n```\n')
    assert main(["score", str(reply), "--task", str(_task(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert out.startswith("BLOCKED  total 8 / budget 3")  # imports 3, claims 3, its case printed nothing: 2
    assert "solution.py:1" in out and "solution.py:5" in out


def test_a_syntax_error_blocks_with_later_checks_skipped(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text("```python\nprint(1\n```\n")
    assert main(["score", str(reply), "--task", str(_task(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert out.startswith("BLOCKED  total 9 / budget 3")  # parse 5, and the task's case as not run (4)
    assert "skipped" in out and "not run: parse failed" in out


def test_policy_file_changes_the_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text("no code at all")
    policy = tmp_path / "gate.yml"
    policy.write_text("budget: 9\n")  # extract 5, the case not run 4
    assert main(["score", str(reply), "--task", str(_task(tmp_path)), "--policy", str(policy)]) == 0
    assert "total 9 / budget 9" in capsys.readouterr().out


@pytest.mark.parametrize("which", ["reply", "task", "policy"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          which: str) -> None:
    reply, task, policy = SUM / "reply.md", SUM / "task.yml", tmp_path / "gate.yml"
    policy.write_text("budget: 3\n")
    if which == "reply":
        reply = tmp_path / "missing.md"
    elif which == "task":
        task = tmp_path / "task.yml"
        task.write_text("name: t\ncases: 3\n")
    else:
        policy.write_text("budget: -1\n")
    assert main(["score", str(reply), "--task", str(task), "--policy", str(policy)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("gate: error: ")
    assert "Traceback" not in err[0]


@pytest.mark.parametrize("which", ["reply", "task", "policy"])
def test_a_file_that_is_not_utf8_is_bad_input_naming_its_line(tmp_path: Path, which: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    files = {"reply": tmp_path / "reply.md", "task": tmp_path / "task.yml", "policy": tmp_path / "gate.yml"}
    files["reply"].write_text("```python\nprint(1)\n```\n")
    files["task"].write_text("name: t\n")
    files["policy"].write_text("budget: 3\n")
    files[which].write_bytes(files[which].read_bytes() + b"# caf\xe9\n")
    argv = ["score", str(files["reply"]), "--task", str(files["task"]), "--policy", str(files["policy"])]
    assert main(argv) == 2
    line = {"reply": 4, "task": 2, "policy": 2}[which]
    assert capsys.readouterr().err == f"gate: error: {files[which]}:{line}: not UTF-8 text (byte 0xe9 at offset " \
        f"{len(files[which].read_bytes()) - 2})\n"


def test_real_process_output_has_no_colour_when_piped_and_fits_80_columns() -> None:
    proc = subprocess.run([sys.executable, "-m", "gate", "score", str(IS_EVEN / "reply.md"),
                           "--task", str(IS_EVEN / "task.yml")], capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stderr  # the O(1) claim and the TypeError case
    assert "\x1b[" not in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80


@pytest.mark.parametrize(("args", "env", "colored"), [
    ([], {"FORCE_COLOR": "1"}, True), (["--color", "always"], {}, True),
    (["--color", "always"], {"NO_COLOR": "1"}, True), (["--color", "never"], {"FORCE_COLOR": "1"}, False),
    ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False)])
def test_real_process_piped_is_coloured_when_asked(args: list[str], env: dict[str, str], colored: bool) -> None:
    """Piped (a CI log): coloured by `--color always` or FORCE_COLOR, never by `--color never` or NO_COLOR."""
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.run([sys.executable, "-m", "gate", "score", str(IS_EVEN / "reply.md"), "--task",
                           str(IS_EVEN / "task.yml"), *args], capture_output=True, text=True, env=base | env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("\x1b[31mBLOCKED\x1b[0m" if colored else "BLOCKED")
    assert ("\x1b[" in proc.stdout) == colored


@pytest.mark.parametrize("no_color", [None, "1"])
def test_real_process_on_a_terminal_is_coloured_unless_NO_COLOR(no_color: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | ({"NO_COLOR": no_color} if no_color else {})
    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "gate", "score", str(IS_EVEN / "reply.md"),
                           "--task", str(IS_EVEN / "task.yml")], stdout=follower, stderr=subprocess.PIPE,
                          env=env) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait() == 1
    os.close(leader)
    out = b"".join(chunks).decode()
    assert out.startswith("\x1b[31mBLOCKED\x1b[0m" if not no_color else "BLOCKED")
    assert ("\x1b[" in out) == (no_color is None)


def test_a_json_file_that_cannot_be_written_is_the_only_output(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing-dir" / "verdict.json"
    assert main(["score", str(SUM / "reply.md"), "--task", str(SUM / "task.yml"), "--json", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"gate: error: {target}: cannot write the JSON verdict: No such file or directory\n"
