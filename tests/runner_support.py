"""A GitHub-hosted runner, simulated on this machine, that runs action.yml's steps as the runner would.

What is real: a non-root user `runner` (created with useradd when absent) with passwordless sudo (as on
GitHub's hosted runners: a sudoers.d file, written once and left as it is), its work directory under
/home/runner/work holding the checkout (GITHUB_WORKSPACE) and RUNNER_TEMP with the file-command files
(GITHUB_ENV, GITHUB_PATH, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY), the event file and the step scripts, the token
in the gate step's environment, and each `run:` script of action.yml executed with bash as `runner`, its
`${{ }}` expressions evaluated from the inputs and the earlier steps' outputs.

What stands in: `actions/setup-python` is a copy of Debian's /usr/bin/python3.11 and its standard library
(with pip in its site directory) laid out as setup-python's tool cache is, world-readable and owned by
`runner` (who can write into it, as on a hosted runner); PyPI is a wheelhouse repacked offline from this
environment's installed distributions (the gate's dependencies, its build backend and uv), which pip and uv
are pointed at through PIP_*/UV_* variables, and the action's copy locks (action/*.txt) to those wheels'
hashes; the gate is installed once per test session, by whichever xdist worker asks first (the install step,
run as `runner` through sudo), into a root-owned directory of its own instead of /opt/gate, so parallel
sessions never share one.
A runner without privileges is the same user with a `sudo` that asks for a password (first on PATH).
"""

from __future__ import annotations

import base64
import csv
import fcntl
import hashlib
import io
import json
import os
import pwd
import re
import shutil
import subprocess
import sysconfig
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.parser import Parser
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gate import DISTRIBUTION
from tests import session_support

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
RUNNER = "runner"
RUNNER_WORK = Path("/home/runner/work")
INSTALL_HOME = "/opt/gate"  # where action.yml installs the gate on a privileged runner
SUDOERS = Path("/etc/sudoers.d/gate-tests-runner")
SUDOERS_LINE = f"{RUNNER} ALL=(ALL) NOPASSWD:ALL\n"  # what GitHub's hosted images give `runner`
SYSTEM_PYTHON = "/usr/bin/python3.11"  # what the stand-in for setup-python's interpreter is copied from
SITE = "dist-packages"  # the stand-in's site directory, in lib/python3.11
RUNNER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What builds the gate (pyproject.toml's build-system requires, action/build.txt).
BUILD = ("setuptools", "wheel")


def has_sudo() -> bool:
    return shutil.which("sudo") is not None and shutil.which("visudo") is not None


def ensure_runner() -> pwd.struct_passwd:
    """The user `runner` with passwordless sudo; created when absent. Idempotent and safe for parallel
    sessions (a lock), and left in place: later sessions find it as it is."""
    with open("/run/lock/gate-tests-runner.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            user = pwd.getpwnam(RUNNER)
        except KeyError:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", RUNNER], check=True)
            user = pwd.getpwnam(RUNNER)
        if not SUDOERS.is_file() or SUDOERS.read_text() != SUDOERS_LINE:
            staged = SUDOERS.with_name(".gate-tests-runner.new")
            staged.write_text(SUDOERS_LINE)
            staged.chmod(0o440)
            subprocess.run(["visudo", "-cqf", str(staged)], check=True)
            staged.replace(SUDOERS)
        work = Path(user.pw_dir) / "work"
        work.mkdir(exist_ok=True)
        os.chown(work, user.pw_uid, user.pw_gid)
    return user


# ----- an offline PyPI ------------------------------------------------------------------------------------
def _closure(names: tuple[str, ...], extras: tuple[str, ...]) -> list[metadata.Distribution]:
    """The installed distributions `names` need (with `extras` of the first), dependencies included."""
    seen: dict[str, metadata.Distribution] = {}
    pending = [(name, extras if i == 0 else ()) for i, name in enumerate(names)]
    while pending:
        name, wanted = pending.pop()
        key = canonicalize_name(name)
        if key in seen:
            continue
        dist = metadata.distribution(name)
        seen[key] = dist
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in (*wanted, "")):
                pending.append((req.name, tuple(req.extras)))
    return list(seen.values())


def _repack(dist: metadata.Distribution, into: Path) -> Path:
    """A wheel of an installed distribution: its RECORD's files, scripts under .data/scripts, a new RECORD."""
    info = next(e.parts[0] for e in dist.files or () if e.parts[0].endswith(".dist-info"))
    name, version = info.removesuffix(".dist-info").rsplit("-", 1)
    base = Path(str(dist.locate_file("")))
    wheel_meta = Parser().parsestr(dist.read_text("WHEEL") or "")
    tags = wheel_meta.get_all("Tag") or ["py3-none-any"]
    parts = [sorted({tag.split("-")[i] for tag in tags}) for i in range(3)]
    target = into / f"{name}-{version}-{'-'.join('.'.join(p) for p in parts)}.whl"
    rows = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as wheel:
        for entry in dist.files or ():
            source = (base / entry).resolve()
            text = str(entry)
            if "__pycache__" in text or text.endswith((".pyc", "/RECORD", "/INSTALLER", "/REQUESTED",
                                                        "/direct_url.json")) or not source.is_file():
                continue
            if text.startswith("..") and "/bin/" not in text:
                continue  # data outside site-packages other than scripts: nothing the gate needs
            arcname = f"{name}-{version}.data/scripts/{entry.name}" if text.startswith("..") else text
            data = source.read_bytes()
            member = zipfile.ZipInfo(arcname)
            member.external_attr = source.stat().st_mode << 16  # a regular file; scripts stay executable
            wheel.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append((arcname, f"sha256={digest}", str(len(data))))
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([*rows, (f"{info}/RECORD", "", "")])
        wheel.writestr(f"{info}/RECORD", out.getvalue())
    return target


def wheelhouse(into: Path) -> dict[str, list[Path]]:
    """Wheels of everything the Action's install step fetches from PyPI, made from what is installed here, by
    the lock file of action/ that pins them."""
    into.mkdir(parents=True, exist_ok=True)
    gate_needs = [d for d in _closure((DISTRIBUTION,), ())
                  if canonicalize_name(d.metadata["Name"]) != DISTRIBUTION]
    return {"requirements.txt": [_repack(d, into) for d in gate_needs],
            "build.txt": [_repack(d, into) for d in _closure(BUILD, ())],
            "uv.txt": [_repack(d, into) for d in _closure(("uv",), ())]}


def lock(wheels: dict[str, list[Path]], action: Path) -> None:
    """The Action's lock files for the offline index: its wheels' names, versions and hashes (the repacked
    wheels are not PyPI's, so the real lock files' hashes would refuse them, as they should)."""
    for name, paths in wheels.items():
        lines = []
        for path in sorted(paths):
            dist, version = path.name.split("-")[:2]
            lines.append(f"{dist}=={version} --hash=sha256:{hashlib.sha256(path.read_bytes()).hexdigest()}\n")
        (action / "action" / name).write_text("".join(lines))


# ----- the runner ---------------------------------------------------------------------------------------
@dataclass
class Machine:
    """The simulated runner machine of a test session: the user, the action's files, the offline index."""

    user: pwd.struct_passwd
    session: Path  # root-owned: the wheelhouse, the stand-in sudo, the gate's installation
    action_path: Path  # owned by runner, like /home/runner/work/_actions/OWNER/gate/REF
    runner_home: Path  # the runner's HOME for this session (the unprivileged install goes there)
    tool_cache: Path  # the runner's tool cache, where setup-python's stand-in is installed
    installs: dict[bool, dict[str, str]] = field(default_factory=dict)  # privileged -> install outputs

    @property
    def home(self) -> Path:
        """Where the privileged install puts the gate (instead of /opt/gate)."""
        return self.session / "opt-gate"

    @property
    def setup_python(self) -> str:
        """The interpreter setup-python's step outputs (its `python-path`)."""
        return str(self.tool_cache / "Python" / "3.11" / "x64" / "bin" / "python3")

    @property
    def no_sudo(self) -> Path:
        return self.session / "no-sudo"

    def offline(self, index: Path | None = None) -> dict[str, str]:
        """pip and uv pointed at the offline index (the session's wheelhouse unless told another)."""
        wheels = str(index or self.session / "wheels")
        return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": wheels, "PIP_CONFIG_FILE": os.devnull,
                "UV_NO_INDEX": "1", "UV_FIND_LINKS": wheels, "UV_OFFLINE": "1", "UV_PYTHON_DOWNLOADS": "never"}


def start_machine() -> Machine:
    """Set the machine up: the user, a root-owned session directory, the wheelhouse, the action's copy.
    Directories left by a session that was killed (named after its pid) are removed first."""
    user = ensure_runner()
    remove_stale()
    session = Path(tempfile.mkdtemp(prefix=f"gate-tests-{os.getpid()}-", dir="/opt"))
    session.chmod(0o755)
    wheels = wheelhouse(session / "wheels")
    stub = session / "no-sudo"
    stub.mkdir()
    (stub / "sudo").write_text('#!/bin/sh\necho "sudo: a password is required" >&2\nexit 1\n')
    (stub / "sudo").chmod(0o755)
    name = f"gate-tests-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    actions, home, tools = (RUNNER_WORK / place / name for place in ("_actions", "_homes", "_tool"))
    setup_python(tools / "Python" / "3.11" / "x64")
    copy_action_source(actions / "gate")
    lock(wheels, actions / "gate")
    home.mkdir(parents=True)
    for made in (actions, home, tools):
        chown_tree(made, user)
    return Machine(user, session, actions / "gate", home, tools)


def copy_action_source(target: Path) -> None:
    """The files git tracks, as a checkout of the Action's repository holds them (less the tests): what the
    developer's tree also holds (`.venv`, `.hypothesis`, caches) is no part of an Action's source."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached"], cwd=ROOT, capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if not name or name.startswith("tests/") or not os.path.lexists(source):
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name, follow_symlinks=False)


def setup_python(prefix: Path) -> None:
    """What setup-python installs, in its layout: bin/python3.11 (and python3, python), lib/python3.11 with
    lib-dynload, and pip in its site directory (Debian's interpreter reads lib/python3.11/dist-packages where
    setup-python's reads site-packages); no sitecustomize (Debian's, a link to /etc, is not setup-python's)."""
    name = Path(SYSTEM_PYTHON).name
    library = prefix / "lib" / name
    (prefix / "bin").mkdir(parents=True)
    shutil.copy2(SYSTEM_PYTHON, prefix / "bin" / name)
    for link in ("python3", "python"):
        (prefix / "bin" / link).symlink_to(name)
    shutil.copytree(f"/usr/lib/{name}", library, symlinks=True, ignore=shutil.ignore_patterns("sitecustomize.py"))
    purelib = Path(sysconfig.get_paths()["purelib"])
    for pip in (purelib / "pip", *purelib.glob("pip-*.dist-info")):
        shutil.copytree(pip, library / SITE / pip.name, ignore=shutil.ignore_patterns("__pycache__"))


def session_machine(prepare: Callable[[Machine], None]) -> Machine:
    """The test session's machine, set up and `prepare`d by the first of its processes to ask (the others,
    pytest-xdist's workers, wait for it and read its record); removed when the session ends."""
    with session_support.once("runner-machine") as record:
        if record.is_file():
            saved = json.loads(record.read_text())
            installs = {key == "true": value for key, value in saved.pop("installs").items()}
            return Machine(ensure_runner(), Path(saved["session"]), Path(saved["action_path"]),
                           Path(saved["runner_home"]), Path(saved["tool_cache"]), installs)
        built = start_machine()
        session_support.remove_at_end(built.action_path.parent, built.runner_home, built.tool_cache, built.session)
        prepare(built)
        record.write_text(json.dumps({"session": str(built.session), "action_path": str(built.action_path),
                                      "runner_home": str(built.runner_home), "tool_cache": str(built.tool_cache),
                                      "installs": {str(k).lower(): v for k, v in built.installs.items()}}))
        return built


def remove_stale() -> None:
    for parent in (Path("/opt"), RUNNER_WORK / "_actions", RUNNER_WORK / "_homes", RUNNER_WORK / "_tool"):
        for place in parent.glob("gate-tests-*-*"):
            pid = place.name.split("-")[2]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(place, ignore_errors=True)


def chown_tree(root: Path, user: pwd.struct_passwd) -> None:
    for path in (root, *root.rglob("*")):
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


def run_as_runner(script: str, modules: Mapping[str, str], given: Mapping[str, Any]) -> Any:
    """What Python `script` prints (JSON), run by /usr/bin/python3 as the user `runner`, with the gate and its
    packages importable. Its stdin is `given` (JSON), with "tree": a directory of the user's own holding the
    package `pkg` of `modules` (name -> source), removed afterwards."""
    user = ensure_runner()
    work = Path(tempfile.mkdtemp(dir=Path(user.pw_dir) / "work"))
    try:
        (work / "pkg").mkdir()
        for name, source in {"__init__": "", **modules}.items():
            (work / "pkg" / f"{name}.py").write_text(source)
        chown_tree(work, user)
        root = Path(__file__).resolve().parent.parent
        done = subprocess.run(
            ["/usr/bin/python3", "-c", script], input=json.dumps({**given, "tree": str(work)}),
            capture_output=True, text=True, user=user.pw_uid, group=user.pw_gid, extra_groups=[], cwd=work,
            env={"PATH": RUNNER_PATH, "HOME": str(work), "PYTHONPATH": f"{root}:{sysconfig.get_paths()['purelib']}"},
            check=False, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def evaluate(text: str, context: Mapping[str, str]) -> str:
    """`${{ ... }}` in `text`, from `context` (an output never set reads as "", as on a runner)."""
    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key.startswith("steps.") and ".outputs." in key:
            return context.get(key, "")
        if key not in context:
            raise AssertionError(f"the simulated runner does not know the expression {key!r}")
        return context[key]

    return EXPRESSION.sub(one, text)


@dataclass
class StepRun:
    step: str
    code: int
    stdout: str
    stderr: str


@dataclass
class Job:
    """One job on the machine: the runner's environment (from a Scenario's), the inputs, the step outputs."""

    machine: Machine
    env: dict[str, str]
    inputs: dict[str, str]
    privileged: bool = True
    index: Path | None = None  # another offline index than the session's
    home: Path | None = None  # where the privileged install goes, when not the session's
    setup_python: str | None = None  # what setup-python's step outputs, when not the session's stand-in
    context: dict[str, str] = field(default_factory=dict)
    runs: list[StepRun] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.context |= {f"inputs.{name}": self.inputs.get(name, str(spec.get("default", "")))
                         for name, spec in ACTION["inputs"].items()}
        self.context["github.token"] = self.env["GITHUB_TOKEN"]
        self.context["inputs.token"] = evaluate(self.context["inputs.token"], self.context)
        self.context["github.action_path"] = str(self.machine.action_path)

    def base_env(self) -> dict[str, str]:
        """What the runner gives every step (the job's token is not among it: only the gate step's `env`)."""
        env = {k: v for k, v in self.env.items() if k != "GITHUB_TOKEN"}
        path = RUNNER_PATH if self.privileged else f"{self.machine.no_sudo}:{RUNNER_PATH}"
        return env | {"PATH": path, "HOME": str(self.machine.runner_home), "USER": RUNNER, "RUNNER_OS": "Linux",
                      "GITHUB_ACTION_PATH": str(self.machine.action_path), "LANG": "C.UTF-8",
                      **self.machine.offline(self.index)}

    def run_step(self, step: dict[str, Any], script: str) -> StepRun:
        """`script` as the runner runs a step: a file in RUNNER_TEMP, `bash --noprofile --norc -eo pipefail`,
        as `runner`, in the workspace, with a fresh GITHUB_OUTPUT whose lines become the step's outputs."""
        temp = Path(self.env["RUNNER_TEMP"])
        output = temp / f"output-{uuid.uuid4().hex}"
        output.touch()
        script_file = temp / f"{uuid.uuid4()}.sh"
        script_file.write_text(script)
        for path in (output, script_file):
            os.chown(path, self.machine.user.pw_uid, self.machine.user.pw_gid)
        env = self.base_env() | {k: evaluate(str(v), self.context) for k, v in step.get("env", {}).items()}
        env["GITHUB_OUTPUT"] = str(output)
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)], env=env,
                              cwd=self.env["GITHUB_WORKSPACE"], capture_output=True, text=True,
                              user=self.machine.user.pw_uid, group=self.machine.user.pw_gid, extra_groups=[],
                              stdin=subprocess.DEVNULL, timeout=600)
        if "id" in step:
            lines = output.read_text().splitlines()
            self.context |= {f"steps.{step['id']}.outputs.{k}": v
                             for k, v in (line.split("=", 1) for line in lines if "=" in line)}
        run = StepRun(step.get("name", step.get("id", "step")), done.returncode, done.stdout, done.stderr)
        self.runs.append(run)
        return run

    def run(self, *, install: bool = False) -> StepRun:
        """Every step of action.yml; the install step runs only with `install` (else the session's install's
        outputs stand in). Stops at the first step that fails, as a runner does; returns the last step run."""
        last = StepRun("none", 0, "", "")
        for step in ACTION["runs"]["steps"]:
            if "uses" in step:  # actions/setup-python
                assert str(step["uses"]).startswith("actions/setup-python@")
                self.context[f"steps.{step['id']}.outputs.python-path"] = self.setup_python or self.machine.setup_python
                continue
            if step.get("id") == "install" and not install:
                self.context |= {f"steps.install.outputs.{k}": v
                                 for k, v in self.machine.installs[self.privileged].items()}
                continue
            last = self.run_step(step, install_script(step["run"], self.home or self.machine.home))
            if last.code != 0:
                break
        return last

    def outputs(self) -> dict[str, str]:
        return {name: evaluate(spec["value"], self.context) for name, spec in ACTION["outputs"].items()}


def install_script(script: str, home: Path) -> str:
    """The step's script, with the privileged install's home moved to `home` (a session's own directory)."""
    if INSTALL_HOME in script:
        assert script.count(INSTALL_HOME) == 1, "action.yml names its install home once"
    return script.replace(INSTALL_HOME, str(home))


def install(machine: Machine, env: dict[str, str], privileged: bool, *, index: Path | None = None,
            home: Path | None = None) -> StepRun:
    """Run the install step (from `index`, into `home`: the session's unless told others); the session's
    install (once per privilege) keeps its outputs for the other jobs."""
    job = Job(machine, env, {}, privileged=privileged, index=index, home=home)
    job.context["steps.python.outputs.python-path"] = machine.setup_python
    step = next(s for s in ACTION["runs"]["steps"] if s.get("id") == "install")
    run = job.run_step(step, install_script(step["run"], home or machine.home))
    if run.code == 0 and home is None:
        machine.installs[privileged] = {k.rsplit(".", 1)[1]: v for k, v in job.context.items()
                                        if k.startswith("steps.install.outputs.")}
    return run


def work_dir() -> Path:
    """A job's directory under /home/runner/work (outside /tmp, as on a hosted runner)."""
    return Path(tempfile.mkdtemp(prefix="gate-test-", dir=RUNNER_WORK))
