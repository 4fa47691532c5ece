"""What the base's declarations make part of the environment's build beyond the declaration files themselves
(gate/environment/declarations.py `named`): a change to any of it goes to a human as a dependency change, and
its text is in the environment's cache key. A bot that adds a requirement to a file `-r` includes, to the file
setuptools reads the project's dependencies from, or moves the build backend to a module of its own, changes
what the next environment build installs or runs outside the sandbox, as an edit of pyproject.toml does."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.environment.declarations import Named, is_declaration, named, what_changed
from gate.policy.model import Environment
from tests.projects import (  # noqa: F401
    SLUGIFY,
    gate_cache,
    gate_cache_root,
    offline_pip,
    project_repo,
    pyproject,
    wheelhouse,
)
from tests.test_environment import CASES, _score
from tests.test_environment_installers import WITH_UV, build, clean_environ, probe_wheels

SETUPTOOLS_DYNAMIC = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "probe-dyn"
version = "1.0"
dynamic = ["dependencies", "optional-dependencies"]

[tool.setuptools.dynamic]
dependencies = {file = ["requirements/base.in"]}
optional-dependencies.test = {file = "ci/test-deps.txt"}
"""


@pytest.mark.parametrize(("files", "spec", "expected"), [
    ({"pyproject.toml": SETUPTOOLS_DYNAMIC}, Environment(), {"requirements/base.in", "ci/test-deps.txt"}),
    ({"pyproject.toml": '[tool.hatch.metadata.hooks.requirements_txt]\nfiles = ["deps/run.txt"]\n'
                        '[tool.hatch.metadata.hooks.requirements_txt.optional-dependencies]\ntest = ["deps/t.txt"]\n'},
     Environment(), {"deps/run.txt", "deps/t.txt"}),
    ({"setup.cfg": "[options]\ninstall_requires = file: deps/a.txt, deps/b.txt\n"
                   "[options.extras_require]\ntest = file: deps/test.txt\n"},
     Environment(), {"deps/a.txt", "deps/b.txt", "deps/test.txt"}),
    # `-r` and `-c`, followed, each relative to the file that names it; a path leaving the tree is nothing.
    ({"requirements-dev.txt": "-r ci/base.txt\n--constraint=pins.txt  # pinned\n-r ../outside.txt\n",
      "ci/base.txt": "-r more/x.txt\nrequests\n"},
     Environment(requirements=("requirements-dev.txt",)),
     {"requirements-dev.txt", "ci/base.txt", "ci/more/x.txt", "pins.txt"}),
    ({"requirements.txt": "attrs\n"}, Environment(), {"requirements.txt"}),
], ids=["setuptools-dynamic", "hatch-requirements-txt", "setup-cfg-file", "includes", "root-requirements"])
def test_the_files_a_declaration_reads_its_requirements_from(files: dict[str, str], spec: Environment,
                                                              expected: set[str]) -> None:
    found = named(files.get, spec)

    assert found.files == expected
    for path in expected:
        assert is_declaration(path, spec, found)
    assert not is_declaration("src/pkg/module.py", spec, found)


@pytest.mark.parametrize(("build_system", "inside", "outside"), [
    ('requires = []\nbuild-backend = "backend"\nbackend-path = ["_build"]\n', "_build/backend.py", "src/x.py"),
    ('requires = []\nbuild-backend = "tools.backend:api"\nbackend-path = ["."]\n', "tools/backend.py", "pkg/x.py"),
    ('requires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n', "backend.py", "other.py"),
], ids=["folder", "root-package", "root-module"])
def test_an_in_tree_build_backend_is_part_of_the_declarations(build_system: str, inside: str,
                                                               outside: str) -> None:
    found = named({"pyproject.toml": "[build-system]\n" + build_system}.get, Environment())

    assert is_declaration(inside, Environment(), found)
    assert not is_declaration(outside, Environment(), found)


def test_a_local_project_a_requirements_file_installs_is_part_of_the_declarations() -> None:
    # Local paths are the installer's, relative to the folder it runs in (the tree's root), not to the file; with
    # their extras and markers left off; an archive is a file; `-f` names a folder of wheels.
    files = {"requirements/dev.txt": "-e ./tools/helper[test]\n./vendor/lib ; python_version > '3'\n"
                                     "./vendor/pkg-1.0.tar.gz\n--find-links ./wheels\n-e .\n"}
    spec = Environment(requirements=("requirements/dev.txt",))

    found = named(files.get, spec)

    assert found.folders == frozenset({"tools/helper", "vendor/lib", "vendor/pkg-1.0.tar.gz", "wheels"})
    for path in ("tools/helper/setup.py", "vendor/lib/pyproject.toml", "vendor/pkg-1.0.tar.gz", "wheels/x.whl"):
        assert is_declaration(path, spec, found), path
    assert not is_declaration("src/app.py", spec, found)  # (`.`, the project itself, is left out)


def test_a_change_to_the_build_backend_keys_is_named() -> None:
    old = "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\"_build\"]\n"

    said = what_changed("pyproject.toml", old, old.replace("_build", "_tools"))

    assert said == "edits pyproject.toml: [build-system] backend-path adds _tools and removes _build"
    assert what_changed("pyproject.toml", SETUPTOOLS_DYNAMIC,
                        SETUPTOOLS_DYNAMIC.replace('"ci/test-deps.txt"', '"ci/other.txt"')).startswith(
        "edits pyproject.toml: [tool.setuptools.dynamic] adds optional-dependencies")


def test_a_date_in_a_hooks_table_is_named_not_a_crash() -> None:
    old = "[tool.hatch.metadata.hooks.custom]\nx = 1\n"

    assert "since" in what_changed("pyproject.toml", old, old + "since = 2024-01-01\n")


def test_a_lone_percent_in_a_setup_cfg_a_pr_edits_is_a_change_not_a_crash() -> None:
    old = "[options]\npy_modules = calc\n"
    new = old + "tests_require =\n    evil @ https://example.com/e%20x.whl\n"

    # (setuptools cannot read that value either: the file's edit goes to a human as a whole)
    assert what_changed("setup.cfg", old, new) == "edits setup.cfg"


def test_named_joins() -> None:
    assert (Named(frozenset({"a"}), frozenset({"b"})) | Named(frozenset({"c"}))).holds("b/x.txt")


# ----- end to end: the review, and the cache key --------------------------------------------------------------

@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize(("change", "named_in_reason"), [
    ({"ci/base.txt": "text-unidecode\nrequests\n"}, "edits ci/base.txt: adds requests"),
    ({"requirements-dev.txt": "-r ci/base.txt\n-r ci/more.txt\n", "ci/more.txt": "requests\n"},
     "adds ci/more.txt"),
], ids=["included-file", "newly-included-file"])
def test_a_requirement_added_in_an_included_file_goes_to_a_human(tmp_path: Path, change: dict[str, str],
                                                                  named_in_reason: str) -> None:
    repo = project_repo(tmp_path / "repo", {
        "pyproject.toml": pyproject("slugish", []), "slugify.py": SLUGIFY,
        "requirements-dev.txt": "-r ci/base.txt\n", "ci/base.txt": "text-unidecode\n",
        ".github/gate.yml": "environment: {requirements: [requirements-dev.txt]}\n" + CASES})
    repo.commit("bot: a docstring (and a new dependency)", {**change, "slugify.py": '"""Slugs."""\n' + SLUGIFY})

    verdict = _score(repo)

    assert not verdict.accepted
    assert any(named_in_reason in reason and "a human must review" in reason
               for reason in verdict.blocked_reasons), verdict.blocked_reasons


@pytest.mark.skipif(not WITH_UV, reason="uv is not beside the gate's interpreter")
def test_bases_that_differ_only_in_an_included_file_do_not_share_an_environment(tmp_path: Path) -> None:
    wheels = probe_wheels(tmp_path / "wheels")
    environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1",
               "PIP_FIND_LINKS": str(wheels["probe-one-1.0"].parent)}
    spec = Environment(project=False, requirements=("requirements-dev.txt",))
    files = {"requirements-dev.txt": "-r ci/base.txt\n", "ci/base.txt": "probe-one\n"}
    cache = tmp_path / "cache"

    first = build(tmp_path / "one", [], environ, cache=cache, files=files, spec=spec)
    second = build(tmp_path / "two", [], environ, cache=cache, files={**files, "ci/base.txt": "probe-two\n"},
                   spec=spec)

    assert first.installed == ("probe-one==1.0",)
    assert second.installed == ("probe-two==1.0",) and second.key != first.key
