"""A release as .github/workflows/release.yml makes it: its version check, the sdist and the wheel built from
the tracked files (the wheel from the sdist, as `python -m build` does), checked by twine, carrying every file
of the package; and the wheel installed into a fresh virtual environment under /tmp, as a CI job or a quick
try does, running `gate --version`, `gate init` and, as root, `gate doctor` with every layer on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gate import __version__
from gate.commands.init import workflow
from tests.runner_support import ROOT, dependency_wheels

# One xdist worker for the module under `--dist loadgroup` (.ci/run): its distributions are built and installed
# once, not once on every worker.
pytestmark = pytest.mark.xdist_group("release")

RELEASE = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
BIN = Path(sys.executable).parent


def tracked(under: str = "") -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z", "--", *([under] if under else [])], cwd=ROOT,
                            capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0") if name]


def _step(job: str, starts: str) -> dict[str, str]:
    [step] = [s for s in RELEASE["jobs"][job]["steps"] if str(s.get("name", "")).startswith(starts)]
    return step  # type: ignore[no-any-return]


@pytest.mark.parametrize(("tag", "ok"), [(f"v{__version__}", True), ("v9.9.9", False), (__version__, False)])
def test_the_release_starts_only_from_a_tag_that_names_the_version_of_every_file(tmp_path: Path, tag: str,
                                                                                   ok: bool) -> None:
    """The workflow's own check, run on this tree: the tag, pyproject.toml and gate/__init__.py agree, and the
    release notes are CHANGELOG.md's section of that version."""
    for name in ("pyproject.toml", "gate/__init__.py", "CHANGELOG.md"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    step = _step("build", "Check that the tag")
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=tmp_path, capture_output=True,
                          text=True, env={"PATH": f"{BIN}:/usr/bin:/bin", "TAG": tag})
    assert (done.returncode == 0) is ok, done.stdout + done.stderr
    if ok:
        notes = (tmp_path / "notes" / "notes.md").read_text(encoding="utf-8")
        changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
        assert notes.strip() and f"## {__version__}\n{notes}" in changelog
    else:
        assert "::error::" in done.stdout


def test_only_the_pypi_job_holds_an_oidc_token_and_it_runs_nothing_of_the_repository() -> None:
    """Trusted publishing: the one job with `id-token: write` checks out nothing, publishes the files the build
    job checked, with the pinned publisher and no stored token; `contents: write` only where the release and
    the major tag are made, again without a checkout."""
    jobs = RELEASE["jobs"]
    assert RELEASE[True]["push"]["tags"] == ["v[0-9]+.[0-9]+.[0-9]+"]
    assert [name for name, job in jobs.items() if "id-token" in job["permissions"]] == ["pypi"]
    pypi = jobs["pypi"]
    assert pypi["permissions"] == {"id-token": "write"} and pypi["environment"]["name"] == "pypi"
    [publish] = [s for s in pypi["steps"] if str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish@")]
    assert "with" not in publish  # no password: the OIDC token is the credential
    assert jobs["github"]["permissions"] == {"contents": "write"}
    for name in ("pypi", "github"):
        assert not any(str(s.get("uses", "")).startswith("actions/checkout@") for s in jobs[name]["steps"])
    assert jobs["pypi"]["needs"] == "build" and jobs["github"]["needs"] == "pypi"
    moved = _step("github", "Move the major tag")["run"]
    assert 'major="${TAG%%.*}"' in moved  # v0.2.0 -> v0


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel of this tree's tracked files, built as the release workflow builds them (offline:
    without build isolation, from this environment's setuptools)."""
    root = tmp_path_factory.mktemp("release")
    source = root / "source"
    for name in tracked():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name, follow_symlinks=False)
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist"),
                           str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    [sdist] = (root / "dist").glob("*.tar.gz")
    [wheel] = (root / "dist").glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


SLOW = pytest.mark.slow  # the tests that build, install or run the distributions


@SLOW
def test_twine_accepts_both_distributions(dists: dict[str, Path]) -> None:
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(dists["sdist"]),
                           str(dists["wheel"])], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert dists["wheel"].name == f"error_budget_gate-{__version__}-py3-none-any.whl"


@SLOW
def test_both_distributions_carry_every_file_of_the_package(dists: dict[str, Path]) -> None:
    """Every tracked file under gate/ (templates, schemas, presets, agents, starter workflows, py.typed): a
    data file the package-data patterns miss would be missing for every user of the wheel."""
    package = set(tracked("gate"))
    assert {"gate/starter/gate.yml", "gate/policy/schema.json", "gate/py.typed"} <= package
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        assert package - set(wheel.namelist()) == set()
    with tarfile.open(dists["sdist"]) as sdist:
        inside = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert package - inside == set()
    assert {"LICENSE", "README.md", "pyproject.toml"} <= inside
    assert not any(name.startswith("tests/") for name in inside)  # a partial test suite would not run


@pytest.fixture(scope="module")
def installed(dists: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheel in a new virtual environment under /tmp, its dependencies from an offline index."""
    root = tmp_path_factory.mktemp("venv")
    assert root.is_relative_to("/tmp")
    wheels = dependency_wheels(root / "wheels")
    venv = root / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-index", "--find-links",
                           str(wheels[0].parent), str(dists["wheel"])], capture_output=True, text=True,
                          env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert done.returncode == 0, done.stderr
    yield venv
    shutil.rmtree(root, ignore_errors=True)


def _gate(venv: Path, *args: str, cwd: Path | str = "/") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "gate"), *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, timeout=600)


@SLOW
def test_the_installed_wheel_runs_its_version_and_init(installed: Path, tmp_path: Path) -> None:
    version = _gate(installed, "--version")
    assert version.returncode == 0 and version.stdout == f"gate {__version__}\n", version.stderr
    (tmp_path / "tests").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "calc"\nversion = "1.0"\n'
                                             '[project.optional-dependencies]\ntest = ["pytest"]\n')
    assert _gate(installed, "init", cwd=tmp_path).returncode == 0
    policy = (tmp_path / ".github" / "gate.yml").read_text(encoding="utf-8")
    assert policy.startswith("# yaml-language-server: $schema=") and "extras: [test]" in policy
    checked = _gate(installed, "policy", "check", str(tmp_path / ".github" / "gate.yml"), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # the schema and presets shipped
    assert _gate(installed, "init", "--workflow", cwd=tmp_path).returncode == 0
    for name in ("gate.yml", "gate-publish.yml"):
        assert (tmp_path / ".github" / "workflows" / name).read_text(encoding="utf-8") == workflow(name)


@SLOW
@pytest.mark.skipif(os.geteuid() != 0, reason="every layer needs root (the uid switch, the namespaces)")
def test_the_wheel_installed_under_tmp_gets_every_layer_and_gate_ci_would_run(installed: Path) -> None:
    """The mount namespace's probe covers /tmp in its own process: the seccomp binding installed under /tmp
    still imports for the seccomp probe, so `gate doctor` finds every layer `gate ci` requires."""
    done = _gate(installed, "doctor")
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ")}
    assert lines["seccomp"].split(None, 1)[1].startswith("on"), done.stdout
    assert "gate ci would run a PR's code here" in done.stdout, done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
