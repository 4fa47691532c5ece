"""The repository's own environment: its dependencies, built from the base commit only (docs/repository.md).

`declarations.py` says which files declare dependencies (read at the base, governed against the head);
`build.py` installs them outside the sandbox, with the network, into a virtual environment made with the
sandbox's interpreter and cached by the hash of what was installed (`cache.py`); runs see its site-packages
read-only, after the standard library, with the head's tree first on the import path.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from gate.verdict import listing

if TYPE_CHECKING:
    from gate.sandbox.toolchain import Toolchain


class BuiltEnvironment(msgspec.Struct, frozen=True):
    """A ready environment: where its packages are, and what was installed (for the report)."""

    key: str  # the hash of what was installed (the cache entry's name)
    root: Path  # the virtual environment
    site_packages: tuple[str, ...]  # absolute; each run's sys.path gets them after the standard library
    installed: tuple[str, ...]  # "name==version", sorted
    cached: bool  # taken from the cache rather than installed by this gate
    # pytest plugins of the distributions the base declares itself (docs/repository.md), as "NAME=MODULE" (its
    # `pytest11` entry point): loaded as autoload would in the project's CI, under the same names, no other.
    plugins: tuple[str, ...] = ()
    # Lines of the base's requirements files that install the project itself, left out ("file: line").
    left_out: tuple[str, ...] = ()

    def has(self, distribution: str) -> bool:
        """Whether `distribution` (a normalised name) was installed."""
        return any(item.split("==")[0] == distribution for item in self.installed)

    def describe(self) -> str:
        """One line for the verdict's facts."""
        listed = listing(self.installed, ", ", shown=8)
        left = (f"; left out, as the project itself: {listing(self.left_out, ', ', shown=3)}"
                if self.left_out else "")
        return (f"{self.root} ({'cached' if self.cached else 'built'} from the base; read-only to runs): "
                + (listed or "nothing installed") + left)


class SuiteCode(msgspec.Struct, frozen=True):
    """What of a project's wheel is the code of the repository's suites, which its layer never carries whatever
    its bytes (gate/environment/project.py): the base's test `paths`, the top-level `modules` a test can import
    from a folder of them (gate/suite/trust.py), and the tree's relative import `roots`."""

    paths: tuple[str, ...] = ()
    modules: frozenset[str] = frozenset()
    roots: tuple[str, ...] = ()


class BuildLayer(msgspec.Struct, frozen=True):
    """Where one commit's project is built (cached under the gate's cache: gate/environment/project.py), the
    version git gives it, where the commit keeps its packages (its build's `package_dir`, name -> folder:
    gate/environment/packages.py), what of it is the suites' code (which the layer leaves out), and the
    compiler its build finds in the sandbox when the head or the base has extension sources
    (gate/sandbox/toolchain.py; None: neither has, nothing of one is bound)."""

    path: Path
    version: str
    packages: tuple[tuple[str, str], ...] = ()
    code: SuiteCode = SuiteCode()
    toolchain: Toolchain | None = None
