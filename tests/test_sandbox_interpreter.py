"""The interpreter a run names and starts (gate/sandbox/interpreter.py): `sys.executable` and `python` on its
PATH start with the run's own import path (the tree, an environment's site-packages) and `site`'s builtins,
and nothing of the tree (a `sitecustomize.py`, a `usercustomize.py`, a `.pth` file, PYTHONSTARTUP) takes part in
that start. On both backends, and without the mount namespace (each run's interpreter beside its directory)."""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from gate.sandbox import detect, registry
from gate.sandbox.base import Limits, RunRequest, RunResult
from gate.sandbox.canaries import REPORT
from gate.sandbox.runner import LayeredSandbox
from tests import session_support

LIMITS = Limits(wall_s=30.0, cpu_s=20.0)
ROOT = os.geteuid() == 0
# What a head plants so that its code would run when any interpreter of the run starts: each prints FORGED.
PLANTED = {
    "sitecustomize.py": "print('FORGED by sitecustomize')\n",
    "usercustomize.py": "print('FORGED by usercustomize')\n",
    "forge.pth": "import sys; print('FORGED by a .pth')\n",
    "pkg/forge.pth": "import sys; print('FORGED by a .pth')\n",
    # Named like the gate's own start-up module: found first where a test puts the tree on PYTHONPATH.
    "_gate_run.py": "print('FORGED by a module named like the gate start-up')\n",
}


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    """A tree under test (a package with a `__main__`, and what a head plants), and an environment's
    site-packages (a module, and what a package could plant there), where a user's cache would be."""
    place = Path(tempfile.mkdtemp(dir=session_support.directory()))
    files = {
        "tree/pkg/__init__.py": "from helper import twice\n\n\ndef answer():\n    return twice(21)\n",
        "tree/pkg/__main__.py": "import sys\nfrom pkg import answer\nprint(answer())\nsys.exit(3)\n",
        **{f"tree/{name}": text for name, text in PLANTED.items()},
        "site-packages/helper.py": "def twice(n):\n    return 2 * n\n",
        "site-packages/sitecustomize.py": "print('FORGED by sitecustomize')\n",
    }
    for name, text in files.items():
        (place / name).parent.mkdir(parents=True, exist_ok=True)
        (place / name).write_text(text)
    for path in (place, *place.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield place
    shutil.rmtree(place)


@pytest.fixture(scope="module", params=["zygote", "fresh-interpreter", "no mountns"])
def box(request: pytest.FixtureRequest, tree: Path) -> Iterator[LayeredSandbox]:
    """Every layer here on each backend, and the zygote without a mount namespace; the environment's
    site-packages bound read-only, as the gate binds a repository's."""
    full = detect.layers(prefer_zygote=request.param != "fresh-interpreter")
    layers = msgspec.structs.replace(full, root=detect.within_none([*full.root, str(tree / "site-packages")]))
    if request.param == "no mountns":
        layers = msgspec.structs.replace(full, on=tuple(name for name in full.on if name != "mountns"), root=(),
                                         hide=(), overlay=False)
    sandbox = LayeredSandbox(registry.BACKENDS["fresh-interpreter" if request.param == "fresh-interpreter"
                                               else "zygote"](layers), layers)
    try:
        yield sandbox
    finally:
        sandbox.close()


def run(box: LayeredSandbox, tree: Path, code: str) -> tuple[RunResult, dict[str, Any]]:
    """Run `code` in the tree, with `src`-like and environment roots, as a suite's run is; what it reported."""
    files = {"main.py": (REPORT + textwrap.dedent(code)).encode()}
    result = box.run(RunRequest(script="main.py", files=files, tree=tree / "tree", limits=LIMITS,
                                python_path=("lib", str(tree / "site-packages"))))
    found: dict[str, Any] = ast.literal_eval((result.result or b"{}").decode())
    return result, found


def test_a_child_interpreter_has_the_runs_import_path_and_imports_the_tree(box: LayeredSandbox,
                                                                           tree: Path) -> None:
    result, found = run(box, tree, """
        import shutil, subprocess, sys
        child = subprocess.run([sys.executable, "-c", "import sys; print(sys.path)"], capture_output=True,
                               text=True)
        module = subprocess.run([sys.executable, "-m", "pkg"], capture_output=True, text=True)
        bare = subprocess.run([sys.executable, "-c", "import sys; print(sys.path)"], env={}, capture_output=True,
                              text=True)
        by_name = subprocess.run(["python3", "-m", "pkg"], capture_output=True, text=True)
        report(repr({"executable": sys.executable, "python": shutil.which("python"), "own": sys.path,
                     "child": eval(child.stdout), "bare": eval(bare.stdout),
                     "module": (module.returncode, module.stdout, module.stderr),
                     "by name": (by_name.returncode, by_name.stdout, by_name.stderr)}))
    """)
    assert result.exit_code == 0, result.stderr.decode()
    assert found["python"] == found["executable"] and str(found["executable"]).endswith("/bin/python")
    assert found["child"] == ["", *found["own"]]  # (-c puts "" first, as `python script.py` puts its folder)
    assert found["bare"] == found["child"]  # a test's own environment (`env={}`) changes nothing
    assert str(tree / "site-packages") in found["own"]
    assert found["module"] == found["by name"] == (3, "42\n", "")


def test_sites_builtins_exist_in_the_run_and_in_the_interpreters_it_starts(box: LayeredSandbox,
                                                                           tree: Path) -> None:
    result, found = run(box, tree, """
        import builtins, subprocess, sys
        names = ("exit", "quit", "help", "copyright", "credits", "license")
        child = subprocess.run([sys.executable, "-c", "quit(4)"])
        report(repr({"own": [name for name in names if hasattr(builtins, name)], "child": child.returncode}))
        exit(2)
    """)
    assert result.exit_code == 2, result.stderr.decode()
    assert found == {"own": ["exit", "quit", "help", "copyright", "credits", "license"], "child": 4}


def test_nothing_of_the_tree_or_the_environment_runs_as_a_child_starts(box: LayeredSandbox, tree: Path) -> None:
    result, found = run(box, tree, """
        import os, subprocess, sys
        startup = os.path.join(os.getcwd(), "sitecustomize.py")  # any file: it must not run
        said = {}
        for name, argv, env in [
            ("plain", [sys.executable, "-c", "print('ran')"], None),
            ("tree on PYTHONPATH", [sys.executable, "-c", "print('ran')"],
             {**os.environ, "PYTHONPATH": os.getcwd()}),
            ("interactive", [sys.executable, "-i"], {**os.environ, "PYTHONSTARTUP": startup}),
            ("module", [sys.executable, "-m", "pkg"], None),
        ]:
            done = subprocess.run(argv, env=env, input="print('ran')\\n", capture_output=True, text=True)
            said[name] = done.stdout + done.stderr
        report(repr(said))
    """)
    assert result.exit_code == 0, result.stderr.decode()
    assert not [name for name, output in found.items() if "FORGED" in str(output)], found
    assert "ran" in str(found["plain"]) and "42" in str(found["module"])


def test_the_child_takes_pythonpath_first_and_site_flags_as_ci_does(box: LayeredSandbox, tree: Path) -> None:
    result, found = run(box, tree, """
        import os, subprocess, sys
        show = "import sys; print(sys.path)"
        said = {}
        for name, flags, env in [("-S", ["-S"], None), ("-I", ["-I"], None),
                                 ("PYTHONPATH", [], {**os.environ, "PYTHONPATH": "/nowhere"})]:
            done = subprocess.run([sys.executable, *flags, "-c", show], env=env, capture_output=True, text=True)
            said[name] = eval(done.stdout)
        report(repr({**said, "own": sys.path}))
    """)
    assert result.exit_code == 0, result.stderr.decode()
    own = found["own"]
    # The run's path: the tree's `lib`, the working directory, the standard library, the environment.
    assert own[-1] == str(tree / "site-packages") and own[1] + "/lib" == own[0]
    assert found["-S"] == ["", *own[2:-1]]  # no site: the standard library only, as in CI
    assert found["-I"] == own  # isolated: no "" first, the run's path all the same
    assert found["PYTHONPATH"] == ["", "/nowhere", *own]


@pytest.mark.skipif(not ROOT, reason="needs root: the run's interpreter is root's only with a uid switch")
def test_a_run_cannot_change_how_its_interpreter_starts(box: LayeredSandbox, tree: Path) -> None:
    result, found = run(box, tree, """
        import os, sys
        home = os.path.dirname(os.path.dirname(sys.executable))
        changed = []
        for folder, _, names in os.walk(home, followlinks=True):
            for name in names:
                try:
                    with open(os.path.join(folder, name), "a") as file:
                        file.write("import sys; print('FORGED')\\n")
                    changed.append(name)
                except OSError:
                    pass
            try:
                open(os.path.join(folder, "zz.pth"), "w").write("import sys; print('FORGED')\\n")
                changed.append(os.path.join(folder, "zz.pth"))
            except OSError:
                pass
        report(repr({"changed": changed}))
    """)
    assert result.exit_code == 0, result.stderr.decode()
    assert found == {"changed": []}
    assert box.leftovers() == []
