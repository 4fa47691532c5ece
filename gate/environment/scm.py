"""The version a build that reads it from git (setuptools-scm, hatch-vcs, pbr) gives a commit, in the schemes the
tree asks for.

An export has no .git: the gate works the version out from the real history (the nearest tag and the distance from
it, gate/sources/gitrange.py) and passes it to the build (`told`) as SETUPTOOLS_SCM_PRETEND_VERSION, which
setuptools-scm and hatch-vcs take as it is, with no scheme applied, and as PBR_VERSION, which pbr takes so. So
the schemes are applied here, read without running anything: Hatch's `[tool.hatch.version] raw-options` when its
version source is `vcs`, else pyproject.toml's `[tool.setuptools_scm]` with setup.py's literal
`use_scm_version={...}` over it (as setuptools-scm reads them). A project that drops the `+g1a2b3c4` part
(`local_scheme = "no-local-version"`, for uploads) gets a version without it, as its own checkout builds: a test of
the version's shape passes on the head as on the base.

setuptools-scm's names, for a clean commit of a branch that is not a release branch (a pull request's): version
schemes guess-next-dev (the default), no-guess-dev, post-release, only-version, semver-pep440 and
semver-pep440-release-branch (formerly python-simplified-semver and release-branch-semver); local schemes
node-and-date (the default), node-and-timestamp, dirty-tag, no-local-version. Another name (a plugin's), or a tag
a scheme cannot take (where the real build fails), gets the defaults.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gate.environment.packages import METADATA_CHARS
from gate.environment.testdeps import Reader, get, setup_py_literal, toml_doc

if TYPE_CHECKING:  # (the caller makes the Version, only where a build reads it: packaging's import is dear)
    from packaging.version import Version

DEFAULT_SCHEMES = ("guess-next-dev", "node-and-date")
NODE_DIGITS = 9  # of the commit's hash, after a `g`, in the local part
_SEMVER = {"python-simplified-semver": 3, "semver-pep440": 3,  # the numbers kept, the last of them bumped
           "release-branch-semver": 2, "semver-pep440-release-branch": 2}
_NO_NODE = frozenset({"dirty-tag", "no-local-version", "no-local-version-strict"})  # (a clean tree: no local part)


def told(version: str) -> dict[str, str]:
    """What a build is told of its version, which it would read from git (an export has none): setuptools-scm and
    hatch-vcs read SETUPTOOLS_SCM_PRETEND_VERSION, pbr PBR_VERSION (without it, pbr refuses to build a tree that
    is neither a git checkout nor an sdist: munch's)."""
    return {"SETUPTOOLS_SCM_PRETEND_VERSION": version, "PBR_VERSION": version}


def schemes(read: Reader) -> tuple[str, str]:
    """(version scheme, local scheme) the tree's build configuration asks for; the defaults where it names none."""
    pyproject = read("pyproject.toml")
    doc = toml_doc(pyproject if pyproject is not None and len(pyproject) <= METADATA_CHARS else None)
    options: dict[str, object] = {}
    if get(doc, "tool", "hatch", "version", "source") == "vcs":
        raw = get(doc, "tool", "hatch", "version", "raw-options")
        options = raw if isinstance(raw, dict) else {}
    else:
        for found in (get(doc, "tool", "setuptools_scm"), setup_py_literal(read("setup.py"), "use_scm_version")):
            options |= found if isinstance(found, dict) else {}
    version, local = options.get("version_scheme"), options.get("local_scheme")
    return (version if isinstance(version, str) else DEFAULT_SCHEMES[0],
            local if isinstance(local, str) else DEFAULT_SCHEMES[1])


def formatted(tag: Version, distance: int, sha: str, chosen: tuple[str, str] = DEFAULT_SCHEMES) -> str:
    """The version of commit `sha`, `distance` commits after the tag of version `tag` (0.0 without one), in the
    schemes `chosen`."""
    version_scheme, local_scheme = chosen
    release = str(tag).partition("+")[0]
    public = _public(tag, release, distance, version_scheme) or _guessed(release, distance)
    local = "" if distance == 0 or local_scheme in _NO_NODE else f"+g{sha[:NODE_DIGITS]}"
    return f"{public}{local}"


def _public(tag: Version, release: str, distance: int, scheme: str) -> str | None:
    """The public version in `scheme`; None for a scheme not known here or a tag it cannot take."""
    if distance == 0 or scheme == "only-version":
        return release
    if scheme == "guess-next-dev":
        return _guessed(release, distance)
    if scheme == "no-guess-dev":
        guessed = _without_dev(release) or (None if "post" in release else f"{release}.post1")
        return None if guessed is None else f"{guessed}.dev{distance}"
    if scheme == "post-release":
        return f"{release}.post{distance}"
    if scheme in _SEMVER:  # (a release branch's is not a pull request's: the development branch's bump)
        return f"{_semver(tag, _SEMVER[scheme])}.dev{distance}"
    return None


def _guessed(release: str, distance: int) -> str:
    """guess-next-dev: the next release (a dev tag's own, else the last number bumped), then the distance."""
    return f"{_without_dev(release) or _bumped(release)}.dev{distance}"


def _without_dev(release: str) -> str | None:
    """A dev release's release (`1.6.dev0` -> `1.6`), or None for another."""
    before, dev, _ = release.rpartition(".dev")
    return before if dev else None


def _bumped(release: str) -> str:
    """The last number bumped (`2.9.0.post0` -> `2.9.0.post1`, `1.5rc1` -> `1.5rc2`)."""
    return re.sub(r"\d+$", lambda last: str(int(last.group()) + 1), release)


def _semver(tag: Version, retain: int) -> str:
    """The next release of three numbers: `tag`'s first `retain` numbers, the last of them bumped (a dev tag's
    own release as it is), with its epoch."""
    numbers = list(tag.release) if tag.dev == 0 else [*tag.release[:retain], *[0] * (retain - len(tag.release))]
    if tag.dev != 0:
        numbers[retain - 1] += 1
    numbers += [0] * (3 - len(numbers))
    return f"{tag.epoch}!" * bool(tag.epoch) + ".".join(str(number) for number in numbers)
