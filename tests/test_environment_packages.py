"""Where a tree keeps its packages, as its build's `package_dir` declares it (gate/environment/packages.py): the
import roots that make the runs import the tree's package, and the tree's file each wheel file was built from."""

from __future__ import annotations

import pytest

from gate.environment.packages import import_roots, package_dirs, renamed, tree_path


def _reader(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return files.get


@pytest.mark.parametrize(("files", "mapping"), [
    ({"setup.py": "from setuptools import setup\nsetup(name='p', package_dir={'': 'lib'}, packages=['p'])\n"},
     {"": "lib"}),
    ({"setup.py": "from setuptools import setup\nDIRS = {'p': 'lib/p'}\nsetup(name='p', package_dir=DIRS)\n"},
     {"p": "lib/p"}),
    ({"setup.cfg": "[metadata]\nname = p\n\n[options]\npackage_dir =\n    = lib\n    p.extra = more/extra\n"},
     {"": "lib", "p.extra": "more/extra"}),
    ({"setup.cfg": "[options]\npackage_dir = =lib\n"}, {"": "lib"}),
    ({"pyproject.toml": '[tool.setuptools]\npackage-dir = {"" = "lib"}\n'}, {"": "lib"}),
    ({"pyproject.toml": '[tool.setuptools.package-dir]\np = "source"\n'}, {"p": "source"}),
    ({"pyproject.toml": '[tool.poetry]\npackages = [{include = "p", from = "lib"}]\n'}, {"p": "lib/p"}),
    ({"pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["lib/p"]\n'}, {"p": "lib/p"}),
    ({"pyproject.toml": '[tool.hatch.build.targets.wheel.sources]\n"lib" = ""\n'}, {"": "lib"}),
    ({"pyproject.toml": '[tool.pdm.build]\npackage-dir = "lib"\n'}, {"": "lib"}),
    ({"pyproject.toml": '[tool.maturin]\npython-source = "python"\n'}, {"": "python"}),
    # A folder outside the tree is no mapping; a flat or src layout declares none.
    ({"setup.py": "from setuptools import setup\nsetup(package_dir={'': '../elsewhere', 'q': '/abs'})\n"}, {}),
    ({"pyproject.toml": '[project]\nname = "p"\n'}, {}),
    ({"setup.py": "from setuptools import setup\nsetup(package_dir=computed())\n"}, {}),
])
def test_the_mapping_is_read_as_each_build_declares_it(files: dict[str, str], mapping: dict[str, str]) -> None:
    assert package_dirs(_reader(files)) == mapping


def test_a_build_file_too_long_to_read_declares_nothing() -> None:
    # A change's pyproject.toml is read in the gate's own process: a long one is not parsed.
    declared = '[tool.setuptools]\npackage-dir = {"" = "lib"}\n'
    padding = ["".join(f"k{n} = {n}\n" for n in range(count)) for count in (100_000, 1_000)]
    assert package_dirs(_reader({"pyproject.toml": declared + padding[0]})) == {}  # 1.5 MB
    assert package_dirs(_reader({"pyproject.toml": declared + padding[1]})) == {"": "lib"}


def test_the_import_roots_are_the_folders_above_the_packages_of_their_own_name() -> None:
    assert import_roots({"": "lib"}) == ("lib",)
    assert import_roots({"p": "lib/p", "q": "lib/q"}) == ("lib",)
    assert import_roots({"p": "p"}) == ()  # the tree's top is always a root
    assert import_roots({"p": "source", "p.sub": "other/sub"}) == ()
    assert renamed({"p": "source", "q": "lib/q", "p.sub": "x"}) == {"p": "source"}


def test_each_wheel_file_has_the_tree_file_it_was_built_from() -> None:
    mapping = {"": "lib", "p.sub": "elsewhere/sub", "r": "source"}
    assert tree_path(("p", "core.py"), mapping) == "lib/p/core.py"
    assert tree_path(("p", "sub", "deep", "x.py"), mapping) == "elsewhere/sub/deep/x.py"
    assert tree_path(("r", "__init__.py"), mapping) == "source/__init__.py"
    assert tree_path(("top.py",), mapping) == "lib/top.py"
    assert tree_path(("p", "core.py"), {}) == "p/core.py"
