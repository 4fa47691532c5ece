"""What of the machine a run can reach, and what of a run outlives it: the allow-listed root, the shared
read-only tree, System V IPC, and the gate's own state directory. Each test attacks as a candidate would and
asserts what it got (a planted secret, another run's segment, a changed file) and what was left behind."""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from gate import memo
from gate.errors import BadInput, GateFailure
from gate.sandbox import canaries, detect, open_sandbox, users
from gate.sandbox.base import Limits, RunRequest
from gate.sandbox.canaries import REPORT
from gate.sandbox.runner import LayeredSandbox

LIMITS = Limits(wall_s=30.0, cpu_s=10.0)
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root: mount and IPC namespaces")
SECRET = "ghp_filesystemCanary0123456789abcdef"
# Reads each path given; reports what it found, or the error's name.
READER = """
found = {}
for path in sys.argv[1:]:
    try:
        found[path] = open(path).read() if os.path.isfile(path) else sorted(os.listdir(path))
    except OSError as exc:
        found[path] = type(exc).__name__
report(repr(found))
"""


def run(box: LayeredSandbox, code: str, *args: str, tree: Path | None = None) -> str:
    files = {"main.py": (REPORT + textwrap.dedent(code)).encode()}
    result = box.run(RunRequest(script="main.py", args=args, files=files, tree=tree, limits=LIMITS))
    assert result.exit_code == 0, result.stderr.decode(errors="replace")
    return (result.result or b"").decode()


SANDBOX_BACKENDS = ("zygote", "fresh-interpreter")


@pytest.fixture
def home_secret() -> Iterator[Path]:
    """A world-readable file in a home directory (a runner's own notes, a tool's config), as on a runner."""
    home = Path(tempfile.mkdtemp(prefix="gate-test-home-", dir="/home" if os.path.isdir("/home") else None))
    home.chmod(0o755)
    secret = home / ".config" / "notes.txt"
    secret.parent.mkdir()
    secret.parent.chmod(0o755)
    secret.write_text(SECRET)
    secret.chmod(0o644)
    yield secret
    shutil.rmtree(home)


@needs_root
def test_nothing_of_the_host_but_the_allow_list_is_in_a_run(sandbox: LayeredSandbox, home_secret: Path) -> None:
    places = [str(home_secret), str(home_secret.parent.parent), "/home", "/root", "/run", "/run/lock", "/var/lib",
              "/etc/shadow", "/etc/hostname", "/work", "/opt", "/srv", "/sys", "/boot", str(Path.cwd())]
    found = ast.literal_eval(run(sandbox, READER, "/", *places))
    assert SECRET not in repr(found)
    assert all(found[place] == "FileNotFoundError" for place in places), found
    assert set(found["/"]) <= {".gate", "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin",
                               "tmp", "usr", "var", ".gate-venv"}
    assert "filesystem" in sandbox.isolation and sandbox.isolation["filesystem"].startswith("allow-listed root")


@needs_root
def test_a_suite_shelling_out_finds_the_common_tools_and_no_privileged_program(sandbox: LayeredSandbox) -> None:
    # A pager of `cat` and an editor of `sed`, as click's own tests set them; then every program in the folders
    # a shell looks in (every bind is nosuid besides, and each run has no_new_privs).
    piped = sandbox.run(RunRequest(argv=("/bin/sh", "-c", "printf 'a\\nb\\n' | sed s/b/c/ | sort -r | cat"),
                                   limits=LIMITS))
    assert (piped.exit_code, piped.stdout) == (0, b"c\na\n"), piped.stderr
    # A test's own script for bash, naming `/bin/cat` by its path, as distro's fake `lsb_release` is.
    script = sandbox.run(RunRequest(argv=("/bin/bash", "-c", "/bin/cat <<'EOT'\nDistributor ID:\tUbuntu\nEOT"),
                                    limits=LIMITS))
    assert (script.exit_code, script.stdout) == (0, b"Distributor ID:\tUbuntu\n"), script.stderr
    # bc as a REPL and nl numbering its lines, as pexpect's and ptyprocess' tests drive them.
    counted = sandbox.run(RunRequest(argv=("/bin/sh", "-c", "echo '2^10' | bc | nl -w 1"), limits=LIMITS))
    assert (counted.exit_code, counted.stdout) == (0, b"1\t1024\n"), counted.stderr
    # `openssl rand` as a source of data, as pexpect's tests use it (the libraries it loads are the interpreter's).
    if shutil.which("openssl", path="/usr/bin:/bin"):
        data = sandbox.run(RunRequest(argv=("/bin/sh", "-c", "openssl rand -hex 8 | wc -c"), limits=LIMITS))
        assert (data.exit_code, data.stdout) == (0, b"17\n"), data.stderr
    code = """
        found = {}
        for folder in ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"):
            for name in (os.listdir(folder) if os.path.isdir(folder) else ()):
                mode = os.stat(os.path.join(folder, name)).st_mode
                found[name] = bool(mode & (stat.S_ISUID | stat.S_ISGID))
        report(repr(found))
    """
    found = ast.literal_eval(run(sandbox, "import stat\n" + textwrap.dedent(code)))
    assert {"cat", "sed", "grep", "find", "diff", "sh", "bash", "bc", "nl", "printenv", "script"} <= set(found)
    assert not any(found.values()), found  # no set-user-ID or set-group-ID program
    assert not set(found) & {"sudo", "su", "mount", "passwd", "curl", "wget", "git", "ssh", "gcc", "cc", "apt"}


SET_USER_ID = [path for path in ("/usr/bin/su", "/usr/bin/mount", "/usr/bin/passwd")
               if os.path.isfile(path) and os.stat(path).st_mode & stat.S_ISUID]


@needs_root
@pytest.mark.skipif(not SET_USER_ID, reason="no set-user-ID su, mount or passwd on this machine")
def test_a_listed_tool_that_is_set_user_id_stays_out_of_the_root() -> None:
    # The probe that lists the root, asked for these names as it is for TOOLS: the set-user-ID ones are refused.
    interpreter = detect._interpreter(True)[0]
    names = " ".join(os.path.basename(path) for path in (*SET_USER_ID, "cat"))
    code, out, err = detect._finish(detect._start(interpreter, detect._NEEDS, os.path.realpath(interpreter), names))
    assert code == 0, err
    listed = set(json.loads(out))
    assert listed & {"/usr/bin/cat", "/bin/cat"}
    assert not listed & {*SET_USER_ID, *(path.replace("/usr/bin/", "/bin/") for path in SET_USER_ID)}


@needs_root
def test_the_root_is_read_only_and_the_staging_directory_out_of_reach(sandbox: LayeredSandbox) -> None:
    code = """
        found = []
        for path in ("/usr/lib/x.txt", "/etc/x.txt", "/x.txt", "/dev/x"):
            try:
                open(path, "w").write("x")
                found.append(path)
            except OSError:
                pass
        found.append(os.path.exists("/.gate/stage"))
        found.append(sorted(os.listdir("/dev")))
        open("/dev/null", "w").write("fine")
        report(found)
    """
    said = run(sandbox, code)
    assert said.startswith("[False, ["), said
    assert "'null'" in said and "'urandom'" in said and "'tty'" not in said and "'mem'" not in said


@needs_root
def test_a_readonly_path_is_the_one_part_of_the_host_added(home_secret: Path, tmp_path: Path) -> None:
    # What a caller adds (a repository's environment) is there, read-only; its neighbours are not.
    env = tmp_path / "venv" / "site-packages"
    env.mkdir(parents=True)
    (env / "dep.py").write_text("VALUE = 'from the environment'\n")
    tmp_path.chmod(0o755)
    (tmp_path / "venv").chmod(0o755)
    env.chmod(0o755)
    (env / "dep.py").chmod(0o644)
    hidden = env / "hidden.yml"  # a place the gate hides stays hidden inside what is added
    hidden.write_text(SECRET)
    hidden.chmod(0o644)
    box = open_sandbox(LIMITS, readonly=[env], hide=[str(hidden)])
    assert isinstance(box, LayeredSandbox)
    try:
        assert SECRET not in run(box, "report(open(sys.argv[1]).read())", str(hidden))
        code = f"""
            sys.path.append({str(env)!r})
            import dep
            try:
                open({str(env / 'planted.py')!r}, "w")
                wrote = True
            except OSError:
                wrote = False
            report([dep.VALUE, wrote, os.path.exists({str(tmp_path / 'venv')!r} + "/other"),
                    os.path.exists({str(home_secret)!r})])
        """
        (tmp_path / "venv" / "other").write_text("a neighbour")
        assert run(box, code) == "['from the environment', False, False, False]"
        assert not (env / "planted.py").exists()
    finally:
        box.close()


@needs_root
def test_an_environments_programs_are_bound_for_its_runs_and_nothing_else_of_its_bin(tmp_path: Path) -> None:
    """A program the environment's distributions installed beside their scripts (ruff's binary) is what a run
    with the environment on its path finds by name; nothing else of the environment's bin is bound (its `#!`
    scripts name its interpreter, which runs have not; a file no distribution installed)."""
    import sys

    venv = tmp_path / "venv"
    site = venv / f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
    (site / "acme_bin-1.0.dist-info").mkdir(parents=True)
    (site / "acme_bin-1.0.dist-info/RECORD").write_text("../../../bin/acme-bin,,\n../../../bin/acme-script,,\n")
    (venv / "bin").mkdir()
    shutil.copy(shutil.which("echo") or "/bin/echo", venv / "bin/acme-bin")
    (venv / "bin/acme-script").write_text(f"#!{venv}/bin/python\nprint('from the script')\n")
    (venv / "bin/other").write_text("a neighbour")
    for path in (tmp_path, *tmp_path.rglob("*")):
        path.chmod(0o755 if path.is_dir() or path.name.startswith("acme") else 0o644)
    box = open_sandbox(LIMITS, readonly=[site], sites=[site])
    assert isinstance(box, LayeredSandbox)
    code = """
        import os, shutil, subprocess
        done = subprocess.run(["acme-bin", "linted"], capture_output=True, text=True)
        report([done.stdout.strip(), shutil.which("acme-script"), os.path.exists(sys.argv[1] + "/acme-script"),
                os.path.exists(sys.argv[1] + "/other")])
    """
    try:
        files = {"main.py": (REPORT + textwrap.dedent(code)).encode()}
        result = box.run(RunRequest(script="main.py", args=(str(venv / "bin"),), files=files, limits=LIMITS,
                                    python_path=(str(site),)))
        assert result.exit_code == 0, result.stderr.decode(errors="replace")
        assert (result.result or b"").decode() == "['linted', None, False, False]"
    finally:
        box.close()


def test_a_readonly_path_must_exist() -> None:
    from gate.errors import BadInput

    with pytest.raises(BadInput, match="read-only sandbox path"):
        open_sandbox(LIMITS, readonly=["relative/path"])


@needs_root
def test_system_v_shared_memory_dies_with_its_run(sandbox: LayeredSandbox) -> None:
    # A segment made by one run (world-readable, never removed) neither reaches the next run nor stays.
    shared = canaries.shared_memory(sandbox)
    assert (shared.blocked, shared.tried) == (True, True), shared


@needs_root
def test_a_shared_tree_is_staged_once_and_no_run_changes_it_for_the_next(sandbox: LayeredSandbox,
                                                                         tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    code = """
        import pkg.calc
        before = pkg.calc.add(2, 3)
        open("pkg/calc.py", "w").write("def add(a, b):\\n    return 42\\n")
        os.makedirs("pkg/__pycache__", exist_ok=True)
        open("pkg/__pycache__/calc.cpython-311.pyc", "wb").write(b"not bytecode")
        open("pkg/new.py", "w").write("")
        report(before)
    """
    assert [run(sandbox, code, tree=tree) for _ in range(3)] == ["5", "5", "5"]
    assert (tree / "pkg" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert sorted(p.name for p in (tree / "pkg").iterdir()) == ["calc.py"]
    assert sandbox.leftovers() == []


def test_bytecode_and_native_files_beside_the_source_never_run(sandbox: LayeredSandbox, tmp_path: Path) -> None:
    # An unchecked-hash .pyc committed next to a clean calc.py is what Python would load; a .pth, a .so.
    import py_compile

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    evil = tmp_path / "evil.py"
    evil.write_text("import subprocess\n\ndef add(a, b):\n    return 'the bytecode ran'\n")
    py_compile.compile(str(evil), str(tree / "__pycache__" / "calc.cpython-311.pyc"), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    for name in ("helper.cpython-311-x86_64-linux-gnu.so", "evil.pth", "lib.so.1", "x.PYD"):
        (tree / name).write_text("not here")
    code = """
        import calc
        report([calc.add(2, 3), sorted(os.listdir("."))])
    """
    assert run(sandbox, code, tree=tree) == "[5, ['calc.py', 'main.py']]"


@needs_root
def test_a_cache_inside_the_gates_working_directory_is_refused_before_any_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The working directory (maybe a checkout, a token in its .git/config) is covered in every run, and with
    # it whatever lies inside: an environment kept there would be missing from every run, its tests failing
    # for want of pytest. The gate says so at once (exit 2) instead.
    site = tmp_path / "cache" / "envs" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInput, match="no run may see") as raised:
        open_sandbox(LIMITS, readonly=[str(site)], sites=[str(site)])
    assert str(site) in str(raised.value) and "(the gate's working directory)" in str(raised.value)
    assert raised.value.exit_code == 2
    outside = tmp_path / "elsewhere"  # (from elsewhere it opens, and a run reads the environment)
    outside.mkdir()
    monkeypatch.chdir(outside)
    box = open_sandbox(LIMITS, readonly=[str(site)], sites=[str(site)])
    try:
        (site / "probe_module.py").write_text("VALUE = 7\n")
        code = b"import probe_module\nprint(probe_module.VALUE)"
        result = box.run(RunRequest(script="main.py", files={"main.py": code}, python_path=(str(site),),
                                    limits=LIMITS))
        assert (result.exit_code, result.stdout) == (0, b"7\n"), result.stderr
    finally:
        box.close()


def test_the_state_directory_refuses_a_planted_link(tmp_path: Path) -> None:
    # /run/lock is anyone's: a link there made the root gate chmod its target and create files in it. The
    # gate's state directory is refused when it is a link, or not root's; its target is left as it was.
    victim = tmp_path / "victim"
    victim.mkdir()
    victim.chmod(0o750)
    link = tmp_path / "state"
    link.symlink_to(victim)
    with pytest.raises(GateFailure, match="not a link"):
        memo.state_dir(str(link))
    assert stat.S_IMODE(victim.stat().st_mode) == 0o750 and list(victim.iterdir()) == []
    if ROOT:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
        with pytest.raises(GateFailure, match="not root"):
            memo.state_dir(str(theirs))
        loose = tmp_path / "loose"
        loose.mkdir(mode=0o777)
        os.close(memo.state_dir(str(loose)))
        assert stat.S_IMODE(loose.stat().st_mode) == 0o700


@needs_root
def test_a_planted_link_in_the_state_directory_is_not_followed(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (state / users.USER_PREFIX).symlink_to(victim)
    monkeypatch.setattr(memo, "STATE_DIR", str(state))
    with pytest.raises((GateFailure, OSError)):
        box = open_sandbox(LIMITS)
        try:
            box.run(RunRequest(script="main.py", files={"main.py": b""}, limits=LIMITS))
        finally:
            box.close()
    assert victim.read_text() == "untouched"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_dead_gates_head_export_is_removed_by_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from gate.sandbox import stage

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(stage, "_MEMORY", str(tmp_path))  # (where exports go when the machine has memory)
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    left = tmp_path / f"gate-head-{dead.pid}-abc"
    (left / "pkg").mkdir(parents=True)
    (left / "pkg" / "calc.py").write_text("")
    (left / "pkg").chmod(0o500)
    alive = tmp_path / f"gate-head-{os.getpid()}-live"
    alive.mkdir()
    planted = tmp_path / f"gate-head-{dead.pid}-link"
    planted.symlink_to(alive)
    made = stage.new_export()
    assert made.name.startswith(f"gate-head-{os.getpid()}-")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, planted.name, made.name])


@needs_root
@pytest.mark.parametrize("backend", ["zygote", "fresh-interpreter"])
def test_without_overlayfs_each_run_gets_a_copy_of_the_tree(backend: str, tmp_path: Path) -> None:
    # A kernel without overlayfs: the tree is copied for each run instead, and still never changed for the next.

    from gate.sandbox import detect, registry

    full = detect.layers(prefer_zygote=backend == "zygote")
    layers = msgspec.structs.replace(full, overlay=False)
    box = LayeredSandbox(registry.BACKENDS[backend](layers), layers)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "calc.py").write_text("VALUE = 1\n")
    code = """
        import calc
        open("calc.py", "w").write("VALUE = 2\\n")
        report(calc.VALUE)
    """
    try:
        assert [run(box, code, tree=tree) for _ in range(2)] == ["1", "1"]
        assert box.leftovers() == []
    finally:
        box.close()
    assert (tree / "calc.py").read_text() == "VALUE = 1\n"
