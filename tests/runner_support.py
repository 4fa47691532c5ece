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
import collections
import contextlib
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
    return {"requirements.txt": dependency_wheels(into),
            "build.txt": [_repack(d, into) for d in _closure(BUILD, ())],
            "uv.txt": [_repack(d, into) for d in _closure(("uv",), ())]}


def dependency_wheels(into: Path) -> list[Path]:
    """Wheels of the gate's dependencies (all of them, transitively), made from what is installed here."""
    into.mkdir(parents=True, exist_ok=True)
    return [_repack(d, into) for d in _closure((DISTRIBUTION,), ())
            if canonicalize_name(d.metadata["Name"]) != DISTRIBUTION]


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


def as_runner_alone() -> contextlib.AbstractContextManager[None]:
    """Hold the session's lock on the user `runner`: without root, a run's RLIMIT_NPROC allows its processes on
    top of the tasks the uid has when it starts (gate/sandbox/rlimits.py), so what another test runs as `runner`
    meanwhile (a gate's threads, an install's) would take from them: its cases would fail by the suite's
    schedule. As on a runner, where the job is the uid's only user."""
    return session_support.exclusive("runner-uid")


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
        with as_runner_alone():
            done = subprocess.run(
                ["/usr/bin/python3", "-c", script], input=json.dumps({**given, "tree": str(work)}),
                capture_output=True, text=True, user=user.pw_uid, group=user.pw_gid, extra_groups=[], cwd=work,
                env={"PATH": RUNNER_PATH, "HOME": str(work),
                     "PYTHONPATH": f"{root}:{sysconfig.get_paths()['purelib']}"},
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
        with as_runner_alone():
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


# ----- workflows: the README's, calling this repository's reusable ones ---------------------------------------
# What the simulated runner knows of GitHub's workflows: the expressions (`${{ }}`, `if:`) as GitHub evaluates
# them, a caller job's `uses:` of a reusable workflow of this repository (resolved to the file in this tree, the
# commit the caller pinned), the permissions a called job may have (no more than its caller grants), and the
# steps of the README's workflows: the checkouts, setup-python, the Action (action.yml's steps, as `Job` runs
# them), the artifact's upload and download, and `run:` scripts (as `runner`, in bash).
HOME_REPOSITORY = "error-budget-gate/gate"  # where the README's `uses:` point (gate.HOME)
_TOKENS = re.compile(r"\s*(?:(?P<number>\d+(?:\.\d+)?)|(?P<string>'(?:[^']|'')*')|"
                     r"(?P<op>==|!=|<=|>=|&&|\|\||[!<>().,\[\]*])|(?P<name>[A-Za-z_][\w-]*))")
_LEVELS = {"none": 0, "read": 1, "write": 2}


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and value == value  # NaN is falsy


def _number(value: Any) -> float:
    """GitHub's coercion of a value to a number, for `==` between different types."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip() or "0")
        except ValueError:
            return float("nan")
    return float("nan")


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.lower() == right.lower()  # GitHub compares strings ignoring case
    if type(left) is type(right) and not isinstance(left, (int, float)):
        return bool(left == right)
    return _number(left) == _number(right)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


class _Expression:
    """One GitHub Actions expression, parsed and evaluated at once against `context` (a dict of contexts;
    property names are looked up ignoring case, a missing one is null)."""

    def __init__(self, text: str, context: Mapping[str, Any]) -> None:
        self.context = context
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text.rstrip()):
            match = _TOKENS.match(text, position)
            assert match and match.end() > position, f"cannot read the expression {text!r} at {position}"
            kind = next(k for k, v in match.groupdict().items() if v is not None)
            self.tokens.append((kind, match.group(kind)))
            position = match.end()
        self.at = 0

    def value(self) -> Any:
        result = self._or()
        assert self.at == len(self.tokens), f"unread tokens in the expression: {self.tokens[self.at:]}"
        return result

    def _peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def _take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.at]
        assert expected is None or token[1] == expected, f"expected {expected!r}, got {token!r}"
        self.at += 1
        return token

    def _or(self) -> Any:
        left = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            left = left if _truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._comparison()
        while self._peek() == "&&":
            self._take()
            right = self._comparison()
            left = right if _truthy(left) else left
        return left

    def _comparison(self) -> Any:
        left = self._unary()
        while self._peek() in ("==", "!=", "<", "<=", ">", ">="):
            op = self._take()[1]
            right = self._unary()
            if op in ("==", "!="):
                left = _equal(left, right) == (op == "==")
            else:
                a, b = _number(left), _number(right)
                left = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        return left

    def _unary(self) -> Any:
        if self._peek() == "!":
            self._take()
            return not _truthy(self._unary())
        return self._postfix(self._primary())

    def _primary(self) -> Any:
        kind, text = self._take()
        if text == "(":
            inner = self._or()
            self._take(")")
            return inner
        if kind == "number":
            return float(text)
        if kind == "string":
            return text[1:-1].replace("''", "'")
        assert kind == "name", f"unexpected {text!r}"
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        if self._peek() == "(":
            self._take()
            args = []
            while self._peek() != ")":
                args.append(self._or())
                if self._peek() == ",":
                    self._take()
            self._take(")")
            return self._call(text, args)
        return self._property(self.context, text)

    def _postfix(self, value: Any) -> Any:
        while self._peek() in (".", "["):
            if self._take()[1] == ".":
                value = self._property(value, self._take()[1])
            else:
                key = self._or()
                self._take("]")
                value = value[int(key)] if isinstance(value, list) else self._property(value, _text(key))
        return value

    @staticmethod
    def _property(value: Any, name: str) -> Any:
        if not isinstance(value, Mapping):
            return None
        if name in value:
            return value[name]
        return next((v for k, v in value.items() if isinstance(k, str) and k.lower() == name.lower()), None)

    def _call(self, name: str, args: list[Any]) -> Any:
        status = self.context.get("job", {}).get("status", "success")
        calls: dict[str, Callable[[], Any]] = {
            "startswith": lambda: _text(args[0]).lower().startswith(_text(args[1]).lower()),
            "endswith": lambda: _text(args[0]).lower().endswith(_text(args[1]).lower()),
            "contains": lambda: (any(_equal(item, args[1]) for item in args[0]) if isinstance(args[0], list)
                                 else _text(args[1]).lower() in _text(args[0]).lower()),
            "format": lambda: re.sub(r"\{(\d+)\}", lambda m: _text(args[1 + int(m.group(1))]), _text(args[0])),
            "tojson": lambda: json.dumps(args[0]),
            "fromjson": lambda: json.loads(_text(args[0])),
            "always": lambda: True,
            "success": lambda: status == "success",
            "failure": lambda: status == "failure",
            "cancelled": lambda: False,
        }
        assert name.lower() in calls, f"the simulated runner does not know the function {name}"
        return calls[name.lower()]()


def expression(text: str, context: Mapping[str, Any]) -> Any:
    """The value of expression `text` (without `${{ }}`)."""
    return _Expression(text, context).value()


def interpolate(value: Any, context: Mapping[str, Any]) -> Any:
    """A workflow value with its `${{ }}` evaluated: the expression's own value when it is the whole value, else
    the text with each one's value in it; other values as they are."""
    if not isinstance(value, str):
        return value
    whole = EXPRESSION.fullmatch(value.strip())
    if whole:
        return expression(whole.group(1), context)
    return EXPRESSION.sub(lambda m: _text(expression(m.group(1), context)), value)


def condition(text: Any, context: Mapping[str, Any], *, step: bool) -> bool:
    """An `if:`: an expression with or without `${{ }}`; a step's holds only after success unless it calls a
    status function (always(), failure(), ...), as on GitHub."""
    if text is None:
        return not step or context["job"]["status"] == "success"
    source = str(text).strip()
    whole = EXPRESSION.fullmatch(source)
    source = whole.group(1) if whole else source
    if step and not re.search(r"\b(always|success|failure|cancelled)\s*\(", source):
        source = f"success() && ({source})"
    return _truthy(expression(source, context))


@dataclass
class WorkflowRun:
    """What one run of a caller workflow did: its called job's fate, the steps, the artifacts it uploaded."""

    triggered: bool = True
    skipped: bool = False  # the called job's `if:` was false (no runner started)
    concurrency: str = ""
    checkouts: list[dict[str, Any]] = field(default_factory=list)  # each checkout's evaluated `with:`
    steps: list[tuple[str, str]] = field(default_factory=list)  # (step's name or uses, outcome)
    runs: list[StepRun] = field(default_factory=list)
    artifacts: dict[str, Path] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)  # the workflow_call outputs
    status: str = "success"


def _permissions(granted: Any) -> dict[str, str]:
    """A `permissions:` value as scope -> level (`{}`: none; absent: GitHub's restricted default)."""
    if granted is None:
        return {"contents": "read", "packages": "read", "metadata": "read"}
    if granted in ("read-all", "write-all"):
        return collections.defaultdict(lambda: granted.split("-")[0])
    return {str(scope): str(level) for scope, level in dict(granted).items()}


def readme_workflows() -> list[str]:
    """The workflows of the README's "Add it to your repository", in order, as a maintainer copies them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- section: github -->", 1)[1].split("\n## ", 1)[0]
    return [block for block in re.findall(r"```yaml\n(.*?)```", section, re.S) if "\njobs:" in block]


def workflows_in_full() -> list[str]:
    """docs/github.md's "The workflow in full": the gate's and the publish workflow without the reusable ones."""
    docs = (ROOT / "docs" / "github.md").read_text(encoding="utf-8")
    section = docs.split("#### The workflow in full", 1)[1].split("\n#", 1)[0]
    return [block for block in re.findall(r"```yaml\n(.*?)```", section, re.S) if "\njobs:" in block]


def called_workflow(uses: str) -> tuple[dict[Any, Any], str]:
    """The reusable workflow a caller's `uses:` names in this repository, and the commit it pins."""
    match = re.fullmatch(r"([\w.-]+/[\w.-]+)/(\.github/workflows/[\w.-]+\.ya?ml)@([0-9a-f]{40})", uses)
    assert match, f"not a reusable workflow pinned by full commit SHA: {uses!r}"
    repository, path, sha = match.groups()
    assert repository == HOME_REPOSITORY, repository
    called = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
    assert "workflow_call" in called[True], f"{path} has no `on: workflow_call`"
    return called, sha


def run_workflow(machine: Machine, text: str, env: dict[str, str], *, privileged: bool = True,
                 artifacts: Mapping[str, Path] | None = None) -> WorkflowRun:
    """Run the caller workflow `text` (the README's, as a maintainer saves it) for the event in `env` (a
    Scenario's environment: GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, the workspace, RUNNER_TEMP), its one job
    calling a reusable workflow of this repository; `artifacts` are those of the run a workflow_run event
    names. Returns what happened; a permission the called job asks for that the caller does not grant fails
    the run before any step, as GitHub does."""
    caller = yaml.safe_load(text)
    event_name = env["GITHUB_EVENT_NAME"]
    event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text(encoding="utf-8"))
    if event_name not in caller[True]:
        return WorkflowRun(triggered=False)
    [(caller_id, caller_job)] = caller["jobs"].items()
    if "uses" in caller_job:
        called, sha = called_workflow(caller_job["uses"])
        workflow = (HOME_REPOSITORY, sha)
    else:  # the workflow in full (docs/github.md): its own job, the Action pinned in a step
        called, sha = {True: {"workflow_call": {}}, "jobs": {caller_id: caller_job}}, "0" * 40
        workflow = (env["GITHUB_REPOSITORY"], sha)
    granted = _permissions(caller_job.get("permissions", caller.get("permissions")))
    github = {"event_name": event_name, "event": event, "repository": env["GITHUB_REPOSITORY"],
              "token": env["GITHUB_TOKEN"], "ref": f"refs/heads/{event['repository']['default_branch']}",
              "workspace": env["GITHUB_WORKSPACE"]}
    declared = called[True]["workflow_call"] or {}
    base = {"github": github, "runner": {"temp": env["RUNNER_TEMP"], "os": "Linux"}}
    given = {k: interpolate(v, base) for k, v in (caller_job.get("with") or {}).items()}
    inputs = {name: given.get(name, spec.get("default")) for name, spec in (declared.get("inputs") or {}).items()}
    assert set(given) <= set(inputs), f"inputs the called workflow does not declare: {set(given) - set(inputs)}"
    run = WorkflowRun()
    for job_id, job in called["jobs"].items():
        asked = _permissions(job.get("permissions", called.get("permissions")))
        for scope, level in asked.items():
            assert _LEVELS[level] <= _LEVELS[granted.get(scope, "none")], (
                f"The nested job '{job_id}' is requesting '{scope}: {level}', but is only allowed "
                f"'{scope}: {granted.get(scope, 'none')}'")
        context: dict[str, Any] = {**base, "inputs": inputs, "steps": {}, "env": {},
                                   "job": {"status": "success", "workflow_repository": workflow[0],
                                           "workflow_sha": workflow[1]}}
        if not condition(job.get("if"), context, step=False):
            run.skipped = True
            continue
        run.concurrency = _text(interpolate((job.get("concurrency") or {}).get("group", ""), context))
        _run_steps(machine, job, context, env, run, privileged, artifacts or {})
        run.status = context["job"]["status"]
        outputs = {k: interpolate(v, context) for k, v in (job.get("outputs") or {}).items()}
        context["jobs"] = {job_id: {"outputs": outputs}}
        run.outputs = {k: interpolate(spec["value"], context) for k, spec in (declared.get("outputs") or {}).items()}
    return run


def _run_steps(machine: Machine, job: dict[str, Any], context: dict[str, Any], env: dict[str, str],
               run: WorkflowRun, privileged: bool, artifacts: Mapping[str, Path]) -> None:
    workspace = Path(env["GITHUB_WORKSPACE"])
    gate_checkout: Path | None = None
    for step in job["steps"]:
        name = str(step.get("name") or step.get("uses") or step.get("run", "")[:40])
        if not condition(step.get("if"), context, step=True):
            run.steps.append((name, "skipped"))
            continue
        uses = str(step.get("uses", ""))
        given = {k: interpolate(v, context) for k, v in (step.get("with") or {}).items()}
        outputs: dict[str, str] = {}
        ok = True
        if uses.startswith("actions/checkout@"):
            run.checkouts.append(given)
            assert given.get("persist-credentials") is False, f"{name}: the token would stay in .git/config"
            if given.get("repository"):  # the gate's own source, at the commit the caller pinned
                assert given["repository"] == context["job"]["workflow_repository"], given
                gate_checkout = workspace / str(given["path"])
                if not gate_checkout.exists():  # this tree stands for that commit (the Action's copy)
                    shutil.copytree(machine.action_path, gate_checkout, symlinks=True)
                    chown_tree(gate_checkout, machine.user)
            else:  # the PR: the Scenario's checkout; the ref asked for must be the commit it holds
                asked = subprocess.run(["git", "-c", f"safe.directory={workspace}", "-C", str(workspace),
                                        "rev-parse", "--verify", "--quiet", f"{given['ref']}^{{commit}}"],
                                       capture_output=True, text=True).stdout.strip()
                head = subprocess.run(["git", "-c", f"safe.directory={workspace}", "-C", str(workspace),
                                       "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
                ok = asked == head
        elif uses.startswith("actions/setup-python@"):
            outputs = {"python-path": machine.setup_python}
        elif uses.startswith("./") or re.fullmatch(rf"{HOME_REPOSITORY}@[0-9a-f]{{40}}", uses):
            # The Action: the gate's checkout of the reusable workflow, or pinned (the workflow in full).
            assert uses.startswith(HOME_REPOSITORY) or workspace / uses == gate_checkout, (uses, gate_checkout)
            action = Job(machine, env, {k: _text(v) for k, v in given.items()}, privileged=privileged)
            last = action.run()
            run.runs.extend(action.runs)
            ok = last.code == 0
            outputs = action.outputs()
        elif uses.startswith("actions/upload-artifact@"):
            source = Path(str(given["path"]))
            ok = source.is_file()
            if ok:
                kept = Path(env["RUNNER_TEMP"]).parent / f"artifact-{given['name']}"
                kept.mkdir(exist_ok=True)
                run.artifacts[str(given["name"])] = Path(shutil.copy(source, kept / source.name))
        elif uses.startswith("actions/download-artifact@"):
            assert _equal(given["run-id"], context["github"]["event"]["workflow_run"]["id"]), given
            target = Path(str(given["path"]))
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(artifacts[str(given["name"])], target)
            chown_tree(target, machine.user)
        elif "run" in step:
            assert "${{" not in step["run"], f"{name}: an expression in a script (use env)"
            script = Job(machine, env, {}, privileged=privileged)
            evaluated = {"env": {k: _text(interpolate(v, context)) for k, v in (step.get("env") or {}).items()}}
            done = script.run_step(evaluated, step["run"])
            run.runs.append(done)
            ok = done.code == 0
        else:
            raise AssertionError(f"the simulated runner does not know the step {name!r} ({uses})")
        run.steps.append((name, "success" if ok else "failure"))
        if "id" in step:
            context["steps"][step["id"]] = {"outputs": outputs, "outcome": "success" if ok else "failure"}
        if not ok:
            context["job"]["status"] = "failure"
