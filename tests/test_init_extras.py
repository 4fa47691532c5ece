"""`gate init` adds the extras whose packages the tests import and nothing it chose installs (cattrs' shape: its
tests of the converters import msgspec, yaml, bson..., its CI installs every extra; with the test group alone
every PR stopped with the base's suite not collecting), and only those (gate/environment/imported.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.init_support import Init
from tests.test_init_discovery import _tree

PYPROJECT = '''\
[project]
name = "cat"
version = "1.0"
dependencies = ["attrs>=23"]

[project.optional-dependencies]
msgspec = ["msgspec>=0.19; implementation_name == 'cpython'"]
pyyaml = ["PyYAML>=6.0"]
bson = ["pymongo>=4.4.0"]
docs = ["sphinx"]
everything = ["PyYAML>=6.0", "msgspec>=0.19", "pymongo>=4.4.0", "orjson"]
ujson = ["ujson"]
yamlish = ["yamlish"]
hypo = ["hypothesis"]

[dependency-groups]
test = ["pytest>=8", "hypothesis>=6"]
'''
TESTS = '''\
import os
import attr
from hypothesis import given
import yaml
from bson import json_util
import cat.converters
from . import helpers
from tests.helpers import same
import yamlish


try:
    import ujson
except ImportError:  # (rfc3986's optional idna: what needs it is skipped without it)
    ujson = None


def test_it():
    import msgspec.json
    assert same(yaml, msgspec)


def test_ujson():  # (structlog's test_twisted.py: a module the file goes without, imported again in a test)
    import ujson.extra
    assert ujson
'''


@pytest.fixture
def cattrs_like(tmp_path: Path) -> Path:
    # (cattrs' own `preconf/msgspec.py`, deeper in its package, is no `msgspec` a test imports)
    _tree(tmp_path, {"pyproject.toml": PYPROJECT, "src/cat/__init__.py": "", "src/cat/converters.py": "",
                     "src/cat/preconf/__init__.py": "", "src/cat/preconf/msgspec.py": "",
                     "tests/__init__.py": "", "tests/helpers.py": "def same(a, b):\n    return True\n",
                     "tests/test_preconf.py": TESTS, "tests/conftest.py": "import orjson\n",
                     "tests/yamlish.py": ""})
    return tmp_path


def test_the_extras_that_bring_what_the_tests_import_are_installed_with_the_test_group(cattrs_like: Path,
                                                                                       gate_init: Init) -> None:
    policy, said, _ = gate_init(cattrs_like)

    environment = policy["environment"]
    assert isinstance(environment, dict)
    # yaml and msgspec and bson from their own extras (not `everything`, which brings more); orjson, which a
    # conftest imports, only from `everything`; not docs, nor hypo (the test group brings hypothesis), nor ujson
    # (the tests go on without it), nor for attr (the project's own requirement), os, the project's own package or
    # the tests' own helpers (`yamlish`, beside them, though an extra is named so).
    assert sorted(environment["extras"]) == ["bson", "everything", "msgspec", "pyyaml"]
    assert environment["groups"] == ["test"]
    assert "the extras the tests import, which nothing else installs: " in said
    assert "pyyaml (tests/test_preconf.py imports yaml)" in said and "bson (tests/test_preconf.py imports bson)" in said


def test_tests_that_import_only_what_is_installed_add_no_extra(cattrs_like: Path, gate_init: Init) -> None:
    (cattrs_like / "tests" / "test_preconf.py").write_text("import attr\nimport hypothesis\n\n\ndef test_it():\n"
                                                           "    assert attr and hypothesis\n")
    (cattrs_like / "tests" / "conftest.py").write_text("")

    policy, said, _ = gate_init(cattrs_like)

    environment = policy["environment"]
    assert isinstance(environment, dict)
    assert "extras" not in environment and environment["groups"] == ["test"]
    assert "the extras the tests import" not in said


def test_a_setup_cfg_projects_extras_are_read_too(tmp_path: Path, gate_init: Init) -> None:
    _tree(tmp_path, {"setup.cfg": "[metadata]\nname = cat\n\n[options]\npackages = cat\ninstall_requires =\n"
                                  "    attrs\n\n[options.extras_require]\nyaml =\n    PyYAML\ntests =\n    pytest\n",
                     "setup.py": "from setuptools import setup\nsetup()\n", "cat/__init__.py": "",
                     "tests/test_cat.py": "import yaml\n\n\ndef test_it():\n    assert yaml\n"})

    policy, _, _ = gate_init(tmp_path)

    environment = policy["environment"]
    assert isinstance(environment, dict)
    assert environment["extras"] == ["tests", "yaml"]
