"""What a run has that the project's CI has (docs/sandbox.md: "The interpreter a run starts", "The environment's
`.pth` files", "Commands", "The run's user", "System data"): a user (HOME, USER, LOGNAME, a passwd and group
entry), the console scripts of the environment and of the project's build on PATH and beside `sys.executable`,
the environment's `.pth` files processed the same way in the run and in the interpreters it starts,
multiprocessing's children started with `site` and the run's path (from a program and from the gate's harness),
the shell and `ctypes.util.find_library`. Each on both backends and without the mount namespace (as root, and
in the shape a run without root has when the tests run as another user), with what a head could plant to take
part (a `.pth`, a `sitecustomize`, a `usercustomize` or a module of the tree's or the layer's, a script of the
tree's) shown not to run: every run here fails on a FORGED line in its stderr."""

from __future__ import annotations

import ast
import os
import pwd
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from gate.sandbox import detect, registry, scripts, tree
from gate.sandbox.base import Limits, RunRequest, RunResult
from gate.sandbox.canaries import REPORT
from gate.sandbox.runner import LayeredSandbox
from tests import session_support

LIMITS = Limits(wall_s=60.0, cpu_s=30.0)
FORGE = "import sys; print('FORGED by', __name__ if '__name__' in dir() else 'a .pth', file=sys.stderr)\n"
ENTRY_POINTS = """\
[console_scripts]
acme-tool = acme_tool.cli:main
python = acme_tool.cli:main
bad name = acme_tool.cli:main
injected = acme_tool.cli:main; import os
[gui_scripts]
acme-gui = acme_tool.cli:Gui.run [extra]
[pytest11]
acme = acme_tool.plugin
"""
VENV_SITE = f"venv/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
# The repository's environment (a site directory), the project's build (an absolute root that is not one) and
# the tree: what each declares or plants.
FILES = {
    "env/acme_tool-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: acme-tool\nVersion: 1.0\n",
    "env/acme_tool-1.0.dist-info/entry_points.txt": ENTRY_POINTS,
    "env/acme_tool/__init__.py": "",
    "env/acme_tool/cli.py": (
        "import os, sys\n\n\n"
        "def main():\n"
        "    import pkg, acme_extra\n"
        "    print(os.path.basename(sys.argv[0]), sys.argv[1:], pkg.NAME, acme_extra.NAME, sys.executable)\n"
        "    return 3\n\n\n"
        "class Gui:\n    @staticmethod\n    def run():\n        print('gui')\n"),
    # An editable install's folder line, and an old namespace package's nspkg line (which reads `sitedir` from
    # site's own frame), and a line importing a module the tree and the layer have too.
    "env/acme_paths.pth": "acme_src\nimport acme_hook\n",
    "env/acme_src/acme_extra.py": "NAME = 'extra, from the environment'\n",
    "env/acme_hook.py": "import os\nos.environ['ACME_HOOKS'] = os.environ.get('ACME_HOOKS', '') + 'env;'\n",
    "env/acme.ns-1.0-nspkg.pth": (
        "import sys, types, os;p = os.path.join(sys._getframe(1).f_locals['sitedir'], *('acme_ns_parts',));"
        "m = sys.modules.setdefault('acme_ns', types.ModuleType('acme_ns'));"
        "mp = (m or []) and m.__dict__.setdefault('__path__',[]);(p not in mp) and mp.append(p)\n"),
    "env/acme_ns_parts/tool.py": "NAME = 'acme_ns.tool'\n",
    "layer/proj-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: proj\nVersion: 1.0\n",
    # (and a script named like the environment's program: the environment's stays)
    "layer/proj-1.0.dist-info/entry_points.txt": "[console_scripts]\nproj = pkg.cli:main\nacme-bin = pkg.cli:main\n",
    "layer/layer_forge.pth": FORGE,
    "layer/acme_hook.py": FORGE,
    "tree/pkg/__init__.py": "NAME = 'pkg, from the tree'\n",
    "tree/pkg/cli.py": "import sys\n\n\ndef main():\n    print('proj', sys.argv[1:])\n    return 4\n",
    "tree/pkg/work.py": ("def stop(code):\n    exit(code)\n\n\n"
                         "def extra(_):\n    import acme_extra\n    return acme_extra.NAME\n"),
    "tree/acme_hook.py": FORGE,
    "tree/forge.pth": FORGE,
    "tree/sitecustomize.py": FORGE,
    "tree/usercustomize.py": FORGE,
    "layer/sitecustomize.py": FORGE,
    "tree/evil-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
    "tree/evil-1.0.dist-info/entry_points.txt": "[console_scripts]\nevil = pkg.cli:main\n",
    # A second site directory, a virtual environment's, whose distribution installed programs into its bin (as
    # ruff's wheel does): a binary, a `#!` script naming the environment's interpreter, a link, an interpreter.
    f"{VENV_SITE}/acme_bin-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: acme-bin\nVersion: 1.0\n",
    f"{VENV_SITE}/acme_bin-1.0.dist-info/RECORD": "".join(f"../../../bin/{name},,\n" for name in (
        "acme-bin", "acme-script", "acme-link", "python", "../escape")),
    "venv/bin/acme-script": "#!/nowhere/bin/python\nprint('FORGED')\n",
}


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(dir=session_support.directory()))
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.copy(shutil.which("echo") or "/bin/echo", folder / "venv/bin/acme-bin")
    (folder / "venv/bin/acme-link").symlink_to(folder / "venv/bin/acme-bin")
    for name in ("acme-bin", "acme-script"):
        (folder / "venv/bin" / name).chmod(0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture(scope="module", params=["zygote", "fresh-interpreter", "no mountns"])
def box(request: pytest.FixtureRequest, place: Path) -> Iterator[LayeredSandbox]:
    """Every layer here on each backend, and the zygote without a mount namespace; the environment and the layer
    bound read-only, the environment a site directory, as the gate opens its sandbox."""
    full = detect.layers(prefer_zygote=request.param != "fresh-interpreter")
    sites = (str(place / "env"), str(place / VENV_SITE))
    # (with the environment's programs, as open_sandbox binds them)
    root = [*full.root, str(place / "layer"), *sites, *scripts.programs(sites).values()]
    layers = msgspec.structs.replace(full, root=detect.within_none(root), sites=sites)
    if request.param == "no mountns":
        layers = msgspec.structs.replace(layers, on=tuple(name for name in full.on if name != "mountns"), root=(),
                                         hide=(), overlay=False)
    sandbox = LayeredSandbox(registry.BACKENDS["fresh-interpreter" if request.param == "fresh-interpreter"
                                               else "zygote"](layers), layers)
    try:
        yield sandbox
    finally:
        sandbox.close()


def run(box: LayeredSandbox, place: Path, code: str) -> tuple[RunResult, dict[str, Any]]:
    """Run `code` in the tree with the layer and the environment on its path, as a suite's run has them."""
    files = {"main.py": (REPORT + textwrap.dedent(code)).encode()}
    result = box.run(RunRequest(script="main.py", files=files, tree=place / "tree", limits=LIMITS,
                                python_path=(str(place / "layer"), str(place / "env"), str(place / VENV_SITE))))
    assert result.exit_code == 0, result.stderr.decode()
    # Nothing the head planted ran, in the run or in a child whose stderr is the run's (multiprocessing's).
    assert b"FORGED" not in result.stderr, result.stderr.decode()
    found: dict[str, Any] = ast.literal_eval((result.result or b"{}").decode())
    return result, found


def test_a_run_has_a_home_a_user_and_its_entry_as_in_ci(box: LayeredSandbox, place: Path) -> None:
    _, found = run(box, place, """
        import getpass, grp, os, pathlib, pwd, stat, subprocess, sys
        home = pathlib.Path.home()
        (home / ".acme").mkdir()
        (home / ".acme" / "config").write_text("x")
        entry = pwd.getpwuid(os.getuid())
        child = subprocess.run([sys.executable, "-c", "import getpass, pathlib; print(pathlib.Path.home(), "
                                "getpass.getuser())"], capture_output=True, text=True)
        # A child with an environment of its own: getpass falls back on the passwd entry of its uid.
        bare = subprocess.run([sys.executable, "-c", "import getpass; print(getpass.getuser())"], env={},
                              capture_output=True, text=True)
        try:
            open("/etc/passwd", "a").close()
            changed = True
        except OSError:
            changed = False
        info = home.stat()
        report(repr({"home": str(home), "env": os.environ["HOME"], "tilde": os.path.expanduser("~"),
                     "user": getpass.getuser(), "logname": os.environ["LOGNAME"], "entry": entry.pw_name,
                     "entry home": entry.pw_dir, "group": grp.getgrgid(os.getgid()).gr_name,
                     "own": (info.st_uid == os.getuid(), stat.S_IMODE(info.st_mode)),
                     "child": child.stdout.split(), "bare": bare.stdout.strip(),
                     "passwd": open("/etc/passwd").read().splitlines(), "changed": changed, "uid": os.getuid()}))
    """)
    assert found["home"] == found["env"] == found["tilde"]
    assert found["user"] == found["logname"] == found["entry"]
    assert found["own"] == (True, 0o700)
    assert found["child"] == [found["home"], found["user"]] and found["bare"] == found["user"]
    if box.layers.mountns:  # the gate's databases: root and the run, nothing of the host's
        assert (found["home"], found["user"], found["entry home"]) == ("/tmp/home", "gate", "/tmp/home")
        assert [line.split(":")[0] for line in found["passwd"]] == ["root", "gate"] and found["group"] == "gate"
        assert not found["changed"]
    else:  # the host's: its uid's own entry, and a HOME of its own beside its directory
        assert found["user"] == pwd.getpwuid(found["uid"]).pw_name
        assert found["home"].endswith(".home") and not os.path.exists(found["home"])
    # Nothing of one run's HOME is the next run's.
    _, again = run(box, place, """
        import pathlib
        report(repr({"left": sorted(p.name for p in pathlib.Path.home().iterdir())}))
    """)
    assert again == {"left": []}
    assert box.leftovers() == []


def test_console_scripts_of_the_environment_and_the_build_run_by_name_and_beside_sys_executable(
        box: LayeredSandbox, place: Path) -> None:
    _, found = run(box, place, """
        import os, shutil, subprocess, sys
        said = {}
        bin = os.path.dirname(sys.executable)
        for name, argv in [("acme-tool", ["acme-tool", "a"]), ("beside", [os.path.join(bin, "acme-tool"), "b"]),
                           ("proj", ["proj", "c"]), ("gui", ["acme-gui"]),
                           ("bare env", [os.path.join(bin, "acme-tool")]),
                           ("program", ["acme-bin", "from", "the", "environment"])]:
            done = subprocess.run(argv, capture_output=True, text=True, env={} if name == "bare env" else None)
            said[name] = (done.returncode, done.stdout.strip(), done.stderr.strip()[-300:])
        report(repr({**said, "bin": sorted(os.listdir(bin)), "python": shutil.which("python"),
                     "executable": sys.executable, "evil": shutil.which("evil")}))
    """)
    executable = found["executable"]
    assert found["acme-tool"] == (3, f"acme-tool ['a'] pkg, from the tree extra, from the environment {executable}",
                                  "")
    assert found["beside"][:2] == (3, f"acme-tool ['b'] pkg, from the tree extra, from the environment {executable}")
    assert found["bare env"][0] == 3  # started by its path's interpreter whatever the test's environment
    assert found["proj"] == (4, "proj ['c']", "")
    assert found["gui"] == (0, "gui", "")
    assert found["program"] == (0, "from the environment", "")
    # Only well-formed names of the environment's and the layer's, and the environment's programs (neither a `#!`
    # script, which names an interpreter the run has not, nor a link, nor a path outside its bin); the
    # interpreter's names stay the interpreter's.
    assert found["bin"] == ["acme-bin", "acme-gui", "acme-tool", "proj", "python", "python3", "python3.11"]
    assert found["python"] == executable and found["evil"] is None


def test_the_environments_pth_files_are_processed_in_the_run_and_the_interpreters_it_starts(
        box: LayeredSandbox, place: Path) -> None:
    result, found = run(box, place, """
        import os, subprocess, sys
        show = ("import os, sys, acme_extra, acme_ns.tool, acme_hook; "
                "print(repr((sys.path, acme_hook.__file__, os.environ.get('ACME_HOOKS'))))")
        child = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True)
        import acme_extra, acme_ns.tool, acme_hook
        report(repr({"own": sys.path, "hook": acme_hook.__file__, "hooks": os.environ.get("ACME_HOOKS"),
                     "ns": acme_ns.tool.NAME, "child": child.stdout, "child err": child.stderr}))
    """)
    env, layer = str(place / "env"), str(place / "layer")
    own = found["own"]
    # The layer before the environment, whose .pth folder comes right after it, as site adds it.
    assert own[own.index(layer) + 1:] == [env, f"{env}/acme_src", str(place / VENV_SITE)]
    assert found["hook"] == f"{env}/acme_hook.py" and found["hooks"] == "env;" and found["ns"] == "acme_ns.tool"
    path, hook, hooks = ast.literal_eval(found["child"])
    # The child inherits the run's ACME_HOOKS and runs the environment's line once more itself.
    assert path == ["", *own] and hook == found["hook"] and hooks == "env;env;", found["child err"]
    # Neither the tree's nor the layer's .pth file nor module ran, in either process.
    assert "FORGED" not in result.stderr.decode() + found["child err"]


def test_multiprocessing_children_start_with_site_as_in_ci(box: LayeredSandbox, place: Path) -> None:
    _, found = run(box, place, """
        import multiprocessing, subprocess, sys
        from pkg.work import extra, stop
        if __name__ == "__main__":
            said = {"flags": subprocess._args_from_interpreter_flags()}
            context = multiprocessing.get_context("spawn")
            process = context.Process(target=stop, args=(5,))
            process.start()
            process.join()
            with context.Pool(1) as pool:
                said["pool"] = pool.map(extra, [0])
            said["spawn"] = process.exitcode
            report(repr(said))
    """)
    assert found == {"flags": ["-B"], "pool": ["extra, from the environment"], "spawn": 5}


def test_a_pool_started_from_the_gates_harness_runs_as_under_python_m_pytest(box: LayeredSandbox,
                                                                             place: Path) -> None:
    # A suite's tests run in a process of the gate's harness, whose main module has no file: a spawned worker
    # must not look for one (it would die, and the pool would wait for it until the test's time is out).
    main = REPORT + textwrap.dedent("""
        import multiprocessing
        import _gate_tree
        _gate_tree.enter()
        from pkg.work import extra
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            report(repr({"pool": pool.map(extra, [0])}))
    """)
    harness = {"_gate_probe.py": main.encode(), "_gate_tree.py": Path(tree.__file__).read_bytes()}
    result = box.run(RunRequest(script="_gate_probe.py", harness=harness, tree=place / "tree",
                                limits=Limits(wall_s=20.0, cpu_s=20.0),
                                python_path=(str(place / "layer"), str(place / "env"), str(place / VENV_SITE))))
    assert (result.exit_code, result.timed_out, b"FORGED" in result.stderr) == (0, False, False), result.stderr
    assert ast.literal_eval((result.result or b"").decode()) == {"pool": ["extra, from the environment"]}


def test_the_forkserver_starts_with_site_where_a_run_may_make_a_unix_socket(place: Path) -> None:
    # The seccomp layer refuses every socket() (a run's abstract Unix socket would reach the other runs of its
    # zygote's shared network namespace): without it, the forkserver's children have `exit` and the
    # environment's .pth folders too.
    full = detect.layers(prefer_zygote=True)
    layers = msgspec.structs.replace(full, on=tuple(name for name in full.on if name != "seccomp"),
                                     root=detect.within_none([*full.root, str(place / "env"), str(place / "layer")]),
                                     sites=(str(place / "env"),))
    box = LayeredSandbox(registry.BACKENDS["zygote"](layers), layers)
    try:
        _, found = run(box, place, """
            import multiprocessing
            from pkg.work import extra, stop
            if __name__ == "__main__":
                context = multiprocessing.get_context("forkserver")
                process = context.Process(target=stop, args=(6,))
                process.start()
                process.join()
                with context.Pool(1) as pool:
                    report(repr({"forkserver": process.exitcode, "pool": pool.map(extra, [0])}))
        """)
    finally:
        box.close()
    assert found == {"forkserver": 6, "pool": ["extra, from the environment"]}


def test_the_shell_and_find_library_work_as_in_ci(box: LayeredSandbox, place: Path) -> None:
    _, found = run(box, place, """
        import ctypes, ctypes.util, os, subprocess
        names = {name: ctypes.util.find_library(name) for name in ("c", "ssl", "ffi", "no-such-library")}
        report(repr({"names": names, "strlen": ctypes.CDLL(names["c"]).strlen(b"four"),
                     "shell": subprocess.run("echo $((6 * 7))", shell=True, capture_output=True, text=True).stdout,
                     "system": os.waitstatus_to_exitcode(os.system("exit 3"))}))
    """)
    names = found["names"]
    assert names["c"] == "libc.so.6" and names["no-such-library"] is None
    assert str(names["ssl"]).startswith("libssl.so") and str(names["ffi"]).startswith("libffi.so")
    assert (found["strlen"], found["shell"], found["system"]) == (4, "42\n", 3)


def test_the_console_scripts_are_what_pip_wrote_for_each_distribution_first_by_name(tmp_path: Path) -> None:
    """Read as importlib.metadata reads an environment's metadata folders (a `.dist-info` and an old `.egg-info`):
    a name two distributions declare is the first's by name as pip normalizes it, and a distribution whose
    `entry_points.txt` does not parse declares nothing."""
    from gate.sandbox import scripts

    declared = {
        "Zeta_Tool-2.0.dist-info": "[console_scripts]\nshared = zeta.cli:main\nzeta = zeta.cli:main\n",
        "alpha.tool-1.0-py3.11.egg-info": "# comment\n[console_scripts]\nshared = alpha.cli:main\n"
                                          "[gui_scripts]\nalpha-gui = alpha.gui:run\n",
        "broken-1.0.dist-info": "[console_scripts]\nbroken = broken.cli:main\nno equals sign here\n",
        "plain-1.0.dist-info": None,  # no entry_points.txt at all
    }
    for folder, text in declared.items():
        (tmp_path / folder).mkdir()
        if text is not None:
            (tmp_path / folder / "entry_points.txt").write_text(text)

    assert scripts.of([str(tmp_path), "relative/roots/are/the/trees"]) == {
        "shared": "alpha.cli:main", "zeta": "zeta.cli:main", "alpha-gui": "alpha.gui:run"}
