"""Small real Python projects for the environment and suite tests, built from files these tests ship.

No network: a wheelhouse made in the test stands in for PyPI (pip runs with `--no-index --find-links`), its
wheels written here with the standard library, and each project builds with an in-tree PEP 517 backend
(`_backend/backend.py`, `requires = []`), so that pip needs nothing from an index to install it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from tests import session_support
from tests.git_support import Repo

# A PEP 517 backend in the project's own tree: a wheel of every top-level package and module beside
# pyproject.toml (or under src/), with the [project] table's name, version, dependencies, extras and scripts.
BACKEND = '''\
import base64, hashlib, os, tomllib, zipfile

def _meta():
    with open("pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    lines += [f"Requires-Dist: {r}" for r in project.get("dependencies", [])]
    for extra, reqs in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    return project, "\\n".join(lines) + "\\n"

def _files():
    root = "src" if os.path.isdir("src") else "."
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if entry.startswith(("_", ".")) or entry in ("tests", "setup.py"):
            continue
        if entry.endswith(".py"):
            yield entry, path
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            for parent, _, names in os.walk(path):
                for name in names:
                    if name.endswith(".py"):
                        full = os.path.join(parent, name)
                        yield os.path.relpath(full, root), full

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project, meta = _meta()
    name = project["name"].replace("-", "_")
    info = f"{name}-{project['version']}.dist-info"
    wheel = f"{name}-{project['version']}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as zf:
        items = [(arc, open(path, "rb").read()) for arc, path in _files()]
        wheel_meta = b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
        items += [(f"{info}/METADATA", meta.encode()), (f"{info}/WHEEL", wheel_meta)]
        if project.get("scripts"):
            lines = "".join(f"{name} = {entry}\\n" for name, entry in project["scripts"].items())
            items.append((f"{info}/entry_points.txt", f"[console_scripts]\\n{lines}".encode()))
        for arc, data in items:
            zf.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{arc},sha256={digest},{len(data)}")
        records.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\\n".join(records) + "\\n")
    return wheel
'''


def pyproject(name: str, dependencies: list[str] = (), extras: dict[str, list[str]] | None = None,  # type: ignore[assignment]
              extra: str = "") -> str:
    """A pyproject.toml built by the in-tree backend."""
    deps = ", ".join(f'"{d}"' for d in dependencies)
    text = (f'[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["_backend"]\n\n'
            f'[project]\nname = "{name}"\nversion = "1.0"\ndependencies = [{deps}]\n')
    if extras:
        text += "\n[project.optional-dependencies]\n"
        text += "".join(f'{k} = [{", ".join(repr(r).replace(chr(39), chr(34)) for r in v)}]\n'
                        for k, v in extras.items())
    return text + extra


def write_wheel(folder: Path, name: str, files: dict[str, str], requires: tuple[str, ...] = (),
                version: str = "1.0", entry_points: str = "") -> Path:
    """A pure-Python wheel of `files` (archive name -> text), as PyPI would serve it; `entry_points` is its
    entry_points.txt (a pytest plugin's `[pytest11]`)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    items = {**{arc: text.encode(errors="surrogateescape") for arc, text in files.items()},
             f"{info}/METADATA": meta.encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             **({f"{info}/entry_points.txt": entry_points.encode()} if entry_points else {})}
    records = []
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for arc, data in items.items():
            zf.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{arc},sha256={digest},{len(data)}")
        records.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return path


# A stand-in for text-unidecode, the one dependency of python-slugify.
UNIDECODE = {"text_unidecode/__init__.py": (
    "_TABLE = {'é': 'e', 'è': 'e', 'à': 'a', 'ü': 'u', 'ö': 'o', 'ç': 'c', 'ñ': 'n'}\n\n\n"
    "def unidecode(text):\n    return ''.join(_TABLE.get(ch, ch) for ch in text)\n")}
SLUGIFY = (
    "import re\n\nfrom text_unidecode import unidecode\n\n\n"
    "def slugify(text):\n"
    "    text = unidecode(text).lower()\n"
    "    return re.sub(r'[^a-z0-9]+', '-', text).strip('-')\n")


# A command-line tool as many are packaged: a console script, and a .pth file that puts a folder of its own on
# the import path (as an editable install or an old namespace package does).
ACME_CLI = {
    "acme_cli.py": ("import sys\n\nimport acme_plugins\n\n\n"
                    "def main():\n    print(acme_plugins.greet(sys.argv[1]))\n    return 0\n"),
    "acme_cli.pth": "acme_cli_plugins\n",
    "acme_cli_plugins/acme_plugins.py": "def greet(name):\n    return f'hello {name}'\n",
}


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The local index: text-unidecode, a test-only helper `checkhelp` for the [test] extra, and acme-cli."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    write_wheel(folder, "text-unidecode", UNIDECODE)
    write_wheel(folder, "checkhelp", {"checkhelp.py": "def same(a, b):\n    return a == b\n"})
    write_wheel(folder, "acme-cli", ACME_CLI, entry_points="[console_scripts]\nacme = acme_cli:main\n")
    return folder


@pytest.fixture
def offline_pip(wheelhouse: Path, monkeypatch: pytest.MonkeyPatch, gate_cache: Path) -> Path:
    """pip sees only the wheelhouse: no index, no configuration file of the machine's."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheelhouse))
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    return wheelhouse


@pytest.fixture(scope="session")
def gate_cache_root() -> Path:
    # Where a user's cache would be: outside the run's root, which binds it read-only. One for the whole test
    # session, its workers included (the gate's own locks keep two builds of an entry apart, as on a runner).
    folder = session_support.directory() / "gate-cache"
    folder.mkdir(mode=0o755, exist_ok=True)
    return folder


@pytest.fixture
def gate_cache(gate_cache_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The gate's cache for this test session (environments are shared between the tests that declare the
    same dependencies, as between PRs)."""
    monkeypatch.setenv("GATE_CACHE_DIR", str(gate_cache_root))
    return gate_cache_root


def project_repo(root: Path, files: dict[str, str]) -> Repo:
    """A repository whose base commit holds `files` plus the in-tree backend, on branch `bot` afterwards."""
    repo = Repo(root)
    repo.commit("base", {"_backend/backend.py": BACKEND, **files})
    repo.git("checkout", "-q", "-b", "bot")
    return repo


def wheel_of_installed(folder: Path, name: str) -> Path:
    """A wheel of the distribution `name` as installed for this interpreter (pytest and what it needs, for a
    project whose test extra brings its own pytest; setuptools, with the entry points its commands are), without
    the network."""
    from importlib import metadata

    dist = metadata.distribution(name)
    files = {}
    for file in dist.files or ():
        if ".." in file.parts or "__pycache__" in file.parts or file.parts[0].endswith(".dist-info"):
            continue
        origin = Path(str(dist.locate_file(file)))
        if origin.is_file():
            files[file.as_posix()] = origin.read_bytes().decode("utf-8", "surrogateescape")  # (binaries too)
    requires = tuple(r for r in dist.requires or () if "extra ==" not in r)
    return write_wheel(folder, dist.metadata["Name"], files, requires, dist.version,
                       dist.read_text("entry_points.txt") or "")
