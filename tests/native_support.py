"""Projects built by setuptools for the tests of the build layer: a package kept under `package_dir`, compiled
extensions. setuptools comes from the wheelhouse (a wheel of the copy the gate is installed with), so the
environment installs it offline, as the `[build-system] requires` of the project."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.projects import wheel_of_installed

SETUPTOOLS_PYPROJECT = '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
POLICY = "budget: 1\ntests:\n  paths: [tests]\n  test_timeout: 10\n"


@pytest.fixture
def setuptools_wheelhouse(offline_pip: Path) -> Path:
    """The offline wheelhouse, with setuptools in it."""
    if not list(offline_pip.glob("setuptools-*.whl")):
        wheel_of_installed(offline_pip, "setuptools")
    return offline_pip


def setup_py(name: str, *options: str) -> str:
    """A setup.py calling setup() with `name`, version 1.0 and the keyword arguments `options` (source text)."""
    return ("from setuptools import Extension, setup\n\n"
            f"setup(name={name!r}, version='1.0', {', '.join(options)})\n")
