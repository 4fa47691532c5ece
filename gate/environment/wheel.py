"""Build the project in the working directory into a wheel, and send the wheel back on the result channel.

The PEP 517 backend its pyproject.toml names (setuptools' legacy backend for a setup.py), with its
`backend-path` first on the import path, then the tree's path as a run of its code has it; the build
requirements are in the repository's environment (gate/environment/layer.py). Everything this program needs
is imported before the tree is on the path: the backend is the tree's code, this program is the gate's.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import tomllib

import _gate_tree as tree

RESULT_FD_ENV = "GATE_RESULT_FD"


def main() -> None:
    try:
        with open("pyproject.toml", "rb") as f:
            system = tomllib.load(f).get("build-system", {})
    except FileNotFoundError:
        system = {}
    tree.enter()
    sys.path[:0] = [os.path.abspath(p) for p in system.get("backend-path", [])]
    module, _, attribute = system.get("build-backend", "setuptools.build_meta:__legacy__").partition(":")
    backend = importlib.import_module(module)
    for part in filter(None, attribute.split(".")):
        backend = getattr(backend, part)
    out = tempfile.mkdtemp()
    name = backend.build_wheel(out)
    with open(os.path.join(out, name), "rb") as wheel, os.fdopen(int(os.environ[RESULT_FD_ENV]), "wb") as channel:
        channel.write(wheel.read())
