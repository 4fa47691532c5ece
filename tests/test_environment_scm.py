"""The version a build that reads it from git gives a commit, in the schemes the tree asks for
(gate/environment/scm.py): the one its own checkout builds, so that a test of the version's shape passes on the
head as on the base. Every expected version below is what setuptools-scm 10.3 (vcs-versioning 2.6) gave the same
commit of a real repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from gate.environment.scm import DEFAULT_SCHEMES, formatted, schemes
from gate.sources import gitcli
from gate.sources.gitrange import scm_version
from tests.git_support import Repo

SHA = "d5cbb72134ff00112233445566778899aabbccdd"


@pytest.mark.parametrize(("files", "expected"), [
    ({}, DEFAULT_SCHEMES),
    ({"pyproject.toml": '[tool.setuptools_scm]\nlocal_scheme = "no-local-version"\n'},
     ("guess-next-dev", "no-local-version")),
    ({"pyproject.toml": '[tool.setuptools_scm]\nversion_scheme = "post-release"\n'},
     ("post-release", "node-and-date")),
    # setup.py's literal `use_scm_version` over pyproject.toml's table, as setuptools-scm reads them.
    ({"pyproject.toml": '[tool.setuptools_scm]\nversion_scheme = "post-release"\nlocal_scheme = "dirty-tag"\n',
      "setup.py": "from setuptools import setup\nsetup(use_scm_version={'local_scheme': 'no-local-version'})\n"},
     ("post-release", "no-local-version")),
    ({"setup.py": "from setuptools import setup\nsetup(use_scm_version=True)\n"}, DEFAULT_SCHEMES),
    # prettytable's: Hatch's version source `vcs` with its raw options (setuptools-scm's table is not read then).
    ({"pyproject.toml": '[tool.hatch]\nversion.source = "vcs"\nversion.raw-options.local_scheme = "no-local-version"\n'
                        '[tool.setuptools_scm]\nversion_scheme = "post-release"\n'},
     ("guess-next-dev", "no-local-version")),
    ({"pyproject.toml": '[tool.hatch.version]\npath = "p/__init__.py"\nraw-options = {local_scheme = "dirty-tag"}\n'},
     DEFAULT_SCHEMES),
    # A scheme that is not a name (a list, a callable's path in a table) or a file that does not parse: the defaults.
    ({"pyproject.toml": '[tool.setuptools_scm]\nlocal_scheme = ["no-local-version"]\n'}, DEFAULT_SCHEMES),
    ({"pyproject.toml": '[tool.setuptools_scm\nlocal_scheme = "no-local-version"\n'}, DEFAULT_SCHEMES),
], ids=["none", "local", "version", "setup-py-over-table", "setup-py-true", "hatch-vcs", "hatch-not-vcs", "a-list",
        "bad-toml"])
def test_the_schemes_are_read_where_the_build_reads_them(files: dict[str, str], expected: tuple[str, str]) -> None:
    assert schemes(files.get) == expected


@pytest.mark.parametrize(("tag", "distance", "chosen", "expected"), [
    ("1.4.0", 0, DEFAULT_SCHEMES, "1.4.0"),
    ("1.4.0", 2, DEFAULT_SCHEMES, "1.4.1.dev2+gd5cbb7213"),
    ("1.4.0", 2, ("guess-next-dev", "no-local-version"), "1.4.1.dev2"),
    ("1.4.0", 2, ("guess-next-dev", "dirty-tag"), "1.4.1.dev2"),
    ("1.4.0", 2, ("guess-next-dev", "node-and-timestamp"), "1.4.1.dev2+gd5cbb7213"),
    ("1.4.0", 0, ("guess-next-dev", "node-and-date"), "1.4.0"),
    ("2.9.0.post0", 2, DEFAULT_SCHEMES, "2.9.0.post1.dev2+gd5cbb7213"),
    ("1.5rc1", 2, ("guess-next-dev", "no-local-version"), "1.5rc2.dev2"),
    ("1.6.dev0", 2, ("guess-next-dev", "no-local-version"), "1.6.dev2"),
    ("1.4", 2, ("no-guess-dev", "no-local-version"), "1.4.post1.dev2"),
    ("1.6.dev0", 2, ("no-guess-dev", "no-local-version"), "1.6.dev2"),
    ("1.4", 2, ("post-release", "node-and-date"), "1.4.post2+gd5cbb7213"),
    ("1.6.dev0", 2, ("post-release", "no-local-version"), "1.6.dev0.post2"),
    ("1.4", 2, ("only-version", "node-and-date"), "1.4+gd5cbb7213"),
    ("1.4", 0, ("python-simplified-semver", "node-and-date"), "1.4"),
    ("1.4", 2, ("python-simplified-semver", "no-local-version"), "1.4.1.dev2"),
    ("1.4.0", 2, ("semver-pep440", "no-local-version"), "1.4.1.dev2"),
    ("1.6.dev0", 2, ("semver-pep440", "no-local-version"), "1.6.0.dev2"),
    ("1.4", 2, ("release-branch-semver", "no-local-version"), "1.5.0.dev2"),
    ("1!2.0", 2, ("semver-pep440-release-branch", "no-local-version"), "1!2.1.0.dev2"),
    ("3", 2, ("semver-pep440", "no-local-version"), "3.0.1.dev2"),
    # No tag: 0.0, the distance the number of commits.
    ("0.0", 2, DEFAULT_SCHEMES, "0.1.dev2+gd5cbb7213"),
    ("0.0", 2, ("post-release", "no-local-version"), "0.0.post2"),
    # Where setuptools-scm refuses the tag (the build fails), and a plugin's scheme: the defaults.
    ("2.9.0.post0", 2, ("no-guess-dev", "no-local-version"), "2.9.0.post1.dev2"),
    ("1.4", 2, ("towncrier-fragments", "no-local-version"), "1.5.dev2"),
])
def test_the_version_is_the_one_setuptools_scm_gives_in_those_schemes(tag: str, distance: int,
                                                                       chosen: tuple[str, str], expected: str) -> None:
    assert formatted(Version(tag), distance, SHA, chosen) == expected


def test_a_commits_version_follows_the_schemes_its_own_build_configuration_names(tmp_path: Path) -> None:
    """Each commit's own: a head that stops dropping the local part builds with it, as its checkout would."""
    repo = Repo(tmp_path / "repo")
    dropping = '[tool.setuptools_scm]\nlocal_scheme = "no-local-version"\n'
    first = repo.commit("one", {"pyproject.toml": dropping, "a.py": "x = 1\n"})
    repo.git("tag", "v1.4.0", first)
    second = repo.commit("two", {"a.py": "x = 2\n"})
    third = repo.commit("three", {"pyproject.toml": "[tool.black]\n"})
    handle = gitcli.Repo(repo.root)

    assert scm_version(handle, handle.commit(first)) == "1.4.0"
    assert scm_version(handle, handle.commit(second)) == "1.4.1.dev1"
    assert scm_version(handle, handle.commit(third)) == f"1.4.1.dev2+g{third[:9]}"
